/*
 * test_backoff.c - what a wait does between its polls (common/backoff.c):
 * it polls on for 50 us (an idle proxy's, vocl_backoff_idle: 5 us), yields
 * until 2 ms and then sleeps; on a busy node (more ranks of the job than
 * cores) it yields at once; on a crowded node (more than twice the cores)
 * every wait polls for 5 us and then sleeps at once;
 * VOCL_YIELD_US sets the yield; an idle proxy naps 20 us in place of every
 * 16th yield.  sched_yield and nanosleep are wrapped
 * (-Wl,--wrap): counted, and nothing sleeps.
 */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "backoff.h"

static int yields, sleeps;
static long slept_ns;

int __wrap_sched_yield(void);
int __wrap_sched_yield(void)
{
    yields++;
    return 0;
}

int __wrap_nanosleep(const struct timespec *req, struct timespec *rem);
int __wrap_nanosleep(const struct timespec *req, struct timespec *rem)
{
    (void)rem;
    sleeps++;
    slept_ns = req->tv_nsec + req->tv_sec * 1000000000L;
    return 0;
}

static bool idle; /* the wait is an idle proxy's (vocl_backoff_idle) */

/* What one call does in a wait that began waited_us ago: 'p' polls on,
 * 'y' yields, 's' sleeps. */
static char step_once(long waited_us)
{
    yields = sleeps = 0;
    uint64_t start = vocl_now_ns() - (uint64_t)waited_us * 1000;
    if (idle)
        vocl_backoff_idle(start, 100000);
    else
        vocl_backoff(start, 100000);
    assert_true(yields + sleeps <= 1);
    return yields ? 'y' : sleeps ? 's' : 'p';
}

/* The earliest stage of up to 10 tries.  Time only grows between the two
 * clock readings: a test preempted before a boundary would see the next
 * stage once, not ten times. */
static char step(long waited_us)
{
    static const char stages[] = "pys"; /* in the order a wait goes through them */
    int earliest = 2;
    for (int i = 0; i < 10 && earliest > 0; i++) {
        int at = (int)(strchr(stages, step_once(waited_us)) - stages);
        earliest = at < earliest ? at : earliest;
    }
    return stages[earliest];
}

/* The job's ranks on this node, as MPICH tells them: as many as the
 * cores (SPARE), twice as many (BUSY), or one more (CROWDED). */
enum node { SPARE, BUSY, CROWDED };

static void ranks_here(enum node kind)
{
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof(set), &set), 0);
    int cores = CPU_COUNT(&set);
    char n[32];
    snprintf(n, sizeof(n), "%d", kind == SPARE ? cores : kind == BUSY ? 2 * cores : 2 * cores + 1);
    setenv("MPI_LOCALNRANKS", n, 1);
    unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    unsetenv("VOCL_YIELD_US");
}

static void uncrowded_polls_yields_then_sleeps(void **state)
{
    (void)state;
    ranks_here(SPARE);
    vocl_backoff_setup();
    assert_int_equal(step(10), 'p');
    assert_int_equal(step(40), 'p');
    assert_int_equal(step(60), 'y');
    assert_int_equal(step(1900), 'y');
    assert_int_equal(step(2100), 's');
    assert_int_equal(slept_ns, 100000);
    assert_int_equal(step(32000), 's'); /* a long wait sleeps 1/64 of it, */
    assert_true(slept_ns >= 500000 && slept_ns < 510000);
    assert_int_equal(step(640000), 's'); /* at most 1 ms */
    assert_int_equal(slept_ns, 1000000);
}

static void an_idle_proxy_yields_after_5us(void **state)
{
    (void)state;
    ranks_here(SPARE);
    vocl_backoff_setup();
    idle = true;
    assert_int_equal(step(10), 'y');
    assert_int_equal(step(1900), 'y');
    assert_int_equal(step(2100), 's');
    ranks_here(CROWDED);
    vocl_backoff_setup();
    assert_int_equal(step(10), 's');
    idle = false;
}

/* Of 32 calls in the yield stage, how many napped (slept 20 us); a call
 * preempted into the sleep stage is not counted, and another made. */
static int naps_in_32(void)
{
    int naps = 0, calls = 0;
    for (int tries = 0; calls < 32 && tries < 100; tries++) {
        char c = step_once(1000);
        if (c == 's' && slept_ns != 20000)
            continue; /* (preempted past the yield stage: a long wait's sleep) */
        calls++;
        naps += c == 's';
    }
    assert_int_equal(calls, 32);
    return naps;
}

static void an_idle_proxy_naps_every_16th_yield(void **state)
{
    (void)state;
    ranks_here(SPARE);
    vocl_backoff_setup();
    idle = true;
    assert_int_equal(naps_in_32(), 2);
    idle = false;
    assert_int_equal(naps_in_32(), 0); /* an application's wait yields */
}

static void crowded_sleeps_after_5us(void **state)
{
    (void)state;
    ranks_here(CROWDED);
    vocl_backoff_setup();
    assert_int_equal(step(10), 's');
    assert_int_equal(step(1900), 's');
    /* The setting is the node's, not kept from before. */
    ranks_here(SPARE);
    vocl_backoff_setup();
    assert_int_equal(step(10), 'p');
    assert_int_equal(step(60), 'y');
}

static void busy_yields_at_once(void **state)
{
    (void)state;
    ranks_here(BUSY);
    vocl_backoff_setup();
    assert_int_equal(step(1), 'y');
    assert_int_equal(step(1900), 'y');
    assert_int_equal(step(2100), 's');
    idle = true; /* an idle proxy too, and it still naps */
    assert_int_equal(step(1), 'y');
    assert_int_equal(naps_in_32(), 2);
    idle = false;
    ranks_here(SPARE);
    vocl_backoff_setup();
    assert_int_equal(step(10), 'p');
}

static void node_busy_is_more_ranks_than_cores(void **state)
{
    (void)state;
    ranks_here(SPARE);
    assert_false(vocl_backoff_node_busy());
    ranks_here(BUSY);
    assert_true(vocl_backoff_node_busy());
    ranks_here(CROWDED);
    assert_true(vocl_backoff_node_busy());
    unsetenv("MPI_LOCALNRANKS"); /* not said: not busy */
    assert_false(vocl_backoff_node_busy());
    setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "100000", 1); /* Open MPI's word */
    assert_true(vocl_backoff_node_busy());
    unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
}

static void yield_us_sets_the_yield(void **state)
{
    (void)state;
    ranks_here(CROWDED);
    setenv("VOCL_YIELD_US", "500", 1);
    vocl_backoff_setup();
    assert_int_equal(step(10), 'y'); /* (crowded: polls 5 us) */
    assert_int_equal(step(400), 'y');
    assert_int_equal(step(600), 's');
    ranks_here(SPARE);
    setenv("VOCL_YIELD_US", "0", 1);
    vocl_backoff_setup();
    assert_int_equal(step(10), 'p');
    assert_int_equal(step(60), 's');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(uncrowded_polls_yields_then_sleeps),
        cmocka_unit_test(an_idle_proxy_yields_after_5us),
        cmocka_unit_test(an_idle_proxy_naps_every_16th_yield),
        cmocka_unit_test(crowded_sleeps_after_5us),
        cmocka_unit_test(busy_yields_at_once),
        cmocka_unit_test(node_busy_is_more_ranks_than_cores),
        cmocka_unit_test(yield_us_sets_the_yield),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
