#!/usr/bin/python3
"""One PyOpenCL context over all the devices of the platform (the usual
pattern of cl.Context(platform.get_devices()) or create_some_context with
several devices): the context must hold every device; one queue per device,
each adding its share of a vector; a buffer written on one device and read
on the next (the context's memory is shared by its devices); a program built
for all the devices at once."""
import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from common import Checks, devices, rng

c = Checks("multidevice")
devs = devices()
n = len(devs)


def whole():
    ctx = cl.Context(devs)
    got = ctx.get_info(cl.context_info.DEVICES)
    c.report(len(got) == n, "context over all %d devices" % n, "it holds %d" % len(got))
    c.report(ctx.get_info(cl.context_info.NUM_DEVICES) == n, "CL_CONTEXT_NUM_DEVICES = %d" % n)
    queues = [cl.CommandQueue(ctx, d) for d in devs]
    prg = cl.Program(ctx, "__kernel void axpy(float a, __global const float *x, __global float *y)"
                          "{ size_t i = get_global_id(0); y[i] += a * x[i]; }").build()
    built = [prg.get_build_info(d, cl.program_build_info.STATUS) for d in devs]
    c.report(all(s == 0 for s in built), "program built for every device", "CL_PROGRAM_BUILD_STATUS %s" % built)
    r = rng(29)
    N = 100000 * n
    x_h = r.standard_normal(N).astype(np.float32)
    y_h = r.standard_normal(N).astype(np.float32)
    x = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=x_h)
    y = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=y_h)
    share = N // n
    for i, qq in enumerate(queues):
        sub_x = x.get_sub_region(4 * i * share, 4 * share)
        sub_y = y.get_sub_region(4 * i * share, 4 * share)
        prg.axpy(qq, (share,), None, np.float32(2), sub_x, sub_y)
    for qq in queues:
        qq.finish()
    out = np.empty_like(y_h)
    cl.enqueue_copy(queues[-1], out, y)
    c.close("each device adds its share (sub-buffers), read on the last", out, y_h + 2 * x_h, rtol=1e-6, atol=1e-6)
    # a buffer written through device 0's queue, then used by every other device's
    a = cla.to_device(queues[0], np.arange(1000, dtype=np.int32))
    for i, qq in enumerate(queues[1:], 1):
        b = a.with_queue(qq) + i
        c.equal("device %d reads what device 0 wrote" % i, b.get(), np.arange(1000, dtype=np.int32) + i)


c.run("one context over all devices", whole)
c.finish()
