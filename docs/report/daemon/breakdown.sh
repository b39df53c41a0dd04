#!/usr/bin/env bash
# breakdown.sh - where the microseconds of a blocking 4-byte read go on one
# node: through a daemon (voclproxyd --listen, Open MPI between two
# separately started programs), and in job mode on Open MPI and on
# Debian's MPICH (vocl-run), each against native in turn (vocl-bench
# --breakdown, ROUNDS rounds, default 5); and raw MPI's 4-byte round trip
# between two programs started alone that meet through ompi-server, as a
# client and its daemon do (mpi-pingpong --accept/--connect, 3 runs).  Run from the repository root
# with build-ompi (meson setup -Dmpi=any) and build (MPICH) built:
#   docs/report/daemon/breakdown.sh > docs/report/daemon/breakdown.txt
set -u
export HWLOC_COMPONENTS=-opencl HYDRA_LAUNCHER=fork
rounds=${ROUNDS:-5}
# Open MPI kept on loopback, and allowed to run as root (as the tests do).
ompi=(env OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo
      OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)
uptime
echo "## raw MPI: mpi-pingpong --accept / --connect, Open MPI singletons (rtt4, seconds)"
tmp=$(mktemp -d)
"${ompi[@]}" ompi-server --no-daemonize -r "$tmp/ns.uri" & server=$!
trap 'kill $server 2>/dev/null; rm -rf "$tmp"' EXIT
for _ in $(seq 100); do [ -s "$tmp/ns.uri" ] && break; sleep 0.1; done
for r in 1 2 3; do
    pp=("${ompi[@]}" OMPI_MCA_pmix_server_uri="file:$tmp/ns.uri" build-ompi/tools/bench/mpi-pingpong
        --sizes 4K)
    "${pp[@]}" --accept "pp$r" >"$tmp/accept" 2>&1 & acceptor=$!
    for _ in $(seq 100); do grep -q 'listening on' "$tmp/accept" && break; sleep 0.1; done
    timeout 60 "${pp[@]}" --connect "pp$r" | grep '^lat,rtt4'
    wait $acceptor
done
echo "## daemon mode (build-ompi)"
"${ompi[@]}" build-ompi/tools/bench/vocl-bench --daemons 1 --breakdown --rounds "$rounds" 2>/dev/null
echo "## job mode, Open MPI (build-ompi, MPIEXEC=mpiexec.openmpi)"
"${ompi[@]}" MPIEXEC=mpiexec.openmpi build-ompi/tools/bench/vocl-bench --breakdown \
    --rounds "$rounds" 2>/dev/null
echo "## job mode, MPICH (build)"
build/tools/bench/vocl-bench --breakdown --rounds "$rounds" 2>/dev/null
uptime
