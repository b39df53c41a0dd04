#!/usr/bin/env bash
# sched_batch.sh - a proxy of several CPU devices (PoCL), or of one on a
# node with more ranks than cores, puts its driver's threads under
# SCHED_BATCH, and only them: while the application waits, the proxies'
# threads are looked at (ps: class B or TS).  Every job runs on 2 cores
# (taskset), so that the node's size is the test's:
#   1. two proxies of 2 devices: each has at least one thread in class B,
#      and its main thread (the serving one) in TS;
#   2. the same with VOCL_SCHED_BATCH=0: none in class B;
#   3. one proxy of 1 device (2 ranks on 2 cores): none in class B;
#   4. two proxies of 1 device (3 ranks on 2 cores): class B again.
#   sched_batch.sh VOCL_RUN SCHED_BATCH_PROGRAM
# (Each job stays until its proxies have been looked at, 60 s at most.)
set -euo pipefail
vocl_run=$1 prog=$2
. "$(dirname "$0")/../reliability/common.sh" # descendants
tmp=$(mktemp -d)
job=
runs=0
trap '[ -n "$job" ] && { touch "$tmp/stop$runs"; kill "$job" 2>/dev/null; }; rm -rf "$tmp"' EXIT

# The first two of the cores this test may use.
cores=$(python3 -c 'import os; print(",".join(map(str, sorted(os.sched_getaffinity(0))[:2])))')
[[ $cores == *,* ]] || { echo "FAIL: this test needs 2 cores, $(nproc) here"; exit 1; }

run() { # LABEL WANT_BATCH PROXIES DEVICES_PER_PROXY ENV...
    local label=$1 want=$2 nproxies=$3 devices=$4
    shift 4
    runs=$((runs + 1))
    local out=$tmp/out$runs stop=$tmp/stop$runs # (each its own: a job's last words come late)
    env "$@" taskset -c "$cores" timeout 120 "$vocl_run" -n "$nproxies" -d "$devices" -- \
        "$prog" 60 "$stop" >"$out" 2>&1 &
    job=$!
    for _ in $(seq 100); do
        grep -q '^devices' "$out" && break
        sleep 0.1
    done
    grep -q '^devices' "$out" || { cat "$out"; echo "FAIL: $label: no devices"; exit 1; }
    local proxies=0 pid
    for pid in $(descendants "$job"); do
        [ "$(ps -o comm= -p "$pid")" = voclproxyd ] || continue
        proxies=$((proxies + 1))
        ps -L -o tid=,cls=,comm= -p "$pid" >"$tmp/threads"
        local main batch
        main=$(awk -v p="$pid" '$1 == p { print $2 }' "$tmp/threads")
        batch=$(awk '$2 == "B"' "$tmp/threads" | wc -l)
        echo "proxy $pid: main thread $main, $batch of $(wc -l <"$tmp/threads") threads in class B"
        [ "$main" = TS ] || { echo "FAIL: $label: the serving thread is in class $main"; exit 1; }
        if [ "$want" = yes ] && [ "$batch" -lt 1 ]; then
            echo "FAIL: $label: no thread in class B"
            exit 1
        fi
        if [ "$want" = no ] && [ "$batch" -ne 0 ]; then
            echo "FAIL: $label: $batch threads in class B"
            exit 1
        fi
    done
    touch "$stop"
    [ "$proxies" -eq "$nproxies" ] ||
        { echo "FAIL: $label: $proxies proxies found, not $nproxies"; exit 1; }
    wait "$job" || { cat "$out"; echo "FAIL: $label: the job failed"; exit 1; }
    job=
    echo "ok: $label"
}

run "2 devices a proxy: the driver's threads in SCHED_BATCH (the default)" yes 2 2
run "2 devices a proxy, VOCL_SCHED_BATCH=0" no 2 2 VOCL_SCHED_BATCH=0
run "1 device, a core for each rank: left alone" no 1 1
run "1 device a proxy, more ranks than cores: SCHED_BATCH" yes 2 1
