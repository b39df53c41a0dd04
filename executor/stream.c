/*
 * stream.c - the network stage of reads: chunks go back to clients once the
 * device command that produced each has completed, sent by a thread of its
 * own.
 *
 * The request thread enqueues the device reads (without waiting) and queues
 * one job per chunk here; while this thread sends chunk k, the device fills
 * chunk k+1, and up to the transfer's depth of chunks are in flight at
 * once.  A watch of its event (watch.c) marks a job ready, and the thread sends
 * whichever job is ready first, so a read held by a user event holds up no
 * other read.  Nor does a client that is stopped, or slow to take its
 * chunks: sends in flight are tested, never waited for, and a transfer
 * whose client has not taken its chunks holds back only its own next ones
 * (a chunk not taken in 30 s ends its session).  Only the chunks of one
 * transfer (one session and tag) keep their order, and end in it: the
 * client receives them in order on that tag.  A chunk whose command
 * failed is sent empty: the client counts the chunks it gets, so an empty
 * one marks the read failed without putting the transfer out of step.
 *
 * Without a thread (the in-process executor, or no thread could be started)
 * every job runs at once, in the caller.
 */
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"

struct job {
    struct job *next;
    struct exec_stream *st;
    bool ready; /* c.ready has completed (or failed), under st->lock */
    struct exec_stream_chunk c;
    bool posted;             /* h is a send to test */
    struct exec_sending h;   /* (the channel's) */
    size_t sent;             /* bytes: c.n, or 0 (sent empty) */
    uint64_t start;          /* when it was posted */
};


struct exec_stream {
    const struct vocl_native_api *cl;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake, idle;
    struct job *head, *tail;    /* queued */
    struct job *flight, *flast; /* posted, oldest first: being sent */
    bool stop;
};

/* Posts j's chunk (or sends it, where the channel cannot post). */
static void post_job(const struct vocl_native_api *cl, struct job *j)
{
    struct exec_stream_chunk *c = &j->c;
    const struct exec_data_ops *data = c->s->data;
    j->start = vocl_now_ns();
    bool ok = c->ok;
    if (ok && c->ready) {
        cl_int st = CL_COMPLETE;
        ok = cl->clWaitForEvents(1, &c->ready) == CL_SUCCESS &&
             cl->clGetEventInfo(c->ready, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st,
                                NULL) == CL_SUCCESS &&
             st == CL_COMPLETE;
    }
    j->sent = ok ? c->n : 0;
    if (c->s->broken)
        return;
    int rc = data->send_post ? data->send_post(c->s, c->tag, c->data, j->sent, &j->h)
                             : data->send(c->s, c->tag, c->data, j->sent);
    j->posted = data->send_post && rc == 0;
    if (rc) {
        vocl_warn("client %d: a read's data could not be sent: session ended", c->s->who);
        c->s->broken = true;
    }
}

/* Whether j's send is over: taken by its client, or given up (its session
 * broke, or it waited too long).  Never waits. */
static bool job_sent(struct job *j)
{
    struct exec_stream_chunk *c = &j->c;
    if (!j->posted)
        return true;
    bool give_up = c->s->broken || vocl_now_ns() - j->start > EXEC_CLIENT_TIMEOUT_NS;
    int rc = c->s->data->send_test(c->s, &j->h, give_up);
    if (rc < 0 && !c->s->broken) {
        vocl_warn("client %d: a read's data %s: session ended", c->s->who,
                  give_up ? "was not taken in 30 s" : "could not be sent");
        c->s->broken = true;
    }
    return rc != 0;
}

/* j's chunk is sent: gives back what it held. */
static void end_job(const struct vocl_native_api *cl, struct job *j)
{
    struct exec_stream_chunk *c = &j->c;
    if (c->s->trace)
        exec_trace_add(c->s->trace, 0, 1, j->start, j->sent);
    if (c->pool)
        exec_pool_give(c->pool, c->slot);
    if (c->gate) {
        cl->clSetUserEventStatus(c->gate, CL_COMPLETE);
        cl->clReleaseEvent(c->gate);
    }
    if (c->ready)
        cl->clReleaseEvent(c->ready);
    exec_host_free(c->free_after);
}

static bool same_transfer(const struct job *a, const struct job *b)
{
    return a->c.s == b->c.s && a->c.tag == b->c.tag;
}

/* Whether a job of j's transfer comes before it in the list from first. */
static bool follows(const struct job *first, const struct job *j)
{
    for (const struct job *e = first; e != j; e = e->next)
        if (same_transfer(e, j))
            return true;
    return false;
}

/* The first ready job that no earlier job of its transfer precedes and
 * whose transfer has fewer than its depth of chunks in flight; NULL if none. */
static struct job *take_ready(struct exec_stream *st)
{
    for (struct job **pj = &st->head, *prev = NULL; *pj; prev = *pj, pj = &(*pj)->next) {
        struct job *j = *pj;
        if (!j->ready || follows(st->head, j))
            continue;
        unsigned depth = j->c.depth ? j->c.depth : 1, n = 0;
        for (const struct job *f = st->flight; f; f = f->next)
            n += same_transfer(f, j);
        if (n >= depth)
            continue;
        *pj = j->next;
        if (st->tail == j)
            st->tail = prev;
        return j;
    }
    return NULL;
}

/* Ends the sends in flight that are over, each after the earlier ones of
 * its transfer (under st->lock, let go while testing); true if one ended. */
static bool end_sent(struct exec_stream *st)
{
    bool ended = false;
    for (struct job **pj = &st->flight, *prev = NULL; *pj;) {
        struct job *j = *pj;
        bool over = false;
        if (!follows(st->flight, j)) {
            pthread_mutex_unlock(&st->lock); /* (only this thread takes jobs off) */
            over = job_sent(j);
            if (over)
                end_job(st->cl, j);
            pthread_mutex_lock(&st->lock);
        }
        if (!over) {
            prev = j;
            pj = &j->next;
            continue;
        }
        *pj = j->next;
        if (st->flast == j)
            st->flast = prev;
        free(j);
        ended = true;
    }
    if (ended)
        pthread_cond_broadcast(&st->idle);
    return ended;
}

/*
 * Ready chunks are posted while their transfer has fewer than its depth
 * in flight, and sends in flight are tested, oldest first, and polled
 * while nothing else is to do: the link carries the next chunk while the
 * client takes this one.  A chunk's pool buffer, gate and event are let go
 * once it is sent.
 */
static void *stream_main(void *arg)
{
    struct exec_stream *st = arg;
    uint64_t stalled = 0; /* since when the sends in flight have not moved */
    pthread_mutex_lock(&st->lock);
    for (;;) {
        bool moved = end_sent(st);
        struct job *j;
        while ((j = take_ready(st))) {
            j->next = NULL;
            if (st->flast)
                st->flast->next = j;
            else
                st->flight = j;
            st->flast = j;
            pthread_mutex_unlock(&st->lock);
            post_job(st->cl, j);
            pthread_mutex_lock(&st->lock);
            moved = true;
        }
        if (moved) {
            stalled = 0;
        } else if (st->flight) {
            if (!stalled)
                stalled = vocl_now_ns();
            pthread_mutex_unlock(&st->lock);
            vocl_backoff(stalled, 100000);
            pthread_mutex_lock(&st->lock);
        } else if (st->stop && !st->head) {
            break;
        } else {
            pthread_cond_wait(&st->wake, &st->lock);
        }
    }
    pthread_mutex_unlock(&st->lock);
    return NULL;
}

/* Watch (a driver thread, or watch.c's): j's command is over. */
static void on_ready(cl_event ev, cl_int status, void *arg)
{
    (void)ev, (void)status;
    struct job *j = arg;
    struct exec_stream *st = j->st;
    pthread_mutex_lock(&st->lock);
    j->ready = true;
    pthread_cond_signal(&st->wake);
    pthread_mutex_unlock(&st->lock);
}

struct exec_stream *exec_stream_start(const struct vocl_native_api *cl)
{
    struct exec_stream *st = calloc(1, sizeof(*st));
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

void exec_stream_stop(struct exec_stream *st)
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

void exec_stream_send(struct exec_node *node, const struct exec_stream_chunk *c)
{
    struct exec_stream *st = node->stream;
    struct job *j = st ? malloc(sizeof(*j)) : NULL;
    if (!j) {
        exec_gates_open(c->s); /* (ready may be behind a gate of this batch) */
        struct job now = {.c = *c};
        now.c.tag = c->s->data_tag;
        post_job(node->cl, &now);
        uint64_t start = vocl_now_ns();
        while (!job_sent(&now)) /* (no thread to test it later: waited for here) */
            vocl_backoff(start, 100000);
        end_job(node->cl, &now);
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
     * Without a callback, post_job() waits for the event itself. */
    if (exec_watch(node->cl, c->ready, node->look_at_events, on_ready, j) == CL_SUCCESS)
        return;
    pthread_mutex_lock(&st->lock);
    j->ready = true;
    pthread_cond_signal(&st->wake);
    pthread_mutex_unlock(&st->lock);
}

/* Whether a job of session s is queued or being sent. */
static bool has_jobs(const struct exec_stream *st, const struct exec_session *s)
{
    for (const struct job *j = st->head; j; j = j->next)
        if (j->c.s == s)
            return true;
    for (const struct job *j = st->flight; j; j = j->next)
        if (j->c.s == s)
            return true;
    return false;
}

bool exec_stream_busy(struct exec_node *node, const struct exec_session *s)
{
    struct exec_stream *st = node->stream;
    if (!st)
        return false;
    pthread_mutex_lock(&st->lock);
    bool busy = has_jobs(st, s);
    pthread_mutex_unlock(&st->lock);
    return busy;
}

void exec_stream_flush(struct exec_node *node, const struct exec_session *s)
{
    struct exec_stream *st = node->stream;
    if (!st)
        return;
    pthread_mutex_lock(&st->lock);
    while (has_jobs(st, s))
        pthread_cond_wait(&st->idle, &st->lock);
    pthread_mutex_unlock(&st->lock);
}
