#!/usr/bin/env bash
# relay.sh - a device-to-device copy (tools/bench/peer-copy) on two PoCL
# devices: natively, through two proxies of one job (they move the buffer
# directly), and through two daemons (the application relays it:
# libvocl/relay.c), taking turns, ROUNDS rounds (default 2).  Run from the
# repository root after building build-ompi (meson setup -Dmpi=any) for
# daemon mode, and build (Debian's MPICH) for job mode.
#   docs/report/daemon/relay.sh > docs/report/daemon/relay.txt
set -u
source "$(dirname "$0")/ns.sh"
daemon a
daemon b
pc=(tools/bench/peer-copy --sizes 4K,64K,1M,16M --reps "${REPS:-9}")
for round in $(seq "${ROUNDS:-2}"); do
    echo "## round $round, native"
    POCL_DEVICES="pthread pthread" timeout 120 "${pc[@]}"
    echo "## round $round, job mode: vocl-run -n 2 -d 1 (proxy to proxy)"
    (cd ../build && HYDRA_LAUNCHER=fork HWLOC_COMPONENTS=-opencl \
        timeout 300 tools/vocl-run -n 2 -d 1 -- "${pc[@]}")
    echo "## round $round, daemon mode: daemons a and b (through the application)"
    VOCL_PROXIES=a,b LD_PRELOAD=libvocl/libvocl.so.0.1.0 timeout 300 "${pc[@]}"
done
