#!/usr/bin/env python3
"""profile_check.py - checks what VOCL_PROFILE and VOCL_TRACE wrote for one
run of vecadd_reduce -n ELEMENTS --devices DEVICES, each device on its own
proxy, against what the program is known to do: per device two writes (a
and b, 4 bytes an element each), two launches (add, reduce), and a read of c
(4 bytes an element, more than 64 KiB: sent in chunks) and of the partial
sums (small: inline).

    profile_check.py --elements N --devices D --chunk BYTES STDERR TRACE
"""
import argparse
import json
import sys

failures = []


def check(cond, what):
    print(("ok " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def split(n, d):
    """Elements per device, as vecadd_reduce splits them."""
    return [n // d + (1 if i < n % d else 0) for i in range(d)]


def parse_table(text):
    """The rows of the profile table: {call: (count, total_ms, mean_us, pct, bytes)}."""
    lines = text.splitlines()
    heads = [i for i, l in enumerate(lines) if l.startswith("VOCL profile")]
    check(len(heads) == 1, "stderr holds one table, its header starting 'VOCL profile'")
    if not heads:
        return {}
    cols = lines[heads[0] + 1].split()
    check(cols == ["call", "count", "total", "ms", "mean", "us", "%time", "bytes"],
          "columns: call, count, total ms, mean us, %%time, bytes (%s)" % " ".join(cols))
    rows = {}
    for l in lines[heads[0] + 2:]:
        f = l.split()
        if len(f) != 6 or not f[0].startswith("cl"):
            break
        rows[f[0]] = (int(f[1]), float(f[2]), float(f[3]), float(f[4]), int(f[5]))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--elements", type=int, required=True)
    ap.add_argument("--devices", type=int, required=True)
    ap.add_argument("--chunk", type=int, required=True)
    ap.add_argument("stderr")
    ap.add_argument("trace")
    a = ap.parse_args()
    n, d = a.elements, a.devices
    per_dev = split(n, d)

    # --- the table ---------------------------------------------------------
    rows = parse_table(open(a.stderr, encoding="utf-8", errors="replace").read())
    check(len(rows) > 10, "the table has a row per entry point called (%d rows)" % len(rows))
    launch = rows.get("clEnqueueNDRangeKernel", (0,) * 5)
    check(launch[0] == 2 * d, "clEnqueueNDRangeKernel count %d == %d" % (launch[0], 2 * d))
    write = rows.get("clEnqueueWriteBuffer", (0,) * 5)
    check(write[0] == 2 * d, "clEnqueueWriteBuffer count %d == %d" % (write[0], 2 * d))
    check(write[4] == 8 * n, "clEnqueueWriteBuffer bytes %d == %d written" % (write[4], 8 * n))
    read = rows.get("clEnqueueReadBuffer", (0,) * 5)
    check(read[0] == 2 * d, "clEnqueueReadBuffer count %d == %d" % (read[0], 2 * d))
    check(read[4] > 4 * n, "clEnqueueReadBuffer bytes %d > %d (c, and the partial sums)"
          % (read[4], 4 * n))
    check(rows.get("clSetKernelArg", (0,) * 5)[4] == 0, "clSetKernelArg moves no bytes")
    pct = sum(r[3] for r in rows.values())
    check(abs(pct - 100.0) < 1.0, "%%time adds up to 100 (%.1f)" % pct)
    # total ms has 3 decimals (0.5 us of rounding, shared by count calls), mean us 2.
    means = all(abs(r[2] - r[1] * 1000.0 / r[0]) <= 0.5 / r[0] + 0.006 for r in rows.values())
    check(means, "mean us == total ms * 1000 / count on every row")

    # --- the trace ---------------------------------------------------------
    try:
        with open(a.trace, encoding="utf-8") as f:
            tr = json.load(f)
        check(True, "the trace parses as JSON")
    except (OSError, ValueError) as e:
        check(False, "the trace parses as JSON: %s" % e)
        return 1
    ev = tr.get("traceEvents") if isinstance(tr, dict) else None
    check(isinstance(ev, list), "it holds a traceEvents list")
    if not isinstance(ev, list):
        return 1
    x = [e for e in ev if e.get("ph") == "X"]
    check(all(isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur"), (int, float))
              and e["dur"] >= 0 and isinstance(e.get("pid"), int) for e in x),
          "every X event has a pid, a ts and a dur >= 0")
    names = {e["pid"]: e.get("args", {}).get("name", "")
             for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
    app = [e for e in x if e["pid"] == 0]
    proxies = sorted(p for p in {e["pid"] for e in x} if p != 0)
    check(names.get(0, "").startswith("application rank 0"), "pid 0 is named the application")
    check(proxies == list(range(1, d + 1)),
          "events of every proxy, pid = its rank: %s" % proxies)
    check(all(names.get(p, "").startswith("voclproxyd rank %d" % p) for p in proxies),
          "each proxy pid is named for its rank")

    def count(evs, name):
        return sum(1 for e in evs if e["name"] == name)

    check(count(app, "clEnqueueNDRangeKernel") == 2 * d,
          "application: %d clEnqueueNDRangeKernel events" % count(app, "clEnqueueNDRangeKernel"))
    wbytes = sum(e.get("args", {}).get("bytes", 0) for e in app
                 if e["name"] == "clEnqueueWriteBuffer")
    check(wbytes == 8 * n, "application: clEnqueueWriteBuffer bytes %d == %d" % (wbytes, 8 * n))
    for i, p in enumerate(proxies):
        mine = [e for e in x if e["pid"] == p]
        for call in ("clEnqueueNDRangeKernel", "clEnqueueWriteBuffer", "clEnqueueReadBuffer"):
            check(count(mine, call) == 2, "proxy %d served 2 %s" % (p, call))
        chunks = [e for e in mine if e["name"] == "send chunk"]
        want = (4 * per_dev[i] + a.chunk - 1) // a.chunk
        sent = sum(e.get("args", {}).get("bytes", 0) for e in chunks)
        check(len(chunks) == want, "proxy %d: %d 'send chunk' events == %d chunks of c"
              % (p, len(chunks), want))
        check(sent == 4 * per_dev[i], "proxy %d: chunks sent %d bytes == %d of c"
              % (p, sent, 4 * per_dev[i]))
        check(len({e.get("tid") for e in chunks} & {e.get("tid") for e in mine
                                                     if e["name"] != "send chunk"}) == 0,
              "proxy %d: chunks are on a thread of their own" % p)
    if failures:
        print("%d checks failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
