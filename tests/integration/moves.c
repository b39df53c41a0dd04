/*
 * moves.c - a copy to device 1 that waits for a write on device 0 waits
 * for that write only, not for what device 0's queue runs after it, as
 * natively.  Through VOCL the buffer then moves from one proxy to the
 * other (libvocl/coherence.c): the move must wait for the write's event,
 * not for a marker behind everything enqueued on the writer's queue.
 *
 * Device 0's queue: a kernel writes the buffer (its event kept), then a
 * marker held by a user event that is set only at the end.  Device 1's
 * queue: a copy of the buffer that waits for the write.  The copy must
 * complete while the user event is unset (polled for at most 30 s; then
 * the test fails, sets it, and ends); its bytes must be the written ones.
 * The write's event is released right after the copy is enqueued (its
 * release must not overtake the move).  Exit 0: ok, 1: not.
 */
#include <CL/cl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cl_check.h"

static const char *source = "__kernel void fill(__global uint *a, uint v)\n"
                            "{ a[get_global_id(0)] = v + (uint)get_global_id(0); }\n";

int main(void)
{
    enum { N = 4096 };
    cl_device_id devs[2];
    if (first_devices(devs, 2) < 2) {
        fprintf(stderr, "moves: needs two devices\n");
        return 1;
    }
    cl_int err;
    cl_context ctx = clCreateContext(NULL, 2, devs, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q0 = clCreateCommandQueueWithProperties(ctx, devs[0], NULL, &err);
    CHECK(err);
    cl_command_queue q1 = clCreateCommandQueueWithProperties(ctx, devs[1], NULL, &err);
    CHECK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 2, devs, NULL, NULL, NULL));
    cl_kernel fill = clCreateKernel(prog, "fill", &err);
    CHECK(err);
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(cl_uint), NULL, &err);
    CHECK(err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(cl_uint), NULL, &err);
    CHECK(err);
    int status = 0;
    for (int round = 0; round < 3 && status == 0; round++) {
        cl_uint v = 1000u * (cl_uint)(round + 1);
        size_t global = N;
        cl_event written, copied;
        CHECK(clSetKernelArg(fill, 0, sizeof(a), &a));
        CHECK(clSetKernelArg(fill, 1, sizeof(v), &v));
        CHECK(clEnqueueNDRangeKernel(q0, fill, 1, NULL, &global, NULL, 0, NULL, &written));
        cl_event gate = clCreateUserEvent(ctx, &err);
        CHECK(err);
        CHECK(clEnqueueMarkerWithWaitList(q0, 1, &gate, NULL));
        CHECK(clFlush(q0));
        CHECK(clEnqueueCopyBuffer(q1, a, b, 0, 0, N * sizeof(cl_uint), 1, &written, &copied));
        CHECK(clReleaseEvent(written));
        CHECK(clFlush(q1));
        cl_int st = CL_QUEUED;
        struct timespec nap = {0, 10 * 1000 * 1000};
        for (int i = 0; i < 3000 && st > CL_COMPLETE; i++) { /* 30 s at most */
            CHECK(clGetEventInfo(copied, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL));
            if (st > CL_COMPLETE)
                nanosleep(&nap, NULL);
        }
        if (st != CL_COMPLETE) {
            fprintf(stderr, "moves: round %d: the copy did not complete in 30 s while device 0's "
                            "queue was held after the write (status %d)\n", round, st);
            status = 1;
        }
        CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
        CHECK(clFinish(q0));
        CHECK(clFinish(q1));
        cl_uint got[N];
        CHECK(clEnqueueReadBuffer(q1, b, CL_TRUE, 0, sizeof(got), got, 0, NULL, NULL));
        for (cl_uint i = 0; i < N && status == 0; i++)
            if (got[i] != v + i) {
                fprintf(stderr, "moves: round %d: b[%u] = %u, not %u\n", round, i, got[i], v + i);
                status = 1;
            }
        clReleaseEvent(copied);
        clReleaseEvent(gate);
    }
    if (status == 0)
        printf("ok: 3 copies completed while the writer's queue was held, with the written bytes\n");
    clReleaseMemObject(a);
    clReleaseMemObject(b);
    clReleaseKernel(fill);
    clReleaseProgram(prog);
    clReleaseCommandQueue(q0);
    clReleaseCommandQueue(q1);
    clReleaseContext(ctx);
    return status;
}
