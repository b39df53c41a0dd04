/*
 * vgpus.c - what a Slurm job of virtual GPUs does in the test of
 * vocl-slurm(8) (cluster.sh vgpus): its first OpenCL call, with the time
 * (CLOCK_REALTIME, to set against the sbatch before it), then its devices
 * and the node of each (cl_vocl_device_location), a write and read-back on
 * each, and then, holding its sessions, it waits until the file HOLD
 * exists (or for good, until Slurm ends the job).
 *   vgpus [HOLD]
 * Prints "first-call T", "devices N", "device I NODE" and "roundtrip ok";
 * exits 1 with a message where a call fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <CL/cl.h>
#include <CL/cl_ext_vocl.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + t.tv_nsec / 1e9;
}

#define CHECK(call)                                                         \
    do {                                                                    \
        cl_int err_ = (call);                                               \
        if (err_ != CL_SUCCESS) {                                           \
            fprintf(stderr, "vgpus: %s: error %d\n", #call, (int)err_);     \
            return 1;                                                       \
        }                                                                   \
    } while (0)

int main(int argc, char **argv)
{
    cl_platform_id platform;
    cl_uint nplat = 0, ndev = 0;
    double t0 = now();
    CHECK(clGetPlatformIDs(1, &platform, &nplat));
    CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, NULL, &ndev));
    printf("first-call %.3f (devices listed %.3f)\n", t0, now());
    printf("devices %u\n", ndev);
    cl_device_id *dev = calloc(ndev ? ndev : 1, sizeof(*dev));
    if (!dev)
        return 1;
    CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, ndev, dev, NULL));
    for (cl_uint i = 0; i < ndev; i++) {
        char node[256] = "";
        CHECK(clGetDeviceInfo(dev[i], CL_DEVICE_NODE_NAME_VOCL, sizeof(node) - 1, node, NULL));
        printf("device %u %s\n", i, node);
    }
    cl_int err;
    cl_context ctx = clCreateContext(NULL, ndev, dev, NULL, NULL, &err);
    CHECK(err);
    for (cl_uint i = 0; i < ndev; i++) {
        int out = (int)i * 7 + 1, in = 0;
        cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev[i], NULL, &err);
        CHECK(err);
        cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(int), NULL, &err);
        CHECK(err);
        CHECK(clEnqueueWriteBuffer(q, m, CL_TRUE, 0, sizeof(int), &out, 0, NULL, NULL));
        CHECK(clEnqueueReadBuffer(q, m, CL_TRUE, 0, sizeof(int), &in, 0, NULL, NULL));
        if (in != out) {
            fprintf(stderr, "vgpus: device %u gave back %d, not %d\n", i, in, out);
            return 1;
        }
        clReleaseMemObject(m);
        clReleaseCommandQueue(q);
    }
    printf("roundtrip ok\n");
    fflush(stdout);
    while (argc > 1 && access(argv[1], F_OK) != 0)
        usleep(100000);
    clReleaseContext(ctx);
    free(dev);
    return 0;
}
