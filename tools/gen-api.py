#!/usr/bin/env python3
"""gen-api.py - generate VOCL's API glue from common/cl_api.def.

One table yields every piece that must agree with every other piece:

  vocl_api.h        opcodes, the native function table type, prototypes of
                    the hooks and hand-written proxy handlers
  vocl_client_gen.c libvocl's exported entry points for gen/retain/release/
                    unsup entries, and the ICD dispatch table
  exec_gen.c      the proxy's decoders for gen entries and the opcode switch
  native_gen.c      loading the native OpenCL functions by name
  vocl_msg.h/.c     the messages of codec entries and of the protocol (msg
                    lines) and of gen entries (derived from the annotations:
                    derive_gen_msgs): a struct, an encoder and a decoder each
                    (the hand-written code and the generated entries call
                    them), and the records of their arrays (rec lines)
  test_msg_gen.c    a round-trip unit test of every such message

Usage: gen-api.py cl_api.def OUTDIR [FILE...]

writes the FILEs named (default: all) to OUTDIR: each folder's
meson.build generates its own, so that a generated file lives with the
code it belongs to (common/, executor/, libvocl/).
"""
import os
import re
import sys

HANDLE_TYPES = {
    'cl_platform_id': 'PLATFORM', 'cl_device_id': 'DEVICE', 'cl_context': 'CONTEXT',
    'cl_command_queue': 'QUEUE', 'cl_mem': 'MEM', 'cl_sampler': 'SAMPLER',
    'cl_program': 'PROGRAM', 'cl_kernel': 'KERNEL', 'cl_event': 'EVENT',
}


class Param:
    def __init__(self, decl, ann):
        self.decl = decl.strip()
        self.ann = ann
        self.kind, _, self.arg = (ann or '').partition(':')
        m = re.search(r'(\w+)\s*(\[\])?$', self.decl)
        if '(' in self.decl:  # function pointer: name is inside (CL_CALLBACK *name)
            m = re.search(r'\*\s*(\w+)\s*\)', self.decl)
        if not m:
            raise SystemExit('cannot find the name in %r' % decl)
        self.name = m.group(1)
        self.ctype = self.decl[:m.start(1)].strip() if '(' not in self.decl else None
        if self.ctype is not None and self.decl.endswith('[]'):
            self.ctype += ' *'

    @property
    def base(self):
        """Element type: the C type without const and one '*'."""
        t = self.ctype.replace('const ', '').strip()
        return t[:-1].strip() if t.endswith('*') else t

    @property
    def htype(self):
        return HANDLE_TYPES.get(self.base if self.kind in ('ha', 'wl', 'ev') else self.ctype.strip())


class ProtoEntry:
    """A protocol message of VOCL's own (no OpenCL entry point behind it)."""
    def __init__(self, op, mode, rest, lineno):
        self.op = int(op)
        mode, *flags = mode.split('+')
        self.mode = mode
        self.name = rest.split()[0]
        self.sync = 'sync' in flags
        self.v1 = 'v1' in flags
        self.push = 'push' in flags
        if set(flags) - {'sync', 'v1', 'push'} or len(rest.split()) != 1:
            raise SystemExit('line %d: bad protocol line' % lineno)
        if not self.v1 and not PROTO_MIN <= self.op <= PROTO_MAX:
            raise SystemExit('line %d: %s: protocol messages are numbered %d-%d'
                             % (lineno, self.name, PROTO_MIN, PROTO_MAX))


class EnumDef:
    """enum NAME PREFIX A=0 B=1 ...: constants both sides of the wire use."""
    def __init__(self, rest, lineno):
        words = rest.split()
        self.name, self.prefix = words[0], words[1]
        self.values = []
        for w in words[2:]:
            k, _, v = w.partition('=')
            if not v.isdigit():
                raise SystemExit('line %d: enum value %r needs =NUMBER' % (lineno, w))
            self.values.append((k, int(v)))


# Opcodes of protocol messages added from now on (those flagged v1 were
# numbered inside the API's ranges before this range existed, and keep
# their numbers: the wire format and the recorded fuzz corpora use them).
PROTO_MIN, PROTO_MAX = 1000, 1099


class Entry:
    def __init__(self, op, mode, proto, lineno):
        self.op = None if op == '-' else int(op)
        self.lineno = lineno
        self.req = self.rep = None  # a gen entry's messages (derive_gen_msgs)
        mode, _, self.unsup_err = mode.partition(':')
        self.mode, *flags = mode.split('+')
        self.hook = 'hook' in flags
        self.async_ = 'async' in flags
        self.sync = 'sync' in flags
        self.bcast = 'bcast' in flags
        self.pre = 'pre' in flags
        if set(flags) - {'hook', 'async', 'sync', 'bcast', 'pre'} or (
                flags and self.mode != 'gen' and flags != ['sync']) or (
                self.sync and self.mode not in ('gen', 'hand', 'codec')):
            raise SystemExit('line %d: unknown mode %r' % (lineno, mode))
        self.creates = proto.rstrip().endswith('-> new')
        proto = proto.replace('-> new', '').strip()
        m = re.match(r'(.+?)\b(cl\w+)\((.*)\)$', proto)
        if not m:
            raise SystemExit('line %d: cannot parse %r' % (lineno, proto))
        self.ret = m.group(1).strip()
        self.name = m.group(2)
        self.params = []
        for piece in split_params(m.group(3)):
            if piece.strip() == 'void':
                continue
            decl, _, ann = piece.partition('@')
            self.params.append(Param(decl, ann.strip() or None))
        if self.mode == 'gen' and any(p.ann is None for p in self.params):
            raise SystemExit('line %d: %s: every gen parameter needs an annotation'
                             % (lineno, self.name))
        if self.async_ and (self.creates or any(
                p.kind in ('info', 'infosz', 'outv', 'err') for p in self.params)):
            raise SystemExit('line %d: %s: an async entry has nothing to return but its event'
                             % (lineno, self.name))

    def proto(self, name=None):
        args = ', '.join(p.decl for p in self.params) or 'void'
        return '%s CL_API_CALL %s(%s)' % (self.ret, name or self.name, args)

    def param(self, name):
        return next(p for p in self.params if p.name == name)


def split_params(s):
    out, depth, cur = [], 0, ''
    for ch in s:
        if ch == ',' and depth == 0:
            out.append(cur)
            cur = ''
            continue
        depth += ch == '('
        depth -= ch == ')'
        cur += ch
    if cur.strip():
        out.append(cur)
    return out


# Field types of message lines (see cl_api.def): C type in the message struct.
MSG_TYPES = {'u8': 'uint8_t', 'u32': 'uint32_t', 'i32': 'int32_t', 'u64': 'uint64_t',
             'ids': 'struct vocl_ids', 'props': 'struct vocl_ids', 'va3': 'struct vocl_va3',
             'out': 'struct vocl_data', 'in': 'struct vocl_data', 'str': 'struct vocl_str',
             'blist': 'struct vocl_blist', 'strs': 'struct vocl_strs', 'van': 'struct vocl_va3',
             'kargs': 'struct vocl_launch_args', 'u8s': 'struct vocl_u8s',
             'i32s': 'struct vocl_i32s', 'bytes': 'struct vocl_bytes', 'rest': 'struct vocl_bytes'}
# Types whose count is another field's: TYPE:NAME=FIELD.
COUNTED = {'strs': ('ids',), 'van': ('u32',)}
SCALARS = ('u8', 'u32', 'u64', 'i32')
# The fields a record (rec line) may have, and the least bytes each takes.
REC_TYPES = {'u8': 1, 'u32': 4, 'i32': 4, 'u64': 8, 'str': 8, 'bytes': 8}


class Rec:
    """rec NAME TYPE:FIELD...: a record of an array field (NAME[]:FIELD)."""
    def __init__(self, rest, lineno):
        words = rest.split()
        if not words or not re.match(r'^[a-z_][a-z0-9_]*$', words[0]):
            raise SystemExit('line %d: rec NAME TYPE:FIELD...' % lineno)
        self.name = words[0]
        self.fields = []
        for w in words[1:]:
            ty, _, fname = w.partition(':')
            if ty not in REC_TYPES or not re.match(r'^[a-z_][a-z0-9_]*$', fname):
                raise SystemExit('line %d: bad record field %r (%s)' % (lineno, w, ' '.join(REC_TYPES)))
            self.fields.append((ty, fname))
        if not self.fields:
            raise SystemExit('line %d: a record of no fields' % lineno)
        self.min_size = sum(REC_TYPES[ty] for ty, _ in self.fields)


class Msg:
    """msg NAME req|rep TYPE:FIELD...: the fields of one direction of a message
    (a gen entry's: derived from its annotations, derive_gen_msgs)."""
    def __init__(self, rest, lineno, recs):
        words = rest.split()
        if len(words) < 2 or words[1] not in ('req', 'rep'):
            raise SystemExit('line %d: msg NAME req|rep TYPE:FIELD...' % lineno)
        self.name, self.dir = words[0], words[1]
        self.fields = []
        self.count_of = {}
        self.cond = {}   # field: (earlier scalar field, enum constant or None)
        self.rec = {}    # field: its Rec (NAME[] fields)
        for w in words[2:]:
            ty, _, fname = w.partition(':')
            fname, _, cond = fname.partition('?')
            fname, _, count = fname.partition('=')
            known = ty in MSG_TYPES or (ty.endswith('[]') and ty[:-2] in recs)
            if not known or not re.match(r'^[a-z_][a-z0-9_]*$', fname):
                raise SystemExit('line %d: bad field %r' % (lineno, w))
            if ty.endswith('[]'):
                self.rec[fname] = recs[ty[:-2]]
            earlier = dict((f, t) for t, f in self.fields)
            if (ty in COUNTED) != bool(count) or (count and earlier.get(count) not in COUNTED[ty]):
                raise SystemExit('line %d: %s: a %s field is counted by an earlier %s field'
                                 % (lineno, w, ty, '/'.join(COUNTED.get(ty, ('(none)',)))))
            if count:
                self.count_of[fname] = count
            if cond:
                on, _, mask = cond.partition('&')
                if earlier.get(on) not in SCALARS or on in self.cond or ty == 'rest':
                    raise SystemExit('line %d: %s: a field is present under an earlier '
                                     'scalar field (FIELD?ON or FIELD?ON&CONSTANT)' % (lineno, w))
                self.cond[fname] = (on, mask or None)
            if self.fields and self.fields[-1][0] == 'rest':
                raise SystemExit('line %d: %s: rest is the last field' % (lineno, w))
            self.fields.append((ty, fname))
        self.lineno = lineno

    @property
    def cname(self):
        return '%s_%s' % (self.name, self.dir)

    def present(self, f, m='m->'):
        """The C condition under which field f is on the wire (None: always)."""
        if f not in self.cond:
            return None
        on, mask = self.cond[f]
        return '%s%s & %s' % (m, on, mask) if mask else '%s%s != 0' % (m, on)


class Table:
    def __init__(self):
        self.entries, self.protos, self.enums, self.msgs = [], [], [], []
        self.recs = {}


def parse(path):
    """The API entries (what tests/fuzz/gen-fake.py wants)."""
    return parse_table(path).entries


def parse_table(path):
    t = Table()
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.split('#', 1)[0].strip()
            if not line:
                continue
            if line.startswith('enum '):
                t.enums.append(EnumDef(line[5:], lineno))
                continue
            if line.startswith('rec '):
                r = Rec(line[4:], lineno)
                if r.name in t.recs:
                    raise SystemExit('line %d: record %s described twice' % (lineno, r.name))
                t.recs[r.name] = r
                continue
            if line.startswith('msg '):
                t.msgs.append(Msg(line[4:], lineno, t.recs))
                continue
            op, mode, proto = line.split(None, 2)
            if mode.split('+')[0] == 'proto':
                t.protos.append(ProtoEntry(op, mode, proto, lineno))
            else:
                t.entries.append(Entry(op, mode, proto, lineno))
    # Replies carry the request's opcode, and a proxy's own messages before
    # a reply (OUTPUT, NOTIFY) are told apart by theirs: no number may serve
    # both an API entry and a protocol message.
    ops = [e.op for e in t.entries + t.protos if e.op is not None]
    if len(ops) != len(set(ops)):
        raise SystemExit('duplicate opcode in %s' % path)
    if any(e.op > 0xffff for e in t.entries + t.protos if e.op is not None):
        raise SystemExit('opcodes are 16 bits on the wire')
    # A codec entry is hand-written semantics over generated fields: its
    # request must be described (its reply too, if it has more than the status).
    names = {e.name: e for e in t.entries + t.protos}
    have = {(m.name, m.dir) for m in t.msgs}
    if len(have) != len(t.msgs):
        raise SystemExit('a message described twice in %s' % path)
    for m in t.msgs:
        e = names.get(m.name)
        if e is None or e.op is None or e.mode not in ('codec', 'proto'):
            raise SystemExit('line %d: msg %s: not a codec entry or protocol message '
                             '(a gen entry\'s come from its annotations)' % (m.lineno, m.name))
    # A condition's constant is one of the table's enums (vocl_api.h).
    consts = {en.prefix + k for en in t.enums for k, _ in en.values}
    for m in t.msgs:
        for f, (on, mask) in m.cond.items():
            if mask and mask not in consts:
                raise SystemExit('line %d: %s?%s&%s: not a constant of an enum line'
                                 % (m.lineno, f, on, mask))
    for p in t.protos:
        if p.push and any(m.name == p.name and m.dir == 'rep' for m in t.msgs):
            raise SystemExit('%s: a message the proxy pushes has no reply' % p.name)
    for e in t.entries:
        if e.mode == 'codec' and ((e.name, 'req') not in have or e.op is None):
            raise SystemExit('%s: a codec entry needs an opcode and a msg ... req line' % e.name)
    derive_gen_msgs(t)
    return t


# How each annotation of a gen entry's parameter travels in its request: the
# msg field type (None: nothing on the wire).  The same bytes the inline
# encoders of the table's first generator wrote, so the wire did not change
# when gen entries got messages of their own.
GEN_FIELD = {'h': 'u64', 'h?': 'u64', 'v': 'u64', 'va': 'va3', 'ha': 'ids', 'wl': 'ids',
             'str': 'str', 'in': 'bytes', 'props': 'props', 'ev': 'u64', 'info': 'u8',
             'infosz': None, 'err': None, 'outv': None}


def gen_msg_fields(e):
    """The request's and the reply's fields (TYPE:FIELD) of gen entry e:
    the parameters in order, a count of an array left out (the array's
    ids carry it); a create's new id last.  The reply (after the status):
    the scalars out, or an info query's size and value."""
    counts = {p.arg for p in e.params if p.kind in ('ha', 'wl')}
    req, rep = [], []
    if sum(p.kind == 'ha' for p in e.params) > 1 or sum(p.kind == 'info' for p in e.params) > 1:
        raise SystemExit('line %d: %s: one @ha and one @info at most' % (e.lineno, e.name))
    for p in e.params:
        if p.kind not in GEN_FIELD:
            raise SystemExit('line %d: %s: @%s has no message field' % (e.lineno, e.name, p.kind))
        ty = GEN_FIELD[p.kind]
        if p.kind == 'va' and (p.arg != '3' or p.base != 'size_t'):
            raise SystemExit('line %d: %s: @va:3 of size_t only (a va3 field)' % (e.lineno, e.name))
        if p.kind == 'v' and p.name in counts:
            continue
        if p.kind == 'info':
            req.append('u8:want_value')
            rep += ['u64:size_ret', 'bytes:value']
        elif p.kind == 'outv':
            rep.append('u64:%s' % p.name)
        elif ty:
            req.append('%s:%s' % (ty, p.name))
    if e.creates:
        req.append('u64:new_id')
    return req, rep


def derive_gen_msgs(t):
    """A msg for the request of every gen entry (and its reply, if it has
    fields): as if the table had its msg lines."""
    for e in t.entries:
        if e.mode != 'gen' or e.op is None:
            continue
        req, rep = gen_msg_fields(e)
        e.req = Msg(' '.join([e.name, 'req'] + req), e.lineno, t.recs)
        t.msgs.append(e.req)
        if rep:
            e.rep = Msg(' '.join([e.name, 'rep'] + rep), e.lineno, t.recs)
            t.msgs.append(e.rep)


def err_ret(e, code):
    """Statements that return error `code` from entry e."""
    errp = next((p for p in e.params if p.kind == 'err' or p.name == 'errcode_ret'), None)
    if e.ret == 'cl_int':
        return 'return %s;' % code
    s = ''
    if errp:
        s = 'if (%s)\n        *%s = %s;\n    ' % (errp.name, errp.name, code)
    return s + 'return NULL;'


# --------------------------------------------------------------------------
def gen_header(t):
    entries = t.entries
    o = ['/* Generated by tools/gen-api.py from common/cl_api.def: do not edit. */',
         '#ifndef VOCL_API_GEN_H', '#define VOCL_API_GEN_H', '',
         '#include <stdbool.h>', '',
         '#include "vocl_cl.h"', '',
         '/* Wire opcodes of the API entries. */',
         'enum vocl_api_op {']
    for e in entries:
        if e.op is not None:
            o.append('    VOCL_OP_%s = %d,' % (e.name, e.op))
    o += ['};', '', '/* Wire opcodes of the protocol\'s own messages (fields: vocl_msg.h; meaning: protocol.h). */',
          'enum vocl_proto_op {']
    for p in t.protos:
        o.append('    VOCL_OP_%s = %d,' % (p.name, p.op))
    o += ['};', '']
    for en in t.enums:
        o.append('enum %s {' % en.name)
        for k, v in en.values:
            o.append('    %s%s = %d,' % (en.prefix, k, v))
        o += ['};', '']
    o += ['/*',
          ' * Requests that synchronise with the client (flag sync in the table): a',
          ' * deferred error, the first failure of a request that wanted no reply, is',
          ' * reported in place of their own success (libvocl(7), DEFERRED ERRORS).',
          ' */',
          'static inline bool vocl_op_syncs(unsigned op)', '{', '    switch (op) {']
    for e in entries + t.protos:
        if e.sync and e.op is not None:
            o.append('    case VOCL_OP_%s:' % e.name)
    o += ['        return true;', '    default:', '        return false;', '    }', '}', '',
          '/* The native OpenCL library, called by the proxy executor. */',
          'struct vocl_native_api {']
    for e in entries:
        o.append('    %s (CL_API_CALL *%s)(%s);' % (
            e.ret, e.name, ', '.join(p.decl for p in e.params) or 'void'))
    o += ['};', '',
          'const char *vocl_op_name(unsigned op);', '',
          '/* Every entry point, for profiling (libvocl/profile.c). */',
          'enum vocl_fn {']
    for e in entries:
        o.append('    VOCL_FN_%s,' % e.name)
    o += ['    VOCL_FN_COUNT', '};', 'extern const char *const vocl_fn_names[VOCL_FN_COUNT];', '',
          '/* Entry points written by hand in libvocl (exported through wrappers). */']
    for e in entries:
        if e.mode in ('hand', 'codec', 'client'):
            o.append('%s;' % e.proto('vocl_hand_' + e.name))
    o += ['', '/* Hooks: libvocl answers first; 1 = answered (result in *ret). */']
    for e in entries:
        if e.hook:
            o.append('int vocl_hook_%s(%s, cl_int *ret);' % (
                e.name, ', '.join(p.decl for p in e.params)))
    o += ['', '/* Before the request of a +pre entry (errors stick in c->err). */', 'struct vocl_call;']
    for e in entries:
        if e.pre:
            o.append('void vocl_pre_%s(struct vocl_call *c, %s);' % (
                e.name, ', '.join(p.decl for p in e.params)))
    o += ['', '#ifdef VOCL_PROXYD_INTERNAL',
          '/* Hand-written proxy handlers. */']
    for e in entries:
        if e.mode in ('hand', 'codec') and e.op is not None:
            o.append('void exec_op_%s(struct exec_req *q);' % e.name)
    o += ['#endif', '', '#endif', '']
    return '\n'.join(o)


def gen_native(t):
    entries = t.entries
    o = ['/* Generated by tools/gen-api.py from common/cl_api.def: do not edit. */',
         '#include "native.h"', '#include "protocol.h"', '', '#include <dlfcn.h>', '',
         'void vocl_native_bind(struct vocl_native_api *api, void *lib)', '{']
    for e in entries:
        o.append('    *(void **)&api->%s = dlsym(lib, "%s");' % (e.name, e.name))
    o += ['}', '', 'const char *vocl_op_name(unsigned op)', '{', '    switch (op) {']
    for e in entries:
        if e.op is not None:
            o.append('    case %d: return "%s";' % (e.op, e.name))
    for p in t.protos:
        o.append('    case %d: return "%s";' % (p.op, p.name))
    o += ['    default: return "unknown";', '    }', '}', '']
    return '\n'.join(o)


# --------------------------------------------------------------------------
def gen_client(t):
    """Implementations of the generated entries, and for every entry the
    exported wrapper that profiles it (one branch when profiling is off)."""
    entries = t.entries
    o = ['/* Generated by tools/gen-api.py from common/cl_api.def: do not edit. */',
         '#include "vocl.h"', '#include "profile.h"', '#include "gate.h"', '']
    for e in entries:
        impl = 'impl_' + e.name
        if e.mode == 'gen':
            o += client_gen(e)
        elif e.mode in ('retain', 'release'):
            p = e.params[0]
            o += ['static %s' % e.proto(impl), '{',
                  '    return vocl_%s(%s, VOCL_T_%s);' % (e.mode, p.name, HANDLE_TYPES[p.ctype]),
                  '}', '']
        elif e.mode == 'unsup':
            o += ['static %s' % e.proto(impl), '{']
            for p in e.params:
                o.append('    (void)%s;' % p.name)
            o += ['    vocl_warn_once_unsupported("%s");' % e.name,
                  '    ' + err_ret(e, e.unsup_err), '}', '']
    for e in entries:
        impl = ('vocl_hand_' if e.mode in ('hand', 'codec', 'client') else 'impl_') + e.name
        call = '%s(%s)' % (impl, ', '.join(p.name for p in e.params))
        # Every entry point goes through the gate (gate.h), which a
        # migration shuts.
        if e.ret == 'void':
            timed, ret = call, ['    vocl_gate_leave(gate);']
        else:
            timed, ret = '%s r = %s' % (e.ret, call), ['    vocl_gate_leave(gate);', '    return r;']
        o += ['CL_API_ENTRY %s' % e.proto(), '{',
              '    struct vocl_gate_slot *gate = vocl_gate_enter();',
              '    if (!vocl_prof_on) {',
              '        %s;' % timed] + ['    ' + x for x in ret] + (
              ['        return;'] if e.ret == 'void' else []) + [
              '    }',
              '    uint64_t t0 = vocl_prof_enter();',
              '    %s;' % timed,
              '    vocl_prof_leave(VOCL_FN_%s, t0);' % e.name] + ret + ['}', '']
    o += ['const char *const vocl_fn_names[VOCL_FN_COUNT] = {']
    for e in entries:
        o.append('    "%s",' % e.name)
    o += ['};', '', 'const struct _cl_icd_dispatch vocl_dispatch = {']
    for e in entries:
        o.append('    .%s = %s,' % (e.name, e.name))
    o += ['};', '']
    return '\n'.join(o)


def client_gen(e):
    o = ['static %s' % e.proto('impl_' + e.name), '{', '    struct vocl_call c;',
         '    vocl_call_init(&c);']
    hret = '&c.err'
    if e.hook:
        o.append('    if (vocl_hook_%s(%s, &c.err)) goto out;' % (
            e.name, ', '.join(p.name for p in e.params)))
    counts = {p.arg for p in e.params if p.kind in ('ha', 'wl')}
    first_ctx = None
    handles = []
    for p in e.params:
        if p.kind in ('h', 'h?'):
            o.append('    struct vocl_obj *o_%s = vocl_call_h(&c, %s, VOCL_T_%s, %d);' % (
                p.name, p.name, p.htype, p.kind == 'h?'))
            handles.append(p)
            if p.htype == 'CONTEXT' and first_ctx is None:
                first_ctx = p
        elif p.kind == 'ha':
            o.append('    vocl_call_ha(&c, %s, (const void *const *)%s, VOCL_T_%s);' % (
                p.arg, p.name, p.htype))
        elif p.kind == 'wl':
            o.append('    vocl_call_wl(&c, %s, %s);' % (p.arg, p.name))
    if handles and handles[0].htype == 'QUEUE':
        # Objects of a command must be of its queue's context (checked here:
        # the command's own errors are deferred).
        for p in handles[1:]:
            if p.htype in ('MEM', 'KERNEL', 'SAMPLER'):
                o.append('    if (!c.err && o_%s && o_%s->context != o_%s->context) '
                         'vocl_call_error(&c, CL_INVALID_CONTEXT);' % (p.name, p.name, handles[0].name))
    for p in handles:
        if p.arg in ('r', 'rw'):
            o.append('    if (o_%s) vocl_mem_use(&c, o_%s, VOCL_USE_%s);' % (
                p.name, p.name, p.arg.upper()))
    if e.pre:
        o.append('    vocl_pre_%s(&c, %s);' % (e.name, ', '.join(p.name for p in e.params)))
    if e.async_:
        o.append('    c.async = true;')
    if e.sync:
        o.append('    c.sync = true;')
    ind = ''
    if e.bcast:
        # Once per proxy the first handle's object lives in.
        # (none there: a program built or linked for other proxies' devices)
        o.append('    for (cl_uint rep = 0; vocl_call_each(&c, o_%s, rep); rep++) {'
                 % handles[0].name)
        ind = '    '
    body_start = len(o)
    if e.bcast:
        o.append('    if (!vocl_id_on(o_%s, c.px)) continue;' % handles[0].name)
    # An info query whose answer cannot change is answered from the
    # object's kept answers (libvocl/info.c decides which).
    kept = None
    if not e.bcast and any(p.kind == 'info' for p in e.params) and \
            not any(p.kind == 'in' for p in e.params):
        extra = [p for p in e.params if p.kind in ('h', 'h?')][1:] + \
            [p for p in e.params if p.kind == 'v' and p.name == 'arg_index']
        key = ('(uint64_t)(uintptr_t)o_%s' % extra[0].name if extra[0].kind != 'v'
               else '(uint64_t)%s' % extra[0].name) if extra else '0'
        info = next(p for p in e.params if p.kind == 'info')
        sz = next(p for p in e.params if p.kind == 'infosz')
        kept = (handles[0].name, 'VOCL_OP_%s, (uint64_t)param_name, %s' % (e.name, key))
        o += ['    uint32_t info_gen = 0;',
              '    if (!c.err && vocl_info_cached(o_%s, %s, %s, %s, %s, &c.err, &info_gen)) goto out;'
              % (kept[0], kept[1], info.arg, info.name, sz.name)]
    o.append('    if (vocl_call_start(&c, VOCL_OP_%s)) goto out;' % e.name)
    # The request (e.req): its fields from the parameters, in wire order.
    # (Ids are taken before the message: the initialisers of a compound
    # literal are not evaluated in order.)
    init = []
    for p in e.params:
        k = p.kind
        if k in ('h', 'h?'):
            init.append('.%s = vocl_id_on(o_%s, c.px)' % (p.name, p.name))
        elif k == 'v':
            if p.name not in counts:
                init.append('.%s = (uint64_t)%s' % (p.name, p.name))
        elif k == 'va':
            init.append('.%s = vocl_va3_of(%s)' % (p.name, p.name))
        elif k == 'ha':
            init.append('.%s = vocl_call_ha_ids(&c, %s, (const void *const *)%s)' % (p.name, p.arg, p.name))
        elif k == 'wl':
            init.append('.%s = vocl_call_wl_ids(&c, %s, %s)' % (p.name, p.arg, p.name))
        elif k == 'str':
            init.append('.%s = vocl_str_of(%s)' % (p.name, p.name))
        elif k == 'in':
            init.append('.%s = {.p = %s, .len = %s ? (size_t)(%s) : 0}' % (p.name, p.name, p.name, p.arg))
        elif k == 'props':
            o.append('    uint64_t props_%s[VOCL_PROPS_MAX];' % p.name)
            init.append('.%s = vocl_props_ids((const void *)%s, props_%s)' % (p.name, p.name, p.name))
        elif k == 'ev':
            o.append('    uint64_t ev_id = %s ? vocl_call_new_id(&c) : 0;' % p.name)
            init.append('.%s = ev_id' % p.name)
        elif k == 'info':
            init.append('.want_value = %s != NULL' % p.name)
    if e.creates:
        o.append('    uint64_t new_id = vocl_call_new_id(&c);')
        init.append('.new_id = new_id')
    o.append('    vocl_enc_%s(c.w, &(struct vocl_msg_%s){' % (e.req.cname, e.req.cname))
    o += ['        %s,' % i for i in init[:-1]] + ['        %s});' % init[-1]]
    o.append('    if (vocl_call_send(&c)) goto out;')
    # The reply (e.rep, after the status): out parameters in order.
    if e.rep:
        o += ['    struct vocl_msg_%s rp;' % e.rep.cname,
              '    vocl_dec_%s(&c.r, &rp); /* (a reply cut short: c.r.fail) */' % e.rep.cname]
    for p in e.params:
        if p.kind == 'info':
            sz = next(q for q in e.params if q.kind == 'infosz')
            o.append('    vocl_call_info(&c, %s, %s, %s, rp.size_ret, &rp.value);' % (p.arg, p.name, sz.name))
            if kept:
                o.append('    if (!c.err) vocl_info_keep(o_%s, %s, info_gen, rp.size_ret, &rp.value);'
                         % kept)
        elif p.kind == 'outv':
            o.append('    if (%s) *%s = (%s)rp.%s;' % (p.name, p.name, p.base, p.name))
        elif p.kind == 'ev':
            o.append('    if (%s) *%s = (cl_event)vocl_call_new_event(&c, ev_id, o_%s);' % (
                p.name, p.name, handles[0].name))
    ret = 'c.err'
    if e.creates:
        t = HANDLE_TYPES[e.ret]
        ctx = 'o_%s' % first_ctx.name if first_ctx else 'vocl_ctx_of(o_%s)' % handles[0].name
        parent = next((h for h in handles if h is not first_ctx), None)
        parent = 'o_%s' % parent.name if parent else 'NULL'
        if e.bcast:
            o.append('    if (!vocl_call_made(&c, &made, rep, vocl_nreps(o_%s), VOCL_T_%s, new_id, '
                     '%s, %s)) goto out;' % (handles[0].name, t, ctx, parent))
        else:
            o.append('    made = vocl_call_new_obj(&c, VOCL_T_%s, new_id, %s, %s);'
                     % (t, ctx, parent))
    if e.bcast:
        o[body_start:] = [ind + l for l in o[body_start:]]
        o.append('    }')
    o += ['out:', '    vocl_call_end(&c);']
    if e.creates:
        errp = next(p for p in e.params if p.kind == 'err')
        o[o.index('    struct vocl_call c;')] = '    struct vocl_call c;\n    struct vocl_obj *made = NULL;'
        if e.bcast:
            o += ['    if (c.err && made) {',
                  '        vocl_release(made, VOCL_T_%s);' % t,
                  '        made = NULL;', '    }']
        o += ['    if (%s) *%s = c.err;' % (errp.name, errp.name),
              '    return c.err ? NULL : (%s)made;' % e.ret]
    else:
        o.append('    return %s;' % ret)
    o += ['}', '']
    return o


# --------------------------------------------------------------------------
def gen_proxy(t):
    entries = t.entries
    o = ['/* Generated by tools/gen-api.py from common/cl_api.def: do not edit. */',
         '#include "internal.h"', '']
    for e in entries:
        if e.mode == 'gen':
            o += proxy_gen(e)
    o += ['/* Returns 0, or -1 for an opcode that is not an API entry. */',
          'int exec_dispatch_api(struct exec_req *q, unsigned op)', '{',
          '    switch (op) {']
    for e in entries:
        if e.op is None:
            continue
        fn = 'gen_' if e.mode == 'gen' else 'exec_op_'
        o.append('    case VOCL_OP_%s: %s%s(q); return 0;' % (e.name, fn, e.name))
    o += ['    default: return -1;', '    }', '}', '']
    return '\n'.join(o)


def proxy_gen(e):
    """The decoder (the request decoded whole by vocl_dec_, then its ids
    looked up in the session, in parameter order) and handler of gen entry e."""
    o = ['static void gen_%s(struct exec_req *q)' % e.name, '{',
         '    struct vocl_msg_%s m;' % e.req.cname,
         '    const char *why = vocl_dec_%s(q->r, &m);' % e.req.cname,
         '    if (why)', '        exec_fail(q, why);']
    counts = {p.arg: p for p in e.params if p.kind in ('ha', 'wl')}
    call = []
    rep = []
    for p in e.params:
        k = p.kind
        if k in ('h', 'h?'):
            o.append('    %s %s = (%s)exec_h(q, m.%s, VOCL_T_%s, %d);' % (
                p.ctype, p.name, p.ctype, p.name, p.htype, k == 'h?'))
            call.append(p.name)
        elif k == 'v':
            if p.name in counts:
                o.append('    cl_uint %s = 0;' % p.name)
            else:
                o.append('    %s %s = (%s)m.%s;' % (p.ctype, p.name, p.ctype, p.name))
            call.append(p.name)
        elif k == 'va':
            o.append('    const size_t *%s = exec_va3(q, &m.%s);' % (p.name, p.name))
            call.append(p.name)
        elif k in ('ha', 'wl'):
            o.append('    const %s *%s = (const %s *)exec_ha(q, VOCL_T_%s, &m.%s, &%s);' % (
                p.base, p.name, p.base, p.htype, p.name, p.arg))
            call.append(p.name)
        elif k == 'str':
            o.append('    const char *%s = exec_str(q, &m.%s);' % (p.name, p.name))
            call.append(p.name)
        elif k == 'in':
            o.append('    size_t %s_len = m.%s.len;' % (p.name, p.name))
            o.append('    const void *%s = %s_len ? m.%s.p : NULL;' % (p.name, p.name, p.name))
            if p.arg.isdigit():
                o.append('    if (%s && %s_len != %s) exec_fail(q, "%s: %s size");' % (
                    p.name, p.name, p.arg, e.name, p.name))
            call.append(p.name)
        elif k == 'props':
            o.append('    const %s *%s = (const %s *)exec_props(q, &m.%s);' % (
                p.base, p.name, p.base, p.name))
            call.append(p.name)
        elif k == 'ev':
            o.append('    uint64_t ev_id = exec_newid(q, m.%s);' % p.name)
            o.append('    cl_event ev = NULL;')
            call.append('ev_id ? &ev : NULL')
        elif k == 'info':
            o.append('    int want_value = m.want_value;')
            o.append('    void *%s = NULL;' % p.name)
            o.append('    size_t size_ret = 0;')
            call.append(p.name)
        elif k == 'infosz':
            call.append('&size_ret')
        elif k == 'outv':
            o.append('    %s %s = 0;' % (p.base, p.name))
            call.append('&%s' % p.name)
            rep.append('.%s = (uint64_t)%s' % (p.name, p.name))
        elif k == 'err':
            o.append('    cl_int err = CL_SUCCESS;')
            call.append('&err')
        else:
            raise SystemExit('%s: kind %s' % (e.name, k))
    if e.creates:
        o.append('    uint64_t new_id = exec_newobj(q, m.new_id);')
    # Cross-checks of sizes against the parameters that state them.
    for p in e.params:
        if p.kind == 'in' and not p.arg.isdigit():
            o.append('    if (%s && %s_len != (size_t)%s) exec_fail(q, "%s: %s size");' % (
                p.name, p.name, p.arg, e.name, p.name))
        if p.kind == 'info':
            o.append('    if (%s > EXEC_INFO_MAX) %s = EXEC_INFO_MAX;' % (p.arg, p.arg))
            o.append('    if (want_value) %s = exec_tmp(q, %s);' % (p.name, p.arg))
    o.append('    if (!exec_req_begin(q)) return;')
    native = 'q->cl->%s(%s)' % (e.name, ', '.join(call))
    if e.creates:
        o.append('    %s made = %s;' % (e.ret, native))
        o.append('    exec_reply_made(q, new_id, VOCL_T_%s, made, err);' % HANDLE_TYPES[e.ret])
    else:
        o.append('    cl_int rc = %s;' % native)
        o.append('    vocl_wr_i32(q->w, rc);')
    for p in e.params:
        if p.kind == 'ev':
            o.append('    exec_put_event(q, rc, ev_id, ev);')
        if p.kind == 'info':
            # The size, and as much of the value as there is room for.
            o += ['    if (rc == CL_SUCCESS)',
                  '        vocl_enc_%s(q->w, &(struct vocl_msg_%s){' % (e.rep.cname, e.rep.cname),
                  '            .size_ret = size_ret,',
                  '            .value = {.p = %s, .len = %s ? (size_ret < %s ? size_ret : %s) : 0}});'
                  % (p.name, p.name, p.arg, p.arg)]
    if rep:
        # (the scalars out: whatever the status)
        o.append('    vocl_enc_%s(q->w, &(struct vocl_msg_%s){%s});' % (
            e.rep.cname, e.rep.cname, ', '.join(rep)))
    o += ['}', '']
    return o


# --------------------------------------------------------------------------
# Messages (codec entries, protocol, gen entries): a struct, an encoder and
# a decoder each.

REC_CODECS = {
    'u8': ('vocl_wr_u8(w, e->{f})', 'e->{f} = vocl_rd_u8(r)'),
    'u32': ('vocl_wr_u32(w, e->{f})', 'e->{f} = vocl_rd_u32(r)'),
    'u64': ('vocl_wr_u64(w, e->{f})', 'e->{f} = vocl_rd_u64(r)'),
    'i32': ('vocl_wr_i32(w, e->{f})', 'e->{f} = vocl_rd_i32(r)'),
    'str': ('vocl_wr_sstr(w, &e->{f})', 'vocl_rd_sstr(r, &e->{f})'),
    'bytes': ('vocl_wr_sbytes(w, &e->{f})', 'vocl_rd_sbytes(r, &e->{f})'),
}


def gen_msg_h(t):
    o = ['/* Generated by tools/gen-api.py from common/cl_api.def: do not edit. */',
         '#ifndef VOCL_MSG_H', '#define VOCL_MSG_H', '',
         '#include "wire.h"', '',
         '/*',
         ' * One struct per message of an API entry (gen or codec) or of the protocol (its request,',
         ' * and the fields of its reply after the status), with an encoder that',
         ' * writes the fields in order and a decoder that reads them.  A decoder',
         ' * treats the message as hostile: counts are checked against the bytes',
         ' * left, and on a count that cannot be right it stops and returns why; a',
         ' * message cut short sets the reader\'s sticky flag (r->fail).  Arrays and',
         ' * inline data decoded point into the message.  A field present only',
         ' * under an earlier one (cl_api.def: FIELD?ON) is left 0 when absent.',
         ' */', '']
    for r in t.recs.values():
        o.append('/* rec %s (an array of them: u32 count, the records). */' % r.name)
        o.append('struct vocl_rec_%s {' % r.name)
        for ty, f in r.fields:
            o.append('    %s %s;' % (MSG_TYPES[ty], f))
        o += ['};',
              '/* An encoder reads v; a decoder checks that every record lies in the',
              ' * message and leaves v NULL and raw/raw_len on them: vocl_next_%s. */' % r.name,
              'struct vocl_recs_%s {' % r.name, '    uint32_t n;',
              '    const struct vocl_rec_%s *v;' % r.name, '    const uint8_t *raw;',
              '    size_t raw_len;', '};',
              'void vocl_wr_recs_%s(struct vocl_wr *w, const struct vocl_recs_%s *a);' % (r.name, r.name),
              'const char *vocl_rd_recs_%s(struct vocl_rd *r, struct vocl_recs_%s *a);' % (r.name, r.name),
              '/* The next record of a decoded array (it over raw/raw_len); false at the end. */',
              'bool vocl_next_%s(struct vocl_rd *it, struct vocl_rec_%s *e);' % (r.name, r.name), '']
    for m in t.msgs:
        o.append('struct vocl_msg_%s {' % m.cname)
        for ty, f in m.fields:
            o.append('    %s %s;' % (msg_ctype(m, ty, f), f))
        if not m.fields:
            o.append('    char none;')
        o += ['};',
              'void vocl_enc_%s(struct vocl_wr *w, const struct vocl_msg_%s *m);' % (m.cname, m.cname),
              'const char *vocl_dec_%s(struct vocl_rd *r, struct vocl_msg_%s *m);' % (m.cname, m.cname),
              '']
    o += ['#endif', '']
    return '\n'.join(o)


def msg_ctype(m, ty, f):
    return 'struct vocl_recs_%s' % m.rec[f].name if f in m.rec else MSG_TYPES[ty]


# How a message field of each type is written and read: the writer's call,
# the reader's call, and whether the reader returns a reason to refuse the
# message.  {f} is the field; {n} the field that holds its count.
FIELD_CODECS = {
    'u8': ('vocl_wr_u8(w, m->{f})', 'm->{f} = vocl_rd_u8(r)', False),
    'u32': ('vocl_wr_u32(w, m->{f})', 'm->{f} = vocl_rd_u32(r)', False),
    'u64': ('vocl_wr_u64(w, m->{f})', 'm->{f} = vocl_rd_u64(r)', False),
    'i32': ('vocl_wr_i32(w, m->{f})', 'm->{f} = vocl_rd_i32(r)', False),
    'ids': ('vocl_wr_ids(w, &m->{f})',
            'vocl_rd_ids(r, &m->{f}, "handle array longer than the message")', True),
    'props': ('vocl_wr_ids(w, &m->{f})',
              'vocl_rd_ids(r, &m->{f}, "property list longer than the message")', True),
    'va3': ('vocl_wr_va3(w, &m->{f})', 'vocl_rd_va3(r, &m->{f})', False),
    'out': ('vocl_wr_data(w, &m->{f}, true)', 'vocl_rd_data(r, &m->{f}, true)', True),
    'in': ('vocl_wr_data(w, &m->{f}, false)', 'vocl_rd_data(r, &m->{f}, false)', True),
    'str': ('vocl_wr_sstr(w, &m->{f})', 'vocl_rd_sstr(r, &m->{f})', False),
    'blist': ('vocl_wr_blist(w, &m->{f})', 'vocl_rd_blist(r, &m->{f})', False),
    'strs': ('vocl_wr_strs(w, &m->{f}, m->{n}.n)', 'vocl_rd_strs(r, &m->{f}, m->{n}.n)', False),
    'van': ('vocl_wr_van(w, &m->{f}, m->{n})', 'vocl_rd_van(r, &m->{f}, m->{n})', True),
    'kargs': ('vocl_wr_kargs(w, &m->{f})', 'vocl_rd_kargs(r, &m->{f})', True),
    'u8s': ('vocl_wr_u8s(w, &m->{f})', 'vocl_rd_u8s(r, &m->{f})', True),
    'i32s': ('vocl_wr_i32s(w, &m->{f})', 'vocl_rd_i32s(r, &m->{f})', True),
    'bytes': ('vocl_wr_sbytes(w, &m->{f})', 'vocl_rd_sbytes(r, &m->{f})', False),
    'rest': ('vocl_wr_rest(w, &m->{f})', 'vocl_rd_rest(r, &m->{f})', False),
    '[]': ('vocl_wr_recs_{rec}(w, &m->{f})', 'vocl_rd_recs_{rec}(r, &m->{f})', True),
}


def field_codec(m, ty, f):
    """The writer's and the reader's statement of field f, under its
    condition; the reader's returns why it refuses the message."""
    wr, rd, refuses = FIELD_CODECS['[]' if f in m.rec else ty]
    fmt = dict(f=f, n=m.count_of.get(f), rec=m.rec[f].name if f in m.rec else None)
    wr, rd = wr.format(**fmt), rd.format(**fmt)
    cond = m.present(f)
    if refuses:
        rd = ['    if (%s(why = %s))' % ('%s && ' % cond if cond else '', rd), '        return why;']
    else:
        rd = ['    if (%s)' % cond, '        %s;' % rd] if cond else ['    %s;' % rd]
    wr = ['    if (%s)' % cond, '        %s;' % wr] if cond else ['    %s;' % wr]
    return wr, rd


def gen_msg_c(t):
    o = ['/* Generated by tools/gen-api.py from common/cl_api.def: do not edit. */',
         '#include "vocl_msg.h"', '', '#include <string.h>', '',
         '#include "vocl_api.h"', '']
    for r in t.recs.values():
        o += ['static void wr_rec_%s(struct vocl_wr *w, const struct vocl_rec_%s *e)' % (r.name, r.name), '{']
        o += ['    %s;' % REC_CODECS[ty][0].format(f=f) for ty, f in r.fields]
        o += ['}', '',
              'void vocl_wr_recs_%s(struct vocl_wr *w, const struct vocl_recs_%s *a)' % (r.name, r.name), '{',
              '    vocl_wr_u32(w, a->n);',
              '    if (!a->v) {',
              '        void *p = a->raw_len ? vocl_wr_reserve(w, a->raw_len) : NULL;',
              '        if (p)', '            memcpy(p, a->raw, a->raw_len);', '        return;', '    }',
              '    for (uint32_t i = 0; i < a->n; i++)',
              '        wr_rec_%s(w, &a->v[i]);' % r.name, '}', '',
              'bool vocl_next_%s(struct vocl_rd *r, struct vocl_rec_%s *e)' % (r.name, r.name), '{',
              '    memset(e, 0, sizeof(*e));',
              '    if (r->p == r->end || r->fail)', '        return false;']
        o += ['    %s;' % REC_CODECS[ty][1].format(f=f) for ty, f in r.fields]
        o += ['    return !r->fail;', '}', '',
              'const char *vocl_rd_recs_%s(struct vocl_rd *r, struct vocl_recs_%s *a)' % (r.name, r.name), '{',
              '    struct vocl_rec_%s e;' % r.name,
              '    memset(a, 0, sizeof(*a));',
              '    uint32_t n = vocl_rd_u32(r);',
              '    if (r->fail)', '        return NULL;',
              '    /* Each record at least %d bytes: a count the message cannot hold is refused. */' % r.min_size,
              '    if (n > (size_t)(r->end - r->p) / %d)' % r.min_size,
              '        return "record array longer than the message";',
              '    a->raw = r->p;',
              '    for (uint32_t i = 0; i < n; i++)',
              '        if (!vocl_next_%s(r, &e)) {' % r.name,
              '            a->raw = NULL;', '            r->fail = true;', '            return NULL;', '        }',
              '    a->n = n;',
              '    a->raw_len = (size_t)(r->p - a->raw);', '    return NULL;', '}', '']
    for m in t.msgs:
        o += ['void vocl_enc_%s(struct vocl_wr *w, const struct vocl_msg_%s *m)' % (m.cname, m.cname),
              '{']
        if not m.fields:
            o += ['    (void)w;', '    (void)m;']
        for ty, f in m.fields:
            o += field_codec(m, ty, f)[0]
        o += ['}', '',
              'const char *vocl_dec_%s(struct vocl_rd *r, struct vocl_msg_%s *m)' % (m.cname, m.cname),
              '{', '    const char *why = NULL;', '    memset(m, 0, sizeof(*m));']
        if not m.fields:
            o.append('    (void)r;')
        for ty, f in m.fields:
            o += field_codec(m, ty, f)[1]
        o += ['    return why;', '}', '']
    return '\n'.join(o)


def gen_msg_test(t):
    """A round trip per message (encode, decode, compare: the bytes again
    too), and every prefix of it refused without reading past its end."""
    o = ['/* Generated by tools/gen-api.py from common/cl_api.def: do not edit. */',
         '#include <setjmp.h>', '#include <stdarg.h>', '#include <stddef.h>',
         '#include <stdint.h>', '#include <stdio.h>', '#include <stdlib.h>', '#include <string.h>', '',
         '#include <cmocka.h>', '', '#include "vocl_api.h"', '#include "vocl_msg.h"', '',
         'static const uint64_t some_ids[3] = {0x10001, 0x10002, 0xfedcba9876543210ull};',
         'static const uint64_t some_props[3] = {0x1084, 0x7, 0};',
         'static const uint8_t some_bytes[5] = {1, 2, 3, 250, 0};',
         'static const void *const some_items[2] = {"ab", "xyz"};',
         'static const int32_t some_i32s[2] = {0, -33};',
         'static const size_t some_lens[2] = {2, 3};',
         'static const char *const some_strs[3] = {"a.h", "", NULL};',
         'static const struct vocl_karg_wire some_kargs[4] = {',
         '    {.index = 0, .kind = VOCL_LARG_BYTES, .p = some_bytes, .len = 5},',
         '    {.index = 1, .kind = VOCL_LARG_MEM, .v = 0x10005},',
         '    {.index = 2, .kind = VOCL_LARG_SAMPLER, .v = 0},',
         '    {.index = 7, .kind = VOCL_LARG_LOCAL, .v = 4096}};', '']
    for r in t.recs.values():
        o.append('static const struct vocl_rec_%s some_%s[2] = {' % (r.name, r.name))
        for i in range(2):
            vals = []
            for k, (ty, f) in enumerate(r.fields, 2 + 10 * i):
                if ty == 'i32':
                    vals.append('.%s = -%d' % (f, k))
                elif ty == 'str':
                    vals.append('.%s = {.p = "rec_%d", .len = %d}' % (f, k, len('rec_%d' % k)))
                elif ty == 'bytes':
                    vals.append('.%s = {.p = some_bytes, .len = %d}' % (f, i * 5))
                else:
                    mask = {'u8': '0xffu', 'u32': '0xffffffffu', 'u64': '0xffffffffffffffffull'}[ty]
                    vals.append('.%s = (%s)(0x0123456789abcdefull * %d & %s)' % (f, MSG_TYPES[ty], k, mask))
            o.append('    {%s},' % ', '.join(vals))
        o += ['};', '']
    o += ['/* The message in a buffer of exactly its size (ASan sees an over-read). */',
         'static uint8_t *exact_copy(const struct vocl_wr *w, size_t n)', '{',
         '    uint8_t *p = malloc(n ? n : 1);', '    assert_non_null(p);',
         '    memcpy(p, w->buf + VOCL_HDR_SIZE, n);', '    return p;', '}', '']
    names = []
    for m in t.msgs:
        fn = 'round_trip_%s' % m.cname
        names.append(fn)
        o += ['static void fill_%s(struct vocl_msg_%s *m)' % (m.cname, m.cname), '{',
              '    struct vocl_msg_%s a;' % m.cname,
              '    memset(&a, 0, sizeof(a));']
        k = 1
        counts = set(m.count_of.values())
        for ty, f in m.fields:
            k += 1
            if ty == 'u32' and f in counts:
                o.append('    a.%s = 3;' % f)
            elif ty in ('u8', 'u32', 'u64'):
                mask = {'u8': '0xffu', 'u32': '0xffffffffu', 'u64': '0xffffffffffffffffull'}[ty]
                o.append('    a.%s = (%s)(0x0123456789abcdefull * %d & %s);' % (f, MSG_TYPES[ty], k, mask))
            elif ty == 'i32':
                o.append('    a.%s = -%d;' % (f, k))
            elif ty == 'ids':
                o.append('    a.%s.n = 3;' % f)
                o.append('    a.%s.v = some_ids;' % f)
            elif ty == 'props':
                o.append('    a.%s.n = 3;' % f)
                o.append('    a.%s.v = some_props;' % f)
            elif ty == 'va3':
                o += ['    a.%s.present = 1;' % f] + ['    a.%s.v[%d] = %d;' % (f, i, k * 10 + i) for i in range(3)]
            elif ty == 'out':
                o += ['    a.%s.mode = VOCL_DATA_INLINE;' % f,
                      '    a.%s.p = some_bytes;' % f, '    a.%s.len = sizeof(some_bytes);' % f]
            elif ty == 'in':
                o += ['    a.%s.mode = VOCL_DATA_CHUNKED;' % f, '    a.%s.arg = 1u << 20;' % f]
            elif ty == 'str':
                o.append('    a.%s = vocl_str_of("kernel_%d");' % (f, k))
            elif ty == 'blist':
                o += ['    a.%s.n = 2;' % f, '    a.%s.p = some_items;' % f, '    a.%s.len = some_lens;' % f]
            elif ty == 'strs':
                o.append('    a.%s.s = some_strs;' % f)
            elif ty == 'van':
                o += ['    a.%s.present = 1;' % f] + ['    a.%s.v[%d] = %d;' % (f, i, k * 10 + i) for i in range(3)]
            elif ty == 'kargs':
                o += ['    a.%s.n = 4;' % f, '    a.%s.a = some_kargs;' % f]
            elif ty == 'u8s':
                o += ['    a.%s.n = sizeof(some_bytes);' % f, '    a.%s.v = some_bytes;' % f]
            elif ty == 'i32s':
                o += ['    a.%s.n = 2;' % f, '    a.%s.v = some_i32s;' % f]
            elif ty in ('bytes', 'rest'):
                o += ['    a.%s.p = some_bytes;' % f, '    a.%s.len = sizeof(some_bytes);' % f]
            elif f in m.rec:
                o += ['    a.%s.n = 2;' % f, '    a.%s.v = some_%s;' % (f, m.rec[f].name)]
        # Every field present: the bits its condition wants are set.
        for f, (on, mask) in m.cond.items():
            if mask:
                o.append('    a.%s |= %s;' % (on, mask))
        o += ['    *m = a;', '}', '',
              'static void %s(void **state)' % fn, '{',
              '    struct vocl_msg_%s a, b;' % m.cname,
              '    struct vocl_wr w, w2;', '    struct vocl_rd r;', '    (void)state;',
              '    fill_%s(&a);' % m.cname,
              '    vocl_wr_init(&w);', '    vocl_wr_begin(&w, 1, 0, 1);',
              '    vocl_enc_%s(&w, &a);' % m.cname, '    vocl_wr_finish(&w);',
              '    assert_false(w.fail);',
              '    size_t n = w.len - VOCL_HDR_SIZE;',
              '    uint8_t *msg = exact_copy(&w, n);',
              '    vocl_rd_init(&r, msg, n);',
              '    assert_null(vocl_dec_%s(&r, &b));' % m.cname,
              '    assert_true(vocl_rd_done(&r));']
        for ty, f in m.fields:
            if ty in ('u8', 'u32', 'u64', 'i32'):
                o.append('    assert_true(a.%s == b.%s);' % (f, f))
            elif ty in ('ids', 'props'):
                o.append('    assert_int_equal(a.%s.n, b.%s.n);' % (f, f))
                o.append('    for (uint32_t i = 0; i < a.%s.n; i++)' % f)
                o.append('        assert_true(vocl_ids_at(&a.%s, i) == vocl_ids_at(&b.%s, i));' % (f, f))
            elif ty in ('va3', 'van'):
                o.append('    assert_int_equal(a.%s.present, b.%s.present);' % (f, f))
                o.append('    assert_memory_equal(a.%s.v, b.%s.v, sizeof(a.%s.v));' % (f, f, f))
            elif ty == 'str':
                o.append('    assert_true(a.%s.len == b.%s.len && a.%s.null == b.%s.null);' % (f, f, f, f))
                o.append('    assert_memory_equal(a.%s.p, b.%s.p, a.%s.len);' % (f, f, f))
            elif ty in ('u8s', 'i32s'):
                o.append('    assert_int_equal(a.%s.n, b.%s.n);' % (f, f))
                o.append('    for (uint32_t i = 0; i < a.%s.n; i++)' % f)
                o.append('        assert_true(vocl_%s_at(&a.%s, i) == vocl_%s_at(&b.%s, i));' % (ty, f, ty, f))
            elif ty in ('blist', 'kargs') or f in m.rec:
                o.append('    assert_int_equal(a.%s.n, b.%s.n); /* (items: the bytes again, below) */' % (f, f))
            elif ty in ('bytes', 'rest'):
                o.append('    assert_true(a.%s.len == b.%s.len);' % (f, f))
                o.append('    assert_memory_equal(a.%s.p, b.%s.p, a.%s.len);' % (f, f, f))
            elif ty == 'strs':
                o.append('    assert_non_null(b.%s.raw); /* (items: the bytes again, below) */' % f)
            elif ty in ('out', 'in'):
                o.append('    assert_int_equal(a.%s.mode, b.%s.mode);' % (f, f))
                o.append('    assert_true(a.%s.len == b.%s.len && a.%s.arg == b.%s.arg);' % (f, f, f, f))
                if ty == 'out':
                    o.append('    assert_memory_equal(a.%s.p, b.%s.p, a.%s.len);' % (f, f, f))
        o += ['    /* Encoding what was decoded gives the same bytes. */',
              '    vocl_wr_init(&w2);', '    vocl_wr_begin(&w2, 1, 0, 1);',
              '    vocl_enc_%s(&w2, &b);' % m.cname, '    vocl_wr_finish(&w2);',
              '    assert_int_equal(w2.len, w.len);',
              '    assert_memory_equal(w2.buf + VOCL_HDR_SIZE, msg, n);',
              '    vocl_wr_free(&w2);',
              '    /* Every prefix is refused, and read no further than it goes (but',
              '     * for those that end in a rest field: a shorter rest). */',
              '    for (size_t cut = 0; cut < n%s; cut++) {' % (
                  ' - a.%s.len' % m.fields[-1][1] if m.fields and m.fields[-1][0] == 'rest' else ''),
              '        uint8_t *part = exact_copy(&w, cut);',
              '        vocl_rd_init(&r, part, cut);',
              '        const char *why = vocl_dec_%s(&r, &b);' % m.cname,
              '        assert_true(why || r.fail);', '        free(part);', '    }',
              '    free(msg);', '    vocl_wr_free(&w);', '}', '']
    # Fuzz seeds from the same encoders: HELLO, the request, BYE (a session
    # as tests/fuzz/fuzz_request.c reads one).
    o += ['static void put_msg_end(struct vocl_wr *w)', '{',
          '    vocl_wr_finish(w);', '    assert_false(w->fail);', '}', '',
          'static void put_msg(FILE *f, struct vocl_wr *w)', '{',
          '    vocl_wr_finish(w);', '    assert_false(w->fail);',
          '    assert_int_equal(fwrite(w->buf, 1, w->len, f), w->len);', '}', '',
          '/* HELLO, the message in req (finished), BYE. */',
          'static void write_seed(const char *dir, const char *name, const struct vocl_wr *req)',
          '{', '    char path[4096];', '    struct vocl_wr w;',
          '    snprintf(path, sizeof(path), "%s/msg-%s", dir, name);',
          '    FILE *f = fopen(path, "wb");', '    assert_non_null(f);',
          '    vocl_wr_init(&w);',
          '    vocl_wr_begin(&w, VOCL_OP_HELLO, VOCL_F_REPLY, 1);',
          '    vocl_enc_HELLO_req(&w, &(struct vocl_msg_HELLO_req){.version = VOCL_WIRE_VERSION});',
          '    put_msg(f, &w);',
          '    assert_int_equal(fwrite(req->buf, 1, req->len, f), req->len);',
          '    vocl_wr_begin(&w, VOCL_OP_BYE, 0, 3);',
          '    vocl_enc_BYE_req(&w, &(struct vocl_msg_BYE_req){.peer_died = 0});',
          '    put_msg(f, &w);',
          '    vocl_wr_free(&w);', '    fclose(f);', '}', '']
    o += ['/* test_msg --seeds DIR: writes the seeds instead (tests/fuzz/README.md). */',
          'static int write_seeds(const char *dir)', '{', '    struct vocl_wr w;']
    pushed = {p.name for p in t.protos if p.push}
    for m in t.msgs:
        if m.dir != 'req' or m.name in pushed:  # (the proxy receives no pushed message)
            continue
        o += ['    {', '        struct vocl_msg_%s a;' % m.cname, '        fill_%s(&a);' % m.cname,
              '        vocl_wr_init(&w);',
              '        vocl_wr_begin(&w, VOCL_OP_%s, VOCL_F_REPLY, 2);' % m.name,
              '        vocl_enc_%s(&w, &a);' % m.cname, '        put_msg_end(&w);',
              '        write_seed(dir, "%s", &w);' % m.name, '        vocl_wr_free(&w);', '    }']
    o += ['    return 0;', '}', '']
    o += ['int main(int argc, char **argv)', '{',
          '    if (argc == 3 && strcmp(argv[1], "--seeds") == 0)', '        return write_seeds(argv[2]);',
          '    const struct CMUnitTest tests[] = {']
    for fn in names:
        o.append('        cmocka_unit_test(%s),' % fn)
    o += ['    };', '    return cmocka_run_group_tests(tests, NULL, NULL);', '}', '']
    return '\n'.join(o)


def main():
    src, outdir, wanted = sys.argv[1], sys.argv[2], set(sys.argv[3:])
    table = parse_table(src)
    gens = {'vocl_api.h': gen_header, 'vocl_client_gen.c': gen_client,
            'exec_gen.c': gen_proxy, 'native_gen.c': gen_native,
            'vocl_msg.h': gen_msg_h, 'vocl_msg.c': gen_msg_c, 'test_msg_gen.c': gen_msg_test}
    if wanted - set(gens):
        raise SystemExit('gen-api.py: no such output: %s' % ', '.join(sorted(wanted - set(gens))))
    for name, gen in gens.items():
        if wanted and name not in wanted:
            continue
        with open('%s/%s' % (outdir, name), 'w') as f:
            f.write(gen(table))


if __name__ == '__main__':
    main()
