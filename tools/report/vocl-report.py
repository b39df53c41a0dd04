#!/usr/bin/env python3
"""vocl-report - the VOCL paper's application reports: overhead and scaling.

`overhead` runs each example application on one device natively, through
VOCL's local passthrough and through one proxy, and reports what VOCL adds
(the paper's Figures 10 and 11); `scaling` runs each one on 1 to 32 virtual
GPUs served by proxies and reports speedup and efficiency (Figures 12 and
13); `paired` runs gemm and nbody at their largest sizes in one process on
a local and a remote device in turn, so that both see the same machine, and
reads from a VOCL_TRACE of the run what forwarding added to each remote step.
Each prints a table, writes CSV and, with --plot, PNGs (matplotlib).
The applications print `RESULT app=... seconds=... verified=yes` as their
last line; that line is all this tool reads of them.
"""
import argparse
import bisect
import json
import math
import os
import shutil
import signal
import statistics
import sys
import tempfile

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
EXAMPLES_CANDIDATES = ["@BUILD_EXAMPLES@", "@EXAMPLES@"]
VOCL_RUN_CANDIDATES = ["@BUILD_VOCL_RUN@", "@VOCL_RUN@"]

PROG = "vocl-report"
die, note = messages(PROG)


class App:
    """How to run one example application: its precisions, default sizes
    (the largest a few seconds natively on 2 cores), the scaling size, the
    tiny --quick one and the arguments that make --quick runs short.
    `per_device`: an option whose default grows with -d (so many items per
    device); scaling fixes it at the largest device count, so that every D
    does the same work."""

    def __init__(self, name, precisions, sizes, scaling, quick, quick_args=(),
                 per_device=None, paired=None):
        self.name = name
        self.precisions = precisions  # () when it takes no --precision
        self.sizes = sizes
        self.scaling = scaling
        self.quick = quick
        self.quick_args = list(quick_args)
        self.per_device = per_device
        # (size, arguments of one turn) for `paired`; None: no --interleave
        self.paired = paired


APPS = {a.name: a for a in (
    App("gemm", ("single", "double"), [256, 512, 1024], 768, 64, ["-r", "1"],
        paired=(2048, ["-r", "1"])),
    App("nbody", ("single", "double"), [1024, 4096, 8192], 4096, 256, ["-s", "2"],
        paired=(32768, ["-s", "3"])),
    App("transpose", (), [1024, 2048, 4096], 4096, 256, ["-r", "1"]),
    # Not 1024 and 2048: there this version takes a hundred times longer
    # than at 1000 or 2000.
    App("smithwaterman", (), [500, 1000, 2000], 1000, 128, per_device="-p"),
)}
SCALING_DEVICES = [1, 2, 4, 8, 16, 32]
QUICK_DEVICES = [1, 2, 4]
PER_PROXY = 2  # devices each proxy serves in scaling runs
WAYS = ("native", "local", "remote")


# ---- running ----


class Config:
    """One way of running one application at one size on some devices: the
    command, and the result of each repeat.  Once a repeat fails the config
    is not run again and shows its error instead of numbers."""

    def __init__(self, app, precision, size, devices, way, cmd, env):
        self.app = app
        self.precision = precision
        self.size = size
        self.devices = devices
        self.way = way
        self.cmd = cmd
        self.env = env
        self.samples = []  # dicts of the RESULT line, plus "wall"
        self.error = None

    @property
    def name(self):
        return "%s %s n=%d d=%d %s" % (self.app, self.precision or "-", self.size,
                                       self.devices, self.way)

    @property
    def ok(self):
        return self.error is None and bool(self.samples)

    def median(self, field):
        return statistics.median(float(s[field]) for s in self.samples) if self.ok else None

    def spread(self):
        """Half the range of the seconds, relative to their median."""
        if not self.ok or len(self.samples) < 2:
            return None
        secs = [float(s["seconds"]) for s in self.samples]
        return (max(secs) - min(secs)) / 2 / statistics.median(secs)

    def best(self):
        """The fastest run's seconds.  Another tenant of a shared machine
        only ever adds time, so on a busy machine this is the steadier
        figure of the two."""
        return min(float(s["seconds"]) for s in self.samples) if self.ok else None

    @property
    def unit(self):
        return self.samples[0].get("unit", "") if self.samples else ""


def shown_precision(group):
    """The precision asked for, else the one the app says it used."""
    if group[0].precision:
        return group[0].precision
    return next((c.samples[0].get("precision", "-") for c in group if c.samples), "-")


def parse_turns(out):
    """The fields of every TURN line (--interleave)."""
    return [dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
            for line in out.splitlines() if line.startswith("TURN ")]


def parse_result(out):
    """The fields of the last RESULT line, or None.  Under vocl-run the
    proxies' messages may follow the application's own last line."""
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    if not lines:
        return None
    return dict(kv.split("=", 1) for kv in lines[-1].split()[1:] if "=" in kv)


def check_result(cfg, rc, res, timeout):
    if rc is None:
        return "timed out after %g s" % timeout
    if res is None:
        return "exit status %d, no RESULT line" % rc if rc else "no RESULT line"
    if res.get("verified") != "yes":
        return "did not verify (verified=%s, exit status %d)" % (res.get("verified"), rc)
    if rc != 0:
        return "exit status %d" % rc
    for field, want in (("devices", cfg.devices), ("size", cfg.size)):
        if res.get(field) != str(want):
            return "ran with %s=%s, not %s" % (field, res.get(field), want)
    try:
        if not math.isfinite(float(res["seconds"])) or not math.isfinite(float(res["rate"])):
            raise ValueError
    except (KeyError, ValueError):
        return "bad seconds= or rate= in its RESULT line"
    return None


def run_config(cfg, timeout, label):
    rc, out, err, wall, timed_out = run_cmd(cfg.cmd, cfg.env, timeout)
    rc = None if timed_out else rc
    res = parse_result(out)
    cfg.error = check_result(cfg, rc, res, timeout)
    if cfg.error is None:
        res["wall"] = "%.6g" % wall
        res["turns"] = parse_turns(out)
        cfg.samples.append(res)
        note("%s: %s s, %s %s" % (label, res["seconds"], res["rate"], res.get("unit", "")))
        return
    note("%s FAILED (%s) after %.1f s: %s" % (label, cfg.error, wall, " ".join(cfg.cmd)))
    for line in (err.splitlines() + out.splitlines())[-15:]:
        print("    " + line, file=sys.stderr)


def run_all(configs, repeats, timeout):
    """Repeat by repeat over every config, so that a slow spell of a busy
    machine spreads over all of them rather than falling on one; every other
    repeat in reverse order, so that a steady drift of its speed favours no
    config over another."""
    for rep in range(repeats):
        order = list(enumerate(configs))
        for i, cfg in order if rep % 2 == 0 else reversed(order):
            if cfg.error is None:
                run_config(cfg, timeout, "[%d/%d, repeat %d/%d] %s" % (
                    i + 1, len(configs), rep + 1, repeats, cfg.name))


def app_args(a, app, size, devices, precision, fixed=None):
    """The application's command line; `fixed`: the value of its
    per_device option."""
    args = [a.exe[app.name], "-n", str(size), "-d", str(devices)]
    if precision:
        args += ["--precision", precision]
    if fixed and app.per_device:
        args += [app.per_device, str(fixed)]
    return args + (app.quick_args if a.quick else [])


def base_env(devices, pool):
    """Natively (and for --local) PoCL serves `devices` pthread devices; a
    proxy gets its own from vocl-run -d.  `pool`: PoCL's worker threads per
    process (0: its default, one per core), which all pthread devices of
    the process share."""
    env = dict(os.environ)
    env["POCL_DEVICES"] = " ".join(["pthread"] * devices)
    if pool:
        env["POCL_MAX_PTHREAD_COUNT"] = str(pool)
    return env


def vocl_env(devices, pool):
    env = base_env(devices, pool)
    # As tests/integration: MPICH on one node, and no hwloc OpenCL plugin
    # calling into libvocl from inside MPI_Init.
    env.setdefault("HYDRA_LAUNCHER", "fork")
    env.setdefault("HWLOC_COMPONENTS", "-opencl")
    return env


def scaling_proxies(devices):
    """(proxies, devices per proxy) serving `devices` virtual GPUs."""
    if devices == 1:
        return 1, 1
    return -(-devices // PER_PROXY), PER_PROXY


# ---- tables and files ----


def fmt(v, spec="%.4g"):
    return "-" if v is None else spec % (v + 0.0)  # + 0.0: no "-0.0"


def fmt_secs(cfg):
    if not cfg.ok:
        return "TIMEOUT" if "timed out" in cfg.error else \
            "UNVERIFIED" if "verify" in cfg.error else "FAILED"
    s = "%.4g" % cfg.median("seconds")
    spread = cfg.spread()
    return s + (" ±%.0f%%" % (spread * 100) if spread is not None else "")


RUNS_HEADER = ["mode", "app", "precision", "size", "devices", "way", "repeat", "seconds",
               "rate", "unit", "wall_seconds", "error", "command"]


def runs_rows(mode, configs):
    """Every run, for whoever wants more than the medians; a failed config
    adds one row with its error."""
    rows = []
    for c in configs:
        common = [mode, c.app, c.precision or "", c.size, c.devices, c.way]
        for i, s in enumerate(c.samples):
            rows.append(common + [i + 1, s["seconds"], s["rate"], s.get("unit", ""),
                                  s["wall"], "", " ".join(c.cmd)])
        if c.error:
            rows.append(common + [len(c.samples) + 1, "", "", "", "", c.error, " ".join(c.cmd)])
    return rows


def verdict(configs):
    bad = [c.way for c in configs if not c.ok]
    return "yes" if not bad else "NO" if len(configs) == 1 else "NO: " + ", ".join(bad)


def failures(configs):
    """Footer lines naming every failed config and why."""
    bad = ["  %s: %s" % (c.name, c.error) for c in configs if not c.ok]
    return ["FAILED (command and output above, on stderr):"] + bad if bad else []


def overhead_pct(vocl_s, native_s):
    ok = vocl_s is not None and native_s
    return (vocl_s - native_s) / native_s * 100 if ok else None


# ---- plots ----


def log2_axis(ax, values):
    import matplotlib.ticker
    if len(values) > 1 and min(values) > 0 and max(values) >= 4 * min(values):
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.set_xticks(sorted(set(values)))


def plot_overhead(plt, path, app, series):
    """series: {precision: [(size, local %, remote %), ...]}"""
    fig, ax = plt.subplots(figsize=(8, 5))
    sizes = []
    for i, (prec, pts) in enumerate(series.items()):
        for way, col, style in (("local", 1, "--"), ("remote", 2, "-")):
            xy = [(p[0], p[col]) for p in pts if p[col] is not None]
            if xy:
                ax.plot(*zip(*xy), style, marker="o", color="C%d" % i,
                        label="%s, %s" % (way, prec))
                sizes += [x for x, _ in xy]
    if sizes:
        log2_axis(ax, sizes)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xlabel("problem size (-n)")
    ax.set_ylabel("overhead over native (%)")
    ax.set_title("%s: VOCL overhead on one device (local passthrough, one proxy)" % app)
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_scaling(plt, path, app, series, ideal, cores):
    """series: [(label, [(devices, speedup), ...]), ...]; ideal(D) is the
    best speedup the cores allow."""
    import matplotlib.ticker
    fig, ax = plt.subplots(figsize=(8, 5))
    devs = sorted({d for _, pts in series for d, _ in pts}) or [1]
    for label, pts in series:
        if pts:
            ax.plot(*zip(*pts), "-", marker="o", label=label)
    ax.plot(devs, [ideal(d) for d in devs], "k--", label="ideal on %d cores" % cores)
    ax.plot(devs, devs, ":", color="grey", label="ideal with a core per device")
    log2_axis(ax, devs)
    ax.set_yscale("log", base=2)
    ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.set_xlabel("virtual GPUs (devices)")
    ax.set_ylabel("speedup over 1 device")
    ax.set_title("%s: scaling through VOCL proxies\nall virtual GPUs share this machine's "
                 "%d cores: ideal speedup at most %g" % (app, cores, ideal(devs[-1])))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_paired(plt, path, app, series):
    """series: [(precision, size, ratios by round, mean_interval's three)]"""
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, (prec, size, ratios, mean, lo, hi) in enumerate(series):
        pct = [(r - 1) * 100 for r in ratios]
        label = "%s n=%d" % (prec or "", size)
        ax.plot(range(len(pct)), pct, "o", color="C%d" % i, label=label + ", each round")
        ax.axhline(mean, color="C%d" % i, label=label + ", mean")
        if lo is not None:
            ax.axhspan(lo, hi, color="C%d" % i, alpha=0.15, label=label + ", 95 % interval")
    ax.axhline(PAIRED_TARGET_PCT, color="red", linestyle="--",
               label="target %+g %%" % PAIRED_TARGET_PCT)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xlabel("round")
    ax.xaxis.get_major_locator().set_params(integer=True)
    ax.set_ylabel("remote over local (%)")
    ax.set_title("%s: remote against local, paired in one process" % app)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def make_plots(a, kind, per_app, draw):
    """Draws one PNG per app; returns False only when a plot failed."""
    if not a.plot:
        return True
    plt, reason = pyplot_or_reason(PROG)
    if plt is None:
        print("plots skipped: " + reason)
        return True
    ok = True
    for app, data in per_app.items():
        path = os.path.join(a.out, "%s-%s.png" % (kind, app))
        try:
            draw(plt, path, app, data)
            print("plot written to %s" % path)
        except (OSError, ValueError, RuntimeError) as e:
            note("cannot plot %s: %s" % (path, e))
            ok = False
    return ok


# ---- the two reports ----


def series_keys(a):
    """(app, precision or None, size) of every series, in order."""
    for name in a.apps:
        app = APPS[name]
        for prec in [p for p in app.precisions if p in a.precisions] or [None]:
            for size in a.sizes[name]:
                yield app, prec, size


def overhead(a):
    t = a.threads_per_device
    groups = []
    for app, prec, size in series_keys(a):
        args = app_args(a, app, size, 1, prec)
        cmds = {"native": (args, base_env(1, t)),
                "local": ([a.vocl_run, "-n", "0", "--local", "--"] + args, vocl_env(1, t)),
                "remote": ([a.vocl_run, "-n", "1", "-d", "1", "--"] + args, vocl_env(1, t))}
        groups.append([Config(app.name, prec, size, 1, w, *cmds[w]) for w in WAYS])
    configs = [c for g in groups for c in g]
    run_all(configs, a.repeats, a.timeout)

    rows, csv_rows, per_app = [], [], {}
    for group in groups:
        native, local, remote = group
        lo, ro = (overhead_pct(c.median("seconds"), native.median("seconds"))
                  for c in (local, remote))
        lb, rb = (overhead_pct(c.best(), native.best()) for c in (local, remote))
        # Repeat by repeat: remote/native of the same repeat, minutes apart at most.
        pp, plo, phi = mean_interval(
            [float(r["seconds"]) / float(n["seconds"])
             for n, r in zip(native.samples, remote.samples)]) \
            if native.ok and remote.ok else (None, None, None)
        prec = shown_precision(group)
        unit = next((c.unit for c in group if c.unit), "-")
        rows.append([native.app, prec, str(native.size)] + [fmt_secs(c) for c in group] +
                    [fmt(lo, "%+.1f"), fmt(ro, "%+.1f"), fmt(rb, "%+.1f"), fmt(pp, "%+.1f"),
                     fmt_interval(plo, phi),
                     fmt(native.median("rate")), fmt(remote.median("rate")), unit,
                     verdict(group)])
        csv_rows.append([native.app, prec, native.size] +
                        [fmt(c.median(f), "%.6g") for c in group for f in ("seconds", "rate")] +
                        [fmt(c.spread(), "%.4f") for c in group] +
                        [fmt(lo, "%.2f"), fmt(ro, "%.2f")] +
                        [fmt(c.best(), "%.6g") for c in group] +
                        [fmt(lb, "%.2f"), fmt(rb, "%.2f"), fmt(pp, "%.2f"), fmt(plo, "%.2f"),
                         fmt(phi, "%.2f"), unit, a.repeats, verdict(group)])
        per_app.setdefault(native.app, {}).setdefault(prec, []).append((native.size, lo, ro))

    print_table(
        "%s %s: overhead of VOCL on one device (the VOCL paper's Figures 10 and 11)" %
        (PROG, VERSION),
        ["app", "precision", "size", "native s", "local s", "remote s", "local ovh %",
         "remote ovh %", "remote best %", "remote paired %", "95% interval",
         "native rate", "remote rate", "unit",
         "verified (all three)"], rows, 2,
        ["seconds: the application's own timing (RESULT seconds=), median of %d run(s); "
         "±: half the range, relative to the median" % a.repeats,
         "best %: the remote overhead between the fastest native and the fastest remote run "
         "(another tenant of the machine only ever adds time)",
         "remote paired %: the mean over the repeats of remote/native within a repeat, "
         "with its 95% interval (Student's t); repeats alternate their order",
         "native: POCL_DEVICES=pthread; local: vocl-run -n 0 --local (libvocl, no proxy); "
         "remote: vocl-run -n 1 -d 1 (one proxy, same machine)",
         "overhead %% = (VOCL - native) / native; every run has -d 1 and %s" % pool_words(t)]
        + (["--quick: tiny sizes, the numbers mean little"] if a.quick else [])
        + failures(configs))
    ok = write_files(a, "overhead", configs,
                     ["app", "precision", "size", "native_s", "native_rate", "local_s",
                      "local_rate", "remote_s", "remote_rate", "native_spread",
                      "local_spread", "remote_spread", "local_overhead_pct",
                      "remote_overhead_pct", "native_best_s", "local_best_s", "remote_best_s",
                      "local_overhead_best_pct", "remote_overhead_best_pct",
                      "remote_paired_pct", "remote_paired_low_pct", "remote_paired_high_pct",
                      "unit",
                      "repeats", "verified"], csv_rows)
    ok &= make_plots(a, "overhead", per_app, plot_overhead)
    return ok and all(c.ok for c in configs)


def pool_words(t):
    return "%d PoCL worker thread%s per device" % (t, "s"[:t > 1]) if t else \
        "PoCL's default worker threads, one per core, in each process"


def scaling(a):
    t, cores = a.threads_per_device, a.cores

    def pool(d):
        """PoCL's worker threads in each proxy of a d-device run: its pthread
        devices share one pool, so T per device is T x devices per proxy."""
        return t * scaling_proxies(d)[1]

    def ideal(d):
        """The best speedup over 1 device that the cores allow: the cores the
        d-device run can use over those the 1-device run uses."""
        p, k = scaling_proxies(d)
        threads = p * k * t if t else p * cores
        return min(threads, cores) / (min(t, cores) if t else cores)

    groups = []
    for app, prec, size in series_keys(a):
        group = []
        for d in a.devices:
            p, k = scaling_proxies(d)
            cmd = [a.vocl_run, "-n", str(p), "-d", str(k), "--"] + \
                app_args(a, app, size, d, prec, fixed=max(a.devices))
            group.append(Config(app.name, prec, size, d, "%dx%d" % (p, k), cmd,
                                vocl_env(d, pool(d))))
        groups.append(group)
    configs = [c for g in groups for c in g]
    run_all(configs, a.repeats, a.timeout)

    rows, csv_rows, per_app = [], [], {}
    for group in groups:
        prec = shown_precision(group)
        base = next((c.median("seconds") for c in group if c.devices == 1), None)
        pts = []
        for c in group:
            secs = c.median("seconds")
            speedup = base / secs if base and secs else None
            e_dev = speedup / c.devices if speedup else None
            e_cores = speedup / ideal(c.devices) if speedup else None
            if speedup:
                pts.append((c.devices, speedup))
            rows.append([c.app, prec, str(c.size), str(c.devices), c.way, fmt_secs(c),
                         fmt(c.median("rate")), c.unit or "-", fmt(speedup, "%.2f"),
                         fmt(e_dev, "%.2f"), "%.3g" % ideal(c.devices),
                         fmt(e_cores, "%.2f"), verdict([c])])
            csv_rows.append([c.app, prec, c.size, c.devices, c.way,
                             fmt(secs, "%.6g"), fmt(c.spread(), "%.4f"),
                             fmt(c.median("rate"), "%.6g"), c.unit, fmt(speedup, "%.4f"),
                             fmt(e_dev, "%.4f"), "%.4g" % ideal(c.devices),
                             fmt(e_cores, "%.4f"), cores, t, verdict([c])])
        label = "n=%d" % group[0].size if prec == "-" else "%s n=%d" % (prec, group[0].size)
        per_app.setdefault(group[0].app, []).append((label, pts))

    fixed = ["%s: %s %d in every run, the same work for every D" %
             (n, APPS[n].per_device, max(a.devices)) for n in a.apps if APPS[n].per_device]
    print_table(
        "%s %s: scaling over virtual GPUs through VOCL proxies (the VOCL paper's Figures "
        "12 and 13)" % (PROG, VERSION),
        ["app", "precision", "size", "devices", "proxies", "seconds", "rate", "unit",
         "speedup", "eff/devices", "ideal/cores", "eff/cores", "verified"], rows, 2,
        ["seconds: the application's own timing, median of %d run(s); ±: half the range; "
         "proxies: PxK = vocl-run -n P -d K, the app gets -d D" % a.repeats,
         "speedup: over the 1-device run; eff/devices = speedup / D"] + fixed +
        ["THIS MACHINE HAS %d CPU CORES and all D virtual GPUs share them (%s):" %
         (cores, pool_words(t)),
         "  the best speedup here is ideal/cores = (cores the D-device run can use) / "
         "(cores the 1-device run uses), at most %g, not D;" % ideal(max(a.devices)),
         "  eff/cores = speedup / ideal/cores.  More proxies on the same cores cannot do "
         "better; real GPUs, or a core per device, can."]
        + (["--quick: tiny sizes, the numbers mean little"] if a.quick else [])
        + failures(configs))
    ok = write_files(a, "scaling", configs,
                     ["app", "precision", "size", "devices", "proxies", "seconds", "spread",
                      "rate", "unit", "speedup", "efficiency_devices", "ideal_speedup_cores",
                      "efficiency_cores", "cores", "threads_per_device", "verified"], csv_rows)
    ok &= make_plots(a, "scaling", per_app,
                     lambda plt, path, app, series: plot_scaling(plt, path, app, series,
                                                                 ideal, cores))
    return ok and all(c.ok for c in configs)


# Student's t for a two-sided 95 % interval, by degrees of freedom.
T975 = {1: 12.71, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
        9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 25: 2.060, 30: 2.042, 40: 2.021,
        60: 2.000, 120: 1.980}
PAIRED_TARGET_PCT = 3.0  # the target for gemm and nbody at their largest sizes


def t975(df):
    """From the next smaller tabulated df: the interval is never narrower."""
    return T975[max(k for k in T975 if k <= df)]


def mean_interval(ratios):
    """The mean of `ratios` and the ends of its 95 % interval (Student's t),
    all as percent above 1; no interval from one ratio."""
    mean = statistics.mean(ratios)
    if len(ratios) < 2:
        return (mean - 1) * 100, None, None
    half = t975(len(ratios) - 1) * statistics.stdev(ratios) / math.sqrt(len(ratios))
    return (mean - 1) * 100, (mean - half - 1) * 100, (mean + half - 1) * 100


def fmt_interval(lo, hi):
    return "-" if lo is None else "%+.1f .. %+.1f" % (lo, hi)


def paired_rounds(cfg, rounds):
    """[(local s, remote s), ...] by round from the TURN lines (device 0:
    this node's, device 1: the proxy's), or an error."""
    turns = cfg.samples[0]["turns"]
    got = {}
    for t in turns:
        try:
            got[(int(t["round"]), int(t["device"]))] = float(t["seconds"])
        except (KeyError, ValueError):
            return None, "bad TURN line"
        if t.get("verified") != "yes":
            return None, "round %s on device %s did not verify" % (t["round"], t["device"])
    want = [(r, d) for r in range(rounds) for d in (0, 1)]
    if sorted(got) != want or len(turns) != len(want):
        return None, "%d TURN lines, not one per device and round (%d)" % (len(turns), len(want))
    return [(got[(r, 0)], got[(r, 1)]) for r in range(rounds)], None


def vocl_added(path):
    """From the VOCL_TRACE file of a paired run: (seconds VOCL added to the
    remote steps, seconds of those steps, their number), or an error.  A
    step is what the application enqueued since its last clFinish, up to the
    end of the next one; a remote step is one in which a proxy ran clFinish
    on the native driver.  What VOCL added to it is the step's time less
    that native clFinish: an upper bound, which also counts the native
    enqueue calls in the proxy (microseconds; a local step makes them too)."""
    try:
        with open(path) as f:
            events = json.load(f)["traceEvents"]
        apps = {e["pid"] for e in events
                if e.get("ph") == "M" and e["args"]["name"].startswith("application")}
        spans = sorted((e for e in events if e.get("ph") == "X"), key=lambda e: e["ts"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        return None, "cannot read its trace %s: %s" % (path, e)
    # A proxy runs requests on its thread 0 (its other threads stream reads).
    native = [(e["ts"], e["ts"] + e["dur"]) for e in spans
              if e["pid"] not in apps and e["tid"] == 0 and e["name"] == "clFinish"]
    starts = [a for a, _ in native]  # sorted, as spans are
    added = total = 0.0
    steps, start = 0, None
    for e in (e for e in spans if e["pid"] in apps):
        start = e["ts"] if start is None else start
        if e["name"] != "clFinish":
            continue
        end = e["ts"] + e["dur"]
        first, last = bisect.bisect_left(starts, start), bisect.bisect_right(starts, end)
        inside = [b - a for a, b in native[first:last] if b <= end]
        if inside:
            added += end - start - max(inside)
            total += end - start
            steps += 1
        start = None
    if not steps:
        return None, "its trace %s has no remote step" % path
    return (added * 1e-6, total * 1e-6, steps), None


def paired(a):
    configs = []
    for app, prec, size in series_keys(a):
        args = (app_args(a, app, size, 2, prec) + ([] if a.quick else app.paired[1]) +
                ["--interleave", str(a.rounds)])
        cmd = [a.vocl_run, "-n", "1", "-d", "1", "--local", "--"] + args
        configs.append(Config(app.name, prec, size, 2, "paired", cmd,
                              vocl_env(1, a.threads_per_device)))
    with tempfile.TemporaryDirectory(prefix=PROG + "-") as traces:
        for c in configs:
            c.env["VOCL_TRACE"] = os.path.join(traces, "%s-%s.json" % (c.app, c.precision))
        run_all(configs, 1, a.timeout)
        added = {}
        for c in configs:
            if c.ok:
                added[c.name], c.error = vocl_added(c.env["VOCL_TRACE"])

    rows, csv_rows, turn_rows, per_app = [], [], [], {}
    for c in configs:
        pairs = None
        if c.ok:
            pairs, c.error = paired_rounds(c, a.rounds)
        prec = shown_precision([c])
        if not pairs:
            rows.append([c.app, prec, str(c.size), str(a.rounds)] + [fmt_secs(c)] * 2 +
                        ["-"] * 6 + ["NO"])
            continue
        ratios = [r / l for l, r in pairs]
        pct, lo, hi = mean_interval(ratios)
        target = "-" if hi is None else "yes" if hi <= PAIRED_TARGET_PCT else \
            "no" if lo > PAIRED_TARGET_PCT else "not resolved"
        local_s = statistics.median(l for l, _ in pairs)
        remote_s = statistics.median(r for _, r in pairs)
        added_s, steps_s, steps = added[c.name]
        step_ms, added_pct = added_s / steps * 1e3, added_s / steps_s * 100
        rows.append([c.app, prec, str(c.size), str(a.rounds), "%.4g" % local_s,
                     "%.4g" % remote_s, "%.4f" % (1 + pct / 100), fmt(pct, "%+.1f"),
                     fmt_interval(lo, hi), target,
                     "%.3g" % step_ms, "%.3f" % added_pct, "yes"])
        csv_rows.append([c.app, prec, c.size, a.rounds, "%.6g" % local_s, "%.6g" % remote_s,
                         "%.6f" % (1 + pct / 100), fmt(lo, "%.3f"), fmt(hi, "%.3f"), target,
                         steps, "%.4f" % step_ms, "%.4f" % added_pct])
        for r, (l, rem) in enumerate(pairs):
            turn_rows.append([c.app, prec, c.size, r, "%.6g" % l, "%.6g" % rem,
                              "%.6f" % (rem / l)])
        per_app.setdefault(c.app, []).append((prec, c.size, ratios, pct, lo, hi))

    print_table(
        "%s %s: remote against local, paired in one process" % (PROG, VERSION),
        ["app", "precision", "size", "rounds", "local s", "remote s", "remote/local",
         "overhead %", "95% interval", "<= %g %%" % PAIRED_TARGET_PCT, "VOCL ms/step",
         "VOCL %", "verified"], rows, 2,
        ["each round runs the whole problem on this node's device (libvocl's local "
         "passthrough: the native driver called with the application's own pointers) and "
         "on one proxy's device, one right after the other, in alternating order; "
         "local s, remote s: medians over the rounds",
         "remote/local: the mean of the rounds' ratios; 95%% interval: Student's t over "
         "the rounds; <= %g %%: yes when the whole interval is at or below it" %
         PAIRED_TARGET_PCT,
         "VOCL ms/step, VOCL %: from VOCL_TRACE, what the application waited in a remote "
         "step (its calls since its last clFinish, up to the end of the next) beyond the "
         "proxy's native clFinish, per step and as a share of the remote steps' time: "
         "an upper bound on what forwarding adds, free of the machine's drift",
         "run: vocl-run -n 1 -d 1 --local -- APP -d 2 --interleave %d (%s)" %
         (a.rounds, pool_words(a.threads_per_device))]
        + (["--quick: tiny sizes, the numbers mean little"] if a.quick else [])
        + failures(configs))
    ok = write_files(a, "paired", configs,
                     ["app", "precision", "size", "rounds", "local_s", "remote_s",
                      "remote_over_local", "overhead_low_pct", "overhead_high_pct",
                      "within_target", "remote_steps", "vocl_ms_per_step", "vocl_pct"],
                     csv_rows,
                     (["app", "precision", "size", "round", "local_s", "remote_s",
                       "remote_over_local"], turn_rows))
    ok &= make_plots(a, "paired", per_app, plot_paired)
    return ok and all(c.ok for c in configs)


def write_files(a, mode, configs, header, rows, runs_table=None):
    """The table and every run (`runs_table`: (header, rows) instead of
    the runs of `configs`)."""
    try:
        os.makedirs(a.out, exist_ok=True)
        table = os.path.join(a.out, mode + ".csv")
        runs = os.path.join(a.out, mode + "-runs.csv")
        write_csv(table, header, rows)
        write_csv(runs, *(runs_table or (RUNS_HEADER, runs_rows(mode, configs))))
        print("CSV written to %s (the table) and %s (every run)" % (table, runs))
        return True
    except OSError as e:
        note("cannot write the CSV files: %s" % e)
        return False


# ---- main ----


def int_list(text):
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("takes positive integers separated by commas, "
                                         "not '%s'" % text)
    return values


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Run the example applications (gemm, nbody, transpose, smithwaterman) "
                    "natively and through VOCL and report the overhead on one device "
                    "(`overhead`) or the scaling over 1 to 32 virtual GPUs (`scaling`).",
        epilog="Exit status: 0 when every run verified, 1 when a run failed, timed out or "
               "did not verify, or a file could not be written, 2 on a usage error.")
    p.add_argument("mode", choices=("overhead", "scaling", "paired"))
    p.add_argument("--quick", action="store_true",
                   help="one tiny size per app, 1 repeat, devices 1,2,4: a smoke test "
                        "of well under a minute, not a measurement")
    p.add_argument("--apps", metavar="LIST",
                   help="comma-separated, of %s (default all; paired: gemm,nbody)" %
                        ", ".join(APPS))
    p.add_argument("--precisions", metavar="LIST", default="single,double",
                   help="for gemm and nbody: single, double or both (default both)")
    p.add_argument("--sizes", metavar="[APP=]LIST", action="append", default=[],
                   help="the -n values, e.g. gemm=512,2048; without APP= for every app; "
                        "may be repeated")
    p.add_argument("--devices", metavar="LIST", type=int_list,
                   help="virtual GPU counts for scaling (default 1,2,4,8,16,32)")
    p.add_argument("--rounds", metavar="N", type=int,
                   help="paired: rounds, each one turn per device (default 20; --quick: 2)")
    p.add_argument("--repeats", metavar="N", type=int,
                   help="runs of each configuration, the median reported (default 3; "
                        "--quick: 1)")
    p.add_argument("--timeout", metavar="S", type=float,
                   help="seconds a run may take before it is stopped and reported as "
                        "timed out (default 600; --quick: 60)")
    p.add_argument("--cores", metavar="N", type=int, default=os.cpu_count() or 1,
                   help="CPU cores the virtual GPUs share (default: this machine's, %(default)s)")
    p.add_argument("--threads-per-device", metavar="T", type=int,
                   help="PoCL worker threads per virtual GPU (POCL_MAX_PTHREAD_COUNT = T x "
                        "devices per process); 0: PoCL's default, one per core in each "
                        "process.  Default 1 for scaling, 0 for overhead")
    p.add_argument("--out", metavar="DIR", default="vocl-report-out",
                   help="where the CSV and PNG files go (default ./vocl-report-out)")
    p.add_argument("--plot", action="store_true", help="also draw PNGs (matplotlib)")
    p.add_argument("--vocl-run", metavar="PATH", help="the vocl-run to use")
    p.add_argument("--examples", metavar="DIR", help="where the applications are")
    p.add_argument("-V", "--version", action="version", version="%s %s" % (PROG, VERSION))
    a = p.parse_args(argv)

    a.apps = a.apps.split(",") if a.apps is not None else \
        [n for n in APPS if a.mode != "paired" or APPS[n].paired]
    unknown = [x for x in a.apps if x not in APPS]
    if unknown or not a.apps:
        p.error("--apps takes %s, not '%s'" % (", ".join(APPS), ",".join(unknown)))
    a.precisions = a.precisions.split(",")
    if not set(a.precisions) <= {"single", "double"} or not a.precisions:
        p.error("--precisions takes single, double or single,double")
    sizes = {}
    try:
        for spec in a.sizes:
            name, eq, text = spec.rpartition("=")
            if eq and name not in APPS:
                p.error("--sizes: no app '%s'" % name)
            for n in ([name] if eq else a.apps):
                sizes[n] = int_list(text)
    except argparse.ArgumentTypeError as e:
        p.error("--sizes " + str(e))
    unpaired = [n for n in a.apps if not APPS[n].paired]
    if a.mode == "paired" and unpaired:
        p.error("paired takes only %s, not %s" % (
            ", ".join(n for n in APPS if APPS[n].paired), ", ".join(unpaired)))
    a.sizes = {n: sizes.get(n) or ([APPS[n].quick] if a.quick else
                                   [APPS[n].scaling] if a.mode == "scaling" else
                                   [APPS[n].paired[0]] if a.mode == "paired" else APPS[n].sizes)
               for n in a.apps}
    a.devices = a.devices or (QUICK_DEVICES if a.quick else SCALING_DEVICES)
    if 1 not in a.devices:
        p.error("--devices must include 1: speedups are over one device")
    a.repeats = a.repeats if a.repeats is not None else 1 if a.quick else 3
    a.rounds = a.rounds if a.rounds is not None else 2 if a.quick else 20
    a.timeout = a.timeout if a.timeout is not None else 60 if a.quick else \
        600 + 60 * a.rounds if a.mode == "paired" else 600
    if a.threads_per_device is None:
        a.threads_per_device = 1 if a.mode == "scaling" else 0
    if a.repeats < 1 or not 1 <= a.rounds <= 1000 or a.timeout <= 0 or a.cores < 1 or \
            a.threads_per_device < 0:
        p.error("--repeats and --cores must be at least 1, --rounds 1 to 1000, "
                "--timeout more than 0, "
                "--threads-per-device 0 or more")
    return a


def main(argv):
    # A run is in a session of its own: on SIGTERM (meson's timeout) end it
    # too, through SystemExit.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    a = parse_args(argv)
    a.vocl_run = a.vocl_run or find_first(VOCL_RUN_CANDIDATES) or shutil.which("vocl-run")
    if not a.vocl_run or not os.access(a.vocl_run, os.X_OK):
        die("cannot find vocl-run%s (use --vocl-run)" %
            (" at " + a.vocl_run if a.vocl_run else ""))
    examples = a.examples or find_first(EXAMPLES_CANDIDATES)
    a.exe = {n: os.path.join(examples or "", n) for n in a.apps}
    missing = [p for p in a.exe.values() if not os.access(p, os.X_OK)]
    if not examples or missing:
        die("cannot find the applications %s (use --examples DIR, or --apps for fewer)" %
            ", ".join(missing or a.apps))
    ok = {"overhead": overhead, "scaling": scaling, "paired": paired}[a.mode](a)
    if not ok:
        print("%s: some runs FAILED, timed out or did not verify (see the table and the "
              "messages above)" % PROG)
    return EXIT_OK if ok else EXIT_RUN_FAILED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
