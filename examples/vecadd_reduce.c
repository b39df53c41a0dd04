/*
 * vecadd_reduce: a plain OpenCL 1.2 program that splits c = a + b and the sum
 * of c over every device of one platform (one context and queue per device),
 * then checks both against a CPU reference.  stdout depends only on n and
 * seed, so runs with any number of devices, local or forwarded, compare equal.
 */

/* The build may pass a newer target on the command line; this program
 * deliberately sticks to the 1.2 API, so override it. */
#undef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#endif

#include <CL/cl.h>
#include <CL/cl_ext.h> /* CL_PLATFORM_NOT_FOUND_KHR from the ICD loader */

#include "clutil.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_N   1048576u
#define MAX_WG_SIZE 256u
/* Enough groups to keep a device busy; each work-item loops over the rest,
 * so the partial-sum buffer stays small whatever the chunk size. */
#define MAX_REDUCE_GROUPS 256u

static const char kernel_source[] =
    "__kernel void vecadd(__global const uint *a, __global const uint *b,\n"
    "                     __global uint *c, uint n)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    if (i < n)\n"
    "        c[i] = a[i] + b[i];\n"
    "}\n"
    "\n"
    "/* Each work-item first sums a strided slice (so any n works with any\n"
    " * number of groups), then the group combines its values as a tree.\n"
    " * The local size must be a power of two. */\n"
    "__kernel void reduce_sum(__global const uint *c, __global ulong *partial,\n"
    "                         __local ulong *scratch, uint n)\n"
    "{\n"
    "    size_t lid = get_local_id(0);\n"
    "    ulong acc = 0;\n"
    "    for (size_t i = get_global_id(0); i < n; i += get_global_size(0))\n"
    "        acc += c[i];\n"
    "    scratch[lid] = acc;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    for (size_t s = get_local_size(0) / 2; s > 0; s /= 2) {\n"
    "        if (lid < s)\n"
    "            scratch[lid] += scratch[lid + s];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    if (lid == 0)\n"
    "        partial[get_group_id(0)] = scratch[0];\n"
    "}\n";

/* Everything that belongs to one device; a device with count == 0 keeps
 * its context, queue and kernels but gets no buffers and no work. */
struct device_work {
    cl_device_id device;
    char *name;
    cl_context context;
    cl_command_queue queue;
    cl_program program;
    cl_kernel k_add;
    cl_kernel k_reduce;
    cl_mem buf_a, buf_b, buf_c, buf_partial;
    size_t offset, count; /* this device's chunk of the vectors */
    size_t wg_size, groups;
    cl_ulong *partial; /* host copy of the per-group sums */
    cl_event add_done;
};

void app_cl_fail(const char *call, cl_int err, int line)
{
    fprintf(stderr, "vecadd_reduce: %s failed: %s (%d) at line %d\n", call, app_cl_error_name(err),
            (int)err, line);
    exit(1);
}

static void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p) {
        fprintf(stderr, "vecadd_reduce: out of memory (%zu bytes)\n", size);
        exit(1);
    }
    return p;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: vecadd_reduce [-n ELEMENTS] [--devices K] [--platform P] [--seed S] [--help]\n"
            "  -n ELEMENTS    vector length, 1 to %" PRIu32 " (default %u)\n"
            "  --devices K    use only the first K devices of the platform (default: all)\n"
            "  --platform P   platform index (default: the first platform with devices)\n"
            "  --seed S       seed of the generated input data (default 1)\n"
            "  --help         show this help\n",
            UINT32_MAX, DEFAULT_N);
}

/* splitmix64 finaliser: element i's inputs are a pure function of (seed, i),
 * so the data never depends on how it is split across devices. */
static uint64_t mix64(uint64_t x)
{
    x += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static char *device_name(cl_device_id device)
{
    size_t size = 0;
    CL_CHECK(clGetDeviceInfo(device, CL_DEVICE_NAME, 0, NULL, &size));
    char *name = xmalloc(size + 1);
    CL_CHECK(clGetDeviceInfo(device, CL_DEVICE_NAME, size, name, NULL));
    name[size] = '\0';
    return name;
}

/* Returns the devices of platform `index` when `pick` is set, else of the
 * first platform that has any.  Exits with a message if there are none. */
static cl_device_id *find_devices(bool pick, uint64_t index, cl_uint *num_devices)
{
    cl_uint num_platforms = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &num_platforms);
    /* The ICD loader reports "no platforms" as an error, not as zero. */
    if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && num_platforms == 0)) {
        fprintf(stderr, "vecadd_reduce: no OpenCL platform found\n");
        exit(1);
    }
    CL_CHECK_ERR("clGetPlatformIDs", err);
    cl_platform_id *platforms = xmalloc(num_platforms * sizeof(*platforms));
    CL_CHECK(clGetPlatformIDs(num_platforms, platforms, NULL));

    if (pick && index >= num_platforms) {
        fprintf(stderr, "vecadd_reduce: platform %" PRIu64 " does not exist (%u found)\n", index,
                num_platforms);
        exit(1);
    }

    cl_device_id *devices = NULL;
    *num_devices = 0;
    for (cl_uint p = 0; p < num_platforms; p++) {
        if (pick && p != index)
            continue;
        cl_uint count = 0;
        err = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &count);
        if (err == CL_DEVICE_NOT_FOUND || count == 0)
            continue;
        CL_CHECK_ERR("clGetDeviceIDs", err);
        devices = xmalloc(count * sizeof(*devices));
        CL_CHECK(clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, count, devices, NULL));
        *num_devices = count;
        fprintf(stderr, "platform %u: %u device(s)\n", p, count);
        break;
    }
    free(platforms);

    if (!devices) {
        if (pick)
            fprintf(stderr, "vecadd_reduce: platform %" PRIu64 " has no devices\n", index);
        else
            fprintf(stderr, "vecadd_reduce: no OpenCL device found on any platform\n");
        exit(1);
    }
    return devices;
}

static void build_program(struct device_work *w)
{
    cl_int err;
    const char *source = kernel_source; /* the API wants a non-const char ** */
    w->program = clCreateProgramWithSource(w->context, 1, &source, NULL, &err);
    CL_CHECK_ERR("clCreateProgramWithSource", err);

    err = clBuildProgram(w->program, 1, &w->device, "", NULL, NULL);
    if (err == CL_BUILD_PROGRAM_FAILURE) {
        size_t size = 0;
        CL_CHECK(
            clGetProgramBuildInfo(w->program, w->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size));
        char *log = xmalloc(size + 1);
        CL_CHECK(
            clGetProgramBuildInfo(w->program, w->device, CL_PROGRAM_BUILD_LOG, size, log, NULL));
        log[size] = '\0';
        fprintf(stderr, "vecadd_reduce: build failed on %s:\n%s\n", w->name, log);
        free(log);
        exit(1);
    }
    CL_CHECK_ERR("clBuildProgram", err);

    w->k_add = clCreateKernel(w->program, "vecadd", &err);
    CL_CHECK_ERR("clCreateKernel(vecadd)", err);
    w->k_reduce = clCreateKernel(w->program, "reduce_sum", &err);
    CL_CHECK_ERR("clCreateKernel(reduce_sum)", err);
}

/* Largest power of two that the reduce kernel and the device accept, capped
 * at MAX_WG_SIZE so the __local scratch stays small. */
static size_t pick_wg_size(const struct device_work *w)
{
    size_t kernel_max = 0, device_max = 0, item_sizes[3] = {0};
    CL_CHECK(clGetKernelWorkGroupInfo(w->k_reduce, w->device, CL_KERNEL_WORK_GROUP_SIZE,
                                      sizeof(kernel_max), &kernel_max, NULL));
    CL_CHECK(clGetDeviceInfo(w->device, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(device_max),
                             &device_max, NULL));
    /* Every device has at least 3 dimensions, so 3 entries always fit. */
    CL_CHECK(clGetDeviceInfo(w->device, CL_DEVICE_MAX_WORK_ITEM_SIZES, sizeof(item_sizes),
                             item_sizes, NULL));

    size_t limit = MAX_WG_SIZE;
    if (kernel_max < limit)
        limit = kernel_max;
    if (device_max < limit)
        limit = device_max;
    if (item_sizes[0] < limit)
        limit = item_sizes[0];

    size_t wg = 1;
    while (wg * 2 <= limit)
        wg *= 2;
    return wg;
}

static void setup_device(struct device_work *w)
{
    cl_int err;
    w->name = device_name(w->device);
    w->context = clCreateContext(NULL, 1, &w->device, NULL, NULL, &err);
    CL_CHECK_ERR("clCreateContext", err);
    w->queue = clCreateCommandQueue(w->context, w->device, 0, &err);
    CL_CHECK_ERR("clCreateCommandQueue", err);
    build_program(w);
    w->wg_size = pick_wg_size(w);

    if (w->count == 0)
        return; /* zero-sized buffers are invalid in OpenCL */

    size_t groups = (w->count + w->wg_size - 1) / w->wg_size;
    w->groups = groups < MAX_REDUCE_GROUPS ? groups : MAX_REDUCE_GROUPS;

    size_t bytes = w->count * sizeof(cl_uint);
    w->buf_a = clCreateBuffer(w->context, CL_MEM_READ_ONLY, bytes, NULL, &err);
    CL_CHECK_ERR("clCreateBuffer(a)", err);
    w->buf_b = clCreateBuffer(w->context, CL_MEM_READ_ONLY, bytes, NULL, &err);
    CL_CHECK_ERR("clCreateBuffer(b)", err);
    w->buf_c = clCreateBuffer(w->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CL_CHECK_ERR("clCreateBuffer(c)", err);
    w->buf_partial =
        clCreateBuffer(w->context, CL_MEM_WRITE_ONLY, w->groups * sizeof(cl_ulong), NULL, &err);
    CL_CHECK_ERR("clCreateBuffer(partial)", err);
    w->partial = xmalloc(w->groups * sizeof(cl_ulong));

    cl_uint n = (cl_uint)w->count;
    CL_CHECK(clSetKernelArg(w->k_add, 0, sizeof(cl_mem), &w->buf_a));
    CL_CHECK(clSetKernelArg(w->k_add, 1, sizeof(cl_mem), &w->buf_b));
    CL_CHECK(clSetKernelArg(w->k_add, 2, sizeof(cl_mem), &w->buf_c));
    CL_CHECK(clSetKernelArg(w->k_add, 3, sizeof(cl_uint), &n));
    CL_CHECK(clSetKernelArg(w->k_reduce, 0, sizeof(cl_mem), &w->buf_c));
    CL_CHECK(clSetKernelArg(w->k_reduce, 1, sizeof(cl_mem), &w->buf_partial));
    CL_CHECK(clSetKernelArg(w->k_reduce, 2, w->wg_size * sizeof(cl_ulong), NULL));
    CL_CHECK(clSetKernelArg(w->k_reduce, 3, sizeof(cl_uint), &n));
}

/* Queues writes and both kernels without waiting for them, so that all
 * devices compute at the same time; collect_results() waits. */
static void start_device(struct device_work *w, const cl_uint *a, const cl_uint *b)
{
    if (w->count == 0)
        return;
    size_t bytes = w->count * sizeof(cl_uint);

    CL_CHECK(
        clEnqueueWriteBuffer(w->queue, w->buf_a, CL_TRUE, 0, bytes, a + w->offset, 0, NULL, NULL));
    /* Non-blocking on purpose: b stays alive and unmodified until clFinish. */
    CL_CHECK(
        clEnqueueWriteBuffer(w->queue, w->buf_b, CL_FALSE, 0, bytes, b + w->offset, 0, NULL, NULL));
    CL_CHECK(clFinish(w->queue));

    /* No local size: the exact chunk length needs no padding or rounding. */
    size_t global = w->count;
    CL_CHECK(
        clEnqueueNDRangeKernel(w->queue, w->k_add, 1, NULL, &global, NULL, 0, NULL, &w->add_done));

    size_t reduce_global = w->groups * w->wg_size;
    CL_CHECK(clEnqueueNDRangeKernel(w->queue, w->k_reduce, 1, NULL, &reduce_global, &w->wg_size, 0,
                                    NULL, NULL));
    CL_CHECK(clFlush(w->queue));
}

/* Waits for the device, reads its chunk of c and returns its sum. */
static cl_ulong collect_results(struct device_work *w, cl_uint *c)
{
    if (w->count == 0)
        return 0;
    CL_CHECK(clWaitForEvents(1, &w->add_done));
    CL_CHECK(clReleaseEvent(w->add_done));
    w->add_done = NULL;

    CL_CHECK(clEnqueueReadBuffer(w->queue, w->buf_c, CL_TRUE, 0, w->count * sizeof(cl_uint),
                                 c + w->offset, 0, NULL, NULL));
    CL_CHECK(clEnqueueReadBuffer(w->queue, w->buf_partial, CL_TRUE, 0, w->groups * sizeof(cl_ulong),
                                 w->partial, 0, NULL, NULL));
    cl_ulong sum = 0;
    for (size_t g = 0; g < w->groups; g++)
        sum += w->partial[g];
    return sum;
}

static void release_device(struct device_work *w)
{
    if (w->buf_partial)
        CL_CHECK(clReleaseMemObject(w->buf_partial));
    if (w->buf_c)
        CL_CHECK(clReleaseMemObject(w->buf_c));
    if (w->buf_b)
        CL_CHECK(clReleaseMemObject(w->buf_b));
    if (w->buf_a)
        CL_CHECK(clReleaseMemObject(w->buf_a));
    CL_CHECK(clReleaseKernel(w->k_reduce));
    CL_CHECK(clReleaseKernel(w->k_add));
    CL_CHECK(clReleaseProgram(w->program));
    CL_CHECK(clReleaseCommandQueue(w->queue));
    CL_CHECK(clReleaseContext(w->context));
    /* Root devices from clGetDeviceIDs are not reference counted. */
    free(w->partial);
    free(w->name);
}

int main(int argc, char **argv)
{
    uint64_t n = DEFAULT_N, seed = 1, want_devices = 0, platform = 0;
    bool platform_given = false, devices_given = false;

    /* Every option but --help takes a value, hence the step of two. */
    for (int i = 1; i < argc; i += 2) {
        const char *arg = argv[i];
        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        uint64_t *target = NULL;
        if (strcmp(arg, "-n") == 0)
            target = &n;
        else if (strcmp(arg, "--devices") == 0)
            target = &want_devices;
        else if (strcmp(arg, "--platform") == 0)
            target = &platform;
        else if (strcmp(arg, "--seed") == 0)
            target = &seed;
        if (!target) {
            fprintf(stderr, "vecadd_reduce: unknown argument '%s'\n", arg);
            usage(stderr);
            return 2;
        }
        if (i + 1 >= argc || !app_parse_u64(argv[i + 1], target)) {
            fprintf(stderr, "vecadd_reduce: %s needs a non-negative integer\n", arg);
            usage(stderr);
            return 2;
        }
        platform_given |= target == &platform;
        devices_given |= target == &want_devices;
    }
    /* The kernels index with uint, and n * UINT32_MAX fits the 64-bit sum. */
    if (n == 0 || n > UINT32_MAX) {
        fprintf(stderr, "vecadd_reduce: -n must be between 1 and %" PRIu32 "\n", UINT32_MAX);
        usage(stderr);
        return 2;
    }
    if (devices_given && want_devices == 0) {
        fprintf(stderr, "vecadd_reduce: --devices must be at least 1\n");
        usage(stderr);
        return 2;
    }

    cl_uint num_devices = 0;
    cl_device_id *ids = find_devices(platform_given, platform, &num_devices);
    if (want_devices > num_devices) {
        fprintf(stderr, "vecadd_reduce: %" PRIu64 " device(s) requested, only %u available\n",
                want_devices, num_devices);
        return 1;
    }
    if (want_devices > 0)
        num_devices = (cl_uint)want_devices;

    /* Generate the inputs on the host; the CPU reference is computed
     * separately, after the devices are done. */
    size_t len = (size_t)n;
    cl_uint *a = xmalloc(len * sizeof(cl_uint));
    cl_uint *b = xmalloc(len * sizeof(cl_uint));
    cl_uint *c = xmalloc(len * sizeof(cl_uint));
    uint64_t base = mix64(seed);
    for (size_t i = 0; i < len; i++) {
        uint64_t r = mix64(base + i);
        a[i] = (cl_uint)r;
        b[i] = (cl_uint)(r >> 32);
    }
    memset(c, 0, len * sizeof(cl_uint));

    /* Contiguous chunks, sizes differing by at most one element. */
    struct device_work *work = calloc(num_devices, sizeof(*work));
    if (!work) {
        fprintf(stderr, "vecadd_reduce: out of memory\n");
        return 1;
    }
    size_t offset = 0;
    for (cl_uint d = 0; d < num_devices; d++) {
        work[d].device = ids[d];
        work[d].offset = offset;
        work[d].count = len / num_devices + (d < len % num_devices ? 1 : 0);
        offset += work[d].count;
        setup_device(&work[d]);
        fprintf(stderr, "device %u: %s: elements [%zu, %zu), work-group %zu, %zu group(s)\n", d,
                work[d].name, work[d].offset, work[d].offset + work[d].count, work[d].wg_size,
                work[d].groups);
    }

    double t0 = now_ms();
    for (cl_uint d = 0; d < num_devices; d++)
        start_device(&work[d], a, b);
    cl_ulong total = 0;
    for (cl_uint d = 0; d < num_devices; d++)
        total += collect_results(&work[d], c);
    double t1 = now_ms();
    fprintf(stderr, "time: %.3f ms for write, add, reduce and read on %u device(s)\n", t1 - t0,
            num_devices);

    /* CPU reference: unsigned 32-bit addition wraps the same way in C and
     * OpenCL C, and the 64-bit sum cannot overflow for n <= UINT32_MAX. */
    bool ok = true;
    size_t bad = 0;
    uint64_t expect_total = 0;
    for (size_t i = 0; i < len; i++) {
        cl_uint expect = a[i] + b[i];
        expect_total += expect;
        if (c[i] != expect) {
            if (bad < 5)
                fprintf(stderr, "mismatch: c[%zu] = %u, expected %u\n", i, c[i], expect);
            bad++;
            ok = false;
        }
    }
    if (bad > 0)
        fprintf(stderr, "%zu element(s) of c are wrong\n", bad);
    if (total != expect_total) {
        fprintf(stderr, "mismatch: device sum %" PRIu64 ", expected %" PRIu64 "\n", (uint64_t)total,
                expect_total);
        ok = false;
    }

    printf("vecadd_reduce n=%" PRIu64 " seed=%" PRIu64 "\n", n, seed);
    printf("checksum c: %" PRIu64 "\n", (uint64_t)total);
    printf("first:");
    for (size_t i = 0; i < len && i < 4; i++)
        printf(" %u", c[i]);
    printf("\n");
    printf("last: %u\n", c[len - 1]);
    printf("verified: %s\n", ok ? "yes" : "no");

    for (cl_uint d = 0; d < num_devices; d++)
        release_device(&work[d]);
    free(work);
    free(ids);
    free(a);
    free(b);
    free(c);
    return ok ? 0 : 1;
}
