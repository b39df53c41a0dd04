#!/usr/bin/env bash
# migrations.sh - the data of a context spanning two proxies moves only when
# a command needs it where it is not, and straight from proxy to proxy.
#
#   migrations.sh VOCL_RUN SPANNING_PROGRAM
#
# spanning.c's checks, run on 2 proxies x 1 device, need exactly 18 moves
# (counted in its comments' order: 1: kernel B, read A; 2: scale B; 3: read
# B, read A; 3b: scale B, read A; 4: copy B, read A, kernel B on the
# sub-buffer, read A of the parent; 5: read A; 6: kernel B on the image;
# 7: kernel A, kernel B; 8: read B; 11: kernel B, kernel A).  In 4 and 11
# the commands on B write buffers whose writes on A were not finished, and
# have no wait list: they take the data as it is, with twins, and the next
# use on A gets B's changes back as a diff (libvocl(7), "Several writers"):
# 15 moves whole, 3 diffs.  Each shows in the proxies' timelines
# (VOCL_TRACE) as a MIGRATE_OUT (or DIFF_OUT) on one proxy and a MIGRATE_IN
# (DIFF_IN) on the other, and none as a transfer of the application.
set -euo pipefail
vocl_run=$1 prog=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
VOCL_TRACE=$tmp/trace.json timeout 300 "$vocl_run" -n 2 -d 1 -- "$prog" >"$tmp/out" 2>"$tmp/err" || {
    echo "spanning failed:"; cat "$tmp/out" "$tmp/err"; exit 1; }
python3 - "$tmp/trace.json" <<'PY'
import json, sys
from collections import Counter
d = json.load(open(sys.argv[1]))
events = d['traceEvents'] if isinstance(d, dict) else d
n = Counter((e.get('name'), e.get('pid')) for e in events if e.get('ph') == 'X')
def per_proxy(name):
    return {pid: k for (nm, pid), k in n.items() if nm == name}
outs, ins = per_proxy('MIGRATE_OUT'), per_proxy('MIGRATE_IN')
douts, dins = per_proxy('DIFF_OUT'), per_proxy('DIFF_IN')
print('MIGRATE_OUT per proxy:', outs, ' MIGRATE_IN per proxy:', ins)
print('DIFF_OUT per proxy:', douts, ' DIFF_IN per proxy:', dins)
total_out, total_in = sum(outs.values()), sum(ins.values())
diff_out, diff_in = sum(douts.values()), sum(dins.values())
ok = (total_out == total_in == 15 and diff_out == diff_in == 3 and
      all(set(d) <= {1, 2} for d in (outs, ins, douts, dins)))
print('migrations: %d out, %d in (15 expected); diffs: %d out, %d in (3 expected): %s'
      % (total_out, total_in, diff_out, diff_in, 'ok' if ok else 'WRONG'))
sys.exit(0 if ok else 1)
PY
