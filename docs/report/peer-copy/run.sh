#!/bin/bash
# run.sh - peer-copy (tools/bench) natively and through two proxies, with
# and without a backlog behind the write on device 0; BEFORE names a
# libvocl.so to run beside this build's (VOCL_LIB), taking turns.
#   docs/report/peer-copy/run.sh OUT.txt   (from the source tree, after ninja -C build)
set -u
out=${1:?usage: run.sh OUT.txt}
build=${BUILD:-build}
export HYDRA_LAUNCHER=fork HWLOC_COMPONENTS=-opencl
pc=("$build/tools/bench/peer-copy" --sizes 4K,64K,1M,16M --reps "${REPS:-9}")
: >"$out"
for round in $(seq "${ROUNDS:-2}"); do
    for backlog in 0 20; do
        { echo "## round $round, native, backlog $backlog"
          POCL_DEVICES="pthread pthread" timeout 120 "${pc[@]}" --backlog "$backlog"; } >>"$out" 2>&1
        if [ -n "${BEFORE:-}" ]; then
            { echo "## round $round, VOCL before, backlog $backlog"
              VOCL_LIB=$BEFORE timeout 300 "$build/tools/vocl-run" -n 2 -d 1 -- "${pc[@]}" --backlog "$backlog"; } >>"$out" 2>&1
        fi
        { echo "## round $round, VOCL, backlog $backlog"
          timeout 300 "$build/tools/vocl-run" -n 2 -d 1 -- "${pc[@]}" --backlog "$backlog"; } >>"$out" 2>&1
    done
done
