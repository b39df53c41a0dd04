/*
 * multi-knn: dag-knn written directly on OpenCL for every device of the
 * first platform (one context, an in-order queue each), split the same way:
 * the references to every device, the queries and answers in slices.  The
 * baseline of the report's host-code-length comparison.
 */
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: multi-knn [-n QUERIES] [-s REFS] [--seed S] [-r REPEATS] [-d DEVICES]\n"
                 "dag-knn on every device of the first OpenCL platform (or its first\n"
                 "DEVICES), without the runtime.\n");
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 16384, .steps = 4096, .seed = 1, .repeats = 1};
    dagapp_parse("multi-knn", argc, argv, &o, 1 << 24, usage);
    size_t nq = o.size, nr = o.steps;
    float *q = app_malloc(nq * 8), *ref = app_malloc(nr * 8);
    int *nearest = app_calloc(nq, sizeof(int));
    knn_input(o.seed, nq, nr, q, ref);

    struct plain_devices devs;
    plain_open_all(&devs, o.devices);
    cl_uint p = devs.count;
    app_require_units(nq, p, "queries");
    cl_kernel k = plain_kernel_all(&devs, knn_source, "knn");
    double start = app_seconds();
    for (uint64_t r = 0; r < o.repeats; r++) {
        for (cl_uint d = 0; d < p; d++) {
            cl_command_queue queue = devs.queues[d];
            size_t first, count;
            app_split(nq, p, d, &first, &count);
            cl_int e;
            cl_mem bq = clCreateBuffer(devs.context, CL_MEM_READ_ONLY, count * 8, NULL, &e);
            CL_CHECK_ERR("clCreateBuffer", e);
            cl_mem br = clCreateBuffer(devs.context, CL_MEM_READ_ONLY, nr * 8, NULL, &e);
            CL_CHECK_ERR("clCreateBuffer", e);
            cl_mem bn = clCreateBuffer(devs.context, CL_MEM_WRITE_ONLY, count * 4, NULL, &e);
            CL_CHECK_ERR("clCreateBuffer", e);
            CL_CHECK(clEnqueueWriteBuffer(queue, bq, CL_FALSE, 0, count * 8, q + 2 * first, 0, NULL,
                                          NULL));
            CL_CHECK(clEnqueueWriteBuffer(queue, br, CL_FALSE, 0, nr * 8, ref, 0, NULL, NULL));
            int refs = (int)nr;
            CL_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &bq));
            CL_CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &br));
            CL_CHECK(clSetKernelArg(k, 2, sizeof(cl_mem), &bn));
            CL_CHECK(clSetKernelArg(k, 3, sizeof(int), &refs));
            CL_CHECK(clEnqueueNDRangeKernel(queue, k, 1, NULL, &count, NULL, 0, NULL, NULL));
            CL_CHECK(clEnqueueReadBuffer(queue, bn, CL_FALSE, 0, count * 4, nearest + first, 0,
                                         NULL, NULL));
            /* OpenCL frees a released buffer once the commands queued on it
             * are done. */
            CL_CHECK(clReleaseMemObject(bq));
            CL_CHECK(clReleaseMemObject(br));
            CL_CHECK(clReleaseMemObject(bn));
        }
        for (cl_uint d = 0; d < p; d++)
            CL_CHECK(clFinish(devs.queues[d]));
    }
    double seconds = app_seconds() - start;
    CL_CHECK(clReleaseKernel(k));
    plain_close_all(&devs);

    bool ok = knn_check(nq, nr, q, ref, nearest);
    dagapp_multi_result("multi-knn", nq, p, seconds, dagapp_checksum(nearest, nq * 4), ok);
    free(q), free(ref), free(nearest);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
