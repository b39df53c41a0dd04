/*
 * plain-abcd: dag-abcd written directly on OpenCL for one device, the
 * baseline of the report's overhead and host-code-length comparisons.
 */
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: plain-abcd [-n N] [--seed S] [-r REPEATS]\n"
                 "dag-abcd on the first OpenCL device, without the runtime.\n");
}

/* z = x y on the device. */
static void product(const struct plain_device *dev, cl_kernel k, size_t n, cl_mem x, cl_mem y,
                    cl_mem z)
{
    int size = (int)n;
    CL_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &x));
    CL_CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &y));
    CL_CHECK(clSetKernelArg(k, 2, sizeof(cl_mem), &z));
    CL_CHECK(clSetKernelArg(k, 3, sizeof(int), &size));
    size_t global[2] = {n, n};
    CL_CHECK(clEnqueueNDRangeKernel(dev->queue, k, 2, NULL, global, NULL, 0, NULL, NULL));
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 192, .steps = 1, .seed = 1, .repeats = 1};
    dagapp_parse("plain-abcd", argc, argv, &o, 4096, usage);
    size_t n = o.size, bytes = n * n * sizeof(float);
    float *m[4], *ab = app_calloc(n * n, 4), *cd = app_calloc(n * n, 4), *x = app_calloc(n * n, 4);
    for (int i = 0; i < 4; i++) {
        m[i] = app_malloc(bytes);
        matrix_input(o.seed + (uint64_t)i, n, m[i]);
    }

    struct plain_device dev;
    plain_open(&dev);
    cl_kernel k = plain_kernel(&dev, matmul_source, "matmul");
    double start = app_seconds();
    for (uint64_t r = 0; r < o.repeats; r++) {
        cl_mem b[7];
        for (int i = 0; i < 7; i++) {
            cl_int e;
            b[i] = clCreateBuffer(dev.context, CL_MEM_READ_WRITE, bytes, NULL, &e);
            CL_CHECK_ERR("clCreateBuffer", e);
        }
        for (int i = 0; i < 4; i++)
            CL_CHECK(clEnqueueWriteBuffer(dev.queue, b[i], CL_FALSE, 0, bytes, m[i], 0, NULL,
                                          NULL));
        product(&dev, k, n, b[0], b[1], b[4]);
        product(&dev, k, n, b[2], b[3], b[5]);
        product(&dev, k, n, b[4], b[5], b[6]);
        /* The host gets AB and CD too, as dag-abcd's does. */
        CL_CHECK(clEnqueueReadBuffer(dev.queue, b[4], CL_FALSE, 0, bytes, ab, 0, NULL, NULL));
        CL_CHECK(clEnqueueReadBuffer(dev.queue, b[5], CL_FALSE, 0, bytes, cd, 0, NULL, NULL));
        CL_CHECK(clEnqueueReadBuffer(dev.queue, b[6], CL_TRUE, 0, bytes, x, 0, NULL, NULL));
        for (int i = 0; i < 7; i++)
            CL_CHECK(clReleaseMemObject(b[i]));
    }
    double seconds = app_seconds() - start;
    CL_CHECK(clReleaseKernel(k));
    plain_close(&dev);

    double *t = app_malloc(n * n * sizeof(double));
    float *abf = app_malloc(bytes), *cdf = app_malloc(bytes);
    matmul_cpu(n, m[0], m[1], t);
    for (size_t i = 0; i < n * n; i++)
        abf[i] = (float)t[i];
    matmul_cpu(n, m[2], m[3], t);
    for (size_t i = 0; i < n * n; i++)
        cdf[i] = (float)t[i];
    bool ok = matrix_check(n, t, cd);
    matmul_cpu(n, abf, cdf, t);
    ok = matrix_check(n, t, x) && ok;
    dagapp_plain_result("plain-abcd", n, seconds, dagapp_checksum(x, bytes), ok);
    for (int i = 0; i < 4; i++)
        free(m[i]);
    free(ab), free(cd), free(x), free(t), free(abf), free(cdf);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
