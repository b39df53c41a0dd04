/*
 * leaver.c - an application that is done before it leaves: it writes and
 * reads back 1 MiB, finishes, says "idle", and waits (at most 60 s) until
 * the file named by its argument exists; then it exits, and libvocl takes
 * its leave of the proxy (BYE), which releases what it made.  (Its last
 * call waits: nothing of it is still to be sent.)  The daemon test kills the
 * proxy's daemon while it waits.  Exits 0 if the bytes came back, 1 if not,
 * 2 on an OpenCL failure, 3 when the file never came.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "first_queue.h"

#define N (1u << 20)

static unsigned char out[N], in[N];

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: leaver FILE\n");
        return 2;
    }
    cl_context ctx;
    cl_device_id dev;
    cl_int err;
    cl_command_queue q = first_queue(&ctx, &dev);
    cl_mem x = q ? clCreateBuffer(ctx, CL_MEM_READ_WRITE, N, NULL, &err) : NULL;
    for (unsigned i = 0; i < N; i++)
        out[i] = (unsigned char)(i * 7 + 1);
    if (!x || clEnqueueWriteBuffer(q, x, CL_FALSE, 0, N, out, 0, NULL, NULL) ||
        clEnqueueReadBuffer(q, x, CL_TRUE, 0, N, in, 0, NULL, NULL) || clFinish(q))
        return 2;
    int same = memcmp(in, out, N) == 0;
    printf("leaver: %s; idle\n", same ? "the bytes came back" : "the bytes came back WRONG");
    fflush(stdout);
    for (int i = 0; i < 6000 && access(argv[1], F_OK) != 0; i++)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    if (access(argv[1], F_OK) != 0)
        return 3;
    return same ? 0 : 1;
}
