#!/bin/bash
# The floor under a process per device (tools/bench/split-floor.c): kmer's
# round of small commands natively, over sockets to forked processes whose
# waits sleep, over MPI with polling waits, and through VOCL, for 1 proxy x
# 2 devices, 2 x 1 and 16 x 2; ROUNDS alternating rounds (default 7).
#   docs/report/split-floor/run.sh [BUILD] [OUT]     (BUILD default: build)
set -euo pipefail
cd "$(dirname "$0")/../../.."
build=${1:-build} out=${2:-docs/report/split-floor/results}
rounds=${ROUNDS:-7}
export HYDRA_LAUNCHER=${HYDRA_LAUNCHER:-fork} HWLOC_COMPONENTS=${HWLOC_COMPONENTS:--opencl}
sf=$build/tools/bench/split-floor
mkdir -p "$out"
csv=$out/runs.csv
echo "shape,way,us_per_round" > "$csv"
pthreads() { local s; s=$(printf 'pthread %.0s' $(seq "$1")); echo "${s% }"; }

one() { # SHAPE WAY P D ROUNDS
    local shape=$1 way=$2 p=$3 d=$4 n=$5 line
    case $way in
    native) line=$(POCL_DEVICES=$(pthreads $((p * d))) "$sf" --native --devices $((p * d)) --rounds "$n") ;;
    fork) line=$(POCL_DEVICES=$(pthreads "$d") "$sf" --fork "$p" --devices-per-rank "$d" --rounds "$n") ;;
    mpi-yield) line=$(POCL_DEVICES=$(pthreads "$d") timeout 300 mpiexec -n $((p + 1)) "$sf" --yield \
                          --devices-per-rank "$d" --rounds "$n") ;;
    vocl) line=$(timeout 300 "$build/tools/vocl-run" -n "$p" -d "$d" -- "$sf" --native \
                     --devices $((p * d)) --rounds "$n" 2>/dev/null) ;;
    esac
    [[ $line == *,* ]] || { echo "failed: $shape $way" >&2; exit 1; }
    echo "$shape,$way,${line##*,}" >> "$csv"
}

for ((r = 1; r <= rounds; r++)); do
    echo "round $r of $rounds" >&2
    for way in native fork mpi-yield vocl; do
        one 1x2 $way 1 2 1500
        one 2x1 $way 2 1 1500
        one 16x2 $way 16 2 300
    done
done

python3 - "$csv" > "$out/table.md" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
ways = ["native", "fork", "mpi-yield", "vocl"]
print("| shape | " + " | ".join(ways) + " |")
print("|---" * (len(ways) + 1) + "|")
for shape in ["1x2", "2x1", "16x2"]:
    med = {w: statistics.median(float(r["us_per_round"]) for r in rows
                                if r["shape"] == shape and r["way"] == w) for w in ways}
    cells = [f"{med['native']:.0f} us"] + [f"{med[w]:.0f} us ({med[w] / med['native']:.2f}x)"
                                           for w in ways[1:]]
    print(f"| {shape} | " + " | ".join(cells) + " |")
PY
cat "$out/table.md"
