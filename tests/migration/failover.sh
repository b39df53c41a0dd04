#!/usr/bin/env bash
# failover.sh - a proxy killed (kill -9) while the application runs: with
# --failover its session goes on on the spare and the output is that of a
# run without the kill, less its timings; without, the job ends with a
# clear error.
#
#   failover.sh VOCL_RUN DELAY PROGRAM [ARGS...]
#
# The program runs under `vocl-run -n 3 -d 1 --spare 1`: its two devices
# are proxies 0 and 1 (ranks 1 and 2), the spare is rank 3.  Rank 2 is
# killed DELAY seconds after the program's first OpenCL call (its control
# socket appears, named for its pid), while the program is stopped
# (SIGSTOP, then SIGCONT): so the kill lands amid its work however loaded
# the machine is, or the test fails, saying so (give it work for longer).
set -uo pipefail
vocl_run=$1 delay=$2
shift 2
. "$(dirname "$0")/../reliability/common.sh"
. "$(dirname "$0")/common.sh"
scratch

plain_run -n 3 -d 1 --spare 1 -- "$@"

# run [VOCL-RUN OPTIONS]: the program, with rank 2 killed mid-run; its
# status in $rc.
run() {
    rm -f "$VOCL_CTL_DIR"/*.sock
    "$vocl_run" -n 3 -d 1 --spare 1 "$@" -- "${prog[@]}" >"$tmp/out" 2>"$tmp/err" &
    job=$!
    local victim sock app
    sock=$(ctl_socket 30)
    [ -n "$sock" ] || fail "the application never made its first OpenCL call"
    app=$(basename "$sock" .sock)
    sleep "$delay"
    # (Stopped first: finding the proxy may take a while on a busy machine.)
    kill -STOP "$app" 2>/dev/null && ! grep -q RESULT "$tmp/out" ||
        fail "the application's work was over before the kill: give it more work"
    victim=$(rank_pid 2 voclproxyd)
    [ -n "$victim" ] || fail "no proxy of rank 2"
    kill -9 "$victim"
    kill -CONT "$app"
    await_job 90 || fail "the job did not end"
    wait "$job"
    rc=$?
}
prog=("$@")

"$vocl_run" -n 2 --failover -- "${prog[@]}" >"$tmp/out" 2>"$tmp/err" &&
    fail "--failover without a spare proxy ran"
grep -q 'needs a spare proxy' "$tmp/err" || fail "--failover without a spare: no clear error"

run --failover
[ "$rc" = 0 ] || fail "with --failover the job failed (status $rc)"
grep -q 'its session goes on on spare proxy 2 (rank 3)' "$tmp/err" ||
    fail "the application ended before the kill: give it more work"
got=$(kept "$tmp/out")
[ "$got" = "$want" ] || fail "output differs: '$got', not '$want'"
entries=$(grep -o 'sent the [0-9]* entries' "$tmp/err" | grep -o '[0-9]*')
# FAILOVER_ENTRIES ('<N' or '>N'): how long the log sent to the spare must
# be (checkpoints keep it short; without them it holds the whole run).
case "${FAILOVER_ENTRIES:-}" in
    '<'*) [ "$entries" -lt "${FAILOVER_ENTRIES#<}" ] ||
        fail "the spare was sent $entries entries, not fewer than ${FAILOVER_ENTRIES#<}" ;;
    '>'*) [ "$entries" -gt "${FAILOVER_ENTRIES#>}" ] ||
        fail "the spare was sent $entries entries, not more than ${FAILOVER_ENTRIES#>}" ;;
esac
echo "with --failover: the spare was sent $entries entries of the log; output as without: $want"

run
[ "$rc" != 0 ] || fail "without --failover the job succeeded after its proxy died"
grep -q 'its devices are no longer available' "$tmp/err" ||
    fail "without --failover: no clear error"
echo "without: status $rc, '$(grep -m1 -o 'proxy 1 (rank 2): .*' "$tmp/err")'"
