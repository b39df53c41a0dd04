#!/usr/bin/env bash
# wrapped.sh VOCL_RUN APP - an application started by a script under
# vocl-run.  Under LD_PRELOAD every process of the script loads libvocl,
# and once each helper that exited (here /bin/true) joined the job as the
# same rank at its exit: the job broke (the shell died of SIGPIPE) and
# hung.  A rank now joins once, from the first of its processes to call
# OpenCL (libvocl(7), "Job mode"):
#  - exec'd after a helper, the application runs and verifies;
#  - run as a child of the script (as `timeout APP` does), it verifies too,
#    and the script's own end does not join again;
#  - a second process of the rank that calls OpenCL gets no platform and a
#    message that says why.
set -uo pipefail
vocl_run=$1 app=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail=0
check() { # WHAT STATUS PATTERN...
    local what=$1 rc=$2 p
    shift 2
    [ "$rc" -eq 0 ] || { echo "wrapped.sh: $what: status $rc" >&2; fail=1; }
    for p in "$@"; do
        [ "$(grep -c -E -- "$p" "$out")" -ge 1 ] || { echo "wrapped.sh: $what: no line '$p'" >&2; fail=1; }
    done
    [ "$fail" -eq 0 ] || cat "$out" >&2
}

timeout 120 "$vocl_run" -n 1 -d 1 -- bash -c '/bin/true; exec "$0" --devices 1' "$app" >"$out" 2>&1
check "exec'd after a helper" $? '^verified: yes'

timeout 120 "$vocl_run" -n 1 -d 1 -- bash -c '/bin/true; "$0" --devices 1; echo "child status $?"' \
    "$app" >"$out" 2>&1
check "a child of the script" $? '^verified: yes' '^child status 0$'

timeout 120 "$vocl_run" -n 1 -d 1 -- bash -c '"$0" --devices 1; "$0" --devices 1; echo "second status $?"' \
    "$app" >"$out" 2>&1
check "two children of the script" $? '^verified: yes' 'joined the job first' '^second status [1-9]'
[ "$fail" -eq 0 ] && echo "wrapped.sh: PASS"
exit "$fail"
