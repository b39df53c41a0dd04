#!/bin/bash
# turns.sh ROUNDS ARGS -- BINARY...: runs each BINARY with ARGS in turn,
# ROUNDS times, on one PoCL device, and prints each one's median `seconds=`
# against the first's.  The overhead loops of README.md, e.g.
#   docs/report/dag/turns.sh 31 "-n 192" -- build/examples/dag/plain-floyd \
#       /tmp/dag-floyd-before build/examples/dag/dag-floyd
set -u
rounds=$1 args=$2
shift 3
export POCL_DEVICES=pthread HWLOC_COMPONENTS=-opencl
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for b in "$@"; do "$b" $args >/dev/null 2>&1; done # warm the kernel cache
for ((i = 0; i < rounds; i++)); do
    for b in "$@"; do
        s=$("$b" $args 2>/dev/null | grep -o 'seconds=[0-9.e-]*' | cut -d= -f2)
        echo "$b ${s:-nan}" >>"$out"
    done
done
python3 - "$out" "$@" <<'PY'
import statistics, sys
times = {}
for line in open(sys.argv[1]):
    b, s = line.split()
    times.setdefault(b, []).append(float(s))
base = statistics.median(times[sys.argv[2]])
for b in sys.argv[2:]:
    m = statistics.median(times[b])
    print(f"{b}: {len(times[b])} runs, median {m * 1e3:.3f} ms, {100 * (m / base - 1):+.1f} %")
PY
