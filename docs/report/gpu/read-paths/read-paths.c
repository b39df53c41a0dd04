/*
 * read-paths.c - which way of reading 4 bytes from a device buffer completes
 * soonest, natively: blocking, non-blocking into malloc'd or pinned memory
 * (polled or waited for), and a map.  Built with `cc -O2 read-paths.c
 * -lOpenCL`; its output on the H200 machine is output.txt.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}
static int cmp(const void *a, const void *b)
{
    double x = *(double *)a, y = *(double *)b;
    return (x > y) - (x < y);
}
#define N 301
static double med(double *v)
{
    qsort(v, N, sizeof(double), cmp);
    return v[N / 2];
}
static void poll_ev(cl_event e)
{
    cl_int st;
    do
        clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st, NULL);
    while (st > CL_COMPLETE);
    clReleaseEvent(e);
}
int main(void)
{
    cl_platform_id p;
    cl_device_id d;
    cl_int err;
    clGetPlatformIDs(1, &p, NULL);
    clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, NULL);
    cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueue(c, d, 0, &err);
    cl_mem b = clCreateBuffer(c, CL_MEM_READ_WRITE, 4096, NULL, &err);
    cl_mem pin = clCreateBuffer(c, CL_MEM_ALLOC_HOST_PTR, 4096, NULL, &err);
    void *pp = clEnqueueMapBuffer(q, pin, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, 4096, 0, NULL,
                                  NULL, &err);
    char *h = malloc(4096);
    double v[N];
    cl_event e;
    for (int i = 0; i < N; i++) {
        double t = now();
        clEnqueueReadBuffer(q, b, CL_TRUE, 0, 4, h, 0, NULL, NULL);
        v[i] = now() - t;
    }
    printf("A blocking read malloc        %6.2f us\n", med(v));
    for (int i = 0; i < N; i++) {
        double t = now();
        clEnqueueReadBuffer(q, b, CL_FALSE, 0, 4, h, 0, NULL, &e);
        clFlush(q);
        poll_ev(e);
        v[i] = now() - t;
    }
    printf("B async read malloc + poll    %6.2f us\n", med(v));
    for (int i = 0; i < N; i++) {
        double t = now();
        clEnqueueReadBuffer(q, b, CL_FALSE, 0, 4, pp, 0, NULL, &e);
        clFlush(q);
        poll_ev(e);
        v[i] = now() - t;
    }
    printf("C async read pinned + poll    %6.2f us\n", med(v));
    for (int i = 0; i < N; i++) {
        double t = now();
        clEnqueueReadBuffer(q, b, CL_FALSE, 0, 4, h, 0, NULL, &e);
        clWaitForEvents(1, &e);
        clReleaseEvent(e);
        v[i] = now() - t;
    }
    printf("D async read malloc + wait    %6.2f us\n", med(v));
    for (int i = 0; i < N; i++) {
        double t = now();
        clEnqueueReadBuffer(q, b, CL_TRUE, 0, 4, pp, 0, NULL, NULL);
        v[i] = now() - t;
    }
    printf("E blocking read pinned        %6.2f us\n", med(v));
    for (int i = 0; i < N; i++) {
        double t = now();
        clEnqueueWriteBuffer(q, b, CL_TRUE, 0, 4, h, 0, NULL, NULL);
        v[i] = now() - t;
    }
    printf("F blocking write malloc       %6.2f us\n", med(v));
    for (int i = 0; i < N; i++) {
        double t = now();
        clEnqueueWriteBuffer(q, b, CL_FALSE, 0, 4, h, 0, NULL, &e);
        clFlush(q);
        poll_ev(e);
        v[i] = now() - t;
    }
    printf("G async write malloc + poll   %6.2f us\n", med(v));
    for (int i = 0; i < N; i++) {
        double t = now();
        void *m = clEnqueueMapBuffer(q, b, CL_FALSE, CL_MAP_READ, 0, 4, 0, NULL, &e, &err);
        clFlush(q);
        poll_ev(e);
        v[i] = now() - t;
        clEnqueueUnmapMemObject(q, b, m, 0, NULL, NULL);
        clFinish(q);
    }
    printf("H async map 4B + poll         %6.2f us\n", med(v));
    for (int i = 0; i < N; i++) {
        double t = now();
        clEnqueueReadBuffer(q, b, CL_FALSE, 0, 4, h, 0, NULL, &e);
        clFlush(q);
        poll_ev(e);
        v[i] = now() - t;
    }
    printf("B again                       %6.2f us\n", med(v));
    return 0;
}
