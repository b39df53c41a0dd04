#!/bin/bash
# dag.sh: the DAG runtime's applications with many small commands (floyd:
# a command per row block per step; nbody over many steps) natively and
# through VOCL before and after issue 37, in alternating rounds.  Run from
# the repository root, after run.sh's conventions (AFTER, BEFORE, ROUNDS):
#
#   docs/report/small-commands/dag.sh [OUT_DIR]
#
# Writes OUT_DIR/dag-runs.txt and prints the table (tabulate.py).  Every run
# must verify, or the script stops.  The application binaries are AFTER's
# for every configuration; only vocl-run (libvocl and voclproxyd) differs.
set -eu
out=${1:-docs/report/small-commands}
after=${AFTER:-build}
before=${BEFORE:-../base/build}
rounds=${ROUNDS:-5}
export HYDRA_LAUNCHER=${HYDRA_LAUNCHER:-fork} HWLOC_COMPONENTS=-opencl VOCL_VERBOSE=0
runs=$out/dag-runs.txt
: >"$runs"

run() { # LABEL BUILD|native PROXIES DEVICES APP ARGS...
    local label=$1 b=$2 p=$3 d=$4 app=$5 line devs
    shift 5
    if [[ $b == native ]]; then
        devs=$(printf 'pthread %.0s' $(seq $((p * d))))
        line=$(POCL_DEVICES=${devs% } "$after/examples/dag/$app" "$@" 2>&1 | grep '^RESULT')
    else
        line=$(timeout 600 "$b/tools/vocl-run" -n "$p" -d "$d" -- \
            "$after/examples/dag/$app" "$@" 2>&1 | grep '^RESULT')
    fi
    [[ $line == *verified=yes* ]] || { echo "not verified: $label: $line" >&2; exit 1; }
    local s
    s=$(grep -o 'seconds=[0-9.e+-]*' <<<"$line" | cut -d= -f2)
    echo "$label | $s" >>"$runs"
    echo "$label: $s"
}

for ((r = 1; r <= rounds; r++)); do
    echo "round $r of $rounds"
    for pd in "1 2" "2 1"; do
        set -- $pd
        for app in "dag-floyd -n 1024" "dag-nbody -s 50"; do
            name=${app%% *}
            run "$name $1x$2 native" native "$1" "$2" $app
            run "$name $1x$2 before" "$before" "$1" "$2" $app
            run "$name $1x$2 after" "$after" "$1" "$2" $app
        done
    done
done
python3 "$(dirname "$0")/tabulate.py" "$runs"
