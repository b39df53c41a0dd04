#!/usr/bin/env python3
"""vocl-bench - one OpenCL device, natively and through VOCL, side by side.

Runs vocl-bench-worker (an ordinary OpenCL program) three times on the same
device: natively, under `vocl-run -n 1`, and under vocl-run with
VOCL_PIPELINE=0; prints one table (native | VOCL | ratio | VOCL no-pipeline |
target and verdict), writes it as CSV and, with --plot, draws bandwidth
against transfer size.  Python 3 standard library only; matplotlib or
gnuplot for --plot.
"""
import argparse
import bisect
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

# The shared helpers (tools/pylib): the source tree's for the build tree's
# script; for the installed one, those installed with it, found from its
# own folder (so that an install under DESTDIR finds them too).  No
# __pycache__ beside them: not in the source tree, nor where `ninja
# uninstall` would leave it.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)),
                                "@BUILD_PYLIB@" or "@PYLIB@"))
from voclutil import (EXIT_OK, EXIT_RUN_FAILED, find_first, messages,  # noqa: E402
                      print_table, pyplot_or_reason, run_cmd, write_csv)

VERSION = "@VERSION@"
# The build tree's files first (empty in the installed copy), then the
# installed ones.
WORKER_CANDIDATES = ["@BUILD_WORKER@", "@WORKER@"]
VOCL_RUN_CANDIDATES = ["@BUILD_VOCL_RUN@", "@VOCL_RUN@"]
PINGPONG_CANDIDATES = ["@BUILD_PINGPONG@", "@PINGPONG@"]
UCX_PINGPONG_CANDIDATES = ["@BUILD_UCX_PINGPONG@", "@UCX_PINGPONG@"]
CLUSTER_CANDIDATES = ["@BUILD_VOCL_CLUSTER@"]
LIBVOCL_CANDIDATES = ["@BUILD_LIBVOCL@", "@LIBVOCL@"]
PROXYD_CANDIDATES = ["@BUILD_PROXYD@", "@PROXYD@"]

PROG = "vocl-bench"
SECTIONS = {"a": "call", "b": "bw", "c": "lat", "d": "launch"}
SECTION_TITLES = {
    "call": "(a) per-call overhead: mean time per call (Table 3 of the VOCL paper)",
    "bw": "(b) bandwidth: window of non-blocking transfers, then clFinish",
    "lat": "(c) blocking round trip: median",
    "launch": "(d) launch throughput: small kernels, 7 arguments set before each",
    "rss": "(e) peak resident memory",
    "pyopencl-wall": "PyOpenCL scripts: wall time of the command (vocl-run's start and end included)",
    "pyopencl-own": "PyOpenCL scripts: the script's own time (from its first line to its last)",
}
# The worker's line sections; `info` and `end` carry no measurement.
LINE_SECTIONS = ("info", "call", "bw", "lat", "launch", "rss", "end")

# The targets of the issue.
BW_TARGET = 0.95  # of native, for transfers of at least BW_TARGET_MIN bytes
BW_TARGET_MIN = 16 << 20
LAT_TARGET_EXTRA = 15e-6  # seconds over native, 4-byte blocking read
LAUNCH_TARGET = 1.3  # times native

RUSAGE_LINE = re.compile(r"^voclproxyd rank (\d+) maxrss_kb (\d+)\s*$")
die, note = messages(PROG)


# ---- running the worker ----


class Run:
    """One run of the worker and what it printed."""

    def __init__(self, label, cmd, env, rusage_file=None):
        self.label = label
        self.cmd = cmd
        self.env = env
        self.rusage_file = rusage_file
        self.rc = None
        self.seconds = 0.0
        self.stderr = ""
        self.values = {}  # (section, name, param) -> (value, unit), in order
        self.info = {}
        self.complete = False
        self.error = None
        self.proxy_rss_kib = None
        self.peer = None  # a command that must be listening first (mpi-pingpong --accept)

    @property
    def ok(self):
        return self.error is None


def run_worker(run, timeout):
    note("%s run: %s" % (run.label, " ".join(run.cmd)))
    run.rc, out, err, run.seconds, timed_out = run_cmd(run.cmd, run.env, timeout)
    if timed_out:
        run.error = "timed out after %d s" % timeout
    run.stderr = err
    parse_output(run, out)
    if run.error is None:
        if "verification failed" in err:
            run.error = "verification failed"
        elif run.rc != 0:
            run.error = "exit status %d" % run.rc
        elif not run.complete:
            run.error = "the worker stopped before its end line"
    if run.rusage_file:
        run.proxy_rss_kib = read_proxy_rusage(run.rusage_file)
    if run.ok:
        note("%s run: done in %.1f s" % (run.label, run.seconds))
    else:
        note("%s run FAILED (%s) after %.1f s; its stderr ends with:" %
             (run.label, run.error, run.seconds))
        for line in err.splitlines()[-20:]:
            print("    " + line, file=sys.stderr)


def parse_output(run, out):
    """Takes the worker's lines section,name,param,value,unit; anything else
    (a proxy's or MPI's messages) is not a measurement and is skipped."""
    for line in out.splitlines():
        parts = line.strip().split(",")
        if len(parts) != 5 or parts[0] not in LINE_SECTIONS:
            continue
        section, name, param, value, unit = parts
        if section == "info":
            run.info[name] = value
            continue
        if section == "end":
            run.complete = name == "ok"
            continue
        try:
            v = float(value)
        except ValueError:
            continue
        if math.isfinite(v):
            run.values[(section, name, param)] = (v, unit)


def read_proxy_rusage(path):
    """The proxies' peak RSS in KiB (summed over ranks), or None if they
    wrote nothing."""
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    per_rank = {}
    for line in lines:
        m = RUSAGE_LINE.match(line)
        if m:
            per_rank[int(m.group(1))] = int(m.group(2))
    return sum(per_rank.values()) if per_rank else None


# ---- the table ----


def fmt_time(s):
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if abs(s) >= scale:
            return "%.3g %s" % (s / scale, unit)
    return "%.3g ns" % (s / 1e-9)


def fmt_value(v, unit):
    if v is None:
        return "-"
    if unit == "s":
        return fmt_time(v)
    if unit == "B/s":
        return "%.3g GB/s" % (v / 1e9)
    if unit == "KiB":
        return "%.1f MiB" % (v / 1024.0)
    return "%.4g %s" % (v, unit)


def fmt_size(n):
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale and n % scale == 0:
            return "%d %s" % (n // scale, unit)
    return "%d B" % n


def ratio(a, b):
    return a / b if a is not None and b else None


class Row:
    def __init__(self, section, metric, param, unit, native, vocl, nopipe,
                 target="", verdict=""):
        self.section = section
        self.metric = metric
        self.param = param
        self.unit = unit
        self.native = native
        self.vocl = vocl
        self.nopipe = nopipe
        self.target = target
        self.verdict = verdict

    @property
    def ratio(self):
        return ratio(self.vocl, self.native)


def value_of(run, key):
    if run is None or key not in run.values:
        return None
    return run.values[key][0]


def ordered_keys(runs, section):
    keys = []
    for run in runs:
        if run is None:
            continue
        for key in run.values:
            if key[0] == section and key not in keys:
                keys.append(key)
    return keys


def verdict(ok):
    return "PASS" if ok else "MISS"


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def build_rows(native, vocl, nopipe):
    runs = (native, vocl, nopipe)
    rows = []

    def triple(key):
        return [value_of(r, key) for r in runs]

    for key in ordered_keys(runs, "call"):
        name = key[1] + (" (%s)" % key[2] if key[2] else "")
        rows.append(Row("call", name, key[2], "s", *triple(key)))

    bw_keys = ordered_keys(runs, "bw")
    for direction in ("write", "read"):
        keys = sorted((k for k in bw_keys if k[1] == direction), key=lambda k: int(k[2]))
        gains = []
        for key in keys:
            size = int(key[2])
            row = Row("bw", "%s %s" % (direction, fmt_size(size)), key[2], "B/s", *triple(key))
            if size >= BW_TARGET_MIN:
                row.target = ">= %d%% native" % round(BW_TARGET * 100)
                if row.native is not None and row.vocl is not None:
                    row.verdict = verdict(row.vocl >= BW_TARGET * row.native)
                else:
                    row.verdict = "n/a"
                if row.vocl and row.nopipe:
                    gains.append(row.vocl / row.nopipe)
            rows.append(row)
        if keys:
            gain = Row("bw", "pipelining gain, %s >= %s" % (direction, fmt_size(BW_TARGET_MIN)),
                       "gain", "x", None, None, None, target="report (VOCL / no-pipeline)")
            if gains:
                gain.vocl = geomean(gains)
                gain.verdict = "gain %.2fx" % gain.vocl
            elif nopipe is None:
                gain.verdict = "n/a (no no-pipeline run)"
            else:
                gain.verdict = "n/a (no size >= %s)" % fmt_size(BW_TARGET_MIN)
            rows.append(gain)

    for key in ordered_keys(runs, "lat"):
        labels = {"read4": "read 4 B, blocking", "write4": "write 4 B, blocking",
                  "kernel_finish": "1-item kernel + clFinish",
                  "read4_idle": "read 4 B after 10 ms idle, blocking"}
        row = Row("lat", labels.get(key[1], key[1]), key[2], "s", *triple(key))
        if key[1] == "read4":
            row.target = "<= native + %d us" % round(LAT_TARGET_EXTRA * 1e6)
            if row.native is not None and row.vocl is not None:
                row.verdict = verdict(row.vocl <= row.native + LAT_TARGET_EXTRA)
            else:
                row.verdict = "n/a"
        rows.append(row)

    for key in ordered_keys(runs, "launch"):
        n, _, nargs = key[1].partition("x")
        row = Row("launch", "%s launches, %s args, total" % (n, nargs), key[2], "s", *triple(key))
        row.target = "<= %.1fx native" % LAUNCH_TARGET
        if row.native is not None and row.vocl is not None:
            row.verdict = verdict(row.vocl <= LAUNCH_TARGET * row.native)
        else:
            row.verdict = "n/a"
        rows.append(row)

    client = ("rss", "client", "")
    if any(value_of(r, client) is not None for r in runs):
        rows.append(Row("rss", "client process", "client", "KiB", *triple(client)))
        proxy = Row("rss", "proxy (native: the native process)", "proxy", "KiB",
                    value_of(native, client),
                    vocl.proxy_rss_kib if vocl else None,
                    nopipe.proxy_rss_kib if nopipe else None)
        if proxy.vocl is None:
            proxy.verdict = "n/a: the proxy wrote no VOCL_PROXY_RUSAGE"
        rows.append(proxy)
    return rows


COLUMNS = ("metric", "native", "VOCL", "ratio", "VOCL no-pipeline", "target / verdict")


def row_cells(row):
    tv = row.target
    if row.verdict:
        tv = "%s: %s" % (tv, row.verdict) if tv else row.verdict
    if row.unit == "x":  # a derived row: its value is in the verdict
        return [row.metric, "", "", "", "", tv]
    r = row.ratio
    return [row.metric, fmt_value(row.native, row.unit), fmt_value(row.vocl, row.unit),
            "%.2fx" % r if r is not None else "-", fmt_value(row.nopipe, row.unit), tv]


def print_rows(header, rows):
    """The table, each section under its title."""
    lines, section = [], None
    for row in rows:
        if row.section != section:
            section = row.section
            lines.append(SECTION_TITLES[section])
        lines.append(row_cells(row))
    print_table(header, COLUMNS, lines)


def write_rows(path, rows):
    def num(v):
        return "" if v is None else "%.6g" % v

    write_csv(path, ["section", "metric", "param", "unit", "native", "vocl", "ratio",
                     "vocl_nopipe", "target", "verdict"],
              [[r.section, r.metric, r.param, r.unit, num(r.native), num(r.vocl),
                num(r.ratio), num(r.nopipe), r.target, r.verdict] for r in rows])


# ---- the plot ----


def save_rows(path, rows):
    """The table as CSV at path (said on stdout); False when it cannot be written."""
    try:
        write_rows(path, rows)
    except OSError as e:
        note("cannot write %s: %s" % (path, e))
        return False
    print("CSV written to %s" % path)
    return True


def plot_backend():
    if pyplot_or_reason(PROG)[0] is not None:
        return "matplotlib"
    if shutil.which("gnuplot"):
        return "gnuplot"
    return None


def bw_series(native, vocl, nopipe):
    """[(title, run index, [(bytes, B/s), ...]), ...] for every run and
    direction: one colour per run, solid lines for writes, dashed for reads."""
    series = []
    runs = (("native", native), ("VOCL", vocl), ("VOCL no-pipeline", nopipe))
    for index, (label, run) in enumerate(runs):
        if run is None:
            continue
        for direction in ("write", "read"):
            pts = sorted((int(k[2]), v[0]) for k, v in run.values.items()
                         if k[0] == "bw" and k[1] == direction)
            if pts:
                series.append(("%s %s" % (label, direction), index, pts))
    return series


def plot_matplotlib(path, series, title):
    import matplotlib.pyplot as plt  # (plot_backend chose the Agg backend)
    import matplotlib.ticker

    fig, ax = plt.subplots(figsize=(9, 5.5))
    for name, index, pts in series:
        style = "-" if name.endswith("write") else "--"
        ax.plot([p[0] / 2**20 for p in pts], [p[1] / 1e9 for p in pts], style, marker="o",
                color="C%d" % index, label=name)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.set_ylim(bottom=0)
    ax.set_xlabel("transfer size (MiB)")
    ax.set_ylabel("bandwidth (GB/s)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def gnuplot_quote(s):
    return "'" + s.replace("'", "''") + "'"


def plot_gnuplot(path, series, title):
    with tempfile.TemporaryDirectory(prefix="vocl-bench-") as tmp:
        data = os.path.join(tmp, "bw.dat")
        with open(data, "w") as f:
            for _, _, pts in series:
                for size, bw in pts:
                    f.write("%.6g %.6g\n" % (size / 2**20, bw / 1e9))
                f.write("\n\n")  # gnuplot: the next `index`
        plots = ", ".join(
            "%s index %d with linespoints linecolor %d dashtype %d title %s"
            % (gnuplot_quote(data), i, index + 1, 1 if name.endswith("write") else 2,
               gnuplot_quote(name))
            for i, (name, index, _) in enumerate(series))
        body = ("set output %s\nset logscale x 2\nset xlabel 'transfer size (MiB)'\n"
                "set ylabel 'bandwidth (GB/s)'\nset yrange [0:*]\nset title %s noenhanced\nset key noenhanced\n"
                "set grid\nplot %s\n" % (gnuplot_quote(path), gnuplot_quote(title), plots))
        # pngcairo looks better; plain png is what a build without cairo has.
        for terminal in ("pngcairo size 900,550", "png size 900,550"):
            script = "set terminal %s\n%s" % (terminal, body)
            p = subprocess.run(["gnuplot"], input=script, universal_newlines=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if p.returncode == 0:
                return
        raise RuntimeError("gnuplot failed: " + p.stderr.strip())


def plot(path, backend, series, title):
    if not series:
        raise RuntimeError("no bandwidth measurements to plot (section b did not run)")
    if backend == "matplotlib":
        plot_matplotlib(path, series, title)
    else:
        plot_gnuplot(path, series, title)


# ---- --cluster: two hosts of a vocl-cluster, over the shaped link ----

# The targets of issue 22, against raw MPI between the same two hosts.
CLUSTER_BW_TARGET = 0.97
CLUSTER_LAT_EXTRA = 10e-6


# The network's own ceiling: one TCP stream of 1 GiB in 4 MiB sends from
# vc1 to vc2 (Python sockets), in B/s, or None.
TCP_SINK = """
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5299)); s.listen(1); s.settimeout(30)
c, _ = s.accept(); c.settimeout(30); buf = bytearray(4 << 20); n = 0; t0 = None
while True:
    k = c.recv_into(buf)
    if not k: break
    t0 = t0 or time.monotonic(); n += k
print(n / (time.monotonic() - t0))
"""
TCP_SOURCE = """
import socket, time
for i in range(50):
    try: c = socket.create_connection(("vc2", 5299), timeout=30); break
    except OSError: time.sleep(0.1)
buf = b"x" * (4 << 20)
for i in range(256): c.sendall(buf)
c.close()
"""


def tcp_stream(cluster):
    sink = subprocess.Popen([cluster, "exec", "vc2", "python3", "-c", TCP_SINK],
                            stdout=subprocess.PIPE, universal_newlines=True)
    try:
        subprocess.run([cluster, "exec", "vc1", "python3", "-c", TCP_SOURCE], timeout=60)
        out, _ = sink.communicate(timeout=60)
        return float(out)
    except (subprocess.TimeoutExpired, ValueError):
        sink.kill()
        sink.wait()
        return None


def merge_rounds(runs):
    """One Run whose values are the medians of the rounds' runs."""
    merged = Run(runs[0].label, runs[0].cmd, runs[0].env)
    keys = []
    for r in runs:
        keys += [k for k in r.values if k not in keys]
    for k in keys:
        got = [r.values[k] for r in runs if k in r.values]
        merged.values[k] = (statistics.median([v for v, _ in got]), got[0][1])
    failed = [r for r in runs if not r.ok]
    merged.error = failed[0].error if failed else None
    return merged


def cluster_round(cluster, worker, pingpong, wargs, pargs, env, r, vocl_run, libvocl, tmp):
    """One round's runs: native (the worker on vc1), raw MPI (mpi-pingpong
    between vc1 and vc2) and VOCL (the worker on vc1, its device served from
    vc2).  Job mode: MPICH's mpiexec and vocl_run on the login node with
    the cluster's environment.  Daemon mode (libvocl given): UCX, no
    mpiexec; ucx-pingpong on vc1 connects to one accepting on vc2, and the
    worker runs under LD_PRELOAD, its device the daemon's on vc2 (tmp: the
    port files)."""
    native = Run("native", [cluster, "exec", "vc1", worker] + wargs, env)
    if libvocl:
        pfile = os.path.join(tmp, "pingpong-%d.port" % r)
        mpi = Run("raw UCX", [cluster, "exec", "vc1", pingpong, "--connect", "@" + pfile] + pargs,
                  env)
        mpi.peer = [cluster, "exec", "vc2", pingpong, "--accept", "0.0.0.0", "--port-file",
                    pfile] + pargs
        vocl = Run("VOCL", [cluster, "exec", "vc1", "env", "LD_PRELOAD=" + libvocl,
                            "VOCL_PROXIES=" + daemon_port_file(tmp, 1), worker] + wargs, env)
    else:
        on_head = [cluster, "exec", "vchead", "bash", "-c",
                   'eval "$("$0" env)" && exec "$@"', cluster]
        mpi = Run("raw MPI", on_head + ["mpiexec", "-n", "2", pingpong] + pargs, env)
        vocl = Run("VOCL", on_head + [vocl_run, "-n", "1", "-d", "1", "--", worker] + wargs,
                   env)
    return [native, mpi, vocl]


def run_with_peer(run, tmp, timeout):
    """run_worker, with run.peer (if any) listening first and reaped after."""
    peer = None
    if run.peer:
        peer = start_listening(run.peer, run.env, os.path.join(tmp, "peer.log"),
                               "the %s run's peer" % run.label)
    run_worker(run, timeout)
    if peer:
        try:
            peer.wait(10)
        except subprocess.TimeoutExpired:
            stop_all([peer])


def cluster_main(a, worker, vocl_run):
    """Native (the worker on vc1), raw MPI (mpi-pingpong, vc1 to vc2) and
    VOCL (the worker on vc1, its proxy on vc2) in one run, side by side; in
    job mode (mpiexec, vocl-run) or, with --daemons, in daemon mode (a
    daemon on vc2, no mpiexec; raw UCX, ucx-pingpong, as the yardstick)."""
    cluster = a.vocl_cluster or find_first(CLUSTER_CANDIDATES) or shutil.which("vocl-cluster")
    pingpong = a.pingpong or find_first(PINGPONG_CANDIDATES)
    if not cluster or not pingpong:
        die("--cluster needs vocl-cluster and mpi-pingpong (a build tree's; "
            "--vocl-cluster, --pingpong)")
    libvocl = None
    if a.daemons:
        libvocl, proxyd = daemon_programs()
        upingpong = find_first(UCX_PINGPONG_CANDIDATES)
        if not upingpong:
            die("--cluster --daemons needs ucx-pingpong (a build tree's)")
    sizes = a.sizes or "1M,4M,16M,64M"
    window, reps = str(a.window or 8), str(a.reps or 3)
    wargs = ["--sections", "bw,lat", "--sizes", sizes, "--window", window, "--reps", reps]
    pargs = ["--sizes", sizes, "--window", window, "--reps", reps]
    up = subprocess.run([cluster, "up", "-n", "2", "-r", a.rate])
    if up.returncode == 77:
        note("skipped: the machine cannot make network namespaces (vocl-cluster check)")
        return 77
    if up.returncode != 0:
        die("vocl-cluster up failed", EXIT_RUN_FAILED)
    # A shared machine's speed drifts within seconds: the three runs take
    # turns, ROUNDS times, and each figure is the median of its rounds.
    rounds = []
    tcp = []
    procs = []
    with tempfile.TemporaryDirectory(prefix="vocl-bench-") as tmp:
        try:
            env = dict(os.environ, POCL_DEVICES="pthread")
            env.pop("VOCL_PIPELINE", None)
            if a.daemons:
                # (UCX on the harness's interfaces: the namespaces have no other.)
                procs, env = start_daemons(tmp, proxyd, 1, dict(env, UCX_NET_DEVICES="all"),
                                           "0.0.0.0", [cluster, "exec", "vc2"])
            for r in range(a.rounds):
                note("round %d of %d" % (r + 1, a.rounds))
                runs = cluster_round(cluster, worker, upingpong if a.daemons else pingpong, wargs,
                                     pargs, env, r, vocl_run, libvocl, tmp)
                for run in runs:
                    run_with_peer(run, tmp, a.timeout)
                rounds.append(runs)
                tcp.append(tcp_stream(cluster))
        finally:
            stop_all(procs)
            subprocess.run([cluster, "down"])
    runs = [merge_rounds([rd[i] for rd in rounds]) for i in range(3)]
    native, mpi, vocl = runs
    table = []
    verdicts = []

    def val(run, key):
        return value_of(run, key)

    for direction in ("write", "read"):
        keys = sorted({k for r in runs for k in r.values if k[0] == "bw" and k[1] == direction},
                      key=lambda k: int(k[2]))
        for key in keys:
            n, m, v = val(native, key), val(mpi, key), val(vocl, key)
            tv = ""
            if int(key[2]) >= BW_TARGET_MIN:
                ok = m is not None and v is not None and v >= CLUSTER_BW_TARGET * m
                verdicts.append(ok)
                tv = ">= %d%% %s: %s" % (round(CLUSTER_BW_TARGET * 100), "UCX" if a.daemons else "MPI", verdict(ok))
            r = ratio(v, m)
            table.append(("%s %s" % (direction, fmt_size(int(key[2]))), fmt_value(n, "B/s"),
                          fmt_value(m, "B/s"), fmt_value(v, "B/s"),
                          "%.2f" % r if r is not None else "-", tv))
    n, m, v = val(native, ("lat", "read4", "")), val(mpi, ("lat", "rtt4", "4")), \
        val(vocl, ("lat", "read4", ""))
    table.append(("4-byte round trip (blocking read)", fmt_value(n, "s"), fmt_value(m, "s"),
                  fmt_value(v, "s"), "%+.1f us" % ((v - m) * 1e6) if m and v else "-",
                  "report (the device's read in it)"))
    # The target is raw MPI + 10 us where the device allows: VOCL's read is
    # the device's own read plus MPI's two messages plus what VOCL adds, so
    # each round's native read (the same device, moments apart) comes out.
    lat = [(value_of(rd[0], ("lat", "read4", "")), value_of(rd[1], ("lat", "rtt4", "4")),
            value_of(rd[2], ("lat", "read4", ""))) for rd in rounds]
    lat = [t for t in lat if None not in t]
    less = statistics.median([rv - rn for rn, _, rv in lat]) if lat else None
    added = statistics.median([rv - rn - rm for rn, rm, rv in lat]) if lat else None
    ok = added is not None and added <= CLUSTER_LAT_EXTRA
    verdicts.append(ok)
    table.append(("the same, less the device's own read", "-", fmt_value(m, "s"),
                  fmt_value(less, "s"), "%+.1f us" % (added * 1e6) if lat else "-",
                  "<= %s + %d us: %s" % ("UCX" if a.daemons else "MPI",
                                         round(CLUSTER_LAT_EXTRA * 1e6), verdict(ok))))
    if a.daemons:
        how = ("--cluster --daemons 1 (daemon mode: UCX, no mpiexec): hosts vc1 "
               "(application under LD_PRELOAD, ucx-pingpong --connect) and vc2 (voclproxyd "
               "--listen, ucx-pingpong --accept)")
    else:
        how = "--cluster: hosts vc1 (application) and vc2 (proxy / MPI rank 1)"
    print_table("%s %s %s, link %s each way (tc tbf), TCP; window %s, median of %s "
                "repetitions, median of %d rounds" % (PROG, VERSION, how, a.rate, window, reps,
                                                     a.rounds),
                ("metric", "native", "raw UCX" if a.daemons else "raw MPI", "VOCL",
                 "VOCL/UCX" if a.daemons else "VOCL/MPI", "target / verdict"), table,
                footer=["targets: %d PASS, %d MISS" % (verdicts.count(True),
                                                       verdicts.count(False))])
    got = sorted(t for t in tcp if t is not None)
    if got:
        print("the network's ceiling: one TCP stream vc1 -> vc2 (1 GiB, 4 MiB sends): %s "
              "(median of %d)" % (fmt_value(got[len(got) // 2], "B/s"), len(got)))
    def num(*xs):
        return ["%.6g" % x if x is not None else "" for x in xs]

    bw_keys = sorted({(k[1], k[2]) for r in (native, vocl) for k in r.values if k[0] == "bw"},
                     key=lambda k: (k[0], int(k[1])))
    try:
        write_csv(a.csv, ["metric", "native", "raw_mpi", "vocl", "unit"],
                  [["%s %s" % k] + num(*(val(r, ("bw",) + k) for r in (native, mpi, vocl))) +
                   ["B/s"] for k in bw_keys] + [["rtt4"] + num(n, m, v) + ["s"],
                                                 ["rtt4 less device"] + num(None, m, less) +
                                                 ["s"]])
        print("CSV written to %s" % a.csv)
    except OSError as e:
        note("cannot write %s: %s" % (a.csv, e))
    failed = [r for r in runs if not r.ok]
    for r in failed:
        print("the %s run FAILED: %s" % (r.label, r.error))
    return EXIT_RUN_FAILED if failed else EXIT_OK


# ---- --pyopencl: a suite of many small calls, natively and through VOCL ----

PYOPENCL_TARGET = 1.15  # VOCL's wall time over native's, the whole suite
# Runs a script as its own __main__ and says how long it took, from its
# first line to its last (not the interpreter's start, nor libvocl's end).
PY_TIMER = """
import os, runpy, sys, time
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
t0 = time.perf_counter()
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:  # (a script may end with sys.exit)
    sys.stderr.write("vocl-bench-script-seconds %.6f\\n" % (time.perf_counter() - t0))
"""
SCRIPT_SECONDS = re.compile(r"^vocl-bench-script-seconds ([0-9.]+)$", re.M)


def start_daemons(tmp, proxyd, n, env, address="127.0.0.1", daemons_on=(), options=()):
    """n daemons (bench1..benchN, one PoCL device each) listening on
    address, each on a port the kernel picks, written to tmp/benchI.port,
    with options added (--daemon-option); each command after the prefix
    daemons_on (vocl-cluster exec HOST), else on this node; (their
    processes, the clients' environment).  UCX is kept on loopback unless
    the caller's environment says otherwise."""
    env = dict(env, HOME=os.path.join(tmp, "home"), VOCL_CTL_DIR=os.path.join(tmp, "ctl"),
               POCL_DEVICES="pthread")
    env.setdefault("UCX_NET_DEVICES", "lo")
    for k in ("VOCL_APP_RANKS", "VOCL_CONNECT", "VOCL_PROXIES", "VOCL_PROXIES_FILE"):
        env.pop(k, None)
    os.makedirs(env["HOME"])
    procs = []
    try:
        for i in range(1, n + 1):
            # bench1 serves every section: its peak memory at exit (SIGTERM).
            denv = dict(env, VOCL_PROXY_RUSAGE=os.path.join(tmp, "rusage")) if i == 1 else env
            procs.append(start_listening(
                list(daemons_on) + [proxyd, "--listen", "--name", "bench%d" % i, "-v",
                                    "--address", address, "--port", "0",
                                    "--port-file", daemon_port_file(tmp, i)] + list(options),
                denv,
                os.path.join(tmp, "bench%d.log" % i), "daemon bench%d" % i))
    except BaseException:
        stop_all(procs)
        raise
    return procs, env


def daemon_port_file(tmp, i):
    """Where daemon benchI says where it listens (HOST:PORT)."""
    return os.path.join(tmp, "bench%d.port" % i)


def start_listening(cmd, env, log, what, hint=""):
    """cmd in the background, its output in log, once it says "listening
    on" (voclproxyd --listen, mpi-pingpong --accept); dies with its last
    words where it ends first or says nothing in 30 s."""
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT)

    def listening():
        if proc.poll() is not None:
            die("%s ended: %s%s" % (what, open(log).read().strip()[-300:], hint),
                EXIT_RUN_FAILED)
        return "listening on" in open(log).read()
    try:
        wait_for(listening, 30, what)
    except BaseException:
        stop_all([proc])
        raise
    return proc


def stop_all(procs):
    """Ends start_daemons' processes (or any list): SIGTERM, then SIGKILL
    after 10 s."""
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def wait_for(ready, seconds, what):
    for _ in range(int(seconds * 10)):
        if ready():
            return
        time.sleep(0.1)
    die("%s: not there after %d s" % (what, seconds), EXIT_RUN_FAILED)


def daemon_programs():
    """(libvocl.so, voclproxyd): a build tree's, or the installed ones."""
    libvocl = find_first(LIBVOCL_CANDIDATES)
    proxyd = find_first(PROXYD_CANDIDATES)
    if not libvocl or not proxyd:
        die("--daemons needs libvocl.so and voclproxyd (a build tree's, or installed)")
    return libvocl, proxyd


def daemon_main(a, worker):
    """Native, and the worker alone under LD_PRELOAD against daemons
    (voclproxyd --listen) of this node: one daemon for every section, and
    all of them (--daemons) for the first call, which connects to each."""
    libvocl, proxyd = daemon_programs()
    wargs = worker_args(a)
    base = dict(os.environ)
    base.pop("VOCL_PIPELINE", None)
    with tempfile.TemporaryDirectory(prefix="vocl-bench-") as tmp:
        procs, env = start_daemons(tmp, proxyd, a.daemons, base,
                                   options=a.daemon_option or ())
        try:
            native = Run("native", [worker] + wargs, env)
            one = Run("VOCL, 1 daemon", [worker] + wargs,
                      dict(env, LD_PRELOAD=libvocl, VOCL_PROXIES=daemon_port_file(tmp, 1)))
            names = ",".join(daemon_port_file(tmp, i) for i in range(1, a.daemons + 1))
            every = Run("VOCL, %d daemons" % a.daemons, [worker, "--sections", "call", "--quick"],
                        dict(env, LD_PRELOAD=libvocl, VOCL_PROXIES=names))
            runs = [native, one, every]
            for run in runs:
                run_worker(run, a.timeout)
            # Raw UCX between two programs started alone, as a client and
            # its daemon meet: the yardstick of daemon mode's round trip.
            pingpong = find_first(UCX_PINGPONG_CANDIDATES)
            mpi = None
            if pingpong:
                pfile = os.path.join(tmp, "pingpong.port")
                mpi = Run("raw UCX", [pingpong, "--connect", "@" + pfile, "--sizes", "4K"], env)
                mpi.peer = [pingpong, "--accept", "127.0.0.1", "--port-file", pfile,
                            "--sizes", "4K"]
                run_with_peer(mpi, tmp, a.timeout)
                runs.append(mpi)
        finally:
            stop_all(procs)
        one.proxy_rss_kib = read_proxy_rusage(os.path.join(tmp, "rusage"))
    device = native.info.get("device") or one.info.get("device") or "?"
    print("%s %s: device '%s', natively and through voclproxyd --listen on this node "
          "(daemon mode; the application alone under LD_PRELOAD, no mpiexec)"
          % (PROG, VERSION, device))
    rows = build_rows(native, one, None)
    # Daemon mode's round-trip target is raw UCX's (two programs over TCP,
    # not one job's shared memory) + 10 us where the device allows: the
    # device's own read (the native row) comes out.
    rtt = value_of(mpi, ("lat", "rtt4", "4"))
    for row in rows:
        if row.metric == "read 4 B, blocking" and row.native is not None and row.vocl is not None:
            row.target = "<= UCX (%s) + %d us, less native" % (
                fmt_value(rtt, "s") if rtt else "?", round(CLUSTER_LAT_EXTRA * 1e6))
            row.verdict = verdict(row.vocl - row.native - rtt <= CLUSTER_LAT_EXTRA) \
                if rtt else "n/a (no ucx-pingpong run)"
    first = ("call", "clGetPlatformIDs", "first")
    rows.insert(0, Row("call", "first call, connecting to %d daemons" % a.daemons, "first", "s",
                       value_of(native, first), value_of(every, first), None,
                       target="report"))
    print_rows("columns: native | 1 daemon | ratio", rows)
    ok = all(r.ok for r in runs)
    for r in runs:
        if not r.ok:
            print("the %s run FAILED: %s" % (r.label, r.error))
    ok = save_rows(a.csv, rows) and ok
    return EXIT_OK if ok else EXIT_RUN_FAILED


# ---- --breakdown ----

BREAKDOWN_LAUNCHES = 2000


def trace_events(path):
    """The trace's complete events (ph X): (the application's pid, events)."""
    with open(path) as f:
        t = json.load(f)["traceEvents"]
    app = next(e["pid"] for e in t if e.get("ph") == "M" and
               e["args"]["name"].startswith("application"))
    return app, [e for e in t if e.get("ph") == "X"]


def read_parts(app, events):
    """Each 4-byte blocking read's microseconds, cut where its request left
    the client, where the proxy began and ended serving it, and where the
    reply reached the client (one clock: the proxy is on this node)."""
    served = sorted((e["ts"], e["dur"]) for e in events
                    if e["pid"] != app and e["name"] == "clEnqueueReadBuffer")
    starts = [t for t, _ in served]
    parts = []
    for e in events:
        a = e.get("args", {})
        if e["pid"] != app or e["name"] != "clEnqueueReadBuffer" or a.get("bytes") != 4 \
                or not a.get("posted") or not a.get("replied"):
            continue
        left, back = e["ts"] + a["posted"], e["ts"] + a["replied"]
        i = bisect.bisect_left(starts, left)
        if i == len(starts) or starts[i] > back:
            continue
        begin, dur = served[i]
        parts.append((a["posted"], begin - left, dur, back - begin - dur,
                      e["dur"] - a["replied"], e["dur"]))
    return parts


def launch_parts(app, events):
    """Median microseconds of one launch: the client's 7 clSetKernelArg and
    its clEnqueueNDRangeKernel, and the proxy's serving of it."""
    def med(pid_is_app, name):
        v = [e["dur"] for e in events if (e["pid"] == app) == pid_is_app and e["name"] == name]
        return statistics.median(v) if v else None
    args, launch = med(True, "clSetKernelArg"), med(True, "clEnqueueNDRangeKernel")
    client = 7 * args + launch if args is not None and launch is not None else None
    return client, med(False, "clEnqueueNDRangeKernel")


def breakdown_main(a, worker, vocl_run):
    """--breakdown: where the microseconds of a 4-byte blocking read and of
    an asynchronous launch go, natively and through VOCL (VOCL_TRACE), in
    --rounds alternating runs; each figure the median over the rounds."""
    wargs = ["--sections", "lat,launch", "--launches", str(a.launches or BREAKDOWN_LAUNCHES),
             "--reps", str(a.reps or 3)] + (["--quick"] if a.quick else [])
    base_env = dict(os.environ)
    got = {"native": [], "vocl": [], "read": [], "launch": []}
    ok = True
    with tempfile.TemporaryDirectory(prefix="vocl-bench-") as tmp:
        if a.daemons:
            # Daemon mode: one daemon of this node (its clock is the client's).
            libvocl, proxyd = daemon_programs()
            procs, base_env = start_daemons(tmp, proxyd, 1, base_env)
            vocl_cmd = []
            vocl_env = dict(base_env, LD_PRELOAD=libvocl, VOCL_PROXIES=daemon_port_file(tmp, 1))
            how = "voclproxyd --listen, this node"
        else:
            procs = []
            vocl_cmd = [vocl_run, "-n", "1"] + ([] if "POCL_DEVICES" in base_env else
                                                ["-d", "1"]) + ["--"]
            vocl_env = base_env
            how = "vocl-run -n 1"
        native_env = dict(base_env)
        native_env.setdefault("POCL_DEVICES", "pthread")
        try:
            for r in range(a.rounds):
                trace = os.path.join(tmp, "trace-%d.json" % r)
                native = Run("native", [worker] + wargs, native_env)
                vocl = Run("VOCL", vocl_cmd + [worker] + wargs, dict(vocl_env, VOCL_TRACE=trace))
                for run in (native, vocl):
                    run_worker(run, a.timeout)
                if not (native.ok and vocl.ok):
                    ok = False
                    continue
                got["native"].append(native)
                got["vocl"].append(vocl)
                app, events = trace_events(trace)
                parts = read_parts(app, events)
                if parts:
                    got["read"].append([statistics.median(p[k] for p in parts)
                                        for k in range(6)])
                got["launch"].append(launch_parts(app, events))
        finally:
            stop_all(procs)
    if not got["native"] or not got["read"]:
        print("no round gave a breakdown")
        return EXIT_RUN_FAILED

    def med(xs):
        xs = [x for x in xs if x is not None]
        return statistics.median(xs) if xs else None

    def us(v):
        return "-" if v is None else "%.1f us" % v

    def value(runs, key):
        return med([r.values.get(key, (None,))[0] for r in runs])

    n = int(wargs[3])
    read_native = value(got["native"], ("lat", "read4", ""))
    launch_key = ("launch", "%dx7" % n, "")
    launch_native, launch_vocl = value(got["native"], launch_key), value(got["vocl"], launch_key)
    rd = [med([r[k] for r in got["read"]]) for k in range(6)]
    client_launch = med([c for c, _ in got["launch"]])
    proxy_launch = med([p for _, p in got["launch"]])
    per = (lambda t: None if t is None else t / n * 1e6)
    rows = [
        "4-byte blocking read (clEnqueueReadBuffer), the median read",
        ["total", us(read_native and read_native * 1e6), us(rd[5]), ""],
        ["client: checks, encoding, until the request is handed to MPI", "", us(rd[0]), ""],
        ["to the proxy: MPI and the proxy's wake-up", "", us(rd[1]), ""],
        ["proxy: decoding, the native call, the reply made", "", us(rd[2]), ""],
        ["back: the reply sent, MPI and the client's wake-up", "", us(rd[3]), ""],
        ["client: after the reply (decoding, the copy)", "", us(rd[4]), ""],
        "asynchronous launch, 7 arguments set before each (%d in a row, then clFinish)" % n,
        ["total, per launch", us(per(launch_native)), us(per(launch_vocl)),
         "%.2fx" % (launch_vocl / launch_native) if launch_native and launch_vocl else "-"],
        ["client: 7 clSetKernelArg and clEnqueueNDRangeKernel (medians)", "",
         us(client_launch), ""],
        ["proxy: one launch served (median)", "", us(proxy_launch), ""],
    ]
    rows[1][3] = "%.2fx" % (rd[5] / (read_native * 1e6)) if read_native and rd[5] else "-"
    print_table("%s %s --breakdown: medians of %d alternating rounds (VOCL: %s, "
                "VOCL_TRACE)" % (PROG, VERSION, len(got["read"]), how),
                ["", "native", "VOCL", "ratio"], rows,
                footer=["The client and the proxy run at once: a launch costs the larger of "
                        "their times, a read their sum.",
                        "VOCL_BATCH=%s, VOCL_BATCH_US=%s" %
                        (base_env.get("VOCL_BATCH", "default"),
                         base_env.get("VOCL_BATCH_US", "default"))])
    write_csv(a.csv, ["row", "native", "vocl", "ratio"],
              [r for r in rows if not isinstance(r, str)])
    return EXIT_OK if ok else EXIT_RUN_FAILED


def run_script(label, cmd, env, timeout):
    """(wall seconds, script seconds), or None with a note on failure."""
    rc, out, err, wall, timed_out = run_cmd(cmd, env, timeout)
    m = SCRIPT_SECONDS.search(err)
    why = ("timed out after %d s" % timeout if timed_out else
           "exit status %d" % rc if rc else
           "a FAIL line" if re.search(r"^FAIL ", out, re.M) else
           "no PASS line" if not re.search(r"^PASS ", out, re.M) else
           "no time printed" if not m else None)
    if why:
        note("%s FAILED (%s); its stderr ends with:" % (label, why))
        for line in err.splitlines()[-10:]:
            print("    " + line, file=sys.stderr)
        return None
    return wall, float(m.group(1))


def pyopencl_main(a, vocl_run):
    """Every PyOpenCL script of a directory (tests/external/pyopencl: each
    checks its results against NumPy), natively and under vocl-run -n 1 -d 1,
    taking turns, ROUNDS times; the median wall time of each, and of the
    script's own part (without the interpreter's start and libvocl's end)."""
    py = a.python
    if subprocess.run([py, "-c", "import pyopencl, numpy"], stderr=subprocess.DEVNULL).returncode:
        die("--pyopencl needs %s with pyopencl and numpy (Debian: apt-get install "
            "python3-pyopencl python3-numpy; or --python)" % py)
    scripts = sorted(f for f in os.listdir(a.pyopencl)
                     if f.endswith(".py") and f not in ("common.py", "multidevice.py"))
    if not scripts:
        die("no PyOpenCL scripts (*.py) in %s" % a.pyopencl)
    walls = {s: ([], []) for s in scripts}
    own = {s: ([], []) for s in scripts}
    failed = 0
    with tempfile.TemporaryDirectory(prefix="vocl-bench-") as tmp:
        # PyOpenCL builds every program from source (as tests/external does);
        # PoCL's own compiler cache stays on for both.
        env = dict(os.environ, PYOPENCL_NO_CACHE="1", PYTHONDONTWRITEBYTECODE="1",
                   XDG_CACHE_HOME=tmp, POCL_DEVICES=os.environ.get("POCL_DEVICES", "pthread"))
        for r in range(a.rounds):
            note("round %d of %d" % (r + 1, a.rounds))
            for s in scripts:
                cmd = [py, "-c", PY_TIMER, os.path.join(a.pyopencl, s)]
                for i, full in enumerate((cmd, [vocl_run, "-n", "1", "-d", "1", "--"] + cmd)):
                    got = run_script("%s %s" % (("native", "VOCL")[i], s), full, env, a.timeout)
                    if got is None:
                        failed += 1
                        continue
                    walls[s][i].append(got[0])
                    own[s][i].append(got[1])
    rows = []
    for section, table in (("pyopencl-wall", walls), ("pyopencl-own", own)):
        meds = {s: [statistics.median(x) if x else None for x in table[s]] for s in scripts}
        rows += [Row(section, s[:-3], "", "s", n, v, None) for s, (n, v) in meds.items()]
        # A total only where every script ran both ways.
        n, v = (None if any(m[i] is None for m in meds.values())
                else sum(m[i] for m in meds.values()) for i in (0, 1))
        rows.append(Row(section, "all %d scripts" % len(scripts), "", "s", n, v, None,
                        "<= %.2fx native" % PYOPENCL_TARGET,
                        "n/a" if n is None or v is None else verdict(v <= PYOPENCL_TARGET * n)))
    print_rows("%s %s --pyopencl: %d scripts of %s, natively and under %s -n 1 "
               "-d 1, median of %d rounds" % (PROG, VERSION, len(scripts), a.pyopencl,
                                            os.path.basename(vocl_run), a.rounds), rows)
    try:
        write_rows(a.csv, rows)
        print("CSV written to %s" % a.csv)
    except OSError as e:
        note("cannot write %s: %s" % (a.csv, e))
    if failed:
        print("%d runs FAILED" % failed)
    return EXIT_RUN_FAILED if failed else EXIT_OK


# ---- main ----


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Run one OpenCL device natively and through VOCL (vocl-run) in one go "
                    "and compare: per-call overhead, bandwidth, latency, launch throughput, "
                    "peak memory.",
        epilog="Exit status: 0 when every run succeeded (missed targets are reported, not "
               "errors), 1 when a run failed or its results did not verify, 2 on a usage "
               "error.")
    p.add_argument("--quick", action="store_true",
                   help="tiny sizes and iteration counts: a smoke test, not a measurement")
    p.add_argument("--sections", metavar="LIST",
                   help="any of a,b,c,d (or call,bw,lat,launch); default all")
    p.add_argument("--sizes", metavar="LIST",
                   help="transfer sizes, e.g. 512K,16M,64M (default 512K..64M, doubling)")
    p.add_argument("--window", metavar="N", type=int,
                   help="non-blocking transfers per window (default 32)")
    p.add_argument("--reps", metavar="N", type=int,
                   help="timed repetitions after one warm-up (default 5)")
    p.add_argument("--launches", metavar="N", type=int,
                   help="kernels per launch-throughput repetition (default 10000)")
    p.add_argument("--device", metavar="N", type=int,
                   help="device index, natively and on the VOCL platform (default 0)")
    p.add_argument("--csv", metavar="FILE", default="vocl-bench.csv",
                   help="where the table goes as CSV (default vocl-bench.csv)")
    p.add_argument("--plot", metavar="FILE.png",
                   help="draw bandwidth against size (matplotlib, else gnuplot)")
    p.add_argument("--vocl-run", metavar="PATH", help="the vocl-run to use")
    p.add_argument("--worker", metavar="PATH", help="the vocl-bench-worker to use")
    p.add_argument("--no-pipeline-run", action="store_true",
                   help="skip the third run (VOCL with VOCL_PIPELINE=0)")
    p.add_argument("--daemons", metavar="N", type=int, default=0,
                   help="instead: natively and through voclproxyd --listen on this node "
                        "(daemon mode, over UCX), N daemons for the "
                        "first call's connect time, one for the rest; with --cluster "
                        "(N = 1): in daemon mode there")
    p.add_argument("--daemon-option", metavar="OPTION", action="append",
                   help="--daemons: give the daemons this option too (repeat for more; "
                        "--daemon-option=--busy-share)")
    p.add_argument("--cluster", action="store_true",
                   help="instead: native, raw MPI and VOCL between two hosts of a "
                        "vocl-cluster (network namespaces, needs root) on a shaped link; "
                        "in job mode (mpiexec, vocl-run), or with --daemons 1 in daemon "
                        "mode (a daemon on the second host, raw UCX: ucx-pingpong)")
    p.add_argument("--rate", default="10gbit",
                   help="--cluster: the link rate, 10gbit, 25gbit or none (default 10gbit)")
    p.add_argument("--rounds", metavar="N", type=int, default=3,
                   help="--cluster, --pyopencl, --breakdown: rounds of the runs, taking "
                        "turns (default 3)")
    p.add_argument("--vocl-cluster", metavar="PATH", help="--cluster: the vocl-cluster to use")
    p.add_argument("--pingpong", metavar="PATH", help="--cluster: the mpi-pingpong to use")
    p.add_argument("--pyopencl", metavar="DIR",
                   help="instead: time every PyOpenCL script of DIR (tests/external/pyopencl) "
                        "natively and through VOCL, --rounds times")
    p.add_argument("--breakdown", action="store_true",
                   help="instead: where the microseconds of a 4-byte blocking read and of "
                        "an asynchronous launch go, on the client, the wire and the proxy "
                        "(VOCL_TRACE), natively and through VOCL, --rounds times")
    p.add_argument("--python", metavar="PATH", default="/usr/bin/python3",
                   help="--pyopencl: the Python, with pyopencl and numpy, that runs the "
                        "scripts (default /usr/bin/python3)")
    p.add_argument("--timeout", metavar="S", type=int, default=3600,
                   help="seconds each run may take (default 3600)")
    p.add_argument("-V", "--version", action="version", version="%s %s" % (PROG, VERSION))
    a = p.parse_args(argv)
    if a.sections is not None:
        names = a.sections.split(",")
        valid = set(SECTIONS) | set(SECTIONS.values())
        if not names or any(n not in valid for n in names):
            p.error("--sections takes a,b,c,d or call,bw,lat,launch, not '%s'" % a.sections)
    if a.sizes is not None and not re.fullmatch(r"\d+[KkMmGg]?(,\d+[KkMmGg]?)*", a.sizes):
        p.error("--sizes takes numbers with an optional K, M or G, separated by commas")
    for name in ("window", "reps", "launches", "timeout", "rounds"):
        v = getattr(a, name)
        if v is not None and v < 1:
            p.error("--%s must be at least 1" % name)
    if a.device is not None and a.device < 0:
        p.error("--device must be 0 or more")
    if a.daemons < 0 or (a.cluster and a.daemons > 1):
        p.error("--daemons takes a number of daemons, 1 with --cluster")
    if a.pyopencl is not None and not os.path.isdir(a.pyopencl):
        p.error("--pyopencl takes a directory of scripts, not '%s'" % a.pyopencl)
    return a


def worker_args(a):
    args = []
    if a.quick:
        args.append("--quick")
    for opt in ("sections", "sizes", "window", "reps", "launches", "device"):
        v = getattr(a, opt)
        if v is not None:
            args += ["--" + opt, str(v)]
    return args


def main(argv):
    a = parse_args(argv)
    worker = a.worker or find_first(WORKER_CANDIDATES)
    if not worker or not os.access(worker, os.X_OK):
        die("cannot find vocl-bench-worker%s (use --worker)" %
            (" at " + worker if worker else ""))
    vocl_run = a.vocl_run or find_first(VOCL_RUN_CANDIDATES) or shutil.which("vocl-run")
    if not vocl_run or not os.access(vocl_run, os.X_OK):
        die("cannot find vocl-run%s (use --vocl-run)" % (" at " + vocl_run if vocl_run else ""))
    backend = None
    if a.plot:
        backend = plot_backend()
        if backend is None:
            die("--plot needs python3-matplotlib or gnuplot (Debian: apt-get install "
                "python3-matplotlib, or gnuplot-nox); neither is installed")
    if a.cluster:
        return cluster_main(a, worker, vocl_run)
    if a.pyopencl:
        return pyopencl_main(a, vocl_run)
    if a.breakdown:
        return breakdown_main(a, worker, vocl_run)
    if a.daemons:
        return daemon_main(a, worker)

    wargs = worker_args(a)
    base_env = dict(os.environ)
    base_env.pop("VOCL_PIPELINE", None)  # the VOCL run gets the default: pipelined
    user_devices = "POCL_DEVICES" in base_env
    # Natively PoCL serves POCL_DEVICES (pthread unless set); under vocl-run the
    # proxy serves the same: -d 1 sets pthread, or it inherits the user's.
    native_env = dict(base_env)
    native_env.setdefault("POCL_DEVICES", "pthread")
    vocl_cmd = [vocl_run, "-n", "1"] + ([] if user_devices else ["-d", "1"])

    with tempfile.TemporaryDirectory(prefix="vocl-bench-") as tmp:
        native = Run("native", [worker] + wargs, native_env)
        runs = [native]
        vocl_env = dict(base_env, VOCL_PROXY_RUSAGE=os.path.join(tmp, "rusage-vocl"))
        vocl = Run("VOCL", vocl_cmd + ["--", worker] + wargs, vocl_env,
                   vocl_env["VOCL_PROXY_RUSAGE"])
        runs.append(vocl)
        nopipe = None
        if not a.no_pipeline_run:
            nopipe_env = dict(base_env, VOCL_PIPELINE="0",
                              VOCL_PROXY_RUSAGE=os.path.join(tmp, "rusage-nopipe"))
            nopipe = Run("VOCL no-pipeline", vocl_cmd + ["--", worker] + wargs, nopipe_env,
                         nopipe_env["VOCL_PROXY_RUSAGE"])
            runs.append(nopipe)
        for run in runs:
            run_worker(run, a.timeout)

    device = native.info.get("device") or vocl.info.get("device") or "?"
    header = "%s %s: device '%s', natively (platform '%s') and through VOCL (platform " \
        "'%s', %s)" % (PROG, VERSION, device, native.info.get("platform", "?"),
                       vocl.info.get("platform", "?"),
                       " ".join([os.path.basename(vocl_cmd[0])] + vocl_cmd[1:]))
    if a.quick:
        header += "\n--quick: tiny sizes and counts, the numbers mean little"
    rows = build_rows(native, vocl, nopipe)
    print_rows(header, rows)

    notes = []
    verdicts = [r.verdict for r in rows if r.verdict in ("PASS", "MISS")]
    if verdicts:
        notes.append("targets: %d PASS, %d MISS (ratio = VOCL / native)" %
                     (verdicts.count("PASS"), verdicts.count("MISS")))
    if any(r.vocl is None for r in rows if r.section == "rss" and r.param == "proxy"):
        notes.append("proxy peak RSS: n/a, voclproxyd wrote no VOCL_PROXY_RUSAGE file "
                     "(this proxy does not report it yet)")
    if nopipe is None:
        notes.append("no VOCL no-pipeline run (--no-pipeline-run)")
    ok = all(r.ok for r in runs)
    for r in runs:
        if r.ok:
            continue
        notes.append("the %s run FAILED: %s" % (r.label, r.error))
    for n in notes:
        print(n)

    ok = save_rows(a.csv, rows) and ok
    if a.plot:
        try:
            plot(a.plot, backend, bw_series(native, vocl, nopipe),
                 "%s: bandwidth, %s" % (PROG, device))
            print("plot (%s) written to %s" % (backend, a.plot))
        except (RuntimeError, OSError) as e:
            note("cannot plot: %s" % e)
            ok = False
    return EXIT_OK if ok else EXIT_RUN_FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
