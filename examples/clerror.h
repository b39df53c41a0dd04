/*
 * clerror.h: the names of OpenCL error codes, for the example programs'
 * messages (common.c, vecadd_reduce.c).
 */
#ifndef VOCL_EXAMPLES_CLERROR_H
#define VOCL_EXAMPLES_CLERROR_H

#include <CL/cl.h>

/* The name of an OpenCL error code, such as "CL_INVALID_VALUE". */
const char *app_cl_error_name(cl_int err);

#endif
