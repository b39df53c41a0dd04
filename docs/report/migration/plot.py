#!/usr/bin/env python3
"""plot.py - the plot of a migration's cost against the footprint moved.

    plot.py cost.txt[:LABEL] [cost-direct.txt[:LABEL] ...] -o cost.png

Each file is vocl-bench-migrate's table (footprint, move, seconds,
pause_ms, copy_%, ...).  Left: the pause the application saw, per
footprint, each file's moves out and back; right: the share of that pause
spent copying bytes.  Needs matplotlib (Debian: python3-matplotlib).
"""
import argparse
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def rows(path):
    """(MiB, move, pause ms, copy %) of each line of a table."""
    out = []
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) >= 6 and p[1] == "MiB" and p[0].isdigit():
                out.append((int(p[0]), p[2], float(p[4]), float(p[5])))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tables", nargs="+")
    ap.add_argument("-o", "--output", default="cost.png")
    a = ap.parse_args()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for path in a.tables:
        path, _, name = path.partition(":")
        name = name or os.path.splitext(os.path.basename(path))[0]
        data = rows(path)
        for move, style in (("out", "o-"), ("back", "s--")):
            pts = [r for r in data if r[1] == move]
            mib = [r[0] for r in pts]
            left.plot(mib, [r[2] for r in pts], style, label=f"{name}, {move}")
            right.plot(mib, [r[3] for r in pts], style, label=f"{name}, {move}")
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("footprint moved (MiB)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    left.set_yscale("log")
    left.set_ylabel("pause the application saw (ms)")
    right.set_ylabel("share of the pause spent copying (%)")
    right.set_ylim(0, 100)
    fig.suptitle("A migration against the footprint moved (docs/report/migration)")
    fig.tight_layout()
    fig.savefig(a.output, dpi=110)
    print(a.output)


if __name__ == "__main__":
    main()
