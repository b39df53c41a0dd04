#!/usr/bin/python3
"""pyopencl.scan against NumPy: InclusiveScanKernel and ExclusiveScanKernel
(sums of int32, int64 and float64, a max-scan), array.cumsum, and
pyopencl.algorithm.copy_if (a GenericScanKernel underneath), over sizes
below, at and well above one work-group's share."""
import numpy as np
import pyopencl.array as cla
from pyopencl.algorithm import copy_if
from pyopencl.scan import ExclusiveScanKernel, InclusiveScanKernel

from common import Checks, per_device, rng


def body(c, tag, ctx, q, dev):
    r = rng(17)
    has_fp64 = "cl_khr_fp64" in dev.extensions

    def int_scans():
        inc = InclusiveScanKernel(ctx, np.int32, "a+b", neutral="0")
        exc = ExclusiveScanKernel(ctx, np.int32, "a+b", "0")
        for n in (1, 1000, 65536, 400009):
            h = r.integers(-100, 100, n).astype(np.int32)
            a = cla.to_device(q, h)
            inc(a)
            c.equal("%s inclusive int32 sum n=%d" % (tag, n), a.get(), np.cumsum(h, dtype=np.int32))
            b = cla.to_device(q, h)
            exc(b)
            want = np.concatenate(([0], np.cumsum(h, dtype=np.int32)[:-1])).astype(np.int32)
            c.equal("%s exclusive int32 sum n=%d" % (tag, n), b.get(), want)
        mx = InclusiveScanKernel(ctx, np.int32, "max(a, b)", neutral="INT_MIN")
        h = r.integers(-10**6, 10**6, 300001).astype(np.int32)
        a = cla.to_device(q, h)
        mx(a)
        c.equal("%s inclusive int32 max-scan" % tag, a.get(), np.maximum.accumulate(h))
        l_h = r.integers(0, 2**40, 200003).astype(np.int64)
        a = cla.to_device(q, l_h)
        InclusiveScanKernel(ctx, np.int64, "a+b", neutral="0")(a)
        c.equal("%s inclusive int64 sum" % tag, a.get(), np.cumsum(l_h))

    def float_scans():
        h = r.uniform(0, 1, 300007)
        a = cla.to_device(q, h)
        c.close("%s array.cumsum float64" % tag, cla.cumsum(a).get(), np.cumsum(h), rtol=1e-10)

    def copy_if_check():
        h = r.integers(0, 1000, 300007).astype(np.int32)
        a = cla.to_device(q, h)
        out, count, _ = copy_if(a, "ary[i] % 7 == 3")
        n = int(count.get())
        c.equal("%s copy_if count" % tag, n, int((h % 7 == 3).sum()))
        c.equal("%s copy_if values" % tag, out.get()[:n], h[h % 7 == 3])

    c.run("%s integer scans" % tag, int_scans)
    if has_fp64:
        c.run("%s float scans" % tag, float_scans)
    c.run("%s copy_if" % tag, copy_if_check)


c = Checks("scan")
per_device(c, body)
c.finish()
