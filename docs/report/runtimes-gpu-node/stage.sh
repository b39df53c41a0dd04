#!/bin/bash
# stage.sh - pack what run.sh needs on a GPU node that has neither MPICH,
# the OpenCL ICD loader nor PoCL (the lent machine: an Ubuntu image with
# NVIDIA's driver and nothing that can be fetched), into .gpu/ of the
# source tree, which .git/info/exclude must ignore:
#
#   .gpu/sys.tar.xz    Debian 12's MPICH (hydra, UCX), ocl-icd, PoCL 3.1
#                      with LLVM 15 and HDF5's library, under lib/ share/ bin/
#   .gpu/stubs/        stand-ins for libxml2, libz3 and libcurl (stubs.py)
#   .gpu/build.tar.xz  the programs of build/ that run.sh and ../gpu/lease.sh run
#
#   docs/report/runtimes-gpu-node/stage.sh [build]   (from the source tree, after ninja -C build;
#                                                     "build": only build.tar.xz again)
#
# Only the kernel library variants for AVX2 and AVX-512 CPUs are kept (an
# H100 node's host has one of them); the whole stays under the 64 MiB a
# call may carry.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${DEST:-.gpu}
pack_build() {
    tar -cf - --exclude='*.p' build/tools/vocl-run build/tools/guard/vocl-guard build/proxyd/voclproxyd \
        build/libvocl/libvocl.so* build/libvocl/*.icd build/examples/allpairs/allpairs-prnu \
        build/examples/dag/dag-nbody build/examples/hep/hep-tth build/examples/kmer/kmer-assemble \
        build/examples/kmer/kmer-gen build/tools/bench/vocl-bench build/tools/bench/vocl-bench-worker \
        build/tools/bench/mpi-pingpong | xz -9 -T0 >"$dest/build.tar.xz"
}
[ "${1:-}" = build ] && { pack_build; exit; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pkgs="libpocl2 libpocl2-common libllvm15 libclang-cpp15 libhwloc15 libltdl7 libedit2
      libmpich12 libucx0 libnuma1 mpich libslurm38 ocl-icd-libopencl1
      libhdf5-103-1 libsz2 libaec0"
(cd "$work" && apt-get download $pkgs >/dev/null)
mkdir -p "$work/x"
for d in "$work"/*.deb; do dpkg -x "$d" "$work/x"; done
L=$work/x/usr/lib/x86_64-linux-gnu
S=$work/stage
mkdir -p "$S/lib/x86_64-linux-gnu" "$S/share/pocl" "$S/bin"
for f in libLLVM-15.so.1 libedit.so.2 libhwloc.so.15 libltdl.so.7 libpocl.so.2 libmpich.so.12 \
    libucp.so.0 libuct.so.0 libucs.so.0 libucm.so.0 libnuma.so.1 libslurm.so.38 libOpenCL.so.1 \
    libhdf5_serial.so.103 libsz.so.2 libaec.so.0; do
    cp -L "$L/$f" "$S/lib/x86_64-linux-gnu/"
done
cp -L "$work/x/usr/lib/llvm-15/lib/libclang-cpp.so.15" "$S/lib/x86_64-linux-gnu/"
cp -a "$L/pocl" "$L/ucx" "$S/lib/x86_64-linux-gnu/"
cp -a "$work/x/usr/share/pocl/include" "$work/x/usr/share/pocl/kernel-x86_64-pc-linux-gnu-avx2.bc" \
    "$work/x/usr/share/pocl/kernel-x86_64-pc-linux-gnu-avx512.bc" "$S/share/pocl/"
cp -a "$work/x/usr/bin/mpiexec.hydra" "$work/x/usr/bin/hydra_pmi_proxy" "$S/bin/"
ln -s mpiexec.hydra "$S/bin/mpiexec"
mkdir -p "$dest/stubs"
python3 "$here/stubs.py" "$dest/stubs" libxml2.so.2 'LIBXML2|^xml' "$S/lib/x86_64-linux-gnu/libLLVM-15.so.1"
python3 "$here/stubs.py" "$dest/stubs" libz3.so.4 '^Z3_' "$S/lib/x86_64-linux-gnu/libLLVM-15.so.1"
python3 "$here/stubs.py" "$dest/stubs" libcurl.so.4 'CURL' "$S/lib/x86_64-linux-gnu/libhdf5_serial.so.103"
tar -C "$S" -cf - . | xz -9 -T0 >"$dest/sys.tar.xz"
pack_build
du -ab "$dest"
