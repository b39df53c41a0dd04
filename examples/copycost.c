/*
 * copycost.c: see copycost.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "copycost.h"

#include <stdlib.h>
#include <time.h>

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of n values (sorts them). */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), by_value);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

double app_fastest(const double *v, int n)
{
    double m = v[0];
    for (int i = 1; i < n; i++)
        m = v[i] < m ? v[i] : m;
    return m;
}

cl_int app_copy_cost(cl_context context, cl_device_id a, cl_device_id b, size_t size, int reps,
                     struct app_copy_cost *cost)
{
    enum { MAX_REPS = 64 };
    if (reps < 1 || reps > MAX_REPS || size == 0)
        return CL_INVALID_VALUE;
    double t_copy[2 * MAX_REPS], t_read[MAX_REPS], t_write[MAX_REPS], ratio[MAX_REPS];
    cl_int err = CL_SUCCESS;
    cl_command_queue qa = NULL, qb = NULL;
    cl_mem ba = NULL, bb = NULL;
    unsigned char *host = calloc(1, size);
    if (!host)
        return CL_OUT_OF_HOST_MEMORY;
    qa = clCreateCommandQueue(context, a, 0, &err);
    if (err == CL_SUCCESS)
        qb = clCreateCommandQueue(context, b, 0, &err);
    if (err == CL_SUCCESS)
        ba = clCreateBuffer(context, CL_MEM_READ_WRITE, size, NULL, &err);
    if (err == CL_SUCCESS)
        bb = clCreateBuffer(context, CL_MEM_READ_WRITE, size, NULL, &err);
    /* Round 0 is untimed.  The copies alternate direction (a to b on b's
     * queue, then b to a on a's), so that each source was last written on
     * the other device: every timed copy crosses between the devices, as
     * a runtime's does, instead of finding the data already there. */
    for (int r = 0; r <= reps && err == CL_SUCCESS; r++) {
        double t0 = seconds_now();
        err = clEnqueueWriteBuffer(qa, ba, CL_TRUE, 0, size, host, 0, NULL, NULL);
        double t1 = seconds_now();
        if (err == CL_SUCCESS)
            err = clEnqueueCopyBuffer(qb, ba, bb, 0, 0, size, 0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clFinish(qb);
        double t2 = seconds_now();
        if (err == CL_SUCCESS)
            err = clEnqueueCopyBuffer(qa, bb, ba, 0, 0, size, 0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clFinish(qa);
        double t3 = seconds_now();
        if (err == CL_SUCCESS)
            err = clEnqueueReadBuffer(qa, ba, CL_TRUE, 0, size, host, 0, NULL, NULL);
        double t4 = seconds_now();
        if (r > 0) {
            t_copy[2 * (r - 1)] = t2 - t1;
            t_copy[2 * (r - 1) + 1] = t3 - t2;
            t_write[r - 1] = t1 - t0;
            t_read[r - 1] = t4 - t3;
            /* Side by side, within a few ms: a busy spell of the machine
             * slows both, where the fastest of each may come from
             * different spells. */
            ratio[r - 1] = (t3 - t1) / 2.0 / (t1 - t0 > 1e-9 ? t1 - t0 : 1e-9);
        }
    }
    if (err == CL_SUCCESS) {
        cost->copy = app_fastest(t_copy, 2 * reps);
        cost->read = app_fastest(t_read, reps);
        cost->write = app_fastest(t_write, reps);
        cost->ratio = median(ratio, reps);
    }
    if (bb)
        clReleaseMemObject(bb);
    if (ba)
        clReleaseMemObject(ba);
    if (qb)
        clReleaseCommandQueue(qb);
    if (qa)
        clReleaseCommandQueue(qa);
    free(host);
    return err;
}
