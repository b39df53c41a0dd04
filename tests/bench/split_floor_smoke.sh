#!/bin/bash
# split-floor, briefly (docs/report/split-floor): each of its four ways runs
# 100 rounds of 2 devices, checks every round's results (it exits non-zero
# on a wrong one) and prints its CSV line.
#   split_floor_smoke.sh SPLIT_FLOOR VOCL_RUN
set -euo pipefail
sf=$1 vocl_run=$2
check() { # WAY OUTPUT
    [[ $2 =~ ^$1,2,100,[0-9.]+,[0-9.]+$ ]] || { echo "FAIL $1: '$2'" >&2; exit 1; }
    echo "ok $1: $2"
}
check native "$(POCL_DEVICES="pthread pthread" "$sf" --native --rounds 100)"
check fork "$(POCL_DEVICES=pthread "$sf" --fork 2 --rounds 100)"
check split "$(POCL_DEVICES=pthread timeout 120 mpiexec -n 3 "$sf" --yield --rounds 100)"
check native "$(timeout 120 "$vocl_run" -n 2 -d 1 -- "$sf" --native --rounds 100)"
# A bad argument is refused with a message, not run.
if "$sf" --fork 0 2>/dev/null; then
    echo "FAIL: --fork 0 was accepted" >&2
    exit 1
fi
