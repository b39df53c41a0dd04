#!/bin/bash
# run.sh - issue 38's scaling figures on one GPU node (16 cores, one GPU):
# each runtime's main application on 1, 2, 4 and 8 PoCL devices of 2
# threads each, natively in one process and through one proxy per device;
# then the same applications on the GPU through NVIDIA's OpenCL, natively
# and through one proxy.
#
#   run.sh OUTDIR        (from the source tree, with .gpu/ from stage.sh)
#
# Writes OUTDIR/machine.txt, runs.txt (one line a run: label | where |
# devices | command | RESULT line) and errors.txt; tabulate.py turns
# runs.txt into the tables of README.md.  BUDGET (seconds, default 380):
# no run starts after it; the scaling runs are repeated while it allows.
# STAGES (default "gpu scaling"; also "diag": each application through a
# proxy on the GPU once more, with VOCL_PROFILE and VOCL_TRACE, kept as
# OUTDIR/diag-APP.txt and trace-APP.json; DIAG_APPS, default APPS, which),
# APPS (default "prnu nbody hep kmer"), DEVICES (default "1 2 4 8"), GPU_WHERES (default "gpu gpu-vocl";
# also gpu-vocl-nostaging: the proxy stages in its own memory,
# VOCL_DRIVER_STAGING=0) and GPU_PASSES (default 1) choose what runs;
# GPU_TYPE (default gpu) is the device type the proxy serves there.
set -u -o pipefail
out=${1:?usage: run.sh OUTDIR}
budget=${BUDGET:-380}
mkdir -p "$out"
runs=$out/runs.txt errors=$out/errors.txt machine=$out/machine.txt
: >"$runs"
: >"$errors"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/setup.sh"
cat "$machine"

left() { ((SECONDS < budget)); }
devices() { local d=pthread i; for ((i = 1; i < $1; i++)); do d+=" pthread"; done; echo "$d"; }
# run LABEL WHERE N CMD...: WHERE is native, vocl (N proxies of one PoCL
# device each), gpu, gpu-vocl (one proxy), gpu-vocl-nostaging or
# gpu-vocl-diag (see STAGES).
run() {
    local label=$1 where=$2 n=$3 line
    shift 3
    left || { echo "skipped (budget): $label $where $n"; return; }
    local pre=(env OCL_ICD_VENDORS=/tmp/vend-pocl)
    case $where in
    # PoCL's pthread devices of one process share one pool of threads, so
    # natively the pool grows with the devices: 2 threads each, as in a proxy.
    native) pre+=(POCL_DEVICES="$(devices "$n")" POCL_MAX_PTHREAD_COUNT=$((2 * n))) ;;
    vocl) pre+=(build/tools/vocl-run -n "$n" -d 1 --) ;;
    gpu) pre=(env OCL_ICD_VENDORS=/tmp/vend-gpu) ;;
    gpu-vocl*) pre=(env OCL_ICD_VENDORS=/tmp/vend-gpu) ;;&
    gpu-vocl-nostaging) pre+=(VOCL_DRIVER_STAGING=0) ;;&
    gpu-vocl-diag) pre+=(VOCL_PROFILE=1 VOCL_TRACE="$out/trace-$label.json") ;;&
    gpu-vocl*) pre+=(build/tools/vocl-run -n 1 -t "${GPU_TYPE:-gpu}" --) ;;
    esac
    line=$(timeout 90 "${pre[@]}" "$@" 2>/tmp/run.err | grep '^RESULT' | tail -n 1)
    [ "$where" = gpu-vocl-diag ] && cp /tmp/run.err "$out/diag-$label.txt"
    if [ -z "$line" ]; then
        line="FAILED"
        { echo "== $label | $where | $n | $*"; tail -n 25 /tmp/run.err; } >>"$errors"
    fi
    echo "$label | $where | $n | $* | $line" >>"$runs"
    echo "[$SECONDS s] $label | $where | $n | $(grep -oE ' (seconds|verified)=[^ ]+' <<<"$line" | tr '\n' ' ')"
}

apps=${APPS:-prnu nbody hep kmer}
stages=${STAGES:-gpu scaling}
has() { [[ " $1 " == *" $2 "* ]]; }
echo "== data"
has "$apps" kmer && build/examples/kmer/kmer-gen -n 6000000 -s 1 -o "$data/K" 2>&1 | tail -n 1
if has "$apps" hep; then
    build/examples/hep/hep-tth -n 300000 --seed 1 --generate "$data/e.h5" >/dev/null 2>&1 || echo "hep: no events file"
fi
prnu=(build/examples/allpairs/allpairs-prnu -n 128 --size 256 --jobs 4 --no-progress)
nbody=(build/examples/dag/dag-nbody -n 8192 -s 8)
hep=(build/examples/hep/hep-tth --input "$data/e.h5" --seed 1 --no-progress --out /tmp/hep-out)
kmer=(build/examples/kmer/kmer-assemble "$data/K.txt")

scaling() { # one pass over every application and device count
    local n where
    for app in $apps; do
        declare -n cmd=$app
        for where in native vocl; do
            for n in ${DEVICES:-1 2 4 8}; do
                # HEP's CPU reference takes longer than its run: checked at
                # the ends, the other runs compare their ids and histograms.
                if [ $app = hep ] && [ $n != 1 ] && [ $n != 8 ]; then
                    run "$app" $where $n "${cmd[@]}" --no-verify
                else
                    run "$app" $where $n "${cmd[@]}"
                fi
            done
        done
    done
}

if has "$stages" gpu; then
    for ((pass = 1; pass <= ${GPU_PASSES:-1}; pass++)); do
        echo "== the GPU, natively and through a proxy, pass $pass"
        for app in $apps; do
            declare -n cmd=$app
            for where in ${GPU_WHERES:-gpu gpu-vocl}; do run "$app" $where 1 "${cmd[@]}"; done
        done
    done
fi
if has "$stages" diag; then
    echo "== the GPU through a proxy, with VOCL_PROFILE and VOCL_TRACE"
    for app in ${DIAG_APPS:-$apps}; do
        declare -n cmd=$app
        run "$app" gpu-vocl-diag 1 "${cmd[@]}"
    done
fi
if has "$stages" scaling; then
    # At each device count: a launch that leaves the group size to PoCL is
    # compiled for the size the count's split gives (dag-nbody's slices).
    echo "== warm-up: PoCL compiles each kernel once, into its cache"
    for app in $apps; do
        declare -n cmd=$app
        for n in ${DEVICES:-1 2 4 8}; do run "warm-up" native "$n" "${cmd[@]}"; done
    done
    echo "== scaling, pass 1"
    scaling
    pass=2
    while ((SECONDS < budget - 150)); do
        echo "== scaling, pass $pass"
        scaling
        pass=$((pass + 1))
    done
fi
echo "== done in $SECONDS s"
