#!/bin/bash
# peak.sh BUILD APP ARGS...: runs APP under BUILD's vocl-run -n 16 -d 2 and
# prints the most threads its process had at once (sampled every 5 ms from
# /proc/PID/status), then the run's seconds= and verified= fields.
b=$1
shift
export HWLOC_COMPONENTS=-opencl HYDRA_LAUNCHER=fork
out=$(mktemp)
"$b/tools/vocl-run" -n 16 -d 2 -- "$@" >"$out" 2>&1 &
peak=0
for _ in $(seq 1 4000); do
    for p in $(pgrep -f "^$1"); do
        t=$(awk '/^Threads/{print $2}' "/proc/$p/status" 2>/dev/null)
        [ -n "$t" ] && [ "$t" -gt "$peak" ] && peak=$t
    done
    jobs -r | grep -q . || break
    sleep 0.005
done
wait
echo "peak threads $peak; $(grep -o 'seconds=[0-9.]*\|verified=[a-z]*' "$out" | tr '\n' ' ')"
rm -f "$out"
