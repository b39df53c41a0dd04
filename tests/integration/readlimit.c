/*
 * readlimit.c - many chunked reads in flight at once, each checked.  Run
 * through a proxy with one staging buffer and little host memory for the
 * session (meson.build: VOCL_POOL_BUFFERS=1, VOCL_MAX_SESSION_HOST=256K),
 * most chunks find neither: a read's later chunks reuse the memory of the
 * chunk before, and its first chunk takes the staging buffer as the
 * holder's heir (executor/ops_transfer.c, pool.c).  Reads only, once the
 * buffer is filled: nothing else needs the session's host memory meanwhile,
 * so no command may fail for want of it.  The output must equal the native
 * run's.
 */
#include <CL/cl.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cl_check.h"

#define WORDS (1u << 19) /* 2 MiB of uint */
#define READS 8

static const char *src = "__kernel void fill(__global uint *b, uint seed)\n"
                         "{ uint i = get_global_id(0); b[i] = i * 2654435761u + seed; }\n";

int main(void)
{
    cl_device_id dev;
    cl_int rc;
    if (first_devices(&dev, 1) < 1)
        return 1;
    cl_context ctx = context_on(dev);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &rc);
    CHECK(rc);
    cl_kernel fill = build_kernel(ctx, dev, src, "fill");
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, WORDS * 4, NULL, &rc);
    CHECK(rc);
    cl_uint seed = 777;
    size_t words = WORDS;
    CHECK(clSetKernelArg(fill, 0, sizeof(buf), &buf));
    CHECK(clSetKernelArg(fill, 1, sizeof(seed), &seed));
    CHECK(clEnqueueNDRangeKernel(q, fill, 1, NULL, &words, NULL, 0, NULL, NULL));
    CHECK(clFinish(q));

    /* Whole reads, then reads of odd ranges, all in flight before one wait. */
    uint32_t *got[READS];
    size_t off[READS], len[READS];
    for (int r = 0; r < READS; r++) {
        off[r] = r < READS / 2 ? 0 : (size_t)r * 12345 % (WORDS / 2);
        len[r] = r < READS / 2 ? WORDS : WORDS / 2 - (size_t)r * 999;
        if (!(got[r] = malloc(len[r] * 4)))
            return 1;
        CHECK(clEnqueueReadBuffer(q, buf, CL_FALSE, off[r] * 4, len[r] * 4, got[r], 0, NULL, NULL));
    }
    CHECK(clFinish(q));
    int wrong = 0;
    for (int r = 0; r < READS; r++) {
        bool ok = true;
        for (size_t i = 0; i < len[r]; i++)
            ok &= got[r][i] == (uint32_t)(off[r] + i) * 2654435761u + seed;
        printf("read %d: %zu bytes at %zu: %s\n", r, len[r] * 4, off[r] * 4,
               ok ? "right" : "WRONG");
        wrong += !ok;
        free(got[r]);
    }
    clReleaseMemObject(buf);
    clReleaseKernel(fill);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return wrong ? 1 : 0;
}
