#!/usr/bin/python3
"""plot.py: draws docs/report/kmer/scaling.png from runs.txt (run.sh's
output): inserts/s and lookups/s of set S against the number of devices,
natively and through VOCL, the medians of the repeats with their range as
error bars, and the CPU assembler as a horizontal line.

    /usr/bin/python3 docs/report/kmer/plot.py [RUNS_TXT [PNG]]
"""
import re
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

runs_path = sys.argv[1] if len(sys.argv) > 1 else "docs/report/kmer/runs.txt"
png_path = sys.argv[2] if len(sys.argv) > 2 else "docs/report/kmer/scaling.png"

# label -> {"devices": n, "inserts": [...], "lookups": [...]}
series = {}
with open(runs_path) as f:
    for line in f:
        label, _command, result = line.rstrip("\n").split(" | ", 2)
        fields = dict(re.findall(r"(\w+)=(\S+)", result))
        entry = series.setdefault(label, {"devices": int(fields["devices"]),
                                          "inserts": [], "lookups": []})
        entry["inserts"].append(float(fields["inserts_per_s"]))
        entry["lookups"].append(float(fields["lookups_per_s"]))


def curve(pattern):
    """Devices, medians and error bars of the labels matching pattern."""
    points = sorted((e["devices"], e) for label, e in series.items()
                    if re.fullmatch(pattern, label))
    out = {}
    for key in ("inserts", "lookups"):
        med = [statistics.median(e[key]) for _, e in points]
        low = [m - min(e[key]) for m, (_, e) in zip(med, points)]
        high = [max(e[key]) - m for m, (_, e) in zip(med, points)]
        out[key] = (med, [low, high])
    return [d for d, _ in points], out


fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
for ax, key, title in ((axes[0], "inserts", "inserts/s"),
                       (axes[1], "lookups", "lookups/s")):
    for pattern, name, marker in ((r"S native \d+", "native (PoCL devices)", "o"),
                                  (r"S vocl \d+x\d+", "vocl-run (P x K)", "s")):
        devices, data = curve(pattern)
        med, err = data[key]
        ax.errorbar(devices, med, yerr=err, marker=marker, capsize=3, label=name)
    cpu = statistics.median(series["S cpu"][key])
    ax.axhline(cpu, color="gray", linestyle="--", label="CPU assembler, 1 thread")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xticks([1, 2, 4, 8, 16, 32])
    ax.set_xticklabels(["1", "2", "4", "8", "16", "32"])
    ax.set_xlabel("devices (all on the same 2 CPU cores)")
    ax.set_ylabel(title)
    ax.set_title("set S (10^6 bases): " + title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(png_path, dpi=100)
print("wrote", png_path)
