/*
 * batch.c - libvocl's batches of asynchronous requests (VOCL_BATCH,
 * VOCL_BATCH_US), seen from the proxy: it writes each message it runs to
 * a file of its own (VOCL_RECORD_REQUESTS=DIR), and this program counts
 * the files.
 *
 *   batch DIR MESSAGES HELD      (vocl-run -n 1 -d 1, VOCL_RECORD_REQUESTS=DIR)
 *
 * 1. 100 launches of a kernel that adds the launch's number to each int of
 *    a buffer, then clFinish: the sums are right, and the proxy got the
 *    launches and the clFinish in exactly MESSAGES messages.
 * 2. One launch, and no call after it: with HELD 1 it has not reached the
 *    proxy when the launch returns, and reaches it within 5 s with no call
 *    of the application's (VOCL_BATCH_US); with HELD 0 it reaches it within
 *    5 s too.  Then clFinish, and the sums again.
 * 3. clFinish of a queue on which nothing was done since its last one
 *    sends nothing; after a request to its proxy (a buffer made) it does,
 *    since that request's error would be deferred to it.
 * Exits 1 with a message when not.
 */
#include <CL/cl.h>
#include <dirent.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>

#include "cl_check.h"

#define FAIL(...) (fprintf(stderr, "batch: " __VA_ARGS__), fputc('\n', stderr), exit(1))
#define N 256
#define LAUNCHES 100

static const char *dir;

/* The messages the proxy has run so far. */
static int recorded(void)
{
    DIR *d = opendir(dir);
    if (!d)
        FAIL("cannot read %s", dir);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void launch(cl_command_queue q, cl_kernel k, cl_uint i)
{
    size_t global = N;
    CHECK(clSetKernelArg(k, 1, sizeof(i), &i));
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
}

static void check_sums(cl_command_queue q, cl_mem buf, cl_uint want)
{
    cl_uint got[N];
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof(got), got, 0, NULL, NULL));
    for (int g = 0; g < N; g++)
        if (got[g] != want)
            FAIL("x[%d] is %u, not %u", g, got[g], want);
}

int main(int argc, char **argv)
{
    if (argc != 4)
        FAIL("usage: batch DIR MESSAGES HELD");
    dir = argv[1];
    int messages = atoi(argv[2]);
    bool held = atoi(argv[3]) != 0;

    cl_device_id dev;
    cl_int rc;
    first_devices(&dev, 1);
    cl_context ctx = context_on(dev);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &rc);
    CHECK(rc);
    cl_uint zero[N] = {0};
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(zero), zero,
                                &rc);
    CHECK(rc);
    cl_kernel k = build_kernel(
        ctx, dev, "kernel void add(global uint *x, uint i) { x[get_global_id(0)] += i; }", "add");
    CHECK(clSetKernelArg(k, 0, sizeof(buf), &buf));
    /* The first launch of a shape waits for the proxy's word on it. */
    launch(q, k, 0);
    CHECK(clFinish(q));

    int before = recorded();
    for (cl_uint i = 1; i <= LAUNCHES; i++)
        launch(q, k, i);
    CHECK(clFinish(q));
    int got = recorded() - before;
    printf("batch: %d launches and a clFinish in %d messages\n", LAUNCHES, got);
    if (got != messages)
        FAIL("%d messages, not %d", got, messages);
    cl_uint sum = LAUNCHES * (LAUNCHES + 1) / 2;
    check_sums(q, buf, sum);

    before = recorded();
    launch(q, k, 1);
    double start = now();
    int at_once = recorded() - before;
    while (recorded() == before && now() - start < 5.0)
        nanosleep(&(struct timespec){0, 5000000}, NULL);
    double took = now() - start;
    printf("batch: a launch with no call after it: %s when it returned, at the proxy after "
           "%.3f s\n", at_once ? "at the proxy" : "not at the proxy", took);
    if (held && at_once)
        FAIL("the launch did not wait in the batch");
    if (recorded() == before)
        FAIL("the launch never reached the proxy");
    CHECK(clFinish(q));
    check_sums(q, buf, sum + 1);

    CHECK(clFinish(q)); /* (check_sums read through q: this one goes) */
    before = recorded();
    for (int i = 0; i < 10; i++)
        CHECK(clFinish(q));
    int idle = recorded() - before;
    cl_mem other = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &rc);
    CHECK(rc);
    before = recorded();
    CHECK(clFinish(q));
    int after_create = recorded() - before;
    printf("batch: 10 clFinish of an idle queue: %d messages; after a buffer made: %d\n", idle,
           after_create);
    if (idle != 0)
        FAIL("clFinish of an idle queue sent %d messages", idle);
    if (after_create == 0)
        FAIL("clFinish after a request to its proxy sent nothing");
    CHECK(clReleaseMemObject(other));

    CHECK(clReleaseKernel(k));
    CHECK(clReleaseMemObject(buf));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    printf("batch: ok\n");
    return 0;
}
