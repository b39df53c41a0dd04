#!/usr/bin/python3
"""report.py: makes docs/report/dag/results.md (the tables) and scaling.png
(the plot) from run.sh's runs.txt and profile.txt, with lines.sh's table of
the applications' host code lines against their OpenCL twins.

    /usr/bin/python3 docs/report/dag/report.py [OUT_DIR]
"""
import os
import re
import statistics
import subprocess
import sys

out = sys.argv[1] if len(sys.argv) > 1 else "docs/report/dag"
root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
APPS = ["linreg", "matmul", "abcd", "nbody", "perlin", "knn", "floyd"]

runs = {}  # label -> list of field dicts
commands = {}
with open(os.path.join(out, "runs.txt")) as f:
    for line in f:
        label, command, result = line.rstrip("\n").split(" | ", 2)
        fields = dict(re.findall(r"(\w+)=(\S+)", result))
        runs.setdefault(label, []).append(fields)
        commands.setdefault(label, command.strip())


def med(label, name):
    values = [float(r[name]) for r in runs.get(label, [])]
    return statistics.median(values) if values else None


def spread(label, name="seconds"):
    values = sorted(float(r[name]) for r in runs.get(label, []))
    if not values:
        return "-"
    if len(values) == 1:
        return "%.3g" % values[0]
    return "%.3g (%.3g-%.3g)" % (statistics.median(values), values[0], values[-1])


lines = []
w = lines.append

w("## Overhead on one device: DAG runtime against plain OpenCL")
w("")
w("Median seconds of %d alternating runs (range in brackets), one PoCL device," % len(
    runs.get("overhead linreg plain", [])))
w("the same kernels, sizes and timed part (after the kernel is built).")
w("")
w("| application | plain OpenCL s | DAG runtime s | DAG against plain |")
w("|---|---:|---:|---:|")
for app in APPS + ["floyd768"]:
    p, d = med("overhead %s plain" % app, "seconds"), med("overhead %s dag" % app, "seconds")
    if p is None:
        continue
    w("| %s | %s | %s | %+.1f %% |" % (app.replace("768", " (n = 768)"),
                                       spread("overhead %s plain" % app),
                                       spread("overhead %s dag" % app), 100 * (d - p) / p))
w("")

w("## Scaling: efficiency against one device")
w("")
w("E(p) = T(1) / (p T(p)), T(1) the same mode's run on one device; native: p PoCL")
w("devices in the application's process (median of 3); VOCL: `vocl-run -n P -d K`,")
w("p = P x K (one run each). DCR and DHDCR on. `plain` is the plain OpenCL twin on")
w("one native device (median of the overhead runs).")
w("")
w("| application | plain s | mode | p=1 s | p=2 | p=4 | p=8 | p=16 | p=32 |")
w("|---|---:|---|---:|---:|---:|---:|---:|---:|")
plot = {}
for app in APPS:
    plain = med("overhead %s plain" % app, "seconds")
    for mode, points in (("native", [(1, "1"), (2, "2"), (4, "4")]),
                         ("vocl", [(1, "1 1"), (2, "2 1"), (4, "2 2"), (8, "4 2"), (16, "8 2"),
                                   (32, "16 2")])):
        t = {p: med("%s %s %s" % (mode, app, key), "seconds") for p, key in points}
        if t.get(1) is None:
            continue
        cells = []
        for p in (2, 4, 8, 16, 32):
            if t.get(p) is None:
                cells.append("-")
            else:
                e = t[1] / (p * t[p])
                plot.setdefault((app, mode), []).append((p, e))
                cells.append("%.3g s, E %.0f %%" % (t[p], 100 * e))
        plot.setdefault((app, mode), []).insert(0, (1, 1.0))
        w("| %s | %s | %s | %.3g | %s |" % (app, "%.3g" % plain if plain else "-", mode, t[1],
                                          " | ".join(cells)))
w("")

w("## Bytes per link with DCR and DHDCR on and off")
w("")
w("The runtime's counters (deterministic: the same in every repeat). h2d: host to")
w("device, d2h: device to host, d2d: device to another device (proxy to proxy under")
w("VOCL); ops: transfers. Collectives: broadcasts/scatters/gathers made by DCR;")
w("DHDCR: writes replaced by copies. Seconds: one run.")
w("")
w("| application | where | DCR | DHDCR | h2d bytes (ops) | d2h bytes (ops) | d2d bytes (ops) | collectives | DHDCR | s |")
w("|---|---|---|---|---:|---:|---:|---|---:|---:|")
for app in APPS:
    for where in ("native 4", "vocl 4x2", "vocl 16x2"):
        for dcr, dhdcr in (("0", "0"), ("1", "0"), ("0", "1"), ("1", "1")):
            label = "opt %s %s %s %s" % (app, where, dcr, dhdcr)
            if label not in runs:
                continue
            r = runs[label][0]
            w("| %s | %s (p=%s) | %s | %s | %s (%s) | %s (%s) | %s (%s) | %s/%s/%s | %s | %.3g |" % (
                app, where, r["devices"], "on" if dcr == "1" else "off",
                "on" if dhdcr == "1" else "off", r["h2d_bytes"], r["h2d_ops"], r["d2h_bytes"],
                r["d2h_ops"], r["d2d_bytes"], r["d2d_ops"], r["broadcasts"], r["scatters"],
                r["gathers"], r["dhdcr_writes"], float(r["seconds"])))
w("")

profile = os.path.join(out, "profile.txt")
if os.path.exists(profile):
    w("## What libvocl counted (VOCL_PROFILE=1)")
    w("")
    w("dag-linreg through `vocl-run -n 4 -d 2` (8 devices): the application's own")
    w("OpenCL calls and the bytes libvocl moved for them, with DCR on and off.")
    w("")
    w("```")
    with open(profile) as f:
        for line in f:
            w(line.rstrip("\n"))
    w("```")
    w("")


w("## Host code lines: DAG runtime against hand-written OpenCL")
w("")
w("Lines that are neither blank nor comments, from the first function to the end")
w("of the file: option parsing, input, the OpenCL host code, the check and the")
w("RESULT line. multi-* is each application written directly on OpenCL for every")
w("device of the platform (one context, a queue each), split as the DAG version")
w("splits it; plain-* the same for one device. Made by lines.sh beside this file.")
w("")
table = subprocess.run([os.path.join(root, "docs/report/dag/lines.sh")], check=True,
                       capture_output=True, text=True).stdout
for line in table.rstrip("\n").split("\n"):
    w(line)
w("")

w("## Identical results")
w("")
w("The checksum (FNV-1a of the result's bytes) of every run of each application")
w("in runs.txt: plain OpenCL on one device, natively on 1 to 4 devices, through")
w("vocl-run on 1 to 32, each optimisation on and off. One distinct value means")
w("all runs gave the same bytes (and every run also matched the CPU reference).")
w("")
w("| application | runs | distinct checksums | checksum |")
w("|---|---:|---:|---|")
for app in APPS:
    sums = [r["checksum"] for label, rs in runs.items() for r in rs
            if label.split()[1] == app and "checksum" in r]
    w("| %s | %d | %d | %s |" % (app, len(sums), len(set(sums)), " ".join(sorted(set(sums)))))
w("")

w("Every command is in runs.txt beside this file, one line per run with its")
w("RESULT line; run.sh made them all.")

with open(os.path.join(out, "results.md"), "w") as f:
    f.write("\n".join(lines) + "\n")
print("wrote", os.path.join(out, "results.md"))

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("no plot: matplotlib is not available to /usr/bin/python3", file=sys.stderr)
    sys.exit(0)
fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
for ax, mode, title in ((axes[0], "native", "natively (PoCL devices in one process)"),
                        (axes[1], "vocl", "through VOCL (vocl-run, proxies of 1-2 devices)")):
    for app in APPS:
        points = plot.get((app, mode))
        if points:
            ax.plot([p for p, _ in points], [100 * e for _, e in points], marker="o", label=app)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("devices")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
axes[0].set_ylabel("efficiency against one device (%)")
axes[1].legend(fontsize=8)
fig.suptitle("DAG runtime: efficiency by device count on a 2-core machine", fontsize=11)
fig.tight_layout()
fig.savefig(os.path.join(out, "scaling.png"), dpi=110)
print("wrote", os.path.join(out, "scaling.png"))
