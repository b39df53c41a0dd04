#!/usr/bin/python3
"""pyopencl.elementwise.ElementwiseKernel against NumPy: scalar and vector
arguments of several types, a preamble, a partial range, int64 and double,
a kernel writing two outputs."""
import numpy as np
import pyopencl.array as cla
from pyopencl.elementwise import ElementwiseKernel

from common import Checks, per_device, rng

N = 250001


def body(c, tag, ctx, q, dev):
    r = rng(11)
    has_fp64 = "cl_khr_fp64" in dev.extensions

    def axpbyz():
        k = ElementwiseKernel(ctx, "float a, float *x, float b, float *y, float *z",
                              "z[i] = a*x[i] + b*y[i]", "axpbyz")
        x_h = r.standard_normal(N).astype(np.float32)
        y_h = r.standard_normal(N).astype(np.float32)
        x, y = cla.to_device(q, x_h), cla.to_device(q, y_h)
        z = cla.empty_like(x)
        k(np.float32(2.5), x, np.float32(-0.5), y, z)
        c.close("%s axpbyz float" % tag, z.get(), np.float32(2.5) * x_h - np.float32(0.5) * y_h, rtol=1e-5, atol=1e-6)
        z.fill(0)
        k(np.float32(1), x, np.float32(1), y, z, range=slice(1000, 20000, 3))
        want = np.zeros(N, np.float32)
        want[1000:20000:3] = x_h[1000:20000:3] + y_h[1000:20000:3]
        c.close("%s axpbyz range=slice(1000,20000,3)" % tag, z.get(), want, atol=1e-6)

    def preamble():
        k = ElementwiseKernel(ctx, "int *v, long *out, unsigned int seed",
                              "out[i] = collatz_steps(v[i]) + (long)seed * 1000000000L",
                              "collatz", preamble="""
            long collatz_steps(long n) {
                long s = 0;
                while (n > 1) { n = (n & 1) ? 3 * n + 1 : n / 2; s++; }
                return s;
            }""")
        v_h = r.integers(1, 100000, 20000).astype(np.int32)
        out = cla.empty(q, v_h.size, np.int64)
        k(cla.to_device(q, v_h), out, np.uint32(3))

        def steps(n):
            s = 0
            while n > 1:
                n = 3 * n + 1 if n & 1 else n // 2
                s += 1
            return s
        want = np.array([steps(int(n)) for n in v_h], np.int64) + 3 * 1000000000
        c.equal("%s preamble, int -> long, uint scalar" % tag, out.get(), want)

    def two_outputs():
        k = ElementwiseKernel(ctx, "double *x, double *s, double *cs",
                              "s[i] = sin(x[i]); cs[i] = cos(x[i])", "sincos2")
        x_h = r.uniform(-10, 10, N)
        x = cla.to_device(q, x_h)
        s, cs = cla.empty_like(x), cla.empty_like(x)
        k(x, s, cs)
        c.close("%s two outputs double sin" % tag, s.get(), np.sin(x_h), rtol=1e-12, atol=1e-15)
        c.close("%s two outputs double cos" % tag, cs.get(), np.cos(x_h), rtol=1e-12, atol=1e-15)

    def uchar_saturate():
        k = ElementwiseKernel(ctx, "uchar *a, uchar *b, uchar *out",
                              "out[i] = add_sat(a[i], b[i])", "addsat")
        a_h = r.integers(0, 256, N).astype(np.uint8)
        b_h = r.integers(0, 256, N).astype(np.uint8)
        out = cla.empty(q, N, np.uint8)
        k(cla.to_device(q, a_h), cla.to_device(q, b_h), out)
        c.equal("%s uchar add_sat" % tag, out.get(),
                np.minimum(a_h.astype(np.int32) + b_h, 255).astype(np.uint8))

    c.run("%s axpbyz" % tag, axpbyz)
    c.run("%s preamble" % tag, preamble)
    if has_fp64:
        c.run("%s two outputs" % tag, two_outputs)
    c.run("%s uchar" % tag, uchar_saturate)


c = Checks("elementwise")
per_device(c, body)
c.finish()
