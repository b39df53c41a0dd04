#!/usr/bin/env bash
# contexts.sh VOCL_RUN PROGRAM - each context that stages a transfer gets a
# pool of the driver's memory, and the proxy frees it once the client has
# released the context: while it serves on, not when it exits.
set -euo pipefail
vocl_run=$1 prog=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
n=6
# Nothing shared, no direct path: every transfer above 64 KiB is staged.
VOCL_SHM=0 VOCL_DIRECT=0 timeout 120 "$vocl_run" -v -v -v -n 1 -d 1 -- "$prog" "$n" \
    >"$tmp/out" 2>"$tmp/err" || fail "exit $?: $(tail -5 "$tmp/err")"
grep -qx "contexts: $n made and released, data verified" "$tmp/out" || fail "$(cat "$tmp/out")"
made=$(grep -c 'pool of a context: [0-9]* buffers' "$tmp/err" || true)
freed=$(grep -c 'pool of a context: freed' "$tmp/err" || true)
# Freed while the proxy served: before the client's session ended.  All but
# the last, whose chunks may still be on their way out at the one turn of
# the serving loop between the context's release and the client's BYE.
early=$(sed -n '/session of rank 0: ended/q; /pool of a context: freed/p' "$tmp/err" | wc -l)
[ "$made" -eq "$n" ] || fail "$made pools of contexts made, not $n"
[ "$freed" -eq "$n" ] || fail "$freed of $n pools freed in all"
[ "$early" -ge $((n - 1)) ] || fail "$early of $n pools freed before the session ended"
echo "contexts: $n pools of contexts made and freed, $early while the proxy served"
