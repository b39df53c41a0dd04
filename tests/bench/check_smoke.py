#!/usr/bin/env python3
"""check_smoke.py VOCL_BENCH - runs `VOCL_BENCH --quick` and fails unless it
exits 0 and both its table and its CSV hold numbers, native and VOCL, for
every section, with a PASS/MISS verdict on every target."""
import csv
import os
import re
import subprocess
import sys
import tempfile

SECTIONS = {"(a)": "call", "(b)": "bw", "(c)": "lat", "(d)": "launch", "(e)": "rss"}
NUMBER = re.compile(r"^\d+(\.\d+)?(e[-+]?\d+)? (ns|us|ms|s|GB/s|MiB)$")
RATIO = re.compile(r"^\d+(\.\d+)?(e[-+]?\d+)?x$")
# Rows whose verdict must be PASS or MISS (quick mode includes 16 MiB).
TARGETS = ("write 16 MiB", "read 16 MiB", "read 4 B, blocking", "launches")

errors = []


def fail(msg):
    errors.append(msg)


def check_table(out):
    seen = {}
    verdicts = {}
    section = None
    for line in out.splitlines():
        head = line[:3]
        if head in SECTIONS:
            section = SECTIONS[head]
            continue
        cells = [c.strip() for c in line.split("|")]
        if section is None or len(cells) != 6:
            continue
        metric, native, vocl, ratio, _, verdict = cells
        for t in TARGETS:
            if metric.startswith(t) or (t == "launches" and "launches" in metric):
                verdicts[metric] = verdict
        if NUMBER.match(native) and NUMBER.match(vocl) and RATIO.match(ratio):
            seen[section] = seen.get(section, 0) + 1
    for s in ("call", "bw", "lat", "launch", "rss"):
        if not seen.get(s):
            fail("table: no row with native, VOCL and ratio numbers in section %s" % s)
    for t in TARGETS:
        hits = [m for m in verdicts if m.startswith(t) or (t == "launches" and t in m)]
        if not hits:
            fail("table: no row for target '%s'" % t)
        for m in hits:
            if not re.search(r": (PASS|MISS)$", verdicts[m]):
                fail("table: row '%s' has no PASS/MISS verdict: '%s'" % (m, verdicts[m]))
    if seen.get("call", 0) < 18:
        fail("table: %d call rows with numbers, want the 18 calls of Table 3 and more"
             % seen.get("call", 0))


def check_csv(path):
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        fail("CSV: %s" % e)
        return
    for s in ("call", "bw", "lat", "launch"):
        good = [r for r in rows if r["section"] == s and r["native"] and r["vocl"]
                and float(r["native"]) > 0 and float(r["vocl"]) > 0]
        if not good:
            fail("CSV: no row with native and VOCL values in section %s" % s)


def main():
    bench = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="bench-smoke-") as tmp:
        csv_path = os.path.join(tmp, "out.csv")
        p = subprocess.run([bench, "--quick", "--csv", csv_path], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True, timeout=170)
        print(p.stdout)
        if p.returncode != 0:
            print(p.stderr, file=sys.stderr)
            fail("vocl-bench --quick exited with %d" % p.returncode)
        check_table(p.stdout)
        check_csv(csv_path)
    for e in errors:
        print("FAIL: " + e)
    if not errors:
        print("bench-smoke: every section has native and VOCL numbers")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
