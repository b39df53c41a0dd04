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
    /* A long wait (a long kernel, an idle proxy) sleeps longer, up to 1 ms:
     * thousands of wake-ups a second take a share of the cores the device's
     * threads need, while the wait grows by at most 1/64 of itself. */
    long grown = (long)(waited / 64);
    if (grown > sleep_ns)
        sleep_ns = grown < 1000000 ? grown : 1000000;
    struct timespec ts = {0, sleep_ns};
    nanosleep(&ts, NULL);
}
