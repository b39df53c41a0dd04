#!/usr/bin/env bash
# run.sh - the figures of docs/report/cluster: vocl-bench --cluster at 10
# and 25 Gbit/s and unshaped, then the cluster suite with its times.
# Needs root (network namespaces); BUILD is a configured build directory.
#   BUILD=build-cluster docs/report/cluster/run.sh [OUTDIR]
set -uo pipefail
build=${BUILD:-build}
out=${1:-docs/report/cluster}
mkdir -p "$out"
ninja -C "$build" -j2 || exit 1
uptime >"$out/load.txt"
for rate in 10gbit 25gbit none; do
    "$build/tools/bench/vocl-bench" --cluster --rate "$rate" --rounds 3 --reps 5 \
        --csv "$out/bench-$rate.csv" >"$out/bench-$rate.txt" || exit 1
    uptime >>"$out/load.txt"
done
meson test -C "$build" --no-rebuild --setup full --suite cluster >"$out/suite.txt" 2>&1
