/*
 * backoff.c - polite polling, shared by libvocl and voclproxyd.
 */
#include "backoff.h"

#include <sched.h>
#include <time.h>

uint64_t vocl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void vocl_backoff(uint64_t start, long sleep_ns)
{
    uint64_t waited = vocl_now_ns() - start;
    if (waited < 50000)
        return;
    if (waited < 2000000) {
        sched_yield();
        return;
    }
    struct timespec ts = {0, sleep_ns};
    nanosleep(&ts, NULL);
}
