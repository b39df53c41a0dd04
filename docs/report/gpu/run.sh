#!/bin/bash
# run.sh - issue 22's round trip and launch figures on one GPU node: the
# application and its proxy on the node, over MPI's shared memory, against
# native OpenCL and raw MPI between the same two ranks.
#
#   run.sh OUTDIR            (from the source tree, with a build in build/)
#
# Environment: ROUNDS (3), POLLS ("0 20": VOCL_POLL_US values taking turns;
# "default" runs with it unset), GPU_ICD (a vendor library, such as
# libnvidia-opencl.so.1, made the only ICD of the runs), LIBS (a folder of
# libraries and bin/ of programs, such as Debian's MPICH, UCX and ocl-icd,
# for a machine without them).  Writes OUTDIR/mpi-R.csv, bench-R-pollP.csv
# and trace-pollP.txt; tabulate.py prints the table.
set -u -o pipefail
out=${1:?usage: run.sh OUTDIR}
mkdir -p "$out"
build=${BUILD:-build}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/env.sh"
step() { echo; echo "== $*"; }
with_poll() { if [ "$1" = default ]; then env -u VOCL_POLL_US "${@:2}"; else VOCL_POLL_US=$1 "${@:2}"; fi; }
for r in $(seq 1 "${ROUNDS:-3}"); do
    step "round $r: raw MPI"
    timeout 60 mpiexec -n 2 "$build/tools/bench/mpi-pingpong" --sizes 4K --reps 3 --rtt 10000 \
        > "$out/mpi-$r.csv" || exit 1
    grep rtt4 "$out/mpi-$r.csv"
    for p in ${POLLS:-0 20}; do
        step "round $r: vocl-bench, VOCL_POLL_US=$p"
        with_poll "$p" timeout 120 "$build/tools/bench/vocl-bench" --sections lat,launch --reps 9 \
            --no-pipeline-run --timeout 60 --csv "$out/bench-$r-poll$p.csv" |
            grep -E 'blocking|clFinish|launches|FAIL' || exit 1
    done
done
for p in ${POLLS:-0 20}; do
    step "where a blocking call's time goes (VOCL_TRACE), VOCL_POLL_US=$p"
    with_poll "$p" env VOCL_TRACE="$out/trace.json" timeout 60 "$build/tools/vocl-run" -n 1 -- \
        "$build/tools/bench/vocl-bench-worker" --sections lat --reps 5 > /dev/null || exit 1
    python3 "$here/trace_split.py" "$out/trace.json" | tee "$out/trace-poll$p.txt"
    rm -f "$out/trace.json"
done
