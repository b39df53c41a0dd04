/*
 * multi-nbody: dag-nbody written directly on OpenCL for every device of the
 * first platform (one context, an in-order queue each), split the same
 * way: each step every device updates its slice of the bodies from all
 * positions, which the host writes to it, and reads its slice of the new
 * positions back.  The baseline of the report's host-code-length
 * comparison.
 */
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: multi-nbody [-n BODIES] [-s STEPS] [--seed S] [-d DEVICES]\n"
                 "dag-nbody on every device of the first OpenCL platform (or its first\n"
                 "DEVICES), without the runtime.\n");
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 2048, .steps = 4, .seed = 1, .repeats = 1};
    dagapp_parse("multi-nbody", argc, argv, &o, 1 << 20, usage);
    size_t n = o.size, bytes = n * 16;
    float *pos0 = app_malloc(bytes), *vel0 = app_malloc(bytes);
    float *pos[2] = {app_malloc(bytes), app_malloc(bytes)};
    nbody_input(o.seed, n, pos0, vel0);
    memcpy(pos[0], pos0, bytes);

    struct plain_devices devs;
    plain_open_all(&devs, o.devices);
    cl_uint p = devs.count;
    app_require_units(n, p, "bodies");
    cl_kernel k = plain_kernel_all(&devs, nbody_source, "nbody");
    double start = app_seconds();
    /* Per device: all positions, its bodies' velocities and new positions. */
    cl_mem(*b)[3] = app_calloc(p, sizeof(*b));
    for (cl_uint d = 0; d < p; d++) {
        size_t first, count;
        app_split(n, p, d, &first, &count);
        for (int i = 0; i < 3; i++) {
            cl_int e;
            b[d][i] =
                clCreateBuffer(devs.context, CL_MEM_READ_WRITE, i ? count * 16 : bytes, NULL, &e);
            CL_CHECK_ERR("clCreateBuffer", e);
        }
        CL_CHECK(clEnqueueWriteBuffer(devs.queues[d], b[d][1], CL_FALSE, 0, count * 16,
                                      vel0 + 4 * first, 0, NULL, NULL));
    }
    int bodies = (int)n;
    float dt = 0.01f;
    CL_CHECK(clSetKernelArg(k, 3, sizeof(int), &bodies));
    CL_CHECK(clSetKernelArg(k, 5, sizeof(float), &dt));
    for (uint64_t s = 0; s < o.steps; s++) {
        for (cl_uint d = 0; d < p; d++) {
            cl_command_queue q = devs.queues[d];
            size_t first, count;
            app_split(n, p, d, &first, &count);
            CL_CHECK(
                clEnqueueWriteBuffer(q, b[d][0], CL_FALSE, 0, bytes, pos[s % 2], 0, NULL, NULL));
            int from = (int)first;
            CL_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &b[d][0]));
            CL_CHECK(clSetKernelArg(k, 1, sizeof(cl_mem), &b[d][1]));
            CL_CHECK(clSetKernelArg(k, 2, sizeof(cl_mem), &b[d][2]));
            CL_CHECK(clSetKernelArg(k, 4, sizeof(int), &from));
            CL_CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &count, NULL, 0, NULL, NULL));
            CL_CHECK(clEnqueueReadBuffer(q, b[d][2], CL_FALSE, 0, count * 16,
                                         pos[(s + 1) % 2] + 4 * first, 0, NULL, NULL));
        }
        /* The next step writes every device's new positions to all. */
        for (cl_uint d = 0; d < p; d++)
            CL_CHECK(clFinish(devs.queues[d]));
    }
    double seconds = app_seconds() - start;
    for (cl_uint d = 0; d < p; d++)
        for (int i = 0; i < 3; i++)
            CL_CHECK(clReleaseMemObject(b[d][i]));
    CL_CHECK(clReleaseKernel(k));
    plain_close_all(&devs);

    bool ok = nbody_check(n, o.steps, pos0, vel0, pos[o.steps % 2]);
    dagapp_multi_result("multi-nbody", n, p, seconds, dagapp_checksum(pos[o.steps % 2], bytes), ok);
    free(b), free(pos0), free(vel0), free(pos[0]), free(pos[1]);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
