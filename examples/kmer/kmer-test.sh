#!/bin/bash
# kmer-test.sh: the integration tests of kmer-assemble (tests/apps/meson.build).
#
#   kmer-test.sh assemble KMER_GEN COMMAND...
#     makes a small genome and its k-mers with KMER_GEN, runs COMMAND with
#     the k-mer file, --genome and -o appended (COMMAND may be vocl-run ...
#     -- kmer-assemble), and passes when it exits 0, its last line is a
#     RESULT line saying verified=yes and the FASTA holds contigs= contigs.
#   kmer-test.sh context KMER_GEN KMER_ASSEMBLE DEVICES [RUNNER...]
#     the one-context assembly (issue 38): runs RUNNER... KMER_ASSEMBLE -b
#     1000 (RUNNER may be vocl-run ... --) on a small genome and passes when
#     it is verified on DEVICES devices, its FASTA is byte for byte that of
#     the CPU assembler alone (the contigs of the per-device-context
#     program, which it checked against the same assembler), and it said
#     that it holds all DEVICES devices in one context and that no batch
#     moves device to device.
#   kmer-test.sh bad-input KMER_ASSEMBLE
#     feeds it broken input, case by case; each must end with exit status 2
#     and a message naming the problem, never a crash or a RESULT line.
set -u
mode=$1
shift
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT

assemble() {
    local gen=$1
    shift
    "$gen" -n 30000 -l 400 -s 7 -o "$dir/g" || return 1
    local out
    out=$("$@" "$dir/g.txt" --genome "$dir/g.fa" -o "$dir/contigs.fa")
    local rc=$?
    printf '%s\n' "$out"
    [[ $rc == 0 ]] || { echo "FAIL: exit status $rc"; return 1; }
    local last
    last=$(tail -n 1 <<<"$out")
    [[ $last == RESULT\ *\ verified=yes ]] || { echo "FAIL: not verified"; return 1; }
    local contigs written
    contigs=$(sed -n 's/.* contigs=\([0-9]*\) .*/\1/p' <<<"$last")
    written=$(grep -c '^>' "$dir/contigs.fa")
    [[ $contigs -gt 1 && $contigs == "$written" ]] ||
        { echo "FAIL: $written contigs in the FASTA, RESULT says $contigs"; return 1; }
    echo "ok: $contigs contigs"
}

context() {
    local gen=$1 program=$2 devices=$3
    shift 3
    "$gen" -n 30000 -l 400 -s 7 -o "$dir/g" || return 1
    "$program" --cpu-only -o "$dir/cpu.fa" "$dir/g.txt" >/dev/null 2>&1 ||
        { echo "FAIL: the CPU assembler alone failed"; return 1; }
    "$@" "$program" -b 1000 "$dir/g.txt" --genome "$dir/g.fa" -o "$dir/contigs.fa" \
        >"$dir/out" 2>"$dir/err"
    local rc=$?
    cat "$dir/out" "$dir/err"
    [[ $rc == 0 ]] || { echo "FAIL: exit status $rc"; return 1; }
    local last
    last=$(tail -n 1 "$dir/out")
    [[ $last == RESULT\ *\ devices=$devices\ *\ verified=yes ]] ||
        { echo "FAIL: not verified on $devices devices"; return 1; }
    cmp "$dir/cpu.fa" "$dir/contigs.fa" ||
        { echo "FAIL: the contigs differ from the CPU assembler's"; return 1; }
    grep -q "^kmer: one context over $devices device(s), one queue each; no batch moves device to device" \
        "$dir/err" || { echo "FAIL: no line saying one context over $devices devices"; return 1; }
    echo "ok: $(grep -c '^>' "$dir/contigs.fa") contigs, the CPU assembler's, in one context"
}

failures=0
# expect NAME PATTERN ARGS...: kmer-assemble ARGS must fail with status 2
# and say PATTERN on stderr.
expect() {
    local name=$1 pattern=$2
    shift 2
    local out rc
    out=$("$program" "$@" 2>&1 >"$dir/stdout")
    rc=$?
    if [[ $rc != 2 ]] || ! grep -q -- "$pattern" <<<"$out" || grep -q '^RESULT' "$dir/stdout"; then
        echo "FAIL $name: status $rc, wanted 2 and '$pattern'; it said:"
        printf '%s\n' "$out" | head -n 5
        failures=$((failures + 1))
    else
        echo "ok $name: $(grep -m 1 -- "$pattern" <<<"$out")"
    fi
}

bad_input() {
    program=$1
    local a=AAAAACCCCCGGGGGTTTTTACGTACGTACG # 31 bases
    local b=CCCCCGGGGGTTTTTACGTACGTACGAAAAA
    printf '%s FA\n%s AF\n' "$a" "$b" >"$dir/good.txt"
    expect missing-file 'cannot open .*/none.txt' "$dir/none.txt"
    printf '%s FA\n%sX AF\n' "$a" "${b:0:30}" >"$dir/letter.txt"
    expect bad-letter 'letter.txt:2: malformed line' "$dir/letter.txt"
    printf '%s FA\n%s A\n' "$a" "$b" >"$dir/short-ext.txt"
    expect one-extension 'short-ext.txt:2: malformed line' "$dir/short-ext.txt"
    printf '%s FA\n%s AQ\n' "$a" "$b" >"$dir/bad-ext.txt"
    expect bad-extension 'bad-ext.txt:2: malformed line' "$dir/bad-ext.txt"
    printf '%s FA\n%sFA\n' "$a" "$b" >"$dir/no-space.txt"
    expect no-space 'no-space.txt:2: malformed line' "$dir/no-space.txt"
    printf '%s FA\n%s AF extra\n' "$a" "$b" >"$dir/extra.txt"
    expect extra-field 'extra.txt:2: malformed line' "$dir/extra.txt"
    printf '%s FA\n\n%s AF\n' "$a" "$b" >"$dir/blank.txt"
    expect blank-line 'blank.txt:2: malformed line' "$dir/blank.txt"
    printf '%s FA\n%s AF\n' "$a" "${b:0:29}" >"$dir/k-mismatch.txt"
    expect k-mismatch 'k-mismatch.txt:2: k mismatch' "$dir/k-mismatch.txt"
    expect k-option '1: k mismatch: a k-mer of 31 bases, expected k = 21' -k 21 "$dir/good.txt"
    printf '%s%s FA\n' "$a" "$a" >"$dir/long.txt"
    expect k-too-large 'k = 62 is not supported' "$dir/long.txt"
    : >"$dir/empty.txt"
    expect empty-file 'no k-mers' "$dir/empty.txt"
    printf '%s FA\n%s AF\n%s FA\n' "$a" "$b" "$a" >"$dir/twice.txt"
    expect duplicate 'line 3 repeats the one on line 1' "$dir/twice.txt"
    # AAC -> ACG -> CGT -> GTA -> TAC -> ACG again: a walk that never ends.
    printf 'AAC FG\nACG AT\nCGT AA\nGTA CC\nTAC AG\n' >"$dir/cycle.txt"
    expect cycle 'never ends' "$dir/cycle.txt"
    expect missing-genome 'cannot open .*/none.fa' --genome "$dir/none.fa" "$dir/good.txt"
    printf '>g\nACGTNACGT\n' >"$dir/n.fa"
    expect bad-genome "n.fa:2: 'N' is not a base" --genome "$dir/n.fa" "$dir/good.txt"
    expect unknown-option "unknown argument '--frobnicate'" --frobnicate "$dir/good.txt"
    expect batch-range '-b needs an integer from 1' -b 0 "$dir/good.txt"
    expect no-file 'no k-mer file given'
    [[ $failures == 0 ]] || { echo "$failures case(s) failed"; return 1; }
}

case $mode in
assemble) assemble "$@" ;;
context) context "$@" ;;
bad-input) bad_input "$@" ;;
*)
    echo "usage: kmer-test.sh assemble|context|bad-input ..." >&2
    exit 2
    ;;
esac
