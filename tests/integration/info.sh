#!/usr/bin/env bash
# info.sh - answers that cannot change are kept by libvocl, not asked again
# (libvocl/info.c): the info program asks a device's name, and the
# platform's profile and version, 300 more times each; the proxy must have
# run fewer than 300 requests for the whole program.
#   info.sh VOCL_RUN INFO_PROGRAM
set -euo pipefail
vocl_run=$1 prog=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/rec"
VOCL_RECORD_REQUESTS=$tmp/rec POCL_DEVICES=pthread \
    timeout 120 "$vocl_run" -n 1 -d 1 -- "$prog" --repeat 300 >"$tmp/out" 2>&1 || {
    cat "$tmp/out"; echo "FAIL: the run failed"; exit 1; }
grep -qx done "$tmp/out" || { cat "$tmp/out"; echo "FAIL: no 'done'"; exit 1; }
n=$(find "$tmp/rec" -type f | wc -l)
[ "$n" -gt 0 ] || { echo "FAIL: nothing was recorded (VOCL_RECORD_REQUESTS)"; exit 1; }
[ "$n" -lt 300 ] || { echo "FAIL: $n requests: the device's name or the platform's info was asked each time"; exit 1; }
echo "ok: $n requests for the whole program, with 300 more questions of the device's name and 600 of the platform's"
