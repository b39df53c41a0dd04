#!/usr/bin/env bash
# job.sh - job mode on the build against Open MPI: vocl-run starts the
# application and its proxies with Open MPI's mpiexec (MPIEXEC), so one
# build serves both job mode and daemon mode.  The example applications
# verify, and the job's status is the application's.
#   job.sh MPI VOCL_RUN EXAMPLES-DIR
# MPI: the build's (openmpi or mpich); exits 77 (skipped) on MPICH, whose
# job mode every other suite runs.
set -uo pipefail
mpi=$1 vocl_run=$2 examples=$3
fail() { echo "FAIL: $*"; exit 1; }
[ "$mpi" = openmpi ] || { echo "SKIP: this build's MPI is $mpi (job mode on it: the other suites)"; exit 77; }
export MPIEXEC
MPIEXEC=$(command -v mpiexec.openmpi || command -v mpirun.openmpi) ||
    fail "no mpiexec.openmpi (openmpi-bin)"
# Open MPI on loopback only; more ranks than this machine's cores.
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo
export OMPI_MCA_btl=self,vader,tcp OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset VOCL_PROXIES VOCL_CONNECT VOCL_APP_RANKS
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run() { timeout 120 "$vocl_run" --oversubscribe "$@" >"$tmp/out" 2>&1; }
for t in "2 1 gemm -n 200 -r 2" "2 2 nbody -n 1000 -s 3" "1 2 transpose -n 1000 -r 2"; do
    set -- $t
    n=$1 d=$2 app=$3
    shift 3
    run -n "$n" -d "$d" -- "$examples/$app" "$@" || fail "$app: exit $?: $(tail -5 "$tmp/out")"
    grep -q 'devices=[0-9]* .*verified=yes' "$tmp/out" || fail "$app did not verify: $(tail -5 "$tmp/out")"
    echo "$app on $n proxies of $d devices: $(grep RESULT "$tmp/out")"
done
rc=0
run -n 1 -d 1 -- "$examples/nbody" -n 0 || rc=$?
[ "$rc" -eq 2 ] || fail "an application's exit status 2 came back as $rc: $(tail -5 "$tmp/out")"
echo "an application's usage error: vocl-run exits $rc"
echo PASS
