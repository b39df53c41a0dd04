#!/usr/bin/python3
"""PyOpenCL images against NumPy: image_from_array (1 and 4 channels, float
and uint8, 2-D and 3-D) read back with enqueue_copy; a kernel sampling an
image with a host-made sampler (nearest, and linear between two texels) and
with an in-kernel sampler; a kernel writing a write-only image; image to
buffer and buffer to image copies; a mapped image."""
import numpy as np
import pyopencl as cl
import pyopencl.array as cla

from common import Checks, per_device, rng

SRC = """
__kernel void sample(__read_only image2d_t img, sampler_t smp, float dx,
                     __global float *out, int w)
{
    int x = get_global_id(0), y = get_global_id(1);
    out[y * w + x] = read_imagef(img, smp, (float2)(x + 0.5f + dx, y + 0.5f)).x;
}
__constant sampler_t nearest_int = CLK_NORMALIZED_COORDS_FALSE |
    CLK_ADDRESS_CLAMP_TO_EDGE | CLK_FILTER_NEAREST;
__kernel void flip_rgba(__read_only image2d_t src, __write_only image2d_t dst)
{
    int2 p = (int2)(get_global_id(0), get_global_id(1));
    int w = get_image_width(src);
    uint4 v = read_imageui(src, nearest_int, (int2)(w - 1 - p.x, p.y));
    write_imageui(dst, p, v.wzyx);
}
__kernel void sum3d(__read_only image3d_t img, __global float *out)
{
    int x = get_global_id(0), y = get_global_id(1);
    int d = get_image_depth(img);
    float s = 0;
    for (int z = 0; z < d; z++)
        s += read_imagef(img, nearest_int, (int4)(x, y, z, 0)).x;
    out[y * get_global_size(0) + x] = s;
}
"""


def body(c, tag, ctx, q, dev):
    if not dev.image_support:
        c.skip("%s images" % tag, "the device has no image support")
        return
    r = rng(19)
    h, w = 97, 131
    prg = cl.Program(ctx, SRC).build()

    def float_image():
        a = r.standard_normal((h, w)).astype(np.float32)
        img = cl.image_from_array(ctx, a, 1)
        back = np.empty_like(a)
        cl.enqueue_copy(q, back, img, origin=(0, 0), region=(w, h))
        c.equal("%s image_from_array float 1-channel read back" % tag, back, a)
        out = cla.empty(q, (h, w), np.float32)
        nearest = cl.Sampler(ctx, False, cl.addressing_mode.CLAMP_TO_EDGE, cl.filter_mode.NEAREST)
        prg.sample(q, (w, h), None, img, nearest, np.float32(0), out.data, np.int32(w))
        c.equal("%s kernel sampling, nearest" % tag, out.get(), a)
        linear = cl.Sampler(ctx, False, cl.addressing_mode.CLAMP_TO_EDGE, cl.filter_mode.LINEAR)
        prg.sample(q, (w, h), None, img, linear, np.float32(0.5), out.data, np.int32(w))
        want = a.copy()
        want[:, :-1] = (a[:, :-1] + a[:, 1:]) / 2
        c.close("%s kernel sampling, linear half-way" % tag, out.get(), want, rtol=1e-2, atol=1e-2)
        buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, a.nbytes)
        cl.enqueue_copy(q, buf, img, offset=0, origin=(0, 0), region=(w, h))
        viab = np.empty_like(a)
        cl.enqueue_copy(q, viab, buf)
        c.equal("%s image to buffer copy" % tag, viab, a)
        b = (a * 2).astype(np.float32)
        cl.enqueue_copy(q, buf, b)
        img2 = cl.Image(ctx, cl.mem_flags.READ_WRITE, cl.ImageFormat(cl.channel_order.R, cl.channel_type.FLOAT), (w, h))
        cl.enqueue_copy(q, img2, buf, offset=0, origin=(0, 0), region=(w, h))
        back2 = np.empty_like(b)
        cl.enqueue_copy(q, back2, img2, origin=(0, 0), region=(w, h))
        c.equal("%s buffer to image copy" % tag, back2, b)
        def mapped(image, flags):
            m, _evt, pitch, _slice = cl.enqueue_map_image(q, image, flags, (0, 0), (w, h), (h, w), np.float32)
            view = m if pitch == w * 4 else np.lib.stride_tricks.as_strided(m, (h, w), (pitch, 4))
            return m, view
        m, view = mapped(img, cl.map_flags.READ)
        c.equal("%s mapped image, read" % tag, np.array(view), a)
        m.base.release(q)
        m, view = mapped(img2, cl.map_flags.WRITE)
        view[:, :] = a + 1
        m.base.release(q)
        cl.enqueue_copy(q, back2, img2, origin=(0, 0), region=(w, h))
        c.equal("%s mapped image, written and unmapped" % tag, back2, a + 1)

    def rgba_image():
        a = r.integers(0, 256, (h, w, 4)).astype(np.uint8)
        src = cl.image_from_array(ctx, a, 4)
        back = np.empty_like(a)
        cl.enqueue_copy(q, back, src, origin=(0, 0), region=(w, h))
        c.equal("%s image_from_array uint8 RGBA read back" % tag, back, a)
        fmt = cl.ImageFormat(cl.channel_order.RGBA, cl.channel_type.UNSIGNED_INT8)
        dst = cl.Image(ctx, cl.mem_flags.WRITE_ONLY, fmt, (w, h))
        prg.flip_rgba(q, (w, h), None, src, dst)
        out = np.empty_like(a)
        cl.enqueue_copy(q, out, dst, origin=(0, 0), region=(w, h))
        c.equal("%s kernel writing a write-only image (flip, wzyx)" % tag, out, a[:, ::-1, ::-1])

    def image3d():
        d = 5
        a = r.standard_normal((d, h, w)).astype(np.float32)
        img = cl.image_from_array(ctx, a, 1)
        back = np.empty_like(a)
        cl.enqueue_copy(q, back, img, origin=(0, 0, 0), region=(w, h, d))
        c.equal("%s 3-D image read back" % tag, back, a)
        out = cla.empty(q, (h, w), np.float32)
        prg.sum3d(q, (w, h), None, img, out.data)
        c.close("%s kernel summing a 3-D image over z" % tag, out.get(), a.sum(axis=0), rtol=1e-5, atol=1e-5)

    c.run("%s float image" % tag, float_image)
    c.run("%s RGBA image" % tag, rgba_image)
    c.run("%s 3-D image" % tag, image3d)


c = Checks("images")
per_device(c, body)
c.finish()
