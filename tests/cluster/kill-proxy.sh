#!/usr/bin/env bash
# kill-proxy.sh VOCL_RUN PEER_DEATH [--stream] - run by cluster-test.sh on
# vchead of a 3-host vocl-cluster: peer_death (tests/reliability) under
# vocl-run -n 2 -d 1, so its devices are on two other hosts; at its gate
# (--stream: while it streams 4 MiB transfers to it) the proxy of device 1
# (rank 2, on vc3) is killed with SIGKILL.  Passes when the program says
# PASS (its calls on the dead device failed, the other device still
# verified), nothing crashed, and the job ended with the program's status
# (0) within 15 s of the kill: 3.5 s until the application notices (the
# VOCL_PEER_TIMEOUT across hosts), with --stream the program's 2 s after
# MPI_Finalize, then the other proxy's wait for the application's silence
# (3.5 s) and its last second before MPI_Abort.
set -uo pipefail
vocl_run=$1 prog=$2
shift 2
. "$(dirname "$0")/../reliability/common.sh"
tmp=$(mktemp -d)
trap 'kill -9 $(descendants $$) 2>/dev/null; rm -rf "$tmp"' EXIT

"$vocl_run" -n 2 -d 1 -v -- "$prog" "$tmp/gate" 1 "$@" >"$tmp/out" 2>"$tmp/err" &
job=$!
await "$tmp/gate.ready.0" 60 || { cat "$tmp/out" "$tmp/err"; exit 1; }
victim=$(rank_pid 2 voclproxyd)
[ -n "$victim" ] || { echo "kill-proxy: no rank 2 (voclproxyd)" >&2; exit 1; }
[ "${1:-}" = --stream ] && sleep "0.$((RANDOM % 9 + 1))"
kill -9 "$victim"
killed=$(date +%s.%N)
touch "$tmp/gate.go"
await_job 15 || { cat "$tmp/out" "$tmp/err"; exit 1; }
wait "$job"
status=$?
printf 'job exit status %d, %.1f s after the kill\n' "$status" "$(echo "$(date +%s.%N) - $killed" | bc)"
cat "$tmp/out"
grep -v "info:" "$tmp/err" >&2
[ "$status" -eq 0 ] || { echo "kill-proxy: the job did not end with the program's status (0)" >&2; fail=1; }
expect "$tmp/out" '^PASS$' 1
# The application noticed the death itself (over TCP the connection
# breaks: "send failed"; otherwise the heartbeat: "no sign of life").
expect "$tmp/err" 'proxy 1 \(rank 2\).*(no sign of life|no longer available|died)' 1
# No process of the job dumped core or died of a signal but the victim.
if grep -E 'signal (11|6|7|8)|Segmentation|core dumped' "$tmp/err" >&2; then fail=1; fi
exit $fail
