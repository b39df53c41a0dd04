#!/usr/bin/env bash
# slices.sh - 4 devices of 2 proxies each write their own slice of one
# buffer, unordered (slices.c): the read after them must equal native, and
# the data must move no more than the coherence protocol needs.
#
#   slices.sh VOCL_RUN SLICES_PROGRAM
#
# Per round the buffer moves twice, whole, from proxy to proxy: to the
# second proxy before its first writer (after every writer of the first
# proxy), and back for the read.  The moves are counted in the proxies'
# timelines (VOCL_TRACE, MIGRATE_OUT) and reported in bytes.
set -euo pipefail
vocl_run=$1 prog=$2 rounds=3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
POCL_DEVICES="pthread pthread pthread pthread" "$prog" -r "$rounds" >"$tmp/native" 2>&1 || {
    echo "native run failed:"; cat "$tmp/native"; exit 1; }
VOCL_TRACE=$tmp/trace.json timeout 300 "$vocl_run" -n 2 -d 2 -- "$prog" -r "$rounds" \
    >"$tmp/vocl" 2>"$tmp/err" || { echo "vocl run failed:"; cat "$tmp/vocl" "$tmp/err"; exit 1; }
cat "$tmp/vocl"
cmp -s "$tmp/native" "$tmp/vocl" || { echo "output differs from native:"; cat "$tmp/native"; exit 1; }
bytes=$(sed -nE 's/.* slice of ([0-9]+) bytes.*/\1/p' "$tmp/vocl")
python3 - "$tmp/trace.json" "$rounds" "$bytes" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
events = d['traceEvents'] if isinstance(d, dict) else d
rounds, size = int(sys.argv[2]), int(sys.argv[3])
outs = sum(1 for e in events if e.get('ph') == 'X' and e.get('name') == 'MIGRATE_OUT')
ins = sum(1 for e in events if e.get('ph') == 'X' and e.get('name') == 'MIGRATE_IN')
want = 2 * rounds
ok = outs == ins == want
print('moved between proxies: %d times x %d bytes = %d bytes (%d moves expected): %s'
      % (outs, size, outs * size, want, 'ok' if ok else 'WRONG'))
sys.exit(0 if ok else 1)
PY
