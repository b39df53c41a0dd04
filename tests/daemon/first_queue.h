/*
 * first_queue.h - for the daemon tests' small programs: a context and an
 * in-order queue on the first device of the first platform.  The queue,
 * with its context in *ctx and its device in *dev; NULL on any failure.
 */
#ifndef VOCL_TESTS_FIRST_QUEUE_H
#define VOCL_TESTS_FIRST_QUEUE_H

#include <CL/cl.h>

static inline cl_command_queue first_queue(cl_context *ctx, cl_device_id *dev)
{
    cl_platform_id plat;
    cl_int err;
    if (clGetPlatformIDs(1, &plat, NULL) || clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, dev, NULL))
        return NULL;
    *ctx = clCreateContext(NULL, 1, dev, NULL, NULL, &err);
    return *ctx ? clCreateCommandQueue(*ctx, *dev, 0, &err) : NULL;
}

#endif
