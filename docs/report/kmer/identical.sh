#!/bin/bash
# identical.sh: kmer-assemble writes the same contigs, byte for byte, with
# the CPU assembler alone, natively on 1, 2 and 4 PoCL devices, and under
# vocl-run on 1 to 32 virtual GPUs.  Run from the repository root:
#
#   docs/report/kmer/identical.sh [OUT_FILE]   (default docs/report/kmer/identical.txt)
#
# BUILD (default build): the build directory used.  The input is a genome
# of 10^5 bases with a repeat about every 300 bases (short contigs, so few
# rounds: the 32-GPU run takes seconds, not minutes).
set -eu
out=${1:-docs/report/kmer/identical.txt}
build=${BUILD:-build}
assemble=$build/examples/kmer/kmer-assemble
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$build/examples/kmer/kmer-gen" -n 100000 -l 300 -s 3 -o "$dir/g" 2>&1 | tail -n 1
: >"$out"

# check NAME ENV... -- COMMAND...: runs it with -o, records the RESULT line
# and the checksum of the FASTA, which must equal the CPU assembler's.
check() {
    local name=$1
    shift
    local envs=()
    while [[ $1 != -- ]]; do
        envs+=("$1")
        shift
    done
    shift
    local line sum
    line=$(env "${envs[@]}" nice -n 10 "$@" -o "$dir/$name.fa" --genome "$dir/g.fa" "$dir/g.txt" \
        2>/dev/null | tail -n 1)
    sum=$(md5sum <"$dir/$name.fa" | cut -d' ' -f1)
    echo "$name md5=$sum $line" | tee -a "$out"
    [[ $line == RESULT\ *\ verified=yes ]] || { echo "not verified: $name" >&2; exit 1; }
    [[ $name == cpu || $sum == "$reference" ]] || { echo "contigs differ: $name" >&2; exit 1; }
}

reference=
check cpu -- "$assemble" --cpu-only
reference=$(md5sum <"$dir/cpu.fa" | cut -d' ' -f1)
check native-1 POCL_DEVICES=pthread -- "$assemble"
check native-2 POCL_DEVICES="pthread pthread" -- "$assemble"
check native-4 POCL_DEVICES="pthread pthread pthread pthread" -- "$assemble"
for pd in 1x1 2x1 2x2 4x2 8x2 16x2; do
    check "vocl-$pd" VOCL_VERBOSE=0 -- "$build/tools/vocl-run" -n "${pd%x*}" -d "${pd#*x}" -- \
        "$assemble" -b 256
done
echo "all $(wc -l <"$out") FASTA files identical (md5 $reference)" | tee -a "$out"
