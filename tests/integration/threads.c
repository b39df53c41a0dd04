/*
 * threads.c - OpenCL from several threads at once: each thread has its own
 * queue on a shared context per device, and runs buffer writes, kernels
 * and reads in a loop; every result is checked.  threads [ROUNDS] (25).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <CL/cl.h>

#define THREADS 4
#define N 4096

static const char *src = "kernel void inc(global int *x, int k) { x[get_global_id(0)] += k; }";
static cl_context ctx[2];
static cl_program prog[2];
static cl_device_id devs[2];
static int ndev, rounds = 25;

static void *worker(void *arg)
{
    int id = (int)(size_t)arg, d = id % ndev;
    cl_int err;
    long bad = 0;
    cl_command_queue q = clCreateCommandQueue(ctx[d], devs[d], 0, &err);
    cl_kernel k = clCreateKernel(prog[d], "inc", &err);
    cl_mem buf = clCreateBuffer(ctx[d], CL_MEM_READ_WRITE, N * sizeof(int), NULL, &err);
    int *h = malloc(N * sizeof(int));
    if (!q || !k || !buf || !h)
        return (void *)1;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < N; i++)
            h[i] = i + id * 1000 + r;
        int kk = id + r;
        size_t g = N;
        err = clEnqueueWriteBuffer(q, buf, CL_FALSE, 0, N * sizeof(int), h, 0, NULL, NULL);
        err |= clSetKernelArg(k, 0, sizeof(cl_mem), &buf);
        err |= clSetKernelArg(k, 1, sizeof(int), &kk);
        err |= clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 0, NULL, NULL);
        err |= clEnqueueReadBuffer(q, buf, CL_TRUE, 0, N * sizeof(int), h, 0, NULL, NULL);
        for (int i = 0; i < N; i++)
            bad += h[i] != i + id * 1000 + r + kk;
        bad += err != CL_SUCCESS;
    }
    clReleaseMemObject(buf);
    clReleaseKernel(k);
    clReleaseCommandQueue(q);
    free(h);
    return (void *)bad;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        rounds = atoi(argv[1]);
    cl_platform_id p;
    cl_uint n;
    cl_int err;
    if (clGetPlatformIDs(1, &p, NULL) || clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 2, devs, &n)) {
        fprintf(stderr, "no OpenCL device\n");
        return 1;
    }
    ndev = n > 2 ? 2 : (int)n;
    for (int d = 0; d < ndev; d++) {
        ctx[d] = clCreateContext(NULL, 1, &devs[d], NULL, NULL, &err);
        prog[d] = clCreateProgramWithSource(ctx[d], 1, &src, NULL, &err);
        if (clBuildProgram(prog[d], 1, &devs[d], NULL, NULL, NULL)) {
            fprintf(stderr, "build failed\n");
            return 1;
        }
    }
    pthread_t t[THREADS];
    for (size_t i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    long bad = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r;
        pthread_join(t[i], &r);
        bad += (long)r;
    }
    for (int d = 0; d < ndev; d++) {
        clReleaseProgram(prog[d]);
        clReleaseContext(ctx[d]);
    }
    printf("%d threads x %d rounds on %d device(s): %ld errors\n", THREADS, rounds, ndev, bad);
    return bad != 0;
}
