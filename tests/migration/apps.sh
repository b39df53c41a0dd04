#!/usr/bin/env bash
# apps.sh - an application moved while it runs: proxy 0 to the spare proxy
# (2) and back, ROUNDS runs in a row.  Every move must succeed, and the
# output must be that of a run without moves, less its timings.
#
#   apps.sh VOCL_RUN VOCL_CTL ROUNDS PROGRAM [ARGS...]
#
# The program runs under `vocl-run -n 3 -d 1 --spare 1`: its two
# devices are proxies 0 and 1.  The moves go 0.3 s apart, from the moment
# its control socket appears (its first OpenCL call): give it work for 2 s
# at least, or the test fails, saying so.
set -euo pipefail
vocl_run=$1 ctl=$2 rounds=$3
shift 3
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$tmp"' EXIT
export VOCL_CTL_DIR=$tmp/ctl
mkdir -m 700 "$VOCL_CTL_DIR"

fail() { echo "FAILED: $*"; exit 1; }
. "$(dirname "$0")/common.sh"

timeout 300 "$vocl_run" -n 3 -d 1 --spare 1 -- "$@" >"$tmp/plain" 2>"$tmp/plain.err" ||
    { tail -n 20 "$tmp/plain.err"; fail "the run without moves failed"; }
want=$(kept "$tmp/plain")
[[ "$want" == *verified=yes* ]] || fail "the run without moves did not verify: $want"

for round in $(seq "$rounds"); do
    rm -f "$VOCL_CTL_DIR"/*.sock
    timeout 300 "$vocl_run" -n 3 -d 1 --spare 1 -- "$@" >"$tmp/run" 2>"$tmp/run.err" &
    job=$!
    sock=$(ctl_socket 10)
    [ -n "$sock" ] || fail "round $round: the application never listened"
    app=$(basename "$sock" .sock)
    for hop in "0 2" "2 0"; do
        sleep 0.3
        # shellcheck disable=SC2086
        out=$("$ctl" migrate "$app" $hop 2>&1) || {
            kill -0 "$job" 2>/dev/null ||
                fail "round $round: the application ended before the move $hop: give it more work"
            fail "round $round: migrate $hop: $out (the application: $(tail -n 3 "$tmp/run.err"))"
        }
        echo "round $round: migrate $hop: $out"
    done
    wait "$job" || { tail -n 20 "$tmp/run.err"; fail "round $round: the run failed"; }
    got=$(kept "$tmp/run")
    [ "$got" = "$want" ] || fail "round $round: output differs: '$got', not '$want'"
done
echo "$rounds rounds of two moves each; output as without: $want"
