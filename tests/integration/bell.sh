#!/usr/bin/env bash
# bell.sh - a proxy of the application's node naps on its bell (common/bell.h)
# and the application's requests ring it, through vocl-run -n 1 -d 1 -v,
# with vocl-bench-worker's latency section (each blocking read checked; five
# of them after 10 ms without a call, when the proxy naps):
#   1. by default: libvocl says it rings the proxy's bell, and the proxy
#      that at least 10 of its naps on the bell were ended by a ring (the
#      twenty reads after 10 ms each ring a sleeping proxy; the one other
#      ringer, a build that ends, rings once here);
#   2. VOCL_BELL=0: neither rings nor naps on a bell, and the reads are
#      still right;
#   3. VOCL_SHM=0 (the proxy takes the application for another node's): no
#      bell either.
#   bell.sh VOCL_RUN VOCL_BENCH_WORKER
set -euo pipefail
vocl_run=$1 worker=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

run() { # LABEL ENV...
    local label=$1
    shift
    if ! env "$@" timeout 120 "$vocl_run" -v -n 1 -d 1 -- "$worker" --sections lat --quick \
        >"$tmp/out" 2>&1; then
        cat "$tmp/out"
        echo "FAIL: $label: the run failed"
        exit 1
    fi
    grep -E 'bell|read4' "$tmp/out" || true
}

fail() {
    cat "$tmp/out"
    echo "FAIL: $*"
    exit 1
}

run "by default" VOCL_VERBOSE=1
grep -q 'proxy 1: its bell wakes it for each request' "$tmp/out" || fail "libvocl rings no bell"
rung=$(sed -n 's/.* naps on the bell, \([0-9]*\) ended by a ring.*/\1/p' "$tmp/out")
[[ -n $rung && $rung -ge 10 ]] || fail "${rung:-no} naps on the bell ended by a ring, not 10"
echo "ok: by default ($rung naps ended by a ring)"

for off in VOCL_BELL=0 VOCL_SHM=0; do
    run "$off" VOCL_VERBOSE=1 "$off"
    ! grep -q 'bell' "$tmp/out" || fail "$off: a bell was rung or napped on"
    echo "ok: $off"
done
