/*
 * parked.c - every kind of write whose data travels in chunks, each checked
 * by reading it back: a buffer's (blocking or not, behind a long kernel,
 * gated by a user event the same thread sets later, after small writes
 * that wait in a batch), a new buffer's, a rectangle's, a new image's and
 * an image's.  Through a proxy (VOCL_SHM=0, so nothing is shared) each
 * parks its session until its chunks are in (executor/inbound.c); the
 * output must equal the native run's.
 */
#include <CL/cl.h>

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cl_check.h"

#define BIG (1u << 20) /* past the inline size: chunks */

static cl_context ctx;
static cl_command_queue q;
static cl_device_id dev;
static int failures;

static void report(const char *what, const void *got, const void *want, size_t n)
{
    bool ok = !memcmp(got, want, n);
    printf("%-44s %s\n", what, ok ? "ok" : "DIFFERENT");
    failures += !ok;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 131 + seed * 7 + (i >> 11));
}

static cl_mem buffer(size_t n)
{
    cl_int rc;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n, NULL, &rc);
    CHECK(rc);
    return m;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "parked: still running after 120 s: a hang\n";
    if (write(2, msg, sizeof(msg) - 1) < 0)
        _exit(3);
    _exit(3);
}

/* Blocking and non-blocking writes, and one behind a long kernel. */
static void buffer_writes(uint8_t *src, uint8_t *got)
{
    cl_mem m = buffer(BIG);
    fill(src, BIG, 1);
    CHECK(clEnqueueWriteBuffer(q, m, CL_TRUE, 0, BIG, src, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, m, CL_TRUE, 0, BIG, got, 0, NULL, NULL));
    report("blocking write", got, src, BIG);

    fill(src, BIG, 2);
    cl_event w;
    CHECK(clEnqueueWriteBuffer(q, m, CL_FALSE, 0, BIG, src, 0, NULL, &w));
    CHECK(clWaitForEvents(1, &w));
    CHECK(clReleaseEvent(w));
    CHECK(clEnqueueReadBuffer(q, m, CL_TRUE, 0, BIG, got, 0, NULL, NULL));
    report("non-blocking write, its event waited for", got, src, BIG);

    /* A kernel of a hundred milliseconds or so first: the write waits for it. */
    cl_kernel k = build_kernel(ctx, dev,
                               "__kernel void spin(__global float *o, uint n) {\n"
                               "  float x = 1; for (uint i = 0; i < n; i++) x = x * 0.9999f + 1;\n"
                               "  o[get_global_id(0)] = x; }\n",
                               "spin");
    cl_mem o = buffer(sizeof(float));
    cl_uint n = 50u << 20;
    size_t one = 1;
    CHECK(clSetKernelArg(k, 0, sizeof(o), &o));
    CHECK(clSetKernelArg(k, 1, sizeof(n), &n));
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &one, NULL, 0, NULL, NULL));
    fill(src, BIG, 3);
    CHECK(clEnqueueWriteBuffer(q, m, CL_TRUE, 0, BIG, src, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, m, CL_TRUE, 0, BIG, got, 0, NULL, NULL));
    report("blocking write behind a long kernel", got, src, BIG);

    /* Small writes wait in a batch; the chunked write goes last in it. */
    uint8_t small[16][64];
    for (int i = 0; i < 16; i++) {
        memset(small[i], 100 + i, sizeof(small[i]));
        CHECK(clEnqueueWriteBuffer(q, m, CL_FALSE, (size_t)i * 64, 64, small[i], 0, NULL,
                                   NULL));
    }
    fill(src, BIG, 4);
    CHECK(clEnqueueWriteBuffer(q, m, CL_FALSE, 1024, BIG - 1024, src + 1024, 0, NULL, NULL));
    CHECK(clFinish(q));
    for (int i = 0; i < 16; i++)
        memcpy(src + (size_t)i * 64, small[i], 64);
    CHECK(clEnqueueReadBuffer(q, m, CL_TRUE, 0, BIG, got, 0, NULL, NULL));
    report("small writes, then a chunked one", got, src, BIG);

    /* Gated by a user event that this thread sets after the write. */
    cl_int rc;
    cl_event ue = clCreateUserEvent(ctx, &rc);
    CHECK(rc);
    fill(src, BIG, 5);
    CHECK(clEnqueueWriteBuffer(q, m, CL_FALSE, 0, BIG, src, 1, &ue, &w));
    CHECK(clSetUserEventStatus(ue, CL_COMPLETE));
    CHECK(clWaitForEvents(1, &w));
    CHECK(clEnqueueReadBuffer(q, m, CL_TRUE, 0, BIG, got, 0, NULL, NULL));
    report("write gated by a user event set after it", got, src, BIG);
    CHECK(clReleaseEvent(w));
    CHECK(clReleaseEvent(ue));
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseMemObject(o));
    CHECK(clReleaseMemObject(m));
}

/* A new buffer with its data, and a rectangle. */
static void new_buffer_and_rect(uint8_t *src, uint8_t *got)
{
    cl_int rc;
    fill(src, BIG, 6);
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, BIG, src, &rc);
    CHECK(rc);
    CHECK(clEnqueueReadBuffer(q, m, CL_TRUE, 0, BIG, got, 0, NULL, NULL));
    report("new buffer with its data", got, src, BIG);

    /* Rows 700 bytes long, 800 of them, into a 1024-byte-pitch buffer. */
    uint8_t *want = malloc(BIG);
    if (!want)
        exit(2);
    memcpy(want, src, BIG);
    fill(src, BIG, 7);
    size_t bo[3] = {100, 50, 0}, ho[3] = {0, 0, 0}, region[3] = {700, 800, 1};
    CHECK(clEnqueueWriteBufferRect(q, m, CL_TRUE, bo, ho, region, 1024, 0, 700, 0, src, 0, NULL,
                                   NULL));
    for (size_t r = 0; r < 800; r++)
        memcpy(want + (50 + r) * 1024 + 100, src + r * 700, 700);
    CHECK(clEnqueueReadBuffer(q, m, CL_TRUE, 0, BIG, got, 0, NULL, NULL));
    report("rectangle", got, want, BIG);
    free(want);
    CHECK(clReleaseMemObject(m));
}

/* A new image with its data, and a write into one. */
static void images(uint8_t *src, uint8_t *got)
{
    cl_bool has = CL_FALSE;
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_IMAGE_SUPPORT, sizeof(has), &has, NULL));
    if (!has) {
        printf("%-44s %s\n", "images", "none on this device");
        return;
    }
    const size_t w = 256, h = 256, bytes = w * h * 4;
    cl_image_format fmt = {CL_RGBA, CL_UNSIGNED_INT8};
    cl_image_desc desc = {.image_type = CL_MEM_OBJECT_IMAGE2D, .image_width = w,
                          .image_height = h};
    size_t origin[3] = {0, 0, 0}, region[3] = {w, h, 1};
    cl_int rc;
    fill(src, bytes, 8);
    cl_mem im = clCreateImage(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, &fmt, &desc, src,
                              &rc);
    CHECK(rc);
    CHECK(clEnqueueReadImage(q, im, CL_TRUE, origin, region, 0, 0, got, 0, NULL, NULL));
    report("new image with its data", got, src, bytes);
    fill(src, bytes, 9);
    CHECK(clEnqueueWriteImage(q, im, CL_TRUE, origin, region, 0, 0, src, 0, NULL, NULL));
    CHECK(clEnqueueReadImage(q, im, CL_TRUE, origin, region, 0, 0, got, 0, NULL, NULL));
    report("image write", got, src, bytes);
    CHECK(clReleaseMemObject(im));
}

int main(void)
{
    signal(SIGALRM, on_alarm);
    alarm(120);
    if (first_devices(&dev, 1) < 1) {
        fprintf(stderr, "parked: no device\n");
        return 1;
    }
    ctx = context_on(dev);
    cl_int rc;
    q = clCreateCommandQueue(ctx, dev, 0, &rc);
    CHECK(rc);
    uint8_t *src = malloc(BIG), *got = malloc(BIG);
    if (!src || !got)
        return 2;
    buffer_writes(src, got);
    new_buffer_and_rect(src, got);
    images(src, got);
    free(src);
    free(got);
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    return failures ? 1 : 0;
}
