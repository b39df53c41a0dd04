#!/usr/bin/env bash
# overhead.sh - what migration costs when nobody migrates: the same
# programs through the libvocl before migration (OLD) and with it (NEW),
# in alternating pairs, same proxies, same vocl-run.  With it, every entry
# point passes the gate (libvocl/gate.h) and a thread waits on the control
# socket.
#   overhead.sh OLD_LIBVOCL NEW_BUILD_DIR [PAIRS]
# Prints each pair's seconds and, per program, the median of new/old.
set -euo pipefail
old=$1 build=$2 pairs=${3:-5}
export HYDRA_LAUNCHER=fork HWLOC_COMPONENTS=-opencl
run=$build/tools/vocl-run ex=$build/examples
# seconds LIB PROGRAM ARGS...: the program's own time (its RESULT's
# seconds=, or the launch section's), through 2 proxies of 1 device.
seconds() {
    local lib=$1
    shift
    VOCL_LIB=$lib "$run" -n 2 -d 1 -- "$@" 2>/dev/null |
        sed -nE 's/.* seconds=([0-9.e+-]+).*/\1/p; s/^launch,10000x7,,([0-9.e+-]+),s$/\1/p' | head -n 1
}
progs=("$ex/gemm -n 256 -r 20" "$ex/nbody -n 2048 -s 20" "$ex/transpose -n 1024 -r 50"
       "$ex/smithwaterman -n 1024 -p 32" "$build/tools/bench/vocl-bench-worker --sections launch")
printf '%-40s %4s %10s %10s %8s\n' program pair old_s new_s new/old
for p in "${progs[@]}"; do
    ratios=()
    for i in $(seq "$pairs"); do
        # shellcheck disable=SC2086
        if [ $((i % 2)) = 1 ]; then a=$(seconds "$old" $p); b=$(seconds "$build/libvocl/libvocl.so" $p)
        else b=$(seconds "$build/libvocl/libvocl.so" $p); a=$(seconds "$old" $p); fi
        r=$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.3f", b / a}')
        ratios+=("$r")
        printf '%-40s %4d %10.4f %10.4f %8s\n' "$(basename "${p%% *}") ${p#* }" "$i" "$a" "$b" "$r"
    done
    printf '%-40s median new/old %s\n' "$(basename "${p%% *}")" \
        "$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{v[NR]=$1} END{print v[int((NR+1)/2)]}')"
done
