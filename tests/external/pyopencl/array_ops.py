#!/usr/bin/python3
"""pyopencl.array against NumPy: transfers (under and over VOCL's 64 KiB
inline limit), elementwise arithmetic with arrays and scalars, comparisons,
clmath functions, reductions (sum, dot, vdot, min, max), slices, fill,
arange, take, concatenate, astype, if_positive."""
import numpy as np
import pyopencl.array as cla
import pyopencl.clmath as clmath

from common import Checks, per_device, rng

N = 300007  # 1.2 MB of float32: over VOCL's inline limit, an odd size


def body(c, tag, ctx, q, dev):
    r = rng(7)
    has_fp64 = "cl_khr_fp64" in dev.extensions

    def transfers():
        for dt in (np.float32, np.int32, np.uint8, np.complex64) + ((np.float64,) if has_fp64 else ()):
            for n in (1, 1000, N):
                h = (r.standard_normal(n) * 100).astype(dt) if dt != np.complex64 else \
                    (r.standard_normal(n) + 1j * r.standard_normal(n)).astype(dt)
                c.equal("%s to_device/get %s n=%d" % (tag, np.dtype(dt).name, n), cla.to_device(q, h).get(), h)

    def arithmetic():
        a_h = r.uniform(1, 2, N).astype(np.float32)
        b_h = r.uniform(1, 2, N).astype(np.float32)
        a, b = cla.to_device(q, a_h), cla.to_device(q, b_h)
        c.close("%s a+b" % tag, (a + b).get(), a_h + b_h)
        c.close("%s a-b" % tag, (a - b).get(), a_h - b_h, atol=1e-6)
        c.close("%s a*b" % tag, (a * b).get(), a_h * b_h)
        c.close("%s a/b" % tag, (a / b).get(), a_h / b_h)
        c.close("%s 3*a-2.5" % tag, (3 * a - 2.5).get(), 3 * a_h - np.float32(2.5))
        c.close("%s 1/a" % tag, (1 / a).get(), 1 / a_h)
        c.close("%s -a" % tag, (-a).get(), -a_h)
        c.close("%s a**2" % tag, (a ** 2).get(), a_h ** 2)
        c.close("%s abs(a-b)" % tag, abs(a - b).get(), np.abs(a_h - b_h), atol=1e-6)
        x = a.copy()
        x += b
        x *= 2
        c.close("%s in place (a+b)*2" % tag, x.get(), (a_h + b_h) * 2)
        c.equal("%s a>b" % tag, (a > b).get().astype(bool), a_h > b_h)
        c.close("%s sqrt/exp/sin" % tag, (clmath.sqrt(a) + clmath.exp(b) + clmath.sin(a)).get(),
                np.sqrt(a_h) + np.exp(b_h) + np.sin(a_h), rtol=1e-5)
        c.close("%s if_positive" % tag, cla.if_positive(a - b, a, b).get(), np.where(a_h - b_h > 0, a_h, b_h))
        c.close("%s maximum" % tag, cla.maximum(a, b).get(), np.maximum(a_h, b_h))
        if has_fp64:
            d_h = r.standard_normal(N)
            d = cla.to_device(q, d_h)
            c.close("%s float64 d*d+1" % tag, (d * d + 1).get(), d_h * d_h + 1, rtol=1e-12)
            c.close("%s astype float64->float32" % tag, d.astype(np.float32).get(), d_h.astype(np.float32))
        z_h = (r.standard_normal(N) + 1j * r.standard_normal(N)).astype(np.complex64)
        z = cla.to_device(q, z_h)
        c.close("%s complex z*z+z" % tag, (z * z + z).get(), z_h * z_h + z_h, rtol=1e-4, atol=1e-5)

    def reductions():
        a_h = r.uniform(-1, 1, N).astype(np.float32)
        b_h = r.uniform(-1, 1, N).astype(np.float32)
        a, b = cla.to_device(q, a_h), cla.to_device(q, b_h)
        want = np.dot(a_h.astype(np.float64), b_h.astype(np.float64))
        c.close("%s dot" % tag, cla.dot(a, b).get(), want, rtol=1e-3, atol=1e-2)
        c.close("%s sum" % tag, cla.sum(a).get(), a_h.astype(np.float64).sum(), rtol=1e-3, atol=1e-2)
        c.equal("%s min" % tag, cla.min(a).get(), a_h.min())
        c.equal("%s max" % tag, cla.max(a).get(), a_h.max())
        i_h = r.integers(-1000, 1000, N).astype(np.int32)
        c.equal("%s int32 sum" % tag, cla.sum(cla.to_device(q, i_h)).get(), i_h.sum(dtype=np.int32))
        z_h = (r.standard_normal(N) + 1j * r.standard_normal(N)).astype(np.complex64)
        w_h = (r.standard_normal(N) + 1j * r.standard_normal(N)).astype(np.complex64)
        c.close("%s vdot complex" % tag, cla.vdot(cla.to_device(q, z_h), cla.to_device(q, w_h)).get(),
                np.vdot(z_h.astype(np.complex128), w_h.astype(np.complex128)), rtol=1e-3, atol=1e-1)
        if has_fp64:
            d_h = r.standard_normal(N)
            c.close("%s float64 dot" % tag, cla.dot(cla.to_device(q, d_h), cla.to_device(q, d_h)).get(),
                    np.dot(d_h, d_h), rtol=1e-10)

    def layout():
        a_h = np.arange(N, dtype=np.float32)
        a = cla.to_device(q, a_h)
        c.equal("%s slice get" % tag, a[1000:200000].get(), a_h[1000:200000])
        a[10:20] = cla.to_device(q, np.full(10, -1, np.float32))
        a_h[10:20] = -1
        c.equal("%s slice set" % tag, a.get(), a_h)
        f = cla.empty(q, N, np.float32)
        f.fill(2.5)
        c.equal("%s fill" % tag, f.get(), np.full(N, 2.5, np.float32))
        c.equal("%s zeros" % tag, cla.zeros(q, 77777, np.int32).get(), np.zeros(77777, np.int32))
        c.equal("%s arange" % tag, cla.arange(q, 0, 50000, 3, dtype=np.int32).get(), np.arange(0, 50000, 3, dtype=np.int32))
        idx_h = r.integers(0, N, 5000).astype(np.int32)
        c.equal("%s take" % tag, cla.take(a, cla.to_device(q, idx_h)).get(), a_h[idx_h])
        b_h = r.standard_normal(1234).astype(np.float32)
        c.equal("%s concatenate" % tag, cla.concatenate((a, cla.to_device(q, b_h))).get(), np.concatenate((a_h, b_h)))
        m_h = r.standard_normal((300, 200)).astype(np.float32)
        m = cla.to_device(q, m_h)
        c.equal("%s 2-D reshape" % tag, m.reshape(200, 300).get(), m_h.reshape(200, 300))
        c.close("%s 2-D arithmetic" % tag, (m * 2 + m).get(), m_h * 3, rtol=1e-6)

    for name, fn in (("transfers", transfers), ("arithmetic", arithmetic),
                     ("reductions", reductions), ("layout", layout)):
        c.run("%s %s" % (tag, name), fn)


c = Checks("array_ops")
per_device(c, body)
c.finish()
