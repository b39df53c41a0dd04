#!/usr/bin/env bash
# cases.sh - a program that moves its own virtual GPUs (cases.c,
# vocl-bench-migrate), under vocl-run with a spare proxy and a control
# directory of its own.
#   cases.sh VOCL_RUN PROGRAM [ARGS...]
# cases.c: three proxies of one device, the last a spare; any other
# program: two, the second a spare.
set -euo pipefail
vocl_run=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export VOCL_CTL_DIR=$tmp/ctl
mkdir -m 700 "$VOCL_CTL_DIR"
n=2
# (cases.c: a kernel of 4 s outlasts the migration's wait for the queues)
[[ "$1" == *migration-cases ]] && n=3 && export VOCL_MIGRATE_WAIT_MS=1500
timeout 300 "$vocl_run" -n "$n" -d 1 --spare 1 -- "$@" | tee "$tmp/out"
[ "${PIPESTATUS[0]}" = 0 ] || exit 1
# cases.c: its kernels' output in the order they ran, across a move.
if [ "$n" = 3 ] && [ "$(grep '^kprintf: ' "$tmp/out" | tr '\n' ' ')" != "kprintf: 1 kprintf: 2 " ]; then
    echo "FAILED: kernel output across a move: $(grep '^kprintf' "$tmp/out" | tr '\n' ' ')"
    exit 1
fi
