/*
 * backoff.c - polite polling, shared by libvocl and voclproxyd.
 */
#include "backoff.h"
#include "log.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#define SPIN_NS 50000
#define SHORT_SPIN_NS 5000 /* an idle proxy's, and on a crowded node */
#define YIELD_NS      2000000
#define NAP_EVERY     16 /* an idle proxy's yields between naps */
#define NAP_NS        20000

static atomic_uint_fast64_t spin_ns = SPIN_NS, yield_ns = YIELD_NS;
static atomic_bool crowded;

static long env_count(const char *name)
{
    const char *v = getenv(name);
    char *end;
    long n = v && *v ? strtol(v, &end, 10) : -1;
    return n >= 0 && v && *end == 0 ? n : -1;
}

/* The job's ranks on this node (-1: not said) and this process's cores. */
static void ranks_and_cores(long *ranks, long *cores)
{
    *ranks = env_count("MPI_LOCALNRANKS");
    if (*ranks < 0)
        *ranks = env_count("OMPI_COMM_WORLD_LOCAL_SIZE");
    cpu_set_t set;
    *cores = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 0;
}

bool vocl_backoff_node_busy(void)
{
    long ranks, cores;
    ranks_and_cores(&ranks, &cores);
    return ranks > cores && cores > 0;
}

void vocl_backoff_setup(void)
{
    atomic_store(&spin_ns, SPIN_NS);
    atomic_store(&yield_ns, YIELD_NS);
    atomic_store(&crowded, false);
    long ranks, cores;
    ranks_and_cores(&ranks, &cores);
    if (ranks > 2 * cores && cores > 0) {
        atomic_store(&spin_ns, SHORT_SPIN_NS);
        atomic_store(&yield_ns, 0);
        atomic_store(&crowded, true);
        vocl_info("%ld ranks of the job on this node's %ld cores: waits sleep after %d us", ranks,
                  cores, SHORT_SPIN_NS / 1000);
    } else if (ranks > cores && cores > 0) {
        atomic_store(&spin_ns, 0);
        vocl_info("%ld ranks of the job on this node's %ld cores: waits yield at once", ranks,
                  cores);
    }
    long us = env_count("VOCL_YIELD_US");
    if (us >= 0) {
        atomic_store(&yield_ns, (uint64_t)(us < 1000000 ? us : 1000000) * 1000);
        vocl_info("waits yield until %ld us, then sleep (VOCL_YIELD_US)", us);
    }
}

bool vocl_backoff_crowded(void)
{
    return atomic_load_explicit(&crowded, memory_order_relaxed);
}

uint64_t vocl_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * A thread that only yields may keep its core for milliseconds: Linux's
 * CFS gives the core back to the yielder while its virtual runtime is far
 * behind that of the thread waiting there, and an application that polls
 * for its replies has run far longer than an idle proxy.  On 2 cores with
 * two proxies, the application saw a read's data 2.2 ms after the proxy
 * had sent it (when the proxy's 2 ms of yielding ended), in about one run
 * of kmer-assemble in three.  So an idle proxy (nap) sleeps NAP_NS in
 * place of every NAP_EVERY-th yield.
 */
static long step(uint64_t start, long sleep_ns, uint64_t spin, bool nap)
{
    uint64_t waited = vocl_now_ns() - start;
    if (waited < spin)
        return 0;
    if (waited < atomic_load_explicit(&yield_ns, memory_order_relaxed)) {
        static _Thread_local unsigned yields;
        if (nap && ++yields % NAP_EVERY == 0)
            return NAP_NS;
        sched_yield();
        return 0;
    }
    /* A long wait (a long kernel, an idle proxy) sleeps longer, up to 1 ms:
     * thousands of wake-ups a second take a share of the cores the device's
     * threads need, while the wait grows by at most 1/64 of itself. */
    long grown = (long)(waited / 64);
    if (grown > sleep_ns)
        sleep_ns = grown < 1000000 ? grown : 1000000;
    return sleep_ns;
}

static void sleep_for(long ns)
{
    if (ns)
        nanosleep(&(struct timespec){0, ns}, NULL);
}

long vocl_backoff_step(uint64_t start, long sleep_ns)
{
    return step(start, sleep_ns, atomic_load_explicit(&spin_ns, memory_order_relaxed), false);
}

void vocl_backoff(uint64_t start, long sleep_ns)
{
    sleep_for(vocl_backoff_step(start, sleep_ns));
}

long vocl_backoff_idle_step(uint64_t start, long sleep_ns)
{
    uint64_t spin = atomic_load_explicit(&spin_ns, memory_order_relaxed);
    return step(start, sleep_ns, spin < SHORT_SPIN_NS ? spin : SHORT_SPIN_NS, true);
}

void vocl_backoff_idle(uint64_t start, long sleep_ns)
{
    sleep_for(vocl_backoff_idle_step(start, sleep_ns));
}
