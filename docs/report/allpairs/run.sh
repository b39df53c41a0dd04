#!/bin/bash
# run.sh: the measurements of docs/report/allpairs (the all-pairs runtime,
# issue 17).  Run from the repository root:
#
#   docs/report/allpairs/run.sh [OUT_DIR]        (default docs/report/allpairs)
#
# BUILD (default build-allpairs): the build directory whose applications
# and vocl-run are used.  Writes OUT_DIR/runs.txt: one line per run,
# "LABEL | COMMAND | RESULT line" (or "| FAILED rc=..." when a run fails
# or passes its 180 s limit), and OUT_DIR/identical.txt: the md5 of
# allpairs-cv's Newick tree on every configuration.  The prnu and tree runs
# are made once, the fusion runs three times.  About 15 minutes.
set -u
out=${1:-docs/report/allpairs}
build=${BUILD:-build-allpairs}
apps=$build/examples/allpairs
vocl_run=$build/tools/vocl-run
runs=$out/runs.txt
mkdir -p "$out"
: >"$runs"
export HWLOC_COMPONENTS=-opencl HYDRA_LAUNCHER=fork VOCL_VERBOSE=0

# run LABEL DEVICES(native N | vocl PxK) COMMAND...
run() {
    local label=$1 where=$2
    shift 2
    local launch=()
    if [[ $where == native* ]]; then
        local devices=pthread
        for ((i = 1; i < ${where#native }; i++)); do devices+=" pthread"; done
        launch=(env POCL_DEVICES="$devices")
    else
        local pk=${where#vocl } p k
        p=${pk%x*}
        k=${pk#*x}
        launch=("$vocl_run" -n "$p" -d "$k" --)
        [[ $k -gt 1 ]] && set -- "$@" --group "$k"
    fi
    local line rc
    line=$(timeout 180 nice -n 10 "${launch[@]}" "$@" --no-progress 2>/dev/null | grep '^RESULT' | tail -n 1)
    rc=${PIPESTATUS[0]}
    [[ -n $line ]] || line="FAILED rc=$rc"
    echo "$label | $where | ${launch[*]} $* | $line" >>"$runs"
    echo "$label | $where | ${line#RESULT }" | cut -c1-200
}

prnu=("$apps/allpairs-prnu" -n 48 --size 64 --jobs 4 --calibrate 6)
# Device caches of 9 slots: 18.75 % of the 48 items.
for where in "native 1" "native 2" "vocl 1x1" "vocl 2x1" "vocl 2x2" "vocl 4x2" "vocl 8x2" "vocl 16x2"; do
    run "prnu L3 on" "$where" "${prnu[@]}" --device-slots 9 --host-slots 9 --hops 1
    run "prnu L3 off" "$where" "${prnu[@]}" --device-slots 9 --host-slots 9 --hops 0
    run "prnu host 100%" "$where" "${prnu[@]}" --device-slots 9 --host-slots 48 --hops 1
done
# One device, cache size swept, no host cache.
for slots in 5 9 13 25 49; do
    run "prnu 1 dev, $slots slots" "native 1" "${prnu[@]}" --device-slots "$slots" --host-slots 0 --jobs 2
done
# Efficiency: the compute-bound Gaussian-mixture distance, device caches
# of 9 slots (18.75 % of 48 items), a host cache that holds the data set
# (Rocket's setting), T_min from 8 calibration items.  Three runs each.
fusion=("$apps/allpairs-fusion" -n 48 --min-points 300 --max-points 600 --calibrate 8 --jobs 4)
for rep in 1 2 3; do
    for where in "native 1" "native 2" "vocl 1x1" "vocl 2x1" "vocl 2x2" "vocl 4x2" "vocl 8x2" "vocl 16x2"; do
        run "fusion" "$where" "${fusion[@]}" --device-slots 9 --host-slots 48
    done
    # One device, device cache swept, no host cache.
    for slots in 5 9 13 25 49; do
        run "fusion 1 dev, $slots slots" "native 1" "${fusion[@]}" --device-slots "$slots" \
            --host-slots 0 --jobs 2
    done
    # Four times the work per pair: what VOCL's per-job cost is against it.
    for where in "native 1" "vocl 1x1"; do
        run "fusion heavy" "$where" "$apps/allpairs-fusion" -n 48 --min-points 600 \
            --max-points 1200 --calibrate 8 --jobs 4 --device-slots 9 --host-slots 48
    done
done

# The same tree, byte for byte, everywhere.
ident=$out/identical.txt
: >"$ident"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for where in "native 1" "native 2" "vocl 1x1" "vocl 2x1" "vocl 2x2" "vocl 4x2" "vocl 8x2" "vocl 16x2"; do
    run "cv tree" "$where" "$apps/allpairs-cv" -n 16 -o "$tmp/tree.nwk"
    echo "$where md5=$(md5sum <"$tmp/tree.nwk" | cut -d' ' -f1) $(tail -n 1 "$runs" | grep -o 'devices=[0-9]*') $(tail -n 1 "$runs" | grep -o 'verified=[a-z]*')" | tee -a "$ident"
    rm -f "$tmp/tree.nwk"
done
