#!/bin/bash
# table.sh: docs/report/allpairs/results.md from runs.txt (run.sh's output).
#   docs/report/allpairs/table.sh [OUT_DIR]
# eff/p is Rocket's system efficiency (T_min / p) / T; eff/1 is T_min / T,
# the run against one device's bound (see README: the p devices here share
# 2 CPU cores).
out=${1:-docs/report/allpairs}
awk -F' [|] ' '
function f(line, name) {
    if (match(line, " " name "=[^ ]*")) return substr(line, RSTART + length(name) + 2, RLENGTH - length(name) - 2)
    return "-"
}
BEGIN {
    print "| run | where | devices | seconds | pairs/s | R | loads | hit device % | hit host % | hit peer % | bytes host | bytes peer | T_min s | eff/p | eff/1 |"
    print "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
}
{
    r = $4
    if (r !~ /^RESULT/) { printf "| %s | %s | - | %s |||||||||||\n", $1, $2, r; next }
    t = f(r, "t_min"); s = f(r, "seconds")
    printf "| %s | %s | %s | %.3f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %.3f |\n", $1, $2,
        f(r, "devices"), s, f(r, "pairs_per_s"), f(r, "R"), f(r, "loads"), f(r, "hit_device"),
        f(r, "hit_host"), f(r, "hit_peer"), f(r, "bytes_host"), f(r, "bytes_peer"), t,
        f(r, "efficiency"), (s > 0 ? t / s : 0)
}' "$out/runs.txt" >"$out/results.md"
echo "wrote $out/results.md"
