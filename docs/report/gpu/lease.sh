#!/bin/bash
# lease.sh - one GPU lease's measurements, as one command (the lease allows
# one try): what issues 37 and 38 ask of a GPU node, most wanted first,
# each stage only while BUDGET (seconds, default 400) allows.
#
#   1. the runtimes' applications on the GPU, natively and through a proxy
#      (its staging pool on and off), two passes, then once more through
#      the proxy with VOCL_PROFILE and VOCL_TRACE (../runtimes-gpu-node/run.sh);
#   2. issue 37's round-trip and launch rows, batches on (the default) and
#      off (VOCL_BATCH=0), taking turns, ROUNDS (3) rounds;
#   3. the PyOpenCL scripts of tests/external/pyopencl, batches on and off;
#   4. the one-node bandwidth, the proxy's staging pool on and off (bw.sh);
#   5. vocl-bench --breakdown (where a read's and a launch's microseconds go);
#   6. prnu and n-body on 1 and 8 PoCL devices, natively and through 8
#      proxies (../runtimes-gpu-node/run.sh).
#
#   lease.sh OUTDIR     (from the source tree, with .gpu/ from
#                       ../runtimes-gpu-node/stage.sh and .whl/ holding
#                       PyOpenCL's wheels, as README.md says)
#
# STAGES (default "1 2 3 4 5 6") chooses the stages; GPU_WHERES and
# DIAG_APPS go to run.sh in the first.  Everything goes to a work folder;
# after each stage OUTDIR/results.tgz is made again from it, so that what
# ran comes back even if the call is cut short.  OUTDIR/log.txt is the whole log.
set -u -o pipefail
out=${1:?usage: lease.sh OUTDIR}
budget=${BUDGET:-400}
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1
work=/tmp/lease
rm -rf "$work"
mkdir -p "$work"
here=$(cd "$(dirname "$0")" && pwd)
nodes=$here/../runtimes-gpu-node
machine=$work/machine.txt
. "$nodes/setup.sh"
cat "$machine"
gpu_env=(env OCL_ICD_VENDORS=/tmp/vend-gpu)
bench=build/tools/bench/vocl-bench

left() { # SECONDS_NEEDED: whether they are left
    if ((SECONDS + $1 > budget)); then
        echo "[$SECONDS s] skipped: $1 s wanted, $((budget - SECONDS)) left"
        return 1
    fi
}
keep() { tar -czf "$out/results.tgz" -C "$work" . && echo "[$SECONDS s] kept: $(du -h "$out/results.tgz" | cut -f1)"; }
stage() { [[ " ${STAGES:-1 2 3 4 5 6} " == *" ${1%.} "* ]] && echo "== $*"; }
batch() { if [ "$1" = default ]; then env -u VOCL_BATCH "${@:2}"; else VOCL_BATCH=$1 "${@:2}"; fi; }

if stage 1. the runtimes on the GPU && left 150; then
    STAGES="gpu diag" GPU_PASSES=2 GPU_WHERES=${GPU_WHERES:-gpu gpu-vocl gpu-vocl-nostaging} \
        BUDGET=$((budget - SECONDS - 100)) "$nodes/run.sh" "$work/runtimes"
    keep
fi

mkdir -p "$work/small"
stage 2. round trip and launches, batches on and off &&
for r in $(seq 1 "${ROUNDS:-3}"); do
    for b in default 0; do
        left 40 || break 2
        echo "-- round $r, VOCL_BATCH=$b"
        batch $b "${gpu_env[@]}" timeout 90 $bench --sections lat,launch --reps 9 --no-pipeline-run \
            --timeout 60 --csv "$work/small/bench-$r-batch$b.csv" |
            grep -E 'blocking|clFinish|launches|FAIL'
    done
done
keep

if stage 3. PyOpenCL, batches on and off && left 90 && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --upgrade --target /tmp/site .whl/*.whl; then
    export PYTHONPATH=/tmp/site
    for b in default 0; do
        left 45 || break
        batch $b "${gpu_env[@]}" timeout 120 $bench --pyopencl tests/external/pyopencl --rounds 2 \
            --python "$(command -v python3)" --timeout 60 --csv "$work/small/pyopencl-batch$b.csv" |
            tee "$work/small/pyopencl-batch$b.txt" | grep -E 'all 8|FAIL|failed'
    done
    keep
fi

if stage 4. bandwidth, the staging pool on and off && left 50; then
    GPU_ICD=$(cat /tmp/vend-gpu/nvidia.icd) ROUNDS=1 SIZES=16M,64M timeout 120 "$here/bw.sh" "$work/bw"
    keep
fi

if stage 5. where the microseconds go && left 40; then
    "${gpu_env[@]}" timeout 90 $bench --breakdown --rounds 2 --timeout 40 \
        --csv "$work/small/breakdown.csv" | tee "$work/small/breakdown.txt"
    keep
fi

if stage 6. prnu and n-body on 1 and 8 PoCL devices && left 60; then
    STAGES=scaling APPS="prnu nbody" DEVICES="1 8" BUDGET=$((budget - SECONDS)) \
        "$nodes/run.sh" "$work/scaling"
    keep
fi
echo "== done in $SECONDS s"
