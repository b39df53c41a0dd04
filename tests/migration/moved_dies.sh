#!/usr/bin/env bash
# moved_dies.sh - failover after a migration: the application's proxy 0
# moved to spare proxy 2 while it runs, then proxy 2 killed (kill -9); its
# session goes on on the other spare, 3, and the output is that of a run
# with neither, less its timings.
#
#   moved_dies.sh VOCL_RUN VOCL_CTL PROGRAM [ARGS...]
#
# The program runs under `vocl-run -n 4 -d 1 --spare 2 --failover`: its
# devices are proxies 0 and 1 (ranks 1 and 2), the spares 2 and 3 (ranks 3
# and 4).  The move comes 0.3 s after its first OpenCL call, the kill 0.7 s
# later: give it work for longer, or the test fails, saying so.
set -uo pipefail
vocl_run=$1 ctl=$2
shift 2
. "$(dirname "$0")/../reliability/common.sh"
. "$(dirname "$0")/common.sh"
scratch

plain_run -n 4 -d 1 --spare 2 -- "$@"

"$vocl_run" -n 4 -d 1 --spare 2 --failover -- "$@" >"$tmp/out" 2>"$tmp/err" &
job=$!
sock=$(ctl_socket 30)
[ -n "$sock" ] || fail "the application never made its first OpenCL call"
sleep 0.3
ans=$("$ctl" migrate "$(basename "$sock" .sock)" 0 2 2>&1) || fail "the move failed: $ans"
[[ "$ans" == ok\ objects=* ]] || fail "the move did not say ok: $ans"
sleep 0.7
kill -0 "$job" 2>/dev/null || fail "the application ended before the kill: give it more work"
victim=$(rank_pid 3 voclproxyd)
[ -n "$victim" ] || fail "no proxy of rank 3"
kill -9 "$victim"
await_job 90 || fail "the job did not end"
wait "$job" || fail "the job failed (status $?)"
grep -q 'proxy 2 (rank 3): .*: its session goes on on spare proxy 3 (rank 4)' "$tmp/err" ||
    fail "the moved session did not go on on the other spare"
got=$(kept "$tmp/out")
[ "$got" = "$want" ] || fail "output differs: '$got', not '$want'"
echo "moved to proxy 2 ($ans), which was killed; went on on proxy 3; output as without: $want"
