/*
 * trace.c - a session's timeline, recorded when its client asks for one
 * (VOCL_TRACE in the application) and handed over by the TRACE request.
 */
#include "internal.h"

#include <pthread.h>
#include <stdlib.h>

#include "backoff.h"

#define TRACE_MAX (1u << 18) /* events a session keeps: 10 MB of reply at most */

/* The events are kept as TRACE's reply sends them (cl_api.def: trace_event). */
struct exec_trace {
    pthread_mutex_t lock; /* the stream thread records too */
    struct vocl_rec_trace_event *ev;
    size_t n, cap, dropped;
};

struct exec_trace *exec_trace_new(void)
{
    struct exec_trace *t = calloc(1, sizeof(*t));
    if (t)
        pthread_mutex_init(&t->lock, NULL);
    return t;
}

void exec_trace_free(struct exec_trace *t)
{
    if (!t)
        return;
    pthread_mutex_destroy(&t->lock);
    free(t->ev);
    free(t);
}

void exec_trace_add(struct exec_trace *t, unsigned op, unsigned thread, uint64_t start,
                    uint64_t bytes)
{
    uint64_t dur = vocl_now_ns() - start;
    pthread_mutex_lock(&t->lock);
    if (t->n == t->cap && t->cap < TRACE_MAX) {
        size_t cap = t->cap ? 2 * t->cap : 1024;
        struct vocl_rec_trace_event *ev = realloc(t->ev, cap * sizeof(*ev));
        if (ev) {
            t->ev = ev;
            t->cap = cap;
        }
    }
    if (t->n < t->cap)
        t->ev[t->n++] = (struct vocl_rec_trace_event){op, thread, start, dur, bytes};
    else
        t->dropped++;
    pthread_mutex_unlock(&t->lock);
}

/* TRACE: the events so far (protocol.h), which are then forgotten. */
void exec_op_trace(struct exec_req *q)
{
    struct exec_trace *t = q->s->trace;
    struct vocl_msg_TRACE_req m;
    vocl_dec_TRACE_req(q->r, &m); /* (no fields: a trailing byte is all that fails) */
    if (!exec_req_begin(q))
        return;
    vocl_wr_i32(q->w, CL_SUCCESS);
    if (!t) {
        vocl_enc_TRACE_rep(q->w, &(struct vocl_msg_TRACE_rep){0});
        return;
    }
    pthread_mutex_lock(&t->lock);
    vocl_enc_TRACE_rep(q->w, &(struct vocl_msg_TRACE_rep){
                                 .events = {.n = (uint32_t)t->n, .v = t->ev}});
    if (t->dropped)
        vocl_warn("client %d: trace full: %zu events not recorded", q->s->who, t->dropped);
    t->n = 0;
    pthread_mutex_unlock(&t->lock);
}
