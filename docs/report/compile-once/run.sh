#!/bin/bash
# run.sh: kmer-assemble and hep-tth with PoCL's kernel cache empty (cold) and
# then filled by that run (warm), at 1 and 2 PoCL devices, for two builds:
# BEFORE (default ../base/build, launches with a NULL local size) and AFTER
# (default build, every launch naming its group size).  Run from the
# repository root:  docs/report/compile-once/run.sh [ROUNDS (default 3)]
# Prints one line a run: app devices build cold|warm seconds= builds=
# (builds: the kernel builds the cold run left in the cache).
set -eu
rounds=${1:-3}
before=${BEFORE:-../base/build} after=${AFTER:-build}
export HWLOC_COMPONENTS=-opencl
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
"$after/examples/kmer/kmer-gen" -n 2000000 -s 1 -o "$data/G" >/dev/null 2>&1
"$after/examples/hep/hep-tth" -n 100000 --seed 1 --generate "$data/e.h5" >/dev/null 2>&1
mkdir "$data/out"
seconds() { grep '^RESULT' | grep -o ' seconds=[0-9.]*' | head -n 1 | cut -d= -f2; }
one() { # APP BUILD DEVICES
    local app=$1 b=$2 n=$3 devs=pthread cmd
    [[ $n == 2 ]] && devs="pthread pthread"
    case $app in
    kmer) cmd=("$b/examples/kmer/kmer-assemble" "$data/G.txt") ;;
    hep) cmd=("$b/examples/hep/hep-tth" --input "$data/e.h5" --no-progress --no-verify --out "$data/out") ;;
    esac
    rm -rf "$data/cache" && mkdir "$data/cache"
    local label=$([[ $b == "$before" ]] && echo before || echo after) cold warm builds
    cold=$(POCL_CACHE_DIR=$data/cache POCL_DEVICES=$devs "${cmd[@]}" 2>/dev/null | seconds)
    builds=$(find "$data/cache" -name '*.so' | wc -l)
    warm=$(POCL_CACHE_DIR=$data/cache POCL_DEVICES=$devs "${cmd[@]}" 2>/dev/null | seconds)
    echo "$app $n $label cold seconds=$cold builds=$builds"
    echo "$app $n $label warm seconds=$warm"
}
for ((r = 1; r <= rounds; r++)); do
    for app in kmer hep; do
        for n in 1 2; do
            one $app "$before" $n
            one $app "$after" $n
        done
    done
done
