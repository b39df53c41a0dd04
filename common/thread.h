/*
 * thread.h - a detached thread, for work that outlives the call that starts
 * it (event callbacks, migrations, the proxy's stdout reader); and the
 * threads a library started, given a scheduling class (voclproxyd: a CPU
 * driver's workers).
 */
#ifndef VOCL_THREAD_H
#define VOCL_THREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* 0, or pthread_create's error (nothing was started). */
int vocl_thread_detached(void *(*fn)(void *), void *arg);

/* The ids of this process's threads at one moment. */
struct vocl_threads {
    pid_t *tids;
    size_t n;
};
/* Lists them (Linux: /proc/self/task); false where they cannot be known. */
bool vocl_threads_list(struct vocl_threads *t);
void vocl_threads_free(struct vocl_threads *t);
/* Whether tid is in the list. */
bool vocl_threads_has(const struct vocl_threads *t, pid_t tid);
/* Puts every thread of the process that is not in before under SCHED_BATCH:
 * woken, it no longer preempts the thread that runs, and its share of the
 * processor is unchanged.  How many of those threads are under it now; -1:
 * the threads cannot be listed. */
int vocl_threads_batch(const struct vocl_threads *before);

#endif
