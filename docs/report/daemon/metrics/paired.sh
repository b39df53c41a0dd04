#!/usr/bin/env bash
# paired.sh [BUILD [ROUNDS]]: what voclproxyd --metrics-file costs a
# daemon's 4-byte round trip.  Each round runs `vocl-bench --daemons 1
# --sections lat` three times, in an order that turns each round: the
# daemon without metrics (off), with --metrics-file at its default
# interval (5 s: on), and written every 0.1 s (on-0.1s, fifty times the
# default's writes, to make a cost visible).  One line a run (native and
# VOCL medians of the blocking 4-byte read, microseconds), then per
# configuration the median over the rounds of VOCL, of VOCL less native
# (the device's own read taken out), and of the difference to the same
# round's off run.
set -euo pipefail
build=${1:-build} rounds=${2:-10}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bench=$build/tools/bench/vocl-bench

# run ROUND LABEL [DAEMON-OPTION...]: one vocl-bench run; its line.
run() {
    local round=$1 label=$2 o
    shift 2
    local opts=()
    for o in "$@"; do opts+=("--daemon-option=$o"); done
    "$bench" --daemons 1 --sections lat --csv "$tmp/run.csv" ${opts[@]+"${opts[@]}"} \
        >"$tmp/run.log" 2>&1 || { cat "$tmp/run.log"; exit 1; }
    python3 - "$tmp/run.csv" "$round" "$label" <<'PY'
import csv, sys
for row in csv.DictReader(open(sys.argv[1])):
    if row["metric"] == "read 4 B, blocking":
        print(sys.argv[2], sys.argv[3], "%.1f" % (float(row["native"]) * 1e6),
              "%.1f" % (float(row["vocl"]) * 1e6))
PY
}

configs=(off on on-0.1s)
for r in $(seq "$rounds"); do
    for k in 0 1 2; do
        c=${configs[$(((r + k) % 3))]}
        case $c in
        off) run "$r" off ;;
        on) run "$r" on "--metrics-file=$tmp/m.prom" ;;
        on-0.1s) run "$r" on-0.1s "--metrics-file=$tmp/m.prom" --metrics-interval=0.1 ;;
        esac
    done
done | tee "$tmp/runs"
python3 - "$tmp/runs" <<'PY'
import statistics as st, sys
runs = {}
for line in open(sys.argv[1]):
    r, label, native, vocl = line.split()
    runs.setdefault(label, {})[int(r)] = (float(native), float(vocl))
off = runs["off"]
print()
print("| daemon | VOCL, median | VOCL less native, median | against the same round's off, median |")
print("|---|---:|---:|---:|")
for label in ("off", "on", "on-0.1s"):
    rs = runs[label]
    vocl = st.median(v for _, v in rs.values())
    less = st.median(v - n for n, v in rs.values())
    diff = st.median((rs[r][1] - rs[r][0]) - (off[r][1] - off[r][0]) for r in rs if r in off)
    print("| %s | %.1f us | %.1f us | %s |" % (label, vocl, less,
          "-" if label == "off" else "%+.1f us" % diff))
PY
