#!/usr/bin/env python3
"""gen-fake.py - generate the fake native OpenCL table of the request fuzzer
from common/cl_api.def, so that it covers every entry the executor may call.

Three kinds of entry, by the table's mode:

  gen               a default fake built from the annotations: every handle
                    checked (fake_cl.c: fake_use), every input array, string
                    and property list read as a driver would read it, info
                    values filled with zeros of the size asked for, out
                    values zeroed, new objects made, commands enqueued
                    (fake_command: their events complete in order)
  retain / release  the fake's reference counting
  anything else     no annotations to go by: written by hand in fake_cl.c
                    when the executor calls it (HAND below), else a fake that
                    aborts, naming the entry, so a new call is not missed

Entries in HAND are written by hand even where a default could be made: they
answer with values the executor acts on (an info query naming a context, a
buffer's size), or touch memory whose extent only the call's semantics say.

Usage: gen-fake.py gen-api.py cl_api.def OUT.c OUT.h
"""
import importlib.util
import re
import sys

HAND = {
    # platform, devices, contexts
    'clGetPlatformIDs', 'clGetPlatformInfo', 'clGetDeviceIDs', 'clGetDeviceInfo',
    'clCreateSubDevices', 'clCreateContext', 'clGetContextInfo', 'clGetCommandQueueInfo',
    # memory objects
    'clCreateBuffer', 'clCreateBufferWithProperties', 'clCreateSubBuffer', 'clCreateImage',
    'clCreateImageWithProperties', 'clCreatePipe', 'clGetSupportedImageFormats',
    'clGetMemObjectInfo', 'clGetImageInfo',
    # programs and kernels
    'clCreateProgramWithSource', 'clCreateProgramWithBinary', 'clBuildProgram',
    'clCompileProgram', 'clLinkProgram', 'clGetProgramInfo', 'clCreateKernel',
    'clCreateKernelsInProgram', 'clCloneKernel', 'clGetKernelInfo', 'clGetKernelArgInfo',
    'clSetKernelArg',
    # events, and where commands complete
    'clFinish', 'clWaitForEvents', 'clGetEventInfo', 'clCreateUserEvent', 'clSetUserEventStatus',
    'clSetEventCallback',
    # commands whose host memory the fake must touch
    'clEnqueueReadBuffer', 'clEnqueueWriteBuffer', 'clEnqueueReadBufferRect',
    'clEnqueueWriteBufferRect', 'clEnqueueReadImage', 'clEnqueueWriteImage',
    'clEnqueueMapBuffer', 'clEnqueueUnmapMemObject', 'clEnqueueNDRangeKernel',
}


def load_gen_api(path):
    spec = importlib.util.spec_from_file_location('gen_api', path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def with_unused(e, o):
    """o, a function's lines, with a (void) cast after its '{' for each
    parameter its body does not use (the warnings are on)."""
    body = '\n'.join(o[2:])
    unused = ['    (void)%s;' % p.name for p in e.params
              if not re.search(r'\b%s\b' % re.escape(p.name), body)]
    return o[:2] + unused + o[2:]


def fake_default(g, e):
    """The default fake of a gen entry, from its annotations."""
    o = ['static %s' % e.proto('fake_gen_' + e.name), '{',
         '    fake_enter("%s");' % e.name, '    cl_int err = CL_SUCCESS;']
    handles = [p for p in e.params if p.kind in ('h', 'h?')]
    for p in e.params:
        k = p.kind
        if k in ('h', 'h?'):
            o.append('    err = fake_use(err, %s, VOCL_T_%s, %s);' % (
                p.name, p.htype, 'true' if k == 'h?' else 'false'))
        elif k in ('ha', 'wl'):
            o.append('    err = fake_use_list(err, %s, %s, VOCL_T_%s);' % (p.name, p.arg, p.htype))
        elif k == 'va':
            o.append('    fake_read(%s, %s ? %s * sizeof(*%s) : 0);' % (p.name, p.name, p.arg, p.name))
        elif k == 'in':
            o.append('    fake_read(%s, %s ? (size_t)(%s) : 0);' % (p.name, p.name, p.arg))
        elif k == 'str':
            o.append('    fake_read_str(%s);' % p.name)
        elif k == 'props':
            o.append('    err = fake_read_props(err, %s);' % p.name)
        elif k == 'info':
            size = next(q for q in e.params if q.kind == 'infosz')
            o.append('    err = fake_info(err, %s, %s, %s, NULL, %s ? %s : 8);' % (
                p.arg, p.name, size.name, p.arg, p.arg))
        elif k == 'outv':
            o.append('    if (!err && %s) *%s = 0;' % (p.name, p.name))
    parent = handles[0].name if handles else 'NULL'
    dev = next((p.name for p in handles[1:] if p.htype == 'DEVICE'), 'NULL')
    wl = next((p for p in e.params if p.kind == 'wl'), None)
    for p in e.params:
        if p.kind == 'ev':
            o.append('    if (!err && %s) *%s = fake_command(%s, %s, %s);' % (
                p.name, p.name, parent, wl.arg if wl else '0', wl.name if wl else 'NULL'))
    if e.creates:
        errp = next(p for p in e.params if p.kind == 'err')
        o += ['    %s made = err ? NULL : fake_new(VOCL_T_%s, %s, %s);' % (
                  e.ret, g.HANDLE_TYPES[e.ret], parent, dev),
              '    if (%s) *%s = err;' % (errp.name, errp.name),
              '    return made;', '}', '']
    else:
        o += ['    return err;', '}', '']
    return with_unused(e, o)


def fake_refcount(g, e):
    p = e.params[0]
    return ['static %s' % e.proto('fake_gen_' + e.name), '{',
            '    fake_enter("%s");' % e.name,
            '    cl_int err = fake_%s(%s, VOCL_T_%s);' % (e.mode, p.name, g.HANDLE_TYPES[p.ctype]),
            '    return err;', '}', '']


def fake_unexpected(e):
    return with_unused(e, ['static %s' % e.proto('fake_gen_' + e.name), '{',
                           '    fake_unexpected("%s");' % e.name, '}', ''])


def main():
    g = load_gen_api(sys.argv[1])
    entries = g.parse(sys.argv[2])
    names = {e.name for e in entries}
    if HAND - names:
        raise SystemExit('gen-fake.py: not in cl_api.def: %s' % ', '.join(sorted(HAND - names)))
    head = ['/* Generated by tests/fuzz/gen-fake.py from common/cl_api.def: do not edit. */',
            '#ifndef FAKE_GEN_H', '#define FAKE_GEN_H', '', '#include "vocl_api.h"', '',
            '/* The entries written by hand in fake_cl.c. */']
    for e in entries:
        if e.name in HAND:
            head.append('%s;' % e.proto('fake_' + e.name))
    head += ['', '#endif', '']
    src = ['/* Generated by tests/fuzz/gen-fake.py from common/cl_api.def: do not edit. */',
           '#include "fake_cl.h"', '']
    for e in entries:
        if e.name in HAND:
            continue
        if e.mode == 'gen':
            src += fake_default(g, e)
        elif e.mode in ('retain', 'release'):
            src += fake_refcount(g, e)
        else:
            src += fake_unexpected(e)
    src += ['const struct vocl_native_api fake_cl_api = {']
    for e in entries:
        src.append('    .%s = %s%s,' % (e.name, 'fake_' if e.name in HAND else 'fake_gen_', e.name))
    src += ['};', '']
    with open(sys.argv[3], 'w') as f:
        f.write('\n'.join(src))
    with open(sys.argv[4], 'w') as f:
        f.write('\n'.join(head))


if __name__ == '__main__':
    main()
