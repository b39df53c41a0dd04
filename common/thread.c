/* thread.c - see thread.h. */
#include "thread.h"

#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

int vocl_thread_detached(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return rc;
}

bool vocl_threads_list(struct vocl_threads *t)
{
    *t = (struct vocl_threads){0};
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return false;
    size_t cap = 0;
    bool ok = true;
    for (struct dirent *e; ok && (e = readdir(d));) {
        char *end;
        long tid = strtol(e->d_name, &end, 10);
        if (tid <= 0 || *end)
            continue; /* (. and ..) */
        if (t->n == cap) {
            pid_t *more = realloc(t->tids, (cap = cap ? 2 * cap : 16) * sizeof(*more));
            if (!more) {
                ok = false;
                break;
            }
            t->tids = more;
        }
        t->tids[t->n++] = (pid_t)tid;
    }
    closedir(d);
    if (!ok)
        vocl_threads_free(t);
    return ok;
}

void vocl_threads_free(struct vocl_threads *t)
{
    free(t->tids);
    *t = (struct vocl_threads){0};
}

bool vocl_threads_has(const struct vocl_threads *t, pid_t tid)
{
    for (size_t i = 0; i < t->n; i++)
        if (t->tids[i] == tid)
            return true;
    return false;
}

int vocl_threads_batch(const struct vocl_threads *before)
{
    struct vocl_threads now;
    if (!vocl_threads_list(&now))
        return -1;
    int n = 0;
    for (size_t i = 0; i < now.n; i++) {
        if (vocl_threads_has(before, now.tids[i]))
            continue;
        /* (Between SCHED_OTHER and SCHED_BATCH a thread of one's own may
         * go without privilege; one that has ended fails, uncounted.) */
        struct sched_param none = {0};
        if (sched_setscheduler(now.tids[i], SCHED_BATCH, &none) == 0 &&
            sched_getscheduler(now.tids[i]) == SCHED_BATCH)
            n++;
    }
    vocl_threads_free(&now);
    return n;
}
