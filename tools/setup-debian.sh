#!/bin/sh
# setup-debian.sh - install what VOCL needs to build, test and run, from
# Debian 12's packages.  Installs only what is missing; needs root or sudo.
set -eu
pkgs="build-essential meson ninja-build pkg-config python3 mpich libmpich-dev libucx-dev ucx-utils
      ocl-icd-opencl-dev opencl-headers pocl-opencl-icd libcmocka-dev clinfo man-db"
# Slurm's plugin headers (tools/slurm's SPANK plugin): headers and a
# library only, no service.
pkgs="$pkgs libslurm-dev"
# The external suite: independently written OpenCL clients (tests/external).
pkgs="$pkgs piglit clpeak clblast-tests hashcat python3-pyopencl python3-numpy"
# PyOpenCL's own tests (suite pyopencl-upstream).
pkgs="$pkgs python-pyopencl-doc python3-pytest"
# The HEP runtime's events files (examples/hep).
pkgs="$pkgs libhdf5-dev"
# The stacks of a test's program that hangs, in the test's output.
pkgs="$pkgs gdb"
# vocl-report's plots.
pkgs="$pkgs python3-matplotlib"
# The fuzz targets (-Dfuzz=true, tests/fuzz): clang and its libFuzzer runtime.
pkgs="$pkgs clang libclang-rt-14-dev"
# --cluster: what the cluster suite's Slurm test needs (tests/cluster,
# vocl-cluster(1)).  Not by default: on a machine with systemd these
# packages enable and start munged and slurmctld/slurmd services of the
# machine's own, which a developer's machine does not want; vocl-cluster
# runs daemons of its own with its own key and configuration.
# --openmpi: Open MPI's headers and library, for CI's build against it
# (meson setup -Dmpi=any).  Only to build: MPICH stays the MPI that runs
# the tests.  libopenmpi-dev pulls in openmpi-bin, whose mpirun/mpiexec
# and mpicc alternatives have a higher priority than MPICH's and would take
# over in auto mode; MPICH's are pinned (manual mode) before and after.
openmpi=""
for arg in "$@"; do
    case "$arg" in
        --cluster) pkgs="$pkgs iproute2 munge slurmctld slurmd slurm-client" ;;
        --openmpi) openmpi=1 pkgs="$pkgs libopenmpi-dev" ;;
    esac
done
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
# pin_mpich: every MPI alternative that has an MPICH choice gets that one.
pin_mpich() {
    arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
    for pin in mpirun=/usr/bin/mpirun.mpich mpi=/usr/bin/mpicc.mpich \
               "mpi-$arch=/usr/include/$arch/mpich"; do
        if update-alternatives --list "${pin%%=*}" 2>/dev/null | grep -qx "${pin#*=}"; then
            $SUDO update-alternatives --quiet --set "${pin%%=*}" "${pin#*=}"
        fi
    done
}
[ -n "$openmpi" ] && pin_mpich
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && { echo "setup-debian: all packages present"; exit 0; }
echo "setup-debian: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
[ -z "$openmpi" ] || pin_mpich
