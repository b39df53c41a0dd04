#!/bin/bash
# run.sh: the measurements of docs/report/kmer (kmer-assemble, issue 20).
# Run from the repository root:
#
#   docs/report/kmer/run.sh [OUT_DIR]           (default docs/report/kmer)
#
# Environment: BUILD (default build) is the build directory whose
# kmer-assemble, kmer-gen and vocl-run are used; REPEATS (default 3) runs of
# each configuration, of which the table shows the median of each figure;
# DATA (default a temporary directory) where the generated inputs go.
#
# It writes OUT_DIR/runs.txt (every command and its RESULT line),
# OUT_DIR/results.md (the table) and OUT_DIR/scaling.png (plot.py).  Every
# run must say verified=yes, or the script stops.  TABLE_ONLY=1 remakes
# results.md and the plot from runs.txt alone.
set -eu
out=${1:-docs/report/kmer}
build=${BUILD:-build}
repeats=${REPEATS:-3}
data=${DATA:-$(mktemp -d)}
assemble=$build/examples/kmer/kmer-assemble
gen=$build/examples/kmer/kmer-gen
vocl_run=$build/tools/vocl-run
runs=$out/runs.txt
if [[ ${TABLE_ONLY:-0} != 1 ]]; then
mkdir -p "$out" "$data"
: >"$runs"

# Inputs: S, a genome of 10^6 bases (about 2000 contigs, the longest about
# 3000 bases, so about 3000 rounds), and L, 10^7 bases.
nice -n 10 "$gen" -n 1000000 -s 1 -o "$data/S" 2>&1 | tail -n 1
nice -n 10 "$gen" -n 10000000 -s 1 -o "$data/L" 2>&1 | tail -n 1

# run LABEL ENV... -- COMMAND...: REPEATS runs; appends "LABEL | COMMAND |
# RESULT" lines to runs.txt.
run() {
    local label=$1
    shift
    local envs=()
    while [[ $1 != -- ]]; do
        envs+=("$1")
        shift
    done
    shift
    for ((r = 0; r < repeats; r++)); do
        local line
        line=$(env "${envs[@]}" nice -n 10 "$@" 2>/dev/null | tail -n 1)
        [[ $line == RESULT\ *\ verified=yes ]] || { echo "not verified: $label: $line" >&2; exit 1; }
        echo "$label | ${envs[*]} $* | $line" >>"$runs"
        echo "$label: ${line#RESULT }"
    done
}

native() { # LABEL DEVICES INPUT ARGS...
    local label=$1 n=$2 input=$3
    shift 3
    local devices=pthread
    for ((i = 1; i < n; i++)); do devices+=" pthread"; done
    run "$label" POCL_DEVICES="$devices" -- "$assemble" "$@" --genome "$data/$input.fa" \
        "$data/$input.txt"
}

vocl() { # LABEL PROXIES DEVICES_PER_PROXY INPUT ARGS...
    local label=$1 p=$2 d=$3 input=$4
    shift 4
    run "$label" VOCL_VERBOSE=0 -- "$vocl_run" -n "$p" -d "$d" -- "$assemble" "$@" \
        --genome "$data/$input.fa" "$data/$input.txt"
}

# The plain single-threaded CPU assembler.
run "S cpu" -- "$assemble" --cpu-only --genome "$data/S.fa" "$data/S.txt"
run "L cpu" -- "$assemble" --cpu-only --genome "$data/L.fa" "$data/L.txt"
# Natively, PoCL pthread devices in this process, by device count and batch.
for n in 1 2 4; do native "S native $n" "$n" S; done
for n in 1 2 4; do native "L native $n" "$n" L; done
for b in 256 4096 16384 262144; do native "L native 2 b=$b" 2 L -b "$b"; done
# Through VOCL: P proxies of K devices each.
vocl "S vocl 1x1" 1 1 S
vocl "S vocl 2x1" 2 1 S
vocl "S vocl 2x2" 2 2 S
vocl "S vocl 4x2" 4 2 S
vocl "S vocl 8x2" 8 2 S
vocl "S vocl 16x2" 16 2 S
for b in 256 4096 262144; do vocl "S vocl 4x2 b=$b" 4 2 S -b "$b"; done
vocl "L vocl 2x1" 2 1 L
vocl "L vocl 16x2" 16 2 L
fi

# The tables: the median of every figure over the repeats of a label.
awk -F' [|] ' '
function field(line, name,    m) {
    if (match(line, " " name "=[^ ]*")) return substr(line, RSTART + length(name) + 2, RLENGTH - length(name) - 2)
    return ""
}
function sorted(list, v,    n, i, j, t) {
    n = split(list, v, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] + 0 < v[i] + 0) { t = v[i]; v[i] = v[j]; v[j] = t }
    return n
}
function median(list,    n, v) {
    n = sorted(list, v)
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
# "median (lowest-highest)"
function spread(list, format,    n, v) {
    n = sorted(list, v)
    return sprintf(format " (" format "-" format ")", median(list), v[1], v[n])
}
{
    label = $1
    if (!(label in seen)) { seen[label] = 1; order[++labels] = label; command[label] = $2 }
    runs[label]++
    for (f = 1; f <= 7; f++) {
        name = names[f]
        values[label, f] = values[label, f] " " field($3, name)
    }
    other[label] = "kmers=" field($3, "kmers") " contigs=" field($3, "contigs") " rounds=" field($3, "rounds")
}
BEGIN {
    split("devices batch seconds inserts_per_s lookups_per_s cpu_inserts_per_s cpu_lookups_per_s", names, " ")
}
END {
    print "| run | devices | batch | seconds | inserts/s | lookups/s | CPU inserts/s | CPU lookups/s | runs |"
    print "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
    for (i = 1; i <= labels; i++) {
        l = order[i]
        cpu = l ~ / cpu$/
        printf "| %s | %s | %s | %s | %s | %s | %.3g | %.3g | %d |\n", l,
            cpu ? "-" : median(values[l, 1]), cpu ? "-" : median(values[l, 2]),
            spread(values[l, 3], "%.3g"), spread(values[l, 4], "%.3g"), spread(values[l, 5], "%.3g"),
            median(values[l, 6]), median(values[l, 7]), runs[l]
    }
    print ""
    print "Inputs and commands (one run each; `--genome` and the k-mer file end every command):"
    print ""
    for (i = 1; i <= labels; i++) {
        l = order[i]
        printf "- %s (%s): `%s`\n", l, other[l], command[l]
    }
}' "$runs" >"$out/results.md"
echo "wrote $out/results.md and $runs"
# The plot of set S against the device count (needs python3-matplotlib).
python3 "$(dirname "$0")/plot.py" "$runs" "$out/scaling.png" ||
    echo "no plot: plot.py needs python3 with matplotlib" >&2
