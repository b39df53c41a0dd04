#!/usr/bin/env bash
# isolate.sh - a plain daemon (a) and one with --isolate (b), one PoCL
# device each, on loopback: the wall time of gemm -n 64 -r 1 (MPI_Init,
# connect, run) through each, five times in turn; two clients at once on b;
# the resident memory of a, of b and of its worker started ahead.  Run from
# the repository root after building build-ompi (meson setup -Dmpi=any).
set -u
source "$(dirname "$0")/ns.sh"
daemon a
daemon b --isolate
sleep 2
for n in a b a b a b a b a b; do
  s=$(date +%s%N); VOCL_PROXIES=$n LD_PRELOAD=libvocl/libvocl.so.0.1.0 examples/gemm -n 64 -r 1 > $tmp/out 2>&1; e=$(date +%s%N)
  echo "$n $(( (e-s)/1000000 )) ms $(grep -o 'verified=[a-z]*' $tmp/out)"
  sleep 1.5
done
echo "-- two at once on b:"
s=$(date +%s%N)
VOCL_PROXIES=b LD_PRELOAD=libvocl/libvocl.so.0.1.0 examples/gemm -n 64 -r 1 > $tmp/o1 2>&1 & p1=$!
VOCL_PROXIES=b LD_PRELOAD=libvocl/libvocl.so.0.1.0 examples/gemm -n 64 -r 1 > $tmp/o2 2>&1 & p2=$!
wait $p1; e1=$(date +%s%N); wait $p2; e2=$(date +%s%N)
echo "b two: $(( (e1-s)/1000000 )) ms and $(( (e2-s)/1000000 )) ms $(grep -ho 'verified=[a-z]*' $tmp/o1 $tmp/o2 | tr '\n' ' ')"
ps -o rss= -p $(pgrep -f "name a -v" | head -1) | awk '{print "daemon a rss", $1/1024, "MiB"}'
for p in $(pgrep -f "name b --isolate"); do ps -o pid=,rss=,args= -p $p | awk '{print "b process", $1, $2/1024, "MiB", $NF, $(NF-1)}'; done
