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
#include "shm.h"
#include "wire.h"

/* The liveness thread looks for pings and pongs this often: an answer takes
 * at most this long, far below any timeout, for ~100 cheap wake-ups a second. */
#define POLL_NS (10 * 1000000L)
#define DEFAULT_TIMEOUT_S 3.0
/* A ping this old to a peer of this node: its process is looked up. */
#define LOOKUP_NS (5 * POLL_NS)

/* Where a rank runs: the same node key (kernel boot and PID namespace)
 * means its pid names its process here. */
struct where {
    uint64_t node; /* 0: unknown */
    int64_t pid;
};

static struct {
    MPI_Comm comm;
    int size;
    _Atomic uint64_t *heard; /* per rank: when its last pong came */
    _Atomic uint64_t *asked; /* per rank: the ping it has not answered; 0: none */
    uint64_t timeout_ns;
    _Atomic uint64_t looked; /* every pong that came by then is taken */
    struct where *where;     /* per rank */
    uint64_t node;           /* this process's node key */
    char silence[64];        /* why a peer elsewhere is taken for dead */
    pthread_t thread;
    pthread_mutex_t nap_lock; /* the thread's naps end at once when it must stop */
    pthread_cond_t nap;
    atomic_bool stop;
    atomic_bool running; /* read by any waiting thread, even at exit */
} live = {.nap_lock = PTHREAD_MUTEX_INITIALIZER, .nap = PTHREAD_COND_INITIALIZER};

/* Pings and pongs carry no data; the byte must outlive the send. */
static const uint8_t nothing;

static void send_nothing(int rank, int tag)
{
    MPI_Request r;
    if (MPI_Isend(&nothing, 1, MPI_BYTE, rank, tag, live.comm, &r) == MPI_SUCCESS)
        MPI_Request_free(&r);
}

/* Takes one message on tag off the queue; its source, or -1 when none. */
static int take(int tag)
{
    MPI_Message m;
    MPI_Status st;
    int flag = 0;
    uint8_t b;
    if (MPI_Improbe(MPI_ANY_SOURCE, tag, live.comm, &flag, &m, &st) != MPI_SUCCESS || !flag)
        return -1;
    MPI_Mrecv(&b, 1, MPI_BYTE, &m, MPI_STATUS_IGNORE); /* a longer one is cut: no matter */
    return st.MPI_SOURCE >= 0 && st.MPI_SOURCE < live.size ? st.MPI_SOURCE : -1;
}

/* Takes the pongs that came; whether there was any. */
static bool take_pongs(void)
{
    bool any = false;
    for (int r; (r = take(VOCL_TAG_PONG)) >= 0; any = true) {
        atomic_store(&live.heard[r], vocl_now_ns());
        atomic_store(&live.asked[r], 0);
    }
    return any;
}

static void *live_thread(void *arg)
{
    (void)arg;
    while (!atomic_load(&live.stop)) {
        uint64_t t = vocl_now_ns();
        bool any = false;
        for (int r; (r = take(VOCL_TAG_PING)) >= 0; any = true)
            send_nothing(r, VOCL_TAG_PONG);
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

/* Whether rank runs on this node (its process can be looked up). */
static bool on_this_node(int rank)
{
    return live.where && live.node && live.where[rank].node == live.node &&
           live.where[rank].pid > 0;
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
    MPI_Comm_size(comm, &live.size);
    /* Every rank of the job calls this on the same communicator, right
     * after making it: a collective is safe here. */
    live.node = vocl_node_key(false);
    struct where me = {live.node, (int64_t)getpid()};
    live.where = calloc((size_t)live.size, sizeof(*live.where));
    if (!live.where) {
        vocl_error("out of memory at start");
        vocl_mpi_abort(comm, 1);
    }
    if (MPI_Allgather(&me, sizeof(me), MPI_BYTE, live.where, sizeof(me), MPI_BYTE, comm) !=
        MPI_SUCCESS)
        memset(live.where, 0, (size_t)live.size * sizeof(*live.where)); /* timeouts only */
    live.heard = calloc((size_t)live.size, sizeof(*live.heard));
    live.asked = calloc((size_t)live.size, sizeof(*live.asked));
    atomic_store(&live.stop, false);
    if (!live.heard || !live.asked || pthread_create(&live.thread, NULL, live_thread, NULL)) {
        free(live.heard);
        free(live.asked);
        live.heard = live.asked = NULL;
        vocl_warn("no liveness thread: a peer that dies will not be noticed");
        return -1;
    }
    live.running = true;
    return 0;
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

bool vocl_live_ok(struct vocl_live *w)
{
    if (!live.running || w->rank < 0 || w->rank >= live.size)
        return true;
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
    if (on_this_node(w->rank))
        return now - asked < LOOKUP_NS || !process_gone(live.where[w->rank].pid);
    /* Elsewhere, dead once this process looked for the pong a whole timeout
     * after the ping and found none: a liveness thread of ours that got no
     * CPU (a loaded node, a sanitizer) is no silence of the peer's. */
    return looked < asked || looked - asked < live.timeout_ns;
}

const char *vocl_live_why(int rank)
{
    if (rank >= 0 && rank < live.size && on_this_node(rank))
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
            if (!live.running || ranks[i] < 0 || ranks[i] >= live.size ||
                atomic_load(&live.heard[ranks[i]]) >= start)
                continue; /* answered (or nothing to ask) */
            /* Of this node: alive while its process is (as vocl_live_ok
             * has it), which needs no ping. */
            if (on_this_node(ranks[i])) {
                if (process_gone(live.where[ranks[i]].pid)) {
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
