#!/usr/bin/python3
"""Plain PyOpenCL programs and kernels against NumPy: build options, a
__local argument (cl.LocalMemory) in a work-group reduction, by-value
arguments of every scalar size, a float4 vector and a user struct, kernel
and program queries, profiling events, user events gating a kernel, buffer
copies (plain, with offsets, rectangular), fills, and mapped buffers."""
import numpy as np
import pyopencl as cl
import pyopencl.cltypes as cltypes

from common import Checks, per_device, rng

SRC = """
typedef struct { float scale; int offset; long big; } params_t;

__kernel void wg_sum(__global const float *x, __global float *part, __local float *tmp)
{
    size_t l = get_local_id(0), n = get_local_size(0);
    tmp[l] = x[get_global_id(0)] * SCALE;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (size_t s = n / 2; s > 0; s /= 2) {
        if (l < s)
            tmp[l] += tmp[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0)
        part[get_group_id(0)] = tmp[0];
}

__kernel void scalars(__global double *out, char c, uchar uc, short s, ushort us,
                      int i, uint ui, long l, ulong ul, float f, double d,
                      float4 v, params_t p)
{
    out[0] = c; out[1] = uc; out[2] = s; out[3] = us; out[4] = i; out[5] = ui;
    out[6] = (double)l; out[7] = (double)ul; out[8] = f; out[9] = d;
    out[10] = v.x + 10 * v.y + 100 * v.z + 1000 * v.w;
    out[11] = p.scale; out[12] = p.offset; out[13] = (double)p.big;
}

__kernel void add_one(__global int *x) { x[get_global_id(0)] += 1; }
"""


def body(c, tag, ctx, q, dev):
    r = rng(23)
    mf = cl.mem_flags

    def build_and_local():
        prg = cl.Program(ctx, SRC).build(options=["-D", "SCALE=3", "-cl-mad-enable"])
        names = sorted(prg.get_info(cl.program_info.KERNEL_NAMES).split(";"))
        c.equal("%s program KERNEL_NAMES" % tag, names, ["add_one", "scalars", "wg_sum"])
        k = prg.wg_sum
        c.equal("%s kernel FUNCTION_NAME, NUM_ARGS" % tag,
                [k.function_name, k.num_args], ["wg_sum", 3])
        wgs = k.get_work_group_info(cl.kernel_work_group_info.WORK_GROUP_SIZE, dev)
        c.report(wgs >= 1, "%s kernel WORK_GROUP_SIZE" % tag, str(wgs))
        lsz = min(64, wgs)
        lsz = 1 << (lsz.bit_length() - 1)
        ngroups = 1000
        x_h = r.uniform(-1, 1, lsz * ngroups).astype(np.float32)
        x = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x_h)
        part = cl.Buffer(ctx, mf.WRITE_ONLY, 4 * ngroups)
        k(q, (lsz * ngroups,), (lsz,), x, part, cl.LocalMemory(4 * lsz))
        out = np.empty(ngroups, np.float32)
        cl.enqueue_copy(q, out, part)
        c.close("%s __local work-group sums, -D SCALE=3" % tag, out,
                3 * x_h.reshape(ngroups, lsz).astype(np.float64).sum(axis=1), rtol=1e-4, atol=1e-4)

    def scalars():
        prg = cl.Program(ctx, SRC).build(options="-DSCALE=1")
        out = cl.Buffer(ctx, mf.WRITE_ONLY, 14 * 8)
        pdt = np.dtype([("scale", np.float32), ("offset", np.int32), ("big", np.int64)])
        p = np.zeros(1, pdt)
        p[0] = (0.25, -77, -(2**40))
        v = cltypes.make_float4(1, 2, 3, 4)
        prg.scalars(q, (1,), None, out, np.int8(-5), np.uint8(250), np.int16(-30000), np.uint16(60000),
                    np.int32(-2**31), np.uint32(2**32 - 1), np.int64(-2**40), np.uint64(2**50),
                    np.float32(1.5), np.float64(1e300), v, p[0])
        got = np.empty(14)
        cl.enqueue_copy(q, got, out)
        want = [-5, 250, -30000, 60000, -2**31, 2**32 - 1, -2**40, 2**50, 1.5, 1e300, 4321, 0.25, -77, -(2**40)]
        c.equal("%s by-value args char..double, float4, struct" % tag, got, np.array(want, np.float64))

    def events():
        pq = cl.CommandQueue(ctx, properties=cl.command_queue_properties.PROFILING_ENABLE)
        prg = cl.Program(ctx, SRC).build(options="-DSCALE=1")
        x_h = np.arange(100000, dtype=np.int32)
        x = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=x_h)
        gate = cl.UserEvent(ctx)
        ev = prg.add_one(pq, x_h.shape, None, x, wait_for=[gate])
        status_before = ev.command_execution_status
        gate.set_status(cl.command_execution_status.COMPLETE)
        ev.wait()
        c.report(status_before != cl.command_execution_status.COMPLETE,
                 "%s user event holds a kernel back" % tag)
        prof = [ev.profile.queued, ev.profile.submit, ev.profile.start, ev.profile.end]
        c.report(0 < prof[0] <= prof[1] <= prof[2] <= prof[3], "%s profiling queued<=submit<=start<=end" % tag)
        out = np.empty_like(x_h)
        cl.enqueue_copy(pq, out, x)
        c.equal("%s kernel after the user event" % tag, out, x_h + 1)

    def copies():
        n = 200000
        a_h = r.integers(0, 1 << 30, n).astype(np.int32)
        a = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a_h)
        b = cl.Buffer(ctx, mf.READ_WRITE, 4 * n)
        cl.enqueue_fill_buffer(q, b, np.int32(-7), 0, 4 * n)
        cl.enqueue_copy(q, b, a, byte_count=4 * 5000, src_offset=4 * 100, dst_offset=4 * 90000)
        out = np.empty(n, np.int32)
        cl.enqueue_copy(q, out, b)
        want = np.full(n, -7, np.int32)
        want[90000:95000] = a_h[100:5100]
        c.equal("%s fill + copy with offsets" % tag, out, want)
        # rectangular: a 40x30 block of a 400x500 int32 matrix
        m_h = a_h[:200000].reshape(400, 500)
        m = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=m_h)
        blk = np.zeros((30, 40), np.int32)
        cl.enqueue_copy(q, blk, m, buffer_origin=(4 * 7, 11), host_origin=(0, 0),
                        region=(4 * 40, 30), buffer_pitches=(4 * 500,), host_pitches=(4 * 40,))
        c.equal("%s read rect" % tag, blk, m_h[11:41, 7:47])
        d = cl.Buffer(ctx, mf.READ_WRITE, 4 * 40 * 30)
        cl.enqueue_copy(q, d, m, src_origin=(4 * 7, 11), dst_origin=(0, 0), region=(4 * 40, 30),
                        src_pitches=(4 * 500,), dst_pitches=(4 * 40,))
        blk2 = np.zeros((30, 40), np.int32)
        cl.enqueue_copy(q, blk2, d)
        c.equal("%s copy rect buffer to buffer" % tag, blk2, m_h[11:41, 7:47])

    def maps():
        n = 300000
        a_h = r.standard_normal(n).astype(np.float32)
        a = cl.Buffer(ctx, mf.READ_WRITE | mf.COPY_HOST_PTR, hostbuf=a_h)
        m, _ = cl.enqueue_map_buffer(q, a, cl.map_flags.READ | cl.map_flags.WRITE, 0, (n,), np.float32)
        c.equal("%s mapped buffer read" % tag, np.array(m), a_h)
        m[1000:2000] = 42
        m.base.release(q)
        out = np.empty(n, np.float32)
        cl.enqueue_copy(q, out, a)
        a_h[1000:2000] = 42
        c.equal("%s mapped buffer written back at unmap" % tag, out, a_h)

    for name, fn in (("build and __local", build_and_local), ("scalar arguments", scalars),
                     ("events", events), ("copies", copies), ("maps", maps)):
        c.run("%s %s" % (tag, name), fn)


c = Checks("kernels")
per_device(c, body)
c.finish()
