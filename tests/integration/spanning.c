/*
 * spanning.c - one context over every device of the platform, used as a
 * multi-GPU program uses it: data produced on one device and consumed on
 * another, by kernels, copies, fills, maps, sub-buffers, images, migrations,
 * user events and events of other queues.  An ordinary OpenCL program: its
 * output must be the same natively (one driver, several devices) and under
 * VOCL with the devices in several proxies (compare.sh).
 *
 * Prints one line per check, with a checksum of the data; exits 1 on any
 * failed OpenCL call or wrong value.
 */
#include <CL/cl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_check.h"

#define N 4096

static int failures;

static const char *src =
    "__kernel void add(__global int *a, int v) { a[get_global_id(0)] += v; }\n"
    "__kernel void shift(__global int *a, int d) { a[get_global_id(0)] += a[get_global_id(0) + d]; }\n"
    "__kernel void scale(__global const int *in, __global int *out, int f)\n"
    "{ out[get_global_id(0)] = in[get_global_id(0)] * f; }\n"
    "__kernel void img_sum(__read_only image2d_t img, sampler_t s, __global int *out)\n"
    "{ int x = get_global_id(0), y = get_global_id(1);\n"
    "  out[y * get_global_size(0) + x] = read_imagei(img, s, (int2)(x, y)).x + 1; }\n";

static uint32_t sum(const int *a, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint32_t)a[i]) * 16777619u;
    return h;
}

static void report(const char *what, const int *got, const int *want, size_t n)
{
    int ok = memcmp(got, want, n * sizeof(int)) == 0;
    failures += !ok;
    printf("%-44s %s %08x\n", what, ok ? "ok" : "WRONG", sum(got, n));
}

int main(void)
{
    cl_platform_id plat;
    cl_uint ndev;
    CHECK(clGetPlatformIDs(1, &plat, NULL));
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 0, NULL, &ndev));
    if (ndev < 2) {
        fprintf(stderr, "spanning: needs 2 devices, has %u\n", ndev);
        return 1;
    }
    cl_device_id *dev = malloc(ndev * sizeof(*dev));
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, ndev, dev, NULL));
    cl_int err;
    cl_context ctx = clCreateContext(NULL, ndev, dev, NULL, NULL, &err);
    CHECK(err);
    cl_uint nctx;
    CHECK(clGetContextInfo(ctx, CL_CONTEXT_NUM_DEVICES, sizeof(nctx), &nctx, NULL));
    printf("context devices: %u\n", nctx);
    /* The first and the last device: in different proxies under vocl-run. */
    cl_device_id da = dev[0], db = dev[ndev - 1];
    cl_command_queue qa = clCreateCommandQueue(ctx, da, 0, &err);
    CHECK(err);
    cl_command_queue qb = clCreateCommandQueue(ctx, db, 0, &err);
    CHECK(err);

    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 0, NULL, NULL, NULL, NULL));
    cl_kernel add = clCreateKernel(prog, "add", &err);
    CHECK(err);
    cl_kernel scale = clCreateKernel(prog, "scale", &err);
    CHECK(err);

    int *host = malloc(N * sizeof(int)), *want = malloc(N * sizeof(int)),
        *got = malloc(N * sizeof(int));
    for (int i = 0; i < N; i++)
        host[i] = i;
    size_t gsz = N;

    /* 1. Host data, a kernel on A, a kernel on B, read on A. */
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, N * sizeof(int), host,
                              &err);
    CHECK(err);
    int v = 10;
    CHECK(clSetKernelArg(add, 0, sizeof(cl_mem), &a));
    CHECK(clSetKernelArg(add, 1, sizeof(int), &v));
    CHECK(clEnqueueNDRangeKernel(qa, add, 1, NULL, &gsz, NULL, 0, NULL, NULL));
    CHECK(clFinish(qa));
    v = 100;
    CHECK(clSetKernelArg(add, 1, sizeof(int), &v));
    CHECK(clEnqueueNDRangeKernel(qb, add, 1, NULL, &gsz, NULL, 0, NULL, NULL));
    CHECK(clFinish(qb));
    CHECK(clEnqueueReadBuffer(qa, a, CL_TRUE, 0, N * sizeof(int), got, 0, NULL, NULL));
    for (int i = 0; i < N; i++)
        want[i] = i + 110;
    report("kernel A, kernel B, read A", got, want, N);

    /* 2. An event of A's queue in B's wait list, no clFinish between. */
    cl_mem out = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(int), NULL, &err);
    CHECK(err);
    cl_event ev;
    v = 1;
    CHECK(clSetKernelArg(add, 1, sizeof(int), &v));
    CHECK(clEnqueueNDRangeKernel(qa, add, 1, NULL, &gsz, NULL, 0, NULL, &ev));
    int f = 3;
    CHECK(clSetKernelArg(scale, 0, sizeof(cl_mem), &a));
    CHECK(clSetKernelArg(scale, 1, sizeof(cl_mem), &out));
    CHECK(clSetKernelArg(scale, 2, sizeof(int), &f));
    CHECK(clEnqueueNDRangeKernel(qb, scale, 1, NULL, &gsz, NULL, 1, &ev, NULL));
    CHECK(clEnqueueReadBuffer(qb, out, CL_TRUE, 0, N * sizeof(int), got, 0, NULL, NULL));
    CHECK(clReleaseEvent(ev));
    for (int i = 0; i < N; i++)
        want[i] = (i + 111) * 3;
    report("kernel A -> event -> kernel B", got, want, N);

    /* 3. A user event gates commands on both devices. */
    cl_event user = clCreateUserEvent(ctx, &err);
    CHECK(err);
    cl_event ea, eb;
    int pattern = 7;
    cl_mem c1 = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(int), NULL, &err);
    CHECK(err);
    CHECK(clEnqueueFillBuffer(qa, c1, &pattern, sizeof(pattern), 0, N * sizeof(int), 1, &user,
                              &ea));
    CHECK(clSetKernelArg(add, 0, sizeof(cl_mem), &out));
    CHECK(clEnqueueNDRangeKernel(qb, add, 1, NULL, &gsz, NULL, 1, &user, &eb));
    cl_int st_a, st_b;
    CHECK(clGetEventInfo(ea, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st_a), &st_a, NULL));
    CHECK(clGetEventInfo(eb, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st_b), &st_b, NULL));
    printf("gated by a user event: %s\n",
           st_a != CL_COMPLETE && st_b != CL_COMPLETE ? "waiting" : "RAN EARLY");
    failures += st_a == CL_COMPLETE || st_b == CL_COMPLETE;
    CHECK(clSetUserEventStatus(user, CL_COMPLETE));
    cl_event both[2] = {ea, eb};
    CHECK(clWaitForEvents(2, both));
    CHECK(clEnqueueReadBuffer(qb, c1, CL_TRUE, 0, N * sizeof(int), got, 0, NULL, NULL));
    for (int i = 0; i < N; i++)
        want[i] = 7;
    report("fill A (user event), read B", got, want, N);
    CHECK(clEnqueueReadBuffer(qa, out, CL_TRUE, 0, N * sizeof(int), got, 0, NULL, NULL));
    for (int i = 0; i < N; i++)
        want[i] = (i + 111) * 3 + 1;
    report("kernel B (user event), read A", got, want, N);
    clReleaseEvent(ea);
    clReleaseEvent(eb);
    clReleaseEvent(user);

    /* 3b. B waits for an event of A that waits for a user event set later:
     * the enqueue on B must not wait for it. */
    user = clCreateUserEvent(ctx, &err);
    CHECK(err);
    v = 1000;
    CHECK(clSetKernelArg(add, 0, sizeof(cl_mem), &c1));
    CHECK(clSetKernelArg(add, 1, sizeof(int), &v));
    CHECK(clEnqueueNDRangeKernel(qa, add, 1, NULL, &gsz, NULL, 1, &user, &ea));
    CHECK(clSetKernelArg(scale, 0, sizeof(cl_mem), &c1));
    CHECK(clSetKernelArg(scale, 1, sizeof(cl_mem), &out));
    f = 2;
    CHECK(clSetKernelArg(scale, 2, sizeof(int), &f));
    CHECK(clEnqueueNDRangeKernel(qb, scale, 1, NULL, &gsz, NULL, 1, &ea, &eb));
    CHECK(clFlush(qb));
    CHECK(clGetEventInfo(eb, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st_b), &st_b, NULL));
    printf("B behind A behind a user event: %s\n", st_b != CL_COMPLETE ? "waiting" : "RAN EARLY");
    failures += st_b == CL_COMPLETE;
    CHECK(clSetUserEventStatus(user, CL_COMPLETE));
    CHECK(clWaitForEvents(1, &eb));
    CHECK(clEnqueueReadBuffer(qa, out, CL_TRUE, 0, N * sizeof(int), got, 0, NULL, NULL));
    for (int i = 0; i < N; i++)
        want[i] = 1007 * 2;
    report("user event -> kernel A -> kernel B", got, want, N);
    clReleaseEvent(ea);
    clReleaseEvent(eb);
    clReleaseEvent(user);

    /* 4. Copy on B from a buffer last written on A; sub-buffer read on B. */
    CHECK(clEnqueueWriteBuffer(qa, c1, CL_TRUE, 0, N * sizeof(int), host, 0, NULL, NULL));
    cl_event copied;
    CHECK(clEnqueueCopyBuffer(qb, c1, out, 0, 0, N * sizeof(int), 0, NULL, &copied));
    /* (Another queue's command: the read must wait for it.) */
    CHECK(clEnqueueReadBuffer(qa, out, CL_TRUE, 0, N * sizeof(int), got, 1, &copied, NULL));
    clReleaseEvent(copied);
    report("write A, copy B, read A", got, host, N);
    cl_buffer_region region = {N / 2 * sizeof(int), N / 4 * sizeof(int)};
    cl_mem sub = clCreateSubBuffer(c1, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
    CHECK(err);
    v = 5;
    CHECK(clSetKernelArg(add, 0, sizeof(cl_mem), &sub));
    CHECK(clSetKernelArg(add, 1, sizeof(int), &v));
    size_t qsz = N / 4;
    CHECK(clEnqueueNDRangeKernel(qb, add, 1, NULL, &qsz, NULL, 0, NULL, NULL));
    CHECK(clFinish(qb));
    CHECK(clEnqueueReadBuffer(qa, c1, CL_TRUE, 0, N * sizeof(int), got, 0, NULL, NULL));
    for (int i = 0; i < N; i++)
        want[i] = i + (i >= N / 2 && i < N / 2 + N / 4 ? 5 : 0);
    report("sub-buffer kernel B, parent read A", got, want, N);

    /* 5. Migrate ahead of time, then map on B and write back, read on A. */
    cl_mem objs[1] = {c1};
    CHECK(clEnqueueMigrateMemObjects(qb, 1, objs, 0, 0, NULL, NULL));
    int *p = clEnqueueMapBuffer(qb, c1, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, N * sizeof(int), 0,
                                NULL, NULL, &err);
    CHECK(err);
    for (int i = 0; i < N; i++)
        p[i] = -p[i];
    CHECK(clEnqueueUnmapMemObject(qb, c1, p, 0, NULL, NULL));
    CHECK(clFinish(qb));
    CHECK(clEnqueueReadBuffer(qa, c1, CL_TRUE, 0, N * sizeof(int), got, 0, NULL, NULL));
    for (int i = 0; i < N; i++)
        want[i] = -want[i];
    report("migrate B, map/unmap B, read A", got, want, N);

    /* 6. An image written on A, sampled by a kernel on B. */
    cl_image_format fmt = {CL_R, CL_SIGNED_INT32};
    size_t w = 64, h = N / 64;
    cl_mem img = clCreateImage2D(ctx, CL_MEM_READ_ONLY, &fmt, w, h, 0, NULL, &err);
    CHECK(err);
    size_t origin[3] = {0, 0, 0}, reg[3] = {w, h, 1};
    CHECK(clEnqueueWriteImage(qa, img, CL_TRUE, origin, reg, 0, 0, host, 0, NULL, NULL));
    cl_sampler smp = clCreateSampler(ctx, CL_FALSE, CL_ADDRESS_CLAMP_TO_EDGE, CL_FILTER_NEAREST,
                                     &err);
    CHECK(err);
    cl_kernel isum = clCreateKernel(prog, "img_sum", &err);
    CHECK(err);
    CHECK(clSetKernelArg(isum, 0, sizeof(cl_mem), &img));
    CHECK(clSetKernelArg(isum, 1, sizeof(cl_sampler), &smp));
    CHECK(clSetKernelArg(isum, 2, sizeof(cl_mem), &out));
    size_t g2[2] = {w, h};
    CHECK(clEnqueueNDRangeKernel(qb, isum, 2, NULL, g2, NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(qb, out, CL_TRUE, 0, N * sizeof(int), got, 0, NULL, NULL));
    for (int i = 0; i < N; i++)
        want[i] = i + 1;
    report("image write A, sampled on B", got, want, N);

    /* 7. Binaries of every device, a program made from them, run on both. */
    size_t *sizes = malloc(ndev * sizeof(*sizes));
    unsigned char **bins = malloc(ndev * sizeof(*bins));
    CHECK(clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, ndev * sizeof(*sizes), sizes, NULL));
    for (cl_uint i = 0; i < ndev; i++)
        bins[i] = malloc(sizes[i]);
    CHECK(clGetProgramInfo(prog, CL_PROGRAM_BINARIES, ndev * sizeof(*bins), bins, NULL));
    cl_int *status = malloc(ndev * sizeof(*status));
    cl_program prog2 = clCreateProgramWithBinary(ctx, ndev, dev, sizes,
                                                 (const unsigned char **)bins, status, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog2, 0, NULL, NULL, NULL, NULL));
    cl_kernel add2 = clCreateKernel(prog2, "add", &err);
    CHECK(err);
    v = 2;
    CHECK(clSetKernelArg(add2, 0, sizeof(cl_mem), &out));
    CHECK(clSetKernelArg(add2, 1, sizeof(int), &v));
    CHECK(clEnqueueNDRangeKernel(qa, add2, 1, NULL, &gsz, NULL, 0, NULL, NULL));
    CHECK(clFinish(qa));
    CHECK(clEnqueueNDRangeKernel(qb, add2, 1, NULL, &gsz, NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(qb, out, CL_TRUE, 0, N * sizeof(int), got, 0, NULL, NULL));
    for (int i = 0; i < N; i++)
        want[i] = i + 5;
    report("binaries round trip, kernel A then B", got, want, N);
    printf("binary status: %d, sizes equal: %s\n", status[0],
           sizes[0] == sizes[ndev - 1] ? "yes" : "no");

    /* 8. Markers and barriers with wait lists of both queues. */
    cl_event ka, kb, mk;
    CHECK(clEnqueueNDRangeKernel(qa, add2, 1, NULL, &gsz, NULL, 0, NULL, &ka));
    CHECK(clEnqueueMarkerWithWaitList(qa, 1, &ka, &mk));
    CHECK(clEnqueueBarrierWithWaitList(qb, 1, &mk, &kb));
    CHECK(clWaitForEvents(1, &kb));
    CHECK(clEnqueueReadBuffer(qb, out, CL_TRUE, 0, N * sizeof(int), got, 0, NULL, NULL));
    for (int i = 0; i < N; i++)
        want[i] = i + 7;
    report("kernel A, marker A, barrier B, read B", got, want, N);
    clReleaseEvent(ka);
    clReleaseEvent(kb);
    clReleaseEvent(mk);

    /* 9. Reference counts as the spec has them. */
    /* A context's count includes the driver's own references: its change. */
    cl_uint refs, refs0;
    CHECK(clGetContextInfo(ctx, CL_CONTEXT_REFERENCE_COUNT, sizeof(refs0), &refs0, NULL));
    CHECK(clRetainContext(ctx));
    CHECK(clGetContextInfo(ctx, CL_CONTEXT_REFERENCE_COUNT, sizeof(refs), &refs, NULL));
    printf("context reference count, a retain adds: %d\n", (int)(refs - refs0));
    CHECK(clReleaseContext(ctx));
    CHECK(clRetainMemObject(out));
    CHECK(clGetMemObjectInfo(out, CL_MEM_REFERENCE_COUNT, sizeof(refs), &refs, NULL));
    printf("buffer reference count after a retain: %u\n", refs);
    CHECK(clReleaseMemObject(out));

    /* 11. Halves written on A and on B with no order between them (they
     * overlap, with twins), then the host waits for B's alone: a kernel on
     * A that reads B's half must see what B wrote. */
    cl_kernel shift = clCreateKernel(prog, "shift", &err);
    CHECK(err);
    cl_mem halves = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(int), NULL, &err);
    CHECK(err);
    const int zero = 0;
    CHECK(clEnqueueFillBuffer(qa, halves, &zero, sizeof(zero), 0, N * sizeof(int), 0, NULL, NULL));
    CHECK(clFinish(qa));
    size_t half = N / 2;
    CHECK(clSetKernelArg(add, 0, sizeof(cl_mem), &halves));
    v = 1;
    CHECK(clSetKernelArg(add, 1, sizeof(int), &v));
    CHECK(clEnqueueNDRangeKernel(qa, add, 1, NULL, &half, NULL, 0, NULL, NULL));
    v = 2;
    CHECK(clSetKernelArg(add, 1, sizeof(int), &v));
    CHECK(clEnqueueNDRangeKernel(qb, add, 1, &half, &half, NULL, 0, NULL, NULL));
    CHECK(clFinish(qb));
    int d = (int)half;
    CHECK(clSetKernelArg(shift, 0, sizeof(cl_mem), &halves));
    CHECK(clSetKernelArg(shift, 1, sizeof(int), &d));
    CHECK(clEnqueueNDRangeKernel(qa, shift, 1, NULL, &half, NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(qa, halves, CL_TRUE, 0, N * sizeof(int), got, 0, NULL, NULL));
    for (int i = 0; i < N; i++)
        want[i] = i < (int)half ? 3 : 2;
    report("halves A and B, wait for B, A reads B's", got, want, N);
    clReleaseMemObject(halves);
    clReleaseKernel(shift);

    /* 10. A program built for one device only, as clpeak builds, one device
     * at a time: B's build log reads empty, and a kernel made from it and
     * released (it lives where the program was built) does no harm. */
    cl_program p1 = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(p1, 1, &da, NULL, NULL, NULL));
    size_t logsz = 0;
    CHECK(clGetProgramBuildInfo(p1, db, CL_PROGRAM_BUILD_LOG, 0, NULL, &logsz));
    printf("built for A only: B's build log has %zu byte(s)\n", logsz);
    cl_kernel k1 = clCreateKernel(p1, "add", &err);
    CHECK(err);
    CHECK(clRetainKernel(k1));
    CHECK(clReleaseKernel(k1));
    CHECK(clReleaseKernel(k1));
    CHECK(clBuildProgram(p1, 1, &db, NULL, NULL, NULL));
    CHECK(clReleaseProgram(p1));

    /* 12. Builds over every device (under VOCL every proxy builds at once):
     * a program that does not compile fails on each (its log is the
     * driver's affair: PoCL 3.1 writes one for its first device, so under
     * VOCL the first of each proxy has one); a compile and a link on all
     * of them make a kernel that runs on B and on A, each on data of its
     * own (nothing moves: migrations.sh counts the moves). */
    const char *broken = "__kernel void f(__global int *a) { a[0] = ; }\n";
    cl_program bad = clCreateProgramWithSource(ctx, 1, &broken, NULL, &err);
    CHECK(err);
    err = clBuildProgram(bad, 0, NULL, NULL, NULL, NULL);
    printf("a broken program over every device: %s\n",
           err == CL_BUILD_PROGRAM_FAILURE ? "CL_BUILD_PROGRAM_FAILURE" : "another status");
    if (err != CL_BUILD_PROGRAM_FAILURE)
        failures++;
    for (cl_uint i = 0; i < ndev; i++) {
        cl_build_status bs;
        CHECK(clGetProgramBuildInfo(bad, dev[i], CL_PROGRAM_BUILD_STATUS, sizeof(bs), &bs, NULL));
        CHECK(clGetProgramBuildInfo(bad, dev[i], CL_PROGRAM_BUILD_LOG, 0, NULL, &logsz));
        printf("  device %u: %s\n", i, bs == CL_BUILD_ERROR ? "CL_BUILD_ERROR" : "not failed");
        if (bs != CL_BUILD_ERROR)
            failures++;
    }
    CHECK(clReleaseProgram(bad));
    cl_program part = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clCompileProgram(part, 0, NULL, NULL, 0, NULL, NULL, NULL, NULL));
    cl_program linked = clLinkProgram(ctx, 0, NULL, NULL, 1, &part, NULL, NULL, &err);
    CHECK(err);
    cl_kernel lk = clCreateKernel(linked, "add", &err);
    CHECK(err);
    cl_command_queue qs[2] = {qb, qa};
    for (int i = 0; i < 2; i++) {
        cl_mem own = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(int), NULL, &err);
        CHECK(err);
        CHECK(clEnqueueFillBuffer(qs[i], own, &zero, sizeof(zero), 0, N * sizeof(int), 0, NULL,
                                  NULL));
        CHECK(clSetKernelArg(lk, 0, sizeof(cl_mem), &own));
        v = 5 + i;
        CHECK(clSetKernelArg(lk, 1, sizeof(int), &v));
        size_t all = N;
        CHECK(clEnqueueNDRangeKernel(qs[i], lk, 1, NULL, &all, NULL, 0, NULL, NULL));
        CHECK(clEnqueueReadBuffer(qs[i], own, CL_TRUE, 0, N * sizeof(int), got, 0, NULL, NULL));
        for (int j = 0; j < N; j++)
            want[j] = v;
        report(i ? "compiled and linked over every device, on A" :
                   "compiled and linked over every device, on B", got, want, N);
        clReleaseMemObject(own);
    }
    clReleaseKernel(lk);
    clReleaseProgram(linked);
    clReleaseProgram(part);

    for (cl_uint i = 0; i < ndev; i++)
        free(bins[i]);
    free(bins);
    free(sizes);
    free(status);
    clReleaseKernel(add2);
    clReleaseProgram(prog2);
    clReleaseKernel(isum);
    clReleaseSampler(smp);
    clReleaseMemObject(img);
    clReleaseMemObject(sub);
    clReleaseMemObject(c1);
    clReleaseMemObject(out);
    clReleaseMemObject(a);
    clReleaseKernel(add);
    clReleaseKernel(scale);
    clReleaseProgram(prog);
    clReleaseCommandQueue(qa);
    clReleaseCommandQueue(qb);
    clReleaseContext(ctx);
    free(host);
    free(want);
    free(got);
    free(dev);
    printf("%s\n", failures ? "FAILED" : "all checks passed");
    return failures ? 1 : 0;
}
