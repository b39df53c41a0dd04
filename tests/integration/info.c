/*
 * info.c - answers to info queries, asked many times and across changes.
 *
 * libvocl keeps the answers that cannot change (libvocl/info.c).  This
 * prints answers that must stay right when kept: each asked twice, size
 * first and then value, as PyOpenCL asks; answers keyed by a device or an
 * argument index, which must not be mixed up; and a program's build
 * information across two builds of one program, which must not be kept
 * from the first.  compare.sh checks the output against the native run's.
 *
 *   info [--repeat N]   N: also ask the device's name N more times
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl_check.h"

static const char *src =
    "#ifdef BROKEN\n"
    "this does not compile\n"
    "#endif\n"
    "__kernel void scale(__global float *out, __local float *tmp, float factor)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    tmp[get_local_id(0)] = out[i];\n"
    "    out[i] = tmp[get_local_id(0)] * factor;\n"
    "}\n";

static int failures;

static void expect(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "FAIL: %s\n", what);
        failures++;
    }
}

/* A device's answer, asked size first, then value, twice: both times must
 * agree.  Returned malloc'd, with its size in *n. */
static void *device_info(cl_device_id d, cl_device_info p, size_t *n)
{
    void *v[2];
    size_t len[2];
    for (int t = 0; t < 2; t++) {
        CHECK(clGetDeviceInfo(d, p, 0, NULL, &len[t]));
        v[t] = calloc(1, len[t] + 1);
        CHECK(clGetDeviceInfo(d, p, len[t], v[t], NULL));
    }
    expect(len[0] == len[1] && !memcmp(v[0], v[1], len[0]), "device answer changed");
    free(v[1]);
    *n = len[0];
    return v[0];
}

static char *build_info_str(cl_program prog, cl_device_id d, cl_program_build_info p)
{
    size_t n;
    CHECK(clGetProgramBuildInfo(prog, d, p, 0, NULL, &n));
    char *s = calloc(1, n + 1);
    CHECK(clGetProgramBuildInfo(prog, d, p, n, s, NULL));
    return s;
}

static cl_build_status build_status(cl_program prog, cl_device_id d)
{
    cl_build_status st;
    CHECK(clGetProgramBuildInfo(prog, d, CL_PROGRAM_BUILD_STATUS, sizeof(st), &st, NULL));
    return st;
}

static void print_build(cl_program prog, cl_device_id d, const char *when)
{
    char *opts = build_info_str(prog, d, CL_PROGRAM_BUILD_OPTIONS);
    char *log = build_info_str(prog, d, CL_PROGRAM_BUILD_LOG);
    cl_build_status st = build_status(prog, d);
    printf("%s: status %d, options '%s', log %s\n", when, (int)st, opts,
           strlen(log) ? "present" : "empty");
    free(opts);
    free(log);
}

int main(int argc, char **argv)
{
    long repeat = argc == 3 && !strcmp(argv[1], "--repeat") ? atol(argv[2]) : 0;
    cl_device_id dev;
    if (first_devices(&dev, 1) < 1) {
        fprintf(stderr, "no device\n");
        return 1;
    }
    size_t n;
    char *name = device_info(dev, CL_DEVICE_NAME, &n);
    size_t *wg = device_info(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, &n);
    cl_uint *dims = device_info(dev, CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS, &n);
    printf("device: a name of %zu bytes, work-group size %zu, %u dimensions\n", strlen(name),
           *wg, *dims);
    /* The platform's profile and version come from the native platform (through VOCL). */
    cl_platform_id plat;
    char profile[256], version[1024];
    CHECK(clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof(plat), &plat, NULL));
    CHECK(clGetPlatformInfo(plat, CL_PLATFORM_PROFILE, sizeof(profile), profile, NULL));
    CHECK(clGetPlatformInfo(plat, CL_PLATFORM_VERSION, sizeof(version), version, NULL));
    printf("platform: %s\n", profile);
    for (long i = 0; i < repeat; i++) {
        char again[1024];
        CHECK(clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(again), again, NULL));
        expect(!strcmp(again, name), "the device's name changed");
        CHECK(clGetPlatformInfo(plat, CL_PLATFORM_PROFILE, sizeof(again), again, NULL));
        expect(!strcmp(again, profile), "the platform's profile changed");
        CHECK(clGetPlatformInfo(plat, CL_PLATFORM_VERSION, sizeof(again), again, NULL));
        expect(!strcmp(again, version), "the platform's version changed");
    }
    free(wg);
    free(dims);

    cl_context ctx = context_on(dev);
    cl_int rc;

    /* One program built twice: its build information is the last build's. */
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &rc);
    CHECK(rc);
    rc = clBuildProgram(prog, 1, &dev, "-DBROKEN", NULL, NULL);
    printf("first build (broken): %s\n", rc == CL_BUILD_PROGRAM_FAILURE ? "failed" : "did not fail");
    print_build(prog, dev, "after the first build");
    print_build(prog, dev, "asked again");
    CHECK(clBuildProgram(prog, 1, &dev, "-cl-kernel-arg-info", NULL, NULL));
    print_build(prog, dev, "after the second build");
    expect(build_status(prog, dev) == CL_BUILD_SUCCESS, "the second build's status");

    cl_kernel k = clCreateKernel(prog, "scale", &rc);
    CHECK(rc);
    char fname[64];
    cl_uint nargs;
    CHECK(clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, sizeof(fname), fname, NULL));
    CHECK(clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof(nargs), &nargs, NULL));
    printf("kernel %s, %u arguments:", fname, nargs);
    for (cl_uint a = 0; a < nargs; a++) { /* each index its own answer */
        char arg[64];
        CHECK(clGetKernelArgInfo(k, a, CL_KERNEL_ARG_NAME, sizeof(arg), arg, NULL));
        printf(" %s", arg);
    }
    printf("\n");

    /* Keyed by device: the work-group size of the kernel on dev. */
    size_t kwg[2];
    for (int t = 0; t < 2; t++)
        CHECK(clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof(kwg[t]),
                                       &kwg[t], NULL));
    printf("kernel work-group size %zu\n", kwg[0]);
    expect(kwg[0] == kwg[1], "the kernel's work-group size changed");

    /* Two buffers: each its own size; a sub-buffer its offset. */
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 1024, NULL, &rc);
    CHECK(rc);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_ONLY, 4096, NULL, &rc);
    CHECK(rc);
    cl_buffer_region region = {256, 512};
    cl_mem sub = clCreateSubBuffer(a, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &rc);
    CHECK(rc);
    size_t sa, sb, ss, off;
    for (int t = 0; t < 2; t++) {
        CHECK(clGetMemObjectInfo(a, CL_MEM_SIZE, sizeof(sa), &sa, NULL));
        CHECK(clGetMemObjectInfo(b, CL_MEM_SIZE, sizeof(sb), &sb, NULL));
        CHECK(clGetMemObjectInfo(sub, CL_MEM_SIZE, sizeof(ss), &ss, NULL));
        CHECK(clGetMemObjectInfo(sub, CL_MEM_OFFSET, sizeof(off), &off, NULL));
    }
    printf("buffers of %zu and %zu bytes; a sub-buffer of %zu at %zu\n", sa, sb, ss, off);

    /* Too small a buffer for a kept answer is still an error. */
    char tiny[2];
    expect(clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(tiny), tiny, NULL) == CL_INVALID_VALUE,
           "a kept answer into too small a buffer");

    CHECK(clReleaseMemObject(sub));
    CHECK(clReleaseMemObject(a));
    CHECK(clReleaseMemObject(b));
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseProgram(prog));
    CHECK(clReleaseContext(ctx));
    free(name);
    printf("%s\n", failures ? "FAILED" : "done");
    return failures != 0;
}
