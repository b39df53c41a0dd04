/*
 * cl_check.h - for test programs: a failed OpenCL call ends the program
 * (exit 1) with the call, its code and where it was, on stderr.
 */
#ifndef VOCL_TEST_CL_CHECK_H
#define VOCL_TEST_CL_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                      \
    do {                                                                                 \
        cl_int rc_ = (call);                                                             \
        if (rc_ != CL_SUCCESS) {                                                         \
            fprintf(stderr, "%s:%d: %s -> %d\n", __FILE__, __LINE__, #call, rc_);        \
            exit(1);                                                                     \
        }                                                                                \
    } while (0)

#endif
