#!/bin/bash
# run.sh [OUT]: the measurements of docs/report/hep/README.md.  Runs hep-tth
# natively on PoCL CPU devices and under vocl-run, appends every RESULT line
# to OUT/runs.txt with its command, then makes OUT/results.md (report.py).
# BUILD names the build directory (default build-hep), REPEATS the runs per
# timed configuration (default 3; the tables give the best and the median:
# the machine is shared, and only the best is free of others' load).
set -eu
out=${1:-docs/report/hep}
build=${BUILD:-build-hep}
repeats=${REPEATS:-3}
app=$build/examples/hep/hep-tth
vocl_run=$build/tools/vocl-run
runs=$out/runs.txt
data=${DATA:-/tmp/hep-report}
mkdir -p "$data" "$out"
export HWLOC_COMPONENTS=-opencl HYDRA_LAUNCHER=fork
: >"$runs"

# run LABEL [ENV=V...] -- COMMAND...: one run; its RESULT line must not say
# verified=no (timing runs skip the reference: their ids_hash and hist_hash
# must equal a verified run's, which report.py checks).
run() {
    local label=$1
    shift
    local envs=()
    while [[ $1 != -- ]]; do
        envs+=("$1")
        shift
    done
    shift
    local line
    line=$(env "${envs[@]}" timeout 900 "$@" 2>"$out/last.err" | tail -n 1) || true
    [[ $line == RESULT\ *\ verified=yes || $line == RESULT\ *\ verified=skipped ]] ||
        { echo "failed: $label: $line" >&2; tail -n 30 "$out/last.err" >&2; exit 1; }
    rm -f "$out/last.err"
    echo "$label | ${envs[*]} $* | $line" >>"$runs"
    echo "$label: $(sed 's/.*seconds=\([^ ]*\) rate.*selected=\([^ ]*\) ids_hash=\([^ ]*\).*verified=\(.*\)/seconds=\1 selected=\2 ids=\3 verified=\4/' <<<"$line")"
}

two="POCL_DEVICES=pthread pthread"
# The outputs of every run (histograms, ids, table) go beside the events.
cd_out=(--out "$data")
"$app" -n 100000 --seed 1 --generate "$data/e1e5.h5" >/dev/null
"$app" -n 300000 --seed 1 --generate "$data/e3e5.h5" >/dev/null
"$app" -n 1000000 --seed 1 --generate "$data/e1e6.h5" >/dev/null

# 1. Adaptive order against the bad order and a good one, 3 x 10^5 events.
in=(--input "$data/e3e5.h5" --seed 1 --no-progress "${cd_out[@]}")
run "verify 3e5" "$two" -- "$app" "${in[@]}"
for r in $(seq "$repeats"); do
    run "order bad fixed" "$two" -- "$app" "${in[@]}" --no-verify --no-adapt
    run "order bad adapt" "$two" -- "$app" "${in[@]}" --no-verify
    run "order good fixed" "$two" -- "$app" "${in[@]}" --no-verify --order good --no-adapt
    run "order good adapt" "$two" -- "$app" "${in[@]}" --no-verify --order good
    for k in 1 2 3; do
        run "order shuffle:$k fixed" "$two" -- "$app" "${in[@]}" --no-verify --order shuffle:$k --no-adapt
        run "order shuffle:$k adapt" "$two" -- "$app" "${in[@]}" --no-verify --order shuffle:$k
    done
done
# ... and once over 10^6 events, where the batches before the first
# checkpoints weigh less.
in6=(--input "$data/e1e6.h5" --seed 1 --no-progress --no-verify "${cd_out[@]}")
run "order1e6 bad fixed" "$two" -- "$app" "${in6[@]}" --no-adapt
run "order1e6 bad adapt" "$two" -- "$app" "${in6[@]}"
run "order1e6 good fixed" "$two" -- "$app" "${in6[@]}" --order good --no-adapt

# 2. DS/DP: the adaptive split against every fixed split of 6 threads, for
# the compute-bound bad order and for the good order, 10^6 events.
in=(--input "$data/e1e6.h5" --seed 1 --no-progress --threads 6 "${cd_out[@]}")
run "verify 1e6" "$two" -- "$app" "${in[@]}"
for order in bad good; do
    for r in $(seq "$repeats"); do
        run "split $order adapt" "$two" -- "$app" "${in[@]}" --no-verify --order $order
        for k in 1 2 3 4 5; do
            run "split $order $k" "$two" -- "$app" "${in[@]}" --no-verify --order $order --ds-threads $k
        done
    done
done

# 3. Random words made ahead on a second queue, or on the pipeline queue.
for r in $(seq "$repeats"); do
    run "rng ahead" "$two" -- "$app" "${in[@]}" --no-verify --order good --no-adapt
    run "rng same-queue" "$two" HEP_RNG_SAME_QUEUE=1 -- "$app" "${in[@]}" --no-verify --order good --no-adapt
done

# 4. Devices: 1 and 2 PoCL devices natively, 1 to 32 virtual GPUs under
# vocl-run (P proxies x D devices), each verified against the CPU
# reference, 5 x 10^4 events in batches of 512.
"$app" -n 50000 --seed 1 --generate "$data/e5e4.h5" >/dev/null
in=(--input "$data/e5e4.h5" --seed 1 --no-progress --batch 512 "${cd_out[@]}")
run "native 1" POCL_DEVICES=pthread -- "$app" "${in[@]}"
run "native 2" "$two" -- "$app" "${in[@]}"
for pd in 1x1 2x1 2x2 4x2 8x2 16x2; do
    run "vocl $pd" -- "$vocl_run" -n "${pd%x*}" -d "${pd#*x}" -- "$app" "${in[@]}" --order shuffle:7
done

python3 "$(dirname "$0")/report.py" "$runs" >"$out/results.md"
echo "wrote $out/results.md"
