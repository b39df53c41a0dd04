#!/usr/bin/python3
"""pyopencl.clrandom: Philox and Threefry generators (and clrandom.rand):
uniform and normal numbers in float32 and float64 have the right mean and
variance (within 6 standard errors), stay in range, and a seed reproduces
its numbers.  A digest of the first numbers is printed: with pyopencl.sh
comparing the native and the VOCL output, VOCL must give the same numbers."""
import hashlib

import numpy as np
import pyopencl.clrandom as clr

from common import Checks, per_device

N = 1 << 20


def body(c, tag, ctx, q, dev):
    has_fp64 = "cl_khr_fp64" in dev.extensions
    dtypes = (np.float32, np.float64) if has_fp64 else (np.float32,)

    def moments(what, x, mean, var, show=True):
        x = x.astype(np.float64)
        n = x.size
        m, v = x.mean(), x.var()
        # standard errors: of the mean sqrt(var/n); of the variance about
        # sqrt((mu4 - var^2)/n), mu4 = 9/5 var^2 (uniform) or 3 var^2 (normal)
        se_m = np.sqrt(var / n)
        se_v = np.sqrt(2.0 * var * var / n)
        ok = abs(m - mean) < 6 * se_m and abs(v - var) < 6 * se_v
        detail = "n=%d mean %.4f (want %.4f) var %.4f (want %.4f)" % (n, m, mean, v, var)
        c.report(ok, what, detail if show or not ok else "n=%d" % n)

    def gen(cls):
        for dt in dtypes:
            g = cls(ctx, seed=42)
            u = g.uniform(q, N, dt, a=-2, b=3).get()
            name = "%s %s %s" % (tag, cls.__name__, np.dtype(dt).name)
            c.report(bool(((u >= -2) & (u <= 3)).all()), "%s uniform in [-2, 3]" % name,
                     "min %.4f max %.4f" % (u.min(), u.max()))
            moments("%s uniform moments" % name, u, 0.5, 25.0 / 12)
            nrm = g.normal(q, N, dt, mu=1.5, sigma=2.0).get()
            moments("%s normal moments" % name, nrm, 1.5, 4.0)
            again = cls(ctx, seed=42).uniform(q, N, dt, a=-2, b=3).get()
            c.equal("%s same seed, same numbers" % name, again, u)
            other = cls(ctx, seed=43).uniform(q, 1000, dt).get()
            c.report(not np.array_equal(other, u[:1000]), "%s other seed, other numbers" % name)
            digest = hashlib.sha256(u[:4096].tobytes()).hexdigest()[:16]
            c.report(True, "%s digest of the first numbers" % name, digest)

    def rand():
        x = clr.rand(q, (512, 513), np.float32).get()
        c.report(x.shape == (512, 513) and bool(((x >= 0) & (x <= 1)).all()), "%s clrandom.rand 2-D" % tag)
        # clrandom.rand seeds itself at random: no numbers in the output
        moments("%s clrandom.rand moments" % tag, x.ravel(), 0.5, 1.0 / 12, show=False)
        i = clr.rand(q, 100000, np.int32, a=-5, b=5).get()
        c.report(bool(((i >= -5) & (i < 5)).all()) and set(np.unique(i)) == set(range(-5, 5)),
                 "%s clrandom.rand int32 in [-5, 5)" % tag)

    c.run("%s Philox" % tag, gen, clr.PhiloxGenerator)
    c.run("%s Threefry" % tag, gen, clr.ThreefryGenerator)
    c.run("%s rand" % tag, rand)


c = Checks("clrandom")
per_device(c, body)
c.finish()
