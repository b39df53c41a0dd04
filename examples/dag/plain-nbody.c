/*
 * plain-nbody: dag-nbody written directly on OpenCL for one device, the
 * baseline of the report's overhead and host-code-length comparisons.  On
 * one device the positions stay on it: two buffers swap roles each step.
 */
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: plain-nbody [-n BODIES] [-s STEPS] [--seed S]\n"
                 "dag-nbody on the first OpenCL device, without the runtime.\n");
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 2048, .steps = 4, .seed = 1, .repeats = 1};
    dagapp_parse("plain-nbody", argc, argv, &o, 1 << 20, usage);
    size_t n = o.size, bytes = n * 16;
    float *pos0 = app_malloc(bytes), *vel0 = app_malloc(bytes), *pos = app_malloc(bytes);
    nbody_input(o.seed, n, pos0, vel0);

    struct plain_device dev;
    plain_open(&dev);
    cl_kernel k = plain_kernel(&dev, nbody_source, "nbody");
    double start = app_seconds();
    cl_mem b[3];
    for (int i = 0; i < 3; i++) {
        cl_int e;
        b[i] = clCreateBuffer(dev.context, CL_MEM_READ_WRITE, bytes, NULL, &e);
        CL_CHECK_ERR("clCreateBuffer", e);
    }
    CL_CHECK(clEnqueueWriteBuffer(dev.queue, b[0], CL_FALSE, 0, bytes, pos0, 0, NULL, NULL));
    CL_CHECK(clEnqueueWriteBuffer(dev.queue, b[2], CL_FALSE, 0, bytes, vel0, 0, NULL, NULL));
    int bodies = (int)n, first = 0;
    float dt = 0.01f;
    for (uint64_t s = 0; s < o.steps; s++) {
        CL_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &b[s % 2]));
        CL_CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &b[2]));
        CL_CHECK(clSetKernelArg(k, 2, sizeof(cl_mem), &b[(s + 1) % 2]));
        CL_CHECK(clSetKernelArg(k, 3, sizeof(int), &bodies));
        CL_CHECK(clSetKernelArg(k, 4, sizeof(int), &first));
        CL_CHECK(clSetKernelArg(k, 5, sizeof(float), &dt));
        CL_CHECK(clEnqueueNDRangeKernel(dev.queue, k, 1, NULL, &n, NULL, 0, NULL, NULL));
    }
    CL_CHECK(clEnqueueReadBuffer(dev.queue, b[o.steps % 2], CL_TRUE, 0, bytes, pos, 0, NULL,
                                 NULL));
    double seconds = app_seconds() - start;
    for (int i = 0; i < 3; i++)
        CL_CHECK(clReleaseMemObject(b[i]));
    CL_CHECK(clReleaseKernel(k));
    plain_close(&dev);

    bool ok = nbody_check(n, o.steps, pos0, vel0, pos);
    dagapp_plain_result("plain-nbody", n, seconds, dagapp_checksum(pos, bytes), ok);
    free(pos0), free(vel0), free(pos);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
