#!/usr/bin/env python3
"""report.py RUNS: the tables of docs/report/hep from run.sh's runs.txt
(label | command | RESULT line), as Markdown on stdout, for the sections
that RUNS holds.  Fails if any two runs of one analysis over the same
events file selected different events or filled different histograms."""
import re
import statistics
import sys
from collections import OrderedDict, defaultdict


def parse(path):
    rows = []
    for line in open(path):
        label, cmd, result = [x.strip() for x in line.split(" | ", 2)]
        f = dict(kv.split("=", 1) for kv in result.split()[1:] if "=" in kv)
        m = re.search(r"--input (\S+)", cmd)
        f["file"] = m.group(1) if m else "?"
        f.setdefault("analysis", "tth")
        rows.append((label, cmd, f))
    return rows


def main():
    rows = parse(sys.argv[1])
    # Same file, same selection: every run, whatever its order or devices.
    sel = {}
    for label, _, f in rows:
        key = (f["selected"], f["ids_hash"], f["hist_hash"])
        where = (f["file"], f["analysis"])
        if sel.setdefault(where, key) != key:
            sys.exit("%s: selection differs on %s: %s vs %s" % (label, where, key, sel[where]))
    by = OrderedDict()
    for label, cmd, f in rows:
        by.setdefault(label, []).append(f)

    def med(label, field="seconds"):
        return statistics.median(float(f[field]) for f in by[label])

    def best(label, field="seconds"):
        return min(float(f[field]) for f in by[label])

    out = []
    p = out.append
    p("Every run over one events file selected the same events and filled the")
    p("same histograms (checked here over runs.txt):\n")
    p("| events file | analysis | selected | ids_hash | hist_hash | runs | verified runs |")
    p("|---|---|---:|---|---|---:|---:|")
    for (file, an), key in sel.items():
        mine = [f for _, _, f in rows if (f["file"], f["analysis"]) == (file, an)]
        v = sum(1 for f in mine if f["verified"] == "yes")
        p("| %s | %s | %s | %s | %s | %d | %d |" % (file.split("/")[-1], an, key[0], key[1],
                                                    key[2], len(mine), v))

    if "order bad fixed" in by:
        order_tables(by, best, med, p)
    if "heavy written fixed" in by and "heavy written adapt" in by:
        heavy_table(by, best, med, p)
    split_tables(by, best, med, p)
    if "rng ahead" in by:
        p("\n### Second queue (10^6 events, good order, best and median of %d)\n"
          % len(by["rng ahead"]))
        p("| random words (since issue 38 also ids and columns) | best s | median s |")
        p("|---|---:|---:|")
        p("| on the second queue, ahead | %.3f | %.3f |" % (best("rng ahead"), med("rng ahead")))
        p("| on the pipeline queue (HEP_RNG_SAME_QUEUE=1) | %.3f | %.3f |"
          % (best("rng same-queue"), med("rng same-queue")))
    if any(label.startswith("native ") for label in by):
        devices_table(by, p)
    if any(label.startswith("vocl2x1 ") for label in by):
        vocl_table(by, best, med, p)
    print("\n".join(out))


def order_tables(by, best, med, p):
    p("\n### Order (3 x 10^5 events, 2 PoCL devices, best and median of %d)\n"
      % len(by["order bad fixed"]))
    p("| initial order | reordering | best s | median s | events/s (best) "
      "| vs bad, fixed (best) | (median) |")
    p("|---|---|---:|---:|---:|---:|---:|")
    base, base_m = best("order bad fixed"), med("order bad fixed")
    for label in by:
        m = re.match(r"order (\S+) (fixed|adapt)$", label)
        if m:
            s, sm = best(label), med(label)
            p("| %s | %s | %.3f | %.3f | %.0f | %.2fx | %.2fx |"
              % (m.group(1), "yes" if m.group(2) == "adapt" else "no", s, sm, 3e5 / s,
                 base / s, base_m / sm))
    if "order1e6 bad fixed" in by:
        p("\n10^6 events, one run each:\n")
        p("| initial order | reordering | seconds | vs bad, fixed |")
        p("|---|---|---:|---:|")
        b6 = med("order1e6 bad fixed")
        for label in by:
            m = re.match(r"order1e6 (\S+) (fixed|adapt)$", label)
            if m:
                s = med(label)
                p("| %s | %s | %.3f | %.2fx |" % (m.group(1), "yes" if m.group(2) == "adapt"
                                                  else "no", s, b6 / s))


def split_tables(by, best, med, p):
    titles = {"bad": "tth, bad order with reordering", "good": "tth, good order with reordering",
              "light": "light analysis (data-bound) with reordering"}
    for order in ("bad", "good", "light"):
        if "split %s adapt" % order not in by:
            continue
        p("\n### DS/DP split, %s (10^6 events, 6 threads, best and median of %d)\n"
          % (titles[order], len(by["split %s adapt" % order])))
        p("| DS threads | best s | median s | ds_seconds (best run) | final DS |")
        p("|---|---:|---:|---:|---:|")
        fixed, fixed_m = {}, {}
        for k in range(1, 6):
            label = "split %s %d" % (order, k)
            if label in by:
                fixed[k], fixed_m[k] = best(label), med(label)
                ds = min(by[label], key=lambda f: float(f["seconds"]))["ds_seconds"]
                p("| %d (fixed) | %.3f | %.3f | %s | %d |" % (k, fixed[k], fixed_m[k], ds, k))
        lab = "split %s adapt" % order
        a, am = best(lab), med(lab)
        ds = min(by[lab], key=lambda f: float(f["seconds"]))["ds_seconds"]
        finals = ",".join(f["final_ds"] for f in by[lab])
        p("| adaptive | %.3f | %.3f | %s | %s |" % (a, am, ds, finals))
        k = min(fixed, key=fixed.get)
        km = min(fixed_m, key=fixed_m.get)
        p("\nBest fixed split: %d DS threads, %.3f s (best of runs); adaptive %.3f s: %.2fx "
          "the best fixed.  By medians: %d DS threads, %.3f s; adaptive %.3f s: %.2fx."
          % (k, fixed[k], a, fixed[k] / a, km, fixed_m[km], am, fixed_m[km] / am))
        w = max(fixed, key=fixed.get)
        wm = max(fixed_m, key=fixed_m.get)
        p("Worst fixed split: %d DS threads, %.3f s; adaptive %.2fx faster (best of runs).  "
          "By medians: %d DS threads, %.3f s; adaptive %.2fx faster."
          % (w, fixed[w], fixed[w] / a, wm, fixed_m[wm], fixed_m[wm] / am))



def devices_table(by, p):
    p("\n### Devices (5 x 10^4 events, batches of 512, one run each, all verified)\n")
    p("| run | devices | seconds | events/s | selected | ids_hash | verified |")
    p("|---|---:|---:|---:|---:|---|---|")
    for label in by:
        if label.startswith("native ") or label.startswith("vocl "):
            f = by[label][0]
            p("| %s | %s | %s | %s | %s | %s | %s |" % (label, f["devices"], f["seconds"],
                                                       f["rate"], f["selected"], f["ids_hash"],
                                                       f["verified"]))


def heavy_table(by, best, med, p):
    n = len(by["heavy written adapt"])
    p("\n### Reordering, heavy analysis (3 x 10^5 events, 2 PoCL devices, best and median "
      "of %d)\n" % n)
    p("| order | reordering | best s | median s | vs written (best) | (median) |")
    p("|---|---|---:|---:|---:|---:|")
    base, base_m = best("heavy written fixed"), med("heavy written fixed")
    rows = [("written", "no", "heavy written fixed"), ("written", "yes", "heavy written adapt"),
            ("good, by hand", "no", "heavy good fixed"),
            ("an adaptive run's final order", "no", "heavy final fixed")]
    for name, re_, label in rows:
        if label in by:
            s, sm = best(label), med(label)
            p("| %s | %s | %.3f | %.3f | %.2fx | %.2fx |" % (name, re_, s, sm, base / s,
                                                            base_m / sm))
    off = min(("heavy good fixed", "heavy final fixed"), key=best)
    offm = min(("heavy good fixed", "heavy final fixed"), key=med)
    a, am = best("heavy written adapt"), med("heavy written adapt")
    p("\nBest order found offline (the faster of the two fixed ones): %s, %.3f s best, "
      "%.3f s median; run-time reordering from the written order reaches %.2fx (best) and "
      "%.2fx (median) of it, %.2fx and %.2fx over the written order."
      % (off.split()[1], best(off), med(offm), best(off) / a, med(offm) / am, base / a,
         base_m / am))


def vocl_table(by, best, med, p):
    n = len(by.get("vocl2x1 heavy written adapt", []))
    p("\n### Through vocl-run -n 2 -d 1 (heavy: 3 x 10^5 events; light: 10^6 events, 6 "
      "threads; best and median of %d)\n" % n)
    p("| run | best s | median s |")
    p("|---|---:|---:|")
    for label in by:
        if label.startswith("vocl2x1 ") and "verify" not in label:
            p("| %s | %.3f | %.3f |" % (label[8:], best(label), med(label)))


if __name__ == "__main__":
    main()
