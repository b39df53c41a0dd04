/*
 * failover.c - a proxy's death survived (VOCL_FAILOVER=spare-proxy, job
 * mode).
 *
 * libvocl keeps, for each proxy, everything it sent there: each request as
 * it left, the bytes of each write, and where the bytes of each read went
 * (the proxy's log).  When the proxy dies, its struct vocl_proxy turns to a
 * spare of the job (VOCL_SPARE: unused, with as many devices and the same
 * chunk size), and the replay, a thread of its own, sends the log there
 * again, in order, with the same sequence numbers and object ids.  So the
 * spare makes the same objects and runs the same commands, and every handle
 * of the application stays valid.  The replay waits for the reply of each
 * build, as the application did before it made the program's kernels.
 *
 * A thread that waited on the dead proxy waits on, and its reply comes from
 * the spare.  Replies nobody waits for any more are dropped.  The bytes of
 * reads that had landed go to scratch; those still on their way land where
 * they were going.  Requests made while the replay runs join the log's end
 * and leave with it.
 *
 * What it costs: a copy of every request and written byte since the last
 * checkpoint (below), bounded by VOCL_FAILOVER_LOG_MAX (MiB).  Past it, or
 * once a command moved bytes to or from another proxy (whose side a replay
 * cannot redo), failover is off for that proxy, said once.  The spare runs
 * the kernels since the last checkpoint again: kernels that are not
 * deterministic may end otherwise, and their printf output appears again.
 * While the replay runs the log is never dropped: what it has not sent yet
 * is the only copy.
 *
 * A migration out of a proxy with a log (migrate.c) copies through this
 * process, so the log stays whole.  Should the proxy die meanwhile, with
 * a spare nobody used yet as the target, its session is held (requests
 * join the log, the migration's own calls fail) until the migration has
 * failed and released its doubles there; then the target becomes the
 * proxy, as any spare would.  The doubles' ids are far above the proxy's,
 * so the two never meet on the target.  Spares keep logs too: after a
 * migration the target's holds what the migration made there, and the
 * source's starts again empty.
 */
#include "vocl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "gate.h"
#include "liveness.h"
#include "thread.h"
#include "ucx.h"

enum flog_kind { FLOG_REQ, FLOG_OUT, FLOG_IN };

struct flog_entry {
    enum flog_kind kind;
    bool reply; /* a request: the application waited for its reply */
    uint32_t seq;
    size_t n;          /* bytes: the message's, or the transfer's */
    size_t chunk;      /* a transfer's chunks */
    uint64_t ticket;   /* a read: its first chunk's */
    const void *queue; /* a read: its chunks' queue */
    void *dst;         /* a read: where its bytes land */
    uint8_t bytes[];   /* a request: the message; a write: its bytes */
};

struct vocl_flog {
    struct flog_entry **e;
    size_t n, cap;
    size_t bytes;       /* what the entries hold */
    size_t base;        /* what they held after the last checkpoint */
    const char *off;    /* why it is no longer kept (NULL: it is) */
    const char *whole;  /* why it takes no checkpoints (NULL: it does) */
    size_t cursor;      /* the replay: the next entry to send */
    /* A migration out of the proxy under way (vocl_failover_migrating):
     * its target (NULL: none, or not a fresh spare), its thread, and the
     * first entry of its own requests.  held: the proxy died meanwhile
     * (what of), and its session waits for the migration's end. */
    struct vocl_proxy *mig_to;
    pthread_t mig_thread;
    size_t mig_entry;
    char held[128];
    uint64_t failed_ns; /* when its proxy failed (0: not since the last replay) */
};

void vocl_failover_setup(void)
{
    const char *e = getenv("VOCL_FAILOVER");
    vocl.failover = e && strcmp(e, "spare-proxy") == 0;
    if (e && *e && strcmp(e, "0") != 0 && !vocl.failover)
        vocl_warn("VOCL_FAILOVER=%s: unknown (the one kind is 'spare-proxy'): off", e);
    const char *m = getenv("VOCL_FAILOVER_LOG_MAX");
    long mib = m ? atol(m) : 1024;
    vocl.failover_max = (size_t)(mib > 0 ? mib : 1024) << 20;
    const char *c = getenv("VOCL_FAILOVER_CHECKPOINT_MB");
    long every = c ? atol(c) : 64;
    vocl.failover_every = (size_t)(every >= 0 ? every : 64) << 20;
}

void vocl_failover_watch(struct vocl_proxy *px)
{
    if (!vocl.failover || px->local)
        return;
    px->flog = calloc(1, sizeof(*px->flog));
    if (!px->flog)
        vocl_warn("proxy %d: no memory for its failover log: no failover", px->index);
}

/* Frees the log's entries, and says once why px has no failover (under
 * lock; not while the replay runs). */
static void flog_off(struct vocl_proxy *px, const char *why)
{
    struct vocl_flog *l = px->flog;
    if (l->off || px->replaying)
        return;
    vocl_warn("proxy %d (rank %d): %s: no failover for it from here", px->index, px->rank, why);
    l->off = why;
    for (size_t i = 0; i < l->n; i++)
        free(l->e[i]);
    free(l->e);
    l->e = NULL;
    l->n = l->cap = l->bytes = 0;
}

/* The log starts again empty: px holds nothing of the application's (under
 * lock; not while the replay runs). */
static void flog_clear(struct vocl_proxy *px)
{
    struct vocl_flog *l = px->flog;
    if (px->replaying)
        return;
    for (size_t i = 0; i < l->n; i++)
        free(l->e[i]);
    l->n = l->bytes = l->base = l->cursor = 0;
}

/* A new entry of n bytes at the log's end (NULL: none, the log is off). */
static struct flog_entry *flog_add(struct vocl_proxy *px, enum flog_kind kind, size_t n)
{
    struct vocl_flog *l = px->flog;
    if (l->off)
        return NULL;
    if (l->bytes + n > vocl.failover_max && !px->replaying) {
        flog_off(px, "its failover log passed VOCL_FAILOVER_LOG_MAX");
        return NULL;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 256;
        struct flog_entry **e = realloc(l->e, cap * sizeof(*e));
        if (!e) {
            flog_off(px, "no memory for its failover log");
            return NULL;
        }
        l->e = e;
        l->cap = cap;
    }
    struct flog_entry *f = calloc(1, sizeof(*f) + n);
    if (!f) {
        flog_off(px, "no memory for its failover log");
        return NULL;
    }
    f->kind = kind;
    f->n = n;
    l->e[l->n++] = f;
    l->bytes += sizeof(*f) + n;
    return f;
}

bool vocl_flog_request(struct vocl_proxy *px, const struct vocl_call *c)
{
    switch (c->op) {
    case VOCL_OP_HELLO: /* (the spare has its own session) */
    case VOCL_OP_BYE:
        return true;
    case VOCL_OP_MIGRATE_IN:
    case VOCL_OP_MIGRATE_OUT:
    case VOCL_OP_DIFF_IN:
    case VOCL_OP_DIFF_OUT:
    case VOCL_OP_EVENT_IN:
    case VOCL_OP_EVENT_OUT:
        flog_off(px, "a command moved data between it and another proxy");
        return false;
    default:
        break;
    }
    struct flog_entry *f = flog_add(px, FLOG_REQ, c->w->len);
    if (!f)
        return false;
    f->reply = !c->async;
    f->seq = c->seq;
    memcpy(f->bytes, c->w->buf, c->w->len);
    return true;
}

bool vocl_flog_chunks(struct vocl_proxy *px, const struct vocl_call *c, void *buf, size_t n,
                      bool out, uint64_t ticket)
{
    struct flog_entry *f = flog_add(px, out ? FLOG_OUT : FLOG_IN, out ? n : 0);
    if (!f)
        return false;
    f->n = n;
    f->seq = c->seq;
    f->chunk = c->cut.chunk;
    if (out) {
        memcpy(f->bytes, buf, n);
    } else {
        f->ticket = ticket;
        f->queue = c->queue;
        f->dst = buf;
    }
    return true;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Sends request or write f to px's new rank (under lock); 0, or -1.
 * (Reads' receives are posted at the failover: repost_reads.) */
static int replay_one(struct vocl_proxy *px, const struct flog_entry *f)
{
    int tag = vocl_data_tag(f->seq);
    if (f->kind == FLOG_REQ)
        return vocl_xport_isend(px, f->bytes, f->n, VOCL_TAG_REQ);
    for (size_t off = 0; f->kind == FLOG_OUT && off < f->n; off += f->chunk)
        if (vocl_xport_isend(px, f->bytes + off, f->n - off < f->chunk ? f->n - off : f->chunk,
                             tag))
            return -1;
    return 0;
}

/*
 * At the failover (under lock): the receives of every read in the log,
 * from the spare, in the log's order (reads on a data tag match in the
 * order posted).  Bytes still on their way (inflight: their chunks'
 * tickets, sorted) land where they were going, with their tickets, so that
 * whoever waits for them waits on; the bytes of reads that had landed go
 * to scratch.  At once, not when the replay comes to them: a waiter must
 * not find its chunks gone meanwhile and take them for landed.  Those of
 * entries from `gone` on go to scratch too: their reader left (a migration
 * that failed, its buffer freed).
 */
static int repost_reads(struct vocl_proxy *px, const uint64_t *inflight, size_t ninflight,
                        size_t gone)
{
    struct vocl_flog *l = px->flog;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < l->n; i++) {
        struct flog_entry *f = l->e[i];
        if (f->kind != FLOG_IN)
            continue;
        int tag = vocl_data_tag(f->seq);
        for (size_t off = 0; rc == 0 && off < f->n; off += f->chunk) {
            size_t len = f->n - off < f->chunk ? f->n - off : f->chunk;
            uint64_t ticket = f->ticket + off / f->chunk;
            bool waited = i < gone && inflight &&
                          bsearch(&ticket, inflight, ninflight, sizeof(ticket), cmp_u64);
            rc = vocl_xport_irecv(px, waited ? (char *)f->dst + off : NULL, len, tag,
                                  waited ? ticket : 0, waited ? f->queue : NULL);
        }
    }
    return rc;
}

/* The replay's sends under way at most: each pass of progress tests every
 * pending send, and the proxy's rendezvous needs this process to progress. */
#define REPLAY_WINDOW 64

/* Whether request f is a build: the proxy serves its session's next
 * requests while it runs, where a kernel of the program would fail. */
static bool builds(const struct flog_entry *f)
{
    struct vocl_msg_hdr h;
    return vocl_hdr_get(f->bytes, f->n, &h) &&
           (h.opcode == VOCL_OP_clBuildProgram || h.opcode == VOCL_OP_clCompileProgram ||
            h.opcode == VOCL_OP_clLinkProgram);
}

/*
 * The replay: the log to the spare, entry by entry, in order.  The proxy
 * runs a session's requests in order, except builds: after a build the
 * replay waits for its reply, as the application did before it made the
 * program's kernels.  (Waiting for every reply the application waited for
 * would not do: one thread's wait may need what another sent after it,
 * say a user event's status.)  Ends once it has sent the log's end
 * (requests made from then on go straight to the spare), or when the spare
 * dies too (a failover to the next spare starts the log again: cursor 0).
 */
static void *replay(void *arg)
{
    struct vocl_proxy *px = arg;
    size_t sent = 0;
    for (;;) {
        pthread_mutex_lock(&px->lock);
        struct vocl_flog *l = px->flog;
        if (px->dead || l->cursor == l->n) {
            px->replaying = false;
            bool dead = px->dead;
            double paused = l->failed_ns ? (double)(vocl_now_ns() - l->failed_ns) / 1e9 : 0;
            size_t bytes = l->bytes;
            l->failed_ns = 0;
            pthread_mutex_unlock(&px->lock);
            if (!dead)
                vocl_info("proxy %d: the spare has the %zu requests of the log (%zu bytes), "
                          "%.2f s after its proxy failed", px->index, sent, bytes, paused);
            return NULL;
        }
        const struct flog_entry *f = l->e[l->cursor++];
        unsigned epoch = atomic_load(&px->epoch);
        bool wait = f->kind == FLOG_REQ && f->reply && builds(f);
        sent += f->kind == FLOG_REQ;
        px->replay_seq = f->seq;
        px->replay_got = false;
        int live = px->live;
        int rc = replay_one(px, f);
        /* A blocking write's bytes go before its reply is waited for. */
        while (rc == 0 && l->cursor < l->n && l->e[l->cursor]->kind == FLOG_OUT &&
               l->e[l->cursor]->seq == f->seq)
            rc = replay_one(px, l->e[l->cursor++]);
        if (rc) {
            pthread_mutex_unlock(&px->lock);
            vocl_xport_fail(px, "the replay of its log to a spare failed");
            continue;
        }
        bool full = px->pending.replays >= REPLAY_WINDOW;
        pthread_mutex_unlock(&px->lock);
        if (!wait && !full)
            continue;
        /* Until the build's reply comes, or the sends are few enough. */
        struct vocl_live lw;
        vocl_live_begin(&lw, live);
        uint64_t start = vocl_now_ns();
        for (;;) {
            vocl_xport_progress(px);
            pthread_mutex_lock(&px->lock);
            bool done = (wait ? px->replay_got : px->pending.replays < REPLAY_WINDOW / 2) ||
                        px->dead || atomic_load(&px->epoch) != epoch;
            pthread_mutex_unlock(&px->lock);
            if (done || !vocl_xport_alive(px, &lw))
                break;
            vocl_backoff(start, 50000);
        }
    }
}

/* Whether px's session could go on on s: alive, with as many devices and
 * the same chunk size. */
static bool alike(const struct vocl_proxy *s, const struct vocl_proxy *px)
{
    return !atomic_load(&s->dead) && s->ndev == px->ndev && s->chunk == px->chunk;
}

/* The spare px's session can go on on (under px->lock): unused, alive, alike. */
static struct vocl_proxy *pick_spare(const struct vocl_proxy *px)
{
    for (int i = 0; i < vocl.nproxies; i++) {
        struct vocl_proxy *s = vocl.proxies[i];
        if (!s->spare || !alike(s, px))
            continue;
        bool no = false;
        if (atomic_compare_exchange_strong(&s->used, &no, true))
            return s;
    }
    return NULL;
}

/* Under px->lock: px's session goes on on spare s (its struct is done
 * with: px is s from now on), sent px's log by the replay; the reads of
 * entries from `gone` on had nobody waiting (repost_reads).  False: lost. */
static bool go_on(struct vocl_proxy *px, struct vocl_proxy *s, const char *what, size_t gone)
{
    struct vocl_flog *l = px->flog;
    /* Nothing more comes from the dead one (reads on their way: their
     * tickets, received again from the spare below). */
    uint64_t *inflight = NULL;
    size_t ninflight = 0;
    vocl_xport_drop_pending(px, &inflight, &ninflight);
    if (inflight)
        qsort(inflight, ninflight, sizeof(*inflight), cmp_u64);
    vocl_wr_reset(&px->batch); /* (its requests are in the log) */
    px->nbatch = 0;
    if (px->name && s->name)
        vocl_error("proxy %s: %s: its session goes on on %s%s, which is sent the %zu entries "
                   "of its log", px->name, what, strcmp(px->name, s->name) ? "" : "the same daemon ",
                   s->name, l->n);
    else
        vocl_error("proxy %d (rank %d): %s: its session goes on on spare proxy %d (rank %d), "
                   "which is sent the %zu entries of its log",
                   px->index, px->rank, what, s->index, s->rank, l->n);
    vocl.proxies_lost++; /* (a peer of the job died: MPI_Finalize would wait for it) */
    pthread_mutex_lock(&s->lock);
    s->dead = true;
    pthread_mutex_unlock(&s->lock);
    px->rank = s->rank;
    px->live = s->live;
    px->comm = s->comm;
    px->conn = s->conn;
    memcpy(px->node, s->node, sizeof(px->node));
    if (s->conn) { /* (a daemon: where to ask how its worker ends) */
        char *host = s->daemon_host ? strdup(s->daemon_host) : NULL;
        free(px->daemon_host);
        px->daemon_host = host;
        px->daemon_port = s->daemon_port;
        px->worker_key = s->worker_key;
        atomic_store(&px->fate_asked, false);
    }
    atomic_fetch_add(&px->epoch, 1);
    l->cursor = 0;
    int rc = repost_reads(px, inflight, ninflight, gone);
    free(inflight);
    if (rc) {
        vocl_error("proxy %d: the reads of its log could not be posted to the spare", px->index);
        return false;
    }
    if (px->replaying)
        return true; /* (the replay thread starts over) */
    px->replaying = true;
    if (vocl_thread_detached(replay, px) == 0)
        return true;
    px->replaying = false;
    vocl_error("proxy %d: no thread for the replay of its log", px->index);
    return false;
}

/*
 * Daemon mode, no spare left: a daemon restarted (an upgrade, a crash and
 * its service manager's restart) is back within seconds.  px's session is
 * held, as amid a migration (requests join the log), while a thread of its
 * own asks for a new session of the same daemon, later of any daemon the
 * application named, for VOCL_FAILOVER_WAIT seconds (default 30), and
 * goes on on the first one alike: as many devices, the same chunk.
 */
struct rejoin {
    struct vocl_proxy *px;
    struct vocl_conn *old_conn; /* the dead daemon's: closed once px is on */
    int old_live;
    char *host; /* where px's daemon was */
    int port;
    char *name;
    char what[128]; /* (said by the thread: no lock held while stderr may block) */
};

/* A new session on the daemon at host:port, if px's session can go on
 * there (alike); NULL if not (nothing left open). */
static struct vocl_proxy *session_at(struct vocl_proxy *px, const char *host, int port,
                                     const char *name)
{
    struct vocl_proxy *s = vocl_connect_again(host, port, name);
    if (s && !alike(s, px)) { /* (another number of devices, another chunk) */
        vocl_live_unlink(s->live);
        vocl_conn_close(s->conn);
        s = NULL;
    }
    return s;
}

static void *rejoin(void *arg)
{
    struct rejoin *r = arg;
    struct vocl_proxy *px = r->px;
    vocl_info("proxy %s: %s: its session waits for the daemon to be back, or another "
              "(VOCL_FAILOVER_WAIT)", r->name, r->what);
    const char *w = getenv("VOCL_FAILOVER_WAIT");
    double secs = w && *w ? atof(w) : 30.0;
    if (secs <= 0)
        secs = 30.0;
    /* Its own daemon alone for the first third (a restart takes a second
     * or two), then each daemon named in turn; half a second between rounds. */
    uint64_t start = vocl_now_ns(), limit = (uint64_t)(secs * 1e9);
    struct vocl_proxy *s = NULL;
    for (uint64_t spent = 0; !s && spent < limit; spent = vocl_now_ns() - start) {
        s = session_at(px, r->host, r->port, r->name);
        for (int i = 0; !s && spent >= limit / 3 && i < vocl.nproxies; i++) {
            struct vocl_proxy *o = vocl.proxies[i]; /* (fixed since the start) */
            if (o != px && o->conn && o->daemon_host && !atomic_load(&o->dead))
                s = session_at(px, o->daemon_host, o->daemon_port, o->name);
        }
        if (!s)
            nanosleep(&(struct timespec){0, 500000000}, NULL);
    }
    struct vocl_flog *l = px->flog;
    pthread_mutex_lock(&px->lock);
    char what[sizeof(l->held)];
    memcpy(what, l->held, sizeof(what));
    l->held[0] = '\0';
    px->replaying = false;
    bool on = s && go_on(px, s, what, SIZE_MAX);
    if (!on)
        flog_off(px, "no daemon took its session");
    pthread_mutex_unlock(&px->lock);
    if (on) { /* (else px keeps them, dead, until the application leaves) */
        vocl_live_unlink(r->old_live);
        vocl_connect_retire(r->old_conn);
    } else if (s) { /* (the log could not be posted there) */
        if (px->conn != s->conn) { /* (else px has it now, closed as it leaves) */
            vocl_live_unlink(s->live);
            vocl_conn_close(s->conn);
        }
        vocl_xport_fail(px, what);
    } else {
        if (!s)
            vocl_error("proxy %s: no daemon took its session in %.0f s (VOCL_FAILOVER_WAIT)",
                       r->name, secs);
        vocl_xport_fail(px, what);
    }
    free(r->host), free(r->name), free(r);
    return NULL;
}

/* Under px->lock: starts px's rejoin (false: it cannot, nothing done). */
static bool start_rejoin(struct vocl_proxy *px, const char *what)
{
    struct vocl_flog *l = px->flog;
    struct rejoin *r = calloc(1, sizeof(*r));
    if (!r || !px->daemon_host || !px->name || !(r->host = strdup(px->daemon_host)) ||
        !(r->name = strdup(px->name))) {
        if (r)
            free(r->host);
        free(r);
        return false;
    }
    *r = (struct rejoin){.px = px, .old_conn = px->conn, .old_live = px->live,
                         .host = r->host, .port = px->daemon_port, .name = r->name};
    snprintf(r->what, sizeof(r->what), "%s", what);
    snprintf(l->held, sizeof(l->held), "%s", what);
    l->failed_ns = vocl_now_ns();
    px->replaying = true;
    vocl_wr_reset(&px->batch); /* (its requests are in the log) */
    px->nbatch = 0;
    /* Nothing more comes from the dead one: the reads on their way are
     * received again from where the session goes on (go_on). */
    if (vocl_thread_detached(rejoin, r) == 0)
        return true;
    l->held[0] = '\0';
    px->replaying = false;
    free(r->host), free(r->name), free(r);
    return false;
}

bool vocl_failover_locked(struct vocl_proxy *px, const char *what)
{
    struct vocl_flog *l = px->flog;
    if (l->off)
        return false;
    if (l->held[0])
        return true; /* (it waits for the migration's end) */
    if (l->mig_to) {
        /* A migration moves it to a fresh spare: its session goes on
         * there once the migration, failing now, has let go of it
         * (vocl_failover_migrated).  Meanwhile requests join the log, as
         * while a replay runs, and those of the migration fail. */
        snprintf(l->held, sizeof(l->held), "%s", what);
        px->replaying = true;
        vocl_wr_reset(&px->batch); /* (its requests are in the log) */
        px->nbatch = 0;
        vocl_error("proxy %d (rank %d): %s amid a migration to proxy %d (rank %d): its "
                   "session goes on there once the migration lets go of it",
                   px->index, px->rank, what, l->mig_to->index, l->mig_to->rank);
        return true;
    }
    struct vocl_proxy *s = pick_spare(px);
    if (!s && px->conn && start_rejoin(px, what))
        return true;
    if (!s) {
        vocl_error("proxy %d (rank %d): %s: no spare proxy is left to go on on", px->index,
                   px->rank, what);
        return false;
    }
    return go_on(px, s, what, SIZE_MAX);
}

bool vocl_failover_refuses(const struct vocl_proxy *px)
{
    const struct vocl_flog *l = px->flog;
    return l->held[0] && pthread_equal(l->mig_thread, pthread_self());
}

bool vocl_failover_holding_locked(const struct vocl_proxy *px)
{
    return px->flog && px->flog->held[0];
}

bool vocl_failover_holding(struct vocl_proxy *px)
{
    if (!px->flog)
        return false;
    pthread_mutex_lock(&px->lock);
    bool held = vocl_failover_holding_locked(px);
    pthread_mutex_unlock(&px->lock);
    return held;
}

bool vocl_failover_kept(struct vocl_proxy *px)
{
    if (!px->flog)
        return false;
    pthread_mutex_lock(&px->lock);
    bool kept = !px->flog->off;
    pthread_mutex_unlock(&px->lock);
    return kept;
}

void vocl_failover_migrating(struct vocl_proxy *px, struct vocl_proxy *to)
{
    struct vocl_flog *l = px->flog;
    if (!l || !to->spare || atomic_load(&to->used))
        return;
    pthread_mutex_lock(&px->lock);
    uint64_t next = atomic_load(&px->next_id);
    bool kept = !l->off && !px->replaying; /* (not while a replay runs: it would end the hold) */
    if (kept) {
        l->mig_to = to;
        l->mig_thread = pthread_self();
        l->mig_entry = l->n;
    }
    pthread_mutex_unlock(&px->lock);
    /* The doubles' ids, far above those the replay may make there. */
    uint64_t far = next + (UINT64_C(1) << 32);
    if (kept && atomic_load(&to->next_id) < far)
        atomic_store(&to->next_id, far);
}

/* Whether px has served all it was sent: a question answered. */
static bool answers(struct vocl_proxy *px)
{
    struct vocl_call c;
    vocl_call_init(&c);
    c.px = px;
    bool ok = false;
    if (vocl_call_start(&c, VOCL_OP_STATE) == 0) {
        vocl_enc_STATE_req(c.w, &(struct vocl_msg_STATE_req){0});
        ok = vocl_call_send(&c) == 0 && c.err == CL_SUCCESS;
    }
    vocl_call_end(&c);
    return ok;
}

bool vocl_failover_migrated(struct vocl_proxy *px, struct vocl_proxy *to, bool moved)
{
    struct vocl_flog *l = px->flog;
    if (!l)
        return false;
    pthread_mutex_lock(&px->lock);
    bool held = l->held[0];
    if (!held)
        l->mig_to = NULL;
    if (!held && moved)
        flog_clear(px); /* (its objects, and their history, are the target's now) */
    pthread_mutex_unlock(&px->lock);
    if (!held)
        return false;
    /* The target, done with the migration (the releases of the doubles
     * served), becomes px; or, were it gone, the next spare.  Not where
     * the objects moved after all: px holds none of them now. */
    bool ready = !moved && answers(to);
    char what[sizeof(l->held)];
    pthread_mutex_lock(&px->lock);
    memcpy(what, l->held, sizeof(what));
    l->held[0] = '\0';
    l->mig_to = NULL;
    px->replaying = false;
    struct vocl_proxy *s = NULL;
    if (ready && alike(to, px))
        s = to;
    else if (!moved)
        s = pick_spare(px);
    bool on = s && go_on(px, s, what, l->mig_entry);
    if (!on)
        flog_off(px, moved ? "it died after a migration took its objects"
                           : "no spare proxy took its session");
    pthread_mutex_unlock(&px->lock);
    if (!on)
        vocl_xport_fail(px, what);
    return on && s == to;
}

void vocl_failover_settle(struct vocl_proxy *px)
{
    uint64_t start = vocl_now_ns();
    for (;;) {
        pthread_mutex_lock(&px->lock);
        bool busy = px->replaying;
        pthread_mutex_unlock(&px->lock);
        if (!busy)
            return;
        vocl_backoff(start, 50000);
    }
}

/*
 * Checkpoints.  At a clFinish or a blocking transfer, once the log has grown by
 * VOCL_FAILOVER_CHECKPOINT_MB since the last one, and no other thread of
 * the application is inside libvocl (the migration's gate), the log starts
 * again from the proxy's state as it is:
 *   1. every queue of the proxy finishes (not while a user event there is
 *      unset: a queue might wait for it);
 *   2. each buffer's bytes are read, and each live command event's status;
 *   3. the log keeps only what made and set up the objects still alive
 *      (creations, builds, user events' statuses, retains and releases), in
 *      their order; every command and question goes;
 *   4. then come, made here: each live command event, as a user event of
 *      its status with as many references, and each buffer's bytes, as a
 *      blocking write.
 * A proxy with images, or with a buffer no queue of its context can read,
 * keeps its log whole (said once).
 */
static _Thread_local bool checkpointing;

/* A request made here for the replay (reply: it waits for its reply). */
static int synth(struct vocl_proxy *px, struct vocl_wr *w, uint32_t seq, bool reply)
{
    vocl_wr_finish(w);
    struct flog_entry *f = w->fail ? NULL : flog_add(px, FLOG_REQ, w->len);
    if (!f)
        return -1;
    f->reply = reply;
    f->seq = seq;
    memcpy(f->bytes, w->buf, w->len);
    return 0;
}

/* What a logged request does to the proxy's state, by its op. */
enum role { ROLE_GONE, ROLE_MAKES, ROLE_TOUCHES, ROLE_KEEP };

static enum role role_of(unsigned op)
{
    const char *n = vocl_op_name(op);
    if (op == VOCL_OP_RETAIN || op == VOCL_OP_RELEASE)
        return ROLE_TOUCHES;
    if (!strncmp(n, "clEnqueue", 9) || !strncmp(n, "clGet", 5) || op == VOCL_OP_clFinish ||
        op == VOCL_OP_clFlush || op == VOCL_OP_clWaitForEvents || op == VOCL_OP_TRACE ||
        op == VOCL_OP_PROGRAM_BINARIES || op == VOCL_OP_SHM_MAP || op >= VOCL_OP_STATE)
        return ROLE_GONE; /* (commands and questions) */
    if (op == VOCL_OP_clCreateKernelsInProgram || op == VOCL_OP_clCreateSubDevices)
        return ROLE_KEEP;
    if (!strncmp(n, "clCreate", 8) || op == VOCL_OP_clLinkProgram)
        return ROLE_MAKES; /* (its new id is its last field) */
    return ROLE_TOUCHES;   /* (the object it sets up is its first field) */
}

/* Steps 3 and 4 under px->lock: the log rebuilt from live (id -> object),
 * the events' statuses and the buffers' bytes. */
static void rebuild(struct vocl_proxy *px, struct vocl_map *live, struct vocl_obj **objs, size_t n,
                    const cl_int *status, void **bytes, struct vocl_obj **queues)
{
    struct vocl_flog *l = px->flog;
    size_t k = 0;
    bool kept = false; /* the last request was kept: its written bytes too */
    for (size_t i = 0; i < l->n; i++) {
        struct flog_entry *f = l->e[i];
        bool keep = false;
        if (f->kind == FLOG_OUT) {
            keep = kept;
        } else if (f->kind == FLOG_REQ) {
            struct vocl_msg_hdr h;
            vocl_hdr_get(f->bytes, f->n, &h);
            const uint8_t *p = f->bytes + VOCL_HDR_SIZE;
            enum role r = role_of(h.opcode);
            struct vocl_rd rd;
            vocl_rd_init(&rd, r == ROLE_MAKES && h.length >= 8 ? p + h.length - 8 : p, 8);
            uint64_t id = h.length >= 8 ? vocl_rd_u64(&rd) : 0;
            struct vocl_obj *o =
                r == ROLE_MAKES || r == ROLE_TOUCHES ? vocl_map_get(live, id) : NULL;
            /* A command event's references are made again below. */
            bool cmd_event = o && o->type == VOCL_T_EVENT && o->parent;
            keep = r == ROLE_KEEP || (o && !(cmd_event && r == ROLE_TOUCHES));
            keep = keep && !(cmd_event && r == ROLE_MAKES); /* (never: enqueued) */
            kept = keep;
        }
        if (keep) {
            l->e[k++] = f;
        } else {
            l->bytes -= sizeof(*f) + f->n * (f->kind != FLOG_IN);
            free(f);
        }
    }
    l->n = k;
    for (size_t i = 0; i < n; i++) {
        struct vocl_obj *o = objs[i];
        if (o->type == VOCL_T_KERNEL) /* (its arguments came with launches, dropped) */
            vocl_kargs_forget(o, px);
        struct vocl_wr w;
        vocl_wr_init(&w);
        uint32_t seq = ++px->seq;
        int rc = 0;
        if (o->type == VOCL_T_EVENT && o->parent) {
            vocl_wr_begin(&w, VOCL_OP_clCreateUserEvent, VOCL_F_REPLY, seq);
            vocl_enc_clCreateUserEvent_req(
                &w, &(struct vocl_msg_clCreateUserEvent_req){.context = vocl_id_on(o->context, px),
                                                             .new_id = vocl_id_on(o, px)});
            rc = synth(px, &w, seq, true);
            vocl_wr_reset(&w);
            seq = ++px->seq;
            vocl_wr_begin(&w, VOCL_OP_clSetUserEventStatus, VOCL_F_REPLY, seq);
            vocl_enc_clSetUserEventStatus_req(
                &w, &(struct vocl_msg_clSetUserEventStatus_req){
                        .event = vocl_id_on(o, px),
                        .execution_status = status[i] < 0 ? status[i] : CL_COMPLETE});
            rc = rc ? rc : synth(px, &w, seq, true);
            for (int r = 1; rc == 0 && r < atomic_load(&o->app_refs); r++) {
                vocl_wr_reset(&w);
                seq = ++px->seq;
                vocl_wr_begin(&w, VOCL_OP_RETAIN, 0, seq);
                vocl_enc_RETAIN_req(&w, &(struct vocl_msg_RETAIN_req){.id = vocl_id_on(o, px)});
                rc = synth(px, &w, seq, false);
            }
        } else if (bytes[i]) {
            struct vocl_mem *m = vocl_as_mem(o);
            struct vocl_call c;
            memset(&c, 0, sizeof(c));
            c.px = px;
            struct vocl_data d = vocl_xfer_out(&c, bytes[i], m->mem_size);
            vocl_wr_begin(&w, VOCL_OP_clEnqueueWriteBuffer, VOCL_F_REPLY, seq);
            vocl_enc_clEnqueueWriteBuffer_req(
                &w, &(struct vocl_msg_clEnqueueWriteBuffer_req){.queue = vocl_id_on(queues[i], px),
                                                                .buffer = vocl_id_on(o, px),
                                                                .blocking = 1,
                                                                .size = m->mem_size,
                                                                .data = d});
            rc = synth(px, &w, seq, true);
            if (rc == 0 && d.mode == VOCL_DATA_CHUNKED) {
                struct flog_entry *f = flog_add(px, FLOG_OUT, m->mem_size);
                if (f) {
                    f->seq = seq;
                    f->chunk = c.cut.chunk;
                    memcpy(f->bytes, bytes[i], m->mem_size);
                }
                rc = f ? 0 : -1;
            }
        }
        vocl_wr_free(&w);
        if (rc && !l->off)
            flog_off(px, "its failover log could not be made again at a checkpoint");
        if (l->off)
            return;
    }
}

/* A live queue of ctx on px among objs (NULL: none). */
static struct vocl_obj *queue_in(struct vocl_obj *const *objs, size_t n, const struct vocl_obj *ctx)
{
    for (size_t i = 0; i < n; i++)
        if (objs[i]->type == VOCL_T_QUEUE && objs[i]->context == ctx &&
            atomic_load(&objs[i]->app_refs) > 0)
            return objs[i];
    return NULL;
}

/* Steps 1 and 2: 0, or -1 (no checkpoint now; *why once it never can be). */
static int take_state(struct vocl_obj **objs, size_t n, cl_int *status, void **bytes,
                      struct vocl_obj **queues, const char **why)
{
    for (size_t i = 0; i < n; i++) {
        struct vocl_obj *o = objs[i];
        struct vocl_mem *m = vocl_as_mem(o);
        if (o->reps || (m && m->mem_type)) {
            *why = o->reps ? "a context spans it and other proxies" : "it holds images";
            return -1;
        }
        cl_int st = CL_COMPLETE;
        if (o->type == VOCL_T_EVENT && !o->parent && atomic_load(&o->app_refs) > 0 &&
            (clGetEventInfo((cl_event)o, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st,
                            NULL) != CL_SUCCESS ||
             st > CL_COMPLETE))
            return -1; /* (a user event not set: its queue may wait for it) */
    }
    for (size_t i = 0; i < n; i++)
        if (objs[i]->type == VOCL_T_QUEUE && atomic_load(&objs[i]->app_refs) > 0 &&
            clFinish((cl_command_queue)objs[i]) != CL_SUCCESS)
            return -1;
    for (size_t i = 0; i < n; i++) {
        struct vocl_obj *o = objs[i];
        struct vocl_mem *m = vocl_as_mem(o);
        if (o->type == VOCL_T_EVENT && o->parent &&
            clGetEventInfo((cl_event)o, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status[i]),
                           &status[i], NULL) != CL_SUCCESS)
            return -1;
        if (!m || o->parent || !m->mem_size)
            continue;
        queues[i] = queue_in(objs, n, o->context);
        bytes[i] = queues[i] ? malloc(m->mem_size) : NULL;
        if (!bytes[i] || clEnqueueReadBuffer((cl_command_queue)queues[i], (cl_mem)o, CL_TRUE, 0,
                                             m->mem_size, bytes[i], 0, NULL, NULL) != CL_SUCCESS)
            return -1;
    }
    return 0;
}

void vocl_failover_checkpoint(struct vocl_proxy *px)
{
    struct vocl_flog *l = px->flog;
    pthread_mutex_lock(&px->lock);
    bool due = !l->off && !l->whole && !px->replaying && !px->pending.replays && !l->mig_to &&
               l->bytes >= l->base + vocl.failover_every; /* (replayed sends read the log) */
    pthread_mutex_unlock(&px->lock);
    if (!due || checkpointing || !vocl_gate_close(0))
        return;
    checkpointing = true;
    size_t n = 0;
    struct vocl_obj **objs = vocl_objs_on(px, &n);
    cl_int *status = calloc(n + 1, sizeof(*status));
    void **bytes = calloc(n + 1, sizeof(*bytes));
    struct vocl_obj **queues = calloc(n + 1, sizeof(*queues));
    struct vocl_map live;
    vocl_map_init(&live);
    const char *why = NULL;
    int rc = objs && status && bytes && queues ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = vocl_map_put(&live, vocl_id_on(objs[i], px), objs[i]);
    if (rc == 0)
        rc = take_state(objs, n, status, bytes, queues, &why);
    vocl_xport_flush(px); /* (nothing of what the log drops may still wait to leave) */
    pthread_mutex_lock(&px->lock);
    if (rc == 0 && !px->replaying && !px->pending.replays && !l->off) {
        size_t before = l->bytes;
        rebuild(px, &live, objs, n, status, bytes, queues);
        l->base = l->bytes;
        vocl_info("proxy %d: a checkpoint: its failover log went from %zu to %zu bytes", px->index,
                  before, l->bytes);
    } else if (why && !l->whole) {
        vocl_warn("proxy %d (rank %d): %s: no failover checkpoints for it, its log keeps its "
                  "whole run", px->index, px->rank, why);
        l->whole = why;
    }
    pthread_mutex_unlock(&px->lock);
    vocl_gate_open();
    checkpointing = false;
    for (size_t i = 0; i < n; i++) {
        free(bytes ? bytes[i] : NULL);
        vocl_obj_drop(objs[i]);
    }
    vocl_map_free(&live);
    free(objs);
    free(status);
    free(bytes);
    free(queues);
}
