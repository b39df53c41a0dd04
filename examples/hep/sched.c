/*
 * sched.c: dependency levels, weights and orders of the propositions, and
 * the DS/DP checkpoint policy (hep_sched.h).  Pure: no OpenCL, no threads.
 */
#include "hep_sched.h"

#include <math.h>

int hep_levels(size_t n, const uint64_t *deps, unsigned *level)
{
    /* Relax n times: a longest path has fewer than n edges, so one more
     * change after that means a cycle. */
    for (size_t i = 0; i < n; i++)
        level[i] = 0;
    for (size_t pass = 0; pass <= n; pass++) {
        bool changed = false;
        for (size_t i = 0; i < n; i++) {
            if (deps[i] >> i & 1)
                return -1;
            for (size_t j = 0; j < n; j++)
                if ((deps[i] >> j & 1) && level[i] < level[j] + 1) {
                    level[i] = level[j] + 1;
                    changed = true;
                }
        }
        if (!changed) {
            unsigned top = 0;
            for (size_t i = 0; i < n; i++)
                top = level[i] > top ? level[i] : top;
            return n ? (int)top + 1 : 0;
        }
    }
    return -1;
}

/* Time per event, less the launch overhead. */
static double event_time(const struct hep_sample *s, double overhead)
{
    double t = s->seconds - overhead * (double)s->launches;
    return t > 0.0 ? t / (double)s->in : 0.0;
}

void hep_weights(size_t n, const struct hep_sample *s, double time_weight, double *weight)
{
    double overhead = -1.0, top = 0.0;
    for (size_t i = 0; i < n; i++)
        if (s[i].in && s[i].launches) {
            double per = s[i].seconds / (double)s[i].launches;
            overhead = overhead < 0.0 || per < overhead ? per : overhead;
        }
    overhead = overhead < 0.0 ? 0.0 : overhead;
    for (size_t i = 0; i < n; i++)
        if (s[i].in) {
            double t = event_time(&s[i], overhead);
            top = t > top ? t : top;
        }
    for (size_t i = 0; i < n; i++) {
        if (!s[i].in) {
            weight[i] = 1.0;
            continue;
        }
        double keep = (double)s[i].out / (double)s[i].in;
        double t = top > 0.0 ? event_time(&s[i], overhead) / top : 0.0;
        weight[i] = (1.0 - time_weight) * keep + time_weight * t;
    }
}

int hep_order(size_t n, const uint64_t *deps, const double *weight, const unsigned *current,
              unsigned *order)
{
    uint64_t placed = 0;
    for (size_t k = 0; k < n; k++) {
        int best = -1;
        for (size_t c = 0; c < n; c++) {
            unsigned p = current[c];
            if ((placed >> p & 1) || (deps[p] & ~placed))
                continue;
            if (best < 0 || weight[p] < weight[best])
                best = (int)p;
        }
        if (best < 0)
            return -1;
        order[k] = (unsigned)best;
        placed |= (uint64_t)1 << best;
    }
    return 0;
}

bool hep_order_valid(size_t n, const uint64_t *deps, const unsigned *order)
{
    uint64_t placed = 0;
    for (size_t k = 0; k < n; k++) {
        unsigned p = order[k];
        if (p >= n || (placed >> p & 1) || (deps[p] & ~placed))
            return false;
        placed |= (uint64_t)1 << p;
    }
    return true;
}

void hep_balance_init(struct hep_balance *b, unsigned total, unsigned interval)
{
    *b = (struct hep_balance){
        .total = total,
        .ds = total / 2 ? total / 2 : 1,
        .interval = interval ? interval : 1,
        .min_interval = 1,
        .max_interval = 64,
    };
}

int hep_balance_step(struct hep_balance *b, double ds_time, double dp_time)
{
    int nt = 0;
    if (b->total >= 2 && ds_time > 0.0 && dp_time > 0.0) {
        unsigned dp = b->total - b->ds;
        if (b->dp_cap && dp > b->dp_cap)
            dp = b->dp_cap;
        double ds_rate = b->ds / ds_time, dp_rate = dp / dp_time;
        double gap = fabs(ds_rate - dp_rate) / (ds_rate > dp_rate ? ds_rate : dp_rate);
        if (gap > 0.10) {
            /* ds / ds_time = (total - ds) / dp_time */
            double target = b->total * ds_time / (ds_time + dp_time);
            if (b->dp_cap && b->total - target > b->dp_cap)
                target = b->total - b->dp_cap;
            long want = lround(target);
            want = want < 1 ? 1 : want > (long)b->total - 1 ? (long)b->total - 1 : want;
            nt = (int)(want - (long)b->ds);
        }
    }
    b->ds = (unsigned)((int)b->ds + nt);
    if (b->have_last) {
        if (nt == 0 && b->last_shift == 0 && b->interval < b->max_interval)
            b->interval *= 2;
        else if (nt != 0 && b->last_shift != 0 && b->interval > b->min_interval)
            b->interval /= 2;
    }
    b->last_shift = nt;
    b->have_last = true;
    return nt;
}
