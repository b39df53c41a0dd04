#!/usr/bin/env bash
# native_kernel.sh VOCL_RUN PROGRAM - see native_kernel.c.
set -euo pipefail
vocl_run=$1 prog=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
timeout 120 "$vocl_run" -n 1 -d 1 -- "$prog" >"$tmp/out" 2>"$tmp/err"
cat "$tmp/out"
grep -qx 'runs kernels: yes, native kernels: no' "$tmp/out" || { echo "FAIL: capabilities"; exit 1; }
[ "$(grep -c '^clEnqueueNativeKernel: -59$' "$tmp/out")" -eq 2 ] ||
    { echo "FAIL: not CL_INVALID_OPERATION (-59) both times"; exit 1; }
n=$(grep -c 'clEnqueueNativeKernel' "$tmp/err" || true)
[ "$n" -eq 1 ] || { echo "FAIL: $n lines on stderr about it, not 1:"; cat "$tmp/err"; exit 1; }
echo "stderr, once: $(grep clEnqueueNativeKernel "$tmp/err")"
