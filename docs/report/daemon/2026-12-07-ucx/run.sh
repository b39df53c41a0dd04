#!/usr/bin/env bash
# run.sh - issue 60's figures for daemon mode over UCX, side by side, into
# this folder: connect times (1, 4, 16 daemons; 32 applications started
# together), daemon mode against job mode in the same run (4-byte read,
# launches, 16 and 64 MiB), the same over the cluster harness's shaped
# link against raw UCX / raw MPI, a device-to-device copy between two
# daemons (relayed by the application) against job mode's proxy-to-proxy
# move, and another user's bandwidth.  The
# 10,000-connection soak and the 310 s idle run separately (README).
#   docs/report/daemon/2026-12-07-ucx/run.sh BUILD-DIR [ROUNDS]
set -euo pipefail
build=$(cd "$1" && pwd)
rounds=${2:-3}
out=$(cd "$(dirname "$0")" && pwd)
bench=$build/tools/bench/vocl-bench
export UCX_NET_DEVICES=lo POCL_DEVICES=pthread

# 1. The first OpenCL call, connecting to N daemons (vocl-bench --daemons N).
for n in 1 4 16; do
    "$bench" --daemons "$n" --quick >"$out/daemons$n-quick.txt" 2>&1 || true
done

# 2. 32 applications started in the same instant against one daemon (with
#    workers): each one's wall time for clinfo -l, which connects, lists
#    and leaves.
tmp=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$tmp"' EXIT
export HOME=$tmp/home
mkdir -p "$HOME"
POCL_DEVICES=pthread "$build/proxyd/voclproxyd" --listen --address 127.0.0.1 --port 0 \
    --port-file "$tmp/port" >"$tmp/daemon.log" 2>&1 & daemon=$!
for _ in $(seq 200); do [ -s "$tmp/port" ] && break; sleep 0.05; done
for i in $(seq 32); do
    (
        while [ ! -e "$tmp/go" ]; do sleep 0.005; done
        s=$(date +%s%N)
        VOCL_PROXIES=$tmp/port LD_PRELOAD=$build/libvocl/libvocl.so clinfo -l >"$tmp/c$i" 2>&1
        echo $(( ($(date +%s%N) - s) / 1000000 )) >"$tmp/t$i"
    ) &
done
sleep 1
touch "$tmp/go"
for _ in $(seq 600); do [ "$(ls "$tmp"/t* 2>/dev/null | wc -l)" -eq 32 ] && break; sleep 0.1; done
ok=$(grep -l 'Device #0' "$tmp"/c* | wc -l)
sort -n "$tmp"/t* | awk -v ok="$ok" '{a[NR]=$1} END {printf "32 clinfo -l at once (one daemon, workers): %d listed a device; median %d ms, worst %d ms\n", ok, a[int((NR+1)/2)], a[NR]}' \
    | tee "$out/burst32.txt"
kill "$daemon" 2>/dev/null || true

# 3. Daemon mode and job mode, alternating rounds, on this node.
for ((r = 1; r <= rounds; r++)); do
    "$bench" --sections bw,lat,launch --sizes 16M,64M >"$out/job-$r.txt" 2>&1 || true
    "$bench" --daemons 1 --sections bw,lat,launch --sizes 16M,64M >"$out/daemon-$r.txt" 2>&1 || true
done

# 4. Over the cluster harness's link (10 Gbit/s): job mode against raw MPI,
#    daemon mode against raw UCX.
"$bench" --cluster --rounds "$rounds" >"$out/cluster-job.txt" 2>&1 || true
"$bench" --cluster --daemons 1 --rounds "$rounds" >"$out/cluster-daemon.txt" 2>&1 || true
# 5. A 16 MiB device-to-device copy (peer-copy) on two PoCL devices:
#    natively, through two proxies of one job (proxy to proxy), and
#    through two daemons (relayed by the application: libvocl/relay.c).
pc=("$build/tools/bench/peer-copy" --sizes 4K,64K,1M,16M --reps 9)
for name in a b; do
    POCL_DEVICES=pthread "$build/proxyd/voclproxyd" --listen --name "$name" --address 127.0.0.1 \
        --port 0 --port-file "$tmp/$name.port" >"$tmp/$name.log" 2>&1 &
done
for _ in $(seq 200); do [ -s "$tmp/a.port" ] && [ -s "$tmp/b.port" ] && break; sleep 0.05; done
for ((r = 1; r <= rounds; r++)); do
    echo "## round $r, native"
    POCL_DEVICES="pthread pthread" timeout 120 "${pc[@]}"
    echo "## round $r, job mode: vocl-run -n 2 -d 1 (proxy to proxy)"
    HYDRA_LAUNCHER=fork timeout 300 "$build/tools/vocl-run" -n 2 -d 1 -- "${pc[@]}"
    echo "## round $r, daemon mode: daemons a and b (relayed by the application)"
    VOCL_PROXIES=$tmp/a.port,$tmp/b.port LD_PRELOAD=$build/libvocl/libvocl.so timeout 300 "${pc[@]}"
done >"$out/relay.txt" 2>&1
echo "done: $out"
