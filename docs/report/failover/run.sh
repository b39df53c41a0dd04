#!/usr/bin/env bash
# run.sh - what failover costs (issue 36): each example application through
# two proxies and a spare, in alternating rounds: without failover (large
# buffers shared with the proxies, as by default), without failover and
# without sharing (VOCL_SHM=0: failover shares none), with --failover
# (checkpoints as by default), and with --failover and a proxy killed 1 s
# after the application's first OpenCL call.  Prints one line per run
# (runs.txt) and then the table of medians (tabulate.py).
#   ROUNDS=5 BUILD=build docs/report/failover/run.sh
# CONFIGS (default "plain shm0 failover killed") chooses the ways, run one
# right after the other for each application, in reverse order every other
# round; two more: native (no VOCL, POCL_DEVICES of two devices) and
# nospare (two proxies, no spare: neither migration nor failover
# available), the baseline of what having them costs unused
# (tools/bench/gpu-node.sh, part 4).  APPS (";"-separated) replaces the
# applications and their arguments.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${BUILD:-build}
rounds=${ROUNDS:-5}
export HYDRA_LAUNCHER=fork HWLOC_COMPONENTS=-opencl UCX_TLS=posix,sysv,self
. "$here/../../../tests/reliability/common.sh"
apps=("gemm -n 256 -r 300" "nbody -n 2048 -s 300" "transpose -n 1024 -r 300"
      "smithwaterman -n 2048 -p 128")
[ -n "${APPS:-}" ] && IFS=';' read -ra apps <<<"$APPS"
read -ra configs <<<"${CONFIGS:-plain shm0 failover killed}"
export VOCL_CTL_DIR=$(mktemp -d)
trap 'rm -rf "$VOCL_CTL_DIR"' EXIT
out=$VOCL_CTL_DIR/run.out err=$VOCL_CTL_DIR/run.err
run() { # CONFIG APP...: one run, one line
    local config=$1 opts=(-n 3 -d 1 --spare 1) env=() kill=0
    shift
    case "$config" in
        native) opts=() env=(POCL_DEVICES="pthread pthread") ;;
        nospare) opts=(-n 2 -d 1) ;;
        shm0) env=(VOCL_SHM=0) ;;
        failover) opts+=(--failover) ;;
        killed) opts+=(--failover) kill=1 ;;
    esac
    rm -f "$VOCL_CTL_DIR"/*.sock
    local t0=$(date +%s.%N)
    if [ "$config" = native ]; then
        env "${env[@]}" "$build/examples/$1" "${@:2}" >"$out" 2>"$err" &
    else
        env "${env[@]}" "$build/tools/vocl-run" "${opts[@]}" -- \
            "$build/examples/$1" "${@:2}" >"$out" 2>"$err" &
    fi
    job=$!
    if [ "$kill" = 1 ]; then
        for _ in $(seq 3000); do
            [ -n "$(find "$VOCL_CTL_DIR" -name '*.sock')" ] && break
            sleep 0.01
        done
        sleep 1
        kill -9 "$(rank_pid 2 voclproxyd)"
    fi
    wait "$job"
    local rc=$? t1=$(date +%s.%N)
    local secs=$(grep -o 'seconds=[0-9.]*' "$out" | cut -d= -f2)
    local ok=$(grep -o 'verified=[a-z]*' "$out" | cut -d= -f2)
    local sent=$(grep -o 'sent the [0-9]* entries' "$err" | grep -o '[0-9]*')
    echo "app=$1 config=$config rc=$rc seconds=${secs:-none} wall=$(echo "$t1 - $t0" | bc) verified=${ok:-none} replayed=${sent:--} round=$r"
}
for r in $(seq "$rounds"); do
    for a in "${apps[@]}"; do
        order=("${configs[@]}")
        if [ $((r % 2)) = 0 ]; then
            order=()
            for ((i = ${#configs[@]} - 1; i >= 0; i--)); do order+=("${configs[i]}"); done
        fi
        for config in "${order[@]}"; do
            # shellcheck disable=SC2086
            run "$config" $a
        done
    done
done
