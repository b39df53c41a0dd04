"""voclutil - what vocl-bench and vocl-report share: messages, finding the
build tree's or the installed programs, running a command with a timeout
that ends every process it started, plain-text tables, CSV, matplotlib.

Python 3 standard library only.  Installed with the scripts (tools/pylib/
meson.build); each script puts this folder first on sys.path.
"""
import contextlib
import csv
import os
import signal
import subprocess
import sys
import time

EXIT_OK, EXIT_RUN_FAILED, EXIT_USAGE = 0, 1, 2


def messages(prog):
    """die(msg, code=EXIT_USAGE) and note(msg), which print `prog: msg` on
    stderr; die then exits."""

    def die(msg, code=EXIT_USAGE):
        print("%s: %s" % (prog, msg), file=sys.stderr)
        sys.exit(code)

    def note(msg):
        print("%s: %s" % (prog, msg), file=sys.stderr, flush=True)

    return die, note


def find_first(candidates):
    """The first path that exists, skipping empty ones and placeholders that
    the build left unsubstituted (@NAME@); None if none does."""
    for c in candidates:
        if c and not c.startswith("@") and os.path.exists(c):
            return c
    return None


def end_group(proc, sig=signal.SIGTERM):
    """Ends a run and every process it started (mpiexec and its ranks):
    SIGTERM, then SIGKILL after 10 s; returns what it printed."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)
    try:
        return proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        return end_group(proc, signal.SIGKILL)


def run_cmd(cmd, env, timeout):
    """(exit status, stdout, stderr, seconds, timed out) of cmd.  It runs in
    a session of its own, so that a timeout ends mpiexec and every rank;
    so does an exception here (SIGTERM turned into SystemExit, Ctrl-C)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True, start_new_session=True)
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        out, err = end_group(proc)
    except BaseException:
        end_group(proc)
        raise
    return proc.returncode, out, err, time.monotonic() - t0, timed_out


def print_table(title, columns, rows, left=1, footer=(), out=None):
    """A blank line, the title, then a plain-text table: the first `left`
    columns left-aligned, the rest right-aligned, except the last (free
    text).  A row that is a string (a section's title) is printed as it is;
    the footer's lines follow the table."""
    out = out or sys.stdout
    cells = [columns] + [r for r in rows if not isinstance(r, str)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]

    def line(row):
        return " | ".join(c.ljust(w) if i < left or i == len(row) - 1 else c.rjust(w)
                          for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    print(file=out)
    print(title, file=out)
    print(line(columns), file=out)
    print("-+-".join("-" * w for w in widths), file=out)
    for r in rows:
        print(r if isinstance(r, str) else line(r), file=out)
    for f in footer:
        print(f, file=out)


def write_csv(path, header, rows):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


def pyplot_or_reason(prog):
    """matplotlib's pyplot (drawing to files, no display), or None and why
    it cannot be had."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        return plt, None
    except ImportError as e:
        return None, "%s cannot import matplotlib (%s); Debian: apt-get install " \
            "python3-matplotlib, or run %s with a python3 that has it" % (
                sys.executable, e, prog)
