#!/usr/bin/env python3
"""tabulate.py - the tables of README.md from run.sh's runs.txt.

    tabulate.py RUNS_TXT

For each application: its time (the RESULT line's seconds=, the best of the
passes, every pass listed) natively and through VOCL at each device count,
efficiency against one device E(p) = T(1) / (p T(p)), and VOCL's time over
native's; then the GPU rows and whether every run gave the same result.
"""
import re
import sys
from collections import defaultdict

FINGERPRINT = {  # the fields that must be equal in every run of an application
    "prnu": ["items", "verified"],
    "nbody": ["checksum"],
    "hep": ["selected", "ids_hash", "hist_hash"],
    "kmer": ["contigs", "kmers"],
}


def fmt(x):
    return f"{x:.3f}" if x else "-"


def fields(result):
    return dict(kv.split("=", 1) for kv in result.split()[1:] if "=" in kv)


def main():
    times = defaultdict(list)  # (app, where, n) -> [seconds]
    prints = defaultdict(set)  # app -> fingerprints
    verdicts = defaultdict(list)  # app -> verified= values
    failed = []
    for line in open(sys.argv[1]):
        label, where, n, cmd, result = [p.strip() for p in line.split(" | ", 4)]
        if not result.startswith("RESULT"):
            failed.append(f"{label} {where} {n}")
            continue
        f = fields(result)
        verdicts[label].append(f.get("verified", "?"))
        if label == "warm-up":
            continue
        times[(label, where, int(n))].append(float(f["seconds"]))
        # The GPU's arithmetic differs from PoCL's: each has a result of its own.
        device = "GPU" if where.startswith("gpu") else "PoCL"
        prints[(label, device)].add(tuple(f.get(k, "?") for k in FINGERPRINT[label]))
    for app in FINGERPRINT:
        rows = [(n, times.get((app, "native", n)), times.get((app, "vocl", n))) for n in (1, 2, 4, 8)]
        if not any(r[1] or r[2] for r in rows):
            continue
        t1 = {w: min(times[(app, w, 1)]) for w in ("native", "vocl") if times.get((app, w, 1))}
        print(f"\n### {app}\n")
        print("| devices | native s | VOCL s | E native | E VOCL | VOCL / native | every pass: native; VOCL |")
        print("|---|---|---|---|---|---|---|")
        for n, nat, voc in rows:
            bn, bv = (min(nat) if nat else None), (min(voc) if voc else None)
            en = f"{t1['native'] / (n * bn):.0%}" if bn and "native" in t1 else "-"
            ev = f"{t1['vocl'] / (n * bv):.0%}" if bv and "vocl" in t1 else "-"
            ratio = f"{bv / bn:.2f}" if bn and bv else "-"
            every = "; ".join(", ".join(f"{t:.3f}" for t in (x or [])) or "-" for x in (nat, voc))
            print(f"| {n} | {fmt(bn)} | {fmt(bv)} | {en} | {ev} | {ratio} | {every} |")
    print("\n### The GPU\n")
    print("| application | native s | VOCL s | VOCL / native |")
    print("|---|---|---|---|")
    for app in FINGERPRINT:
        g, v = times.get((app, "gpu", 1)), times.get((app, "gpu-vocl", 1))
        if g or v:
            ratio = f"{min(v) / min(g):.2f}" if g and v else "-"
            print(f"| {app} | {fmt(min(g) if g else None)} | {fmt(min(v) if v else None)} | {ratio} |")
    print("\n### Results\n")
    for app in FINGERPRINT:
        for device in ("PoCL", "GPU"):
            seen = prints.get((app, device))
            if not seen:
                continue
            same = "one and the same result" if len(seen) == 1 else f"{len(seen)} different results"
            print(f"- {app} on {device}: {same} "
                  f"({'; '.join(', '.join('='.join(p) for p in zip(FINGERPRINT[app], r)) for r in sorted(seen))})")
        print(f"  - {app}: {len(verdicts[app])} runs, verified: {', '.join(sorted(set(verdicts[app])))}")
    for f in failed:
        print(f"- FAILED: {f}")


main()
