#!/bin/bash
# run.sh [OUT]: the measurements of docs/report/hep/README.md.  Runs hep-tth
# natively on PoCL CPU devices and under vocl-run, appends every RESULT line
# to OUT/runs.txt with its command, then makes OUT/results.md (report.py).
# BUILD names the build directory (default build-hep), REPEATS the runs per
# timed configuration (default 3; the tables give the best and the median:
# the machine is shared, and only the best is free of others' load).
# SECTIONS picks the sections to run (default all, in this order): order
# split rng devices (issue 19), verify heavy-written heavy split-bad
# split-good split-light vocl-heavy vocl-light (issue 38).  RUNS names the runs file
# (default OUT/runs.txt), emptied first unless APPEND=1, so that a long
# report can be made one section at a time; RESULTS the tables (default
# OUT/results.md).
set -eu
out=${1:-docs/report/hep}
build=${BUILD:-build-hep}
repeats=${REPEATS:-3}
app=$build/examples/hep/hep-tth
vocl_run=$build/tools/vocl-run
runs=${RUNS:-$out/runs.txt}
data=${DATA:-/tmp/hep-report}
sections=" ${SECTIONS:-order split rng devices verify heavy-written heavy split-bad split-good split-light vocl-heavy vocl-light} "
mkdir -p "$data" "$out"
export HWLOC_COMPONENTS=-opencl HYDRA_LAUNCHER=fork
[[ ${APPEND:-} == 1 ]] || : >"$runs"

want() { [[ $sections == *" $1 "* ]]; }

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
for f in e1e5:100000 e3e5:300000 e1e6:1000000 e5e4:50000; do
    [[ -s $data/${f%:*}.h5 ]] || "$app" -n "${f#*:}" --seed 1 --generate "$data/${f%:*}.h5" >/dev/null
done

# 1. Adaptive order against the bad order and a good one, 3 x 10^5 events.
in=(--input "$data/e3e5.h5" --seed 1 --no-progress "${cd_out[@]}")
want order && run "verify 3e5" "$two" -- "$app" "${in[@]}"
want order && for r in $(seq "$repeats"); do
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
if want order; then
    run "order1e6 bad fixed" "$two" -- "$app" "${in6[@]}" --no-adapt
    run "order1e6 bad adapt" "$two" -- "$app" "${in6[@]}"
    run "order1e6 good fixed" "$two" -- "$app" "${in6[@]}" --order good --no-adapt
fi

# 2. DS/DP: the adaptive split against every fixed split of 6 threads, for
# the compute-bound bad order and for the good order, 10^6 events.
in=(--input "$data/e1e6.h5" --seed 1 --no-progress --threads 6 "${cd_out[@]}")
want split && run "verify 1e6" "$two" -- "$app" "${in[@]}"
want split && for order in bad good; do
    for r in $(seq "$repeats"); do
        run "split $order adapt" "$two" -- "$app" "${in[@]}" --no-verify --order $order
        for k in 1 2 3 4 5; do
            run "split $order $k" "$two" -- "$app" "${in[@]}" --no-verify --order $order --ds-threads $k
        done
    done
done

# 3. Random words made (and, since issue 38, columns uploaded) ahead on a
# second queue, or on the pipeline queue.
want rng && for r in $(seq "$repeats"); do
    run "rng ahead" "$two" -- "$app" "${in[@]}" --no-verify --order good --no-adapt
    run "rng same-queue" "$two" HEP_RNG_SAME_QUEUE=1 -- "$app" "${in[@]}" --no-verify --order good --no-adapt
done

# 4. Devices: 1 and 2 PoCL devices natively, 1 to 32 virtual GPUs under
# vocl-run (P proxies x D devices), each verified against the CPU
# reference, 5 x 10^4 events in batches of 512.
in=(--input "$data/e5e4.h5" --seed 1 --no-progress --batch 512 "${cd_out[@]}")
if want devices; then
    run "native 1" POCL_DEVICES=pthread -- "$app" "${in[@]}"
    run "native 2" "$two" -- "$app" "${in[@]}"
    for pd in 1x1 2x1 2x2 4x2 8x2 16x2; do
        run "vocl $pd" -- "$vocl_run" -n "${pd%x*}" -d "${pd#*x}" -- "$app" "${in[@]}" --order shuffle:7
    done
fi

# ---- issue 38 ----
# 5. Each analysis once against the CPU reference over the files the
# timing runs below use (they skip it; report.py checks their hashes).
if want verify; then
    run "verify heavy 3e5" "$two" -- "$app" --analysis heavy --input "$data/e3e5.h5" --seed 1 \
        --no-progress "${cd_out[@]}"
    run "verify tth 1e6" "$two" -- "$app" --input "$data/e1e6.h5" --seed 1 --no-progress \
        --threads 6 "${cd_out[@]}"
    run "verify light 1e6" "$two" -- "$app" --analysis light --input "$data/e1e6.h5" --seed 1 \
        --no-progress --threads 6 "${cd_out[@]}"
fi

# 6. Reordering on the heavy analysis, 3 x 10^5 events: the written order
# kept, reordered at run time, and the best order found offline, which is
# the faster of two fixed orders timed here: the good one by hand, and the
# order an adaptive run ended with (from its -props.txt), replayed by name.
in=(--analysis heavy --input "$data/e3e5.h5" --seed 1 --no-progress --no-verify "${cd_out[@]}")
want heavy-written && for r in $(seq "$repeats"); do
    run "heavy written fixed" "$two" -- "$app" "${in[@]}" --no-adapt
done
if want heavy; then
    run "heavy probe" "$two" -- "$app" "${in[@]}"
    final=$(awk 'NR > 1 { print $1 }' "$data/hep-tth-heavy-props.txt" | paste -sd,)
    for r in $(seq "$repeats"); do
        run "heavy written adapt" "$two" -- "$app" "${in[@]}"
        run "heavy good fixed" "$two" -- "$app" "${in[@]}" --order good --no-adapt
        run "heavy final fixed" "$two" -- "$app" "${in[@]}" --order "$final" --no-adapt
    done
fi

# 7. DS/DP: the adaptive split against every fixed split of 6 threads,
# 10^6 events: tth from the bad and from the good order (compute-bound),
# and the light analysis (data-bound).
for order in bad good light; do
    want split-$order || continue
    in=(--input "$data/e1e6.h5" --seed 1 --no-progress --threads 6 --no-verify "${cd_out[@]}")
    [[ $order == light ]] && in+=(--analysis light) || in+=(--order $order)
    for r in $(seq "$repeats"); do
        run "split $order adapt" "$two" -- "$app" "${in[@]}"
        for k in 1 2 3 4 5; do
            run "split $order $k" "$two" -- "$app" "${in[@]}" --ds-threads $k
        done
    done
done

# 8. The same through vocl-run -n 2 -d 1 (two proxies of one PoCL device
# each): heavy orders at 3 x 10^5 events, and at 10^6 the light splits and
# light without the setup queue (HEP_RNG_SAME_QUEUE=1: uploads wait behind
# the other slot's batch).
v=("$vocl_run" -n 2 -d 1 --)
if want vocl-heavy; then
    in=(--analysis heavy --input "$data/e3e5.h5" --seed 1 --no-progress "${cd_out[@]}")
    run "vocl2x1 verify heavy" -- "${v[@]}" "$app" "${in[@]}"
    for r in $(seq "$repeats"); do
        run "vocl2x1 heavy written fixed" -- "${v[@]}" "$app" "${in[@]}" --no-verify --no-adapt
        run "vocl2x1 heavy written adapt" -- "${v[@]}" "$app" "${in[@]}" --no-verify
        run "vocl2x1 heavy good fixed" -- "${v[@]}" "$app" "${in[@]}" --no-verify --order good \
            --no-adapt
    done
fi
if want vocl-light; then
    in=(--analysis light --input "$data/e1e6.h5" --seed 1 --no-progress --threads 6 "${cd_out[@]}")
    run "vocl2x1 verify light" -- "${v[@]}" "$app" "${in[@]}"
    in+=(--no-verify)
    for r in $(seq "$repeats"); do
        run "vocl2x1 light adapt" -- "${v[@]}" "$app" "${in[@]}"
        for k in 1 3 5; do
            run "vocl2x1 light $k" -- "${v[@]}" "$app" "${in[@]}" --ds-threads $k
        done
        run "vocl2x1 light adapt, one queue" HEP_RNG_SAME_QUEUE=1 -- "${v[@]}" "$app" "${in[@]}"
    done
fi

results=${RESULTS:-$out/results.md}
python3 "$(dirname "$0")/report.py" "$runs" >"$results"
echo "wrote $results"
