#!/bin/bash
# auto.sh: the third level forced off (--hops 0), forced on (--hops 1) and
# left to auto (the default), side by side (issue 38: an optimisation that
# moves fewer bytes must be at least as fast as without it, or turn itself
# off).  Run from the repository root:
#
#   docs/report/allpairs/auto.sh [OUT_DIR]       (default docs/report/allpairs)
#
# BUILD (default build-rt2): the build directory whose allpairs-prnu and
# vocl-run are used; REPEATS (default 3) rounds, each running the three
# settings one after the other (off, on, auto), so that a slow spell of the
# machine touches all three alike.  WHERE (default "native:2 2x1 4x1 4x2
# 16x2"): the configurations, native:N for N PoCL devices in one process,
# PxK for vocl-run -n P -d K.  Writes OUT_DIR/auto-runs.txt (every run:
# where, setting, seconds, the RESULT line and auto's decision line) and
# prints the table of medians.
set -eu
out=${1:-docs/report/allpairs}
build=${BUILD:-build-rt2}
repeats=${REPEATS:-3}
where=${WHERE:-native:2 2x1 4x1 4x2 16x2}
prnu=$build/examples/allpairs/allpairs-prnu
vocl_run=$build/tools/vocl-run
runs=$out/auto-runs.txt
export HWLOC_COMPONENTS=-opencl HYDRA_LAUNCHER=fork VOCL_VERBOSE=0
mkdir -p "$out"
: >"$runs"

for w in $where; do
    launch=() group=1
    if [[ $w == native:* ]]; then
        devices=pthread
        for ((i = 1; i < ${w#native:}; i++)); do devices+=" pthread"; done
        launch=(env POCL_DEVICES="$devices")
    else
        launch=("$vocl_run" -n "${w%x*}" -d "${w#*x}" --)
        group=${w#*x}
    fi
    for ((r = 0; r < repeats; r++)); do
        for setting in off on auto; do
            case $setting in
            off) hops=(--hops 0) ;;
            on) hops=(--hops 1) ;;
            auto) hops=() ;;
            esac
            cmd=("${launch[@]}" "$prnu" -n 48 --size 64 --jobs 4 --device-slots 9 --host-slots 9
                "${hops[@]}" --group "$group" --no-progress)
            all=$(timeout 300 "${cmd[@]}" 2>&1) || { echo "FAILED: ${cmd[*]}" >&2; exit 1; }
            result=$(grep '^RESULT ' <<<"$all" | tail -n 1)
            [[ $result == *verified=yes ]] || { echo "not verified: ${cmd[*]}" >&2; exit 1; }
            decision=$(grep -o 'third level .*' <<<"$all" || true)
            seconds=$(sed 's/.* seconds=\([^ ]*\).*/\1/' <<<"$result")
            echo "$w | $setting | $seconds | ${cmd[*]} | $result | $decision" >>"$runs"
            echo "$w $setting $seconds $decision"
        done
    done
done

# The table: medians of each setting, and auto's decisions.
python3 - "$runs" <<'PY'
import statistics, sys, re
rows = {}
for line in open(sys.argv[1]):
    w, setting, seconds, cmd, result, decision = [f.strip() for f in line.split(" | ")]
    r = rows.setdefault(w, {"off": [], "on": [], "auto": [], "decisions": []})
    r[setting].append(float(seconds))
    if setting == "auto":
        m = re.match(r"third level (on|off): .* takes (\d+) us, a load (\d+) us .*"
                     r"copy/load ([\d.]+); measured in (\d+) ms", decision)
        r["decisions"].append("%s (%s/%s us, %s, %s ms)" % m.groups() if m else "-")
print("| where | --hops 0 | --hops 1 | auto | auto / best forced | auto's decisions (fastest copy/load, median copy/load side by side, time to measure) |")
print("|---|---:|---:|---:|---:|---|")
for w, r in rows.items():
    med = {k: statistics.median(r[k]) for k in ("off", "on", "auto")}
    best = min(med["off"], med["on"])
    print("| %s | %.3f | %.3f | %.3f | %.2f | %s |" % (
        w, med["off"], med["on"], med["auto"], med["auto"] / best, ", ".join(r["decisions"])))
PY
