#!/usr/bin/env python3
"""make-sessions.py - the request fuzzer's seeds from recorded requests
(record.sh): one seed per recorded session.

A session is one process's recording, DIR/<pid>-<n>.bin for n in order,
its messages concatenated as fuzz_request.c reads them.  Real sessions
repeat themselves (a loop of 8191 launches, 50 writes of 16 KiB): a message
whose opcode and length came twice already in its session is left out, but
for RETAIN and RELEASE (small, and what reference counting is made of), and
so is a large one (inline data) after the first of its opcode, and one of
more than 64 KiB (a program binary), so that the seeds stay small.
What depends on a message left out (an event it made) fails its lookup in
the fuzzer: a path worth taking too.

Usage: make-sessions.py OUTDIR RECORDING_DIR...
"""
import collections
import os
import struct
import sys

KEEP_ALL = {12, 13}  # VOCL_OP_RETAIN, VOCL_OP_RELEASE (common/cl_api.def)
REPEATS = 2
BIG = 8192  # payload bytes: only the first such message of an opcode is kept
HUGE = 65536  # and none larger (program binaries): seeds stay small


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for rec in sys.argv[2:]:
        by_pid = collections.defaultdict(list)
        for name in os.listdir(rec):
            if name.endswith('.bin'):
                pid, n = name[:-4].split('-')
                by_pid[pid].append((int(n), name))
        for pid, files in sorted(by_pid.items()):
            seen = collections.Counter()
            data = bytearray()
            for _, name in sorted(files):
                msg = open(os.path.join(rec, name), 'rb').read()
                if len(msg) >= 16:
                    op, length = struct.unpack_from('<HxxxxI', msg, 2)
                    seen[op, length] += 1
                    if op not in KEEP_ALL and seen[op, length] > REPEATS:
                        continue
                    if length > HUGE:
                        continue
                    if length > BIG:
                        seen[op, 'big'] += 1
                        if seen[op, 'big'] > 1:
                            continue
                data += msg
            tag = os.path.basename(os.path.normpath(rec))
            with open(os.path.join(out, '%s-%s' % (tag, pid)), 'wb') as f:
                f.write(data)


if __name__ == '__main__':
    main()
