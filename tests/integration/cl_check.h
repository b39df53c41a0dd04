/*
 * cl_check.h - for test programs: a failed OpenCL call ends the program
 * (exit 1) with the call, its code and where it was, on stderr; and the
 * setup most of them share.
 */
#ifndef VOCL_TEST_CL_CHECK_H
#define VOCL_TEST_CL_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                      \
    do {                                                                                 \
        cl_int rc_ = (call);                                                             \
        if (rc_ != CL_SUCCESS) {                                                         \
            fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, rc_);        \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

/* The devices of the first platform, at most max of them: how many. */
static inline cl_uint first_devices(cl_device_id *devs, cl_uint max)
{
    cl_platform_id p;
    cl_uint n = 0;
    CHECK(clGetPlatformIDs(1, &p, NULL));
    CHECK(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, max, devs, &n));
    return n < max ? n : max;
}

/* A context of dev alone. */
static inline cl_context context_on(cl_device_id dev)
{
    cl_int rc;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
    CHECK(rc);
    return ctx;
}

/* Kernel name of src, built for dev; the kernel holds the program. */
static inline cl_kernel build_kernel(cl_context ctx, cl_device_id dev, const char *src,
                                     const char *name)
{
    cl_int rc;
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &rc);
    CHECK(rc);
    CHECK(clBuildProgram(prog, 1, &dev, NULL, NULL, NULL));
    cl_kernel k = clCreateKernel(prog, name, &rc);
    CHECK(rc);
    CHECK(clReleaseProgram(prog));
    return k;
}

/* An "inc" kernel, which adds 1 to each int of its buffer, set on a buffer
 * of n ints, on the first device, with a queue there. */
struct inc {
    cl_device_id dev;
    cl_context ctx;
    cl_command_queue q;
    cl_mem buf;
    cl_kernel k;
    size_t n;
};

static inline void inc_open(struct inc *t, size_t n)
{
    cl_int rc;
    first_devices(&t->dev, 1);
    t->ctx = context_on(t->dev);
    t->q = clCreateCommandQueue(t->ctx, t->dev, 0, &rc);
    CHECK(rc);
    t->buf = clCreateBuffer(t->ctx, CL_MEM_READ_WRITE, n * sizeof(int), NULL, &rc);
    CHECK(rc);
    t->k = build_kernel(t->ctx, t->dev,
                        "__kernel void inc(__global int *a) { a[get_global_id(0)] += 1; }", "inc");
    CHECK(clSetKernelArg(t->k, 0, sizeof(cl_mem), &t->buf));
    t->n = n;
}

static inline void inc_close(struct inc *t)
{
    CHECK(clReleaseKernel(t->k));
    CHECK(clReleaseMemObject(t->buf));
    CHECK(clReleaseCommandQueue(t->q));
    CHECK(clReleaseContext(t->ctx));
}

/* One round: writes round-dependent values to the buffer, runs inc, reads
 * back and checks; 0, or 1 after saying what was wrong (who: the program). */
static inline int inc_round(struct inc *t, int *in, int *out, int round, const char *who)
{
    size_t n = t->n;
    for (size_t i = 0; i < n; i++)
        in[i] = round * 7 + (int)i;
    CHECK(clEnqueueWriteBuffer(t->q, t->buf, CL_FALSE, 0, n * sizeof(int), in, 0, NULL, NULL));
    CHECK(clEnqueueNDRangeKernel(t->q, t->k, 1, NULL, &n, NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(t->q, t->buf, CL_TRUE, 0, n * sizeof(int), out, 0, NULL, NULL));
    for (size_t i = 0; i < n; i++)
        if (out[i] != in[i] + 1) {
            fprintf(stderr, "%s: round %d: wrong result at %zu: %d, not %d\n", who, round, i,
                    out[i], in[i] + 1);
            return 1;
        }
    return 0;
}

#endif
