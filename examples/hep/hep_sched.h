/*
 * hep_sched.h: the pure decisions of the HEP runtime (no OpenCL, no threads):
 * dependency levels, weights and the order of the propositions, and the
 * checkpoint policy that splits host threads between data setup (DS) and
 * processing (DP).  Unit-tested by test_sched.c.
 */
#ifndef HEP_SCHED_H
#define HEP_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* deps[i]: bit j set when proposition i depends on proposition j. */

/* level[i] = 0 for no dependencies, else 1 + the largest level of a
 * dependency.  Returns -1 on a cycle (or a proposition depending on
 * itself), else the number of levels. */
int hep_levels(size_t n, const uint64_t *deps, unsigned *level);

/* What a proposition did since the run began. */
struct hep_sample {
    uint64_t in, out;
    double seconds;    /* kernel time */
    uint64_t launches; /* kernels run: each costs a fixed overhead too */
};

/* weight[i] = (1 - time_weight) * keep ratio + time_weight * (time per event
 * / the largest time per event); the lightest runs first.  A proposition
 * that has seen no event weighs 1, the most a weight can be.  The time per
 * event leaves out the cost of a launch, estimated as the least time per
 * launch of any proposition: a cheap proposition late in the pipeline sees
 * few events per launch and would otherwise look heavy. */
void hep_weights(size_t n, const struct hep_sample *s, double time_weight, double *weight);

/* The next order: repeatedly the lightest proposition whose dependencies
 * all come before it (ties keep the order of `current`).  A proposition may
 * so run later than its level, never before a dependency.  Returns -1 if
 * `deps` has a cycle. */
int hep_order(size_t n, const uint64_t *deps, const double *weight, const unsigned *current,
              unsigned *order);

/* Whether `order` is a permutation of 0..n-1 with every dependency first. */
bool hep_order_valid(size_t n, const uint64_t *deps, const unsigned *order);

/* The DS/DP split, after HEP-Frame 3.2. */
struct hep_balance {
    unsigned total;     /* threads: DS + DP */
    unsigned ds;        /* DS threads now: 1..total-1 while reading */
    unsigned interval;  /* batches between checkpoints */
    unsigned min_interval, max_interval;
    unsigned dp_cap;    /* DP threads that can be busy at once (device slots); 0: any */
    int last_shift;     /* nt of the previous checkpoint */
    bool have_last;
};

void hep_balance_init(struct hep_balance *b, unsigned total, unsigned interval);

/* A checkpoint: ds_time and dp_time are the seconds one thread of each side
 * took per batch since the last one.  Shifts threads towards the slower
 * side, so that both sides move batches at the same rate (ds / ds_time =
 * dp / dp_time), keeping at least one on each; a difference within 10 % is
 * balanced.  DP threads beyond dp_cap would only wait for a device slot,
 * so they count for nothing and go to DS.  Doubles the interval after two checkpoints in a row without a
 * shift, halves it after two in a row with one.  Returns the shift nt
 * (positive: more DS threads). */
int hep_balance_step(struct hep_balance *b, double ds_time, double dp_time);

#endif
