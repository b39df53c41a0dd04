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
#   peer_death.sh VOCL_RUN PROGRAM killed
#     the program dies by SIGKILL after its sessions ended (after
#     MPI_Finalize): the job ends all the same, VOCL_RUN_GRACE (here 2 s)
#     after it, with the program's status (137).
#   peer_death.sh VOCL_RUN PROGRAM stream
#     as proxy, but the proxy dies while the program streams 4 MiB writes
#     and reads to it (after a random 0.1-0.9 s): no crash, the program
#     (here an MPI program, which works on for 2 s after MPI_Finalize)
#     ends with its own status (0), and the job within 5 s of it.
#   peer_death.sh VOCL_RUN PROGRAM replies
#     as stream, with 60 KiB transfers: reads that come inside their
#     replies, several of MPI's fragments each.
#   peer_death.sh VOCL_RUN PROGRAM stopped
#     the proxy of the last device is stopped (SIGSTOP), not killed: a
#     proxy of this node whose process lives is never taken for dead, but
#     after 10 timeouts of silence (VOCL_PEER_TIMEOUT=0.5: 5 s) the
#     application names it in a warning; continued (SIGCONT), it answers
#     again and every device verifies.
set -uo pipefail
vocl_run=$1 prog=$2 what=$3
. "$(dirname "$0")/common.sh"
tmp=$(mktemp -d)
trap 'kill -9 $(descendants $$) 2>/dev/null; rm -rf "$tmp"' EXIT

# Runs the program under vocl-run (options OPTS), waits until application
# rank GATE is at its gate, sends SIGNAL to rank VICTIM (a process named
# NAME; its pid left in $victim) and opens the gate.
signal_at_gate() { # SIGNAL GATE VICTIM NAME DEAD_DEVICE OPTS... [-- PROGRAM-OPTION]
    local sig=$1 gate=$2 victim_rank=$3 name=$4 dead=$5 opts=()
    shift 5
    while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    "$vocl_run" "${opts[@]}" -v -- "$prog" "$tmp/gate" "$dead" "$@" > "$tmp/out" 2> "$tmp/err" &
    job=$!
    await "$tmp/gate.ready.$gate" 60 || { cat "$tmp/out" "$tmp/err"; exit 1; }
    victim=$(rank_pid "$victim_rank" "$name")
    [ -n "$victim" ] || { echo "peer_death: no rank $victim_rank ($name)" >&2; exit 1; }
    [ "$what" = stream ] || [ "$what" = replies ] && sleep "0.$((RANDOM % 9 + 1))"
    kill -"$sig" "$victim"
    touch "$tmp/gate.go"
}

case "$what" in
# Rank 0 runs the program; ranks 1 and 2 are the proxies of devices 0 and 1.
proxy) signal_at_gate KILL 0 2 voclproxyd 1 -n 2 -d 1 ;;
# Ranks 0 and 1 run the program; rank 1 is killed at its gate, holding its
# objects; rank 0 goes on, on every device.
client) signal_at_gate KILL 1 1 peer_death -1 -a 2 -n 2 -d 1 ;;
stream) signal_at_gate KILL 0 2 voclproxyd 1 -n 2 -d 1 -- --stream ;;
replies) signal_at_gate KILL 0 2 voclproxyd 1 -n 2 -d 1 -- --replies ;;
stopped)
    VOCL_PEER_TIMEOUT=0.5 signal_at_gate STOP 0 2 voclproxyd -1 -n 2 -d 1
    for ((i = 0; i < 300; i++)); do
        grep -q 'rank 2 of this node .* has answered no ping' "$tmp/err" && break
        sleep 0.1
    done
    kill -CONT "$victim" ;;
killed)
    VOCL_RUN_GRACE=2 "$vocl_run" -n 1 -d 1 -v -- "$prog" "$tmp/gate" -1 --killed-after-end \
        > "$tmp/out" 2> "$tmp/err" &
    job=$! ;;
*) echo "usage: peer_death.sh VOCL_RUN PROGRAM proxy|client|stream|replies|stopped|killed" >&2; exit 2 ;;
esac

# The job ends by itself: no wait outlives a dead peer.  Stream: within 5 s
# of the program's last line.
await_job 30 || { cat "$tmp/out" "$tmp/err"; exit 1; }
wait "$job"
status=$?
if [ "$what" = stream ] || [ "$what" = replies ]; then
    late=$(( $(date +%s) - $(stat -c %Y "$tmp/out") ))
    echo "job exit status: $status; the job ended ${late} s after the program's last line"
    [ "$status" -eq 0 ] || { echo "peer_death: the job did not end with the program's status (0)" >&2; fail=1; }
    [ "$late" -le 5 ] || { echo "peer_death: the job outlived the program by ${late} s" >&2; fail=1; }
elif [ "$what" = killed ]; then
    echo "job exit status: $status"
    [ "$status" -eq 137 ] || { echo "peer_death: the job did not end with the program's status (137)" >&2; fail=1; }
    expect "$tmp/err" 'vocl-run: the application ended 2 s ago and the job did not' 1
else
    echo "job exit status: $status"
fi
cat "$tmp/out"
grep -v "info:" "$tmp/err" >&2

expect "$tmp/out" '^PASS$' 1
case "$what" in
proxy | stream | replies)
    # Over TCP, MPI may report the broken connection before liveness does.
    expect "$tmp/err" 'proxy 1 \(rank 2\): (its process is gone: it died|send failed)' 1 ;;
client)
    expect "$tmp/err" 'voclproxyd\[[23]\]: warning: client 1: session closed after it died' 2
    # Everything the dead client held is released: with both sessions over,
    # each proxy holds nothing.
    expect "$tmp/err" 'session of rank 1: ended; released [1-9][0-9]* objects \([1-9][0-9]* bytes' 2
    expect "$tmp/err" 'session of rank 0: ended; .* the proxy holds 0 objects \(0 bytes\)' 2 ;;
stopped)
    expect "$tmp/err" 'libvocl: warning: rank 2 of this node \(pid [0-9]+\) has answered no ping for [0-9]+ s though its process lives' 1
    expect "$tmp/err" 'libvocl: warning: rank 2 of this node answers again' 1
    expect "$tmp/out" '^other devices: [0-9]+ rounds, verified$' 1
    [ "$(grep -c 'died' "$tmp/err")" -eq 0 ] || { echo "peer_death: a stopped proxy was taken for dead" >&2; fail=1; } ;;
esac
exit $fail
