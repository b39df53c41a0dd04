/*
 * memory.c - host-pointer buffers, maps, rect transfers, sub-buffers,
 * images and samplers, extension functions and built-in kernels, in one
 * context over all the devices (under vocl-run: devices of different
 * proxies, so every step also moves data between them).  Each step
 * alternates devices A (the first) and B (the last) and prints what it
 * sees; compare.sh runs it natively and under vocl-run and the outputs
 * must be identical.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl.h>

#include "cl_check.h"

#define N 4096 /* ints per buffer */
#define W 64   /* image width and height */
#define D 4    /* image depth, array size */

static const char *src = "kernel void inc(global int *x) { x[get_global_id(0)] += 1; }\n";

/* A digest of n bytes, so that a line stands for a whole buffer. */
static uint32_t digest(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

static void say(const char *what, const void *p, size_t n)
{
    printf("%s: %08x\n", what, (unsigned)digest(p, n));
}

static void run_inc(cl_command_queue q, cl_kernel k, cl_mem m, size_t n)
{
    CHECK(clSetKernelArg(k, 0, sizeof(m), &m));
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, 0, NULL, NULL));
}

static void buffers(cl_context ctx, cl_command_queue qa, cl_command_queue qb, cl_kernel inc)
{
    cl_int err;
    int *host = malloc(N * sizeof(int)), *got = malloc(N * sizeof(int));
    for (int i = 0; i < N; i++)
        host[i] = i;

    /* USE_HOST_PTR: a kernel on B; a map on A returns the application's
     * memory, holding the kernel's result. */
    cl_mem use = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, N * sizeof(int),
                                host, &err);
    CHECK(err);
    run_inc(qb, inc, use, N);
    CHECK(clFinish(qb));
    int *p = clEnqueueMapBuffer(qa, use, CL_TRUE, CL_MAP_READ, 0, N * sizeof(int), 0, NULL, NULL,
                                &err);
    CHECK(err);
    printf("USE_HOST_PTR map returns the host pointer: %s\n", p == host ? "yes" : "no");
    say("USE_HOST_PTR after a kernel on B, mapped on A", p, N * sizeof(int));
    CHECK(clEnqueueUnmapMemObject(qa, use, p, 0, NULL, NULL));
    CHECK(clFinish(qa));
    say("USE_HOST_PTR host memory after the unmap", host, N * sizeof(int));

    /* ALLOC_HOST_PTR, filled through a write map on A, a kernel on B. */
    cl_mem alloc = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                                  N * sizeof(int), NULL, &err);
    CHECK(err);
    p = clEnqueueMapBuffer(qa, alloc, CL_TRUE, CL_MAP_WRITE, 0, N * sizeof(int), 0, NULL, NULL,
                           &err);
    CHECK(err);
    for (int i = 0; i < N; i++)
        p[i] = 3 * i;
    CHECK(clEnqueueUnmapMemObject(qa, alloc, p, 0, NULL, NULL));
    run_inc(qb, inc, alloc, N);
    CHECK(clFinish(qb));
    CHECK(clEnqueueReadBuffer(qa, alloc, CL_TRUE, 0, N * sizeof(int), got, 0, NULL, NULL));
    say("ALLOC_HOST_PTR, write map on A, kernel on B, read on A", got, N * sizeof(int));

    /* WRITE_INVALIDATE_REGION on B over part of it: the rest keeps A's data. */
    p = clEnqueueMapBuffer(qb, alloc, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION, 256 * sizeof(int),
                           512 * sizeof(int), 0, NULL, NULL, &err);
    CHECK(err);
    for (int i = 0; i < 512; i++)
        p[i] = -i;
    CHECK(clEnqueueUnmapMemObject(qb, alloc, p, 0, NULL, NULL));
    CHECK(clFinish(qb));
    CHECK(clEnqueueReadBuffer(qa, alloc, CL_TRUE, 0, N * sizeof(int), got, 0, NULL, NULL));
    say("WRITE_INVALIDATE_REGION map on B, read on A", got, N * sizeof(int));

    /* Rect transfers: a 16x8 block written on A, copied on B, read on A. */
    cl_mem r1 = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(int), NULL, &err);
    CHECK(err);
    cl_mem r2 = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(int), NULL, &err);
    CHECK(err);
    int zero = 0;
    CHECK(clEnqueueFillBuffer(qa, r1, &zero, sizeof(zero), 0, N * sizeof(int), 0, NULL, NULL));
    CHECK(clEnqueueFillBuffer(qb, r2, &zero, sizeof(zero), 0, N * sizeof(int), 0, NULL, NULL));
    CHECK(clFinish(qa));
    CHECK(clFinish(qb));
    const size_t b_origin[3] = {4 * sizeof(int), 2, 0}, h_origin[3] = {0, 0, 0};
    const size_t region[3] = {16 * sizeof(int), 8, 1};
    CHECK(clEnqueueWriteBufferRect(qa, r1, CL_TRUE, b_origin, h_origin, region, 64 * sizeof(int),
                                   0, 16 * sizeof(int), 0, host, 0, NULL, NULL));
    const size_t d_origin[3] = {8 * sizeof(int), 5, 0};
    CHECK(clEnqueueCopyBufferRect(qb, r1, r2, b_origin, d_origin, region, 64 * sizeof(int), 0,
                                  32 * sizeof(int), 0, 0, NULL, NULL));
    CHECK(clFinish(qb));
    CHECK(clEnqueueReadBuffer(qa, r2, CL_TRUE, 0, N * sizeof(int), got, 0, NULL, NULL));
    say("rect write on A, rect copy on B, read on A", got, N * sizeof(int));
    int block[16 * 8];
    CHECK(clEnqueueReadBufferRect(qa, r2, CL_TRUE, d_origin, h_origin, region, 32 * sizeof(int),
                                  0, 16 * sizeof(int), 0, block, 0, NULL, NULL));
    say("rect read on A", block, sizeof(block));

    /* A sub-buffer written by a kernel on B, its parent read on A; then a
     * copy on B of a buffer A wrote last. */
    cl_buffer_region sub_region = {1024 * sizeof(int), 1024 * sizeof(int)};
    cl_mem sub = clCreateSubBuffer(r1, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION,
                                   &sub_region, &err);
    CHECK(err);
    run_inc(qb, inc, sub, 1024);
    CHECK(clFinish(qb));
    CHECK(clEnqueueReadBuffer(qa, r1, CL_TRUE, 0, N * sizeof(int), got, 0, NULL, NULL));
    say("sub-buffer: kernel on B, parent read on A", got, N * sizeof(int));
    CHECK(clEnqueueWriteBuffer(qa, r2, CL_TRUE, 0, N * sizeof(int), host, 0, NULL, NULL));
    CHECK(clEnqueueCopyBuffer(qb, r2, r1, 0, 0, N * sizeof(int), 0, NULL, NULL));
    CHECK(clFinish(qb));
    CHECK(clEnqueueReadBuffer(qa, r1, CL_TRUE, 0, N * sizeof(int), got, 0, NULL, NULL));
    say("write on A, copy on B, read on A", got, N * sizeof(int));

    clReleaseMemObject(sub);
    clReleaseMemObject(r1);
    clReleaseMemObject(r2);
    clReleaseMemObject(alloc);
    clReleaseMemObject(use);
    free(host);
    free(got);
}

static cl_mem image(cl_context ctx, cl_mem_object_type type, size_t w, size_t h, size_t d,
                    cl_mem buffer)
{
    cl_int err;
    const cl_image_format fmt = {CL_RGBA, CL_UNSIGNED_INT8};
    cl_image_desc desc = {.image_type = type, .image_width = w, .image_height = h,
                          .image_depth = d, .image_array_size = d, .buffer = buffer};
    cl_mem m = clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err);
    CHECK(err);
    return m;
}

static void images(cl_context ctx, cl_command_queue qa, cl_command_queue qb)
{
    const size_t bytes = (size_t)W * W * D * 4;
    unsigned char *pix = malloc(bytes), *got = malloc(bytes);
    for (size_t i = 0; i < bytes; i++)
        pix[i] = (unsigned char)(i * 7 + 1);
    cl_uint nfmt;
    CHECK(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, NULL,
                                     &nfmt));
    printf("2D read-write image formats: %u\n", nfmt);

    /* 1D, 2D array and 3D: written on A, copied on B, read on A. */
    static const struct {
        const char *name;
        cl_mem_object_type type;
        size_t w, h, d;
    } kinds[] = {
        {"1D", CL_MEM_OBJECT_IMAGE1D, W * W, 1, 1},
        {"1D array", CL_MEM_OBJECT_IMAGE1D_ARRAY, W, D, 1},
        {"2D", CL_MEM_OBJECT_IMAGE2D, W, W, 1},
        {"2D array", CL_MEM_OBJECT_IMAGE2D_ARRAY, W, W, D},
        {"3D", CL_MEM_OBJECT_IMAGE3D, W, W, D},
    };
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        size_t h = kinds[k].h, d = kinds[k].d;
        /* Arrays: height (1D) or depth (2D) is the array size. */
        if (kinds[k].type == CL_MEM_OBJECT_IMAGE1D_ARRAY)
            d = D;
        cl_mem a = image(ctx, kinds[k].type, kinds[k].w, h, d, NULL);
        cl_mem b = image(ctx, kinds[k].type, kinds[k].w, h, d, NULL);
        size_t region[3] = {kinds[k].w, h, kinds[k].type == CL_MEM_OBJECT_IMAGE1D_ARRAY ? 1 : d};
        if (kinds[k].type == CL_MEM_OBJECT_IMAGE1D_ARRAY)
            region[1] = D;
        const size_t origin[3] = {0, 0, 0};
        size_t n = region[0] * region[1] * region[2] * 4;
        CHECK(clEnqueueWriteImage(qa, a, CL_TRUE, origin, region, 0, 0, pix, 0, NULL, NULL));
        CHECK(clEnqueueCopyImage(qb, a, b, origin, origin, region, 0, NULL, NULL));
        CHECK(clFinish(qb));
        memset(got, 0, bytes);
        CHECK(clEnqueueReadImage(qa, b, CL_TRUE, origin, region, 0, 0, got, 0, NULL, NULL));
        char what[96];
        snprintf(what, sizeof(what), "%s image: write on A, copy on B, read on A", kinds[k].name);
        say(what, got, n);
        clReleaseMemObject(a);
        clReleaseMemObject(b);
    }

    /* 2D: fill on B, a map on A; image <-> buffer copies. */
    cl_int err;
    cl_mem im = image(ctx, CL_MEM_OBJECT_IMAGE2D, W, W, 1, NULL);
    const size_t origin[3] = {0, 0, 0}, region[3] = {W, W, 1}, part[3] = {W / 2, W / 4, 1};
    const size_t at[3] = {3, 5, 0};
    const cl_uint color[4] = {1, 2, 3, 4};
    CHECK(clEnqueueWriteImage(qa, im, CL_TRUE, origin, region, 0, 0, pix, 0, NULL, NULL));
    CHECK(clEnqueueFillImage(qb, im, color, at, part, 0, NULL, NULL));
    CHECK(clFinish(qb));
    size_t pitch;
    unsigned char *m = clEnqueueMapImage(qa, im, CL_TRUE, CL_MAP_READ, origin, region, &pitch,
                                         NULL, 0, NULL, NULL, &err);
    CHECK(err);
    for (size_t y = 0; m && y < W; y++)
        memcpy(got + y * W * 4, m + y * pitch, W * 4);
    CHECK(clEnqueueUnmapMemObject(qa, im, m, 0, NULL, NULL));
    say("2D image: write on A, fill on B, map on A", got, (size_t)W * W * 4);

    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, (size_t)W * W * 4, NULL, &err);
    CHECK(err);
    CHECK(clEnqueueCopyImageToBuffer(qb, im, buf, origin, region, 0, 0, NULL, NULL));
    CHECK(clFinish(qb));
    CHECK(clEnqueueReadBuffer(qa, buf, CL_TRUE, 0, (size_t)W * W * 4, got, 0, NULL, NULL));
    say("2D image copied to a buffer on B, read on A", got, (size_t)W * W * 4);
    CHECK(clEnqueueWriteBuffer(qa, buf, CL_TRUE, 0, (size_t)W * W * 4, pix + 4, 0, NULL, NULL));
    CHECK(clEnqueueCopyBufferToImage(qb, buf, im, 0, origin, region, 0, NULL, NULL));
    CHECK(clFinish(qb));
    CHECK(clEnqueueReadImage(qa, im, CL_TRUE, origin, region, 0, 0, got, 0, NULL, NULL));
    say("buffer written on A, copied to the image on B, read on A", got, (size_t)W * W * 4);

    /* A 1D image over a buffer: the buffer written on A, the image read on B. */
    CHECK(clEnqueueWriteBuffer(qa, buf, CL_TRUE, 0, (size_t)W * W * 4, pix, 0, NULL, NULL));
    cl_mem over = image(ctx, CL_MEM_OBJECT_IMAGE1D_BUFFER, W * W, 1, 1, buf);
    const size_t line[3] = {W * W, 1, 1};
    CHECK(clEnqueueReadImage(qb, over, CL_TRUE, origin, line, 0, 0, got, 0, NULL, NULL));
    say("1D image from a buffer written on A, read on B", got, (size_t)W * W * 4);

    /* A sampler: its info as given. */
    cl_sampler s = clCreateSampler(ctx, CL_TRUE, CL_ADDRESS_CLAMP, CL_FILTER_LINEAR, &err);
    CHECK(err);
    cl_addressing_mode am;
    cl_filter_mode fm;
    CHECK(clGetSamplerInfo(s, CL_SAMPLER_ADDRESSING_MODE, sizeof(am), &am, NULL));
    CHECK(clGetSamplerInfo(s, CL_SAMPLER_FILTER_MODE, sizeof(fm), &fm, NULL));
    printf("sampler: addressing %#x, filter %#x\n", (unsigned)am, (unsigned)fm);

    clReleaseSampler(s);
    clReleaseMemObject(over);
    clReleaseMemObject(buf);
    clReleaseMemObject(im);
    free(pix);
    free(got);
}

/* cl_khr_icd's entry point through the platform; built-in kernels. */
static void extensions(cl_platform_id plat, cl_device_id dev)
{
    void *f = clGetExtensionFunctionAddressForPlatform(plat, "clIcdGetPlatformIDsKHR");
    printf("clIcdGetPlatformIDsKHR: %s\n", f ? "found" : "NULL");
    cl_int (*icd_ids)(cl_uint, cl_platform_id *, cl_uint *) = NULL;
    memcpy(&icd_ids, &f, sizeof(f)); /* (ISO C has no object-to-function cast) */
    cl_uint n = 0;
    if (icd_ids)
        CHECK(icd_ids(0, NULL, &n));
    printf("  it counts platforms: %s\n", n > 0 ? "yes" : "no");
    f = clGetExtensionFunctionAddressForPlatform(plat, "clNoSuchFunctionKHR");
    printf("an unknown name: %s\n", f ? "found" : "NULL");
    char names[1024] = "";
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_BUILT_IN_KERNELS, sizeof(names), names, NULL));
    printf("built-in kernels: \"%s\"\n", names);
}

int main(void)
{
    cl_platform_id plat;
    cl_uint ndev;
    CHECK(clGetPlatformIDs(1, &plat, NULL));
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 0, NULL, &ndev));
    cl_device_id *dev = malloc(ndev * sizeof(*dev));
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, ndev, dev, NULL));
    cl_int err;
    cl_context ctx = clCreateContext(NULL, ndev, dev, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue qa = clCreateCommandQueue(ctx, dev[0], 0, &err);
    CHECK(err);
    cl_command_queue qb = clCreateCommandQueue(ctx, dev[ndev - 1], 0, &err);
    CHECK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 0, NULL, NULL, NULL, NULL));
    cl_kernel inc = clCreateKernel(prog, "inc", &err);
    CHECK(err);

    printf("devices: %u\n", ndev);
    buffers(ctx, qa, qb, inc);
    images(ctx, qa, qb);
    extensions(plat, dev[0]);

    clReleaseKernel(inc);
    clReleaseProgram(prog);
    clReleaseCommandQueue(qa);
    clReleaseCommandQueue(qb);
    clReleaseContext(ctx);
    free(dev);
    printf("done\n");
    return 0;
}
