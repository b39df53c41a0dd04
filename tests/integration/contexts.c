/*
 * contexts.c - contexts made and released one after another, each with a
 * transfer that the proxy stages (contexts.sh runs it with nothing shared
 * and no direct path), so that each gets a staging pool of its own, which
 * must be freed once the context is released (executor/pool.c).
 *
 *   contexts [N]   prints "contexts: N made and released, data verified"
 */
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>

#include "cl_check.h"

#define BYTES (1 << 20)

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 6;
    cl_device_id dev;
    first_devices(&dev, 1);
    static unsigned char in[BYTES], out[BYTES];
    for (int i = 0; i < n; i++) {
        cl_int rc;
        cl_context ctx = context_on(dev);
        cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &rc);
        CHECK(rc);
        cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, BYTES, NULL, &rc);
        CHECK(rc);
        for (int j = 0; j < BYTES; j++)
            in[j] = (unsigned char)(i * 31 + j);
        CHECK(clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, BYTES, in, 0, NULL, NULL));
        CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, BYTES, out, 0, NULL, NULL));
        for (int j = 0; j < BYTES; j++)
            if (out[j] != in[j]) {
                fprintf(stderr, "context %d: byte %d is %u, not %u\n", i, j, out[j], in[j]);
                return 1;
            }
        CHECK(clReleaseMemObject(buf));
        CHECK(clReleaseCommandQueue(q));
        CHECK(clReleaseContext(ctx));
    }
    printf("contexts: %d made and released, data verified\n", n);
    return 0;
}
