/*
 * shared.c - blocking transfers of buffers that a proxy of this node shares
 * (common/shm.h: one memcpy on the client, and maps in place) keep the
 * queue's order:
 *
 *  1. a blocking write, then a kernel adds 1 (held back 100 ms by a user
 *     event another thread sets), then a blocking read: it must see the
 *     kernel's result;
 *  2. a kernel adds 2 (held back as well), then a blocking write of new
 *     data: the write lands after the kernel, so a read gives the new data;
 *  3. a blocking write of the middle half, a read of all;
 *  4. a non-blocking write with an event, then a blocking read;
 *  5. after a clFinish, two non-blocking writes, a kernel, a non-blocking
 *     read, a clFinish, and one more non-blocking read;
 *  6. as PyOpenCL transfers: a kernel on another queue (held back), then a
 *     blocking read that waits for its event and asks for one of its own,
 *     which must say it is a read; a blocking write likewise;
 *  7. a kernel (held back), then a blocking map: it sees the kernel's
 *     result; a write map of the middle half, the unmap (their events say
 *     what they are), a kernel: it works on what was written through it;
 *  and all of it again on a buffer too small to be shared.
 *
 * Prints one line per check; the output is the same natively and through
 * VOCL (shared.sh also checks that VOCL shared the transfers).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CL/cl.h>

#include "cl_check.h"

#define BIG (4u << 20)     /* bytes: shared (at least VOCL_SHM_MIN) */
#define SMALL (64u << 10)  /* bytes: not shared */

static const char *src = "kernel void add(global int *x, int v) { x[get_global_id(0)] += v; }";

static cl_context ctx;
static cl_command_queue q, q2;
static cl_kernel add;

/* Sets a user event to CL_COMPLETE 100 ms after it starts. */
static void *open_gate(void *gate)
{
    usleep(100000);
    CHECK(clSetUserEventStatus((cl_event)gate, CL_COMPLETE));
    CHECK(clReleaseEvent((cl_event)gate));
    return NULL;
}

/* The kernel adds v, held back 100 ms by a user event that the returned
 * thread sets: a transfer that does not wait for it acts before it. */
static pthread_t launch_on(cl_command_queue queue, cl_mem buf, size_t n, int v, cl_event *ran)
{
    cl_int err;
    cl_event gate = clCreateUserEvent(ctx, &err);
    CHECK(err);
    CHECK(clSetKernelArg(add, 0, sizeof(buf), &buf));
    CHECK(clSetKernelArg(add, 1, sizeof(v), &v));
    CHECK(clEnqueueNDRangeKernel(queue, add, 1, NULL, &n, NULL, 1, &gate, ran));
    CHECK(clFlush(queue));
    pthread_t opener;
    if (pthread_create(&opener, NULL, open_gate, gate) != 0)
        exit(1);
    return opener;
}

static pthread_t launch(cl_mem buf, size_t n, int v)
{
    return launch_on(q, buf, n, v, NULL);
}

static cl_command_type command_type(cl_event e)
{
    cl_command_type t;
    CHECK(clGetEventInfo(e, CL_EVENT_COMMAND_TYPE, sizeof(t), &t, NULL));
    return t;
}

/* Whether got[i] == i * mul + plus for every i of [from, to). */
static bool holds(const int *got, size_t from, size_t to, int mul, int plus)
{
    for (size_t i = from; i < to; i++)
        if (got[i] != (int)i * mul + plus) {
            fprintf(stderr, "shared: element %zu is %d, not %d\n", i, got[i], (int)i * mul + plus);
            return false;
        }
    return true;
}

static int run(size_t bytes, const char *what)
{
    size_t n = bytes / sizeof(int);
    int *host = malloc(bytes), *got = malloc(bytes);
    cl_int err;
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CHECK(err);
    int failed = 0;

    for (size_t i = 0; i < n; i++)
        host[i] = (int)i;
    CHECK(clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
    pthread_t opener = launch(buf, n, 1);
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, bytes, got, 0, NULL, NULL));
    pthread_join(opener, NULL);
    bool ok = holds(got, 0, n, 1, 1);
    printf("%s: a read after a kernel sees it: %s\n", what, ok ? "yes" : "NO");
    failed += !ok;

    opener = launch(buf, n, 2);
    for (size_t i = 0; i < n; i++)
        host[i] = (int)i * 3;
    CHECK(clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, bytes, host, 0, NULL, NULL));
    pthread_join(opener, NULL);
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, bytes, got, 0, NULL, NULL));
    ok = holds(got, 0, n, 3, 0);
    printf("%s: a write after a kernel lands after it: %s\n", what, ok ? "yes" : "NO");
    failed += !ok;

    for (size_t i = 0; i < n; i++)
        host[i] = (int)i * 5;
    CHECK(clEnqueueWriteBuffer(q, buf, CL_TRUE, bytes / 4, bytes / 2, host + n / 4, 0, NULL,
                               NULL));
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, bytes, got, 0, NULL, NULL));
    ok = holds(got, 0, n / 4, 3, 0) && holds(got, n / 4, 3 * n / 4, 5, 0) &&
         holds(got, 3 * n / 4, n, 3, 0);
    printf("%s: a write of the middle half: %s\n", what, ok ? "yes" : "NO");
    failed += !ok;

    for (size_t i = 0; i < n; i++)
        host[i] = (int)i * 7;
    cl_event written;
    CHECK(clEnqueueWriteBuffer(q, buf, CL_FALSE, 0, bytes, host, 0, NULL, &written));
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, bytes, got, 0, NULL, NULL));
    CHECK(clReleaseEvent(written));
    ok = holds(got, 0, n, 7, 0);
    printf("%s: a read after a non-blocking write: %s\n", what, ok ? "yes" : "NO");
    failed += !ok;

    /* Non-blocking, no events, after a clFinish: may run at once. */
    CHECK(clFinish(q));
    for (size_t i = 0; i < n; i++)
        host[i] = (int)i * 9;
    CHECK(clEnqueueWriteBuffer(q, buf, CL_FALSE, 0, bytes / 2, host, 0, NULL, NULL));
    CHECK(clEnqueueWriteBuffer(q, buf, CL_FALSE, bytes / 2, bytes / 2, host + n / 2, 0, NULL,
                               NULL));
    opener = launch(buf, n, 1);
    CHECK(clEnqueueReadBuffer(q, buf, CL_FALSE, 0, bytes, got, 0, NULL, NULL));
    CHECK(clFinish(q));
    pthread_join(opener, NULL);
    ok = holds(got, 0, n, 9, 1);
    CHECK(clEnqueueReadBuffer(q, buf, CL_FALSE, 0, bytes, got, 0, NULL, NULL));
    CHECK(clFinish(q));
    ok = ok && holds(got, 0, n, 9, 1);
    printf("%s: non-blocking writes, a kernel, non-blocking reads: %s\n", what,
           ok ? "yes" : "NO");
    failed += !ok;

    /* As PyOpenCL transfers: events in and out, the kernel on another queue. */
    cl_event ran, done;
    CHECK(clFinish(q));
    opener = launch_on(q2, buf, n, 4, &ran);
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, bytes, got, 1, &ran, &done));
    pthread_join(opener, NULL);
    ok = holds(got, 0, n, 9, 5) && command_type(done) == CL_COMMAND_READ_BUFFER;
    CHECK(clReleaseEvent(ran));
    CHECK(clReleaseEvent(done));
    for (size_t i = 0; i < n; i++)
        host[i] = (int)i * 11;
    opener = launch_on(q2, buf, n, 1, &ran);
    CHECK(clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, bytes, host, 1, &ran, &done));
    pthread_join(opener, NULL);
    ok = ok && command_type(done) == CL_COMMAND_WRITE_BUFFER;
    CHECK(clWaitForEvents(1, &done));
    CHECK(clReleaseEvent(ran));
    CHECK(clReleaseEvent(done));
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, bytes, got, 0, NULL, NULL));
    ok = ok && holds(got, 0, n, 11, 0);
    printf("%s: transfers with events in and out, a kernel on another queue: %s\n", what,
           ok ? "yes" : "NO");
    failed += !ok;

    /* Maps (in place where the buffer is shared): a blocking map after a
     * kernel (held back) sees its result; what is written through a map of
     * the middle half is what a kernel after the unmap works on. */
    opener = launch(buf, n, 1);
    int *p = clEnqueueMapBuffer(q, buf, CL_TRUE, CL_MAP_READ, 0, bytes, 0, NULL, NULL, &err);
    CHECK(err);
    pthread_join(opener, NULL);
    ok = holds(p, 0, n, 11, 1);
    CHECK(clEnqueueUnmapMemObject(q, buf, p, 0, NULL, NULL));
    cl_event mapped;
    p = clEnqueueMapBuffer(q, buf, CL_TRUE, CL_MAP_WRITE, bytes / 4, bytes / 2, 0, NULL, &mapped,
                           &err);
    CHECK(err);
    for (size_t i = 0; i < n / 2; i++)
        p[i] = (int)(n / 4 + i) * 13;
    ok = ok && command_type(mapped) == CL_COMMAND_MAP_BUFFER;
    CHECK(clReleaseEvent(mapped));
    CHECK(clEnqueueUnmapMemObject(q, buf, p, 0, NULL, &mapped));
    ok = ok && command_type(mapped) == CL_COMMAND_UNMAP_MEM_OBJECT;
    CHECK(clReleaseEvent(mapped));
    opener = launch(buf, n, 1);
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, bytes, got, 0, NULL, NULL));
    pthread_join(opener, NULL);
    ok = ok && holds(got, 0, n / 4, 11, 2) && holds(got, n / 4, 3 * n / 4, 13, 1) &&
         holds(got, 3 * n / 4, n, 11, 2);
    printf("%s: a map after a kernel sees it, a write map lands before the next: %s\n", what,
           ok ? "yes" : "NO");
    failed += !ok;

    CHECK(clReleaseMemObject(buf));
    free(host);
    free(got);
    return failed;
}

int main(void)
{
    cl_device_id dev;
    if (first_devices(&dev, 1) < 1) {
        fprintf(stderr, "shared: no device\n");
        return 1;
    }
    cl_int err;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    CHECK(err);
    q = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK(err);
    q2 = clCreateCommandQueue(ctx, dev, 0, &err);
    CHECK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 1, &dev, NULL, NULL, NULL));
    add = clCreateKernel(prog, "add", &err);
    CHECK(err);
    int failed = run(BIG, "4 MiB buffer") + run(SMALL, "64 KiB buffer");
    clReleaseKernel(add);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q);
    clReleaseCommandQueue(q2);
    clReleaseContext(ctx);
    return failed ? 1 : 0;
}
