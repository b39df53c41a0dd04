#!/bin/sh
# setup-debian.sh - install what VOCL needs to build, test and run, from
# Debian 12's packages.  Installs only what is missing; needs root or sudo.
set -eu
pkgs="build-essential meson ninja-build pkg-config python3 mpich libmpich-dev
      ocl-icd-opencl-dev opencl-headers pocl-opencl-icd libcmocka-dev clinfo man-db"
# The external suite: independently written OpenCL clients (tests/external).
pkgs="$pkgs piglit clpeak clblast-tests hashcat python3-pyopencl python3-numpy"
# The HEP runtime's events files (examples/hep).
pkgs="$pkgs libhdf5-dev"
# vocl-report's plots.
pkgs="$pkgs python3-matplotlib"
# The fuzz targets (-Dfuzz=true, tests/fuzz): clang and its libFuzzer runtime.
pkgs="$pkgs clang libclang-rt-14-dev"
# --cluster: what the cluster suite's Slurm test needs (tests/cluster,
# vocl-cluster(1)).  Not by default: on a machine with systemd these
# packages enable and start munged and slurmctld/slurmd services of the
# machine's own, which a developer's machine does not want; vocl-cluster
# runs daemons of its own with its own key and configuration.
[ "${1:-}" = --cluster ] && pkgs="$pkgs iproute2 munge slurmctld slurmd slurm-client"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && { echo "setup-debian: all packages present"; exit 0; }
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "setup-debian: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
