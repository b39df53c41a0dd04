/*
 * liveness.c - pings and pongs between the ranks of a job: see liveness.h.
 */
#include "liveness.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backoff.h"
#include "log.h"
#include "mpi_start.h"
#include "chan.h"
#include "shm.h"
#include "ucx.h"
#include "wire.h"

/* The liveness thread looks for pings and pongs this often: an answer takes
 * at most this long, far below any timeout, for ~100 cheap wake-ups a second. */
#define POLL_NS (10 * 1000000L)
#define DEFAULT_TIMEOUT_S 3.0
/* A ping this old to a peer of this node: its process is looked up. */
#define LOOKUP_NS (5 * POLL_NS)
/* A peer of this node whose process lives but that has answered no ping
 * for this many timeouts is named in a warning (once a ping): it is still
 * taken for alive, but a wait on it may never end (liveness.h). */
#define SILENT_TIMEOUTS 10

/* Where a rank runs: the same node key (kernel boot and PID namespace)
 * means its pid names its process here. */
struct where {
    uint64_t node; /* 0: unknown */
    int64_t pid;
};

/* Peers are numbered: in job mode a peer's number is its rank on the job's
 * communicator; the peers linked later (connect mode, one
 * intercommunicator each) come after them. */
#define LINKS_MAX 4096

static struct {
    MPI_Comm comm; /* the job's, or MPI_COMM_NULL (connect mode) */
    int size;      /* ranks of comm; then the links */
    int nlinks;    /* slots of links in use or used, under links_lock */
    /* A linked peer's channel (chan.h); NULL: a free slot.  Under
     * links_lock, with the linked peers' where: held for no wait, only to
     * probe or send on a link. */
    struct vocl_conn **links;
    pthread_mutex_t links_lock;
    _Atomic uint64_t *heard; /* per peer: when its last pong came */
    _Atomic uint64_t *asked; /* per peer: the ping it has not answered; 0: none */
    _Atomic uint64_t *warned; /* per peer: the ping its silence was warned of */
    uint64_t timeout_ns;
    _Atomic uint64_t looked; /* every pong that came by then is taken */
    struct where *where;     /* per peer */
    uint64_t node;           /* this process's node key */
    char silence[64];        /* why a peer elsewhere is taken for dead */
    pthread_t thread;
    pthread_mutex_t nap_lock; /* the thread's naps end at once when it must stop */
    pthread_cond_t nap;
    atomic_bool stop;
    atomic_bool running; /* read by any waiting thread, even at exit */
} live = {.nap_lock = PTHREAD_MUTEX_INITIALIZER,
           .nap = PTHREAD_COND_INITIALIZER,
           .links_lock = PTHREAD_MUTEX_INITIALIZER};

/* How many peers there can be (ranks, then links). */
static int npeers(void)
{
    return live.size + (live.links ? LINKS_MAX : 0);
}

/* Pings and pongs carry no data; the byte must outlive the send. */
static const uint8_t nothing;

static void isend_nothing(MPI_Comm comm, int rank, int tag)
{
    MPI_Request r;
    if (MPI_Isend(&nothing, 1, MPI_BYTE, rank, tag, comm, &r) == MPI_SUCCESS)
        MPI_Request_free(&r);
}

static void send_nothing(int peer, int tag)
{
    if (peer < live.size) {
        isend_nothing(live.comm, peer, tag);
        return;
    }
    pthread_mutex_lock(&live.links_lock);
    struct vocl_conn *c = live.links[peer - live.size];
    struct vocl_req r;
    if (c && vocl_isend(VOCL_CHAN_UCX(c), tag, &nothing, 1, &r) == 0)
        vocl_req_free(&r);
    pthread_mutex_unlock(&live.links_lock);
}

/* Takes one message on tag from src of comm off the queue; its source, or
 * -1 when none. */
static int take_from(MPI_Comm comm, int src, int tag)
{
    MPI_Message m;
    MPI_Status st;
    int flag = 0;
    uint8_t b;
    if (MPI_Improbe(src, tag, comm, &flag, &m, &st) != MPI_SUCCESS || !flag)
        return -1;
    MPI_Mrecv(&b, 1, MPI_BYTE, &m, MPI_STATUS_IGNORE); /* a longer one is cut: no matter */
    return st.MPI_SOURCE;
}

/* Takes one message on tag from link c off its queue: whether there was one. */
static bool take_link(struct vocl_conn *c, int tag)
{
    struct vocl_probed m;
    uint8_t b;
    if (vocl_improbe(VOCL_CHAN_UCX(c), tag, &m) <= 0)
        return false;
    vocl_mrecv(&m, &b, 1); /* a longer one is cut: no matter */
    return true;
}

/* Takes one message on tag off the queue of the job's communicator or of
 * a link; the peer it came from, or -1 when none. */
static int take(int tag)
{
    if (live.comm != MPI_COMM_NULL) {
        int r = take_from(live.comm, MPI_ANY_SOURCE, tag);
        if (r >= 0 && r < live.size)
            return r;
    }
    int peer = -1;
    pthread_mutex_lock(&live.links_lock);
    for (int i = 0; i < live.nlinks && peer < 0; i++)
        if (live.links[i] && take_link(live.links[i], tag))
            peer = live.size + i;
    pthread_mutex_unlock(&live.links_lock);
    return peer;
}

/* How a peer is named in a message: a rank of the job, or a link. */
static const char *peer_name(int peer, char name[32])
{
    if (peer < live.size)
        snprintf(name, 32, "rank %d", peer);
    else
        snprintf(name, 32, "link %d", peer - live.size);
    return name;
}

static void heard_from(int peer)
{
    uint64_t now = vocl_now_ns();
    atomic_store(&live.heard[peer], now);
    uint64_t asked = atomic_exchange(&live.asked[peer], 0);
    char name[32];
    if (asked && atomic_exchange(&live.warned[peer], 0) == asked)
        vocl_warn("%s of this node answers again, after %.0f s", peer_name(peer, name),
                  (double)(now - asked) / 1e9);
}

/* Takes the pongs that came; whether there was any. */
static bool take_pongs(void)
{
    bool any = false;
    for (int r; (r = take(VOCL_TAG_PONG)) >= 0; any = true)
        heard_from(r);
    return any;
}

static void *live_thread(void *arg)
{
    (void)arg;
    while (!atomic_load(&live.stop)) {
        uint64_t t = vocl_now_ns();
        bool any = false;
        for (int r; (r = take(VOCL_TAG_PING)) >= 0; any = true) {
            send_nothing(r, VOCL_TAG_PONG);
            heard_from(r); /* a ping is a sign of life too */
        }
        any |= take_pongs();
        atomic_store(&live.looked, t); /* every pong that came by t is taken */
        if (any)
            continue;
        struct timespec until;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += POLL_NS;
        if (until.tv_nsec >= 1000000000L) {
            until.tv_sec++;
            until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&live.nap_lock);
        if (!atomic_load(&live.stop))
            pthread_cond_timedwait(&live.nap, &live.nap_lock, &until);
        pthread_mutex_unlock(&live.nap_lock);
    }
    return NULL;
}

/* Whether the process pid of this node is gone (or a zombie). */
static bool process_gone(int64_t pid)
{
    char path[64], stat[512];
    snprintf(path, sizeof(path), "/proc/%lld/stat", (long long)pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return true;
    ssize_t n = read(fd, stat, sizeof(stat) - 1);
    close(fd);
    if (n <= 0)
        return true;
    stat[n] = 0;
    const char *end = strrchr(stat, ')'); /* "pid (comm) S ..." */
    return end && end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X');
}

/* Where peer runs (a link's slot may be taken by a new peer meanwhile). */
static struct where where_of(int peer)
{
    if (!live.where)
        return (struct where){0, 0};
    if (peer < live.size)
        return live.where[peer];
    pthread_mutex_lock(&live.links_lock);
    struct where w = live.where[peer];
    pthread_mutex_unlock(&live.links_lock);
    return w;
}

/* Whether peer runs on this node: its process, which can be looked up; 0
 * when not. */
static int64_t pid_on_this_node(int peer)
{
    struct where w = where_of(peer);
    return live.node && w.node == live.node && w.pid > 0 ? w.pid : 0;
}

int64_t vocl_live_local_pid(int peer)
{
    return peer >= 0 && peer < npeers() ? pid_on_this_node(peer) : 0;
}

bool vocl_live_pid_gone(int64_t pid)
{
    return process_gone(pid);
}

int vocl_live_start(MPI_Comm comm)
{
    const char *t = getenv("VOCL_PEER_TIMEOUT");
    double secs = t && *t ? atof(t) : DEFAULT_TIMEOUT_S;
    if (secs < 0.1)
        secs = DEFAULT_TIMEOUT_S;
    live.timeout_ns = (uint64_t)(secs * 1e9);
    snprintf(live.silence, sizeof(live.silence), "no sign of life for %.1f s (VOCL_PEER_TIMEOUT)",
             secs);
    live.comm = comm;
    live.size = 0;
    if (comm != MPI_COMM_NULL)
        MPI_Comm_size(comm, &live.size);
    else if (!(live.links = calloc(LINKS_MAX, sizeof(*live.links))))
        goto fail;
    live.node = vocl_node_key(false);
    live.where = calloc((size_t)npeers(), sizeof(*live.where));
    live.heard = calloc((size_t)npeers(), sizeof(*live.heard));
    live.asked = calloc((size_t)npeers(), sizeof(*live.asked));
    live.warned = calloc((size_t)npeers(), sizeof(*live.warned));
    if (!live.where || !live.heard || !live.asked || !live.warned)
        goto fail;
    /* Every rank of the job calls this on the same communicator, right
     * after making it: a collective is safe here. */
    struct where me = {live.node, (int64_t)getpid()};
    if (comm != MPI_COMM_NULL &&
        MPI_Allgather(&me, sizeof(me), MPI_BYTE, live.where, sizeof(me), MPI_BYTE, comm) !=
            MPI_SUCCESS)
        memset(live.where, 0, (size_t)live.size * sizeof(*live.where)); /* timeouts only */
    atomic_store(&live.stop, false);
    if (pthread_create(&live.thread, NULL, live_thread, NULL))
        goto fail;
    live.running = true;
    return 0;
fail:
    free(live.where);
    free(live.heard);
    free(live.asked);
    free(live.warned);
    free(live.links);
    live.where = NULL;
    live.heard = live.asked = live.warned = NULL;
    live.links = NULL;
    vocl_warn("no liveness thread: a peer that dies will not be noticed");
    return -1;
}

/* The exchange of where each side runs, on a link: VOCL_CONNECT_TIMEOUT
 * seconds (default 5) at most (a peer that connects and says nothing holds
 * no thread for long). */
static uint64_t link_hello_ns(void)
{
    const char *v = getenv("VOCL_CONNECT_TIMEOUT");
    double s = v && *v ? atof(v) : 5.0;
    return (uint64_t)((s > 0 ? s : 5.0) * 1e9);
}

/* What each side of a link says: where it runs, and a word: a client's is
 * the key a worker gave it (0 for a daemon), a daemon's 0, or LINK_MOVED:
 * the client is to connect where the next message says. */
struct link_hello {
    struct where where;
    int64_t word;
};

#define LINK_MOVED INT64_MIN

/* A client waits this long for a daemon's answer, VOCL_CONNECT_TIMEOUT's
 * six times at least 30 s: a daemon that took the connection and is busy
 * (starting workers for many clients at once) is slow, not gone; the
 * daemon waits for a client's first words VOCL_CONNECT_TIMEOUT only. */
uint64_t vocl_live_answer_ns(void)
{
    uint64_t ns = 6 * link_hello_ns();
    return ns > 30000000000u ? ns : 30000000000u;
}

/* Sends out (nout bytes; NULL: nothing) and receives in (at most nin
 * bytes; NULL: nothing; *got: how many came) on c's link tag, within
 * limit ns; 0 or -1. */
static int exchange(struct vocl_conn *c, const void *out, size_t nout, void *in, size_t nin,
                    size_t *got, uint64_t limit)
{
    struct vocl_chan ch = VOCL_CHAN_UCX(c);
    struct vocl_req r[2] = {VOCL_REQ_NULL, VOCL_REQ_NULL};
    bool posted = (!in || vocl_irecv(ch, VOCL_TAG_LINK, in, nin, &r[0]) == 0) &&
                  (!out || vocl_isend(ch, VOCL_TAG_LINK, out, nout, &r[1]) == 0);
    uint64_t start = vocl_now_ns();
    bool failed = !posted;
    /* (Tested once more after the deadline: a thread that got no CPU for a
     * while does not take a message that came meanwhile for none.) */
    for (bool late = false; !failed && !late;) {
        late = vocl_now_ns() - start >= limit;
        int a = vocl_test(&r[0], got), b = vocl_test(&r[1], NULL);
        failed = a < 0 || b < 0;
        if (!failed && vocl_req_null(&r[0]) && vocl_req_null(&r[1]))
            return 0;
        if (!failed && !late)
            vocl_conn_backoff(c, start);
    }
    vocl_req_cancel(&r[0]);
    vocl_req_cancel(&r[1]);
    return -1;
}

int vocl_live_link(struct vocl_conn *c, int64_t word, int64_t *pid, int64_t *far_word,
                   char *moved_to)
{
    if (!live.running || !live.links)
        return -1;
    struct link_hello me = {{live.node, (int64_t)getpid()}, word}, far = {{0, 0}, 0};
    size_t got = 0;
    /* (A client, which may be handed on, waits for its daemon's answer.) */
    uint64_t limit = moved_to ? vocl_live_answer_ns() : link_hello_ns();
    if (exchange(c, &me, sizeof(me), &far, sizeof(far), &got, limit) || got != sizeof(far))
        return -1;
    if (far.word == LINK_MOVED) {
        char to[VOCL_LIVE_MOVED_MAX + 1] = {0};
        if (!moved_to || exchange(c, NULL, 0, to, VOCL_LIVE_MOVED_MAX, &got, limit))
            return -1;
        memcpy(moved_to, to, VOCL_LIVE_MOVED_MAX);
        moved_to[VOCL_LIVE_MOVED_MAX - 1] = 0;
        return VOCL_LIVE_MOVED;
    }
    int peer = -1;
    pthread_mutex_lock(&live.links_lock);
    for (int i = 0; i < LINKS_MAX && peer < 0; i++)
        if (!live.links[i]) {
            peer = live.size + i;
            live.where[peer] = far.where;
            atomic_store(&live.heard[peer], vocl_now_ns());
            atomic_store(&live.asked[peer], 0);
            atomic_store(&live.warned[peer], 0);
            live.links[i] = c;
            if (i >= live.nlinks)
                live.nlinks = i + 1;
        }
    pthread_mutex_unlock(&live.links_lock);
    if (pid)
        *pid = far.where.pid;
    if (far_word)
        *far_word = far.word;
    return peer;
}

int vocl_live_greet_moved(struct vocl_conn *c, int64_t *pid, int64_t *far_word)
{
    struct link_hello me = {{live.node, (int64_t)getpid()}, LINK_MOVED}, far = {{0, 0}, 0};
    size_t got = 0;
    if (exchange(c, &me, sizeof(me), &far, sizeof(far), &got, link_hello_ns()) ||
        got != sizeof(far))
        return -1;
    *pid = far.where.pid;
    *far_word = far.word;
    return 0;
}

int vocl_live_tell(struct vocl_conn *c, const char *text)
{
    return exchange(c, text, strlen(text) + 1, NULL, 0, NULL, vocl_live_answer_ns());
}

void vocl_live_unlink(int peer)
{
    if (!live.links || peer < live.size || peer >= npeers())
        return;
    pthread_mutex_lock(&live.links_lock);
    live.links[peer - live.size] = NULL;
    /* Pings it sent and no one took stay on its connection: its owner closes it. */
    pthread_mutex_unlock(&live.links_lock);
}

void vocl_live_stop(void)
{
    if (!live.running)
        return;
    atomic_store(&live.running, false);
    pthread_mutex_lock(&live.nap_lock);
    atomic_store(&live.stop, true);
    pthread_cond_signal(&live.nap);
    pthread_mutex_unlock(&live.nap_lock);
    pthread_join(live.thread, NULL);
    /* heard and asked stay: a callback thread may still be in vocl_live_ok. */
}

void vocl_live_drain(void)
{
    if (!live.heard) /* never started */
        return;
    while (take(VOCL_TAG_PING) >= 0 || take(VOCL_TAG_PONG) >= 0)
        ;
}

void vocl_live_begin(struct vocl_live *w, int rank)
{
    w->rank = rank;
    w->since = vocl_now_ns();
}

/* A peer of this node, alive but silent since the ping asked: warned of
 * once that ping is SILENT_TIMEOUTS timeouts old. */
static void silent_too_long(int peer, int64_t pid, uint64_t asked, uint64_t now)
{
    uint64_t none = 0;
    if (now - asked < SILENT_TIMEOUTS * live.timeout_ns ||
        !atomic_compare_exchange_strong(&live.warned[peer], &none, asked))
        return;
    char name[32];
    vocl_warn("%s of this node (pid %lld) has answered no ping for %.0f s though its process "
              "lives: it is stopped or starved, or MPI's path from it is blocked (with UCX's "
              "shared memory, a rank of this node killed amid a send can do that: man libvocl, "
              "BUGS); still waiting for it",
              peer_name(peer, name), (long long)pid, (double)(now - asked) / 1e9);
}

/* A linked peer whose connection failed (it died, or closed it): why,
 * copied into why (n bytes); false: not failed, or not a link. */
static bool link_failed(int peer, char *why, size_t n)
{
    if (!live.links || peer < live.size || peer >= npeers())
        return false;
    pthread_mutex_lock(&live.links_lock);
    struct vocl_conn *c = live.links[peer - live.size];
    bool dead = c && vocl_conn_dead(c);
    if (dead && why)
        snprintf(why, n, "%s", vocl_conn_why(c));
    pthread_mutex_unlock(&live.links_lock);
    return dead;
}

bool vocl_live_ok(struct vocl_live *w)
{
    if (!live.running || w->rank < 0 || w->rank >= npeers())
        return true;
    if (link_failed(w->rank, NULL, 0))
        return false; /* (UCX saw its connection end) */
    uint64_t now = vocl_now_ns(), heard = atomic_load(&live.heard[w->rank]);
    if (heard > w->since)
        w->since = heard;
    if (now - w->since < VOCL_LIVE_PING_NS)
        return true;
    /* (looked before asked: a pong taken by then has cleared asked) */
    uint64_t looked = atomic_load(&live.looked);
    uint64_t asked = atomic_load(&live.asked[w->rank]), none = 0;
    if (asked == 0) {
        /* One ping at a time, whichever thread waits. */
        if (atomic_compare_exchange_strong(&live.asked[w->rank], &none, now))
            send_nothing(w->rank, VOCL_TAG_PING);
        return true;
    }
    /* A peer of this node is dead when its process is gone, whatever the
     * time: a starved process is slow, not dead. */
    int64_t pid = pid_on_this_node(w->rank);
    if (pid) {
        if (now - asked < LOOKUP_NS)
            return true;
        if (process_gone(pid))
            return false;
        silent_too_long(w->rank, pid, asked, now);
        return true;
    }
    /* Elsewhere, dead once this process looked for the pong a whole timeout
     * after the ping and found none: a liveness thread of ours that got no
     * CPU (a loaded node, a sanitizer) is no silence of the peer's. */
    return looked < asked || looked - asked < live.timeout_ns;
}

const char *vocl_live_why(int rank)
{
    static _Thread_local char why[160];
    char conn[128];
    if (link_failed(rank, conn, sizeof(conn))) {
        snprintf(why, sizeof(why), "its connection failed: %s", conn);
        return why;
    }
    if (rank >= 0 && rank < npeers() && pid_on_this_node(rank))
        return "its process is gone";
    return live.silence;
}

int vocl_live_roll_call(const int *ranks, int n, bool *dead)
{
    struct vocl_live w;
    int left = n, ndead = 0;
    uint64_t start = vocl_now_ns();
    for (int i = 0; i < n; i++)
        dead[i] = false;
    while (left > 0) {
        left = 0;
        for (int i = 0; i < n; i++) {
            if (dead[i])
                continue;
            /* A wait that began a ping interval ago: pinged at once. */
            if (!live.running || ranks[i] < 0 || ranks[i] >= npeers() ||
                atomic_load(&live.heard[ranks[i]]) >= start)
                continue; /* answered (or nothing to ask) */
            /* Of this node: alive while its process is (as vocl_live_ok
             * has it), which needs no ping. */
            int64_t pid = pid_on_this_node(ranks[i]);
            if (pid) {
                if (process_gone(pid)) {
                    dead[i] = true;
                    ndead++;
                }
                continue;
            }
            w.rank = ranks[i];
            w.since = start - VOCL_LIVE_PING_NS;
            if (!vocl_live_ok(&w)) {
                dead[i] = true;
                ndead++;
                continue;
            }
            left++;
        }
        /* The pongs are taken here too: the liveness thread naps. */
        if (left && !take_pongs())
            vocl_backoff(start, 1000000);
    }
    return ndead;
}
