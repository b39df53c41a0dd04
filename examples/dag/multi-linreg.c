/*
 * multi-linreg: dag-linreg written directly on OpenCL for every device of
 * the first platform (one context, an in-order queue each), split the same
 * way: the points to every device, the candidates and their errors in
 * slices.  The baseline of the report's host-code-length comparison.
 */
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: multi-linreg [-n MODELS] [-s POINTS] [--seed S] [-r REPEATS]\n"
                 "                    [-d DEVICES]\n"
                 "dag-linreg on every device of the first OpenCL platform (or its first\n"
                 "DEVICES), without the runtime.\n");
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 8192, .steps = 2048, .seed = 1, .repeats = 1};
    dagapp_parse("multi-linreg", argc, argv, &o, 1 << 24, usage);
    size_t m = o.size, n = o.steps;
    float *x = app_malloc(n * 4), *y = app_malloc(n * 4), *a = app_malloc(m * 4);
    float *b = app_malloc(m * 4), *err = app_calloc(m, 4);
    linreg_input(o.seed, m, n, x, y, a, b);

    struct plain_devices devs;
    plain_open_all(&devs, o.devices);
    cl_uint p = devs.count;
    app_require_units(m, p, "models");
    cl_kernel k = plain_kernel_all(&devs, linreg_source, "linreg");
    double start = app_seconds();
    for (uint64_t r = 0; r < o.repeats; r++) {
        for (cl_uint d = 0; d < p; d++) {
            cl_command_queue q = devs.queues[d];
            size_t first, count;
            app_split(m, p, d, &first, &count);
            cl_int e;
            cl_mem bx = clCreateBuffer(devs.context, CL_MEM_READ_ONLY, n * 4, NULL, &e);
            CL_CHECK_ERR("clCreateBuffer", e);
            cl_mem by = clCreateBuffer(devs.context, CL_MEM_READ_ONLY, n * 4, NULL, &e);
            CL_CHECK_ERR("clCreateBuffer", e);
            cl_mem ba = clCreateBuffer(devs.context, CL_MEM_READ_ONLY, count * 4, NULL, &e);
            CL_CHECK_ERR("clCreateBuffer", e);
            cl_mem bb = clCreateBuffer(devs.context, CL_MEM_READ_ONLY, count * 4, NULL, &e);
            CL_CHECK_ERR("clCreateBuffer", e);
            cl_mem be = clCreateBuffer(devs.context, CL_MEM_WRITE_ONLY, count * 4, NULL, &e);
            CL_CHECK_ERR("clCreateBuffer", e);
            CL_CHECK(clEnqueueWriteBuffer(q, bx, CL_FALSE, 0, n * 4, x, 0, NULL, NULL));
            CL_CHECK(clEnqueueWriteBuffer(q, by, CL_FALSE, 0, n * 4, y, 0, NULL, NULL));
            CL_CHECK(clEnqueueWriteBuffer(q, ba, CL_FALSE, 0, count * 4, a + first, 0, NULL, NULL));
            CL_CHECK(clEnqueueWriteBuffer(q, bb, CL_FALSE, 0, count * 4, b + first, 0, NULL, NULL));
            int points = (int)n;
            CL_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &bx));
            CL_CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &by));
            CL_CHECK(clSetKernelArg(k, 2, sizeof(cl_mem), &ba));
            CL_CHECK(clSetKernelArg(k, 3, sizeof(cl_mem), &bb));
            CL_CHECK(clSetKernelArg(k, 4, sizeof(cl_mem), &be));
            CL_CHECK(clSetKernelArg(k, 5, sizeof(int), &points));
            CL_CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &count, NULL, 0, NULL, NULL));
            CL_CHECK(
                clEnqueueReadBuffer(q, be, CL_FALSE, 0, count * 4, err + first, 0, NULL, NULL));
            /* OpenCL frees a released buffer once the commands queued on it
             * are done. */
            cl_mem bufs[] = {bx, by, ba, bb, be};
            for (int i = 0; i < 5; i++)
                CL_CHECK(clReleaseMemObject(bufs[i]));
        }
        for (cl_uint d = 0; d < p; d++)
            CL_CHECK(clFinish(devs.queues[d]));
    }
    double seconds = app_seconds() - start;
    CL_CHECK(clReleaseKernel(k));
    plain_close_all(&devs);

    bool ok = linreg_check(m, n, x, y, a, b, err);
    dagapp_multi_result("multi-linreg", m, p, seconds, dagapp_checksum(err, m * 4), ok);
    free(x), free(y), free(a), free(b), free(err);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
