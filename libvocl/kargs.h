/*
 * kargs.h - the kernel-argument cache that kernel.c fills (clSetKernelArg)
 * and launch.c sends (clEnqueueNDRangeKernel); private to those two files.
 */
#ifndef VOCL_KARGS_H
#define VOCL_KARGS_H

#include "vocl.h"

struct vocl_karg {
    uint8_t set, kind; /* kind: how it travels (enum vocl_launch_arg, cl_api.def) */
    uint8_t decl;       /* enum vocl_arg_kind */
    uint8_t ro;         /* a buffer or image the kernel cannot write (const, read_only) */
    uint16_t decl_size; /* decl VALUE of a built-in type: its size; else 0 */
    /* The kernel's replicas that have this value (bit per replica): atomic,
     * as two threads may enqueue one kernel at once. */
    _Atomic uint64_t sent;
    size_t size;
    /* VOCL_LARG_MEM, VOCL_LARG_SAMPLER (NULL: NULL): not held, as a driver does not
     * retain them, so a release frees the object (and runs its destructor
     * callbacks); hold_args finds it again by address and serial. */
    struct vocl_obj *obj;
    uint64_t serial;
    uint8_t small[16]; /* VOCL_LARG_BYTES up to 16 bytes */
    uint8_t *big;      /* VOCL_LARG_BYTES above */
};

/*
 * A launch shape the driver accepted: work dimensions, local size (0: none
 * given) and whether the global size is a multiple of it.  Whether a launch
 * has a valid work-group size (reqd_work_group_size, non-uniform groups,
 * the device's limits) depends on nothing else, and a driver says so at
 * once; so the first launch of each shape waits for the proxy's answer, and
 * the later ones do not (their other errors are deferred, libvocl(7)).
 */
struct vocl_shape {
    cl_uint dim;
    bool uniform;
    size_t local[3];
    uint64_t ok; /* the kernel's replicas (bit each) that accepted it */
};
enum { SHAPES = 8 };

struct vocl_kargs {
    cl_uint n;
    pthread_mutex_t shape_lock;
    struct vocl_shape shape[SHAPES];
    unsigned nshape, next_shape; /* filled, and the next to reuse once full */
    struct vocl_karg a[];
};

#endif
