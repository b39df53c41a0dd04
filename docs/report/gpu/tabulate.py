"""tabulate.py OUTDIR - run.sh's CSVs as one markdown table per poll setting:
per round, the blocking 4-byte read natively, through VOCL and raw MPI's
round trip, the issue's target (VOCL <= MPI + 10 us), and the other
latencies and the 7-argument launch ratio."""
import csv, glob, os, re, sys

out = sys.argv[1]


def bench(path):
    rows = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            rows[r["metric"]] = r
    return rows


def rtt(path):
    with open(path) as f:
        for line in f:
            p = line.strip().split(",")
            if p[:2] == ["lat", "rtt4"]:
                return float(p[3])
    return None


us = lambda v: "%.1f" % (float(v) * 1e6)
runs = {}
for path in glob.glob(os.path.join(out, "bench-*-poll*.csv")):
    r, p = re.search(r"bench-(\d+)-poll(\w+)\.csv$", path).groups()
    runs.setdefault(p, []).append((int(r), path))
for p in sorted(runs, key=lambda s: (not s.isdigit(), int(s) if s.isdigit() else 0)):
    print("\nVOCL_POLL_US=%s\n" % p)
    print("| round | read native | read VOCL | MPI round trip | VOCL - MPI | <= MPI + 10 us "
          "| write native / VOCL | kernel+clFinish native / VOCL | 7-arg launches VOCL/native |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r, path in sorted(runs[p]):
        b, m = bench(path), rtt(os.path.join(out, "mpi-%d.csv" % r))
        rd, wr = b["read 4 B, blocking"], b["write 4 B, blocking"]
        kf, la = b["1-item kernel + clFinish"], b["10000 launches, 7 args, total"]
        v = float(rd["vocl"])
        ok = m is not None and v <= m + 10e-6
        print("| %d | %s | %s | %s | %+.1f | %s | %s / %s | %s / %s | %.2f |" % (
            r, us(rd["native"]), us(v), us(m), (v - m) * 1e6, "PASS" if ok else "MISS",
            us(wr["native"]), us(wr["vocl"]), us(kf["native"]), us(kf["vocl"]),
            float(la["ratio"])))
