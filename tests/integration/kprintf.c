/*
 * kprintf.c - kernel printf, interleaved with the host's output: the lines
 * a kernel prints must be on stdout, in order, by the time clFinish or
 * clWaitForEvents returns, on every device (compare.sh: native vs VOCL).
 * The program's own stdout (fd 1) goes to a file, printed at the end: a
 * line printed anywhere else (a proxy's stdout) is not in it.
 */
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cl_check.h"

static const char *src =
    "__kernel void hello(int round, int dev)\n"
    "{ printf(\"round %d device %d: %s %f\\n\", round, dev, \"hello\", 0.5f * round); }\n";

int main(void)
{
    cl_platform_id plat;
    cl_device_id dev[8];
    cl_uint ndev;
    cl_int err;
    FILE *mine = tmpfile();
    int saved = dup(STDOUT_FILENO);
    if (!mine || saved < 0 || dup2(fileno(mine), STDOUT_FILENO) < 0)
        return 1;
    CHECK(clGetPlatformIDs(1, &plat, NULL));
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 8, dev, &ndev));
    cl_context ctx = clCreateContext(NULL, ndev, dev, NULL, NULL, &err);
    CHECK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 0, NULL, NULL, NULL, NULL));
    cl_kernel k = clCreateKernel(prog, "hello", &err);
    CHECK(err);
    size_t one = 1;
    for (int round = 0; round < 3; round++) {
        for (cl_uint d = 0; d < ndev; d++) {
            cl_command_queue q = clCreateCommandQueue(ctx, dev[d], 0, &err);
            CHECK(err);
            int di = (int)d;
            printf("host: round %d, launching on device %d\n", round, di);
            fflush(stdout);
            CHECK(clSetKernelArg(k, 0, sizeof(int), &round));
            CHECK(clSetKernelArg(k, 1, sizeof(int), &di));
            cl_event ev;
            CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &one, NULL, 0, NULL, &ev));
            /* Odd rounds wait on the event, even ones finish the queue. */
            if (round % 2)
                CHECK(clWaitForEvents(1, &ev));
            else
                CHECK(clFinish(q));
            printf("host: round %d, device %d done\n", round, di);
            fflush(stdout);
            clReleaseEvent(ev);
            clReleaseCommandQueue(q);
        }
    }
    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseContext(ctx);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    rewind(mine);
    char line[256];
    int n = 0;
    while (fgets(line, sizeof(line), mine))
        printf("%2d| %s", ++n, line);
    return 0;
}
