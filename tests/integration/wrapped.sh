#!/usr/bin/env bash
# wrapped.sh VOCL_RUN APP - an application started by a script under
# vocl-run.  Under LD_PRELOAD every process of the script loads libvocl,
# and once each helper that exited (here /bin/true) joined the job as the
# same rank at its exit: the job broke (the shell died of SIGPIPE) and
# hung.  Only the process vocl-guard started joins now:
#  - exec'd after a helper, the application runs and verifies;
#  - run as a child of the script, it gets no platform and a message that
#    says why and what to do, and the job ends by itself.
set -uo pipefail
vocl_run=$1 app=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail=0

timeout 120 "$vocl_run" -n 1 -d 1 -- bash -c '/bin/true; exec "$0" --devices 1' "$app" >"$out" 2>&1
rc=$?
if [ "$rc" -ne 0 ] || ! grep -q '^verified: yes' "$out"; then
    echo "wrapped.sh: exec'd after a helper: status $rc, not verified:" >&2
    cat "$out" >&2
    fail=1
fi

timeout 120 "$vocl_run" -n 1 -d 1 -- bash -c '"$0" --devices 1; echo "child status $?"' "$app" \
    >"$out" 2>&1
rc=$?
if [ "$rc" -ne 0 ] || ! grep -q 'only that process can join the job' "$out" ||
    ! grep -q '^child status [1-9]' "$out"; then
    echo "wrapped.sh: as a child of the script: status $rc, or no message, or it did not fail:" >&2
    cat "$out" >&2
    fail=1
fi
[ "$fail" -eq 0 ] && echo "wrapped.sh: PASS"
exit "$fail"
