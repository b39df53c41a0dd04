#!/bin/bash
# run.sh - peer-copy (tools/bench) natively and through two proxies, with
# and without a backlog behind the write on device 0; BEFORE names a
# libvocl.so to run beside this build's (VOCL_LIB), taking turns, and
# BEFORE_BUILD a whole build directory (its vocl-run, proxies and library);
# SIZES the sizes (default 4K,64K,1M,16M), BACKLOGS (default "0 20").
#   docs/report/peer-copy/run.sh OUT.txt   (from the source tree, after ninja -C build)
set -u
out=${1:?usage: run.sh OUT.txt}
build=${BUILD:-build}
export HYDRA_LAUNCHER=fork HWLOC_COMPONENTS=-opencl
pc=("$build/tools/bench/peer-copy" --sizes "${SIZES:-4K,64K,1M,16M}" --reps "${REPS:-9}")
: >"$out"
for round in $(seq "${ROUNDS:-2}"); do
    for backlog in ${BACKLOGS:-0 20}; do
        { echo "## round $round, native, backlog $backlog"
          POCL_DEVICES="pthread pthread" timeout 120 "${pc[@]}" --backlog "$backlog"; } >>"$out" 2>&1
        if [ -n "${BEFORE:-}" ]; then
            { echo "## round $round, VOCL before, backlog $backlog"
              VOCL_LIB=$BEFORE timeout 300 "$build/tools/vocl-run" -n 2 -d 1 -- "${pc[@]}" --backlog "$backlog"; } >>"$out" 2>&1
        fi
        if [ -n "${BEFORE_BUILD:-}" ]; then
            { echo "## round $round, VOCL before (build), backlog $backlog"
              timeout 300 "$BEFORE_BUILD/tools/vocl-run" -n 2 -d 1 -- "${pc[@]}" --backlog "$backlog"; } >>"$out" 2>&1
        fi
        { echo "## round $round, VOCL, backlog $backlog"
          timeout 300 "$build/tools/vocl-run" -n 2 -d 1 -- "${pc[@]}" --backlog "$backlog"; } >>"$out" 2>&1
    done
done
