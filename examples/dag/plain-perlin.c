/*
 * plain-perlin: dag-perlin written directly on OpenCL for one device, the
 * baseline of the report's overhead and host-code-length comparisons.
 */
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: plain-perlin [-n N] [--seed S] [-r REPEATS]\n"
                 "dag-perlin on the first OpenCL device, without the runtime.\n");
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 1024, .steps = 1, .seed = 1, .repeats = 1};
    dagapp_parse("plain-perlin", argc, argv, &o, 1 << 14, usage);
    size_t n = o.size, bytes = n * n * sizeof(float);
    float *image = app_calloc(n * n, sizeof(float));

    struct plain_device dev;
    plain_open(&dev);
    cl_kernel k = plain_kernel(&dev, perlin_source, "perlin");
    double start = app_seconds();
    for (uint64_t r = 0; r < o.repeats; r++) {
        cl_int e;
        cl_mem b = clCreateBuffer(dev.context, CL_MEM_WRITE_ONLY, bytes, NULL, &e);
        CL_CHECK_ERR("clCreateBuffer", e);
        int size = (int)n, first = 0;
        cl_uint seed = (cl_uint)o.seed;
        CL_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &b));
        CL_CHECK(clSetKernelArg(k, 1, sizeof(int), &size));
        CL_CHECK(clSetKernelArg(k, 2, sizeof(int), &first));
        CL_CHECK(clSetKernelArg(k, 3, sizeof(cl_uint), &seed));
        size_t global[2] = {n, n};
        CL_CHECK(clEnqueueNDRangeKernel(dev.queue, k, 2, NULL, global, NULL, 0, NULL, NULL));
        CL_CHECK(clEnqueueReadBuffer(dev.queue, b, CL_TRUE, 0, bytes, image, 0, NULL, NULL));
        CL_CHECK(clReleaseMemObject(b));
    }
    double seconds = app_seconds() - start;
    CL_CHECK(clReleaseKernel(k));
    plain_close(&dev);

    bool ok = perlin_check(n, o.seed, image);
    dagapp_plain_result("plain-perlin", n, seconds, dagapp_checksum(image, bytes), ok);
    free(image);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
