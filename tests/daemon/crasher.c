/*
 * crasher.c - a tenant whose kernel writes far outside its buffer.  On
 * PoCL's CPU device that kills the process that runs the kernel (SIGSEGV):
 * under voclproxyd --listen --isolate, its own worker.  Exits 0 if the
 * kernel ran and nothing failed (the test expects otherwise), 3 when the
 * finish failed (the device, or its proxy, was lost), 1 on a failure
 * before the kernel.
 */
#include <stdio.h>

#include "first_queue.h"

static const char *src = "kernel void boom(global int *x) { x[(size_t)1 << 40] = 1; }\n";

int main(void)
{
    cl_context ctx;
    cl_device_id dev;
    cl_int err;
    cl_command_queue q = first_queue(&ctx, &dev);
    cl_mem x = q ? clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(int), NULL, &err) : NULL;
    cl_program p = x ? clCreateProgramWithSource(ctx, 1, &src, NULL, &err) : NULL;
    if (!p || clBuildProgram(p, 1, &dev, NULL, NULL, NULL))
        return 1;
    cl_kernel k = clCreateKernel(p, "boom", &err);
    if (!k || clSetKernelArg(k, 0, sizeof(x), &x))
        return 1;
    size_t one = 1;
    printf("crasher: launching a kernel that writes 4 TiB past its buffer\n");
    fflush(stdout);
    err = clEnqueueNDRangeKernel(q, k, 1, NULL, &one, NULL, 0, NULL, NULL);
    if (err == CL_SUCCESS)
        err = clFinish(q);
    printf("crasher: clFinish: %d\n", err);
    return err == CL_SUCCESS ? 0 : 3;
}
