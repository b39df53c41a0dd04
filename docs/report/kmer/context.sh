#!/bin/bash
# context.sh: kmer-assemble with one context per device (before issue 38)
# against one context over all devices (after), in alternating runs.
# Run from the repository root:
#
#   BEFORE=/tmp/km-before/build AFTER=build-km docs/report/kmer/context.sh [OUT_DIR]
#
# BEFORE and AFTER are build directories (kmer-assemble, kmer-gen,
# vocl-run); OUT_DIR (default docs/report/kmer) gets context-runs.txt, every
# command and its RESULT line.  The input is a genome of GENOME bases
# (default 2x10^6) with a repeat every SPACING (default 300) bases on
# average, seed 1, made with AFTER's kmer-gen in DATA (default a temporary
# directory): shorter contigs than run.sh's sets, so fewer rounds, so that a
# run through VOCL takes seconds, not tens of seconds, on a loaded machine.  For each configuration the runs alternate before, after,
# before, after... REPEATS (default 3) times each, so that a change in the
# load of the shared machine falls on both alike.  Every run must say
# verified=yes, and every run's FASTA must have the md5 of the first one,
# or the script stops.  The table (medians, ranges) goes to stdout.
set -eu
out=${1:-docs/report/kmer}
before=${BEFORE:?the build directory of the commit before}
after=${AFTER:-build-km}
repeats=${REPEATS:-3}
genome=${GENOME:-2000000}
spacing=${SPACING:-300}
data=${DATA:-$(mktemp -d)}
runs=$out/context-runs.txt
if [[ ${TABLE_ONLY:-0} != 1 ]]; then
mkdir -p "$out" "$data"
: >"$runs"
in=$data/g$genome-l$spacing
[[ -f $in.txt ]] || nice -n 10 "$after/examples/kmer/kmer-gen" -n "$genome" -l "$spacing" -s 1 \
    -o "$in" 2>&1 | tail -n 1
want_md5=

# one LABEL BUILD ENV... -- ARGS...: one run; ARGS may start with vocl-run's
# options, marked by "vocl P D".
one() {
    local label=$1 build=$2
    shift 2
    local envs=()
    while [[ $1 != -- ]]; do
        envs+=("$1")
        shift
    done
    shift
    local cmd=()
    if [[ $# -gt 0 && $1 == vocl ]]; then
        cmd=("$build/tools/vocl-run" -n "$2" -d "$3" --)
        shift 3
    fi
    cmd+=("$build/examples/kmer/kmer-assemble" --genome "$in.fa" -o "$data/contigs.fa"
        "$in.txt")
    local line
    line=$(env "${envs[@]}" nice -n 10 "${cmd[@]}" 2>"$data/stderr" | tail -n 1)
    [[ $line == RESULT\ *\ verified=yes ]] || { echo "not verified: $label: $line" >&2; exit 1; }
    local md5
    md5=$(md5sum <"$data/contigs.fa" | cut -d ' ' -f 1)
    want_md5=${want_md5:-$md5}
    [[ $md5 == "$want_md5" ]] || { echo "other contigs: $label ($md5, not $want_md5)" >&2; exit 1; }
    echo "$label | ${envs[*]} ${cmd[*]} | md5=$md5 | $line" >>"$runs"
    echo "$label: ${line#RESULT }"
}

# config NAME ENV... -- ARGS...: REPEATS alternations of before and after.
config() {
    local name=$1
    shift
    for ((r = 0; r < repeats; r++)); do
        one "$name before" "$before" "$@"
        one "$name after" "$after" "$@"
    done
}

config "native 2" POCL_DEVICES="pthread pthread" --
config "vocl 2x1" VOCL_VERBOSE=0 -- vocl 2 1
config "vocl 4x1" VOCL_VERBOSE=0 -- vocl 4 1
fi

# The median (and range) of seconds, inserts/s and lookups/s per label.
awk -F' [|] ' '
function field(line, name) {
    if (match(line, " " name "=[^ ]*")) return substr(line, RSTART + length(name) + 2, RLENGTH - length(name) - 2)
    return ""
}
function spread(list,    n, v, i, j, t, m) {
    n = split(list, v, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
    m = n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    return sprintf("%.3g (%.3g-%.3g)", m, v[1], v[n])
}
{
    label = $1
    if (!(label in count)) order[++labels] = label
    count[label]++
    secs[label] = secs[label] " " field($4, "seconds")
    ins[label] = ins[label] " " field($4, "inserts_per_s")
    look[label] = look[label] " " field($4, "lookups_per_s")
    devs[label] = field($4, "devices")
}
END {
    print "| run | devices | seconds | inserts/s | lookups/s | runs |"
    print "|---|---:|---:|---:|---:|---:|"
    for (i = 1; i <= labels; i++) {
        l = order[i]
        printf "| %s | %s | %s | %s | %s | %d |\n", l, devs[l], spread(secs[l]), spread(ins[l]),
            spread(look[l]), count[l]
    }
}' "$runs"
