/*
 * copycost.h: what a device-to-device copy costs against the host path,
 * measured at start by the runtimes that can move data either way (the
 * all-pairs third cache level, the DAG runtime's DCR and DHDCR).
 *
 * Under VOCL a copy between devices of two proxies is a proxy-to-proxy
 * move; whether it is cheaper than a read into the application and a write
 * out of it depends on the machine (one host or a cluster, cores free or
 * not), so the runtimes measure it rather than assume it.  Ordinary OpenCL:
 * it works natively too.
 */
#ifndef VOCL_EXAMPLES_COPYCOST_H
#define VOCL_EXAMPLES_COPYCOST_H

#include <CL/cl.h>

#include <stdbool.h>
#include <stddef.h>

/* Seconds of one operation of `size` bytes, each waited for alone: the
 * fastest of the rounds timed. */
struct app_copy_cost {
    double copy;  /* clEnqueueCopyBuffer from a buffer on one device to one on the other */
    double read;  /* a device -> host memory */
    double write; /* host memory -> a device */
    /* A copy over a write, both timed in the same round (the mean of its
     * two copies over its write): the median over the rounds.  What the
     * decisions use, as a loaded machine moves both timings alike. */
    double ratio;
};

/* Times `reps` of each operation (after one untimed round, so that buffers
 * exist where they are used and queues are warm) between devices a and b
 * of `context`, on queues of its own.  Returns CL_SUCCESS or the first
 * error. */
/* The smallest of n timings.  Other work on the machine (the proxies, other
 * programs on its cores) only ever adds to a timing, so the fastest of a
 * few rounds is what each path costs without it; medians of three, on a
 * loaded 2-core machine, let one slow spell turn a decision around. */
double app_fastest(const double *v, int n);

cl_int app_copy_cost(cl_context context, cl_device_id a, cl_device_id b, size_t size, int reps,
                     struct app_copy_cost *cost);

/* Whether a copy pays in place of host transfers: it must save a quarter of
 * their time, both by the fastest of each (`fastest`: the fastest copy over
 * the fastest of what it replaces) and side by side (`side_by_side`: the
 * median of the rounds' own ratios).  On a loaded machine either alone has
 * come out below 1 while the copy cost several times the write (the
 * fastest copy timed in a quiet spell, or the writes of most rounds in busy
 * ones); the two together have not.  The margin: the timed copy is the bare
 * command; in a runtime it also brings a wait across devices (an event of
 * one queue that another waits for) and a command more to track, which
 * natively, where a copy and a write are both a memcpy, make a rewrite
 * slower however close the two timings are. */
static inline bool app_copy_pays(double fastest, double side_by_side)
{
    return fastest < 0.75 && side_by_side < 0.75;
}

#endif
