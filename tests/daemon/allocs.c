/*
 * allocs.c - buffers of SIZE MiB created one after another until N are
 * made or one is refused: prints each one's error code ("buffer I: CODE"),
 * then clFinish's.  Against a daemon whose session limit it passes, the
 * refusal must come at the clCreateBuffer that passes it (daemon.sh,
 * limits).
 *   allocs SIZE-MIB N
 */
#include <stdio.h>
#include <stdlib.h>

#include "first_queue.h"

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    size_t size = (size_t)atol(argv[1]) << 20;
    int n = atoi(argv[2]);
    cl_context ctx;
    cl_device_id dev;
    cl_int err;
    cl_command_queue q = first_queue(&ctx, &dev);
    if (!q)
        return 1;
    for (int i = 0; i < n; i++) {
        clCreateBuffer(ctx, CL_MEM_READ_WRITE, size, NULL, &err);
        printf("buffer %d: %d\n", i + 1, err);
        if (err != CL_SUCCESS)
            break;
    }
    printf("finish: %d\n", clFinish(q));
    return 0;
}
