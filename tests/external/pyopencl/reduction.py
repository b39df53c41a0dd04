#!/usr/bin/python3
"""pyopencl.reduction.ReductionKernel against NumPy: sums, a dot product
with a map expression, max with a neutral element, a count of positives in
int64, a reduction over a slice, a reduction of a user struct-free pair of
arrays (sum of squared differences) in double."""
import numpy as np
import pyopencl.array as cla
from pyopencl.reduction import ReductionKernel

from common import Checks, per_device, rng

N = 1000003


def body(c, tag, ctx, q, dev):
    r = rng(13)
    has_fp64 = "cl_khr_fp64" in dev.extensions
    x_h = r.uniform(-1, 1, N).astype(np.float32)
    y_h = r.uniform(-1, 1, N).astype(np.float32)

    def float_dot():
        x, y = cla.to_device(q, x_h), cla.to_device(q, y_h)
        k = ReductionKernel(ctx, np.float32, neutral="0", reduce_expr="a+b",
                            map_expr="x[i]*y[i]", arguments="__global const float *x, __global const float *y")
        c.close("%s dot float" % tag, k(x, y).get(), np.dot(x_h.astype(np.float64), y_h),
                rtol=1e-3, atol=1e-2)
        k2 = ReductionKernel(ctx, np.float32, neutral="-INFINITY", reduce_expr="fmax(a, b)",
                             map_expr="fabs(x[i])", arguments="__global const float *x")
        c.equal("%s max |x|" % tag, k2(x).get(), np.abs(x_h).max())
        k3 = ReductionKernel(ctx, np.int64, neutral="0", reduce_expr="a+b",
                             map_expr="x[i] > 0.5f ? 1 : 0", arguments="__global const float *x")
        c.equal("%s count x>0.5 (int64)" % tag, k3(x).get(), np.int64((x_h > 0.5).sum()))
        k4 = ReductionKernel(ctx, np.float32, neutral="0", reduce_expr="a+b", map_expr="x[i]",
                             arguments="__global const float *x")
        c.close("%s sum over slice [12345:678901]" % tag, k4(x, range=slice(12345, 678901)).get(),
                x_h[12345:678901].astype(np.float64).sum(), rtol=1e-3, atol=1e-2)
        small = cla.to_device(q, x_h[:7])
        c.close("%s sum of 7" % tag, k4(small).get(), x_h[:7].sum(), rtol=1e-6)

    def double_ssd():
        a_h = r.standard_normal(N)
        b_h = r.standard_normal(N)
        k = ReductionKernel(ctx, np.float64, neutral="0", reduce_expr="a+b",
                            map_expr="(a[i]-b[i])*(a[i]-b[i])",
                            arguments="__global const double *a, __global const double *b")
        c.close("%s sum of squared differences double" % tag,
                k(cla.to_device(q, a_h), cla.to_device(q, b_h)).get(), ((a_h - b_h) ** 2).sum(), rtol=1e-10)

    c.run("%s float reductions" % tag, float_dot)
    if has_fp64:
        c.run("%s double reduction" % tag, double_ssd)


c = Checks("reduction")
per_device(c, body)
c.finish()
