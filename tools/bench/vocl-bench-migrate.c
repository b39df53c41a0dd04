/*
 * vocl-bench-migrate - what a live migration costs, against the footprint
 * moved: run under `vocl-run -n 2 -d 1 --spare 1`, it fills buffers of
 * 1 MiB up to --max-mib on device 0, then asks its own control socket (as
 * vocl-ctl does) to move proxy 0 to the spare and back, while a thread of
 * its own makes 4-byte blocking reads of another buffer.  For each size:
 * the migration's time, the pause libvocl held the application's calls,
 * the share of that pause spent copying bytes, and the longest a read of
 * the other thread waited (what the application sees).  The bytes are
 * checked after each move; exit 1 when they differ or a move fails.
 */
#include <CL/cl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl-ask.h"

static const char *source = "__kernel void fill(__global uint *a, uint seed)\n"
                            "{ size_t i = get_global_id(0); a[i] = (uint)i * 2654435761u ^ seed; }\n";

#define CHECK(call)                                                                      \
    do {                                                                                 \
        cl_int rc_ = (call);                                                             \
        if (rc_ != CL_SUCCESS) {                                                         \
            fprintf(stderr, "vocl-bench-migrate: %s -> %d\n", #call, rc_);               \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The reading thread: 4-byte blocking reads until told to stop; the
 * longest one. */
static struct {
    cl_command_queue q;
    cl_mem small;
    atomic_bool stop;
    double longest;
    long reads;
} rd;

static void *reader(void *arg)
{
    (void)arg;
    cl_uint v;
    while (!atomic_load(&rd.stop)) {
        double t0 = now();
        CHECK(clEnqueueReadBuffer(rd.q, rd.small, CL_TRUE, 0, sizeof(v), &v, 0, NULL, NULL));
        double dt = now() - t0;
        rd.longest = dt > rd.longest ? dt : rd.longest;
        rd.reads++;
    }
    return NULL;
}

/* One move; its answer's figures. */
static int move(int from, int to, double *secs, double *pause, double *copy)
{
    char req[64], ans[1024], dir[256], pid[32];
    snprintf(req, sizeof(req), "migrate %d %d", from, to);
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    if (vocl_ctl_ask(vocl_ctl_dir_of(NULL, dir, sizeof(dir)), pid, req, ans, sizeof(ans)) ||
        sscanf(ans, "ok objects=%*u bytes=%*u seconds=%lf pause=%lf copy=%lf", secs, pause,
               copy) != 3) {
        fprintf(stderr, "vocl-bench-migrate: %s: %s\n", req, ans);
        return -1;
    }
    return 0;
}

static int check(cl_command_queue q, cl_mem *bufs, int nbuf, size_t each, cl_uint *host)
{
    for (int b = 0; b < nbuf; b++) {
        CHECK(clEnqueueReadBuffer(q, bufs[b], CL_TRUE, 0, each, host, 0, NULL, NULL));
        for (size_t i = 0; i < each / 4; i++)
            if (host[i] != ((cl_uint)i * 2654435761u ^ (cl_uint)b)) {
                fprintf(stderr, "vocl-bench-migrate: buffer %d word %zu differs\n", b, i);
                return -1;
            }
    }
    return 0;
}

int main(int argc, char **argv)
{
    long max_mib = 1024;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--max-mib") && i + 1 < argc) {
            max_mib = atol(argv[++i]);
        } else {
            printf("usage: vocl-bench-migrate [--max-mib N]   (default 1024; under\n"
                   "  vocl-run -n 2 -d 1 --spare 1: proxy 1 is the spare)\n");
            return strcmp(argv[i], "--help") ? 2 : 0;
        }
    }
    if (max_mib < 1)
        max_mib = 1;
    cl_platform_id p;
    cl_device_id dev;
    CHECK(clGetPlatformIDs(1, &p, NULL));
    CHECK(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    CHECK(err);
    rd.q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    CHECK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 1, &dev, NULL, NULL, NULL));
    cl_kernel fill = clCreateKernel(prog, "fill", &err);
    CHECK(err);
    rd.small = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
    CHECK(err);
    cl_ulong max_alloc = 0;
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(max_alloc), &max_alloc, NULL));
    printf("%-10s %4s %10s %10s %8s %12s %8s\n", "footprint", "move", "seconds", "pause_ms",
           "copy_%", "stall_ms", "reads");
    int status = 0;
    for (long mib = 1; mib <= max_mib && status == 0; mib *= 4) {
        size_t total = (size_t)mib << 20;
        size_t each = total < (64u << 20) ? total : (64u << 20); /* buffers of 64 MiB at most */
        if (each > max_alloc)
            each = (size_t)max_alloc & ~(size_t)4095;
        int nbuf = (int)(total / each);
        cl_mem *bufs = calloc((size_t)nbuf, sizeof(*bufs));
        cl_uint *host = malloc(each);
        if (!bufs || !host) {
            fprintf(stderr, "vocl-bench-migrate: out of memory at %ld MiB\n", mib);
            return 1;
        }
        for (int b = 0; b < nbuf; b++) {
            bufs[b] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, each, NULL, &err);
            CHECK(err);
            cl_uint seed = (cl_uint)b;
            size_t global = each / 4;
            CHECK(clSetKernelArg(fill, 0, sizeof(bufs[b]), &bufs[b]));
            CHECK(clSetKernelArg(fill, 1, sizeof(seed), &seed));
            CHECK(clEnqueueNDRangeKernel(q, fill, 1, NULL, &global, NULL, 0, NULL, NULL));
        }
        CHECK(clFinish(q));
        for (int hop = 0; hop < 2 && status == 0; hop++) {
            pthread_t t;
            rd.longest = 0;
            rd.reads = 0;
            atomic_store(&rd.stop, false);
            pthread_create(&t, NULL, reader, NULL);
            nanosleep(&(struct timespec){0, 50000000}, NULL);
            double secs = 0, pause = 0, copy = 0;
            status = move(hop, 1 - hop, &secs, &pause, &copy);
            nanosleep(&(struct timespec){0, 50000000}, NULL);
            atomic_store(&rd.stop, true);
            pthread_join(t, NULL);
            if (status == 0)
                status = check(q, bufs, nbuf, each, host);
            if (status == 0)
                printf("%6ld MiB %4s %10.3f %10.1f %8.1f %12.1f %8ld\n", mib,
                       hop ? "back" : "out", secs, pause * 1e3,
                       pause > 0 ? 100 * copy / pause : 0, rd.longest * 1e3, rd.reads);
            fflush(stdout);
        }
        for (int b = 0; b < nbuf; b++)
            CHECK(clReleaseMemObject(bufs[b]));
        free(bufs);
        free(host);
    }
    CHECK(clReleaseMemObject(rd.small));
    CHECK(clReleaseKernel(fill));
    CHECK(clReleaseProgram(prog));
    CHECK(clReleaseCommandQueue(rd.q));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    return status ? 1 : 0;
}
