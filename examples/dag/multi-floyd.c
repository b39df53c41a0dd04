/*
 * multi-floyd: dag-floyd written directly on OpenCL for every device of the
 * first platform (one context, an in-order queue each), split the same
 * way, by rows.  In round k every device needs row k: its owner copies it
 * on the device, and reads it to the host for the others, whose writes of
 * it wait on that read's event.  The baseline of the report's
 * host-code-length comparison.
 */
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: multi-floyd [-n VERTICES] [--seed S] [-d DEVICES]\n"
                 "dag-floyd on every device of the first OpenCL platform (or its first\n"
                 "DEVICES), without the runtime.\n");
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 256, .steps = 1, .seed = 1, .repeats = 1};
    dagapp_parse("multi-floyd", argc, argv, &o, 4096, usage);
    size_t n = o.size, row = n * sizeof(int);
    int *d0 = app_malloc(n * row), *rows = app_malloc(n * row), *result = app_calloc(n, row);
    floyd_input(o.seed, n, d0);

    struct plain_devices devs;
    plain_open_all(&devs, o.devices);
    cl_uint p = devs.count;
    app_require_units(n, p, "vertices");
    cl_kernel k = plain_kernel_all(&devs, floyd_source, "floyd");
    cl_mem *dist = app_calloc(p, sizeof(*dist)), *rowk = app_calloc(p, sizeof(*rowk));
    size_t *first = app_calloc(p, sizeof(*first)), *count = app_calloc(p, sizeof(*count));
    double start = app_seconds();
    for (cl_uint d = 0; d < p; d++) {
        app_split(n, p, d, &first[d], &count[d]);
        cl_int e;
        dist[d] = clCreateBuffer(devs.context, CL_MEM_READ_WRITE, count[d] * row, NULL, &e);
        CL_CHECK_ERR("clCreateBuffer", e);
        rowk[d] = clCreateBuffer(devs.context, CL_MEM_READ_ONLY, row, NULL, &e);
        CL_CHECK_ERR("clCreateBuffer", e);
        CL_CHECK(clEnqueueWriteBuffer(devs.queues[d], dist[d], CL_FALSE, 0, count[d] * row,
                                      d0 + first[d] * n, 0, NULL, NULL));
    }
    int size = (int)n;
    CL_CHECK(clSetKernelArg(k, 2, sizeof(int), &size));
    cl_uint owner = 0;
    for (size_t kk = 0; kk < n; kk++) {
        while (kk >= first[owner] + count[owner])
            owner++;
        size_t at = (kk - first[owner]) * row;
        cl_event got = NULL;
        if (p > 1)
            CL_CHECK(clEnqueueReadBuffer(devs.queues[owner], dist[owner], CL_FALSE, at, row,
                                         rows + kk * n, 0, NULL, &got));
        for (cl_uint d = 0; d < p; d++) {
            cl_command_queue q = devs.queues[d];
            if (d == owner)
                CL_CHECK(clEnqueueCopyBuffer(q, dist[d], rowk[d], at, 0, row, 0, NULL, NULL));
            else
                CL_CHECK(clEnqueueWriteBuffer(q, rowk[d], CL_FALSE, 0, row, rows + kk * n, 1, &got,
                                              NULL));
            int via = (int)kk;
            CL_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &dist[d]));
            CL_CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &rowk[d]));
            CL_CHECK(clSetKernelArg(k, 3, sizeof(int), &via));
            size_t global[2] = {n, count[d]};
            CL_CHECK(clEnqueueNDRangeKernel(q, k, 2, NULL, global, NULL, 0, NULL, NULL));
        }
        if (got)
            CL_CHECK(clReleaseEvent(got));
    }
    for (cl_uint d = 0; d < p; d++)
        CL_CHECK(clEnqueueReadBuffer(devs.queues[d], dist[d], CL_FALSE, 0, count[d] * row,
                                     result + first[d] * n, 0, NULL, NULL));
    for (cl_uint d = 0; d < p; d++)
        CL_CHECK(clFinish(devs.queues[d]));
    double seconds = app_seconds() - start;
    for (cl_uint d = 0; d < p; d++) {
        CL_CHECK(clReleaseMemObject(dist[d]));
        CL_CHECK(clReleaseMemObject(rowk[d]));
    }
    CL_CHECK(clReleaseKernel(k));
    plain_close_all(&devs);

    bool ok = floyd_check(n, d0, result);
    dagapp_multi_result("multi-floyd", n, p, seconds, dagapp_checksum(result, n * row), ok);
    free(dist), free(rowk), free(first), free(count), free(d0), free(rows), free(result);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
