#!/bin/bash
# auto.sh: DCR and DHDCR both forced off, both forced on, and left to auto
# (DAG_DCR and DAG_DHDCR unset), side by side for dag-linreg and dag-floyd
# (issue 38: an optimisation that moves fewer bytes must be at least as
# fast as without it, or turn itself off).  Run from the repository root:
#
#   docs/report/dag/auto.sh [OUT_DIR]            (default docs/report/dag)
#
# BUILD (default build-rt2): the build directory whose dag-* and vocl-run
# are used; REPEATS (default 3) rounds, each running the three settings one
# after the other (off, on, auto), so that a slow spell of the machine
# touches all three alike.  WHERE (default "native:2 2x1 4x1 16x2"): the
# configurations, native:N for N PoCL devices in one process, PxK for
# vocl-run -n P -d K.  APPS (default "linreg floyd").  Writes
# OUT_DIR/auto-runs.txt (every run: app, where, setting, seconds, the
# RESULT line and auto's decision line) and prints the table of medians.
# Every run must verify, and all runs of an application must give one
# checksum, or the script stops.
set -eu
out=${1:-docs/report/dag}
build=${BUILD:-build-rt2}
repeats=${REPEATS:-3}
where=${WHERE:-native:2 2x1 4x1 16x2}
apps=${APPS:-linreg floyd}
bin=$build/examples/dag
vocl_run=$build/tools/vocl-run
runs=$out/auto-runs.txt
export HWLOC_COMPONENTS=-opencl HYDRA_LAUNCHER=fork VOCL_VERBOSE=0
mkdir -p "$out"
: >"$runs"
# The sizes of run.sh.
declare -A args=([linreg]="-n 16384 -s 4096 -r 4" [floyd]="-n 192")

for app in $apps; do
    sum=
    for w in $where; do
        if [[ $w == native:* ]]; then
            devices=pthread
            for ((i = 1; i < ${w#native:}; i++)); do devices+=" pthread"; done
            launch=(env POCL_DEVICES="$devices")
        else
            launch=("$vocl_run" -n "${w%x*}" -d "${w#*x}" --)
        fi
        for ((r = 0; r < repeats; r++)); do
            for setting in off on auto; do
                case $setting in
                off) envs=(DAG_DCR=off DAG_DHDCR=off) ;;
                on) envs=(DAG_DCR=on DAG_DHDCR=on) ;;
                auto) envs=(-u DAG_DCR -u DAG_DHDCR) ;;
                esac
                # shellcheck disable=SC2086
                cmd=(env "${envs[@]}" "${launch[@]}" "$bin/dag-$app" ${args[$app]})
                all=$(timeout 300 "${cmd[@]}" 2>&1) || { echo "FAILED: ${cmd[*]}" >&2; exit 1; }
                result=$(grep '^RESULT ' <<<"$all" | tail -n 1)
                [[ $result == *verified=yes ]] || { echo "not verified: ${cmd[*]}" >&2; exit 1; }
                s=$(sed 's/.* checksum=\([^ ]*\).*/\1/' <<<"$result")
                [[ -z $sum || $s == "$sum" ]] || { echo "checksum $s, not $sum: ${cmd[*]}" >&2; exit 1; }
                sum=$s
                decision=$(grep -o '^dag: DCR .*' <<<"$all" || true)
                seconds=$(sed 's/.* seconds=\([^ ]*\).*/\1/' <<<"$result")
                echo "$app | $w | $setting | $seconds | ${cmd[*]} | $result | $decision" >>"$runs"
                echo "$app $w $setting $seconds $decision"
            done
        done
    done
done

# The table: medians of each setting, and auto's decisions.
python3 - "$runs" <<'PY'
import statistics, sys, re
rows = {}
for line in open(sys.argv[1]):
    app, w, setting, seconds, cmd, result, decision = [f.strip() for f in line.split(" | ")]
    r = rows.setdefault((app, w), {"off": [], "on": [], "auto": [], "decisions": []})
    r[setting].append(float(seconds))
    if setting == "auto":
        m = re.match(r"dag: DCR (on|off), DHDCR (on|off): .* takes (\d+) us, a write (\d+) us, "
                     r"a read \d+ us, copy/write ([\d.]+); measured in (\d+) ms", decision)
        r["decisions"].append("%s/%s (%s/%s us, %s, %s ms)" % m.groups() if m else "-")
print("| app | where | both off | both on | auto | auto / best forced | auto's DCR/DHDCR (fastest copy/write, median copy/write side by side, time to measure) |")
print("|---|---|---:|---:|---:|---:|---|")
for (app, w), r in rows.items():
    med = {k: statistics.median(r[k]) for k in ("off", "on", "auto")}
    best = min(med["off"], med["on"])
    print("| %s | %s | %.3f | %.3f | %.3f | %.2f | %s |" % (
        app, w, med["off"], med["on"], med["auto"], med["auto"] / best, ", ".join(r["decisions"])))
PY
