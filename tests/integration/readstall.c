/*
 * readstall.c - a large blocking read behind a long kernel delays no other
 * thread.  Thread A (device 0) fills a buffer, runs a kernel of one
 * work-item for about 1.5 s and reads the buffer back in one blocking
 * call; thread B (device 1) times 4-byte blocking reads all along.
 *
 * Through a proxy serving both devices with one staging buffer and its
 * stages one after the other (VOCL_PIPELINE=0, VOCL_DIRECT=0), the read
 * once waited for the kernel on the thread that serves every request, and
 * B's reads with it.  Exits 1 when B's worst read took a third of A's
 * wait or more, or when A's data is wrong.  The verdicts go to stdout
 * (the same natively and through VOCL), the figures to stderr.
 */
#include <CL/cl.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cl_check.h"

#define WORDS (6u << 18) /* 6 MiB of uint: several chunks of the staging buffer */

static const char *src =
    "__kernel void fill(__global uint *b, uint seed)\n"
    "{ uint i = get_global_id(0); b[i] = i * 2654435761u + seed; }\n"
    "__kernel void spin(__global uint *out, uint n)\n"
    "{ uint x = 1; for (uint i = 0; i < n; i++) x = x * 1664525u + 1013904223u; out[0] = x; }\n";

static cl_context ctx;
static cl_device_id dev[2];
static atomic_bool a_done, b_ready;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Thread B: 4-byte blocking reads on device 1 until A is done; the worst. */
static void *reader(void *arg)
{
    double *worst = arg;
    cl_int rc;
    cl_command_queue q = clCreateCommandQueue(ctx, dev[1], 0, &rc);
    CHECK(rc);
    uint32_t v = 7, got = 0;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, 4, &v, &rc);
    CHECK(rc);
    for (unsigned n = 0; !atomic_load(&a_done); n++) {
        double t0 = now_s();
        CHECK(clEnqueueReadBuffer(q, m, CL_TRUE, 0, 4, &got, 0, NULL, NULL));
        double t = now_s() - t0;
        if (got != 7) {
            fprintf(stderr, "readstall: B read %u, not 7\n", got);
            exit(1);
        }
        if (n >= 20)
            atomic_store(&b_ready, true);
        if (n >= 20 && t > *worst)
            *worst = t;
    }
    clReleaseMemObject(m);
    clReleaseCommandQueue(q);
    return NULL;
}

int main(void)
{
    cl_int rc;
    cl_uint n = first_devices(dev, 2);
    if (n < 2) {
        fprintf(stderr, "readstall: needs 2 devices, has %u\n", n);
        return 1;
    }
    ctx = clCreateContext(NULL, 2, dev, NULL, NULL, &rc);
    CHECK(rc);
    cl_command_queue q = clCreateCommandQueue(ctx, dev[0], 0, &rc);
    CHECK(rc);
    cl_kernel fill = build_kernel(ctx, dev[0], src, "fill");
    cl_kernel spin = build_kernel(ctx, dev[0], src, "spin");
    cl_mem big = clCreateBuffer(ctx, CL_MEM_READ_WRITE, WORDS * 4, NULL, &rc);
    CHECK(rc);
    cl_mem out = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4, NULL, &rc);
    CHECK(rc);
    size_t one = 1, words = WORDS;
    CHECK(clSetKernelArg(spin, 0, sizeof(out), &out));

    /* How many steps make the kernel last about 1.5 s here. */
    cl_uint steps = 1u << 22;
    double took = 0;
    while (took < 0.1 && steps < (1u << 30)) {
        steps *= 2;
        CHECK(clSetKernelArg(spin, 1, sizeof(steps), &steps));
        double t0 = now_s();
        CHECK(clEnqueueNDRangeKernel(q, spin, 1, NULL, &one, NULL, 0, NULL, NULL));
        CHECK(clFinish(q));
        took = now_s() - t0;
    }
    double want = 1.5 * steps / took;
    steps = want > 4e9 ? 4000000000u : (cl_uint)want;

    cl_uint seed = 12345;
    CHECK(clSetKernelArg(fill, 0, sizeof(big), &big));
    CHECK(clSetKernelArg(fill, 1, sizeof(seed), &seed));
    CHECK(clEnqueueNDRangeKernel(q, fill, 1, NULL, &words, NULL, 0, NULL, NULL));
    CHECK(clFinish(q));
    uint32_t *got = malloc(WORDS * 4);
    if (!got)
        return 1;
    /* A kernel shorter than 0.5 s (the timing above was disturbed) tells
     * nothing: again, twice as long, up to 3 times. */
    double worst = 0, waited = 0;
    for (int round = 0; round < 3 && waited < 0.5; round++) {
        if (round)
            steps = steps > 2000000000u ? 4000000000u : 2 * steps;
        CHECK(clSetKernelArg(spin, 1, sizeof(steps), &steps));
        worst = 0;
        atomic_store(&a_done, false);
        atomic_store(&b_ready, false);
        pthread_t b;
        if (pthread_create(&b, NULL, reader, &worst))
            return 1;
        while (!atomic_load(&b_ready))
            sched_yield();
        double t0 = now_s();
        CHECK(clEnqueueNDRangeKernel(q, spin, 1, NULL, &one, NULL, 0, NULL, NULL));
        CHECK(clEnqueueReadBuffer(q, big, CL_TRUE, 0, WORDS * 4, got, 0, NULL, NULL));
        waited = now_s() - t0;
        /* A few more of B's reads after A's, then B stops. */
        struct timespec pause = {0, 100 * 1000 * 1000};
        nanosleep(&pause, NULL);
        atomic_store(&a_done, true);
        pthread_join(b, NULL);
        fprintf(stderr,
                "readstall: A waited %.3f s for its read (kernel of %u steps); B's worst read %.1f "
                "ms\n",
                waited, steps, worst * 1e3);
    }

    bool ok = true;
    for (uint32_t i = 0; i < WORDS; i++)
        ok &= got[i] == i * 2654435761u + seed;
    printf("a 6 MiB blocking read behind a long kernel: %s\n", ok ? "data ok" : "DATA WRONG");
    bool long_enough = waited >= 0.5;
    bool stalled = worst >= waited / 3;
    printf("the other thread's 4-byte reads meanwhile: %s\n", !long_enough
                                                                  ? "KERNEL TOO SHORT TO TELL"
                                                              : stalled ? "STALLED"
                                                                        : "not held up");
    free(got);
    clReleaseMemObject(big);
    clReleaseMemObject(out);
    clReleaseKernel(fill);
    clReleaseKernel(spin);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return ok && long_enough && !stalled ? 0 : 1;
}
