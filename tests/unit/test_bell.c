/*
 * test_bell.c - the proxy's bell (common/bell.h): a ring wakes a nap, in
 * this process and in another one sharing the word (the proxy and its
 * client), a ring while nobody naps changes nothing, and a nap nobody rings
 * ends with its time.  The naps that must be rung are 10 s long and must
 * end within 5: a ring that did not wake one fails the test, however slow
 * the machine.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "backoff.h"
#include "bell.h"

#define LONG_NAP 10000000000L /* ns */
#define WOKEN_BY 5000000000ull

static struct vocl_bell *shared_bell(void)
{
    void *p = mmap(NULL, VOCL_BELL_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
                   0);
    assert_true(p != MAP_FAILED);
    return p;
}

/* Rings once b naps (its word says so). */
static void ring_when_napping(struct vocl_bell *b)
{
    for (int i = 0; i < 100000 && atomic_load(&b->word) != VOCL_BELL_NAPPING; i++)
        nanosleep(&(struct timespec){0, 100000}, NULL);
    assert_int_equal(atomic_load(&b->word), VOCL_BELL_NAPPING);
    nanosleep(&(struct timespec){0, 1000000}, NULL); /* (into the futex, most likely) */
    vocl_bell_ring(b);
}

static void *ringer(void *arg)
{
    ring_when_napping(arg);
    return NULL;
}

static void a_ring_wakes_a_nap(void **state)
{
    (void)state;
    struct vocl_bell *b = shared_bell();
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, ringer, b), 0);
    vocl_bell_arm(b);
    uint64_t start = vocl_now_ns();
    assert_true(vocl_bell_nap(b, LONG_NAP));
    assert_true(vocl_now_ns() - start < WOKEN_BY);
    assert_int_equal(atomic_load(&b->word), VOCL_BELL_AWAKE);
    pthread_join(t, NULL);
    munmap(b, VOCL_BELL_SIZE);
}

/* The proxy naps in one process, the client rings from another. */
static void a_ring_wakes_a_nap_in_another_process(void **state)
{
    (void)state;
    struct vocl_bell *b = shared_bell();
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        vocl_bell_arm(b);
        uint64_t start = vocl_now_ns();
        bool rang = vocl_bell_nap(b, LONG_NAP);
        _exit(rang && vocl_now_ns() - start < WOKEN_BY ? 0 : 1);
    }
    ring_when_napping(b);
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    munmap(b, VOCL_BELL_SIZE);
}

static void a_ring_before_the_nap_ends_it_at_once(void **state)
{
    (void)state;
    struct vocl_bell *b = shared_bell();
    vocl_bell_arm(b);
    vocl_bell_ring(b); /* (between the proxy's last look and its nap) */
    uint64_t start = vocl_now_ns();
    assert_true(vocl_bell_nap(b, LONG_NAP));
    assert_true(vocl_now_ns() - start < WOKEN_BY);
    munmap(b, VOCL_BELL_SIZE);
}

static void an_unrung_nap_ends_with_its_time(void **state)
{
    (void)state;
    struct vocl_bell *b = shared_bell();
    vocl_bell_ring(b); /* nobody naps: nothing changes */
    assert_int_equal(atomic_load(&b->word), VOCL_BELL_AWAKE);
    vocl_bell_arm(b);
    uint64_t start = vocl_now_ns();
    assert_false(vocl_bell_nap(b, 2000000));
    assert_true(vocl_now_ns() - start >= 1000000); /* (a signal could end it early: none here) */
    assert_int_equal(atomic_load(&b->word), VOCL_BELL_AWAKE);
    vocl_bell_arm(b);
    vocl_bell_disarm(b); /* work found after all: a ring now wakes nobody */
    assert_int_equal(atomic_load(&b->word), VOCL_BELL_AWAKE);
    munmap(b, VOCL_BELL_SIZE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_ring_wakes_a_nap),
        cmocka_unit_test(a_ring_wakes_a_nap_in_another_process),
        cmocka_unit_test(a_ring_before_the_nap_ends_it_at_once),
        cmocka_unit_test(an_unrung_nap_ends_with_its_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
