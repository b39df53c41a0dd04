/*
 * queries.c - answers that must hold together and match the driver's, on
 * the devices of the first platform (compare.sh runs it natively and
 * through vocl-run, and compares what it prints):
 *   - a program over every device, and one over two sub-devices of the
 *     first: CL_PROGRAM_NUM_DEVICES counts the CL_PROGRAM_DEVICES list,
 *     whose devices are the context's (through two proxies the count was
 *     one proxy's, and a list of that size was refused);
 *   - the CL_MEM_FLAGS of sub-buffers: access and host access as given,
 *     else the parent's, and the parent's host pointer flags; and the
 *     combinations the spec refuses (OpenCL-CTS api get_buffer_info).
 */
#include <CL/cl.h>
#include <stdbool.h>

#include "cl_check.h"

static const char *src = "kernel void k(global int *x) { x[0] = 1; }";

/* Whether the program's count and list agree, and (devs) its devices are
 * in devs.  (PoCL's program of sub-devices lists another device: not asked.) */
static void program_devices(cl_context ctx, cl_uint n, const cl_device_id *devs, const char *what)
{
    cl_int rc;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &rc);
    CHECK(rc);
    CHECK(clBuildProgram(p, 0, NULL, NULL, NULL, NULL));
    cl_uint count = 0;
    size_t size = 0;
    cl_device_id list[64];
    CHECK(clGetProgramInfo(p, CL_PROGRAM_NUM_DEVICES, sizeof(count), &count, NULL));
    CHECK(clGetProgramInfo(p, CL_PROGRAM_DEVICES, 0, NULL, &size));
    bool agree = count >= 1 && count <= 64 && size == count * sizeof(cl_device_id);
    bool theirs = agree;
    if (agree) {
        CHECK(clGetProgramInfo(p, CL_PROGRAM_DEVICES, size, list, NULL));
        for (cl_uint i = 0; devs && i < count; i++) {
            bool found = false;
            for (cl_uint j = 0; j < n; j++)
                found = found || list[i] == devs[j];
            theirs = theirs && found;
        }
    }
    printf("%s: the count agrees with the list: %s", what, agree ? "yes" : "no");
    if (devs)
        printf("; the list is the context's devices: %s", theirs ? "yes" : "no");
    printf("\n");
    CHECK(clReleaseProgram(p));
}

int main(void)
{
    cl_device_id devs[64];
    cl_uint n = first_devices(devs, 64);
    cl_int rc;
    cl_context ctx = clCreateContext(NULL, n, devs, NULL, NULL, &rc);
    CHECK(rc);
    program_devices(ctx, n, devs, "a program of every device");

    cl_device_partition_property equally[] = {CL_DEVICE_PARTITION_EQUALLY, 1, 0};
    cl_device_id sub[64];
    cl_uint nsub = 0;
    if (clCreateSubDevices(devs[0], equally, 64, sub, &nsub) == CL_SUCCESS && nsub >= 2) {
        cl_context sctx = clCreateContext(NULL, 2, sub, NULL, NULL, &rc);
        CHECK(rc);
        program_devices(sctx, 0, NULL, "a program of two sub-devices");
        CHECK(clReleaseContext(sctx));
        for (cl_uint i = 0; i < nsub; i++)
            CHECK(clReleaseDevice(sub[i]));
    } else {
        printf("a program of two sub-devices: no sub-devices\n");
    }

    static char host[256];
    const cl_mem_flags parents[] = {
        CL_MEM_READ_WRITE, CL_MEM_READ_ONLY | CL_MEM_USE_HOST_PTR,
        CL_MEM_WRITE_ONLY | CL_MEM_ALLOC_HOST_PTR,
        CL_MEM_READ_WRITE | CL_MEM_HOST_NO_ACCESS | CL_MEM_COPY_HOST_PTR,
        CL_MEM_READ_WRITE | CL_MEM_HOST_READ_ONLY};
    const cl_mem_flags subs[] = {0,
                                 CL_MEM_HOST_READ_ONLY,
                                 CL_MEM_READ_ONLY,
                                 CL_MEM_WRITE_ONLY | CL_MEM_HOST_WRITE_ONLY,
                                 CL_MEM_READ_WRITE,
                                 CL_MEM_USE_HOST_PTR};
    for (size_t i = 0; i < sizeof(parents) / sizeof(parents[0]); i++)
        for (size_t j = 0; j < sizeof(subs) / sizeof(subs[0]); j++) {
            bool ptr = parents[i] & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR);
            cl_mem b = clCreateBuffer(ctx, parents[i], sizeof(host), ptr ? host : NULL, &rc);
            CHECK(rc);
            cl_buffer_region r = {0, 128};
            cl_mem s = clCreateSubBuffer(b, subs[j], CL_BUFFER_CREATE_TYPE_REGION, &r, &rc);
            cl_mem_flags f = 0;
            if (rc == CL_SUCCESS) {
                CHECK(clGetMemObjectInfo(s, CL_MEM_FLAGS, sizeof(f), &f, NULL));
                CHECK(clReleaseMemObject(s));
            }
            printf("sub-buffer of a 0x%lx buffer, flags 0x%lx: %d, CL_MEM_FLAGS 0x%lx\n",
                   (unsigned long)parents[i], (unsigned long)subs[j], rc, (unsigned long)f);
            CHECK(clReleaseMemObject(b));
        }
    CHECK(clReleaseContext(ctx));
    return 0;
}
