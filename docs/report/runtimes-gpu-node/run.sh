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
set -u -o pipefail
out=${1:?usage: run.sh OUTDIR}
budget=${BUDGET:-380}
mkdir -p "$out"
runs=$out/runs.txt errors=$out/errors.txt machine=$out/machine.txt
: >"$runs"
: >"$errors"
sys=/tmp/vocl-sys data=/tmp/vocl-data
mkdir -p "$sys" "$data" /tmp/vend-pocl /tmp/vend-gpu /tmp/hep-out
unpack() { # ARCHIVE DIR: with xz(1), or Python's lzma where the node has no xz
    if command -v xz >/dev/null; then xz -dc "$1" | tar -C "$2" -xf -
    else python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$1" "$2"; fi
}
unpack .gpu/sys.tar.xz "$sys" || exit 1
unpack .gpu/build.tar.xz . || exit 1
lib=$sys/lib/x86_64-linux-gnu
for s in .gpu/stubs/*; do # a stand-in only where the node has no such library
    ldconfig -p | grep -q "[[:space:]]$(basename "$s") " || cp "$s" "$lib/"
done
export PATH=$sys/bin:$PATH LD_LIBRARY_PATH=$lib
export POCL_CACHE_DIR=/tmp/pocl-cache POCL_MAX_PTHREAD_COUNT=2 HWLOC_COMPONENTS=-opencl HYDRA_LAUNCHER=fork
echo "$lib/libpocl.so.2" >/tmp/vend-pocl/pocl.icd
gpu_icd=$(ldconfig -p | awk '/libnvidia-opencl.so.1 / {print $NF; exit}')
[ -n "$gpu_icd" ] || gpu_icd=$(cat /etc/OpenCL/vendors/nvidia.icd 2>/dev/null)
[ -n "$gpu_icd" ] || gpu_icd=$(ls /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 2>/dev/null | head -n 1)
echo "${gpu_icd:-libnvidia-opencl.so.1}" >/tmp/vend-gpu/nvidia.icd
{
    echo "date: $(date -u)"
    echo "os: $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)"
    echo "cores: $(nproc); memory: $(free -g | awk '/Mem:/ {print $2}') GiB"
    grep -m1 'model name' /proc/cpuinfo
    for v in avx512f avx2; do grep -q -w $v /proc/cpuinfo && { echo "widest vector: $v"; break; }; done
    nvidia-smi -L 2>&1
    echo "GPU ICD: ${gpu_icd:-not found}"
    echo "stand-ins used: $(ls "$lib" | grep -E '^lib(xml2|z3|curl)\.' | tr '\n' ' ')"
    echo "missing libraries:"
    for f in build/proxyd/voclproxyd build/libvocl/libvocl.so build/examples/*/* "$lib"/*.so* "$lib"/pocl/*.so "$sys"/bin/*; do
        [ -f "$f" ] && [ -x "$f" -o "${f%.so*}" != "$f" ] && LD_LIBRARY_PATH=$lib:$lib/pocl ldd "$f" 2>/dev/null | grep 'not found' | sed "s|^|  $f: |"
    done
} >"$machine" 2>&1
cat "$machine"

left() { ((SECONDS < budget)); }
devices() { local d=pthread i; for ((i = 1; i < $1; i++)); do d+=" pthread"; done; echo "$d"; }
# run LABEL WHERE N CMD...: WHERE is native, vocl (N proxies of one PoCL
# device each), gpu or gpu-vocl (one proxy).
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
    gpu-vocl) pre=(env OCL_ICD_VENDORS=/tmp/vend-gpu build/tools/vocl-run -n 1 -t gpu --) ;;
    esac
    line=$(timeout 90 "${pre[@]}" "$@" 2>/tmp/run.err | grep '^RESULT' | tail -n 1)
    if [ -z "$line" ]; then
        line="FAILED"
        { echo "== $label | $where | $n | $*"; tail -n 25 /tmp/run.err; } >>"$errors"
    fi
    echo "$label | $where | $n | $* | $line" >>"$runs"
    echo "[$SECONDS s] $label | $where | $n | $(grep -oE ' (seconds|verified)=[^ ]+' <<<"$line" | tr '\n' ' ')"
}

echo "== data"
build/examples/kmer/kmer-gen -n 6000000 -s 1 -o "$data/K" 2>&1 | tail -n 1
build/examples/hep/hep-tth -n 300000 --seed 1 --generate "$data/e.h5" >/dev/null 2>&1 || echo "hep: no events file"
prnu=(build/examples/allpairs/allpairs-prnu -n 128 --size 256 --jobs 4 --no-progress)
nbody=(build/examples/dag/dag-nbody -n 8192 -s 8)
hep=(build/examples/hep/hep-tth --input "$data/e.h5" --seed 1 --no-progress --out /tmp/hep-out)
kmer=(build/examples/kmer/kmer-assemble "$data/K.txt")

echo "== warm-up: PoCL compiles each kernel once, into its cache"
for app in prnu nbody hep kmer; do
    declare -n cmd=$app
    run "warm-up" native 1 "${cmd[@]}"
done

scaling() { # one pass over every application and device count
    local n where
    for app in prnu nbody hep kmer; do
        declare -n cmd=$app
        for where in native vocl; do
            for n in 1 2 4 8; do
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

echo "== the GPU, natively and through a proxy"
for app in prnu nbody hep kmer; do
    declare -n cmd=$app
    for where in gpu gpu-vocl; do run "$app" $where 1 "${cmd[@]}"; done
done
echo "== scaling, pass 1"
scaling
pass=2
while ((SECONDS < budget - 150)); do
    echo "== scaling, pass $pass"
    scaling
    pass=$((pass + 1))
done
echo "== done in $SECONDS s"
