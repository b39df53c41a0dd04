# setup.sh - sourced by run.sh and ../gpu/lease.sh on the GPU node, with
# $machine set (where the machine's description goes): unpacks what
# stage.sh packed into .gpu/ (once a boot: /tmp/vocl-sys/.unpacked), puts
# its programs and libraries first in PATH and LD_LIBRARY_PATH, and makes
# two ICD folders, /tmp/vend-pocl (PoCL) and /tmp/vend-gpu (the node's
# NVIDIA library): name one in OCL_ICD_VENDORS.
sys=/tmp/vocl-sys data=/tmp/vocl-data
mkdir -p "$sys" "$data" /tmp/vend-pocl /tmp/vend-gpu /tmp/hep-out
unpack() { # ARCHIVE DIR: with xz(1), or Python's lzma where the node has no xz
    if command -v xz >/dev/null; then xz -dc "$1" | tar -C "$2" -xf -
    else python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$1" "$2"; fi
}
if [ ! -e "$sys/.unpacked" ]; then
    unpack .gpu/sys.tar.xz "$sys" || exit 1
    unpack .gpu/build.tar.xz . || exit 1
    touch "$sys/.unpacked"
fi
lib=$sys/lib/x86_64-linux-gnu
for s in .gpu/stubs/*; do # a stand-in only where the node has no such library
    ldconfig -p | grep -q "[[:space:]]$(basename "$s") " || cp "$s" "$lib/"
done
export PATH=$sys/bin:$PATH LD_LIBRARY_PATH=$lib
export POCL_CACHE_DIR=/tmp/pocl-cache POCL_MAX_PTHREAD_COUNT=2 HWLOC_COMPONENTS=-opencl HYDRA_LAUNCHER=fork
echo "$lib/libpocl.so.2" >/tmp/vend-pocl/pocl.icd
gpu_icd=$(ldconfig -p | awk '/libnvidia-opencl.so.1 / {print $NF; exit}')
[ -n "$gpu_icd" ] || gpu_icd=$(cat /etc/OpenCL/vendors/nvidia.icd 2>/dev/null)
[ -n "$gpu_icd" ] || gpu_icd=$(ls /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 2>/dev/null | head -n 1)
echo "${GPU_ICD_OVERRIDE:-${gpu_icd:-libnvidia-opencl.so.1}}" >/tmp/vend-gpu/nvidia.icd
{
    echo "date: $(date -u)"
    echo "commit: ${COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}"
    echo "os: $(. /etc/os-release && echo "$PRETTY_NAME"), kernel $(uname -r)"
    echo "cores: $(nproc); memory: $(free -g | awk '/Mem:/ {print $2}') GiB"
    grep -m1 'model name' /proc/cpuinfo
    for v in avx512f avx2; do grep -q -w $v /proc/cpuinfo && { echo "widest vector: $v"; break; }; done
    nvidia-smi -L 2>&1
    echo "GPU ICD: $(cat /tmp/vend-gpu/nvidia.icd)"
    echo "stand-ins used: $(ls "$lib" | grep -E '^lib(xml2|z3|curl)\.' | tr '\n' ' ')"
    echo "missing libraries:"
    for f in build/proxyd/voclproxyd build/libvocl/libvocl.so build/examples/*/* "$lib"/*.so* "$lib"/pocl/*.so "$sys"/bin/*; do
        [ -f "$f" ] && [ -x "$f" -o "${f%.so*}" != "$f" ] && LD_LIBRARY_PATH=$lib:$lib/pocl ldd "$f" 2>/dev/null | grep 'not found' | sed "s|^|  $f: |"
    done
} >"$machine" 2>&1
