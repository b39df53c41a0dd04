#!/bin/bash
# bw.sh - issue 22's one-node bandwidth on a GPU node: vocl-bench's write
# and read bandwidth, native against VOCL, with the proxy staging in each
# context's pinned pool (VOCL_DRIVER_STAGING=1) and in its own locked memory
# (=0) taking turns, so that both see the same node.
#
#   bw.sh OUTDIR            (from the source tree, with a build in build/)
#
# Environment: ROUNDS (2), SIZES (1M,16M,64M), GPU_ICD and LIBS as for
# run.sh.  Writes OUTDIR/bw-R-stagingS.csv.
set -u -o pipefail
out=${1:?usage: bw.sh OUTDIR}
mkdir -p "$out"
build=${BUILD:-build}
. "$(dirname "$0")/env.sh"
for r in $(seq 1 "${ROUNDS:-2}"); do
    for s in 1 0; do
        echo; echo "== round $r: VOCL_DRIVER_STAGING=$s"
        VOCL_DRIVER_STAGING=$s timeout 150 "$build/tools/bench/vocl-bench" --sections bw \
            --sizes "${SIZES:-1M,16M,64M}" --reps 5 --no-pipeline-run --timeout 120 \
            --csv "$out/bw-$r-staging$s.csv" | grep -E 'write|read|FAIL' || exit 1
    done
done
