#!/usr/bin/env bash
# batch.sh - libvocl's batches of asynchronous requests, counted on the
# proxy (VOCL_RECORD_REQUESTS), through vocl-run -n 1 -d 1:
#   1. by default (at most 64 a batch): 100 launches and a clFinish in 2
#      messages; a launch with nothing after it waits in its batch, and the
#      flusher sends it (VOCL_BATCH_US=1000000: after a second);
#   2. VOCL_BATCH=10: in 11 messages (10 full batches, then the clFinish);
#   3. VOCL_BATCH=0 (no batching): in 101 messages, each request at once;
#   and in each, clFinish of an idle queue sends nothing (batch.c, 3).
#   batch.sh VOCL_RUN BATCH_PROGRAM
set -euo pipefail
vocl_run=$1 prog=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() { # LABEL MESSAGES HELD ENV...
    local label=$1 messages=$2 held=$3
    shift 3
    rm -rf "$tmp/rec" && mkdir "$tmp/rec"
    if ! env VOCL_RECORD_REQUESTS="$tmp/rec" VOCL_BATCH_US=1000000 "$@" \
        timeout 120 "$vocl_run" -n 1 -d 1 -- "$prog" "$tmp/rec" "$messages" "$held" \
        >"$tmp/out" 2>&1; then
        cat "$tmp/out"
        echo "FAIL: $label"
        exit 1
    fi
    grep '^batch:' "$tmp/out"
    echo "ok: $label"
}

run "batches of 64 (the default)" 2 1
run "batches of 10" 11 1 VOCL_BATCH=10
run "no batches" 101 0 VOCL_BATCH=0
