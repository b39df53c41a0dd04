/*
 * limits.c - an ordinary OpenCL program for the reliability suite, run with
 * a proxy whose sessions may hold 8 MiB of memory objects, 64 objects and
 * 4 MiB of host memory in the proxy (meson.build): buffers of 1 MiB are
 * refused with CL_MEM_OBJECT_ALLOCATION_FAILURE once 8 are held, samplers
 * with CL_OUT_OF_RESOURCES once 64 objects are; a release makes room again.
 * A rectangular read whose host rows are 16 MiB apart needs a 48 MiB span
 * staged in the proxy: refused with CL_OUT_OF_HOST_MEMORY, and the same
 * read with rows close together works.
 */
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../integration/cl_check.h"

#define MIB (1u << 20)

/* 4 rows of 16 bytes of buf (which holds 1 MiB of byte 1), read with rows
 * pitch apart: CL_OUT_OF_HOST_MEMORY where the span is over the proxy's
 * limit, else the bytes. */
static int rect_read(cl_command_queue q, cl_mem buf, size_t pitch, cl_int want)
{
    size_t span = 3 * pitch + 16;
    unsigned char *host = calloc(1, span);
    const size_t zero[3] = {0, 0, 0}, region[3] = {16, 4, 1};
    cl_int rc = clEnqueueReadBufferRect(q, buf, CL_TRUE, zero, zero, region, 16, 0, pitch, 0,
                                        host, 0, NULL, NULL);
    int bad = rc != want;
    for (size_t r = 0; rc == CL_SUCCESS && r < 4; r++)
        for (size_t i = 0; i < 16; i++)
            bad |= host[r * pitch + i] != 1;
    printf("a rectangular read with a span of %zu KiB: %d (want %d)%s\n", span >> 10, rc, want,
           bad ? ": FAIL" : "");
    free(host);
    return bad;
}

static int rect_reads(cl_command_queue q, cl_mem buf)
{
    static unsigned char ones[MIB];
    memset(ones, 1, sizeof(ones));
    CHECK(clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, MIB, ones, 0, NULL, NULL));
    int bad = rect_read(q, buf, 16u * MIB, CL_OUT_OF_HOST_MEMORY);
    bad |= rect_read(q, buf, 64 * 1024, CL_SUCCESS);
    return bad | (clFinish(q) != CL_SUCCESS);
}

int main(void)
{
    cl_device_id dev;
    cl_int rc;
    first_devices(&dev, 1);
    cl_context ctx = context_on(dev);
    int bad = 0;

    /* Creates are pipelined: a refusal is a deferred error, reported by
     * the next synchronising call, as any error of a non-blocking call. */
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &rc);
    CHECK(rc);
    cl_mem bufs[12];
    for (int i = 0; i < 12; i++) {
        bufs[i] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, MIB, NULL, &rc);
        CHECK(rc);
    }
    rc = clFinish(q);
    printf("12 buffers of 1 MiB, then clFinish: %d\n", rc);
    bad |= rc != CL_MEM_OBJECT_ALLOCATION_FAILURE;
    for (int i = 0; i < 12; i++)
        clReleaseMemObject(bufs[i]); /* the refused ones fail: no matter */
    clFinish(q);
    /* Room again: 8 buffers that work. */
    static char data[MIB], back[MIB];
    int nbufs = 0;
    for (; nbufs < 8; nbufs++) {
        bufs[nbufs] = clCreateBuffer(ctx, CL_MEM_READ_WRITE, MIB, NULL, &rc);
        CHECK(rc);
        data[nbufs] = (char)(nbufs + 1);
        CHECK(clEnqueueWriteBuffer(q, bufs[nbufs], CL_FALSE, 0, MIB, data, 0, NULL, NULL));
        CHECK(clEnqueueReadBuffer(q, bufs[nbufs], CL_TRUE, 0, MIB, back, 0, NULL, NULL));
        bad |= back[nbufs] != (char)(nbufs + 1);
    }
    rc = clFinish(q);
    printf("after the releases, 8 buffers written and read: %d\n", rc);
    bad |= rc != CL_SUCCESS;

    cl_sampler smp[128];
    int nsmp = 0;
    for (; nsmp < 128; nsmp++) {
        smp[nsmp] = clCreateSampler(ctx, CL_FALSE, CL_ADDRESS_NONE, CL_FILTER_NEAREST, &rc);
        if (rc != CL_SUCCESS)
            break;
    }
    /* The context, the queue and the 8 buffers are objects too (and
     * whatever libvocl holds for itself, such as the last command's event). */
    printf("samplers: %d made, then error %d\n", nsmp, rc);
    bad |= nsmp < 64 - 2 - nbufs - 4 || nsmp > 64 - 2 - nbufs || rc != CL_OUT_OF_RESOURCES;
    CHECK(clReleaseSampler(smp[--nsmp]));
    smp[nsmp] = clCreateSampler(ctx, CL_FALSE, CL_ADDRESS_NONE, CL_FILTER_NEAREST, &rc);
    printf("after a release: %d\n", rc);
    bad |= rc != CL_SUCCESS;
    nsmp += rc == CL_SUCCESS;

    for (int i = 0; i < nsmp; i++)
        CHECK(clReleaseSampler(smp[i]));
    bad |= rect_reads(q, bufs[0]);
    for (int i = 0; i < nbufs; i++)
        CHECK(clReleaseMemObject(bufs[i]));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    printf("%s\n", bad ? "FAIL" : "PASS");
    return bad;
}
