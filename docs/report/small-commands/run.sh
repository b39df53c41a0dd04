#!/bin/bash
# run.sh: the measurements of docs/report/small-commands (issue 37): streams
# of small commands natively, through VOCL before the issue's commits and
# after them, in alternating rounds.  Run from the repository root:
#
#   docs/report/small-commands/run.sh [OUT_DIR]   (default docs/report/small-commands)
#
# Environment: BEFORE and AFTER are build directories (default: AFTER=build,
# BEFORE=../base/build, a build of the commit before); BEFORE_ENV and
# AFTER_ENV, NAME=VALUE words each set for its VOCL runs (for one build
# with a setting off and on: BEFORE=build BEFORE_ENV=VOCL_BATCH_GATE=0
# AFTER=build); ROUNDS (default 5)
# rounds, in each of which every configuration runs once, natively first;
# GENOME (default: made here) a kmer-gen output prefix.
#
# Rows: 10,000 asynchronous launches with 7 arguments set before each
# (vocl-bench-worker section d, its median of 5 repetitions), and
# kmer-assemble on a 200,000-base genome with 2 devices (1 proxy x 2, 2
# proxies x 1) and 32 (16 x 2).  Every run must verify, or the script stops.
# Writes OUT_DIR/runs.txt (one line a run: label, seconds) and prints the
# table of medians (tabulate.py).
set -eu
out=${1:-docs/report/small-commands}
after=${AFTER:-build}
before=${BEFORE:-../base/build}
rounds=${ROUNDS:-5}
export HYDRA_LAUNCHER=${HYDRA_LAUNCHER:-fork} HWLOC_COMPONENTS=-opencl VOCL_VERBOSE=0
mkdir -p "$out"
runs=$out/runs.txt
: >"$runs"
data=$(mktemp -d)
trap 'rm -rf "$data"' EXIT
genome=${GENOME:-$data/G}
[[ -e $genome.txt ]] || "$after/examples/kmer/kmer-gen" -n 200000 -s 1 -o "$genome" >/dev/null

record() { # LABEL SECONDS
    echo "$1 | $2" >>"$runs"
    echo "$1: $2"
}

launches() { # LABEL BUILD|native [ENV]
    local label=$1 b=$2 line
    local worker=$after/tools/bench/vocl-bench-worker
    if [[ $b == native ]]; then
        line=$(POCL_DEVICES=pthread "$worker" --sections launch | grep '^launch,')
    else
        line=$(env ${3:-} "$b/tools/vocl-run" -n 1 -d 1 -- "$worker" --sections launch 2>/dev/null |
            grep '^launch,')
    fi
    [[ -n $line ]] || { echo "failed: $label" >&2; exit 1; }
    record "$label" "$(cut -d, -f4 <<<"$line")"
}

kmer() { # LABEL BUILD|native PROXIES DEVICES [ENV]
    local label=$1 b=$2 p=$3 d=$4 line devs
    local args=(--genome "$genome.fa" "$genome.txt")
    if [[ $b == native ]]; then
        devs=$(printf 'pthread %.0s' $(seq $((p * d))))
        line=$(POCL_DEVICES=${devs% } "$after/examples/kmer/kmer-assemble" "${args[@]}" 2>&1 |
            grep '^RESULT')
    else
        line=$(env ${5:-} timeout 600 "$b/tools/vocl-run" -n "$p" -d "$d" -- \
            "$after/examples/kmer/kmer-assemble" "${args[@]}" 2>&1 | grep "^RESULT")
    fi
    [[ $line == *verified=yes* ]] || { echo "not verified: $label: $line" >&2; exit 1; }
    record "$label" "$(grep -o 'seconds=[0-9.e+-]*' <<<"$line" | cut -d= -f2)"
}

for ((r = 1; r <= rounds; r++)); do
    echo "round $r of $rounds"
    launches "launch native" native
    launches "launch before" "$before" "${BEFORE_ENV:-}"
    launches "launch after" "$after" "${AFTER_ENV:-}"
    for pd in "1 2" "2 1" "16 2"; do
        set -- $pd
        kmer "kmer $1x$2 native" native "$1" "$2"
        kmer "kmer $1x$2 before" "$before" "$1" "$2" "${BEFORE_ENV:-}"
        kmer "kmer $1x$2 after" "$after" "$1" "$2" "${AFTER_ENV:-}"
    done
done
python3 "$(dirname "$0")/tabulate.py" "$runs"
