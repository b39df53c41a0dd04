/*
 * stream.c - the network stage of reads: chunks go back to clients in the
 * order they were queued, each once the device command that produced it has
 * completed, sent by a thread of its own.
 *
 * The request thread enqueues the device reads (without waiting) and queues
 * one job per chunk here; while this thread sends chunk k, the device fills
 * chunk k+1.  A chunk whose command failed is sent empty: the client counts
 * the chunks it gets, so an empty one marks the read failed without putting
 * the data channel out of step.
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
    struct proxyd_stream_chunk c;
};

struct proxyd_stream {
    const struct vocl_native_api *cl;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake, idle;
    struct job *head, *tail;
    unsigned busy; /* jobs queued or being sent */
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

static void *stream_main(void *arg)
{
    struct proxyd_stream *st = arg;
    pthread_mutex_lock(&st->lock);
    for (;;) {
        while (!st->head && !st->stop)
            pthread_cond_wait(&st->wake, &st->lock);
        struct job *j = st->head;
        if (!j)
            break;
        st->head = j->next;
        if (!st->head)
            st->tail = NULL;
        pthread_mutex_unlock(&st->lock);
        run(st->cl, &j->c);
        free(j);
        pthread_mutex_lock(&st->lock);
        if (--st->busy == 0)
            pthread_cond_broadcast(&st->idle);
    }
    pthread_mutex_unlock(&st->lock);
    return NULL;
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
    j->next = NULL;
    j->c = *c;
    j->c.tag = c->s->data_tag;
    pthread_mutex_lock(&st->lock);
    if (st->tail)
        st->tail->next = j;
    else
        st->head = j;
    st->tail = j;
    st->busy++;
    pthread_cond_signal(&st->wake);
    pthread_mutex_unlock(&st->lock);
}

void proxyd_stream_flush(struct proxyd_node *node)
{
    struct proxyd_stream *st = node->stream;
    if (!st)
        return;
    pthread_mutex_lock(&st->lock);
    while (st->busy)
        pthread_cond_wait(&st->idle, &st->lock);
    pthread_mutex_unlock(&st->lock);
}
