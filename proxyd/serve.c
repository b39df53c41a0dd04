/*
 * serve.c - voclproxyd's serving loop: the clients' sessions, each request
 * received and handed to the executor, clients that die, the state report
 * (SIGUSR1); job mode (the clients are ranks of the job) and daemon mode
 * (clients accepted on a UCX listener, with a token).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stddef.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>

#include <mpi.h>

#include "backoff.h"
#include "bell.h"
#include "ctlsock.h"
#include "daemon.h"
#include "executor.h"
#include "liveness.h"
#include "log.h"
#include "metrics.h"
#include "mpi_start.h"
#include "protocol.h"
#include "thread.h"
#include "token.h"
#include "ucx.h"
#include "wire.h"

/* --- serving sessions ------------------------------------------------------------------------ */

struct client {
    struct exec_session s;
    struct proxyd_chan chan; /* s.transport */
    int id;                  /* for messages: its rank, or its number since the proxy started */
    bool gone;     /* its session closed: nothing more is served or sent */
    bool released; /* and everything it held released (release_clients) */
    bool freed;    /* daemon mode: and nothing more read from its connection (let_go) */
    int64_t pid;   /* daemon mode: its process, if on this node (else 0) */
    uint64_t since_ns;  /* when it connected */
    uint64_t closed_ns; /* when its session was closed */
    bool held; /* its next request waits: its write is parked, or it has
                  not taken its replies (move_on) */
    struct vocl_live lw; /* waiting for its next request: is it still there? */
    struct client *next_gone; /* sweep_clients' list of those to free */
};

struct server {
    struct exec_node *node;
    struct client **clients; /* job mode: by rank; daemon mode: as they came */
    int nclients, live;
    int closing; /* clients gone and not yet released (this thread's) */
    bool job_mode;
    pthread_mutex_t lock; /* daemon mode: the accept thread adds clients */
    struct vocl_wr reply;
    uint8_t *buf;
    size_t cap;
    uint64_t notes_seen; /* exec_notify_posted when last sent */
    bool isolate;        /* daemon mode, --isolate: clients go to workers */
    bool worker;         /* a worker: serves one client, then ends */
    pid_t parent;        /* a worker's daemon */
    uint64_t published_ns; /* a worker: when it last said what its session holds */
    int published;         /* and what: no session, a client, a client that said HELLO */
    const char *metrics;   /* --metrics-file (a worker: its figures go to its daemon) */
    uint64_t metrics_ns, metrics_due; /* a daemon: how often it writes them, and when next */
    bool counted;          /* a worker: it had a client, whose figures it writes */
};

/* The serving loop's last pass (serve), which the watchdog wants recent. */
static _Atomic uint64_t served_ns;

/* A client on ch (live: its number in liveness.h; pid:
 * its process, if on this node; who: its uid and process, for the session,
 * or NULL). */
static struct client *add_client(struct server *sv, struct vocl_chan ch, int live, int id,
                                 int64_t pid, const long who[2])
{
    struct client *cl = calloc(1, sizeof(*cl));
    if (!cl)
        return NULL;
    cl->chan = (struct proxyd_chan){.ch = ch, .live = live, .job = sv->job_mode,
                                    PROXYD_CHAN_REST};
    cl->id = id;
    exec_session_init(&cl->s, sv->node, ch.rank);
    cl->s.who = id;
    if (who) {
        cl->s.uid = who[0];
        cl->s.pid = who[1];
    }
    cl->pid = pid;
    cl->since_ns = vocl_now_ns();
    cl->s.data = &proxyd_chan_data;
    cl->s.reply = proxyd_reply;
    cl->s.transport = &cl->chan;
    vocl_live_begin(&cl->lw, live);
    /* The serving thread reads the array under the lock (daemon mode). */
    pthread_mutex_lock(&sv->lock);
    struct client **nc = realloc(sv->clients, (sv->nclients + 1) * sizeof(*nc));
    if (!nc) {
        pthread_mutex_unlock(&sv->lock);
        free(cl);
        return NULL;
    }
    sv->clients = nc;
    sv->clients[sv->nclients++] = cl;
    sv->live++;
    pthread_mutex_unlock(&sv->lock);
    return cl;
}

/* STATE (vocl-smi): the open sessions, on the serving thread. */
/* The open sessions of this process. */
static size_t own_sessions(struct server *sv, struct exec_session_state *out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&sv->lock);
    for (int i = 0; i < sv->nclients; i++) {
        struct client *cl = sv->clients[i];
        if (cl->gone)
            continue;
        if (n < max)
            out[n] = (struct exec_session_state){.id = cl->id,
                                                 .user = cl->s.user,
                                                 .pid = cl->pid,
                                                 .since_ns = cl->since_ns,
                                                 .s = &cl->s};
        n++;
    }
    pthread_mutex_unlock(&sv->lock);
    return n;
}

/* The node's sessions (vocl-smi): a worker's siblings too (workers.c). */
static size_t list_sessions(void *ctx, struct exec_session_state *out, size_t max)
{
    struct server *sv = ctx;
    size_t n = own_sessions(sv, out, max);
    if (sv->worker && n < max)
        n += proxyd_worker_siblings(out + n, max - n);
    return n;
}

/* --metrics-file, a worker that had a client: its figures, for its daemon
 * (any: its session is open). */
static void publish_figures(struct server *sv, bool any)
{
    if (!sv->worker || !sv->metrics || !(sv->counted |= any))
        return;
    struct proxyd_figures f;
    proxyd_figures_own(sv->node, any, &f);
    proxyd_worker_figures(&f);
}

/* A worker: what its session holds, for its siblings, every second, and
 * at once when its client comes, says who it is, or goes (vocl-smi may
 * look at once). */
static void publish_state(struct server *sv)
{
    if (!sv->worker)
        return;
    uint64_t now = vocl_now_ns();
    struct exec_session_state st;
    bool any = own_sessions(sv, &st, 1) > 0;
    int what = any ? 1 + (st.user && *st.user) : 0; /* (none, a client, one that said HELLO) */
    if (what == sv->published && now - sv->published_ns < 1000000000u)
        return;
    sv->published_ns = now;
    sv->published = what;
    cl_uint measured = sv->node->busy_share ? sv->node->ndev : 0;
    for (cl_uint d = 0; any && d < measured && d < EXEC_BUSY_DEVS; d++)
        st.busy[d] = (uint16_t)exec_busy_permille(sv->node, d);
    proxyd_worker_publish(any ? &st : NULL, measured);
    publish_figures(sv, any);
}

/* How many sessions this process has open. */
static int live_now(struct server *sv)
{
    pthread_mutex_lock(&sv->lock);
    int n = sv->live;
    pthread_mutex_unlock(&sv->lock);
    return n;
}

/* --metrics-file, a daemon: its figures and its workers', every
 * metrics_ns, from its first pass. */
static void write_metrics(struct server *sv)
{
    uint64_t t = vocl_now_ns();
    if (!sv->metrics || sv->worker || t < sv->metrics_due)
        return;
    sv->metrics_due = t + sv->metrics_ns;
    struct proxyd_figures f;
    proxyd_figures_own(sv->node, (uint64_t)live_now(sv), &f);
    if (sv->isolate)
        proxyd_workers_figures(&f);
    proxyd_metrics_write(sv->metrics, &f, sv->node);
}

/* How many clients there are now, and the i-th of them: the accept thread
 * may grow the array meanwhile (daemon mode); only this thread shrinks it. */
static int clients_now(struct server *sv)
{
    pthread_mutex_lock(&sv->lock);
    int n = sv->nclients;
    pthread_mutex_unlock(&sv->lock);
    return n;
}

static struct client *client_at(struct server *sv, int i)
{
    pthread_mutex_lock(&sv->lock);
    struct client *cl = sv->clients[i];
    pthread_mutex_unlock(&sv->lock);
    return cl;
}

/* Ends cl's session; why: NULL after its BYE.  What it held is released
 * by release_clients, once no read of it is on its way out: one may wait
 * for its device (a long kernel), and this thread waits for no one. */
static void close_client(struct server *sv, struct client *cl, const char *why)
{
    if (why && !atomic_load(&cl->s.lost))
        proxyd_tell_closed(&cl->s, why); /* (a client waiting for a reply learns at once) */
    exec_session_close(&cl->s);
    if (!sv->job_mode)
        vocl_live_unlink(cl->chan.live); /* no more pongs: a client still waiting learns */
    cl->gone = true;
    cl->closed_ns = vocl_now_ns();
    sv->closing++;
    pthread_mutex_lock(&sv->lock);
    int left = --sv->live;
    pthread_mutex_unlock(&sv->lock);
    if (why)
        vocl_warn("client %d: session closed after %s: everything it held is released "
                  "(%d clients left)", cl->id, why, left);
    else
        vocl_info("client %d: session closed (%d left)", cl->id, left);
}

/* A closed session's chunk that its client began to send and never
 * finished (it died in the middle of it): given up after this. */
#define GIVE_UP_NS (2ull * 1000000000u)

/* Releases what the closed sessions held, where nothing is on its way out. */
static void release_clients(struct server *sv)
{
    for (int i = 0, n = clients_now(sv); i < n && sv->closing; i++) {
        struct client *cl = client_at(sv, i);
        if (!cl->gone || cl->released)
            continue;
        if (vocl_now_ns() - cl->closed_ns > GIVE_UP_NS)
            exec_inbound_give_up(&cl->s);
        if (exec_session_draining(&cl->s))
            continue;
        exec_session_end(&cl->s); /* (its stream flush returns at once) */
        proxyd_chan_drop(&cl->chan);
        cl->released = true;
        sv->closing--;
    }
}

/* Daemon mode: a released client's connection is read no more (what it
 * still sends is dropped); it is closed when its entry goes (sweep_clients). */
static void let_go(struct server *sv)
{
    for (int i = 0, n = clients_now(sv); i < n; i++) {
        struct client *cl = client_at(sv, i);
        if (cl->released && !cl->freed) {
            cl->freed = true;
            vocl_info("client %d: released", cl->id);
        }
    }
}

/* Daemon mode: the clients let go leave the table once nothing still due
 * names their sessions. */
static void sweep_clients(struct server *sv)
{
    struct client *gone = NULL;
    pthread_mutex_lock(&sv->lock);
    int kept = 0;
    for (int i = 0; i < sv->nclients; i++) {
        struct client *cl = sv->clients[i];
        /* (Closed once nothing names it, and after the client hung up,
         * or 2 s: ucx.h says why.) */
        struct vocl_conn *conn = cl->chan.ch.conn;
        if (cl->freed && !exec_session_held(&cl->s) &&
            (!conn || vocl_conn_dead(conn) || vocl_now_ns() - cl->closed_ns > GIVE_UP_NS)) {
            cl->next_gone = gone;
            gone = cl;
        } else {
            sv->clients[kept++] = cl;
        }
    }
    sv->nclients = kept;
    pthread_mutex_unlock(&sv->lock);
    /* Closing flushes what is left to the peer: waited for with no lock
     * held (the accept thread's greetings take sv->lock). */
    while (gone) {
        struct client *cl = gone;
        gone = cl->next_gone;
        vocl_conn_close(cl->chan.ch.conn);
        free(cl);
    }
}

/* Daemon mode: a client has this long from its connection to its HELLO
 * (its token), VOCL_CONNECT_TIMEOUT seconds (default 5): one that says
 * nothing holds no session, nor a worker, for longer. */
static uint64_t hello_timeout_ns(void)
{
    static uint64_t ns;
    if (!ns) {
        const char *v = getenv("VOCL_CONNECT_TIMEOUT");
        double s = v && *v ? atof(v) : 5.0;
        ns = (uint64_t)((s > 0 ? s : 5.0) * 1e9);
    }
    return ns;
}

/* Idle: a client that stopped answering pings died; its objects go. */
static void check_clients(struct server *sv)
{
    for (int i = 0, n = clients_now(sv); i < n; i++) {
        struct client *cl = client_at(sv, i);
        if (!sv->job_mode && !cl->gone && !cl->s.hello &&
            vocl_now_ns() - cl->since_ns > hello_timeout_ns()) {
            atomic_store(&cl->s.lost, true); /* (a worker ends at once) */
            proxyd_count(PROXYD_REFUSED_HELLO_TIMEOUT, 1);
            close_client(sv, cl, "no HELLO (token) in time (VOCL_CONNECT_TIMEOUT)");
            continue;
        }
        if (!cl->gone && !vocl_live_ok(&cl->lw)) {
            if (sv->job_mode)
                atomic_store(&proxyd_peer_died, true);
            atomic_store(&cl->s.lost, true);
            char why[96];
            snprintf(why, sizeof(why), "it died (%s)", vocl_live_why(cl->chan.live));
            close_client(sv, cl, why);
        }
    }
}

/* A request refused whole (too large, or no memory for it): answered with
 * err, by its seq, if its sender waits for a reply.  Its header is read
 * from a copy of it (MPI fills nothing of a message cut short); a message
 * too large even for that ends the session, since it cannot be answered. */
static void refuse(struct server *sv, struct client *cl, struct vocl_probed *msg, cl_int err)
{
    size_t count = msg->len;
    uint8_t *copy = count >= VOCL_HDR_SIZE && count <= 4 * (size_t)VOCL_MSG_MAX ? malloc(count)
                                                                               : NULL;
    struct vocl_msg_hdr h = {0};
    if (copy)
        vocl_mrecv(msg, copy, count);
    else
        vocl_mrecv(msg, &h, 0);
    if (copy)
        vocl_hdr_get(copy, VOCL_HDR_SIZE, &h); /* only the length disagrees */
    free(copy);
    vocl_warn("client %d: refused a message of %zu bytes (%s)", cl->id, count,
              err == CL_OUT_OF_HOST_MEMORY ? "out of memory" : "over the limit");
    if (h.magic != VOCL_WIRE_MAGIC) {
        atomic_store(&cl->s.broken, true); /* unanswerable: the session ends */
        return;
    }
    if (!(h.flags & VOCL_F_REPLY))
        return;
    vocl_wr_begin(&sv->reply, h.opcode, 0, h.seq);
    vocl_wr_i32(&sv->reply, err);
    vocl_wr_finish(&sv->reply);
    proxyd_reply(&cl->s, &sv->reply);
}

static void ended(struct server *sv, struct client *cl, int rc, bool bye);

/* Receives and executes one request of client cl; msg was probed. */
static void handle(struct server *sv, struct client *cl, struct vocl_probed *msg)
{
    size_t count = msg->len;
    if (count > VOCL_MSG_MAX) {
        refuse(sv, cl, msg, CL_OUT_OF_RESOURCES);
        if (cl->s.broken)
            close_client(sv, cl, "an unreadable message");
        return;
    }
    if (count > sv->cap) {
        uint8_t *nb = realloc(sv->buf, count);
        if (!nb) {
            refuse(sv, cl, msg, CL_OUT_OF_HOST_MEMORY);
            if (cl->s.broken)
                close_client(sv, cl, "a message it had no memory for");
            return;
        }
        sv->buf = nb;
        sv->cap = count;
    }
    if (vocl_mrecv(msg, sv->buf, count)) {
        if (cl->chan.ch.conn && vocl_conn_dead(cl->chan.ch.conn))
            atomic_store(&cl->s.lost, true); /* (it went in the middle of it) */
        close_client(sv, cl, "a message that could not be received");
        return;
    }
    proxyd_count(PROXYD_COMMANDS, 1);
    proxyd_count(PROXYD_BYTES_IN, count);
    int rc = exec_request(&cl->s, sv->buf, count, &sv->reply);
    bool moved = false;
    if (rc >= 0 && exec_session_parked(&cl->s))
        rc = exec_inbound_step(&cl->s, &sv->reply, &moved); /* (its first chunks may be here) */
    if (rc > 0)
        proxyd_reply(&cl->s, &sv->reply);
    exec_after_reply(&cl->s);
    vocl_live_begin(&cl->lw, cl->chan.live); /* it spoke: no ping due for a while */
    struct vocl_msg_hdr h;
    bool bye = vocl_hdr_get(sv->buf, count, &h) && h.opcode == VOCL_OP_BYE;
    ended(sv, cl, rc, bye);
}

/* After cl's request or write step (rc: as exec_request's): its session
 * closed if it said BYE, died or broke. */
static void ended(struct server *sv, struct client *cl, int rc, bool bye)
{
    if (bye) {
        if (cl->s.peer_died && sv->job_mode) {
            atomic_store(&proxyd_peer_died, true);
            proxyd_left_told++;
        } else {
            proxyd_left_untold++;
        }
        close_client(sv, cl, NULL);
    } else if (atomic_load(&cl->s.lost))
        close_client(sv, cl, "it died");
    else if ((rc < 0 || cl->s.broken) && !cl->s.hello)
        close_client(sv, cl, NULL); /* (its HELLO's reply says why: refused) */
    else if (rc < 0 || cl->s.broken)
        close_client(sv, cl, "a protocol error");
}

/* Moves on what sessions wait for: parked writes (inbound.c), replies
 * their clients have not taken (channel.c).  *any_held: a session's next
 * request must wait.  True when something moved. */
static bool move_on(struct server *sv, bool *any_held)
{
    bool moved = false, notes = false;
    *any_held = false;
    uint64_t posted = exec_notify_posted();
    if (posted != sv->notes_seen) { /* (context notifications: notify.c) */
        sv->notes_seen = posted;
        notes = true;
    }
    for (int i = 0, n = clients_now(sv); i < n; i++) {
        struct client *cl = client_at(sv, i);
        bool stuck;
        if (cl->gone)
            continue;
        if (notes)
            proxyd_notes_push(&cl->s);
        cl->held = !proxyd_chan_flowing(&cl->chan, &stuck);
        if (stuck) {
            close_client(sv, cl, "a reply it did not take in 30 s");
            continue;
        }
        if (exec_session_parked(&cl->s)) {
            int rc = exec_inbound_step(&cl->s, &sv->reply, &moved);
            if (rc > 0)
                proxyd_reply(&cl->s, &sv->reply);
            if (rc < 0 || !exec_session_parked(&cl->s)) {
                moved = true;
                vocl_live_begin(&cl->lw, cl->chan.live);
                ended(sv, cl, rc, false);
            }
        }
        cl->held |= exec_session_parked(&cl->s);
        *any_held |= cl->held;
    }
    return moved;
}

/* One pass over the clients; true when a request was handled or a held
 * session moved on (move_on). */
static bool poll_once(struct server *sv)
{
    struct vocl_probed msg;
    bool held, moved = move_on(sv, &held);
    if (sv->job_mode && !held) {
        /* One communicator for all: probe any source, find its session. */
        MPI_Status st;
        int flag = 0, count = 0;
        MPI_Comm c = sv->clients[0]->chan.ch.comm;
        msg = (struct vocl_probed){.mpi = MPI_MESSAGE_NULL};
        MPI_Improbe(MPI_ANY_SOURCE, VOCL_TAG_REQ, c, &flag, &msg.mpi, &st);
        if (!flag)
            return moved;
        MPI_Get_count(&st, MPI_BYTE, &count);
        msg.len = count < 0 ? 0 : (size_t)count;
        int src = st.MPI_SOURCE;
        if (src >= sv->nclients || sv->clients[src]->gone) {
            char dummy;
            vocl_mrecv(&msg, &dummy, 0);
            vocl_warn("rank %d: dropped a message (not a client, or closed)", src);
            return true;
        }
        handle(sv, sv->clients[src], &msg);
        return true;
    }
    bool any = moved;
    for (int i = 0, n = clients_now(sv); i < n; i++) {
        struct client *cl = client_at(sv, i);
        if (cl->freed) { /* (released: what it sends is dropped, a few a pass) */
            char dummy;
            for (int k = 0; k < 64 && vocl_improbe(cl->chan.ch, VOCL_TAG_REQ, &msg) > 0; k++)
                vocl_mrecv(&msg, &dummy, 0);
            continue;
        }
        if (cl->gone || cl->held)
            continue;
        if (vocl_improbe(cl->chan.ch, VOCL_TAG_REQ, &msg) > 0) {
            handle(sv, cl, &msg);
            any = true;
        }
    }
    return any;
}

/* SIGUSR1: one line on stderr with what the proxy holds (voclproxyd(8)). */
static volatile sig_atomic_t state_wanted;
int proxyd_self_rank;

void proxyd_want_state(int sig)
{
    (void)sig;
    state_wanted = 1;
}

static void report_state(struct server *sv)
{
    state_wanted = 0;
    malloc_trim(0); /* freed memory goes back, so that the figure is what is held */
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = 0;
    if (f)
        fclose(f);
    pthread_mutex_lock(&sv->lock);
    int live = sv->live;
    pthread_mutex_unlock(&sv->lock);
    fprintf(stderr,
            "voclproxyd[%d]: state: %d sessions, %" PRIu64 " objects, %" PRIu64
            " bytes of memory objects, resident %ld KiB\n",
            proxyd_self_rank, live, (uint64_t)atomic_load(&sv->node->nobjs),
            (uint64_t)atomic_load(&sv->node->bytes), resident * (sysconf(_SC_PAGESIZE) / 1024));
}

/* Daemon mode: SIGTERM or SIGINT (or a worker's client that never came).
 * (A lock-free atomic: a signal handler may store to it.) */
static atomic_int stop_wanted;

void proxyd_want_stop(int sig)
{
    (void)sig;
    stop_wanted = 1;
}

/* A worker is done once its client's session is released, or when its
 * daemon is gone before a client came. */
static bool worker_done(struct server *sv)
{
    if (!sv->worker)
        return false;
    pthread_mutex_lock(&sv->lock);
    struct client *cl = sv->nclients ? sv->clients[0] : NULL;
    bool done = cl ? cl->released && !sv->closing : getppid() != sv->parent;
    pthread_mutex_unlock(&sv->lock);
    /* Its client died (nothing is owed to anyone, and what it left on the
     * device, a long kernel or queued commands, would hold a release for
     * as long as it runs), or its session is released and its last
     * replies taken: the process's end frees the rest at once (the
     * driver's teardown took seconds on a busy node). */
    bool lost = cl && cl->gone && atomic_load(&cl->s.lost);
    struct vocl_conn *conn = cl ? cl->chan.ch.conn : NULL;
    if (lost || (done && cl &&
                 (atomic_load(&cl->chan.unsent_bytes) == 0 || (conn && vocl_conn_dead(conn))))) {
        if (lost)
            vocl_note("client %d is gone: its worker ends", cl->id);
        proxyd_worker_publish(NULL, 0); /* (its file for vocl-smi goes too) */
        publish_figures(sv, false);     /* (its last: the daemon reads it as it reaps) */
        if (conn && !lost)
            vocl_conn_close_after_peer(conn, 1000000000u); /* (its BYE's reply is out) */
        fflush(NULL);
        _exit(0);
    }
    return done;
}

/* A worker whose daemon is gone (killed, say) ends its client's session
 * with the reason, as the daemon's own would have ended: the clients of a
 * daemon learn that it ended, whichever process served them.  Looked at
 * every 100 ms, busy or not. */
static void check_daemon(struct server *sv)
{
    static uint64_t next;
    uint64_t now = vocl_now_ns();
    if (!sv->worker || now < next)
        return;
    next = now + 100000000u;
    if (getppid() == sv->parent)
        return;
    for (int i = 0, n = clients_now(sv); i < n; i++) {
        struct client *cl = client_at(sv, i);
        if (!cl->gone)
            close_client(sv, cl, "its daemon ended");
    }
}

/* A daemon with no client at all (between applications, or handing each
 * to a worker) and a worker before its client look ten times less often
 * than the 1 ms an idle wait comes down to: each such process took 2 % of
 * a core doing nothing, and the worker kept ahead doubles them.  A new
 * client's first request waits for it at most this long, once. */
#define EMPTY_SLEEP_NS 10000000L

/* Serves until every client is gone (job mode) or until stopped (connect
 * mode; a worker: until its client is gone). */
static void serve(struct server *sv)
{
    uint64_t idle_since = vocl_now_ns();
    /* A nap on the bell (bell.h) is armed, then taken after one more look
     * for requests.  A ring ends the wait's idle time: the request may
     * reach MPI a moment after it (UCX), so the proxy polls and yields for
     * it as after the last one it served.  Not on a crowded node: there
     * every ring would take a core from the application while it still
     * sends to the other proxies (kmer-assemble, 16 proxies of 2 devices
     * on 2 cores: 3.3-4.1 s against 2.7-3.5 s without), and its proxies'
     * naps are short anyway. */
    struct vocl_bell *bell = NULL;
    long armed_ns = 0;
    unsigned long naps = 0, rung = 0;
    while (sv->job_mode ? sv->live > 0 || sv->closing || exec_builds_running()
                        : !stop_wanted && !worker_done(sv)) {
        atomic_store(&served_ns, vocl_now_ns());
        if (sv->isolate)
            proxyd_workers_reap();
        check_daemon(sv);
        exec_busy_tick(sv->node);
        publish_state(sv);
        write_metrics(sv);
        if (state_wanted)
            report_state(sv);
        release_clients(sv);
        exec_reap(sv->node, false); /* (kept memory, pools of released contexts) */
        exec_peer_starts();         /* (links that wait for a thread) */
        bool built = exec_builds_answer(&sv->reply) > 0;
        if (poll_once(sv) || built) {
            idle_since = vocl_now_ns();
            if (armed_ns)
                vocl_bell_disarm(bell);
            armed_ns = 0;
            continue;
        }
        check_clients(sv);
        if (!sv->job_mode) {
            let_go(sv);
            sweep_clients(sv);
        }
        if (armed_ns) {
            naps++;
            if (vocl_bell_nap(bell, armed_ns)) {
                rung++;
                idle_since = vocl_now_ns();
            }
            armed_ns = 0;
        } else if (!sv->job_mode && clients_now(sv) == 0) {
            nanosleep(&(struct timespec){0, EMPTY_SLEEP_NS}, NULL);
        } else {
            /* Idle: poll, yield, then nap. */
            long ns = vocl_backoff_idle_step(idle_since, 100000);
            if (ns && !vocl_backoff_crowded() && (bell = exec_bell())) {
                vocl_bell_arm(bell);
                armed_ns = ns;
            } else if (ns) {
                nanosleep(&(struct timespec){0, ns}, NULL);
            }
        }
    }
    if (armed_ns)
        vocl_bell_disarm(bell);
    if (naps)
        vocl_info("%lu naps on the bell, %lu ended by a ring (a client's request, a build's end)",
                  naps, rung);
}

/*
 * After a peer died, MPI_Finalize would wait for the dead one forever
 * (MPICH/UCX), so the job ends with MPI_Abort.  Clients told so at BYE
 * leave without MPI_Finalize; an MPI_Abort before they exit would lose
 * their exit status (vocl-guard writes it down as they end), so the proxy
 * first waits until each of them is gone: on this node, its process; on
 * another, silence for the VOCL_PEER_TIMEOUT.  (Where mpiexec ends the job
 * as the first of them exits unfinalized, that comes first.)
 */
static void await_exits(struct server *sv)
{
    vocl_info("a client or a proxy died: waiting for the clients to exit");
    for (int i = 0; i < sv->nclients; i++) {
        struct client *cl = sv->clients[i];
        while (!atomic_load(&cl->s.lost) && vocl_live_ok(&cl->lw))
            nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
}

static void server_free(struct server *sv)
{
    for (int i = 0; i < sv->nclients; i++)
        free(sv->clients[i]);
    free(sv->clients);
    free(sv->buf);
    vocl_wr_free(&sv->reply);
}

int proxyd_job_mode(struct exec_node *node, int nclients)
{
    struct server sv = {.node = node, .job_mode = true, .lock = PTHREAD_MUTEX_INITIALIZER};
    node->sessions = list_sessions;
    node->sessions_ctx = &sv;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    proxyd_peer_comm = comm; /* its own tags: VOCL_TAG_PEER_MIN and above */
    MPI_Comm_rank(proxyd_peer_comm, &proxyd_peer_self);
    MPI_Comm_size(proxyd_peer_comm, &proxyd_peer_size);
    vocl_wr_init(&sv.reply);
    int *tag_ub, flag = 0;
    MPI_Comm_get_attr(comm, MPI_TAG_UB, &tag_ub, &flag);
    if (flag)
        vocl_data_tag_ub(*tag_ub); /* as libvocl does, on the same communicator */
    vocl_live_start(comm); /* answer pings; notice clients and peers that die */
    for (int r = 0; r < nclients; r++)
        if (!add_client(&sv, VOCL_CHAN_MPI(comm, r), r, r, 0, NULL)) {
            vocl_error("out of memory");
            return 1;
        }
    serve(&sv);
    if (atomic_load(&proxyd_peer_died) && proxyd_left_told && !proxyd_left_untold)
        await_exits(&sv);
    vocl_live_stop();
    /* A reply still waiting for its events names its session (the
     * sessions are closed: it is dropped when they complete). */
    if (exec_replies_settle(10))
        server_free(&sv);
    else
        vocl_warn("replies still wait for device commands after 10 s: the sessions stay");
    proxyd_peer_comm = MPI_COMM_NULL;
    MPI_Comm_free(&comm);
    return 0;
}

/* --- daemon mode ----------------------------------------------------------------------------------- */

/*
 * Connections are accepted on a thread of their own (the VOCL paper's
 * accept thread); each one's first exchange (where each side runs, or,
 * with --isolate, the worker it is handed to) runs on a short thread of
 * its own, so that a client that connects and says nothing holds up no
 * other: it is dropped after VOCL_CONNECT_TIMEOUT.  At most GREETING of
 * them at once; more are refused with a message, and their clients may
 * try again.
 */
#define GREETING 128

/*
 * systemd's service manager (sd_notify(3), without libsystemd: one
 * datagram a message to $NOTIFY_SOCKET): READY=1 once the daemon listens,
 * WATCHDOG=1 from the accept loop while the serving loop goes round
 * (WatchdogSec: a daemon that stops serving is restarted), STOPPING=1.
 */
static void notify(const char *msg)
{
    const char *path = getenv("NOTIFY_SOCKET");
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = path ? strlen(path) : 0;
    if (!n || n >= sizeof(a.sun_path) || (path[0] != '/' && path[0] != '@'))
        return;
    memcpy(a.sun_path, path, n);
    if (a.sun_path[0] == '@')
        a.sun_path[0] = 0; /* (the abstract namespace) */
    int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    sendto(fd, msg, strlen(msg), MSG_NOSIGNAL, (struct sockaddr *)&a,
           (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n));
    close(fd);
}

/* The watchdog's period (WATCHDOG_USEC, set by systemd), half of it; 0: none. */
static uint64_t watchdog_half_ns(void)
{
    const char *v = getenv("WATCHDOG_USEC");
    long long us = v ? atoll(v) : 0;
    return us > 0 ? (uint64_t)us * 500u : 0;
}

struct acceptor {
    struct server *sv;
    struct vocl_listener *listener;
    uint64_t key;     /* a worker: what its one client must present (0: a daemon) */
    int pipe;         /* a worker: its port's pipe to the daemon (-1: a daemon) */
    atomic_int greeting;
    atomic_int next;  /* clients' numbers, from 1 */
    atomic_bool done; /* a worker has its client */
};

struct greeting {
    struct acceptor *a;
    struct vocl_conn *conn;
    int n;
};

/* --isolate: client n goes to a worker of its own (workers.c); or, a
 * client whose worker ended asks how (VOCL_LIVE_WHY and the worker's key). */
static void hand_on(struct vocl_conn *conn, int n)
{
    char where[VOCL_LIVE_MOVED_MAX];
    int64_t pid = 0, word = 0;
    if (vocl_live_greet_moved(conn, &pid, &word)) {
        vocl_warn("client %d from %s: said nothing after connecting: dropped", n,
                  vocl_conn_peer(conn));
        proxyd_count(PROXYD_REFUSED_HELLO_TIMEOUT, 1);
        vocl_conn_close(conn);
        return;
    }
    if (word & VOCL_LIVE_WHY) {
        proxyd_worker_fate((uint64_t)(word & ~VOCL_LIVE_WHY), where, sizeof(where));
        vocl_live_tell(conn, where);
        vocl_conn_close_after_peer(conn, 2000000000u);
        return;
    }
    pid_t worker = proxyd_worker_take(n, where);
    if (worker > 0 && vocl_live_tell(conn, where) == 0) {
        vocl_note("client %d connected (process %lld) from %s: handed to worker process %d", n,
                  (long long)pid, vocl_conn_peer(conn), (int)worker);
    } else {
        vocl_warn("client %d from %s: could not be handed to a worker: dropped", n,
                  vocl_conn_peer(conn));
        proxyd_count(PROXYD_REFUSED_WORKER, 1);
        if (worker > 0)
            kill(worker, SIGTERM); /* (no client will come to it) */
    }
    vocl_conn_close_after_peer(conn, 2000000000u); /* (it goes on at the worker) */
}

static void *greet(void *arg)
{
    struct greeting g = *(struct greeting *)arg;
    free(arg);
    struct server *sv = g.a->sv;
    /* (Drained, the daemon greets the client itself, to refuse it with
     * the reason: the daemon alone knows it is drained.) */
    if (sv->isolate && !atomic_load(&sv->node->drained)) {
        hand_on(g.conn, g.n);
        atomic_fetch_sub(&g.a->greeting, 1);
        return NULL;
    }
    int64_t pid = 0, key = 0;
    int live = vocl_live_link(g.conn, 0, &pid, &key, NULL);
    struct client *cl = NULL;
    if (live < 0) {
        vocl_warn("client %d from %s: said nothing after connecting (or too many clients): "
                  "dropped", g.n, vocl_conn_peer(g.conn));
        proxyd_count(PROXYD_REFUSED_HELLO_TIMEOUT, 1);
    } else if (g.a->key && (uint64_t)key != g.a->key) {
        vocl_warn("client %d from %s: presented the wrong key for this worker: dropped", g.n,
                  vocl_conn_peer(g.conn));
        proxyd_count(PROXYD_REFUSED_TOKEN, 1);
        vocl_live_unlink(live);
        live = -1;
    } else if (g.a->key && atomic_exchange(&g.a->done, true)) {
        proxyd_count(PROXYD_REFUSED_OTHER, 1);
        vocl_live_unlink(live); /* (a worker serves one client) */
        live = -1;
    } else {
        int64_t local = vocl_live_local_pid(live);
        const long who[2] = {vocl_conn_peer_uid(g.conn), (long)pid};
        cl = add_client(sv, VOCL_CHAN_UCX(g.conn), live, g.n, local, who);
        if (!cl) {
            vocl_warn("client %d: out of memory: dropped", g.n);
            proxyd_count(PROXYD_REFUSED_OTHER, 1);
            vocl_live_unlink(live);
            live = -1;
        } else {
            vocl_note("client %d connected (process %lld) from %s%s", g.n, (long long)pid,
                      vocl_conn_peer(g.conn), local ? "" : ", another node");
        }
    }
    if (!cl)
        vocl_conn_close(g.conn);
    atomic_fetch_sub(&g.a->greeting, 1);
    return NULL;
}

static void *accept_thread(void *arg)
{
    struct acceptor *a = arg;
    uint64_t half = a->sv->worker ? 0 : watchdog_half_ns(), fed = 0, handed = 0;
    while (!atomic_load(&a->done)) {
        uint64_t now = vocl_now_ns();
        /* A worker handed out waits for its client as long as a client
         * waits for its daemon's answer, then ends (a client that never
         * came holds no worker). */
        if (a->pipe >= 0 && !handed && proxyd_worker_handed(a->pipe))
            handed = now;
        if (handed && now - handed > vocl_live_answer_ns() && !atomic_load(&a->greeting)) {
            vocl_warn("worker: its client did not come in %.0f s: ending",
                      (double)vocl_live_answer_ns() / 1e9);
            stop_wanted = 1;
            break;
        }
        if (half && now - fed >= half && now - atomic_load(&served_ns) < half) {
            notify("WATCHDOG=1");
            fed = now;
        }
        struct vocl_conn *conn = vocl_accept(a->listener, 200000000u);
        if (!conn)
            continue;
        int n = atomic_fetch_add(&a->next, 1) + 1;
        struct greeting *g = malloc(sizeof(*g));
        if (!g || atomic_fetch_add(&a->greeting, 1) >= GREETING) {
            vocl_warn("client %d from %s: %d connections being greeted already: refused", n,
                      vocl_conn_peer(conn), GREETING);
            proxyd_count(PROXYD_REFUSED_GREETING, 1);
            atomic_fetch_sub(&a->greeting, 1);
            free(g);
            vocl_conn_close(conn);
            continue;
        }
        *g = (struct greeting){.a = a, .conn = conn, .n = n};
        if (vocl_thread_detached(greet, g)) {
            vocl_warn("client %d: no thread to greet it on: refused", n);
            proxyd_count(PROXYD_REFUSED_OTHER, 1);
            atomic_fetch_sub(&a->greeting, 1);
            free(g);
            vocl_conn_close(conn);
        }
    }
    return NULL;
}

/* text into path, whole or not at all: written beside it and renamed, so
 * a client never reads half of it.  0, or -1 with a message. */
static int write_port_file(const char *path, const char *text)
{
    char tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid()) >= sizeof(tmp)) {
        vocl_error("--port-file %.40s...: path too long", path);
        return -1;
    }
    FILE *f = fopen(tmp, "w");
    bool ok = f && fprintf(f, "%s\n", text) > 0;
    if (f && fclose(f))
        ok = false;
    if (!ok || rename(tmp, path)) {
        vocl_error("--port-file %s: cannot write it (%s)", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/*
 * vocl-ctl's requests (common/ctlsock.h, proxy-NAME.sock): "drain" refuses
 * new sessions from now on (for maintenance; vocl-ctl moves the open ones
 * away), "undrain" takes them again.
 */
static void daemon_ctl(int fd, const char *req, void *arg)
{
    struct acceptor *a = arg;
    bool drain = strcmp(req, "drain") == 0;
    if (!drain && strcmp(req, "undrain") != 0) {
        vocl_ctl_say(fd, "error unknown request \"%.64s\" (drain, undrain)\n", req);
        return;
    }
    atomic_store(&a->sv->node->drained, drain);
    vocl_note("%s by vocl-ctl: new sessions are %s", drain ? "drained" : "undrained",
             drain ? "refused" : "served");
    vocl_ctl_say(fd, "ok %s: new sessions are %s\n", drain ? "drained" : "undrained",
                 drain ? "refused" : "served");
}

/* The name this proxy goes by: --name, else the host's. */
static const char *proxy_name(const struct options *o, char *buf, size_t n)
{
    if (o->name)
        return o->name;
    if (gethostname(buf, n - 1))
        snprintf(buf, n, "localhost");
    buf[n - 1] = 0;
    return buf;
}

/* The tokens: one for all (the token file), or one per user (--users). */
static int setup_tokens(struct exec_node *node, const struct options *o)
{
    static struct vocl_token token;
    char why[256];
    if (o->users) {
        struct stat st;
        if (stat(o->users, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
            (st.st_mode & 022)) {
            vocl_error("--users %s: not a directory of this user's that only it may write",
                       o->users);
            return -1;
        }
        node->users = o->users;
        if (o->worker_fd < 0)
            vocl_note("tokens per user: %s/USER", o->users);
        return 0;
    }
    if (vocl_token_path(&token, o->token_file)) {
        vocl_error("--listen: no token file (--token-file, VOCL_TOKEN_FILE or HOME)");
        return -1;
    }
    bool fresh;
    if (vocl_token_create(&token, &fresh, why, sizeof(why))) {
        vocl_error("--listen: token file %s: %s", token.path, why);
        return -1;
    }
    if (fresh)
        vocl_warn("made a new token in %s: clients need the same file (VOCL_TOKEN_FILE)",
                  token.path);
    node->token = &token;
    return 0;
}

#define LISTEN_TRIES 90

int proxyd_listen_mode(struct exec_node *node, const struct options *o)
{
    struct server sv = {.node = node,
                        .lock = PTHREAD_MUTEX_INITIALIZER,
                        .isolate = o->isolate && o->worker_fd < 0,
                        .worker = o->worker_fd >= 0,
                        .parent = getppid(),
                        .metrics = o->metrics_file,
                        .metrics_ns = o->metrics_ns};
    node->sessions = list_sessions;
    node->sessions_ctx = &sv;
    static struct acceptor a;
    a.sv = &sv;
    a.pipe = o->worker_fd;
    if (setup_tokens(node, o))
        return 1;
    char err[160];
    /* A worker listens on a port the kernel picks, for its one client.  A
     * daemon restarted at once may find its port still taken by
     * connections of the last one closing: it tries for LISTEN_TRIES s. */
    bool in_use = false;
    for (int i = 0; i < LISTEN_TRIES; i++) {
        a.listener = vocl_listen(o->address, sv.worker ? 0 : o->port, &in_use, err, sizeof(err));
        if (a.listener || !in_use || stop_wanted)
            break;
        if (i == 0)
            vocl_warn("port %d is in use: trying again every second for %d s", o->port,
                      LISTEN_TRIES);
        sleep(1);
    }
    if (!a.listener) {
        vocl_error("--listen: cannot listen on %s:%d: %s", o->address ? o->address : "*",
                   sv.worker ? 0 : o->port, err);
        return 1;
    }
    int port = vocl_listener_port(a.listener);
    char host[256];
    if (sv.worker) {
        if (getrandom(&a.key, sizeof(a.key), 0) != sizeof(a.key) || !(a.key &= (1ull << 62) - 1)) {
            vocl_error("worker: no random key");
            return 1;
        }
        char where[64];
        snprintf(where, sizeof(where), "%d %" PRIu64, port, a.key);
        if (proxyd_worker_report(o->worker_fd, where)) {
            vocl_error("worker: cannot give the daemon its port");
            return 1;
        }
        vocl_info("worker: waiting for its client on port %d", port);
    } else {
        /* (HOST:PORT for clients: the address listened on, or for every
         * interface this host's name.) */
        char text[300];
        bool any = !o->address || !strcmp(o->address, "0.0.0.0") || !strcmp(o->address, "::");
        if (any && gethostname(host, sizeof(host) - 1))
            snprintf(host, sizeof(host), "localhost");
        host[sizeof(host) - 1] = 0;
        snprintf(text, sizeof(text), "%s:%d", any ? host : o->address, port);
        if (o->port_file && write_port_file(o->port_file, text)) {
            vocl_listener_close(a.listener);
            return 1;
        }
        dprintf(proxyd_stdout, "%s\n", text); /* (stdout is kernels' now: output.c) */
        vocl_note("listening on %s:%d%s", o->address ? o->address : "*", port,
                 sv.isolate ? " (each client in a worker process)" : "");
        char ctl[300];
        snprintf(ctl, sizeof(ctl), "proxy-%s", proxy_name(o, host, sizeof(host)));
        vocl_ctl_listen(ctl, daemon_ctl, &a);
    }
    if (sv.isolate)
        proxyd_workers_ahead(); /* (the first client need not wait for one) */
    vocl_wr_init(&sv.reply);
    /* Clients are linked to the liveness thread as they come. */
    vocl_live_start(MPI_COMM_NULL);
    pthread_t t;
    if (pthread_create(&t, NULL, accept_thread, &a)) {
        vocl_error("cannot start the accept thread");
        vocl_listener_close(a.listener);
        return 1;
    }
    if (!sv.worker)
        notify("READY=1");
    serve(&sv); /* a shared proxy serves until it is stopped */

    if (!sv.worker)
        notify("STOPPING=1");
    if (sv.metrics && !sv.worker)
        unlink(sv.metrics); /* (its figures stop: none are shown as current) */
    atomic_store(&a.done, true);
    pthread_join(t, NULL); /* (it looks at done every 200 ms) */
    vocl_listener_close(a.listener);
    if (sv.isolate)
        proxyd_workers_stop();
    if (sv.worker) {
        proxyd_worker_publish(NULL, 0);
        publish_figures(&sv, false);
    }
    if (!sv.worker || sv.live)
        vocl_note("stopping: %d clients' sessions end", sv.live);
    for (int i = 0, n = clients_now(&sv); i < n; i++)
        if (!client_at(&sv, i)->gone)
            close_client(&sv, client_at(&sv, i), "the proxy was stopped");
    vocl_live_stop();
    if (o->port_file && !sv.worker)
        unlink(o->port_file);
    vocl_ctl_close();
    /* (Greetings under way may still hold connections: the process exits
     * without waiting for them.) */
    return 0;
}
