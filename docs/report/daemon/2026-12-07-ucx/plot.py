#!/usr/bin/env python3
"""plot.py - the daemon's resident memory, threads, descriptors and children
over the connections of daemon-soak-long (soak.csv), as soak.png."""
import csv
import os
import sys

import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

here = os.path.dirname(os.path.abspath(__file__))
rows = list(csv.DictReader(open(os.path.join(here, "soak.csv"))))
if not rows:
    sys.exit("soak.csv has no rows")
x = [int(r["cycle"]) for r in rows]
fig, (mem, cnt) = plt.subplots(2, 1, sharex=True, figsize=(7, 5))
mem.plot(x, [int(r["rss_kib"]) / 1024 for r in rows], marker="o")
mem.set_ylabel("resident MiB")
mem.set_ylim(bottom=0)
mem.set_title("voclproxyd --listen (workers), sequential connections")
for key in ("threads", "fds", "children"):
    cnt.plot(x, [int(r[key]) for r in rows], marker="o", label=key)
cnt.set_ylabel("count")
cnt.set_ylim(bottom=0)
cnt.set_xlabel("connections (each: connect, gemm 32x32, verify, exit)")
cnt.legend()
fig.tight_layout()
fig.savefig(os.path.join(here, "soak.png"), dpi=90)
print("soak.png: %d points, %d connections" % (len(rows), x[-1]))
