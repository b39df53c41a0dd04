#!/bin/bash
# run.sh: the measurements of docs/report/dag (the DAG runtime, issue 18).
# Run from the repository root:
#
#   docs/report/dag/run.sh [OUT_DIR]          (default docs/report/dag)
#
# Environment: BUILD (default build-dag) is the build directory whose dag-*,
# plain-* and vocl-run are used; REPEATS (default 5) runs of each overhead
# pair and 3 of each native scaling point; the runs under vocl-run are made
# once each (they take seconds to start 16 proxies).
#
# It writes OUT_DIR/runs.txt (every command and its RESULT line), then
# report.py makes OUT_DIR/results.md (the tables) and OUT_DIR/scaling.png.
# Every run must say verified=yes, or the script stops.  TABLE_ONLY=1
# remakes the tables and the plot from runs.txt alone.
set -eu
out=${1:-docs/report/dag}
build=${BUILD:-build-dag}
repeats=${REPEATS:-5}
bin=$build/examples/dag
vocl_run=$build/tools/vocl-run
runs=$out/runs.txt
export HWLOC_COMPONENTS=-opencl HYDRA_LAUNCHER=fork
# (No VOCL_PEER_TIMEOUT: every proxy runs on this node, and a peer of the
# same node is dead only when its process is gone, however starved it is.)

# The applications and their sizes: each about 0.05 to 0.5 s on one PoCL
# device of this machine.
apps=(linreg matmul abcd nbody perlin knn floyd)
declare -A args=(
    [linreg]="-n 16384 -s 4096 -r 4"
    [matmul]="-n 512"
    [abcd]="-n 384"
    [nbody]="-n 8192 -s 4"
    [perlin]="-n 2048 -r 2"
    [knn]="-n 32768 -s 4096"
    [floyd]="-n 192"
)

# run LABEL ENV... -- COMMAND...: one run; appends "LABEL | COMMAND | RESULT".
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
    line=$(env "${envs[@]}" timeout 600 "$@" 2>"$out/last.err" | tail -n 1) || true
    [[ $line == RESULT\ *\ verified=yes ]] ||
        { echo "not verified: $label: $line" >&2; tail -n 30 "$out/last.err" >&2; exit 1; }
    rm -f "$out/last.err"
    echo "$label | ${envs[*]} $* | $line" >>"$runs"
    echo "$label: ${line#RESULT }" | cut -c1-150
}

pthreads() { # N: POCL_DEVICES for N pthread devices
    local devices=pthread
    for ((i = 1; i < $1; i++)); do devices+=" pthread"; done
    echo "$devices"
}

if [[ ${TABLE_ONLY:-0} != 1 ]]; then
mkdir -p "$out"
: >"$runs"

# 1. Overhead on one device: the DAG version against the plain OpenCL one,
# alternating, after one untimed run of each (PoCL compiles a kernel for
# its work-group size at the first launch and caches it).
for app in "${apps[@]}"; do
    # shellcheck disable=SC2086
    POCL_DEVICES=pthread "$bin/plain-$app" ${args[$app]} >/dev/null 2>&1
    # shellcheck disable=SC2086
    POCL_DEVICES=pthread "$bin/dag-$app" ${args[$app]} >/dev/null 2>&1
    for ((r = 0; r < repeats; r++)); do
        # shellcheck disable=SC2086
        run "overhead $app plain" POCL_DEVICES=pthread -- "$bin/plain-$app" ${args[$app]}
        # shellcheck disable=SC2086
        run "overhead $app dag" POCL_DEVICES=pthread -- "$bin/dag-$app" ${args[$app]}
    done
done

# 1b. Floyd's kernels are the shortest (a few microseconds a round at
# n = 192): the same pair again at n = 768.
POCL_DEVICES=pthread "$bin/plain-floyd" -n 768 >/dev/null 2>&1
POCL_DEVICES=pthread "$bin/dag-floyd" -n 768 >/dev/null 2>&1
for ((r = 0; r < repeats; r++)); do
    run "overhead floyd768 plain" POCL_DEVICES=pthread -- "$bin/plain-floyd" -n 768
    run "overhead floyd768 dag" POCL_DEVICES=pthread -- "$bin/dag-floyd" -n 768
done

# 2. Scaling natively: N PoCL pthread devices in the application's process.
for app in "${apps[@]}"; do
    for n in 1 2 4; do
        for ((r = 0; r < 3; r++)); do
            # shellcheck disable=SC2086
            run "native $app $n" POCL_DEVICES="$(pthreads "$n")" -- "$bin/dag-$app" ${args[$app]}
        done
    done
done

# 3. Scaling through VOCL: P proxies of K PoCL devices each, 1 to 32 devices.
for app in "${apps[@]}"; do
    for pk in 1x1 2x1 2x2 4x2 8x2 16x2; do
        # shellcheck disable=SC2086
        run "vocl $app ${pk%x*} ${pk#*x}" VOCL_VERBOSE=0 -- "$vocl_run" -n "${pk%x*}" -d "${pk#*x}" \
            -- "$bin/dag-$app" ${args[$app]}
    done
done

# 4. Each optimisation on and off: bytes per link and time, natively on 4
# devices and through VOCL on 8 and 32.
for app in "${apps[@]}"; do
    for opt in "0 0" "1 0" "0 1" "1 1"; do
        set -- $opt
        # shellcheck disable=SC2086
        run "opt $app native 4 $1 $2" POCL_DEVICES="$(pthreads 4)" DAG_DCR=$1 DAG_DHDCR=$2 -- \
            "$bin/dag-$app" ${args[$app]}
        for pk in 4x2 16x2; do
            # shellcheck disable=SC2086
            run "opt $app vocl ${pk%x*}x${pk#*x} $1 $2" DAG_DCR=$1 DAG_DHDCR=$2 -- "$vocl_run" \
                -n "${pk%x*}" -d "${pk#*x}" -- "$bin/dag-$app" ${args[$app]}
        done
    done
done

# 5. What libvocl itself counts (VOCL_PROFILE=1): the bytes the application
# sent with clEnqueueWriteBuffer, DCR on and off, dag-linreg on 8 devices.
: >"$out/profile.txt.new"
for dcr in 1 0; do
    # shellcheck disable=SC2086
    VOCL_PROFILE=1 DAG_DCR=$dcr "$vocl_run" -n 4 -d 2 -- "$bin/dag-linreg" ${args[linreg]} \
        2>&1 >/dev/null | grep -E '^clEnqueue(Write|Read|Copy)Buffer ' |
        sed "s/^/profile linreg vocl 4x2 dcr=$dcr | /" >>"$out/profile.txt.new"
done
mv "$out/profile.txt.new" "$out/profile.txt"
fi

# The tables and the plot (needs python3 with matplotlib for the plot).
/usr/bin/python3 "$(dirname "$0")/report.py" "$out"
