/*
 * plain-matmul: dag-matmul written directly on OpenCL for one device, the
 * baseline of the report's overhead and host-code-length comparisons.
 */
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: plain-matmul [-n N] [--seed S] [-r REPEATS]\n"
                 "dag-matmul on the first OpenCL device, without the runtime.\n");
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 256, .steps = 1, .seed = 1, .repeats = 1};
    dagapp_parse("plain-matmul", argc, argv, &o, 8192, usage);
    size_t n = o.size, bytes = n * n * sizeof(float);
    float *a = app_malloc(bytes), *b = app_malloc(bytes), *c = app_calloc(n * n, sizeof(float));
    matrix_input(o.seed, n, a);
    matrix_input(o.seed + 1, n, b);

    struct plain_device dev;
    plain_open(&dev);
    cl_kernel k = plain_kernel(&dev, matmul_source, "matmul");
    double start = app_seconds();
    for (uint64_t r = 0; r < o.repeats; r++) {
        cl_int e;
        cl_mem ba = clCreateBuffer(dev.context, CL_MEM_READ_ONLY, bytes, NULL, &e);
        CL_CHECK_ERR("clCreateBuffer", e);
        cl_mem bb = clCreateBuffer(dev.context, CL_MEM_READ_ONLY, bytes, NULL, &e);
        CL_CHECK_ERR("clCreateBuffer", e);
        cl_mem bc = clCreateBuffer(dev.context, CL_MEM_WRITE_ONLY, bytes, NULL, &e);
        CL_CHECK_ERR("clCreateBuffer", e);
        CL_CHECK(clEnqueueWriteBuffer(dev.queue, ba, CL_FALSE, 0, bytes, a, 0, NULL, NULL));
        CL_CHECK(clEnqueueWriteBuffer(dev.queue, bb, CL_FALSE, 0, bytes, b, 0, NULL, NULL));
        int size = (int)n;
        CL_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &ba));
        CL_CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &bb));
        CL_CHECK(clSetKernelArg(k, 2, sizeof(cl_mem), &bc));
        CL_CHECK(clSetKernelArg(k, 3, sizeof(int), &size));
        size_t global[2] = {n, n};
        CL_CHECK(clEnqueueNDRangeKernel(dev.queue, k, 2, NULL, global, NULL, 0, NULL, NULL));
        CL_CHECK(clEnqueueReadBuffer(dev.queue, bc, CL_TRUE, 0, bytes, c, 0, NULL, NULL));
        CL_CHECK(clReleaseMemObject(ba));
        CL_CHECK(clReleaseMemObject(bb));
        CL_CHECK(clReleaseMemObject(bc));
    }
    double seconds = app_seconds() - start;
    CL_CHECK(clReleaseKernel(k));
    plain_close(&dev);

    double *want = app_malloc(n * n * sizeof(double));
    matmul_cpu(n, a, b, want);
    bool ok = matrix_check(n, want, c);
    dagapp_plain_result("plain-matmul", n, seconds, dagapp_checksum(c, bytes), ok);
    free(a), free(b), free(c), free(want);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
