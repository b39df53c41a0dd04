#!/usr/bin/env bash
# compare.sh - runs a program natively and under vocl-run, and compares
# their standard output byte for byte.
#
#   compare.sh VOCL_RUN NATIVE_DEVICES "VOCL-RUN OPTIONS" PROGRAM [ARGS...]
#
# NATIVE_DEVICES: how many PoCL devices the native run gets.
set -euo pipefail
vocl_run=$1 ndev=$2 opts=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

devs=$(printf 'pthread %.0s' $(seq "$ndev"))
POCL_DEVICES=${devs% } "$@" >"$tmp/native" 2>"$tmp/native.err" || {
    echo "native run failed ($?); its last output and its stderr:"
    tail -n 15 "$tmp/native"; cat "$tmp/native.err"; exit 1; }
# shellcheck disable=SC2086
timeout 300 "$vocl_run" $opts -- "$@" >"$tmp/vocl" 2>"$tmp/vocl.err" || {
    echo "vocl run failed ($?); its last output and its stderr:"
    tail -n 15 "$tmp/vocl"; cat "$tmp/vocl.err"; exit 1; }
if ! cmp -s "$tmp/native" "$tmp/vocl"; then
    echo "outputs differ (native < > vocl):"
    diff "$tmp/native" "$tmp/vocl" | head -40
    exit 1
fi
lines=$(wc -l <"$tmp/vocl")
echo "identical output ($lines lines): $* with vocl-run $opts"
