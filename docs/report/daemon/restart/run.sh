#!/usr/bin/env bash
# run.sh - the pause an application sees across its daemon's restart
# (issue 63, part 2), against what its failover log holds: each program
# runs through one daemon with VOCL_FAILOVER=spare-proxy, is stopped
# (SIGSTOP) AFTER seconds (default 1) after it says its work began, the daemon is killed (-9) and
# started again on its port at once, the program goes on (SIGCONT), and
# libvocl's line (VOCL_VERBOSE=2) says how long after the failure its new
# session had the whole log.  ROUNDS rounds (default 3).
#   docs/report/daemon/restart/run.sh BUILD-DIR [ROUNDS [AFTER]] > docs/report/daemon/restart/pause.txt
set -euo pipefail
build=$(cd "$1" && pwd)
rounds=${2:-3} after=${3:-1}
tmp=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
export POCL_DEVICES=pthread UCX_NET_DEVICES=lo VOCL_TOKEN_FILE=$tmp/token
port=$((20000 + RANDOM % 20000))
daemon() {
    "$build/proxyd/voclproxyd" --listen --address 127.0.0.1 --port "$port" >>"$tmp/daemon.log" 2>&1 &
    dpid=$!
    for _ in $(seq 100); do grep -q "listening on" "$tmp/daemon.log" && return; sleep 0.05; done
}
echo "| program | log: requests | log: bytes | pause (failure to replayed) |"
echo "|---|---:|---:|---:|"
for ((r = 1; r <= rounds; r++)); do
    for prog in "gemm -n 512 -r 40:rows" "gemm -n 2048 -r 3:rows" "nbody -n 2048 -s 300:bodies" \
                "smithwaterman -n 2048 -p 32:pairs"; do
        args=${prog%:*} sign=${prog##*:}
        : >"$tmp/daemon.log"
        daemon
        VOCL_FAILOVER=spare-proxy VOCL_VERBOSE=2 VOCL_PROXIES=127.0.0.1:$port \
            LD_PRELOAD=$build/libvocl/libvocl.so timeout 300 "$build/examples/"$args \
            >"$tmp/app" 2>&1 &
        app=$!
        for _ in $(seq 3000); do grep -q "$sign \[" "$tmp/app" && break; sleep 0.01; done
        sleep "$after"
        pkill -STOP -xf "$build/examples/$args" || { echo "$args: over before it was stopped" >&2; continue; }
        kill -9 "$dpid"
        : >"$tmp/daemon.log"
        daemon
        pkill -CONT -xf "$build/examples/$args"
        wait "$app" || { echo "$args: failed: $(tail -3 "$tmp/app")" >&2; continue; }
        grep -q verified=yes "$tmp/app" || echo "$args: did not verify" >&2
        sed -n "s/.*has the \([0-9]*\) requests of the log (\([0-9]*\) bytes), \([0-9.]*\) s after.*/| $args | \1 | \2 | \3 s |/p" "$tmp/app"
        kill "$dpid"; wait "$dpid" 2>/dev/null || true
    done
done
