/*
 * relay.c - what two daemons send each other goes through this process.
 *
 * Proxies of one job move a memory object's bytes, and an event's final
 * status, directly between themselves (replica.c, executor/ops_migrate.c and
 * ops_link.c).
 * Two daemons share no communicator: there the client is the peer of both
 * requests (VOCL_PEER_CLIENT), and forwards each message the sending proxy
 * gives it to the receiving one, as it comes.  The proxies do what they do
 * in job mode, message for message; only the route is longer.
 *
 * One thread forwards for every relay at once, and waits on none of them:
 * a migration whose read waits for a user event the application sets later
 * must not hold up the one that application waits for first.  It knows
 * when a relay is through from the messages themselves (struct relay).
 * It sleeps while there is nothing to forward, and ends at exit.
 */
#include "vocl.h"

#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "liveness.h"

/* One message on its way to the receiving proxy. */
struct fwd {
    struct fwd *next;
    struct vocl_req req;
    uint8_t *buf;
    size_t cap;
};

/* Buffers of messages passed on, kept for the next (the relay thread's
 * alone): a chunk of 4 MiB, newly allocated, costs page faults each time. */
#define SPARES 4
struct spare {
    uint8_t *p;
    size_t cap;
};
static struct spare spares[SPARES];
static int nspares;

static uint8_t *buf_get(size_t n, size_t *cap)
{
    for (int i = 0; i < nspares; i++)
        if (spares[i].cap >= n) {
            uint8_t *p = spares[i].p;
            *cap = spares[i].cap;
            spares[i] = spares[--nspares];
            return p;
        }
    *cap = n ? n : 1;
    return malloc(*cap);
}

static void buf_put(uint8_t *p, size_t cap)
{
    if (p && nspares < SPARES && cap >= (64u << 10))
        spares[nspares++] = (struct spare){p, cap};
    else
        free(p);
}

struct relay {
    struct relay *next;
    struct vocl_proxy *from, *to;
    int tag_from, tag_to; /* on each one's channel */
    enum vocl_relay_kind kind;
    uint64_t left; /* bytes still due (whole, diff after its head) */
    size_t chunk;
    bool head_due;         /* diff: the length comes first */
    bool in;               /* all that will come has come */
    struct vocl_live live; /* the sender's */
    struct fwd *out;       /* sent on, not yet taken */
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct relay *queued; /* new relays, for the thread (under lock) */
    bool started, stop;
    pthread_t thread;
} relays = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, false, false, 0};

/* Whether a message of n bytes is r's last: the receiver counts the same
 * way (executor/ops_migrate.c: recv_all, diff_in_thread; ops_link.c: event_in_thread).  A
 * message shorter than due is a sender's failure, and nothing follows. */
static bool last(struct relay *r, const uint8_t *buf, size_t n)
{
    if (r->kind == VOCL_RELAY_EVENT)
        return true;
    if (r->head_due) {
        r->head_due = false;
        if (n != 8)
            return true;
        struct vocl_rd rd; /* (little-endian, as the wire: exec_put_u64) */
        vocl_rd_init(&rd, buf, n);
        r->left = vocl_rd_u64(&rd);
        return r->left == 0;
    }
    size_t due = r->left < r->chunk ? (size_t)r->left : r->chunk;
    if (n != due)
        return true;
    r->left -= n;
    return r->left == 0;
}

/* Sends n bytes on to r's receiver (buf, of cap bytes, is the send's
 * until it is taken; NULL: an empty message). */
static void send_on(struct relay *r, uint8_t *buf, size_t cap, size_t n)
{
    struct fwd *f = malloc(sizeof(*f));
    if (!f || r->to->dead ||
        vocl_isend(vocl_px_chan(r->to), r->tag_to, buf, n, &f->req)) {
        free(f);
        buf_put(buf, cap); /* (the receiver's proxy is gone, or will find the message missing) */
        return;
    }
    f->buf = buf;
    f->cap = cap;
    f->next = r->out;
    r->out = f;
}

/* Takes what r's sender has sent; whether anything came. */
static bool take(struct relay *r)
{
    bool moved = false;
    while (!r->in) {
        struct vocl_probed msg;
        int flag = 0;
        if (r->from->dead || !vocl_xport_alive(r->from, &r->live) ||
            (flag = vocl_improbe(vocl_px_chan(r->from), r->tag_from, &msg)) < 0) {
            /* The receiver would wait for it as long as this process lives. */
            send_on(r, NULL, 0, 0);
            r->in = true;
            return true;
        }
        if (!flag)
            return moved;
        size_t cap = 0, count = msg.len;
        uint8_t *buf = count > 0 ? buf_get(count, &cap) : NULL;
        if (count > 0 && !buf) {
            char dummy;
            vocl_mrecv(&msg, &dummy, 0); /* (cut short) */
            count = 0;
            r->in = true; /* an empty message fails the receiver's side */
        } else {
            vocl_mrecv(&msg, buf, count);
            r->in = last(r, buf, count);
        }
        send_on(r, buf, cap, count);
        moved = true;
    }
    return moved;
}

/* Lets go of what r's receiver has taken; whether r is through. */
static bool through(struct relay *r)
{
    for (struct fwd **p = &r->out, *f; (f = *p);) {
        int done = 0;
        if (r->to->dead) {
            vocl_req_free(&f->req); /* (its buffer is left to the send: kept) */
            done = 1;
        } else if ((done = vocl_test(&f->req, NULL)) < 0) {
            done = 1;
        } else if (done) {
            buf_put(f->buf, f->cap);
        }
        if (done) {
            *p = f->next;
            free(f);
        } else {
            p = &f->next;
        }
    }
    return r->in && !r->out;
}

static void *relay_thread(void *arg)
{
    (void)arg;
    struct relay *mine = NULL; /* this thread's alone */
    uint64_t idle_since = vocl_now_ns();
    pthread_mutex_lock(&relays.lock);
    while (!relays.stop) {
        if (relays.queued) { /* new ones join mine */
            struct relay **tail = &mine;
            while (*tail)
                tail = &(*tail)->next;
            *tail = relays.queued;
            relays.queued = NULL;
        }
        if (!mine) {
            pthread_cond_wait(&relays.wake, &relays.lock);
            idle_since = vocl_now_ns();
            continue;
        }
        pthread_mutex_unlock(&relays.lock);
        bool moved = false;
        for (struct relay **p = &mine, *r; (r = *p);) {
            moved |= take(r);
            if (through(r)) {
                *p = r->next;
                free(r);
                moved = true;
            } else {
                p = &r->next;
            }
        }
        if (moved)
            idle_since = vocl_now_ns();
        else
            vocl_backoff(idle_since, 50000);
        pthread_mutex_lock(&relays.lock);
    }
    pthread_mutex_unlock(&relays.lock);
    while (mine) { /* at exit: what is under way is given up */
        struct relay *r = mine;
        mine = r->next;
        for (struct fwd *f = r->out, *next; f; f = next) {
            next = f->next;
            vocl_req_free(&f->req);
            free(f);
        }
        free(r);
    }
    while (nspares)
        free(spares[--nspares].p);
    return NULL;
}

cl_int vocl_relay(struct vocl_proxy *from, struct vocl_proxy *to, int tag,
                  enum vocl_relay_kind kind, uint64_t size, size_t chunk)
{
    struct relay *r = calloc(1, sizeof(*r));
    if (!r)
        return CL_OUT_OF_HOST_MEMORY;
    *r = (struct relay){.from = from,
                        .to = to,
                        .tag_from = vocl_relay_tag(tag),
                        .tag_to = vocl_relay_tag(tag),
                        .kind = kind,
                        .left = size,
                        .chunk = chunk,
                        .head_due = kind == VOCL_RELAY_DIFF,
                        .in = kind == VOCL_RELAY_WHOLE && size == 0};
    vocl_live_begin(&r->live, from->live);
    pthread_mutex_lock(&relays.lock);
    if (!relays.started && !relays.stop)
        relays.started = pthread_create(&relays.thread, NULL, relay_thread, NULL) == 0;
    bool ok = relays.started && !relays.stop;
    if (ok) {
        r->next = relays.queued;
        relays.queued = r;
        pthread_cond_signal(&relays.wake);
    }
    pthread_mutex_unlock(&relays.lock);
    if (!ok)
        free(r);
    return ok ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
}

void vocl_relay_stop(void)
{
    pthread_mutex_lock(&relays.lock);
    relays.stop = true;
    pthread_cond_signal(&relays.wake);
    bool started = relays.started;
    pthread_mutex_unlock(&relays.lock);
    if (started)
        pthread_join(relays.thread, NULL);
}
