/*
 * ctscases.c - what OpenCL-CTS found different through VOCL (issue 61), one
 * case per argument, each printing what it checked; the output is the same
 * natively and through VOCL (compare.sh).  A hang is caught by alarm(): exit 3.
 *
 *  gated     non-blocking reads gated by a user event, then non-blocking
 *            writes: of other memory to other buffers (CTS events
 *            callbacks_simultaneous, userevents_multithreaded), and of the
 *            very memory the read fills, after the read's event or in the
 *            order of one queue; the same thread sets the gate only after
 *            them, so a write that waits for the read hangs.  Every buffer
 *            must then hold what it should, and the write's event says
 *            CL_COMMAND_WRITE_BUFFER.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CL/cl.h>

#include "cl_check.h"

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "ctscases: HANG: a call did not return in time\n";
    if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
        _exit(3);
    _exit(3);
}

static cl_mem buffer_of(cl_context ctx, size_t n, const void *data)
{
    cl_int rc;
    cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE | (data ? CL_MEM_COPY_HOST_PTR : 0), n,
                              (void *)data, &rc);
    CHECK(rc);
    return m;
}

static void fill(uint8_t *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(i * 7 + seed * 13 + (i >> 12));
}

/* how: 0 other memory, wait list the gate; 1 the same memory, after the
 * read's event (another queue); 2 the same memory, in order. */
static bool gated_round(cl_context ctx, cl_device_id dev, size_t n, int how)
{
    cl_int rc;
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &rc);
    CHECK(rc);
    cl_command_queue q2 = clCreateCommandQueue(ctx, dev, 0, &rc);
    CHECK(rc);
    uint8_t *src = malloc(n), *other = malloc(n), *via = calloc(1, n), *got = malloc(n);
    fill(src, n, 1 + (unsigned)how);
    fill(other, n, 5 + (unsigned)how);
    cl_mem a = buffer_of(ctx, n, src), b = buffer_of(ctx, n, NULL);
    cl_event gate = clCreateUserEvent(ctx, &rc), r, w;
    CHECK(rc);
    CHECK(clEnqueueReadBuffer(q, a, CL_FALSE, 0, n, via, 1, &gate, &r));
    if (how == 0)
        CHECK(clEnqueueWriteBuffer(q, b, CL_FALSE, 0, n, other, 1, &gate, &w));
    else if (how == 1)
        CHECK(clEnqueueWriteBuffer(q2, b, CL_FALSE, 0, n, via, 1, &r, &w));
    else
        CHECK(clEnqueueWriteBuffer(q, b, CL_FALSE, 0, n, via, 0, NULL, &w));
    CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
    CHECK(clFinish(q));
    CHECK(clFinish(q2));
    cl_command_type type = 0;
    CHECK(clGetEventInfo(w, CL_EVENT_COMMAND_TYPE, sizeof(type), &type, NULL));
    CHECK(clEnqueueReadBuffer(q, b, CL_TRUE, 0, n, got, 0, NULL, NULL));
    bool ok = !memcmp(via, src, n) && !memcmp(got, how ? src : other, n) &&
              type == CL_COMMAND_WRITE_BUFFER;
    clReleaseEvent(r), clReleaseEvent(w), clReleaseEvent(gate);
    clReleaseMemObject(a), clReleaseMemObject(b);
    clReleaseCommandQueue(q), clReleaseCommandQueue(q2);
    free(src), free(other), free(via), free(got);
    return ok;
}

static int gated(cl_context ctx, cl_device_id dev)
{
    static const char *hows[] = {"other memory after the gate", "the read's memory after its event",
                                 "the read's memory in order"};
    static const size_t sizes[] = {64, 3 << 20};
    int bad = 0;
    for (int how = 0; how < 3; how++)
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            bool ok = gated_round(ctx, dev, sizes[s], how);
            printf("gated write, %s, %zu bytes: %s\n", hows[how], sizes[s], ok ? "ok" : "WRONG");
            bad += !ok;
        }
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: ctscases gated\n");
        return 2;
    }
    signal(SIGALRM, on_alarm);
    alarm(60);
    cl_device_id dev;
    first_devices(&dev, 1);
    cl_context ctx = context_on(dev);
    int bad;
    if (!strcmp(argv[1], "gated")) {
        bad = gated(ctx, dev);
    } else {
        fprintf(stderr, "ctscases: no case %s\n", argv[1]);
        return 2;
    }
    clReleaseContext(ctx);
    return bad ? 1 : 0;
}
