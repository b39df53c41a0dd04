/*
 * native_kernel.c - what a remote device says about native kernels: it
 * cannot run them (CL_DEVICE_EXECUTION_CAPABILITIES), and
 * clEnqueueNativeKernel fails with CL_INVALID_OPERATION, as the spec has it
 * for such a device.  Checked by native_kernel.sh, which also wants the one
 * line on stderr that says why.
 */
#include <CL/cl.h>
#include <stdio.h>

static void CL_CALLBACK fn(void *args)
{
    (void)args;
}

int main(void)
{
    cl_platform_id plat;
    cl_device_id dev;
    cl_int err;
    cl_device_exec_capabilities caps = 0;
    if (clGetPlatformIDs(1, &plat, NULL) || clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL))
        return 1;
    clGetDeviceInfo(dev, CL_DEVICE_EXECUTION_CAPABILITIES, sizeof(caps), &caps, NULL);
    printf("runs kernels: %s, native kernels: %s\n", caps & CL_EXEC_KERNEL ? "yes" : "no",
           caps & CL_EXEC_NATIVE_KERNEL ? "yes" : "no");
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &err);
    int arg = 0;
    for (int i = 0; i < 2; i++)
        printf("clEnqueueNativeKernel: %d\n",
               clEnqueueNativeKernel(q, fn, &arg, sizeof(arg), 0, NULL, NULL, 0, NULL, NULL));
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    return 0;
}
