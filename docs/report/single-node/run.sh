#!/usr/bin/env bash
# run.sh - the figures of docs/report/single-node: vocl-bench through a proxy
# on the application's own node, with its buffers shared (the default) and
# with VOCL_SHM=0 (every byte through MPI and the proxy).  BUILD is a built
# build directory (default build).
#   docs/report/single-node/run.sh [OUTDIR]
set -uo pipefail
build=${BUILD:-build}
out=${1:-docs/report/single-node}
mkdir -p "$out"
uptime >"$out/load.txt"
"$build/tools/bench/vocl-bench" --reps 9 --csv "$out/bench.csv" >"$out/bench.txt" 2>&1 || exit 1
uptime >>"$out/load.txt"
VOCL_SHM=0 "$build/tools/bench/vocl-bench" --sections bw --reps 9 --csv "$out/bench-noshm.csv" \
    >"$out/bench-noshm.txt" 2>&1 || exit 1
uptime >>"$out/load.txt"
