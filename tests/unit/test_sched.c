/*
 * test_sched.c - the threads a library started, given SCHED_BATCH
 * (common/thread.c: vocl_threads_list, vocl_threads_batch), as voclproxyd
 * does for a CPU driver's workers: the threads started after a list was
 * taken go under SCHED_BATCH, every other thread stays as it was.
 */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include <cmocka.h>

#include "thread.h"

/* Threads standing in for a driver's: each says its id, then waits to be
 * told to end. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int started;
    bool stop;
} all = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, false};

static void *worker(void *arg)
{
    pid_t *tid = arg;
    pthread_mutex_lock(&all.lock);
    *tid = gettid();
    all.started++;
    pthread_cond_broadcast(&all.changed);
    while (!all.stop)
        pthread_cond_wait(&all.changed, &all.lock);
    pthread_mutex_unlock(&all.lock);
    return NULL;
}

static void new_threads_go_batch(void **state)
{
    (void)state;
    enum { N = 2 };
    pthread_t threads[N];
    pid_t tids[N];

    struct vocl_threads before;
    assert_true(vocl_threads_list(&before));
    assert_true(vocl_threads_has(&before, gettid()));
    size_t had = before.n;

    for (int i = 0; i < N; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, worker, &tids[i]), 0);
    pthread_mutex_lock(&all.lock);
    while (all.started < N)
        pthread_cond_wait(&all.changed, &all.lock);
    pthread_mutex_unlock(&all.lock);

    /* (ThreadSanitizer starts a thread of its own with the first one.) */
    struct vocl_threads now;
    assert_true(vocl_threads_list(&now));
    assert_true(now.n >= had + N);
    for (int i = 0; i < N; i++) {
        assert_true(vocl_threads_has(&now, tids[i]));
        assert_int_equal(sched_getscheduler(tids[i]), SCHED_OTHER);
    }

    /* Those started since `before`, and only they. */
    assert_int_equal(vocl_threads_batch(&before), (int)(now.n - had));
    for (int i = 0; i < N; i++)
        assert_int_equal(sched_getscheduler(tids[i]), SCHED_BATCH);
    assert_int_equal(sched_getscheduler(0), SCHED_OTHER);
    /* Against a list that has them, nothing is new. */
    assert_int_equal(vocl_threads_batch(&now), 0);

    pthread_mutex_lock(&all.lock);
    all.stop = true;
    pthread_cond_broadcast(&all.changed);
    pthread_mutex_unlock(&all.lock);
    for (int i = 0; i < N; i++)
        assert_int_equal(pthread_join(threads[i], NULL), 0);
    vocl_threads_free(&now);
    vocl_threads_free(&before);
    assert_null(before.tids);
    assert_int_equal(before.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(new_threads_go_batch),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
