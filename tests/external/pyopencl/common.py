"""Shared by the PyOpenCL checks of tests/external/pyopencl: runs each check
on every device of the first platform, each device in a context of its own,
prints one PASS or FAIL line per check (and device), exits 1 on any FAIL.

Output is deterministic (no timings, values printed rounded): pyopencl.sh compares
the native and the VOCL output line for line as well.
"""
import os
import sys
import traceback

import numpy as np
import pyopencl as cl


class Checks:
    def __init__(self, script):
        self.script = script
        self.failed = 0
        self.passed = 0

    def report(self, ok, what, detail=""):
        line = ("PASS " if ok else "FAIL ") + what + (": " + detail if detail else "")
        print(line, flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        return ok

    def skip(self, what, why):
        print("SKIP %s: %s" % (what, why), flush=True)

    def close(self, what, got, want, rtol=1e-5, atol=0.0):
        """got ~ want elementwise (NumPy's allclose); prints the worst error."""
        got = np.asarray(got)
        want = np.asarray(want)
        if got.shape != want.shape:
            return self.report(False, what, "shape %s, %s expected" % (got.shape, want.shape))
        if got.size == 0:
            return self.report(True, what, "empty")
        ok = bool(np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True))
        with np.errstate(all="ignore"):
            err = np.abs(got.astype(np.complex128) - want.astype(np.complex128))
            scale = np.maximum(np.abs(want.astype(np.complex128)), 1e-30)
            rel = float(np.nanmax(err / scale))
        where = int(np.nanargmax(err)) if err.size else 0
        detail = "n=%d, max rel err %.1e" % (got.size, rel)
        if not ok:
            detail += ", worst at flat index %d: got %r, want %r" % (
                where, got.flat[where], want.flat[where])
        return self.report(ok, what, detail)

    def equal(self, what, got, want):
        got = np.asarray(got)
        want = np.asarray(want)
        ok = got.shape == want.shape and bool(np.array_equal(got, want))
        detail = "n=%d" % want.size
        if not ok:
            if got.shape != want.shape:
                detail = "shape %s, %s expected" % (got.shape, want.shape)
            else:
                bad = np.flatnonzero(got.ravel() != want.ravel())
                detail = "%d of %d differ, first at %d: got %r, want %r" % (
                    bad.size, want.size, bad[0], got.ravel()[bad[0]], want.ravel()[bad[0]])
        return self.report(ok, what, detail)

    def run(self, what, fn, *args):
        """Runs fn(*args); an exception is a FAIL naming the OpenCL error."""
        try:
            fn(*args)
        except Exception as e:  # noqa: BLE001 - any error is the check failing
            tb = traceback.extract_tb(sys.exc_info()[2])
            frame = tb[-1] if tb else None
            where = " at %s:%d" % (os.path.basename(frame.filename), frame.lineno) if frame else ""
            self.report(False, what, "%s: %s%s" % (type(e).__name__, str(e).strip().replace("\n", " | "), where))

    def finish(self):
        print("%s: %d passed, %d failed" % (self.script, self.passed, self.failed), flush=True)
        sys.exit(1 if self.failed or not self.passed else 0)


def devices():
    platforms = cl.get_platforms()
    if not platforms:
        raise SystemExit("FAIL no OpenCL platform")
    return platforms[0].get_devices()


def per_device(checks, body):
    """body(checks, tag, ctx, queue, dev) for every device, one context each."""
    devs = devices()
    for i, dev in enumerate(devs):
        tag = "dev%d/%d" % (i, len(devs))
        try:
            ctx = cl.Context([dev])
            queue = cl.CommandQueue(ctx)
        except Exception as e:  # noqa: BLE001
            checks.report(False, "%s context" % tag, "%s: %s" % (type(e).__name__, e))
            continue
        body(checks, tag, ctx, queue, dev)
        queue.finish()


def rng(seed=1234):
    return np.random.default_rng(seed)
