/*
 * slices.c - every device of one context writes its own slice of one
 * buffer (a kernel with a global offset), with no ordering between them;
 * a read after all of them must see every slice, as on one device.
 *
 * Through VOCL the devices may live in different proxies, each with a
 * replica of the buffer: the slices written in one must not be lost to the
 * replica of another.  Rounds (-r N, default 3) change the values and
 * which device writes which slice; each kernel loops (-l N) so that the
 * writers overlap in time.  With -s each device writes through a
 * sub-buffer of its slice (slices of 4096 words, aligned), which its
 * proxy makes of its replica.  A hang is caught by alarm(): exit 3.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CL/cl.h>

#define MAXDEV 16

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cl_int err_ = (call);                                                                      \
        if (err_ != CL_SUCCESS) {                                                                  \
            fprintf(stderr, "slices: %s failed: %d (line %d)\n", #call, err_, __LINE__);        \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

/* Work that takes a while (zero is 0, but the compiler cannot know: the
 * loop stays), then one value per item of the slice. */
static const char *src =
    "kernel void slice(global uint *x, uint v, uint loops, uint zero, uint base)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    uint h = v;\n"
    "    for (uint k = 0; k < loops; k++)\n"
    "        h = h * 1103515245u + 12345u;\n"
    "    x[i - base] = v * 100000u + (uint)i + (h & zero);\n"
    "}\n";

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "slices: HANG: the writes did not end in time\n";
    if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
        _exit(3);
    _exit(3);
}

int main(int argc, char **argv)
{
    int rounds = 3;
    cl_uint loops = 20000;
    bool sub = false;
    for (int i = 1; i < argc; i += 2) {
        if (!strcmp(argv[i], "-s")) {
            sub = true;
            i--;
        } else if (i + 1 == argc) {
            fprintf(stderr, "usage: slices [-r ROUNDS] [-l LOOPS] [-s]\n");
            return 2;
        } else if (!strcmp(argv[i], "-r"))
            rounds = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-l"))
            loops = (cl_uint)atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: slices [-r ROUNDS] [-l LOOPS] [-s]\n");
            return 2;
        }
    }
    signal(SIGALRM, on_alarm);
    alarm(60 + 10 * (unsigned)rounds);

    cl_platform_id plat;
    cl_device_id devs[MAXDEV];
    cl_uint ndev;
    CHECK(clGetPlatformIDs(1, &plat, NULL));
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, MAXDEV, devs, &ndev));
    if (ndev > MAXDEV)
        ndev = MAXDEV;
    cl_int err;
    cl_context ctx = clCreateContext(NULL, ndev, devs, NULL, NULL, &err);
    CHECK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, ndev, devs, NULL, NULL, NULL));
    cl_command_queue q[MAXDEV];
    cl_kernel k[MAXDEV];
    for (cl_uint d = 0; d < ndev; d++) {
        q[d] = clCreateCommandQueue(ctx, devs[d], 0, &err);
        CHECK(err);
        k[d] = clCreateKernel(prog, "slice", &err);
        CHECK(err);
    }
    const size_t per = sub ? 4096 : 4096 + 3, n = per * ndev;
    cl_mem subs[MAXDEV];
    cl_uint *got = malloc(n * sizeof(*got));
    if (!got)
        return 1;
    int wrong = 0;
    for (int r = 0; r < rounds; r++) {
        cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, n * sizeof(*got), NULL, &err);
        CHECK(err);
        const cl_uint zero = 0;
        CHECK(clEnqueueFillBuffer(q[0], buf, &zero, sizeof(zero), 0, n * sizeof(*got), 0, NULL,
                                  NULL));
        CHECK(clFinish(q[0]));
        /* Device d writes slice (d + r) mod ndev: no event orders them. */
        for (cl_uint d = 0; d < ndev; d++) {
            cl_uint s = (d + (cl_uint)r) % ndev, v = 1 + s + 10 * (cl_uint)r;
            size_t off = s * per, g = per;
            cl_uint base = sub ? (cl_uint)off : 0;
            cl_buffer_region region = {off * sizeof(*got), per * sizeof(*got)};
            subs[d] = sub ? clCreateSubBuffer(buf, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &err)
                          : buf;
            CHECK(err);
            CHECK(clSetKernelArg(k[d], 0, sizeof(subs[d]), &subs[d]));
            CHECK(clSetKernelArg(k[d], 4, sizeof(base), &base));
            CHECK(clSetKernelArg(k[d], 1, sizeof(v), &v));
            CHECK(clSetKernelArg(k[d], 2, sizeof(loops), &loops));
            CHECK(clSetKernelArg(k[d], 3, sizeof(zero), &zero));
            CHECK(clEnqueueNDRangeKernel(q[d], k[d], 1, &off, &g, NULL, 0, NULL, NULL));
            CHECK(clFlush(q[d]));
        }
        for (cl_uint d = 0; d < ndev; d++)
            CHECK(clFinish(q[d]));
        for (cl_uint d = 0; sub && d < ndev; d++)
            CHECK(clReleaseMemObject(subs[d]));
        CHECK(clEnqueueReadBuffer(q[0], buf, CL_TRUE, 0, n * sizeof(*got), got, 0, NULL, NULL));
        size_t bad = 0, first = 0;
        for (size_t i = 0; i < n; i++) {
            cl_uint s = (cl_uint)(i / per), want = (1 + s + 10 * (cl_uint)r) * 100000u + (cl_uint)i;
            if (got[i] != want && !bad++)
                first = i;
        }
        if (bad) {
            fprintf(stderr, "slices: round %d: %zu of %zu words wrong, first at %zu (slice %zu)\n",
                    r, bad, n, first, first / per);
            wrong++;
        }
        clReleaseMemObject(buf);
    }
    printf("%u devices, each writing its own slice%s of %zu bytes, %d rounds: %s\n", ndev,
           sub ? " (a sub-buffer)" : "", n * sizeof(*got), rounds,
           wrong ? "SLICES LOST" : "every slice read back");
    for (cl_uint d = 0; d < ndev; d++)
        clReleaseKernel(k[d]), clReleaseCommandQueue(q[d]);
    clReleaseProgram(prog);
    clReleaseContext(ctx);
    free(got);
    return wrong ? 1 : 0;
}
