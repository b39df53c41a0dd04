/*
 * busy.c - each device's busy share, for vocl-smi: the part of the last
 * whole second in which the device had a command of this process's
 * sessions not yet complete.
 *
 * No event per command.  A queue that takes a command counts as pending
 * on its device from then on.  At most every TICK_NS the serving thread
 * puts a marker behind the commands of each queue that took any since its
 * last marker; the marker's end (exec_watch) ends the queue's pending time,
 * unless it took more commands meanwhile (then a later marker does).  So a
 * command counts from its submission (time spent behind other queues'
 * commands, or waiting for a user event, counts too) to its end, or to
 * about TICK_NS after it where it ended before its marker was put.
 *
 * Only a serving loop calls exec_busy_tick, and only where voclproxyd was
 * asked (--busy-share): until then nothing is counted (libvocl's
 * in-process devices count nothing).  Not by default: with PoCL 3.1 a
 * marker behind a queue's commands and a later command of that queue take
 * two of PoCL's mutexes in opposite orders, which ThreadSanitizer reported
 * as a possible deadlock (tests/integration/waits, once in a CI run).
 * Both are taken on the serving thread alone, so this process cannot
 * deadlock on them, but the report stands in PoCL's code, out of reach.  Everything but the
 * markers' ends runs on the serving thread; the lock is held only to
 * count, never across a driver call.
 */
#include "internal.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>

#include "backoff.h"

#define TICK_NS   1000000u    /* markers at most this often, per queue */
#define WINDOW_NS 1000000000u /* the share is of the last whole second */

struct busy_queue {
    struct busy_queue *next; /* on the list of queues to mark */
    cl_command_queue queue;  /* (the session's reference) */
    cl_uint dev;             /* its device's index; UINT_MAX: not one of the node's */
    uint64_t commands;       /* taken so far */
    uint64_t marked;         /* commands when the list was last taken */
    unsigned markers;        /* in flight */
    bool listed;             /* on the list */
    bool pending;            /* counts on its device */
    bool gone;               /* released: freed with its last marker */
};

struct busy_dev {
    unsigned pending;     /* queues pending on it */
    uint64_t since;       /* when the first of them began */
    uint64_t busy_ns;     /* pending time so far, but the current stretch */
    uint64_t window_busy; /* the total at the window's start */
    unsigned permille;    /* of the last whole window */
};

struct exec_busy {
    pthread_mutex_t lock;
    const struct vocl_native_api *cl;
    bool look; /* node->look_at_events */
    struct busy_queue *listed;
    unsigned markers; /* in flight, of every queue */
    uint64_t next_tick, window_start;
    cl_uint ndev;
    struct busy_dev dev[];
};

struct busy_marker {
    struct exec_busy *b;
    struct busy_queue *bq;
    uint64_t commands; /* the queue's, when it was put */
};

static void pend(struct exec_busy *b, struct busy_queue *bq, uint64_t now)
{
    struct busy_dev *d = &b->dev[bq->dev];
    bq->pending = true;
    if (d->pending++ == 0)
        d->since = now;
}

static void unpend(struct exec_busy *b, struct busy_queue *bq, uint64_t now)
{
    struct busy_dev *d = &b->dev[bq->dev];
    bq->pending = false;
    if (--d->pending == 0)
        d->busy_ns += now > d->since ? now - d->since : 0;
}

static uint64_t busy_total(const struct busy_dev *d, uint64_t now)
{
    return d->busy_ns + (d->pending && now > d->since ? now - d->since : 0);
}

/* A marker of bq's ended (or was never put), put when the queue had taken
 * commands: its pending time ends there if it took none since. */
static void marker_end(struct exec_busy *b, struct busy_queue *bq, uint64_t commands)
{
    uint64_t now = vocl_now_ns();
    pthread_mutex_lock(&b->lock);
    bq->markers--;
    b->markers--;
    if (bq->pending && (bq->gone || bq->commands == commands))
        unpend(b, bq, now);
    bool last = bq->gone && !bq->markers && !bq->listed;
    pthread_mutex_unlock(&b->lock);
    if (last)
        free(bq);
}

static void marker_done(cl_event ev, cl_int status, void *arg)
{
    (void)ev;
    (void)status;
    struct busy_marker *m = arg;
    marker_end(m->b, m->bq, m->commands);
    free(m);
}

static cl_uint device_of(const struct exec_node *node, cl_command_queue queue)
{
    cl_device_id dev = NULL;
    if (node->cl->clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof(dev), &dev, NULL))
        return UINT_MAX;
    for (cl_uint i = 0; i < node->ndev; i++)
        if (node->devs[i] == dev)
            return i;
    return UINT_MAX; /* (a sub-device's queue: not counted) */
}

void exec_busy_command(struct exec_node *node, struct exec_obj *queue)
{
    struct exec_busy *b = node->busy; /* (the caller's check: not NULL) */
    struct busy_queue *bq = queue->busy;
    if (!bq) {
        if (!(bq = calloc(1, sizeof(*bq))))
            return;
        bq->queue = queue->native;
        bq->dev = device_of(node, queue->native);
        queue->busy = bq;
    }
    if (bq->dev == UINT_MAX)
        return;
    uint64_t now = vocl_now_ns();
    pthread_mutex_lock(&b->lock);
    bq->commands++;
    if (!bq->pending)
        pend(b, bq, now);
    if (!bq->listed) {
        bq->listed = true;
        bq->next = b->listed;
        b->listed = bq;
    }
    pthread_mutex_unlock(&b->lock);
}

void exec_busy_forget(struct exec_node *node, struct exec_obj *queue)
{
    struct busy_queue *bq = queue->busy;
    struct exec_busy *b = node->busy;
    queue->busy = NULL;
    if (!bq)
        return;
    if (!b) {
        free(bq);
        return;
    }
    pthread_mutex_lock(&b->lock);
    bq->gone = true;
    if (bq->pending && !bq->markers)
        unpend(b, bq, vocl_now_ns());
    bool last = !bq->markers && !bq->listed;
    pthread_mutex_unlock(&b->lock);
    if (last)
        free(bq); /* (else its last marker, or the next tick, frees it) */
}

/* Takes the list of queues to mark (under the lock): the released ones
 * are done with here; the window rolls over each second. */
static struct busy_queue *take_listed(struct exec_busy *b, uint64_t now)
{
    struct busy_queue *mark = NULL;
    pthread_mutex_lock(&b->lock);
    for (struct busy_queue *bq = b->listed, *next; bq; bq = next) {
        next = bq->next;
        bq->listed = false;
        if (bq->gone) {
            if (!bq->markers)
                free(bq); /* (unpended when it was forgotten) */
            continue;
        }
        bq->marked = bq->commands;
        bq->markers++; /* (before its marker can end) */
        b->markers++;
        bq->next = mark;
        mark = bq;
    }
    b->listed = NULL;
    if (now - b->window_start >= WINDOW_NS) {
        for (cl_uint i = 0; i < b->ndev; i++) {
            struct busy_dev *d = &b->dev[i];
            uint64_t t = busy_total(d, now);
            uint64_t share = (t - d->window_busy) * 1000u / (now - b->window_start);
            d->permille = share > 1000 ? 1000 : (unsigned)share;
            d->window_busy = t;
        }
        b->window_start = now;
    }
    pthread_mutex_unlock(&b->lock);
    return mark;
}

void exec_busy_tick(struct exec_node *node)
{
    if (!node->busy_share)
        return;
    struct exec_busy *b = node->busy;
    uint64_t now = vocl_now_ns();
    if (!b) { /* (the first tick: from here on commands count) */
        if (!(b = calloc(1, sizeof(*b) + node->ndev * sizeof(b->dev[0]))))
            return;
        pthread_mutex_init(&b->lock, NULL);
        b->cl = node->cl;
        b->look = node->look_at_events;
        b->ndev = node->ndev;
        b->window_start = now;
        node->busy = b;
    }
    if (now < b->next_tick)
        return;
    b->next_tick = now + TICK_NS;
    for (struct busy_queue *bq = take_listed(b, now), *next; bq; bq = next) {
        next = bq->next; /* (the list is this thread's: commands relist only here) */
        struct busy_marker *m = malloc(sizeof(*m));
        cl_event ev = NULL;
        if (!m) {
            marker_end(b, bq, bq->marked); /* (no marker: it ends now, a guess) */
            continue;
        }
        *m = (struct busy_marker){b, bq, bq->marked};
        if (b->cl->clEnqueueMarkerWithWaitList(bq->queue, 0, NULL, &ev) != CL_SUCCESS ||
            exec_watch(b->cl, ev, b->look, marker_done, m) != CL_SUCCESS)
            marker_done(NULL, CL_SUCCESS, m); /* (no marker: it ends now, a guess) */
        if (ev)
            b->cl->clReleaseEvent(ev); /* (the watch holds its own reference) */
    }
}

unsigned exec_busy_permille(struct exec_node *node, cl_uint dev)
{
    struct exec_busy *b = node->busy;
    if (!node->busy_share)
        return EXEC_BUSY_UNKNOWN;
    if (!b || dev >= b->ndev)
        return 0;
    pthread_mutex_lock(&b->lock);
    unsigned p = b->dev[dev].permille;
    pthread_mutex_unlock(&b->lock);
    return p;
}

void exec_busy_free(struct exec_node *node)
{
    struct exec_busy *b = node->busy;
    if (!b)
        return;
    pthread_mutex_lock(&b->lock);
    bool idle = !b->markers && !b->listed;
    pthread_mutex_unlock(&b->lock);
    /* (Markers still out would come back to it: it stays, as the process ends.) */
    if (idle) {
        pthread_mutex_destroy(&b->lock);
        free(b);
    }
    node->busy = NULL;
}
