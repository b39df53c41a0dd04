#!/usr/bin/env bash
# same-node.sh - a daemon's bandwidth on its own node against native, in
# alternating runs: vocl-bench-worker's bandwidth section (16, 32 and
# 64 MiB) natively, under LD_PRELOAD through one daemon (voclproxyd
# --listen, one PoCL device), and in job mode (vocl-run -n 1 -d 1, the
# MPICH build), ROUNDS times (default 8); SIZES (default 16M,32M,64M) the
# sizes.  Prints each run's CSV lines, then the median of each figure and
# its ratio to native.  Run from the repository root after building
# build-ompi (meson setup -Dmpi=any) and build (Debian's MPICH):
#   docs/report/daemon/same-node.sh > docs/report/daemon/same-node.txt
set -u
source "$(dirname "$0")/ns.sh"
daemon a
uptime
w=(tools/bench/vocl-bench-worker --sections bw --sizes ${SIZES:-16M,32M,64M})
for round in $(seq "${ROUNDS:-8}"); do
    POCL_DEVICES=pthread "${w[@]}" | sed "s/^bw,/native,$round,/" | grep '^native'
    VOCL_PROXIES=a LD_PRELOAD=libvocl/libvocl.so.0.1.0 "${w[@]}" | sed "s/^bw,/daemon,$round,/" |
        grep '^daemon'
    (cd ../build && HYDRA_LAUNCHER=fork HWLOC_COMPONENTS=-opencl \
        timeout 120 tools/vocl-run -n 1 -d 1 -- "${w[@]}" 2>/dev/null) |
        sed "s/^bw,/job,$round,/" | grep '^job'
done | tee "$tmp/runs"
uptime
python3 - "$tmp/runs" <<'PY'
import statistics, sys
got = {}
for line in open(sys.argv[1]):
    who, _, way, size, value, _ = line.strip().split(",")
    got.setdefault((way, int(size)), {}).setdefault(who, []).append(float(value))
print("median of %d rounds, GB/s: native; daemon, its ratio; job mode, its ratio"
      % len(got[next(iter(got))]["native"]))
for (way, size), v in sorted(got.items()):
    n, d, j = (statistics.median(v[k]) for k in ("native", "daemon", "job"))
    print("%-5s %3d MiB  %6.1f  %6.1f %.2fx  %6.1f %.2fx"
          % (way, size >> 20, n / 1e9, d / 1e9, d / n, j / 1e9, j / n))
PY
