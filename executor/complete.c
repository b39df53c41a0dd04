/*
 * complete.c - replies that wait for device commands, sent when they complete.
 *
 * A request whose answer depends on commands completing (clWaitForEvents,
 * clFinish, a blocking transfer) must not hold up the thread that reads
 * requests: the command may wait for a user event that the same client sets
 * in its next request, from another thread.  So the handler registers a
 * native callback on each event and returns; when the last one completes,
 * the reply is built and handed to the session's transport (s->reply), by
 * this file's thread, never by the driver's callback thread (which must not
 * wait for our locks).  Replies carry the request's seq: the client
 * matches them by it, so they may go out in any order.  The callbacks are
 * watch.c's: an event whose driver calls back late (NVIDIA's, by some
 * 20 ms) is looked at meanwhile.
 *
 * A command a client waits for is often short: a 4-byte read on a GPU
 * completes in a few microseconds, while the driver's callback and the hop
 * to this file's thread take tens.  So the handler first polls the events
 * for up to the node's poll_ns (20 us by default) and, when they complete
 * by then, answers at once: the usual case costs no thread.  The poll is
 * bounded (the requests of other clients wait behind it at most that long)
 * and skipped while the client has a user event unset, which the commands
 * may wait for, and in process (libvocl's local devices), where the request
 * runs under a lock.
 */
#include "internal.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backoff.h"
#include "thread.h"

struct later {
    struct later *next;
    struct exec_session *s;
    const struct vocl_native_api *cl;
    unsigned op;
    uint32_t seq;
    atomic_uint left;  /* callbacks to come, plus one while registering */
    atomic_int failed; /* an event ended in error: the reply says so */
    cl_int deferred;   /* an earlier request's error this reply reports */
    void *payload;     /* bytes after the status when it is CL_SUCCESS (owned) */
    size_t npayload;
    cl_uint nev;
    cl_event ev[]; /* retained */
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct later *head, **tail;
    bool running;           /* the thread is there (started on first use) */
    unsigned alive;         /* replies made and not yet freed: each names its session */
    pthread_cond_t settled; /* alive fell to 0 */
} done = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, &done.head, false, 0,
          PTHREAD_COND_INITIALIZER};

/* The reply a finished wait gives, built into w. */
static void build(const struct later *l, struct vocl_wr *w)
{
    cl_int st = atomic_load(&l->failed);
    if (st == CL_SUCCESS)
        st = l->deferred;
    vocl_wr_begin(w, (uint16_t)l->op, 0, l->seq);
    vocl_wr_i32(w, st);
    if (atomic_load(&l->failed) == CL_SUCCESS && l->payload)
        vocl_wr_bytes(w, l->payload, l->npayload);
    vocl_wr_finish(w);
}

static void later_free(struct later *l)
{
    atomic_fetch_sub(&l->s->held, 1);
    for (cl_uint i = 0; i < l->nev; i++)
        l->cl->clReleaseEvent(l->ev[i]);
    exec_host_free(l->payload);
    free(l);
    pthread_mutex_lock(&done.lock);
    if (--done.alive == 0)
        pthread_cond_broadcast(&done.settled);
    pthread_mutex_unlock(&done.lock);
}

bool exec_replies_settle(unsigned seconds)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += seconds;
    pthread_mutex_lock(&done.lock);
    int rc = 0;
    while (done.alive && rc == 0)
        rc = pthread_cond_timedwait(&done.settled, &done.lock, &until);
    bool settled = done.alive == 0;
    pthread_mutex_unlock(&done.lock);
    return settled;
}

static void *deliver_thread(void *arg)
{
    (void)arg;
    struct vocl_wr w;
    vocl_wr_init(&w);
    pthread_mutex_lock(&done.lock);
    for (;;) {
        while (!done.head)
            pthread_cond_wait(&done.wake, &done.lock);
        struct later *l = done.head;
        done.head = l->next;
        if (!done.head)
            done.tail = &done.head;
        pthread_mutex_unlock(&done.lock);
        if (!atomic_load(&l->s->closed)) {
            build(l, &w);
            if (w.fail || l->s->reply(l->s, &w))
                vocl_warn("client %d: the reply to %s could not be sent", l->s->who,
                          vocl_op_name(l->op));
        }
        later_free(l);
        pthread_mutex_lock(&done.lock);
    }
    return NULL;
}

bool exec_replies_start(void)
{
    pthread_mutex_lock(&done.lock);
    if (!done.running)
        done.running = vocl_thread_detached(deliver_thread, NULL) == 0;
    bool ok = done.running;
    pthread_mutex_unlock(&done.lock);
    return ok;
}

/* The last event completed: the reply goes out from the thread. */
static void queue_reply(struct later *l)
{
    exec_replies_start(); /* (the proxy's is running: started with it) */
    pthread_mutex_lock(&done.lock);
    l->next = NULL;
    *done.tail = l;
    done.tail = &l->next;
    pthread_cond_signal(&done.wake);
    pthread_mutex_unlock(&done.lock);
}

static void on_event(cl_event ev, cl_int status, void *arg)
{
    struct later *l = arg;
    /* PoCL calls back a command that failed (its wait list did) with
     * CL_COMPLETE; the event's own status says it failed. */
    if (status >= 0 && l->cl->clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status),
                                             &status, NULL) != CL_SUCCESS)
        status = CL_COMPLETE;
    if (status < 0) {
        int ok = CL_SUCCESS;
        atomic_compare_exchange_strong(&l->failed, &ok,
                                       CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
    }
    if (atomic_fetch_sub(&l->left, 1) == 1)
        queue_reply(l);
}

bool exec_may_poll(const struct exec_req *q)
{
    /* In process the request runs under libvocl's lock of the proxy
     * (transport.c), and no thread waits holding a lock, even briefly. */
    return q->s->node->poll_ns && !q->s->user_events && !q->s->in_process;
}

bool exec_poll_events(struct exec_req *q, cl_uint n, const cl_event *evs, cl_int *failed)
{
    const uint64_t budget = q->s->node->poll_ns;
    if (!exec_may_poll(q))
        return false;
    /* Their queues flushed (once each, where they come in runs), or the
     * driver may not start them. */
    cl_command_queue flushed = NULL;
    for (cl_uint i = 0; i < n; i++) {
        cl_command_queue cq = NULL;
        if (q->cl->clGetEventInfo(evs[i], CL_EVENT_COMMAND_QUEUE, sizeof(cq), &cq, NULL) || !cq)
            return false;
        if (cq != flushed && q->cl->clFlush(cq))
            return false;
        flushed = cq;
    }
    const uint64_t start = vocl_now_ns();
    cl_uint done = 0;
    for (;;) {
        cl_int st;
        while (done < n &&
               q->cl->clGetEventInfo(evs[done], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st,
                                     NULL) == CL_SUCCESS &&
               st <= CL_COMPLETE) {
            if (st < 0)
                *failed = CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
            done++;
        }
        if (done == n)
            return true;
        uint64_t waited = vocl_now_ns() - start;
        if (waited > budget)
            return false;
        if (waited > budget / 4)
            sched_yield(); /* the device's own threads may need this core */
    }
}

/* A read's landing place (*payload, if any), where the reply goes without
 * it while the command may still write it: kept until ev is done. */
static void keep_payload(struct exec_req *q, cl_event ev, void **payload)
{
    if (payload && *payload) {
        exec_keep_until_done(q->s, CL_SUCCESS, ev, *payload);
        *payload = NULL;
    }
}

bool exec_reply_after(struct exec_req *q, cl_uint n, const cl_event *evs, void **payload,
                      size_t npayload, cl_int *status)
{
    cl_int failed = CL_SUCCESS;
    if (exec_poll_events(q, n, evs, &failed)) {
        *status = failed;
        return false;
    }
    if (!q->s->reply) {
        /* No transport to answer later through (a test's session): wait. */
        cl_int rc = n ? q->cl->clWaitForEvents(n, evs) : CL_SUCCESS;
        *status = rc == CL_SUCCESS ? CL_SUCCESS : CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
        return false;
    }
    struct later *l = calloc(1, sizeof(*l) + n * sizeof(cl_event));
    if (!l) {
        /* No memory to answer later with: the error now, never a wait here. */
        vocl_warn("client %d: no memory to answer %s once its commands complete: it fails now",
                  q->s->who, vocl_op_name(q->op));
        keep_payload(q, evs[0], payload);
        *status = CL_OUT_OF_HOST_MEMORY;
        return false;
    }
    *l = (struct later){.s = q->s, .cl = q->cl, .op = q->op, .seq = q->seq, .nev = n};
    atomic_fetch_add(&q->s->held, 1);
    pthread_mutex_lock(&done.lock);
    done.alive++;
    pthread_mutex_unlock(&done.lock);
    atomic_init(&l->left, n + 1);
    atomic_init(&l->failed, CL_SUCCESS);
    for (cl_uint i = 0; i < n; i++) {
        l->ev[i] = evs[i];
        q->cl->clRetainEvent(evs[i]);
    }
    bool unwatched = false;
    for (cl_uint i = 0; i < n; i++)
        if (exec_watch(q->cl, evs[i], q->s->node->look_at_events, on_event, l) != CL_SUCCESS) {
            /* No memory to watch it: the reply says so, once the others
             * are done (the guard below keeps left above 0 here). */
            int ok = CL_SUCCESS;
            atomic_compare_exchange_strong(&l->failed, &ok, CL_OUT_OF_HOST_MEMORY);
            atomic_fetch_sub(&l->left, 1);
            unwatched = true;
        }
    if (unwatched) /* (the reply may go before the command is done) */
        keep_payload(q, evs[0], payload);
    /* Everything the reply needs is in l before the guard goes: the last
     * callback may send it at once.  An error an earlier request deferred
     * is this synchronisation's to report. */
    l->payload = payload ? *payload : NULL;
    l->npayload = npayload;
    l->deferred = q->s->deferred;
    if (atomic_fetch_sub(&l->left, 1) != 1) {
        exec_take_deferred(q); /* l has it (if the wait fails, its own error wins) */
        q->later = true;
        if (payload)
            *payload = NULL; /* l's */
        return true;
    }
    l->payload = NULL; /* still the caller's */
    /* All complete already: the request's own reply answers, now. */
    /* (An earlier deferred error: settle_deferred reports it, as for any sync request.) */
    *status = atomic_load(&l->failed);
    later_free(l);
    return false;
}
