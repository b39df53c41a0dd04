/*
 * stream.c - the network stage of reads: chunks go back to clients once the
 * device command that produced each has completed, sent by a thread of its
 * own.
 *
 * The request thread enqueues the device reads (without waiting) and queues
 * one job per chunk here; while this thread sends chunk k, the device fills
 * chunk k+1.  A native event callback marks a job ready, and the thread
 * sends whichever job is ready first, so a read held by a user event holds
 * up no other read.  Only the chunks of one transfer (one session and tag)
 * keep their order: the client receives them in order on that tag.  A chunk
 * whose command failed is sent empty: the client counts the chunks it gets,
 * so an empty one marks the read failed without putting the transfer out of
 * step.
 *
 * Without a thread (the in-process executor, or no thread could be started)
 * every job runs at once, in the caller.
 */
#include "proxyd.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"

struct job {
    struct job *next;
    struct proxyd_stream *st;
    bool ready; /* c.ready has completed (or failed), under st->lock */
    struct proxyd_stream_chunk c;
};

struct proxyd_stream {
    const struct vocl_native_api *cl;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake, idle;
    struct job *head, *tail;
    const struct proxyd_session *sending; /* the job being sent's */
    bool stop;
};

static void run(const struct vocl_native_api *cl, struct proxyd_stream_chunk *c)
{
    uint64_t start = c->s->trace ? vocl_now_ns() : 0;
    bool ok = c->ok;
    if (ok && c->ready) {
        cl_int st = CL_COMPLETE;
        ok = cl->clWaitForEvents(1, &c->ready) == CL_SUCCESS &&
             cl->clGetEventInfo(c->ready, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st,
                                NULL) == CL_SUCCESS &&
             st == CL_COMPLETE;
    }
    if (!c->s->broken && c->s->data->send(c->s, c->tag, c->data, ok ? c->n : 0)) {
        vocl_warn("client %d: a read's data could not be sent: session ended", c->s->peer);
        c->s->broken = true;
    }
    if (c->s->trace)
        proxyd_trace_add(c->s->trace, 0, 1, start, ok ? c->n : 0);
    if (c->slot)
        atomic_store(c->slot, 0);
    if (c->gate) {
        cl->clSetUserEventStatus(c->gate, CL_COMPLETE);
        cl->clReleaseEvent(c->gate);
    }
    if (c->ready)
        cl->clReleaseEvent(c->ready);
    free(c->free_after);
}

/* The first ready job that no earlier job of its transfer precedes; NULL if none. */
static struct job *take_ready(struct proxyd_stream *st)
{
    for (struct job **pj = &st->head, *prev = NULL; *pj; prev = *pj, pj = &(*pj)->next) {
        struct job *j = *pj;
        if (!j->ready)
            continue;
        bool first = true;
        for (struct job *e = st->head; e != j && first; e = e->next)
            first = e->c.s != j->c.s || e->c.tag != j->c.tag;
        if (!first)
            continue;
        *pj = j->next;
        if (st->tail == j)
            st->tail = prev;
        return j;
    }
    return NULL;
}

static void *stream_main(void *arg)
{
    struct proxyd_stream *st = arg;
    pthread_mutex_lock(&st->lock);
    for (;;) {
        struct job *j = take_ready(st);
        if (!j) {
            if (st->stop && !st->head)
                break;
            pthread_cond_wait(&st->wake, &st->lock);
            continue;
        }
        st->sending = j->c.s;
        pthread_mutex_unlock(&st->lock);
        run(st->cl, &j->c);
        free(j);
        pthread_mutex_lock(&st->lock);
        st->sending = NULL;
        pthread_cond_broadcast(&st->idle);
    }
    pthread_mutex_unlock(&st->lock);
    return NULL;
}

/* Native callback (a driver thread): j's command is over. */
static void CL_CALLBACK on_ready(cl_event ev, cl_int status, void *arg)
{
    (void)ev, (void)status;
    struct job *j = arg;
    struct proxyd_stream *st = j->st;
    pthread_mutex_lock(&st->lock);
    j->ready = true;
    pthread_cond_signal(&st->wake);
    pthread_mutex_unlock(&st->lock);
}

struct proxyd_stream *proxyd_stream_start(const struct vocl_native_api *cl)
{
    struct proxyd_stream *st = calloc(1, sizeof(*st));
    if (!st)
        return NULL;
    st->cl = cl;
    pthread_mutex_init(&st->lock, NULL);
    pthread_cond_init(&st->wake, NULL);
    pthread_cond_init(&st->idle, NULL);
    if (pthread_create(&st->thread, NULL, stream_main, st)) {
        free(st);
        return NULL;
    }
    return st;
}

void proxyd_stream_stop(struct proxyd_stream *st)
{
    if (!st)
        return;
    pthread_mutex_lock(&st->lock);
    st->stop = true;
    pthread_cond_signal(&st->wake);
    pthread_mutex_unlock(&st->lock);
    pthread_join(st->thread, NULL);
    pthread_mutex_destroy(&st->lock);
    pthread_cond_destroy(&st->wake);
    pthread_cond_destroy(&st->idle);
    free(st);
}

void proxyd_stream_send(struct proxyd_node *node, const struct proxyd_stream_chunk *c)
{
    struct proxyd_stream *st = node->stream;
    struct job *j = st ? malloc(sizeof(*j)) : NULL;
    if (!j) {
        struct proxyd_stream_chunk now = *c;
        now.tag = c->s->data_tag;
        run(node->cl, &now);
        return;
    }
    *j = (struct job){.st = st, .ready = !c->ready, .c = *c};
    j->c.tag = c->s->data_tag;
    pthread_mutex_lock(&st->lock);
    if (st->tail)
        st->tail->next = j;
    else
        st->head = j;
    st->tail = j;
    if (j->ready)
        pthread_cond_signal(&st->wake);
    pthread_mutex_unlock(&st->lock);
    /* (Then j may be sent and freed at once: not touched again.) */
    if (!c->ready)
        return;
    /* Outside the lock: a driver may call on_ready at once, in this thread.
     * Without a callback, run() waits for the event itself. */
    if (node->cl->clSetEventCallback(c->ready, CL_COMPLETE, on_ready, j) == CL_SUCCESS)
        return;
    pthread_mutex_lock(&st->lock);
    j->ready = true;
    pthread_cond_signal(&st->wake);
    pthread_mutex_unlock(&st->lock);
}

/* Whether a job of session s is queued or being sent. */
static bool has_jobs(const struct proxyd_stream *st, const struct proxyd_session *s)
{
    for (const struct job *j = st->head; j; j = j->next)
        if (j->c.s == s)
            return true;
    return st->sending == s;
}

void proxyd_stream_flush(struct proxyd_node *node, const struct proxyd_session *s)
{
    struct proxyd_stream *st = node->stream;
    if (!st)
        return;
    pthread_mutex_lock(&st->lock);
    while (has_jobs(st, s))
        pthread_cond_wait(&st->idle, &st->lock);
    pthread_mutex_unlock(&st->lock);
}
