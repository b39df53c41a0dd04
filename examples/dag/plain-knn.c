/*
 * plain-knn: dag-knn written directly on OpenCL for one device, the
 * baseline of the report's overhead and host-code-length comparisons.
 */
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: plain-knn [-n QUERIES] [-s REFS] [--seed S] [-r REPEATS]\n"
                 "dag-knn on the first OpenCL device, without the runtime.\n");
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 16384, .steps = 4096, .seed = 1, .repeats = 1};
    dagapp_parse("plain-knn", argc, argv, &o, 1 << 24, usage);
    size_t nq = o.size, nr = o.steps;
    float *q = app_malloc(nq * 8), *ref = app_malloc(nr * 8);
    int *nearest = app_calloc(nq, sizeof(int));
    knn_input(o.seed, nq, nr, q, ref);

    struct plain_device dev;
    plain_open(&dev);
    cl_kernel k = plain_kernel(&dev, knn_source, "knn");
    double start = app_seconds();
    for (uint64_t r = 0; r < o.repeats; r++) {
        cl_int e;
        cl_mem bq = clCreateBuffer(dev.context, CL_MEM_READ_ONLY, nq * 8, NULL, &e);
        CL_CHECK_ERR("clCreateBuffer", e);
        cl_mem br = clCreateBuffer(dev.context, CL_MEM_READ_ONLY, nr * 8, NULL, &e);
        CL_CHECK_ERR("clCreateBuffer", e);
        cl_mem bn = clCreateBuffer(dev.context, CL_MEM_WRITE_ONLY, nq * 4, NULL, &e);
        CL_CHECK_ERR("clCreateBuffer", e);
        CL_CHECK(clEnqueueWriteBuffer(dev.queue, bq, CL_FALSE, 0, nq * 8, q, 0, NULL, NULL));
        CL_CHECK(clEnqueueWriteBuffer(dev.queue, br, CL_FALSE, 0, nr * 8, ref, 0, NULL, NULL));
        int refs = (int)nr;
        CL_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &bq));
        CL_CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &br));
        CL_CHECK(clSetKernelArg(k, 2, sizeof(cl_mem), &bn));
        CL_CHECK(clSetKernelArg(k, 3, sizeof(int), &refs));
        CL_CHECK(clEnqueueNDRangeKernel(dev.queue, k, 1, NULL, &nq, NULL, 0, NULL, NULL));
        CL_CHECK(clEnqueueReadBuffer(dev.queue, bn, CL_TRUE, 0, nq * 4, nearest, 0, NULL, NULL));
        CL_CHECK(clReleaseMemObject(bq));
        CL_CHECK(clReleaseMemObject(br));
        CL_CHECK(clReleaseMemObject(bn));
    }
    double seconds = app_seconds() - start;
    CL_CHECK(clReleaseKernel(k));
    plain_close(&dev);

    bool ok = knn_check(nq, nr, q, ref, nearest);
    dagapp_plain_result("plain-knn", nq, seconds, dagapp_checksum(nearest, nq * 4), ok);
    free(q), free(ref), free(nearest);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
