#!/usr/bin/env bash
# shared.sh - buffers shared with a proxy of the application's node
# (common/shm.h): shared.c gives the same output natively, through one
# proxy with sharing on, and with VOCL_SHM=0; with it on, VOCL_PROFILE must
# count transfers done in shared memory, and with it off none.
#
#   shared.sh VOCL_RUN PROGRAM
set -euo pipefail
vocl_run=$1 prog=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

POCL_DEVICES=pthread "$prog" >"$tmp/native" 2>"$tmp/native.err" || {
    echo "native run failed"; cat "$tmp/native" "$tmp/native.err"; exit 1; }
for shm in 1 0; do
    VOCL_SHM=$shm VOCL_PROFILE=1 timeout 120 "$vocl_run" -n 1 -d 1 -- "$prog" \
        >"$tmp/vocl$shm" 2>"$tmp/vocl$shm.err" || {
        echo "vocl run (VOCL_SHM=$shm) failed"; cat "$tmp/vocl$shm" "$tmp/vocl$shm.err"; exit 1; }
    if ! cmp -s "$tmp/native" "$tmp/vocl$shm"; then
        echo "VOCL_SHM=$shm: output differs from the native run (native < > vocl):"
        diff "$tmp/native" "$tmp/vocl$shm" || true
        exit 1
    fi
done
shared=$(grep -o 'shared with a proxy of this node: [0-9]* transfers' "$tmp/vocl1.err" |
         grep -o '[0-9]* transfers' || true)
if [[ -z $shared || $shared == "0 transfers" ]]; then
    echo "VOCL_SHM=1: no transfer was done in shared memory"; cat "$tmp/vocl1.err"; exit 1
fi
if grep -q 'shared with a proxy of this node' "$tmp/vocl0.err"; then
    echo "VOCL_SHM=0: transfers were still done in shared memory"; exit 1
fi
cat "$tmp/vocl1"
echo "with sharing: $shared in shared memory; VOCL_SHM=0: none; the same output natively"
