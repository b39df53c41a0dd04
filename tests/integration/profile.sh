#!/usr/bin/env bash
# profile.sh - VOCL_PROFILE and VOCL_TRACE on a program whose calls are known
# exactly: vecadd_reduce over 2 devices of 2 proxies, with 64 KiB chunks.
# Its stdout must stay that of the native run; profile_check.py checks the
# table (stderr) and the Chrome trace against what the program does.
#   profile.sh VOCL_RUN PYTHON3 CHECKER VECADD_REDUCE
set -euo pipefail
vocl_run=$1 python=$2 checker=$3 prog=$4
n=1000003
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

POCL_DEVICES="pthread pthread" "$prog" -n $n --devices 2 >"$tmp/native" 2>"$tmp/native.err" || {
    cat "$tmp/native.err"; fail "native run"; }
rc=0
VOCL_POOL_SIZE=64K VOCL_PROFILE=1 VOCL_TRACE="$tmp/trace.json" \
    timeout 120 "$vocl_run" -n 2 -d 1 -- "$prog" -n $n --devices 2 \
    >"$tmp/vocl" 2>"$tmp/vocl.err" || rc=$?
[ "$rc" -eq 0 ] || { cat "$tmp/vocl.err"; fail "vocl run exited $rc"; }
cmp -s "$tmp/native" "$tmp/vocl" || {
    diff "$tmp/native" "$tmp/vocl" | head; fail "stdout differs from the native run"; }
"$python" "$checker" --elements $n --devices 2 --chunk 65536 \
    "$tmp/vocl.err" "$tmp/trace.json"
