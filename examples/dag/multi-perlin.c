/*
 * multi-perlin: dag-perlin written directly on OpenCL for every device of
 * the first platform (one context, an in-order queue each), split the same
 * way, by rows.  The baseline of the report's host-code-length comparison.
 */
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: multi-perlin [-n N] [--seed S] [-r REPEATS] [-d DEVICES]\n"
                 "dag-perlin on every device of the first OpenCL platform (or its first\n"
                 "DEVICES), without the runtime.\n");
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 1024, .steps = 1, .seed = 1, .repeats = 1};
    dagapp_parse("multi-perlin", argc, argv, &o, 1 << 14, usage);
    size_t n = o.size;
    float *image = app_calloc(n * n, sizeof(float));

    struct plain_devices devs;
    plain_open_all(&devs, o.devices);
    cl_uint p = devs.count;
    app_require_units(n, p, "rows");
    cl_kernel k = plain_kernel_all(&devs, perlin_source, "perlin");
    double start = app_seconds();
    for (uint64_t r = 0; r < o.repeats; r++) {
        for (cl_uint d = 0; d < p; d++) {
            size_t first, rows;
            app_split(n, p, d, &first, &rows);
            cl_int e;
            cl_mem b = clCreateBuffer(devs.context, CL_MEM_WRITE_ONLY, rows * n * 4, NULL, &e);
            CL_CHECK_ERR("clCreateBuffer", e);
            int size = (int)n, from = (int)first;
            cl_uint seed = (cl_uint)o.seed;
            CL_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &b));
            CL_CHECK(clSetKernelArg(k, 1, sizeof(int), &size));
            CL_CHECK(clSetKernelArg(k, 2, sizeof(int), &from));
            CL_CHECK(clSetKernelArg(k, 3, sizeof(cl_uint), &seed));
            size_t global[2] = {n, rows};
            CL_CHECK(
                clEnqueueNDRangeKernel(devs.queues[d], k, 2, NULL, global, NULL, 0, NULL, NULL));
            CL_CHECK(clEnqueueReadBuffer(devs.queues[d], b, CL_FALSE, 0, rows * n * 4,
                                         image + first * n, 0, NULL, NULL));
            /* OpenCL frees a released buffer once the commands queued on it
             * are done. */
            CL_CHECK(clReleaseMemObject(b));
        }
        for (cl_uint d = 0; d < p; d++)
            CL_CHECK(clFinish(devs.queues[d]));
    }
    double seconds = app_seconds() - start;
    CL_CHECK(clReleaseKernel(k));
    plain_close_all(&devs);

    bool ok = perlin_check(n, o.seed, image);
    dagapp_multi_result("multi-perlin", n, p, seconds, dagapp_checksum(image, n * n * 4), ok);
    free(image);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
