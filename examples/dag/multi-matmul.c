/*
 * multi-matmul: dag-matmul written directly on OpenCL for every device of
 * the first platform (one context, an in-order queue each), split the same
 * way: A and C by rows, B to every device.  The baseline of the report's
 * host-code-length comparison.
 */
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: multi-matmul [-n N] [--seed S] [-r REPEATS] [-d DEVICES]\n"
                 "dag-matmul on every device of the first OpenCL platform (or its first\n"
                 "DEVICES), without the runtime.\n");
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 256, .steps = 1, .seed = 1, .repeats = 1};
    dagapp_parse("multi-matmul", argc, argv, &o, 8192, usage);
    size_t n = o.size, bytes = n * n * sizeof(float);
    float *a = app_malloc(bytes), *b = app_malloc(bytes), *c = app_calloc(n * n, sizeof(float));
    matrix_input(o.seed, n, a);
    matrix_input(o.seed + 1, n, b);

    struct plain_devices devs;
    plain_open_all(&devs, o.devices);
    cl_uint p = devs.count;
    app_require_units(n, p, "rows");
    cl_kernel k = plain_kernel_all(&devs, matmul_source, "matmul");
    double start = app_seconds();
    for (uint64_t r = 0; r < o.repeats; r++) {
        for (cl_uint d = 0; d < p; d++) {
            cl_command_queue q = devs.queues[d];
            size_t first, rows;
            app_split(n, p, d, &first, &rows);
            cl_int e;
            cl_mem ba = clCreateBuffer(devs.context, CL_MEM_READ_ONLY, rows * n * 4, NULL, &e);
            CL_CHECK_ERR("clCreateBuffer", e);
            cl_mem bb = clCreateBuffer(devs.context, CL_MEM_READ_ONLY, bytes, NULL, &e);
            CL_CHECK_ERR("clCreateBuffer", e);
            cl_mem bc = clCreateBuffer(devs.context, CL_MEM_WRITE_ONLY, rows * n * 4, NULL, &e);
            CL_CHECK_ERR("clCreateBuffer", e);
            CL_CHECK(clEnqueueWriteBuffer(q, ba, CL_FALSE, 0, rows * n * 4, a + first * n, 0, NULL,
                                          NULL));
            CL_CHECK(clEnqueueWriteBuffer(q, bb, CL_FALSE, 0, bytes, b, 0, NULL, NULL));
            int size = (int)n;
            CL_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &ba));
            CL_CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &bb));
            CL_CHECK(clSetKernelArg(k, 2, sizeof(cl_mem), &bc));
            CL_CHECK(clSetKernelArg(k, 3, sizeof(int), &size));
            size_t global[2] = {n, rows};
            CL_CHECK(clEnqueueNDRangeKernel(q, k, 2, NULL, global, NULL, 0, NULL, NULL));
            CL_CHECK(clEnqueueReadBuffer(q, bc, CL_FALSE, 0, rows * n * 4, c + first * n, 0, NULL,
                                         NULL));
            /* OpenCL frees a released buffer once the commands queued on it
             * are done. */
            CL_CHECK(clReleaseMemObject(ba));
            CL_CHECK(clReleaseMemObject(bb));
            CL_CHECK(clReleaseMemObject(bc));
        }
        for (cl_uint d = 0; d < p; d++)
            CL_CHECK(clFinish(devs.queues[d]));
    }
    double seconds = app_seconds() - start;
    CL_CHECK(clReleaseKernel(k));
    plain_close_all(&devs);

    double *want = app_malloc(n * n * sizeof(double));
    matmul_cpu(n, a, b, want);
    bool ok = matrix_check(n, want, c);
    dagapp_multi_result("multi-matmul", n, p, seconds, dagapp_checksum(c, bytes), ok);
    free(a), free(b), free(c), free(want);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
