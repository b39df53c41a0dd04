/*
 * ctscases.c - what OpenCL-CTS found different through VOCL (issue 61), one
 * case per argument, each printing what it checked; the output is the same
 * natively and through VOCL (compare.sh).  A hang is caught by alarm(): exit 3.
 *
 *  gated     non-blocking reads gated by a user event, then non-blocking
 *            writes: of other memory to other buffers (CTS events
 *            callbacks_simultaneous, userevents_multithreaded), and of the
 *            very memory the read fills, after the read's event or in the
 *            order of one queue; the same thread sets the gate only after
 *            them, so a write that waits for the read hangs; rect and
 *            image writes of other memory and of the read's, likewise.
 *            Every buffer must then hold what it should, and the write's
 *            event names its command.
 *  profiling non-blocking reads on a profiling queue, each waited for by
 *            clWaitForEvents, then every profiling time asked at once (CTS
 *            profiling read_array_*): all there, in order.
 *  hostimage maps of CL_MEM_USE_HOST_PTR images (2D, its own row pitch and
 *            the default; a 2D array) return the host memory at the origin,
 *            with the image's pitches, holding the data; a write through a
 *            map reaches the image (CTS mem_host_flags *_image).
 *  partition what CTS device_partition partition_all does: sub-devices
 *            EQUALLY, then BY_COUNTS, each set (and the set with its
 *            parent) one context, a queue each, kernels each followed by
 *            clFinish, reads, everything released, the first sub-device
 *            partitioned again; rounds of it (the proxy died in the
 *            BY_COUNTS part, 3 runs in 4).
 *  defqueue  clSetDefaultDeviceCommandQueue(ctx, dev, NULL): the driver's
 *            error (CTS api consistency_device_enqueue), not the client's.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CL/cl.h>

#include "cl_check.h"

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "ctscases: HANG: a call did not return in time\n";
    if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
        _exit(3);
    _exit(3);
}

static cl_mem buffer_of(cl_context ctx, size_t n, const void *data)
{
    cl_int rc;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | (data ? CL_MEM_COPY_HOST_PTR : 0), n,
                              (void *)data, &rc);
    CHECK(rc);
    return m;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 7 + seed * 13 + (i >> 12));
}

/* how: 0 other memory, wait list the gate; 1 the same memory, after the
 * read's event (another queue); 2 the same memory, in order; 3 and 4 other
 * memory, after the gate, by a rect write and by an image write (read back
 * into got from an image of n bytes in rows of up to 1 KiB); 5 and 6 the
 * same memory, in order, by a rect write (rows of half the pitch) and by
 * an image write. */
static bool gated_round(cl_context ctx, cl_device_id dev, size_t n, int how)
{
    cl_int rc;
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &rc);
    CHECK(rc);
    cl_command_queue q2 = clCreateCommandQueue(ctx, dev, 0, &rc);
    CHECK(rc);
    uint8_t *src = malloc(n), *other = malloc(n), *via = calloc(1, n), *got = malloc(n);
    fill(src, n, 1 + (unsigned)how);
    fill(other, n, 5 + (unsigned)how);
    cl_mem a = buffer_of(ctx, n, src), b = buffer_of(ctx, n, NULL);
    cl_event gate = clCreateUserEvent(ctx, &rc), r, w;
    CHECK(rc);
    CHECK(clEnqueueReadBuffer(q, a, CL_FALSE, 0, n, via, 1, &gate, &r));
    if (how == 0)
        CHECK(clEnqueueWriteBuffer(q, b, CL_FALSE, 0, n, other, 1, &gate, &w));
    else if (how == 1)
        CHECK(clEnqueueWriteBuffer(q2, b, CL_FALSE, 0, n, via, 1, &r, &w));
    size_t row = n < 1024 ? n : 1024, zero[3] = {0, 0, 0}, rect[3] = {n, 1, 1},
           pixels[3] = {row / 4, n / row, 1};
    cl_image_format f = {CL_RGBA, CL_UNSIGNED_INT8};
    cl_mem img = how == 4 || how == 6
                     ? clCreateImage2D(ctx, CL_MEM_READ_WRITE, &f, row / 4, n / row, 0, NULL, &rc)
                     : NULL;
    if (img)
        CHECK(rc);
    /* (5: rows of half the pitch, as many: the read's memory, every other half-row.) */
    size_t half[3] = {row / 2, n / row, 1};
    if (how == 0)
        CHECK(clEnqueueWriteBuffer(q, b, CL_FALSE, 0, n, other, 1, &gate, &w));
    else if (how == 1)
        CHECK(clEnqueueWriteBuffer(q2, b, CL_FALSE, 0, n, via, 1, &r, &w));
    else if (how == 2)
        CHECK(clEnqueueWriteBuffer(q, b, CL_FALSE, 0, n, via, 0, NULL, &w));
    else if (how == 3)
        CHECK(clEnqueueWriteBufferRect(q, b, CL_FALSE, zero, zero, rect, 0, 0, 0, 0, other, 1,
                                       &gate, &w));
    else if (how == 4)
        CHECK(clEnqueueWriteImage(q, img, CL_FALSE, zero, pixels, 0, 0, other, 1, &gate, &w));
    else if (how == 5)
        CHECK(clEnqueueWriteBufferRect(q, b, CL_FALSE, zero, zero, half, row, 0, row, 0, via, 0,
                                       NULL, &w));
    else
        CHECK(clEnqueueWriteImage(q, img, CL_FALSE, zero, pixels, 0, 0, via, 0, NULL, &w));
    CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
    CHECK(clFinish(q));
    CHECK(clFinish(q2));
    cl_command_type type = 0;
    CHECK(clGetEventInfo(w, CL_EVENT_COMMAND_TYPE, sizeof(type), &type, NULL));
    if (img)
        CHECK(clEnqueueReadImage(q, img, CL_TRUE, zero, pixels, 0, 0, got, 0, NULL, NULL));
    else
        CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, n, got, 0, NULL, NULL));
    cl_command_type want = how == 3 || how == 5   ? CL_COMMAND_WRITE_BUFFER_RECT
                           : how == 4 || how == 6 ? CL_COMMAND_WRITE_IMAGE
                                                  : CL_COMMAND_WRITE_BUFFER;
    bool ok = !memcmp(via, src, n) && type == want;
    if (how == 5) /* (the rect's rows: the first half of each of the read's) */
        for (size_t y = 0; ok && y < n / row; y++)
            ok = !memcmp(got + y * row, src + y * row, row / 2);
    else
        ok = ok && !memcmp(got, how == 1 || how == 2 || how == 6 ? src : other, n);
    if (img)
        clReleaseMemObject(img);
    clReleaseEvent(r), clReleaseEvent(w), clReleaseEvent(gate);
    clReleaseMemObject(a), clReleaseMemObject(b);
    clReleaseCommandQueue(q), clReleaseCommandQueue(q2);
    free(src), free(other), free(via), free(got);
    return ok;
}

static int gated(cl_context ctx, cl_device_id dev)
{
    static const char *hows[] = {"other memory after the gate", "the read's memory after its event",
                                 "the read's memory in order", "rect, other memory after the gate",
                                 "image, other memory after the gate",
                                 "rect, the read's memory in order",
                                 "image, the read's memory in order"};
    static const size_t sizes[] = {64, 3 << 20};
    int bad = 0;
    for (int how = 0; how < 7; how++)
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            bool ok = gated_round(ctx, dev, sizes[s], how);
            printf("gated write, %s, %zu bytes: %s\n", hows[how], sizes[s], ok ? "ok" : "WRONG");
            bad += !ok;
        }
    return bad;
}

static int profiling(cl_context ctx, cl_device_id dev)
{
    cl_int rc;
    cl_command_queue q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &rc);
    CHECK(rc);
    enum { ROUNDS = 200, N = 4096 };
    uint8_t *src = malloc(N), *dst = malloc(N);
    fill(src, N, 3);
    cl_mem a = buffer_of(ctx, N, src);
    int bad = 0;
    static const cl_profiling_info names[] = {CL_PROFILING_COMMAND_QUEUED,
                                              CL_PROFILING_COMMAND_SUBMIT,
                                              CL_PROFILING_COMMAND_START, CL_PROFILING_COMMAND_END};
    for (int i = 0; i < ROUNDS; i++) {
        cl_event e;
        size_t n = 4 + (size_t)i * 13 % (N - 4);
        CHECK(clEnqueueReadBuffer(q, a, CL_FALSE, 0, n, dst, 0, NULL, &e));
        CHECK(clWaitForEvents(1, &e));
        cl_ulong t[4] = {0};
        bool ok = !memcmp(src, dst, n);
        for (int k = 0; k < 4; k++) {
            rc = clGetEventProfilingInfo(e, names[k], sizeof(t[k]), &t[k], NULL);
            if (rc != CL_SUCCESS && bad < 3)
                fprintf(stderr, "round %d: profiling info %d: %d\n", i, k, rc);
            ok = ok && rc == CL_SUCCESS && (k == 0 || t[k - 1] <= t[k]);
        }
        bad += !ok;
        clReleaseEvent(e);
    }
    printf("profiling of %d non-blocking reads after clWaitForEvents: %s\n", ROUNDS,
           bad ? "MISSING" : "ok");
    clReleaseMemObject(a);
    clReleaseCommandQueue(q);
    free(src), free(dst);
    return bad;
}

/* pitch 0: the default; array: a 2D array of 3 images. */
static bool hostimage_round(cl_context ctx, cl_device_id dev, size_t pitch, bool array)
{
    cl_int rc;
    enum { W = 37, H = 11, A = 3 };
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &rc);
    CHECK(rc);
    size_t rp = pitch ? pitch : W * 4, sp = rp * H, total = array ? sp * A : rp * H;
    uint8_t *host = malloc(total), *want = malloc(total);
    fill(host, total, 9);
    memcpy(want, host, total);
    cl_image_format f = {CL_RGBA, CL_UNSIGNED_INT8};
    cl_image_desc d = {.image_type = array ? CL_MEM_OBJECT_IMAGE2D_ARRAY : CL_MEM_OBJECT_IMAGE2D,
                       .image_width = W, .image_height = H, .image_array_size = array ? A : 0,
                       .image_row_pitch = pitch, .image_slice_pitch = array && pitch ? sp : 0};
    cl_mem img = clCreateImage(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, &f, &d, host, &rc);
    CHECK(rc);
    size_t origin[3] = {3, 5, array ? 1 : 0}, region[3] = {8, 4, array ? 2 : 1};
    size_t grp = 0, gsp = 0;
    uint8_t *p = clEnqueueMapImage(q, img, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, origin, region,
                                   &grp, &gsp, 0, NULL, NULL, &rc);
    CHECK(rc);
    size_t at = origin[0] * 4 + origin[1] * rp + origin[2] * sp;
    bool ok = p == host + at && grp == rp && (!array || gsp == sp);
    /* The data, and a write through the map to the image. */
    for (size_t z = 0; ok && z < region[2]; z++)
        for (size_t y = 0; y < region[1]; y++) {
            uint8_t *row = p + z * gsp + y * grp;
            size_t w = at + z * sp + y * rp;
            ok = ok && !memcmp(row, want + w, region[0] * 4);
            memset(row, (int)(0x40 + y + z), region[0] * 4);
            memset(want + w, (int)(0x40 + y + z), region[0] * 4);
        }
    CHECK(clEnqueueUnmapMemObject(q, img, p, 0, NULL, NULL));
    uint8_t *got = calloc(1, total);
    size_t all[3] = {W, H, array ? A : 1}, zero[3] = {0, 0, 0};
    CHECK(clEnqueueReadImage(q, img, CL_TRUE, zero, all, rp, array ? sp : 0, got, 0, NULL, NULL));
    for (size_t z = 0; z < all[2]; z++)
        for (size_t y = 0; y < H; y++)
            ok = ok && !memcmp(got + z * sp + y * rp, want + z * sp + y * rp, W * 4);
    clReleaseMemObject(img);
    clReleaseCommandQueue(q);
    free(host), free(want), free(got);
    return ok;
}

static int hostimage(cl_context ctx, cl_device_id dev)
{
    int bad = 0;
    struct {
        size_t pitch;
        bool array;
        const char *what;
    } cases[] = {{0, false, "2D, default pitch"},
                 {37 * 4 + 60, false, "2D, row pitch of its own"},
                 {0, true, "2D array, default pitches"},
                 {37 * 4 + 12, true, "2D array, pitches of its own"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        bool ok = hostimage_round(ctx, dev, cases[i].pitch, cases[i].array);
        printf("map of a CL_MEM_USE_HOST_PTR image, %s: %s\n", cases[i].what,
               ok ? "host_ptr at the origin" : "WRONG");
        bad += !ok;
    }
    return bad;
}

static const char *partition_src =
    "kernel void kernelA(global int *dst) { dst[get_global_id(0)] *= 3; }\n"
    "kernel void kernelB(global int *dst) { dst[get_global_id(0)]++; }\n";

/* CTS device_partition's test_device_set: whether the data came out right. */
static bool device_set(cl_uint ndev, cl_uint nq, const cl_device_id *devs, const cl_device_id *parent)
{
    enum { SIZE = 512, ROUNDS = 4 };
    cl_int rc;
    cl_context ctx = clCreateContext(NULL, ndev, devs, NULL, NULL, &rc);
    CHECK(rc);
    cl_program p = clCreateProgramWithSource(ctx, 1, &partition_src, NULL, &rc);
    CHECK(rc);
    CHECK(clBuildProgram(p, parent ? 1 : 0, parent, NULL, NULL, NULL));
    cl_kernel k[2] = {clCreateKernel(p, "kernelA", &rc), NULL};
    CHECK(rc);
    k[1] = clCreateKernel(p, "kernelB", &rc);
    CHECK(rc);
    int data[SIZE], want[SIZE], got[SIZE];
    for (int i = 0; i < SIZE; i++)
        data[i] = want[i] = i * 7 - 100;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_COPY_HOST_PTR, sizeof(data), data, &rc);
    CHECK(rc);
    CHECK(clSetKernelArg(k[0], 0, sizeof(m), &m));
    CHECK(clSetKernelArg(k[1], 0, sizeof(m), &m));
    cl_command_queue q[8];
    for (cl_uint i = 0; i < nq; i++) {
        q[i] = clCreateCommandQueueWithProperties(ctx, devs[i % ndev], NULL, &rc);
        CHECK(rc);
    }
    size_t g = SIZE;
    for (int z = 0; z < ROUNDS; z++)
        for (cl_uint i = 0; i < nq; i++) {
            int which = (z + (int)i) % 2;
            CHECK(clEnqueueNDRangeKernel(q[i], k[which], 1, NULL, &g, NULL, 0, NULL, NULL));
            for (int j = 0; j < SIZE; j++)
                want[j] = which ? want[j] + 1 : want[j] * 3;
            CHECK(clFinish(q[i]));
        }
    bool ok = true;
    for (cl_uint i = 0; i < nq; i++) {
        CHECK(clEnqueueReadBuffer(q[i], m, CL_TRUE, 0, sizeof(got), got, 0, NULL, NULL));
        ok = ok && !memcmp(got, want, sizeof(got));
    }
    for (cl_uint i = 0; i < nq; i++)
        clReleaseCommandQueue(q[i]);
    clReleaseMemObject(m);
    clReleaseKernel(k[1]), clReleaseKernel(k[0]);
    clReleaseProgram(p);
    clReleaseContext(ctx);
    return ok;
}

static int partition_of(cl_device_id dev, int depth)
{
    cl_uint cus = 0;
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(cus), &cus, NULL));
    if (cus <= 1 || depth > 1)
        return 0;
    cl_device_partition_property props[2][5] = {
        {CL_DEVICE_PARTITION_EQUALLY, cus / 2, 0, 0, 0},
        {CL_DEVICE_PARTITION_BY_COUNTS, 1, cus - 1, CL_DEVICE_PARTITION_BY_COUNTS_LIST_END, 0}};
    int bad = 0;
    for (int t = 0; t < 2; t++) {
        cl_uint n = 0;
        cl_int rc = clCreateSubDevices(dev, props[t], 0, NULL, &n);
        if (rc == CL_DEVICE_PARTITION_FAILED)
            continue;
        CHECK(rc);
        cl_device_id subs[9];
        if (n > 8)
            n = 8;
        CHECK(clCreateSubDevices(dev, props[t], n, subs, &n));
        bad += !device_set(n, n, subs, NULL);
        subs[n] = dev;
        bad += !device_set(n + 1, n, subs, &dev);
        bad += partition_of(subs[0], depth + 1);
        /* PoCL's own threads let go of a command's event just after it
         * completed, and natively too a sub-device released before then
         * is read after it is freed (with MALLOC_PERTURB_, a crash 1 run
         * in 3): the application waits a little, as the CTS's does by its
         * checks.  The proxy held the event 100 ms more (watch.c). */
        usleep(20000);
        for (cl_uint j = 0; j < n; j++)
            CHECK(clReleaseDevice(subs[j]));
    }
    return bad;
}

static int partition(cl_device_id dev)
{
    int bad = 0;
    for (int r = 0; r < 10; r++)
        bad += partition_of(dev, 0);
    printf("partitions EQUALLY then BY_COUNTS, 10 rounds: %s\n", bad ? "WRONG" : "ok");
    return bad;
}

static int defqueue(cl_context ctx, cl_device_id dev)
{
    cl_int rc = clSetDefaultDeviceCommandQueue(ctx, dev, NULL);
    printf("clSetDefaultDeviceCommandQueue(ctx, dev, NULL): %d\n", rc);
    return rc == CL_SUCCESS;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ctscases gated|profiling|hostimage|partition|defqueue\n");
        return 2;
    }
    signal(SIGALRM, on_alarm);
    alarm(60);
    cl_device_id dev;
    first_devices(&dev, 1);
    cl_context ctx = context_on(dev);
    int bad;
    if (!strcmp(argv[1], "gated")) {
        bad = gated(ctx, dev);
    } else if (!strcmp(argv[1], "profiling")) {
        bad = profiling(ctx, dev);
    } else if (!strcmp(argv[1], "hostimage")) {
        bad = hostimage(ctx, dev);
    } else if (!strcmp(argv[1], "partition")) {
        bad = partition(dev);
    } else if (!strcmp(argv[1], "defqueue")) {
        bad = defqueue(ctx, dev);
    } else {
        fprintf(stderr, "ctscases: no case %s\n", argv[1]);
        return 2;
    }
    clReleaseContext(ctx);
    return bad ? 1 : 0;
}
