#!/usr/bin/env bash
# relay.sh - a device-to-device copy (tools/bench/peer-copy) on two PoCL
# devices: natively, through two proxies of one job (they move the buffer
# directly), and through two daemons (the application relays it:
# libvocl/relay.c), taking turns, ROUNDS rounds (default 2).  Run from the
# repository root after building build-ompi (meson setup -Dmpi=any) for
# daemon mode, and build (Debian's MPICH) for job mode.
#   docs/report/daemon/relay.sh > docs/report/daemon/relay.txt
set -u
cd "$(dirname "$0")/../../../build-ompi" || exit 1
tmp=$(mktemp -d); pids=()
trap 'for p in "${pids[@]}"; do kill -9 $p; done 2>/dev/null; rm -rf $tmp' EXIT
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_btl=self,vader,tcp OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export HOME=$tmp/home VOCL_NAME_SERVER=$tmp/ns.uri TMPDIR=$tmp; mkdir -p $HOME
ompi-server --no-daemonize -r $VOCL_NAME_SERVER >/dev/null & pids+=($!)
for _ in $(seq 100); do [ -s $VOCL_NAME_SERVER ] && break; sleep 0.1; done
for n in a b; do
    POCL_DEVICES=pthread proxyd/voclproxyd --listen --name $n -v > $tmp/$n.log 2>&1 & pids+=($!)
done
for n in a b; do for _ in $(seq 100); do grep -q 'listening on' $tmp/$n.log && break; sleep 0.1; done; done
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
