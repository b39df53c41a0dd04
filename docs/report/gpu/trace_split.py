"""trace_split.py TRACE.json - where a blocking call of a VOCL_TRACE timeline spends its
time: in the client, on the way to the proxy, in the proxy, on the way back
(medians in us; the client is pid 0, its proxy pid 1, calls matched in order)."""
import json, statistics, sys
ev = json.load(open(sys.argv[1]))
ev = ev["traceEvents"] if isinstance(ev, dict) else ev
for name in ("clEnqueueReadBuffer", "clEnqueueWriteBuffer", "clFinish"):
    cl = sorted((e for e in ev if e.get("name") == name and e.get("pid") == 0 and e.get("ph") == "X"), key=lambda e: e["ts"])
    px = sorted((e for e in ev if e.get("name") == name and e.get("pid") == 1 and e.get("ph") == "X"), key=lambda e: e["ts"])
    n = min(len(cl), len(px))
    if not n:
        continue
    rows = [(c["dur"], p["ts"] - c["ts"], p["dur"], c["ts"] + c["dur"] - p["ts"] - p["dur"]) for c, p in zip(cl[-n:], px[-n:])]
    med = [statistics.median(r[i] for r in rows) for i in range(4)]
    print("%-22s n=%5d client %6.2f | to proxy %6.2f | proxy %6.2f | back %6.2f" % (name, n, *med))
