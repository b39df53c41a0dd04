/*
 * plain-linreg: dag-linreg written directly on OpenCL for one device, the
 * baseline of the report's overhead and host-code-length comparisons.
 */
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: plain-linreg [-n MODELS] [-s POINTS] [--seed S] [-r REPEATS]\n"
                 "dag-linreg on the first OpenCL device, without the runtime.\n");
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 8192, .steps = 2048, .seed = 1, .repeats = 1};
    dagapp_parse("plain-linreg", argc, argv, &o, 1 << 24, usage);
    size_t m = o.size, n = o.steps;
    float *x = app_malloc(n * 4), *y = app_malloc(n * 4), *a = app_malloc(m * 4);
    float *b = app_malloc(m * 4), *err = app_calloc(m, 4);
    linreg_input(o.seed, m, n, x, y, a, b);

    struct plain_device dev;
    plain_open(&dev);
    cl_kernel k = plain_kernel(&dev, linreg_source, "linreg");
    double start = app_seconds();
    for (uint64_t r = 0; r < o.repeats; r++) {
        cl_int e;
        cl_mem bx = clCreateBuffer(dev.context, CL_MEM_READ_ONLY, n * 4, NULL, &e);
        CL_CHECK_ERR("clCreateBuffer", e);
        cl_mem by = clCreateBuffer(dev.context, CL_MEM_READ_ONLY, n * 4, NULL, &e);
        CL_CHECK_ERR("clCreateBuffer", e);
        cl_mem ba = clCreateBuffer(dev.context, CL_MEM_READ_ONLY, m * 4, NULL, &e);
        CL_CHECK_ERR("clCreateBuffer", e);
        cl_mem bb = clCreateBuffer(dev.context, CL_MEM_READ_ONLY, m * 4, NULL, &e);
        CL_CHECK_ERR("clCreateBuffer", e);
        cl_mem be = clCreateBuffer(dev.context, CL_MEM_WRITE_ONLY, m * 4, NULL, &e);
        CL_CHECK_ERR("clCreateBuffer", e);
        CL_CHECK(clEnqueueWriteBuffer(dev.queue, bx, CL_FALSE, 0, n * 4, x, 0, NULL, NULL));
        CL_CHECK(clEnqueueWriteBuffer(dev.queue, by, CL_FALSE, 0, n * 4, y, 0, NULL, NULL));
        CL_CHECK(clEnqueueWriteBuffer(dev.queue, ba, CL_FALSE, 0, m * 4, a, 0, NULL, NULL));
        CL_CHECK(clEnqueueWriteBuffer(dev.queue, bb, CL_FALSE, 0, m * 4, b, 0, NULL, NULL));
        int points = (int)n;
        CL_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &bx));
        CL_CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &by));
        CL_CHECK(clSetKernelArg(k, 2, sizeof(cl_mem), &ba));
        CL_CHECK(clSetKernelArg(k, 3, sizeof(cl_mem), &bb));
        CL_CHECK(clSetKernelArg(k, 4, sizeof(cl_mem), &be));
        CL_CHECK(clSetKernelArg(k, 5, sizeof(int), &points));
        CL_CHECK(clEnqueueNDRangeKernel(dev.queue, k, 1, NULL, &m, NULL, 0, NULL, NULL));
        CL_CHECK(clEnqueueReadBuffer(dev.queue, be, CL_TRUE, 0, m * 4, err, 0, NULL, NULL));
        cl_mem bufs[] = {bx, by, ba, bb, be};
        for (int i = 0; i < 5; i++)
            CL_CHECK(clReleaseMemObject(bufs[i]));
    }
    double seconds = app_seconds() - start;
    CL_CHECK(clReleaseKernel(k));
    plain_close(&dev);

    bool ok = linreg_check(m, n, x, y, a, b, err);
    dagapp_plain_result("plain-linreg", m, seconds, dagapp_checksum(err, m * 4), ok);
    free(x), free(y), free(a), free(b), free(err);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
