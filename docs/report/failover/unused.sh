#!/usr/bin/env bash
# unused.sh - what failover costs when it is off (VOCL_FAILOVER unset): the
# small-command rows of vocl-bench-worker through the libvocl from before
# failover (OLD) and the one now (NEW_BUILD_DIR), in alternating pairs,
# one proxy of one device.  Off, failover adds a test of a NULL pointer to
# a request's posting and a death's handling; this is to see that nothing
# else moved.
#   unused.sh OLD_LIBVOCL NEW_BUILD_DIR [PAIRS]
# Prints every run's rows, then per row the medians and new/old.
set -euo pipefail
old=$1 build=$2 pairs=${3:-7}
export HYDRA_LAUNCHER=fork HWLOC_COMPONENTS=-opencl POCL_DEVICES=pthread
unset VOCL_FAILOVER
rows='^(call,(clGetDeviceIDs|clSetKernelArg|clCreateBuffer|clReleaseMemObject),|lat,|launch,)'
# one LABEL LIB: a run's rows, each prefixed with LABEL.
one() {
    VOCL_LIB=$2 "$build/tools/vocl-run" -n 1 -d 1 -- "$build/tools/bench/vocl-bench-worker" \
        --sections call,lat,launch 2>/dev/null | grep -E "$rows" | sed "s/^/$1,/"
}
runs=$(mktemp)
trap 'rm -f "$runs"' EXIT
for i in $(seq "$pairs"); do
    if [ $((i % 2)) = 1 ]; then one old "$old"; one new "$build/libvocl/libvocl.so"
    else one new "$build/libvocl/libvocl.so"; one old "$old"; fi
done | tee "$runs"
python3 - "$runs" <<'PY'
import collections, statistics, sys
v = collections.defaultdict(list)
for line in open(sys.argv[1]):
    lib, sec, name, _, val, _ = line.strip().split(',')
    v[(sec + ' ' + name, lib)].append(float(val))
print('\n| row | before failover | now, failover off | now / before |\n|---|---|---|---|')
for row in dict.fromkeys(k[0] for k in v):
    o, n = statistics.median(v[(row, 'old')]), statistics.median(v[(row, 'new')])
    unit = 'ms' if o > 1e-3 else 'us'
    f = 1e3 if unit == 'ms' else 1e6
    print(f'| {row} | {o * f:.3f} {unit} | {n * f:.3f} {unit} | {n / o:.3f} |')
PY
