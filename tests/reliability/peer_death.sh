#!/usr/bin/env bash
# peer_death.sh - kill -9 one rank of a running VOCL job and check what the
# others make of it (the reliability suite).
#   peer_death.sh VOCL_RUN PROGRAM proxy
#     kills the proxy of the program's last device (2 proxies x 1 device):
#     the program's next call on it must fail within 5 s with a message on
#     stderr, and its other device must keep working (peer_death.c).
#   peer_death.sh VOCL_RUN PROGRAM client
#     two application ranks share the proxies; one is killed: the proxies
#     must release everything it held and keep serving the other.
set -uo pipefail
vocl_run=$1 prog=$2 what=$3
tmp=$(mktemp -d)
trap 'kill -9 $(descendants $$) 2>/dev/null; rm -rf "$tmp"' EXIT

descendants() {
    local c
    for c in $(pgrep -P "$1"); do echo "$c"; descendants "$c"; done
}

# The process of the job with this MPI rank and name.
rank_pid() {
    local p
    for p in $(descendants "$job"); do
        [ "$(cat /proc/"$p"/comm 2>/dev/null)" = "$2" ] || continue
        tr '\0' '\n' < /proc/"$p"/environ 2>/dev/null | grep -qx "PMI_RANK=$1" && { echo "$p"; return; }
    done
}

# Wait for a file, at most $2 seconds.
await() {
    local i
    for ((i = 0; i < $2 * 10; i++)); do [ -e "$1" ] && return 0; sleep 0.1; done
    echo "peer_death: no $1 after $2 s" >&2
    return 1
}

# Runs the program under vocl-run (options OPTS), waits until application
# rank GATE is at its gate, kills rank VICTIM (a process named NAME) and
# opens the gate.
kill_at_gate() { # GATE VICTIM NAME DEAD_DEVICE OPTS...
    local gate=$1 victim_rank=$2 name=$3 dead=$4 victim
    shift 4
    "$vocl_run" "$@" -v -- "$prog" "$tmp/gate" "$dead" > "$tmp/out" 2> "$tmp/err" &
    job=$!
    await "$tmp/gate.ready.$gate" 60 || { cat "$tmp/out" "$tmp/err"; exit 1; }
    victim=$(rank_pid "$victim_rank" "$name")
    [ -n "$victim" ] || { echo "peer_death: no rank $victim_rank ($name)" >&2; exit 1; }
    kill -9 "$victim"
    touch "$tmp/gate.go"
}

case "$what" in
# Rank 0 runs the program; ranks 1 and 2 are the proxies of devices 0 and 1.
proxy) kill_at_gate 0 2 voclproxyd 1 -n 2 -d 1 ;;
# Ranks 0 and 1 run the program; rank 1 is killed at its gate, holding its
# objects; rank 0 goes on, on every device.
client) kill_at_gate 1 1 peer_death -1 -a 2 -n 2 -d 1 ;;
*) echo "usage: peer_death.sh VOCL_RUN PROGRAM proxy|client" >&2; exit 2 ;;
esac

# The job ends by itself: no wait outlives a dead peer.
for ((i = 0; i < 300; i++)); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$job" 2>/dev/null; then
    echo "peer_death: the job still runs 30 s after the kill" >&2
    cat "$tmp/out" "$tmp/err"
    exit 1
fi
wait "$job"
echo "job exit status: $? (MPI_Abort ends a job that lost a rank)"
cat "$tmp/out"
grep -v "info:" "$tmp/err" >&2

# Each check prints what it looked for when it fails.
fail=0
expect() { # FILE PATTERN COUNT: at least COUNT lines of FILE match
    local n
    n=$(grep -c -E -- "$2" "$1")
    [ "$n" -ge "$3" ] || { echo "peer_death: expected $3 lines matching '$2', found $n" >&2; fail=1; }
}
expect "$tmp/out" '^PASS$' 1
case "$what" in
proxy)
    expect "$tmp/err" 'proxy 1 \(rank 2\): no sign of life .* it died' 1 ;;
client)
    expect "$tmp/err" 'voclproxyd\[[23]\]: warning: client 1: session closed after it died' 2
    # Everything the dead client held is released: with both sessions over,
    # each proxy holds nothing.
    expect "$tmp/err" 'session of rank 1: ended; released [1-9][0-9]* objects \([1-9][0-9]* bytes' 2
    expect "$tmp/err" 'session of rank 0: ended; .* the proxy holds 0 objects \(0 bytes\)' 2 ;;
esac
exit $fail
