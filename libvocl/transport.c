/*
 * transport.c - moving requests, replies and bulk data between libvocl and
 * its proxies: MPI for voclproxyd ranks, a direct call for the in-process
 * executor that serves local passthrough devices.
 *
 * Any number of threads may wait on one proxy at once.  A request is posted
 * under the proxy's lock (which orders it, with its data, against other
 * requests) together with a waiter for its reply, named by its seq.  The
 * lock is never held while waiting: a waiting thread takes it only for one
 * non-blocking pass of progress (probe and take the replies that arrived,
 * hand each to the waiter its seq names, complete the chunks that are done),
 * then lets go and backs off (backoff.h).  Replies may come in any order:
 * the proxy answers a clWaitForEvents when the events complete, and a later
 * request of another thread (setting the user event it waits for) is
 * answered meanwhile.
 */
#include "vocl.h"
#include "profile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backoff.h"
#include "bell.h"
#include "liveness.h"
#include "ucx.h"
#include "executor.h"

void vocl_xport_drop_pending(struct vocl_proxy *px, uint64_t **inflight, size_t *n)
{
    if (px->rx_on) {
        /* A reply cut short: MPI may still copy what had come into its
         * buffer (a matched receive cannot be cancelled), so the buffer is
         * left to it and px receives into a new one. */
        vocl_req_free(&px->rx_req);
        vocl_wr_init(&px->rx);
        px->rx_on = false;
    }
    struct vocl_pending *pd = &px->pending;
    uint64_t *keep = inflight ? malloc((pd->n + 1) * sizeof(*keep)) : NULL;
    size_t nkeep = 0;
    for (size_t i = 0; i < pd->n; i++) {
        if (pd->meta[i].expect >= 0) {
            if (keep && pd->meta[i].ticket)
                keep[nkeep++] = pd->meta[i].ticket;
            vocl_req_cancel(&pd->reqs[i]);
        }
        vocl_req_free(&pd->reqs[i]);
        free(pd->meta[i].scratch); /* (a dead peer writes no more) */
    }
    pd->n = 0;
    pd->replays = 0;
    if (inflight) {
        *inflight = keep;
        *n = nkeep;
    }
}

/* Under px->lock. */
static void fail_locked(struct vocl_proxy *px, const char *what)
{
    if (px->dead)
        return;
    if (px->flog && !px->leaving && vocl_failover_locked(px, what))
        return;
    char why[256]; /* (daemon mode: what UCX said of the connection) */
    if (px->conn && vocl_conn_dead(px->conn) && *vocl_conn_why(px->conn)) {
        snprintf(why, sizeof(why), "%s (its connection: %s)", what, vocl_conn_why(px->conn));
        what = why;
    }
    if (px->leaving && px->name) /* (what it sent back had all landed) */
        vocl_warn("proxy %s: %s, as this program left (nothing it waited for is lost)",
                  px->name, what);
    else if (px->leaving)
        vocl_warn("proxy %d (rank %d): %s, as this program left (nothing it waited for is "
                  "lost)", px->index, px->rank, what);
    else if (px->name)
        vocl_error("proxy %s: %s: its devices are no longer available", px->name, what);
    else
        vocl_error("proxy %d (rank %d): %s: its devices are no longer available", px->index,
                   px->rank, what);
    vocl.proxies_lost++;
    px->dead = true;
    /* Nothing more will come: what was posted for it is given up. */
    if (px->pending.n && px->pending.failed == CL_SUCCESS)
        px->pending.failed = CL_DEVICE_NOT_AVAILABLE;
    vocl_xport_drop_pending(px, NULL, NULL);
    vocl_wr_reset(&px->batch);
    px->nbatch = 0;
}

void vocl_xport_fail(struct vocl_proxy *px, const char *what)
{
    pthread_mutex_lock(&px->lock);
    fail_locked(px, what);
    pthread_mutex_unlock(&px->lock);
}

/* A failure of something posted in epoch: none of px's since it moved to a spare. */
static void fail_at(struct vocl_proxy *px, const char *what, unsigned epoch)
{
    pthread_mutex_lock(&px->lock);
    if (atomic_load(&px->epoch) == epoch)
        fail_locked(px, what);
    pthread_mutex_unlock(&px->lock);
}

bool vocl_xport_alive(struct vocl_proxy *px, struct vocl_live *lw)
{
    if (px->dead)
        return false;
    if (px->local || vocl_live_ok(lw))
        return true;
    char what[192], how[64];
    if (vocl_worker_fate(px, how, sizeof(how)) && !strncmp(how, "signal ", 7))
        snprintf(what, sizeof(what), "a kernel of this program crashed the driver there (its "
                 "worker process ended by %s); the daemon serves on", how);
    else
        snprintf(what, sizeof(what), "%s: it died", vocl_live_why(lw->rank));
    pthread_mutex_lock(&px->lock);
    if (lw->rank == px->live) /* (not when it moved to a spare meanwhile) */
        fail_locked(px, what);
    bool alive = !px->dead && !(px->flog && vocl_failover_refuses(px));
    int live = px->live;
    pthread_mutex_unlock(&px->lock);
    if (alive) /* its session goes on on a spare: wait on that one */
        vocl_live_begin(lw, live);
    return alive;
}

/*
 * What kernels printed on the proxies (an OUTPUT message before a reply):
 * queued as it comes, under a lock of its own that guards only the queue,
 * and written to stdout by the calls that must have printed it when they
 * return (clFinish, clWaitForEvents; and at exit), holding no proxy's
 * lock: a stdout that blocks (a full pipe) stops only those calls, as a
 * driver's printf stops only its own kernel.
 */
static struct {
    pthread_mutex_t lock;   /* the queue */
    pthread_mutex_t writer; /* one writer at a time, so that the order holds */
    struct vocl_wr q;
    atomic_bool queued;
} output = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, {0}, false};

static void put_output(const struct vocl_msg_hdr *h, const uint8_t *buf)
{
    struct vocl_rd r;
    struct vocl_msg_OUTPUT_req m;
    vocl_rd_init(&r, buf + VOCL_HDR_SIZE, h->length);
    vocl_dec_OUTPUT_req(&r, &m);
    pthread_mutex_lock(&output.lock);
    void *d = vocl_wr_reserve(&output.q, m.text.len);
    if (d)
        memcpy(d, m.text.p, m.text.len);
    output.q.fail = false; /* (output past VOCL_MSG_MAX not written yet is dropped) */
    atomic_store(&output.queued, true);
    pthread_mutex_unlock(&output.lock);
}

void vocl_output_write(void)
{
    if (!atomic_load(&output.queued))
        return;
    pthread_mutex_lock(&output.writer);
    for (;;) {
        pthread_mutex_lock(&output.lock);
        struct vocl_wr text = output.q;
        vocl_wr_init(&output.q);
        atomic_store(&output.queued, false);
        pthread_mutex_unlock(&output.lock);
        if (!text.len) {
            vocl_wr_free(&text);
            break;
        }
        fflush(stdout);
        size_t done = 0;
        while (done < text.len) {
            ssize_t n = write(STDOUT_FILENO, text.buf + done, text.len - done);
            if (n <= 0)
                break;
            done += (size_t)n;
        }
        vocl_wr_free(&text);
    }
    pthread_mutex_unlock(&output.writer);
}

/* The waiter of seq on px, taken off the list; NULL: none (under lock). */
static struct vocl_waiter *take_waiter(struct vocl_proxy *px, uint32_t seq)
{
    for (struct vocl_waiter **p = &px->waiters; *p; p = &(*p)->next)
        if ((*p)->seq == seq) {
            struct vocl_waiter *w = *p;
            *p = w->next;
            return w;
        }
    return NULL;
}

/* A reply (or an OUTPUT or NOTIFY message) that arrived in px->rx: to its
 * waiter, whose buffer it becomes.  NOTIFY calls the application's context
 * callbacks: only after the lock is let go (*notes). */
static void dispatch(struct vocl_proxy *px, struct vocl_wr *notes)
{
    struct vocl_msg_hdr h;
    if (!vocl_hdr_get(px->rx.buf, px->rx.len, &h)) {
        fail_locked(px, "malformed reply");
        return;
    }
    if (h.opcode == VOCL_OP_OUTPUT) {
        put_output(&h, px->rx.buf);
        return;
    }
    if (h.opcode == VOCL_OP_CLOSED) {
        struct vocl_rd r;
        struct vocl_msg_CLOSED_req m;
        vocl_rd_init(&r, px->rx.buf + VOCL_HDR_SIZE, h.length);
        char what[160];
        if (vocl_dec_CLOSED_req(&r, &m) || r.fail || m.why.null)
            m.why = vocl_str_of("no reason given");
        snprintf(what, sizeof(what), "it ended this program's session after %.*s",
                 (int)(m.why.len < 100 ? m.why.len : 100), m.why.p);
        for (char *c = what; *c; c++)
            if (*c < ' ' || *c > '~')
                *c = '?'; /* (the proxy's words, printed on the user's terminal) */
        fail_locked(px, what);
        return;
    }
    if (h.opcode == VOCL_OP_NOTIFY) {
        void *d = vocl_wr_reserve(notes, px->rx.len);
        if (d)
            memcpy(d, px->rx.buf, px->rx.len);
        return;
    }
    if (px->replaying && h.seq == px->replay_seq)
        px->replay_got = true;
    struct vocl_waiter *w = take_waiter(px, h.seq);
    if (!w && atomic_load(&px->epoch))
        return; /* (the reply to a request replayed on a spare) */
    if (!w) {
        vocl_warn("proxy %d: a reply to %s (seq %u) that nobody waits for: dropped", px->index,
                  vocl_op_name(h.opcode), h.seq);
        return;
    }
    struct vocl_wr t = *w->buf;
    *w->buf = px->rx;
    px->rx = t;
    w->done = true;
}

/* Completes the chunks that are done, in any order (under lock). */
static void reap(struct vocl_proxy *px)
{
    struct vocl_pending *pd = &px->pending;
    size_t keep = 0;
    for (size_t i = 0; i < pd->n; i++) {
        size_t count = 0;
        int done = vocl_test(&pd->reqs[i], &count);
        if (done < 0) {
            fail_locked(px, "data transfer failed");
            return;
        }
        if (!done) {
            pd->reqs[keep] = pd->reqs[i];
            pd->meta[keep++] = pd->meta[i];
            continue;
        }
        if (pd->meta[i].expect >= 0 && count != (size_t)pd->meta[i].expect &&
            pd->failed == CL_SUCCESS)
            pd->failed = CL_OUT_OF_RESOURCES;
        free(pd->meta[i].scratch);
        pd->replays -= pd->meta[i].replay;
    }
    pd->n = keep;
}

/* One pass of progress on px, under its lock: every reply that arrived goes
 * to its waiter, and done chunks complete.  Never waits: a reply of several
 * of MPI's fragments is received over as many passes as it takes (px->rx_on),
 * so that a proxy that dies in the middle of one leaves its waiter free to
 * see the death, where a blocking receive would wait for ever. */
static void progress_locked(struct vocl_proxy *px, struct vocl_wr *notes)
{
    if (px->local || px->dead)
        return;
    for (;;) {
        if (px->rx_on) {
            int done = vocl_test(&px->rx_req, NULL);
            if (done < 0) {
                fail_locked(px, "receive failed");
                return;
            }
            if (!done)
                break;
            px->rx_on = false;
            dispatch(px, notes);
            if (px->dead)
                return;
            continue;
        }
        struct vocl_probed msg;
        int flag = vocl_improbe(vocl_px_chan(px), VOCL_TAG_REP, &msg);
        if (flag < 0 && px->conn && vocl_conn_dead(px->conn))
            return; /* (its death is the waits' to find: vocl_xport_alive says how) */
        if (flag < 0) {
            fail_locked(px, "probe failed");
            return;
        }
        if (!flag)
            break;
        vocl_wr_reset(&px->rx);
        if (!vocl_wr_reserve(&px->rx, msg.len)) {
            char dummy[1];
            vocl_mrecv(&msg, dummy, 0);
            fail_locked(px, "reply too large");
            return;
        }
        if (vocl_imrecv(&msg, px->rx.buf, msg.len, &px->rx_req)) {
            fail_locked(px, "receive failed");
            return;
        }
        px->rx_on = true;
    }
    reap(px);
}

/* The NOTIFY messages a pass collected: the application's callbacks run
 * with no lock held (they may call OpenCL); then notes is freed.  Whether
 * there were any. */
static bool run_notes(struct vocl_proxy *px, struct vocl_wr *notes)
{
    struct vocl_msg_hdr h;
    bool any = notes->len > 0;
    for (size_t off = 0; off < notes->len && vocl_hdr_get(notes->buf + off, notes->len - off, &h);
         off += VOCL_HDR_SIZE + h.length)
        vocl_context_notes(px, notes->buf + off + VOCL_HDR_SIZE, h.length);
    vocl_wr_free(notes);
    return any;
}

void vocl_xport_progress(struct vocl_proxy *px)
{
    struct vocl_wr notes;
    vocl_wr_init(&notes);
    pthread_mutex_lock(&px->lock);
    progress_locked(px, &notes);
    pthread_mutex_unlock(&px->lock);
    run_notes(px, &notes);
}

/* The in-process executor's replies that were not ready at once (complete.c). */
static int local_reply(struct exec_session *s, struct vocl_wr *w)
{
    struct vocl_proxy *px = s->transport;
    struct vocl_msg_hdr h;
    if (!vocl_hdr_get(w->buf, w->len, &h))
        return -1;
    pthread_mutex_lock(&px->lock);
    struct vocl_waiter *wt = take_waiter(px, h.seq);
    if (wt) {
        vocl_wr_reset(wt->buf);
        void *d = vocl_wr_reserve(wt->buf, w->len);
        if (d)
            memcpy(d, w->buf, w->len);
        wt->done = true;
    }
    pthread_mutex_unlock(&px->lock);
    return wt ? 0 : -1;
}

/* The executor runs under px->lock (vocl_call_start); a build lets go of it. */
static void local_leave(struct exec_session *s)
{
    pthread_mutex_unlock(&((struct vocl_proxy *)s->transport)->lock);
}

static void local_enter(struct exec_session *s)
{
    pthread_mutex_lock(&((struct vocl_proxy *)s->transport)->lock);
}

void vocl_xport_local(struct vocl_proxy *px, struct exec_session *s)
{
    px->session = s;
    s->transport = px;
    s->reply = local_reply;
    s->leave = local_leave;
    s->enter = local_enter;
}

/*
 * Batches.  An asynchronous request that nothing needs at once (a launch,
 * an inline write, a copy, a fill, a marker, a release: may_wait) waits in
 * its proxy's batch.  The next request that cannot wait (one that wants a
 * reply or brings chunks, a clFlush, a move between proxies) takes the
 * batch along, itself last, in one BATCH message; so does a batch that is
 * full, and the flusher thread sends one that waited VOCL_BATCH_US.  One
 * message and one wake-up of the proxy for them all; the proxy runs them
 * in order, and their errors are deferred as before.
 */
#define BATCH_BYTES (64u << 10)

static bool may_wait(const struct vocl_call *c)
{
    if (!c->async)
        return false;
    switch (c->op) {
    case VOCL_OP_clEnqueueReadBuffer: /* (its chunks' wait sends the batch: vocl_xport_land) */
    case VOCL_OP_clEnqueueReadBufferRect:
    case VOCL_OP_clEnqueueReadImage:
        return true;
    default:
        break;
    }
    if (c->cut.chunk) /* a write's chunks follow its request */
        return false;
    switch (c->op) {
    case VOCL_OP_clEnqueueNDRangeKernel:
    case VOCL_OP_clEnqueueWriteBuffer:
    case VOCL_OP_clEnqueueWriteBufferRect:
    case VOCL_OP_clEnqueueWriteImage:
    case VOCL_OP_clEnqueueCopyBuffer:
    case VOCL_OP_clEnqueueCopyBufferRect:
    case VOCL_OP_clEnqueueCopyImage:
    case VOCL_OP_clEnqueueCopyImageToBuffer:
    case VOCL_OP_clEnqueueCopyBufferToImage:
    case VOCL_OP_clEnqueueFillBuffer:
    case VOCL_OP_clEnqueueFillImage:
    case VOCL_OP_clEnqueueMarker:
    case VOCL_OP_clEnqueueMarkerWithWaitList:
    case VOCL_OP_clEnqueueBarrier:
    case VOCL_OP_clEnqueueBarrierWithWaitList:
    case VOCL_OP_clEnqueueWaitForEvents:
    case VOCL_OP_clEnqueueMigrateMemObjects:
    case VOCL_OP_clCreateBuffer:
    case VOCL_OP_clCreateKernel:
    case VOCL_OP_RETAIN:
    case VOCL_OP_RELEASE:
        return true;
    default:
        return false;
    }
}

static void flusher_arm(void);

/* Moves px's batch, ended, into *out (empty before), for its sender (under lock). */
static void batch_take(struct vocl_proxy *px, struct vocl_wr *out)
{
    vocl_wr_finish(&px->batch);
    *out = px->batch;
    vocl_wr_init(&px->batch);
    px->nbatch = 0;
}

static int isend(struct vocl_proxy *px, const struct vocl_wr *w, struct vocl_req *req)
{
    if (vocl_isend(vocl_px_chan(px), VOCL_TAG_REQ, w->buf, w->len, req) == 0) {
        if (px->bell)
            vocl_bell_ring(px->bell);
        return 0;
    }
    fail_locked(px, "send failed");
    return -1;
}

/* What c's request leaves in: itself, or its proxy's batch with it last
 * (c->out); NULL: it waits in the batch.  A batch it cannot join (too
 * large, no memory, a request that must come alone) leaves first, in
 * c->breq (under lock). */
static const struct vocl_wr *batched(struct vocl_call *c)
{
    struct vocl_proxy *px = c->px;
    bool wait = may_wait(c);
    if (!vocl.batch_max || (!wait && !px->nbatch))
        return c->w;
    bool alone = c->op == VOCL_OP_HELLO || c->op == VOCL_OP_BYE;
    if (!alone) {
        vocl_batch_add(&px->batch, c->w); /* (fails past VOCL_MSG_MAX: what it had stays) */
        alone = px->batch.fail;
        px->batch.fail = false;
        px->nbatch += !alone;
    }
    if (!alone && wait && px->nbatch < vocl.batch_max && px->batch.len < BATCH_BYTES) {
        if (px->nbatch == 1)
            flusher_arm();
        return NULL;
    }
    if (!px->nbatch) {
        vocl_wr_reset(&px->batch);
        return c->w;
    }
    batch_take(px, &c->out);
    if (!alone)
        return &c->out;
    if (isend(px, &c->out, &c->breq) == 0)
        c->bsending = true;
    return c->w;
}

int vocl_xport_post(struct vocl_call *c)
{
    struct vocl_proxy *px = c->px;
    if (!c->async) {
        c->waiter = (struct vocl_waiter){.next = px->waiters, .seq = c->seq, .buf = &c->reply};
        px->waiters = &c->waiter;
        c->waiting = true;
    }
    if (px->local) {
        /* The executor runs right here; its reply goes to the waiter now,
         * or later from its completion thread (local_reply). */
        int rc = exec_request(px->session, c->w->buf, c->w->len, &c->reply);
        if (rc > 0 && c->waiting)
            c->waiting = take_waiter(px, c->seq) == NULL; /* done: off the list */
        struct vocl_wr notes;
        vocl_wr_init(&notes);
        if (exec_notify_take(px->session, &notes))
            vocl_context_notes(px, notes.buf + VOCL_HDR_SIZE, notes.len - VOCL_HDR_SIZE);
        vocl_wr_free(&notes);
        return rc < 0 ? -1 : 0;
    }
    if (px->dead || (px->flog && vocl_failover_refuses(px)))
        return -1;
    c->epoch = atomic_load(&px->epoch);
    if (px->spare && c->op != VOCL_OP_HELLO)
        atomic_store(&px->used, true); /* (a migration's target: no failover to it) */
    if (px->flog) {
        bool logged = vocl_flog_request(px, c);
        if (px->replaying) { /* it goes to the spare after what went before it */
            c->batched = true;
            return logged ? 0 : -1;
        }
    }
    const struct vocl_wr *w = batched(c);
    c->batched = !w;
    if (!w)
        return 0;
    if (px->dead)
        return -1;
    if (w != c->w)
        c->t_post = 0; /* (the batch's commands run before the reply: no round trip) */
    if (isend(px, w, &c->sreq)) /* (moved to a spare meanwhile, or held for a new
                                  * daemon: the replay sends it) */
        return (atomic_load(&px->epoch) != c->epoch || vocl_failover_holding_locked(px)) &&
                       !px->dead
                   ? 0
                   : -1;
    vocl_prof_posted();
    c->sending = true;
    return 0;
}

/* Tests a send of epoch, holding nothing; -1: it failed. */
static int send_test(struct vocl_proxy *px, struct vocl_req *req, bool *sending, unsigned epoch)
{
    int done = *sending ? vocl_test(req, NULL) : 0;
    if (done < 0) {
        *sending = false;
        fail_at(px, "send failed", epoch);
        return -1;
    }
    if (done)
        *sending = false;
    return 0;
}

/* The request left this process (its buffer is the thread's again); a
 * send to a dead proxy must not wait forever.  No lock held. */
int vocl_xport_sent(struct vocl_call *c)
{
    struct vocl_proxy *px = c->px;
    struct vocl_live lw;
    vocl_live_begin(&lw, px->live);
    uint64_t start = vocl_now_ns();
    while (c->sending || c->bsending) {
        bool failed = atomic_load(&px->epoch) == c->epoch &&
                      (send_test(px, &c->breq, &c->bsending, c->epoch) ||
                       send_test(px, &c->sreq, &c->sending, c->epoch));
        /* (Held for a new daemon: it goes there with the log, as to a spare.) */
        bool moved = atomic_load(&px->epoch) != c->epoch || (failed && vocl_failover_holding(px));
        if (failed && !moved)
            return -1;
        if (!c->sending && !c->bsending && !moved)
            break;
        if (moved || !vocl_xport_alive(px, &lw)) {
            /* Moved to a spare: the replay sends it there (failover.c). */
            moved = moved || atomic_load(&px->epoch) != c->epoch || vocl_failover_holding(px);
            if (c->bsending)
                vocl_req_free(&c->breq);
            if (c->sending)
                vocl_req_free(&c->sreq);
            c->sending = c->bsending = false;
            vocl_wr_init(&c->out); /* (MPI may still read it: kept) */
            return moved ? 0 : -1;
        }
        vocl_xport_progress(px); /* the proxy may wait for our chunks */
        vocl_backoff(start, 50000);
    }
    vocl_wr_free(&c->out);
    return 0;
}

/* Sends px's batch now, if it has one; holding nothing. */
void vocl_xport_flush(struct vocl_proxy *px)
{
    struct vocl_call c;
    memset(&c, 0, sizeof(c));
    c.px = px;
    pthread_mutex_lock(&px->lock);
    c.epoch = atomic_load(&px->epoch);
    if (px->nbatch && !px->dead) {
        batch_take(px, &c.out);
        c.bsending = isend(px, &c.out, &c.breq) == 0;
    }
    pthread_mutex_unlock(&px->lock);
    if (c.bsending)
        vocl_xport_sent(&c);
    vocl_wr_free(&c.out);
}

/*
 * The flusher: a thread that sends the batches that waited VOCL_BATCH_US,
 * for an application that enqueues and then does something else.  It
 * sleeps until a batch begins (flusher_arm), so it costs nothing while
 * there are none.
 */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool armed;   /* a batch began since the thread last looked */
    bool idle;    /* the thread waits for that */
    bool started, stop;
    pthread_t thread;
} flusher = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, false, false, 0};

static void *flush_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&flusher.lock);
    while (!flusher.stop) {
        if (!flusher.armed) {
            flusher.idle = true;
            pthread_cond_wait(&flusher.wake, &flusher.lock);
            flusher.idle = false;
            continue;
        }
        flusher.armed = false;
        pthread_mutex_unlock(&flusher.lock);
        struct timespec d = {vocl.batch_us / 1000000, vocl.batch_us % 1000000 * 1000};
        nanosleep(&d, NULL);
        for (int i = 0; i < vocl.nproxies; i++)
            if (!vocl.proxies[i]->local)
                vocl_xport_flush(vocl.proxies[i]);
        pthread_mutex_lock(&flusher.lock);
    }
    pthread_mutex_unlock(&flusher.lock);
    return NULL;
}

/* A batch began (under its proxy's lock): the flusher sends it if nothing else does. */
static void flusher_arm(void)
{
    pthread_mutex_lock(&flusher.lock);
    if (!flusher.started && !flusher.stop)
        flusher.started = pthread_create(&flusher.thread, NULL, flush_thread, NULL) == 0;
    flusher.armed = true;
    if (flusher.idle)
        pthread_cond_signal(&flusher.wake);
    pthread_mutex_unlock(&flusher.lock);
}

void vocl_xport_stop(void)
{
    pthread_mutex_lock(&flusher.lock);
    flusher.stop = true;
    pthread_cond_signal(&flusher.wake);
    bool started = flusher.started;
    pthread_mutex_unlock(&flusher.lock);
    if (started)
        pthread_join(flusher.thread, NULL);
    for (int i = 0; i < vocl.nproxies; i++)
        if (!vocl.proxies[i]->local)
            vocl_xport_flush(vocl.proxies[i]);
}

/* One pass of progress for c, holding nothing after: whether c's reply
 * came is then !c->waiting.  Whether anything moved: context
 * notifications ran, or chunks of the proxy's transfers completed. */
static bool look(struct vocl_call *c)
{
    struct vocl_proxy *px = c->px;
    struct vocl_wr notes;
    vocl_wr_init(&notes);
    pthread_mutex_lock(&px->lock);
    size_t before = px->pending.n;
    progress_locked(px, &notes);
    bool flowing = px->pending.n != before;
    if (c->waiter.done && c->waiting) {
        c->waiting = false;
        vocl_prof_replied();
    }
    pthread_mutex_unlock(&px->lock);
    return run_notes(px, &notes) || flowing;
}

int vocl_xport_wait_reply(struct vocl_call *c)
{
    struct vocl_proxy *px = c->px;
    if (vocl_xport_sent(c))
        goto dead;
    if (c->async)
        return 0;
    struct vocl_live lw;
    vocl_live_begin(&lw, px->live);
    uint64_t start = vocl_now_ns();
    while (c->waiting) {
        if (look(c))
            start = vocl_now_ns();
        if (!c->waiting)
            break;
        if (!vocl_xport_alive(px, &lw))
            goto dead;
        vocl_backoff(start, 50000);
    }
    struct vocl_msg_hdr h;
    if (!vocl_hdr_get(c->reply.buf, c->reply.len, &h)) {
        vocl_xport_fail(px, "malformed reply");
        return -1;
    }
    vocl_rd_init(&c->r, c->reply.buf + VOCL_HDR_SIZE, h.length);
    return 0;
dead:
    pthread_mutex_lock(&px->lock);
    if (c->waiting)
        take_waiter(px, c->seq);
    c->waiting = false;
    pthread_mutex_unlock(&px->lock);
    return -1;
}

bool vocl_xport_test_reply(struct vocl_call *c, struct vocl_live *lw)
{
    if (c->waiting)
        look(c);
    return !c->waiting || !vocl_xport_alive(c->px, lw);
}

/* Room for n more pending chunks (under lock); 0, or -1. */
static int reserve(struct vocl_pending *pd, size_t n)
{
    if (pd->n + n <= pd->cap)
        return 0;
    size_t cap = pd->cap ? pd->cap : 64;
    while (cap < pd->n + n)
        cap *= 2;
    struct vocl_req *reqs = realloc(pd->reqs, cap * sizeof(*reqs));
    if (reqs)
        pd->reqs = reqs;
    struct vocl_chunk *meta = reqs ? realloc(pd->meta, cap * sizeof(*meta)) : NULL;
    if (meta)
        pd->meta = meta;
    if (!reqs || !meta)
        return -1;
    pd->cap = cap;
    return 0;
}

int vocl_xport_isend(struct vocl_proxy *px, const void *buf, size_t n, int tag)
{
    struct vocl_pending *pd = &px->pending;
    if (reserve(pd, 1) ||
        vocl_isend(vocl_px_chan(px), tag, buf, n, &pd->reqs[pd->n]))
        return -1;
    pd->meta[pd->n++] = (struct vocl_chunk){.expect = -1, .replay = true};
    pd->replays++;
    return 0;
}

int vocl_xport_irecv(struct vocl_proxy *px, void *dst, size_t n, int tag, uint64_t ticket,
                     const void *queue)
{
    struct vocl_pending *pd = &px->pending;
    void *scratch = dst ? NULL : malloc(n ? n : 1);
    if ((!dst && !scratch) || reserve(pd, 1) ||
        vocl_irecv(vocl_px_chan(px), tag, dst ? dst : scratch, n, &pd->reqs[pd->n])) {
        free(scratch);
        return -1;
    }
    pd->meta[pd->n++] = (struct vocl_chunk){
        .ticket = ticket, .queue = queue, .expect = dst ? (int)n : -1, .scratch = scratch};
    return 0;
}

/*
 * Bulk data.  Every chunk of a transfer is posted at once, on the
 * transfer's own tag, so MPI streams them back to back and a transfer
 * held up on the proxy holds up no other.  The requests join the proxy's
 * pending list, each with a ticket (the order posted) and the queue of its
 * command: a synchronisation completes those it must (vocl_xport_land).
 */
static int post_chunks(struct vocl_call *c, void *buf, size_t n, bool out)
{
    struct vocl_proxy *px = c->px;
    size_t chunk = c->cut.chunk; /* as its message says (vocl_xfer_out, vocl_xfer_in) */
    size_t nchunks = (n + chunk - 1) / chunk;
    struct vocl_pending *pd = &px->pending;
    int tag = vocl_data_tag(c->seq);
    if (px->flog) {
        bool logged = vocl_flog_chunks(px, c, buf, n, out, pd->posted + 1);
        if (out && px->replaying) { /* the replay sends them after their request */
            c->data_n = n;
            return logged ? 0 : -1;
        }
    }
    if (reserve(pd, nchunks))
        return -1;
    for (size_t i = 0; i < nchunks; i++) {
        size_t off = i * chunk;
        size_t len = n - off < chunk ? n - off : chunk;
        struct vocl_req *r = &pd->reqs[pd->n];
        int rc = out ? vocl_isend(vocl_px_chan(px), tag, (char *)buf + off, len, r)
                     : vocl_irecv(vocl_px_chan(px), tag, (char *)buf + off, len, r);
        if (rc) {
            unsigned epoch = atomic_load(&px->epoch);
            fail_locked(px, out ? "data send failed" : "data receive failed");
            if (out && (epoch != atomic_load(&px->epoch) || vocl_failover_holding_locked(px)) &&
                !px->dead)
                break; /* moved to a spare, or held: the replay sends the logged bytes */
            return -1;
        }
        pd->meta[pd->n++] =
            (struct vocl_chunk){.ticket = ++pd->posted, .queue = c->queue, .expect = out ? -1 : (int)len};
    }
    c->data_n = n;
    return 0;
}

int vocl_xport_send_data(struct vocl_call *c, const void *buf, size_t n)
{
    return post_chunks(c, (void *)buf, n, true);
}

int vocl_xport_recv_data(struct vocl_call *c, void *buf, size_t n)
{
    return post_chunks(c, buf, n, false);
}

/* Whether a chunk the range names is still pending (under lock): tickets
 * in (lo, hi], and those up to hi of queue (when not NULL). */
static bool in_flight(const struct vocl_proxy *px, const void *queue, uint64_t lo, uint64_t hi)
{
    const struct vocl_pending *pd = &px->pending;
    for (size_t i = 0; i < pd->n; i++) {
        const struct vocl_chunk *m = &pd->meta[i];
        if (m->ticket <= hi && (m->ticket > lo || (queue && m->queue == queue)))
            return true;
    }
    return false;
}

/* A read whose device command failed, reported once by a synchronisation. */
static cl_int take_failure(struct vocl_proxy *px)
{
    cl_int err = px->pending.failed;
    px->pending.failed = CL_SUCCESS;
    if (err != CL_SUCCESS && !px->dead)
        vocl_warn("proxy %d: a read failed on the device: its data did not arrive", px->index);
    return err;
}

/*
 * Waits, holding nothing, until the chunks (lo, hi] and those of queue up
 * to hi have completed.  A read chunk shorter than posted is the proxy
 * saying the read failed: reported here.
 */
cl_int vocl_xport_land(struct vocl_proxy *px, const void *queue, uint64_t lo, uint64_t hi)
{
    vocl_xport_flush(px); /* (a read may wait in the batch) */
    uint64_t start = vocl_now_ns();
    struct vocl_live lw;
    vocl_live_begin(&lw, px->live);
    for (;;) {
        struct vocl_wr notes;
        vocl_wr_init(&notes);
        pthread_mutex_lock(&px->lock);
        size_t before = px->pending.n;
        progress_locked(px, &notes);
        if (px->pending.n != before)
            start = vocl_now_ns(); /* data is flowing: keep polling */
        bool landed = px->dead || !in_flight(px, queue, lo, hi);
        cl_int err = landed ? (px->dead ? CL_DEVICE_NOT_AVAILABLE : take_failure(px)) : 0;
        pthread_mutex_unlock(&px->lock);
        run_notes(px, &notes);
        if (landed)
            return err;
        if (!vocl_xport_alive(px, &lw))
            return CL_DEVICE_NOT_AVAILABLE;
        vocl_backoff(start, 50000);
    }
}

void vocl_xport_notes(struct vocl_proxy *px)
{
    if (!px->local) {
        vocl_xport_progress(px); /* (a NOTIFY among the messages) */
        return;
    }
    struct vocl_wr notes;
    vocl_wr_init(&notes);
    pthread_mutex_lock(&px->lock); /* (as a request runs in-process) */
    bool any = exec_notify_take(px->session, &notes);
    pthread_mutex_unlock(&px->lock);
    if (any)
        vocl_context_notes(px, notes.buf + VOCL_HDR_SIZE, notes.len - VOCL_HDR_SIZE);
    vocl_wr_free(&notes);
}

uint64_t vocl_xport_ticket(struct vocl_proxy *px)
{
    return px->pending.posted;
}

bool vocl_event_data_pending(struct vocl_obj *e)
{
    struct vocl_event *ev = vocl_as_event(e);
    if (!ev->data_ticket)
        return false;
    vocl_xport_flush(e->px);
    pthread_mutex_lock(&e->px->lock);
    struct vocl_wr notes;
    vocl_wr_init(&notes);
    progress_locked(e->px, &notes);
    bool pending = in_flight(e->px, e->parent, ev->data_ticket, ev->data_ticket);
    pthread_mutex_unlock(&e->px->lock);
    run_notes(e->px, &notes);
    return pending;
}

/* A non-blocking read's data: its queue's chunks up to the event's ticket. */
cl_int vocl_event_data_wait(struct vocl_obj *e)
{
    struct vocl_event *ev = vocl_as_event(e);
    if (!ev->data_ticket)
        return CL_SUCCESS;
    return vocl_xport_land(e->px, e->parent, ev->data_ticket, ev->data_ticket);
}

cl_int vocl_xport_landed(struct vocl_proxy *px, const void *queue, uint64_t ticket)
{
    if (!ticket || px->local)
        return CL_SUCCESS;
    /* Chunks leave the list as they are reaped: a read waited for is gone. */
    pthread_mutex_lock(&px->lock);
    bool pending = in_flight(px, queue, ticket, ticket);
    pthread_mutex_unlock(&px->lock);
    return pending ? vocl_xport_land(px, queue, ticket, ticket) : CL_SUCCESS;
}
