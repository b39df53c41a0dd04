/*
 * read-paths.c - which way of reading 4 bytes from a device buffer completes
 * soonest, natively: blocking, non-blocking into malloc'd or pinned memory
 * (polled or waited for), and a map.  Each way is timed 301 times; the
 * median is printed.  Built with `cc -O2 read-paths.c -lOpenCL`; its output
 * on the H200 machine is output.txt.  (Tidied into a table after those
 * runs: the same calls, in the same order.)
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 301

static cl_command_queue q;
static cl_mem buf;
static void *host, *pinned, *mapped;

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Flushes the queue and spins until e completes. */
static void poll_event(cl_event e)
{
    cl_int st;
    clFlush(q);
    do
        clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL);
    while (st > CL_COMPLETE);
    clReleaseEvent(e);
}

static void read_blocking_malloc(void)
{
    clEnqueueReadBuffer(q, buf, CL_TRUE, 0, 4, host, 0, NULL, NULL);
}
static void read_blocking_pinned(void)
{
    clEnqueueReadBuffer(q, buf, CL_TRUE, 0, 4, pinned, 0, NULL, NULL);
}
static void write_blocking_malloc(void)
{
    clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, 4, host, 0, NULL, NULL);
}

static void read_polled(void *dst)
{
    cl_event e;
    clEnqueueReadBuffer(q, buf, CL_FALSE, 0, 4, dst, 0, NULL, &e);
    poll_event(e);
}
static void read_polled_malloc(void)
{
    read_polled(host);
}
static void read_polled_pinned(void)
{
    read_polled(pinned);
}

static void read_waited_malloc(void)
{
    cl_event e;
    clEnqueueReadBuffer(q, buf, CL_FALSE, 0, 4, host, 0, NULL, &e);
    clWaitForEvents(1, &e);
    clReleaseEvent(e);
}

static void write_polled_malloc(void)
{
    cl_event e;
    clEnqueueWriteBuffer(q, buf, CL_FALSE, 0, 4, host, 0, NULL, &e);
    poll_event(e);
}

static void map_polled(void)
{
    cl_event e;
    cl_int err;
    mapped = clEnqueueMapBuffer(q, buf, CL_FALSE, CL_MAP_READ, 0, 4, 0, NULL, &e, &err);
    poll_event(e);
}

static void unmap(void) /* (untimed) */
{
    clEnqueueUnmapMemObject(q, buf, mapped, 0, NULL, NULL);
    clFinish(q);
}

static const struct {
    const char *name;
    void (*timed)(void), (*after)(void);
} ways[] = {
    {"A blocking read malloc", read_blocking_malloc, NULL},
    {"B async read malloc + poll", read_polled_malloc, NULL},
    {"C async read pinned + poll", read_polled_pinned, NULL},
    {"D async read malloc + wait", read_waited_malloc, NULL},
    {"E blocking read pinned", read_blocking_pinned, NULL},
    {"F blocking write malloc", write_blocking_malloc, NULL},
    {"G async write malloc + poll", write_polled_malloc, NULL},
    {"H async map 4B + poll", map_polled, unmap},
    {"B again", read_polled_malloc, NULL},
};

int main(void)
{
    cl_platform_id p;
    cl_device_id d;
    cl_int err;
    clGetPlatformIDs(1, &p, NULL);
    clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 1, &d, NULL);
    cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
    q = clCreateCommandQueue(c, d, 0, &err);
    buf = clCreateBuffer(c, CL_MEM_READ_WRITE, 4096, NULL, &err);
    cl_mem pin = clCreateBuffer(c, CL_MEM_ALLOC_HOST_PTR, 4096, NULL, &err);
    pinned = clEnqueueMapBuffer(q, pin, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, 4096, 0, NULL, NULL,
                                &err);
    host = malloc(4096);
    for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
        double v[N];
        for (int i = 0; i < N; i++) {
            double t = now_us();
            ways[w].timed();
            v[i] = now_us() - t;
            if (ways[w].after)
                ways[w].after();
        }
        qsort(v, N, sizeof(v[0]), cmp);
        printf("%-29s %6.2f us\n", ways[w].name, v[N / 2]);
    }
    return 0;
}
