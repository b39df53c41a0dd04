#!/usr/bin/env bash
# nothreads.sh - a proxy that cannot start its threads (stream, replies,
# builds, watches) refuses to serve, with the reason, rather than serve
# every client on one thread that waits for them.  The limit: RLIMIT_NPROC
# of the user nobody (which counts threads), raised from 2 until the proxy
# gets past its threads.  (Under the lowest limits MPI itself may fail
# first: those runs tell nothing and are passed over.)
#   nothreads.sh VOCLPROXYD
# Needs root (setpriv, prlimit), else skipped.
set -euo pipefail
proxyd=$(realpath "$1")
fail() { echo "FAIL: $*"; exit 1; }
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! command -v prlimit >/dev/null; then
    echo "SKIP: needs root, setpriv and prlimit (util-linux)"
    exit 77
fi
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
as_nobody test -x "$proxyd" || { echo "SKIP: the user nobody cannot run $proxyd"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
mkdir -m 777 "$tmp/home"
refused='' served=''
for n in $(seq 2 64); do
    rc=0
    HOME=$tmp/home POCL_CACHE_DIR=$tmp/home/pocl POCL_DEVICES=pthread timeout 30 \
        prlimit --nproc="$n" setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$proxyd" -v >"$tmp/out" 2>&1 || rc=$?
    [ "$rc" -ne 124 ] || fail "with at most $n processes the proxy hung: $(tail -3 "$tmp/out")"
    if grep -q "cannot start the proxy's threads" "$tmp/out"; then
        [ "$rc" -eq 1 ] || fail "refused, but exit $rc: $(tail -3 "$tmp/out")"
        grep -q 'serving [0-9]* devices' "$tmp/out" && fail "refused after serving: $(cat "$tmp/out")"
        refused=$n why=$(grep "cannot start the proxy's threads" "$tmp/out")
    elif grep -q 'serving [0-9]* devices' "$tmp/out"; then
        served=$n
        break
    fi
done
[ -n "$refused" ] || fail "no limit made the proxy refuse (last run: $(tail -3 "$tmp/out"))"
[ -n "$served" ] || fail "the proxy never got past its threads (last run: $(tail -3 "$tmp/out"))"
echo "at most $refused processes: $why"
echo "started its threads with at most $served"
echo "PASS"
