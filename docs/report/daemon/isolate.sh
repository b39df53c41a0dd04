#!/usr/bin/env bash
# isolate.sh - a plain daemon (a) and one with --isolate (b), one PoCL
# device each, on loopback: the wall time of gemm -n 64 -r 1 (MPI_Init,
# connect, run) through each, five times in turn; two clients at once on b;
# the resident memory of a, of b and of its worker started ahead.  Run from
# the repository root after building build-ompi (meson setup -Dmpi=any).
set -u
cd "$(dirname "$0")/../../../build-ompi" || exit 1
tmp=$(mktemp -d); pids=()
trap 'for p in "${pids[@]}"; do pkill -9 -P $p; kill -9 $p; done 2>/dev/null; rm -rf $tmp' EXIT
export OMPI_MCA_oob_tcp_if_include=lo OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_btl=self,vader,tcp OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export HOME=$tmp/home VOCL_NAME_SERVER=$tmp/ns.uri TMPDIR=$tmp; mkdir -p $HOME
ompi-server --no-daemonize -r $VOCL_NAME_SERVER & pids+=($!)
for _ in $(seq 100); do [ -s $VOCL_NAME_SERVER ] && break; sleep 0.1; done
POCL_DEVICES=pthread proxyd/voclproxyd --listen --name a -v > $tmp/a.log 2>&1 & pids+=($!)
POCL_DEVICES=pthread proxyd/voclproxyd --listen --name b --isolate -v > $tmp/b.log 2>&1 & pids+=($!)
for n in a b; do for _ in $(seq 100); do grep -q 'listening on' $tmp/$n.log && break; sleep 0.1; done; done
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
