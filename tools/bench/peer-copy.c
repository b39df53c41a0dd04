/*
 * peer-copy - what moving a buffer from one device to another costs, by
 * size, two ways (issue 38: the third cache level of all-pairs and DCR
 * move data device to device, and were slower through VOCL than going
 * through the application):
 *
 *   peer    clEnqueueCopyBuffer on device 1 from a buffer last written on
 *           device 0, in one context over both (through VOCL, with the
 *           devices in two proxies, the data goes proxy to proxy);
 *   client  the application's way: read it from device 0 into its memory,
 *           write it to device 1.
 *
 * Each repetition first makes device 0 the only holder of the source (a
 * one-work-item kernel writes it), then times the move up to clFinish of
 * device 1's queue.  Prints, per size, the median of --reps of each and
 * their ratio.  With --backlog K, K kernels of about a millisecond each
 * that do not touch the source follow the write on device 0's queue
 * before the move, which waits for the write's event only: natively the
 * move need not wait for them.
 *
 *   peer-copy [--sizes 4K,64K,1M,16M] [--reps 15] [--backlog K]
 *   vocl-run -n 2 -d 1 -- peer-copy ...    (the two devices in two proxies)
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                      \
    do {                                                                                 \
        cl_int rc_ = (call);                                                             \
        if (rc_ != CL_SUCCESS) {                                                         \
            fprintf(stderr, "peer-copy: %s:%d: %s -> %d\n", __FILE__, __LINE__, #call, rc_); \
            exit(2);                                                                     \
        }                                                                                \
    } while (0)

static const char *source =
    "__kernel void touch(__global uint *a) { a[0] += 1u; }\n"
    "__kernel void busy(__global uint *b, uint n)\n"
    "{ uint x = b[0]; for (uint i = 0; i < n; i++) x = x * 1664525u + 1013904223u; b[1] = x; }\n";

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    size_t unit = *end == 'K' ? 1u << 10 : *end == 'M' ? 1u << 20 : *end == 'G' ? 1u << 30 : 1;
    if (v <= 0 || (*end && unit == 1) || (unit > 1 && end[1]))
        return 0;
    return (size_t)(v * (double)unit);
}

int main(int argc, char **argv)
{
    char sizes_arg[256] = "4K,64K,1M,16M";
    int reps = 15, backlog = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--sizes") && i + 1 < argc)
            snprintf(sizes_arg, sizeof(sizes_arg), "%s", argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--backlog") && i + 1 < argc)
            backlog = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: peer-copy [--sizes 4K,64K,1M,16M] [--reps N] [--backlog K]\n"
                            "Times a device-to-device copy against a read and a write "
                            "through the application, on the first two devices.\n");
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    if (reps < 1 || reps > 1000 || backlog < 0 || backlog > 1000) {
        fprintf(stderr, "peer-copy: --reps must be 1 to 1000, --backlog 0 to 1000\n");
        return 2;
    }
    cl_platform_id platform;
    cl_device_id dev[2];
    cl_uint n = 0;
    CHECK(clGetPlatformIDs(1, &platform, NULL));
    CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 2, dev, &n));
    if (n < 2) {
        fprintf(stderr, "peer-copy: needs two devices, the first platform has %u\n", n);
        return 2;
    }
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 2, dev, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q[3]; /* device 0, device 1, and device 0 again for the client's reads */
    for (int d = 0; d < 3; d++) {
        q[d] = clCreateCommandQueueWithProperties(ctx, dev[d % 2], NULL, &err);
        CHECK(err);
    }
    cl_program prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 2, dev, NULL, NULL, NULL));
    cl_kernel touch = clCreateKernel(prog, "touch", &err);
    CHECK(err);
    cl_kernel busy = clCreateKernel(prog, "busy", &err);
    CHECK(err);
    cl_mem scratch = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 2 * sizeof(cl_uint), NULL, &err);
    CHECK(err);
    cl_uint spins = 1u << 20; /* about a millisecond of one work-item */
    CHECK(clSetKernelArg(busy, 0, sizeof(scratch), &scratch));
    CHECK(clSetKernelArg(busy, 1, sizeof(spins), &spins));
    char name[2][128];
    for (int d = 0; d < 2; d++)
        CHECK(clGetDeviceInfo(dev[d], CL_DEVICE_NAME, sizeof(name[d]), name[d], NULL));
    printf("# devices: %s -> %s; median of %d; %d kernels after the write on device 0\n",
           name[0], name[1], reps, backlog);
    printf("%10s %12s %12s %8s\n", "bytes", "peer us", "client us", "ratio");
    double *t_peer = malloc(reps * sizeof(double)), *t_client = malloc(reps * sizeof(double));
    int status = 0;
    for (char *tok = strtok(sizes_arg, ","); tok; tok = strtok(NULL, ",")) {
        size_t size = parse_size(tok);
        if (size < 4) {
            fprintf(stderr, "peer-copy: %s is not a size of 4 bytes or more\n", tok);
            return 2;
        }
        unsigned char *host = malloc(size), *check = malloc(size);
        cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, size, NULL, &err);
        CHECK(err);
        cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, size, NULL, &err);
        CHECK(err);
        for (size_t i = 0; i < size; i++)
            host[i] = (unsigned char)(i * 7);
        CHECK(clEnqueueWriteBuffer(q[0], a, CL_TRUE, 0, size, host, 0, NULL, NULL));
        CHECK(clSetKernelArg(touch, 0, sizeof(a), &a));
        for (int r = -1; r < reps; r++) { /* r = -1: a warm-up of each */
            for (int way = 0; way < 2; way++) {
                size_t one = 1;
                cl_event written;
                CHECK(clEnqueueNDRangeKernel(q[0], touch, 1, NULL, &one, NULL, 0, NULL, &written));
                if (!backlog)
                    CHECK(clFinish(q[0]));
                for (int k = 0; k < backlog; k++)
                    CHECK(clEnqueueNDRangeKernel(q[0], busy, 1, NULL, &one, NULL, 0, NULL, NULL));
                CHECK(clFlush(q[0]));
                double t0 = now_us();
                if (way == 0) {
                    CHECK(clEnqueueCopyBuffer(q[1], a, b, 0, 0, size, 1, &written, NULL));
                } else {
                    /* On a queue of its own: device 0's first queue has the backlog. */
                    CHECK(clEnqueueReadBuffer(q[2], a, CL_TRUE, 0, size, host, 1, &written, NULL));
                    CHECK(clEnqueueWriteBuffer(q[1], b, CL_FALSE, 0, size, host, 0, NULL, NULL));
                }
                CHECK(clFinish(q[1]));
                double t = now_us() - t0;
                if (r >= 0)
                    (way == 0 ? t_peer : t_client)[r] = t;
                CHECK(clFinish(q[0]));
                clReleaseEvent(written);
            }
        }
        /* Both ways must have moved the latest bytes. */
        CHECK(clEnqueueReadBuffer(q[1], b, CL_TRUE, 0, size, check, 0, NULL, NULL));
        CHECK(clEnqueueReadBuffer(q[0], a, CL_TRUE, 0, size, host, 0, NULL, NULL));
        if (memcmp(host, check, size)) {
            fprintf(stderr, "peer-copy: %zu bytes: device 1 does not hold device 0's data\n", size);
            status = 1;
        }
        double p = median(t_peer, reps), c = median(t_client, reps);
        printf("%10zu %12.1f %12.1f %8.2f\n", size, p, c, p / c);
        fflush(stdout);
        clReleaseMemObject(a);
        clReleaseMemObject(b);
        free(host);
        free(check);
    }
    free(t_peer);
    free(t_client);
    clReleaseKernel(touch);
    clReleaseKernel(busy);
    clReleaseMemObject(scratch);
    clReleaseProgram(prog);
    for (int d = 0; d < 3; d++)
        clReleaseCommandQueue(q[d]);
    clReleaseContext(ctx);
    return status;
}
