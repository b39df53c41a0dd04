#!/usr/bin/python3
"""plot.py: the medians of run.sh's fusion runs as summary.md (tables) and
efficiency.png (efficiency and R against device count and cache size).

    /usr/bin/python3 docs/report/allpairs/plot.py [OUT_DIR]

/usr/bin/python3 because Debian's python3-matplotlib is installed for it;
without matplotlib only summary.md is written.
"""
import os
import re
import statistics
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "docs/report/allpairs"
runs = {}  # (label, where) -> list of RESULT field dicts
with open(os.path.join(out, "runs.txt")) as f:
    for line in f:
        label, where, _command, result = line.rstrip("\n").split(" | ", 3)
        if result.startswith("RESULT"):
            runs.setdefault((label, where), []).append(dict(re.findall(r"(\w+)=(\S+)", result)))


def values(label, where, name):
    return sorted(float(r[name]) for r in runs.get((label, where), []))


def med(label, where, name):
    v = values(label, where, name)
    return statistics.median(v) if v else None


def cell(label, where, name, fmt="%.3f"):
    v = values(label, where, name)
    if not v:
        return "-"
    if len(v) == 1:
        return fmt % v[0]
    return (fmt + " (" + fmt + "-" + fmt + ")") % (statistics.median(v), v[0], v[-1])


def eff1(label, where):
    """T_min / T of each run (its own calibration), as a cell."""
    v = sorted(float(r["t_min"]) / float(r["seconds"]) for r in runs.get((label, where), []))
    if not v:
        return "-"
    return "%.3f (%.3f-%.3f)" % (statistics.median(v), v[0], v[-1])


WHERE = ["native 1", "native 2", "vocl 1x1", "vocl 2x1", "vocl 2x2", "vocl 4x2", "vocl 8x2",
         "vocl 16x2"]
SLOTS = [5, 9, 13, 25, 49]
lines = ["Medians of the runs in runs.txt, (lowest-highest) in brackets.", "",
         "## fusion, device caches 9 slots (18.75 %), host cache 48", "",
         "| where | devices | runs | seconds | R | eff/p = (T_min/p)/T | eff/1 = T_min/T |",
         "|---|---:|---:|---:|---:|---:|---:|"]
for w in WHERE:
    n = len(runs.get(("fusion", w), []))
    if n:
        lines.append("| %s | %d | %d | %s | %s | %s | %s |" % (
            w, med("fusion", w, "devices"), n, cell("fusion", w, "seconds"),
            cell("fusion", w, "R"), cell("fusion", w, "efficiency"), eff1("fusion", w)))
lines += ["", "## fusion, four times the work per pair", "",
          "| where | runs | seconds | T_min s | efficiency |", "|---|---:|---:|---:|---:|"]
for w in ["native 1", "vocl 1x1"]:
    n = len(runs.get(("fusion heavy", w), []))
    if n:
        lines.append("| %s | %d | %s | %s | %s |" % (
            w, n, cell("fusion heavy", w, "seconds"), cell("fusion heavy", w, "t_min"),
            cell("fusion heavy", w, "efficiency")))
lines += ["", "## fusion on one device, device cache swept, no host cache", "",
          "| device slots | % of 48 | R | hit device % | efficiency |", "|---:|---:|---:|---:|---:|"]
for s in SLOTS:
    label = "fusion 1 dev, %d slots" % s
    if runs.get((label, "native 1")):
        lines.append("| %d | %.0f | %s | %s | %s |" % (
            s, 100.0 * min(s, 48) / 48, cell(label, "native 1", "R"),
            cell(label, "native 1", "hit_device", "%.1f"), cell(label, "native 1", "efficiency")))
with open(os.path.join(out, "summary.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
print("wrote", os.path.join(out, "summary.md"))

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError as exc:
    print("no plot: %s cannot import matplotlib (%s)" % (sys.executable, exc), file=sys.stderr)
    sys.exit(0)

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
vocl = [w for w in WHERE if w.startswith("vocl") and runs.get(("fusion", w))]
p = [med("fusion", w, "devices") for w in vocl]
left.plot(p, [med("fusion", w, "efficiency") for w in vocl], "o-", label="eff/p = (T_min/p)/T")
eff1 = [statistics.median(float(r["t_min"]) / float(r["seconds"]) for r in runs[("fusion", w)])
        for w in vocl]
left.plot(p, eff1, "s--", label="eff/1 = T_min/T")
native = [w for w in WHERE if w.startswith("native") and runs.get(("fusion", w))]
left.plot([med("fusion", w, "devices") for w in native],
          [med("fusion", w, "efficiency") for w in native], "^", label="eff/p, native")
left.set_xscale("log", base=2)
left.set_xlabel("virtual GPUs (vocl-run, 2 CPU cores in all)")
left.set_ylabel("efficiency")
left.set_ylim(0, max([1.1] + [e * 1.1 for e in eff1]))
ax = left.twinx()
ax.plot(p, [med("fusion", w, "R") for w in vocl], "x:", color="grey", label="R")
ax.set_ylabel("R = loads / n")
ax.set_ylim(0, max(2.0, max(med("fusion", w, "R") for w in vocl) * 1.2))
left.legend(loc="lower left", fontsize=8)
ax.legend(loc="lower right", fontsize=8)
left.set_title("fusion, n = 48, device caches 18.75 %")

sl = [s for s in SLOTS if runs.get(("fusion 1 dev, %d slots" % s, "native 1"))]
pct = [100.0 * min(s, 48) / 48 for s in sl]
right.plot(pct, [med("fusion 1 dev, %d slots" % s, "native 1", "efficiency") for s in sl], "o-",
           label="efficiency")
right.set_xlabel("device cache, % of the data set (one device, no host cache)")
right.set_ylabel("efficiency")
right.set_ylim(0, 1.1)
ax = right.twinx()
ax.plot(pct, [med("fusion 1 dev, %d slots" % s, "native 1", "R") for s in sl], "x:", color="grey",
        label="R")
ax.set_ylabel("R = loads / n")
right.legend(loc="upper left", fontsize=8)
ax.legend(loc="upper right", fontsize=8)
right.set_title("fusion, one device")
fig.tight_layout()
fig.savefig(os.path.join(out, "efficiency.png"), dpi=110)
print("wrote", os.path.join(out, "efficiency.png"))
