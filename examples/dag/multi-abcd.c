/*
 * multi-abcd: dag-abcd written directly on OpenCL for every device of the
 * first platform (one context, an in-order queue each), split the same
 * way: each device computes its rows of AB and CD and reads them to the
 * host; once every device's are there, its rows of (AB)(CD) from its rows
 * of AB and all of CD, written back from the host.  The baseline of the
 * report's host-code-length comparison.
 */
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: multi-abcd [-n N] [--seed S] [-r REPEATS] [-d DEVICES]\n"
                 "dag-abcd on every device of the first OpenCL platform (or its first\n"
                 "DEVICES), without the runtime.\n");
}

/* Rows [first, first+rows) of X Y on device d, from those rows of X and all
 * of Y written from the host; read back into the same rows of out without
 * waiting. */
static void product(const struct plain_devices *devs, cl_uint d, cl_kernel k, size_t n,
                    size_t first, size_t rows, const float *x, const float *y, float *out)
{
    cl_command_queue q = devs->queues[d];
    size_t slice = rows * n * 4;
    cl_int e;
    cl_mem bx = clCreateBuffer(devs->context, CL_MEM_READ_ONLY, slice, NULL, &e);
    CL_CHECK_ERR("clCreateBuffer", e);
    cl_mem by = clCreateBuffer(devs->context, CL_MEM_READ_ONLY, n * n * 4, NULL, &e);
    CL_CHECK_ERR("clCreateBuffer", e);
    cl_mem bz = clCreateBuffer(devs->context, CL_MEM_WRITE_ONLY, slice, NULL, &e);
    CL_CHECK_ERR("clCreateBuffer", e);
    CL_CHECK(clEnqueueWriteBuffer(q, bx, CL_FALSE, 0, slice, x + first * n, 0, NULL, NULL));
    CL_CHECK(clEnqueueWriteBuffer(q, by, CL_FALSE, 0, n * n * 4, y, 0, NULL, NULL));
    int size = (int)n;
    CL_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &bx));
    CL_CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &by));
    CL_CHECK(clSetKernelArg(k, 2, sizeof(cl_mem), &bz));
    CL_CHECK(clSetKernelArg(k, 3, sizeof(int), &size));
    size_t global[2] = {n, rows};
    CL_CHECK(clEnqueueNDRangeKernel(q, k, 2, NULL, global, NULL, 0, NULL, NULL));
    CL_CHECK(clEnqueueReadBuffer(q, bz, CL_FALSE, 0, slice, out + first * n, 0, NULL, NULL));
    /* OpenCL frees a released buffer once the commands queued on it are
     * done. */
    CL_CHECK(clReleaseMemObject(bx));
    CL_CHECK(clReleaseMemObject(by));
    CL_CHECK(clReleaseMemObject(bz));
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 192, .steps = 1, .seed = 1, .repeats = 1};
    dagapp_parse("multi-abcd", argc, argv, &o, 4096, usage);
    size_t n = o.size, bytes = n * n * sizeof(float);
    float *m[4], *ab = app_calloc(n * n, 4), *cd = app_calloc(n * n, 4), *x = app_calloc(n * n, 4);
    for (int i = 0; i < 4; i++) {
        m[i] = app_malloc(bytes);
        matrix_input(o.seed + (uint64_t)i, n, m[i]);
    }

    struct plain_devices devs;
    plain_open_all(&devs, o.devices);
    cl_uint p = devs.count;
    app_require_units(n, p, "rows");
    cl_kernel k = plain_kernel_all(&devs, matmul_source, "matmul");
    double start = app_seconds();
    for (uint64_t r = 0; r < o.repeats; r++) {
        for (cl_uint d = 0; d < p; d++) {
            size_t first, rows;
            app_split(n, p, d, &first, &rows);
            product(&devs, d, k, n, first, rows, m[0], m[1], ab);
            product(&devs, d, k, n, first, rows, m[2], m[3], cd);
        }
        /* (AB)(CD) needs every device's rows of CD on the host. */
        for (cl_uint d = 0; d < p; d++)
            CL_CHECK(clFinish(devs.queues[d]));
        for (cl_uint d = 0; d < p; d++) {
            size_t first, rows;
            app_split(n, p, d, &first, &rows);
            product(&devs, d, k, n, first, rows, ab, cd, x);
        }
        for (cl_uint d = 0; d < p; d++)
            CL_CHECK(clFinish(devs.queues[d]));
    }
    double seconds = app_seconds() - start;
    CL_CHECK(clReleaseKernel(k));
    plain_close_all(&devs);

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
    dagapp_multi_result("multi-abcd", n, p, seconds, dagapp_checksum(x, bytes), ok);
    for (int i = 0; i < 4; i++)
        free(m[i]);
    free(ab), free(cd), free(x), free(t), free(abf), free(cdf);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
