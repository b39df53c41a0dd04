#!/usr/bin/env bash
# deferred.sh - deferred errors: learns from a native run the code each
# failing request gives at once, then runs deferred.c under vocl-run, which
# checks that the same codes come back from the next synchronisation.  The
# proxy must also warn on stderr, naming each failed call.
#   deferred.sh VOCL_RUN PROGRAM
set -euo pipefail
vocl_run=$1 prog=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

POCL_DEVICES=pthread "$prog" --native >"$tmp/codes" 2>"$tmp/native.err" || {
    cat "$tmp/native.err"; fail "native run"; }
read -r -a codes <"$tmp/codes"
echo "native codes: ${codes[*]}"

rc=0
timeout 120 "$vocl_run" -n 2 -d 1 -- "$prog" "${codes[@]}" >"$tmp/out" 2>"$tmp/err" || rc=$?
cat "$tmp/out"
[ "$rc" -eq 0 ] || { echo "--- stderr:"; cat "$tmp/err"; fail "vocl run exited $rc"; }

# Each failed call is named by a warning of the proxy.
for call in clEnqueueCopyBuffer; do
    grep -q "earlier $call failed" "$tmp/err" || {
        cat "$tmp/err"; fail "no warning naming $call"; }
done
# The failure left unreported is named at exit.
grep -q 'clEnqueueCopyBuffer failed with .*no later call reported it' "$tmp/err" || {
    cat "$tmp/err"; fail "no warning at exit for the unreported failure"; }
echo "warnings:"
sort "$tmp/err" | uniq -c | sed 's/^/  /' | head -20
