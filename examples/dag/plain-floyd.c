/*
 * plain-floyd: dag-floyd written directly on OpenCL for one device, the
 * baseline of the report's overhead and host-code-length comparisons.  On
 * one device row k is copied within the device each round.
 */
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: plain-floyd [-n VERTICES] [--seed S]\n"
                 "dag-floyd on the first OpenCL device, without the runtime.\n");
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 256, .steps = 1, .seed = 1, .repeats = 1};
    dagapp_parse("plain-floyd", argc, argv, &o, 4096, usage);
    size_t n = o.size, row = n * sizeof(int);
    int *d0 = app_malloc(n * row), *result = app_calloc(n, row);
    floyd_input(o.seed, n, d0);

    struct plain_device dev;
    plain_open(&dev);
    cl_kernel k = plain_kernel(&dev, floyd_source, "floyd");
    double start = app_seconds();
    cl_int e;
    cl_mem dist = clCreateBuffer(dev.context, CL_MEM_READ_WRITE, n * row, NULL, &e);
    CL_CHECK_ERR("clCreateBuffer", e);
    cl_mem rowk = clCreateBuffer(dev.context, CL_MEM_READ_WRITE, row, NULL, &e);
    CL_CHECK_ERR("clCreateBuffer", e);
    CL_CHECK(clEnqueueWriteBuffer(dev.queue, dist, CL_FALSE, 0, n * row, d0, 0, NULL, NULL));
    int size = (int)n;
    CL_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &dist));
    CL_CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &rowk));
    CL_CHECK(clSetKernelArg(k, 2, sizeof(int), &size));
    for (size_t kk = 0; kk < n; kk++) {
        int via = (int)kk;
        CL_CHECK(clEnqueueCopyBuffer(dev.queue, dist, rowk, kk * row, 0, row, 0, NULL, NULL));
        CL_CHECK(clSetKernelArg(k, 3, sizeof(int), &via));
        size_t global[2] = {n, n};
        CL_CHECK(clEnqueueNDRangeKernel(dev.queue, k, 2, NULL, global, NULL, 0, NULL, NULL));
    }
    CL_CHECK(clEnqueueReadBuffer(dev.queue, dist, CL_TRUE, 0, n * row, result, 0, NULL, NULL));
    double seconds = app_seconds() - start;
    CL_CHECK(clReleaseMemObject(dist));
    CL_CHECK(clReleaseMemObject(rowk));
    CL_CHECK(clReleaseKernel(k));
    plain_close(&dev);

    bool ok = floyd_check(n, d0, result);
    dagapp_plain_result("plain-floyd", n, seconds, dagapp_checksum(result, n * row), ok);
    free(d0), free(result);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
