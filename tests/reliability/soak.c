/*
 * soak.c - an ordinary OpenCL program for the soak test (soak.sh): cycles of
 * mixed traffic on every device for a while, every result checked, every
 * object released at the end of each cycle.
 *
 *   soak SECONDS GATE
 *
 * One cycle on a device: a context and a profiling queue; one to four
 * buffers of 1 KiB..4 MiB written (blocking or not) and incremented by a
 * kernel built anew, then read back; a sub-buffer read; a copy; a map and
 * unmap; a user event gating a marker; a 2D image written and read where
 * the device has images; then everything released.
 *
 * Gates (GATE is a path; RANK is the MPI rank): after one warm-up cycle on
 * every device, GATE.warm.RANK is made and GATE.start awaited; after
 * SECONDS of cycles, GATE.done.RANK (holding the cycle count) is made and
 * GATE.end awaited.  At both gates the program holds no object, so the
 * proxies' state then must be the same (soak.sh compares them).
 */
#include <CL/cl.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../integration/cl_check.h"

#define MAX_DEV 8
#define MAX_INTS (1 << 20) /* 4 MiB */

/* Every launch covers MAX_INTS work-items, whatever the buffer's size, with
 * a bound check.  A soak run once ended with a proxy aborted inside PoCL
 * 3.1's cache of work-group functions, which holds one for each grid width
 * a kernel ran with ("found->ref_count > 0" in pocl_release_dlhandle_cache,
 * voclproxyd(8), BUGS); with one width that cache holds one.  The trigger
 * was not reproduced in a native program.  This test is about VOCL's
 * state, not PoCL's cache. */
static const char *src =
    "__kernel void inc(__global int *a, int by, int n)\n"
    "{ int i = (int)get_global_id(0); if (i < n) a[i] += by; }";

static uint64_t rng;

static uint32_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int fail(const char *what, int at, int got, int want)
{
    fprintf(stderr, "soak: %s: wrong value at %d: %d, not %d\n", what, at, got, want);
    return 1;
}

static int *in, *out;

/* A 64x64 RGBA int image written and read back. */
static int image_round(cl_context ctx, cl_command_queue q)
{
    enum { W = 64, H = 64 };
    cl_image_format fmt = {CL_RGBA, CL_SIGNED_INT32};
    cl_image_desc desc = {.image_type = CL_MEM_OBJECT_IMAGE2D, .image_width = W,
                          .image_height = H};
    cl_int rc;
    cl_mem img = clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &rc);
    CHECK(rc);
    size_t origin[3] = {0, 0, 0}, region[3] = {W, H, 1};
    for (int i = 0; i < W * H * 4; i++)
        in[i] = (int)next();
    CHECK(clEnqueueWriteImage(q, img, CL_FALSE, origin, region, 0, 0, in, 0, NULL, NULL));
    CHECK(clEnqueueReadImage(q, img, CL_TRUE, origin, region, 0, 0, out, 0, NULL, NULL));
    CHECK(clReleaseMemObject(img));
    for (int i = 0; i < W * H * 4; i++)
        if (out[i] != in[i])
            return fail("image", i, out[i], in[i]);
    return 0;
}

static int cycle(cl_device_id dev, cl_bool images)
{
    cl_int rc;
    cl_context ctx = context_on(dev);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &rc);
    CHECK(rc);
    cl_kernel k = build_kernel(ctx, dev, src, "inc");

    int bad = 0, nbuf = 1 + (int)(next() % 4);
    cl_mem bufs[4];
    size_t n[4];
    for (int b = 0; b < nbuf && !bad; b++) {
        n[b] = 256 + next() % (MAX_INTS - 256);
        bufs[b] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n[b] * sizeof(int), NULL, &rc);
        CHECK(rc);
        int by = (int)(next() % 100);
        for (size_t i = 0; i < n[b]; i++)
            in[i] = (int)(next() >> 2); /* room to add to, without overflow */
        CHECK(clEnqueueWriteBuffer(q, bufs[b], next() & 1, 0, n[b] * sizeof(int), in, 0, NULL,
                                   NULL));
        CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &bufs[b]));
        CHECK(clSetKernelArg(k, 1, sizeof(int), &by));
        int count = (int)n[b];
        CHECK(clSetKernelArg(k, 2, sizeof(int), &count));
        cl_event run;
        size_t global = MAX_INTS, local = 64;
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL, &run));
        CHECK(clEnqueueReadBuffer(q, bufs[b], CL_TRUE, 0, n[b] * sizeof(int), out, 1, &run, NULL));
        cl_ulong t0, t1;
        CHECK(clGetEventProfilingInfo(run, CL_PROFILING_COMMAND_START, sizeof(t0), &t0, NULL));
        CHECK(clGetEventProfilingInfo(run, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, NULL));
        CHECK(clReleaseEvent(run));
        for (size_t i = 0; i < n[b] && !bad; i++)
            if (out[i] != in[i] + by)
                bad = fail("kernel", (int)i, out[i], in[i] + by);
        /* Keep what the buffer holds now in in[], for the checks below. */
        memcpy(in, out, n[b] * sizeof(int));
    }
    if (!bad) {
        /* The last buffer: a sub-buffer of its second half, a copy, a map. */
        int b = nbuf - 1;
        size_t half = n[b] / 2 / 32 * 32; /* aligned well past any base alignment */
        cl_buffer_region reg = {half * sizeof(int), (n[b] - half) * sizeof(int)};
        cl_mem sub = clCreateSubBuffer(bufs[b], 0, CL_BUFFER_CREATE_TYPE_REGION, &reg, &rc);
        CHECK(rc);
        CHECK(clEnqueueReadBuffer(q, sub, CL_TRUE, 0, reg.size, out, 0, NULL, NULL));
        for (size_t i = 0; i < n[b] - half && !bad; i++)
            if (out[i] != in[half + i])
                bad = fail("sub-buffer", (int)i, out[i], in[half + i]);
        cl_mem copy = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n[b] * sizeof(int), NULL, &rc);
        CHECK(rc);
        CHECK(clEnqueueCopyBuffer(q, bufs[b], copy, 0, 0, n[b] * sizeof(int), 0, NULL, NULL));
        int *map = clEnqueueMapBuffer(q, copy, CL_TRUE, CL_MAP_READ, 0, n[b] * sizeof(int), 0,
                                      NULL, NULL, &rc);
        CHECK(rc);
        for (size_t i = 0; i < n[b] && !bad; i++)
            if (map[i] != in[i])
                bad = fail("copy", (int)i, map[i], in[i]);
        CHECK(clEnqueueUnmapMemObject(q, copy, map, 0, NULL, NULL));
        CHECK(clReleaseMemObject(sub));
        CHECK(clReleaseMemObject(copy));
    }
    /* A marker that waits for a user event. */
    cl_event user = clCreateUserEvent(ctx, &rc), marker;
    CHECK(rc);
    CHECK(clEnqueueMarkerWithWaitList(q, 1, &user, &marker));
    CHECK(clSetUserEventStatus(user, CL_COMPLETE));
    CHECK(clWaitForEvents(1, &marker));
    CHECK(clReleaseEvent(marker));
    CHECK(clReleaseEvent(user));
    if (!bad && images)
        bad = image_round(ctx, q);

    CHECK(clFinish(q));
    for (int b = 0; b < nbuf; b++)
        CHECK(clReleaseMemObject(bufs[b]));
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    return bad;
}

/* Makes GATE.NAME.RANK (with TEXT in it), then waits for GATE.AWAIT. */
static void gate(const char *base, const char *name, const char *rank, const char *text,
                 const char *await)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s.%s.%s", base, name, rank);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f)) {
        perror(path);
        exit(2);
    }
    snprintf(path, sizeof(path), "%s.%s", base, await);
    for (int i = 0; access(path, F_OK) != 0; i++) {
        if (i > 3000) {
            fprintf(stderr, "soak: no %s after 300 s\n", path);
            exit(2);
        }
        usleep(100000);
    }
}

int main(int argc, char **argv)
{
    if (argc != 3 || atof(argv[1]) <= 0) {
        fprintf(stderr, "usage: soak SECONDS GATE\n");
        return 2;
    }
    double secs = atof(argv[1]);
    const char *rank = getenv("PMI_RANK");
    rank = rank ? rank : "0";
    rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)atoi(rank) * 0x100000001b3ull;
    in = malloc(MAX_INTS * sizeof(int));
    out = malloc(MAX_INTS * sizeof(int));
    if (!in || !out)
        return 2;

    cl_device_id devs[MAX_DEV];
    cl_bool images[MAX_DEV];
    cl_uint ndev = first_devices(devs, MAX_DEV);
    for (cl_uint d = 0; d < ndev; d++)
        CHECK(clGetDeviceInfo(devs[d], CL_DEVICE_IMAGE_SUPPORT, sizeof(images[d]), &images[d],
                              NULL));

    int bad = 0;
    for (cl_uint d = 0; d < ndev && !bad; d++)
        bad = cycle(devs[d], images[d]);
    gate(argv[2], "warm", rank, "", "start");

    long cycles = 0;
    double t0 = now();
    while (!bad && now() - t0 < secs) {
        bad = cycle(devs[cycles % ndev], images[cycles % ndev]);
        cycles++;
    }
    double took = now() - t0;
    char text[64];
    snprintf(text, sizeof(text), "%ld\n", cycles);
    gate(argv[2], "done", rank, text, "end");
    printf("soak rank %s: %ld cycles on %u devices in %.0f s, %s\n", rank, cycles, ndev, took,
           bad ? "FAILED" : "verified");
    free(in);
    free(out);
    return bad;
}
