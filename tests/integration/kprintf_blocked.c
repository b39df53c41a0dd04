/*
 * kprintf_blocked.c - a stdout that blocks stops only the thread that
 * prints: thread A runs a kernel that prints about 300 KiB on the first
 * device and waits for it with clFinish, while thread B makes 4-byte
 * blocking reads on the second device for 3 s.  The program's stdout is a
 * pipe of its own that a third thread reads only after 2 s, so A's output
 * fills it (mpiexec's forwarding would not block).  Exits 1 when one of
 * B's reads took longer than 1 s (libvocl wrote the output to stdout while
 * holding its lock of the proxy that both devices are on) or a line is
 * missing, 0 otherwise, with B's read count and worst time on stderr.
 * Through VOCL only: natively PoCL prints from its worker threads, which a
 * blocked stdout stops, devices of one process alike.
 */
#include <CL/cl.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "cl_check.h"

#define LINES 4096

static cl_context ctx;
static cl_device_id devs[2];

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int out[2]; /* the pipe that is stdout */

/* Reads the pipe after 2 s, to its end: how many lines the kernel printed. */
static void *late_reader(void *lines)
{
    sleep(2);
    char buf[4096];
    ssize_t n;
    while ((n = read(out[0], buf, sizeof(buf))) > 0)
        for (ssize_t i = 0; i < n; i++)
            *(int *)lines += buf[i] == '\n';
    return NULL;
}

static void *printer(void *arg)
{
    (void)arg;
    cl_int rc;
    cl_command_queue q = clCreateCommandQueue(ctx, devs[0], 0, &rc);
    CHECK(rc);
    cl_kernel k = build_kernel(ctx, devs[0],
                               "kernel void say(void) { printf(\"line %5d of the kernel's output,"
                               " long enough to fill a pipe\\n\", (int)get_global_id(0)); }",
                               "say");
    size_t g = LINES;
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL));
    CHECK(clFinish(q));
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseCommandQueue(q));
    return NULL;
}

int main(void)
{
    if (first_devices(devs, 2) < 2) {
        fprintf(stderr, "kprintf_blocked: needs 2 devices\n");
        return 1;
    }
    cl_int rc;
    ctx = clCreateContext(NULL, 2, devs, NULL, NULL, &rc);
    CHECK(rc);
    cl_command_queue q = clCreateCommandQueue(ctx, devs[1], 0, &rc);
    CHECK(rc);
    int v = 7;
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(v), &v, &rc);
    CHECK(rc);
    int got;
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof(got), &got, 0, NULL, NULL));
    int lines = 0, saved = dup(STDOUT_FILENO);
    pthread_t a, r;
    if (saved < 0 || pipe(out) || dup2(out[1], STDOUT_FILENO) < 0 ||
        pthread_create(&r, NULL, late_reader, &lines) || pthread_create(&a, NULL, printer, NULL))
        return 1;
    double start = now(), worst = 0;
    int reads = 0;
    while (now() - start < 3.0) {
        double t0 = now();
        CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof(got), &got, 0, NULL, NULL));
        double t = now() - t0;
        worst = t > worst ? t : worst;
        reads++;
        if (got != v) {
            fprintf(stderr, "kprintf_blocked: read %d, not %d\n", got, v);
            return 1;
        }
    }
    pthread_join(a, NULL);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO); /* the pipe's last writer goes: the reader sees its end */
    close(out[1]);
    pthread_join(r, NULL);
    fprintf(stderr, "kprintf_blocked: %d reads beside the blocked printer, the slowest %.0f ms; "
            "%d of %d lines printed\n", reads, worst * 1e3, lines, LINES);
    CHECK(clReleaseMemObject(buf));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    return worst > 1.0 || lines != LINES ? 1 : 0;
}
