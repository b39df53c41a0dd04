#!/usr/bin/env python3
"""tabulate.py RUNS: the table of docs/report/small-commands from run.sh's
runs.txt ("WORKLOAD native|before|after | SECONDS" lines): the median of each
configuration, and VOCL's ratio to native before and after, as Markdown."""
import statistics
import sys
from collections import defaultdict


def main(path):
    times = defaultdict(list)
    order = []
    with open(path) as f:
        for line in f:
            label, seconds = (s.strip() for s in line.split("|"))
            workload, which = label.rsplit(" ", 1)
            if workload not in order:
                order.append(workload)
            times[(workload, which)].append(float(seconds))
    print("| workload | native | before | after | before / native | after / native | runs |")
    print("|---|---|---|---|---|---|---|")
    for w in order:
        med = {k: statistics.median(times[(w, k)]) for k in ("native", "before", "after")
               if times[(w, k)]}
        n = min(len(times[(w, k)]) for k in med)

        def ratio(k):
            return "%.2fx" % (med[k] / med["native"]) if k in med and "native" in med else "-"

        print("| %s | %s | %s | %s | %s | **%s** | %d |" % (
            w, *("%.4g s" % med[k] if k in med else "-" for k in ("native", "before", "after")),
            ratio("before"), ratio("after"), n))


if __name__ == "__main__":
    main(sys.argv[1])
