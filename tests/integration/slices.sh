#!/usr/bin/env bash
# slices.sh - 4 devices of 2 proxies each write their own slice of one
# buffer, unordered (slices.c): the read after them must equal native, and
# the data must move no more than the coherence protocol needs.
#
#   slices.sh VOCL_RUN SLICES_PROGRAM
#
# Per round the buffer moves once, whole, to the second proxy before its
# first writer (without waiting for the first proxy's writers: both keep a
# twin), and for the read the second proxy's changes come back as a diff.
# The moves are counted in the proxies' timelines (VOCL_TRACE: MIGRATE_OUT,
# DIFF_OUT) and the diffs' sizes in their messages (-v); reported in bytes.
set -euo pipefail
vocl_run=$1 prog=$2 rounds=3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
POCL_DEVICES="pthread pthread pthread pthread" "$prog" -r "$rounds" >"$tmp/native" 2>&1 || {
    echo "native run failed:"; cat "$tmp/native"; exit 1; }
VOCL_TRACE=$tmp/trace.json timeout 300 "$vocl_run" -v -n 2 -d 2 -- "$prog" -r "$rounds" \
    >"$tmp/vocl" 2>"$tmp/err" || { echo "vocl run failed:"; cat "$tmp/vocl" "$tmp/err"; exit 1; }
cat "$tmp/vocl"
cmp -s "$tmp/native" "$tmp/vocl" || { echo "output differs from native:"; cat "$tmp/native"; exit 1; }
bytes=$(sed -nE 's/.* slice of ([0-9]+) bytes.*/\1/p' "$tmp/vocl")
python3 - "$tmp/trace.json" "$rounds" "$bytes" "$tmp/err" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
events = d['traceEvents'] if isinstance(d, dict) else d
rounds, size = int(sys.argv[2]), int(sys.argv[3])
def count(name):
    return sum(1 for e in events if e.get('ph') == 'X' and e.get('name') == name)
whole, diffs = count('MIGRATE_OUT'), count('DIFF_OUT')
ok = whole == count('MIGRATE_IN') == rounds and diffs == count('DIFF_IN') == rounds
sent = [int(m.group(2)) for m in re.finditer(r'diff to rank \d+: (\d+) of \d+ bytes changed, (\d+) sent',
                                             open(sys.argv[4]).read())]
# The second proxy's two devices wrote half of the buffer: its diff holds
# no more than that half, with a bit per byte of mask.
ok = ok and len(sent) == rounds and all(0 < s <= size // 2 + size // 16 + 64 for s in sent)
print('moved between proxies: %d whole (%d bytes each), %d diffs (%s bytes); '
      '%d of each expected: %s' % (whole, size, diffs, '+'.join(map(str, sent)) or 'none',
                                   rounds, 'ok' if ok else 'WRONG'))
print('bytes moved: %d (moving it whole each time: %d)' % (whole * size + sum(sent), 2 * rounds * size))
sys.exit(0 if ok else 1)
PY
