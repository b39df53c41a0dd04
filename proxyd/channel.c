/*
 * channel.c - voclproxyd's MPI channels: the data channel of a session
 * (chunks, with the liveness of its client), the reply channel (with the
 * kernel output and notifications before each reply), and the channel
 * between the proxies of one job (migrations).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "backoff.h"
#include "daemon.h"
#include "executor.h"
#include "liveness.h"
#include "log.h"
#include "protocol.h"
#include "thread.h"
#include "vocl_msg.h"
#include "wire.h"

/* A session's channel (daemon.h). */
static struct proxyd_chan *chan(struct proxyd_session *s)
{
    return s->transport;
}

static MPI_Comm session_comm(struct proxyd_session *s)
{
    return chan(s)->comm;
}

/* --- the MPI data channel ---------------------------------------------------------------------- */

/* A chunk the client promised: wait for it, but not forever. */
#define DATA_TIMEOUT_NS (30ull * 1000000000u)

/* A peer (client or proxy) stopped answering pings (liveness.h): MPI_Finalize
 * would wait for it forever, so this proxy will exit without it. */
atomic_bool proxyd_peer_died;

/* Clients that said BYE, told that a peer died (they leave without
 * MPI_Finalize) or not (they wait in it): how the job ends (main). */
int proxyd_left_told, proxyd_left_untold;

static int client_died(struct proxyd_session *s)
{
    if (chan(s)->job)
        atomic_store(&proxyd_peer_died, true);
    atomic_store(&s->lost, true);
    return -1;
}

static bool mpi_peer_died(void)
{
    return atomic_load(&proxyd_peer_died);
}

/* Receives the chunk msg (probed: st) into buf, if it is the n bytes due;
 * 0, or -1 (the session is out of step). */
static int take_chunk(struct proxyd_session *s, MPI_Message *msg, MPI_Status *st, void *buf,
                      size_t n)
{
    int count = 0;
    MPI_Get_count(st, MPI_BYTE, &count);
    if ((size_t)count != n) {
        /* Out of step: take the message off the queue and give up on the session. */
        char dummy;
        MPI_Mrecv(&dummy, 0, MPI_BYTE, msg, MPI_STATUS_IGNORE);
        vocl_warn("rank %d: data chunk of %d bytes where %zu were due", s->peer, count, n);
        return -1;
    }
    return MPI_Mrecv(buf, count, MPI_BYTE, msg, MPI_STATUS_IGNORE) == MPI_SUCCESS ? 0 : -1;
}

static int mpi_recv(struct proxyd_session *s, int tag, void *buf, size_t n)
{
    MPI_Message msg;
    MPI_Status st;
    int flag = 0;
    uint64_t start = vocl_now_ns();
    struct vocl_live lw;
    vocl_live_begin(&lw, chan(s)->live);
    while (!flag) {
        if (MPI_Improbe(s->peer, tag, session_comm(s), &flag, &msg, &st) != MPI_SUCCESS)
            return -1;
        if (!flag && !vocl_live_ok(&lw))
            return client_died(s);
        if (!flag && vocl_now_ns() - start > DATA_TIMEOUT_NS) {
            vocl_warn("rank %d: data chunk did not arrive in 30 s", s->peer);
            return -1;
        }
        if (!flag)
            vocl_backoff(start, 100000);
    }
    return take_chunk(s, &msg, &st, buf, n);
}

/* Tests the chunk mpi_recv_try began: 1 while it is still coming, 0 once
 * in, -1: MPI failed it (nothing more is written to its buffer). */
static int rx_test(struct proxyd_chan *c)
{
    int done = 0;
    if (c->rx == MPI_REQUEST_NULL)
        return 0;
    if (MPI_Test(&c->rx, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        c->rx = MPI_REQUEST_NULL;
        return -1;
    }
    return done ? 0 : 1;
}

static bool mpi_recv_busy(struct proxyd_session *s)
{
    return rx_test(chan(s)) > 0;
}

static void mpi_recv_give_up(struct proxyd_session *s)
{
    MPI_Request_free(&chan(s)->rx); /* (MPI frees it when it completes, if ever) */
}

/* The chunk on tag into buf, if it has come: 0, 1 (not yet) or -1.  A
 * chunk that has begun to come is received with MPI_Imrecv and tested on
 * later calls (with buf the same until it is in): MPICH on one node copies
 * it from the sender's memory at once, but between nodes, and with Open
 * MPI's shared-memory transport, a sender stopped in the middle of it
 * holds it up until it goes on, and this thread serves every session. */
static int mpi_recv_try(struct proxyd_session *s, int tag, void *buf, size_t n)
{
    struct proxyd_chan *c = chan(s);
    if (c->rx == MPI_REQUEST_NULL) {
        MPI_Message msg;
        MPI_Status st;
        int flag = 0, count = 0;
        if (MPI_Improbe(s->peer, tag, session_comm(s), &flag, &msg, &st) != MPI_SUCCESS)
            return -1;
        if (!flag)
            return 1;
        MPI_Get_count(&st, MPI_BYTE, &count);
        if ((size_t)count != n)
            return take_chunk(s, &msg, &st, buf, n); /* (out of step: dropped, -1) */
        if (MPI_Imrecv(buf, count, MPI_BYTE, &msg, &c->rx) != MPI_SUCCESS)
            return -1;
        c->rx_buf = buf;
    }
    if (c->rx_buf != buf) {
        vocl_warn("rank %d: a chunk's receive was moved while under way", s->peer);
        return -1; /* (a bug of the caller: never seen) */
    }
    return rx_test(c);
}

/* Waits for a send to s's client to complete: not forever, and not past
 * the client's death. */
static int sent(struct proxyd_session *s, MPI_Request *req)
{
    uint64_t start = vocl_now_ns();
    struct vocl_live lw;
    vocl_live_begin(&lw, chan(s)->live);
    for (;;) {
        int done = 0;
        if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return -1;
        if (done)
            return 0;
        if (!vocl_live_ok(&lw)) {
            MPI_Request_free(req);
            return client_died(s);
        }
        if (vocl_now_ns() - start > DATA_TIMEOUT_NS) {
            vocl_warn("rank %d: a message was not taken in 30 s", s->peer);
            MPI_Cancel(req);
            MPI_Request_free(req);
            return -1;
        }
        vocl_backoff(start, 100000);
    }
}

/* Posts a send to s's client; *req stays MPI_REQUEST_NULL when it fails. */
static int post(struct proxyd_session *s, int tag, const void *buf, size_t n, MPI_Request *req)
{
    if (MPI_Isend(buf, (int)n, MPI_BYTE, s->peer, tag, session_comm(s), req) == MPI_SUCCESS)
        return 0;
    *req = MPI_REQUEST_NULL;
    return -1;
}

/* A chunk of a read, posted; mpi_send_test says when the client took it. */
static int mpi_send_post(struct proxyd_session *s, int tag, const void *buf, size_t n,
                         struct proxyd_sending *h)
{
    _Static_assert(sizeof(MPI_Request) <= sizeof(h->handle), "an MPI_Request fits the handle");
    MPI_Request req;
    if (post(s, tag, buf, n, &req))
        return -1;
    memcpy(h->handle, &req, sizeof(req));
    return 0;
}

static int mpi_send_test(struct proxyd_session *s, struct proxyd_sending *h, bool give_up)
{
    MPI_Request req;
    int done = 0;
    memcpy(&req, h->handle, sizeof(req));
    if (give_up || atomic_load(&s->lost)) {
        MPI_Cancel(&req);
        MPI_Request_free(&req);
        return -1;
    }
    if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
        return -1;
    memcpy(h->handle, &req, sizeof(req));
    return done;
}

static int mpi_send(struct proxyd_session *s, int tag, const void *buf, size_t n)
{
    MPI_Request req;
    return post(s, tag, buf, n, &req) ? -1 : sent(s, &req);
}

/* --- what kernels print ------------------------------------------------------------------------
 *
 * Kernel printf writes to this process's stdout.  It is a pipe, read by a
 * thread into a buffer (so a kernel never blocks on a full pipe), and the
 * bytes go to the client, in an OUTPUT message just before its next reply:
 * the application prints them by the time clFinish or clWaitForEvents
 * returns.  With several clients, the one whose reply comes next gets them.
 */
static struct {
    pthread_mutex_t lock;
    int fd; /* read end; -1: stdout is not captured */
    struct vocl_wr buf;
} out = {PTHREAD_MUTEX_INITIALIZER, -1, {0}};

static void wr_raw(struct vocl_wr *w, const void *p, size_t n)
{
    void *d = vocl_wr_reserve(w, n);
    if (d)
        memcpy(d, p, n);
}

/* Moves what the pipe holds into out.buf (under out.lock). */
static void output_take(void)
{
    char tmp[4096];
    ssize_t n;
    while ((n = read(out.fd, tmp, sizeof(tmp))) > 0)
        wr_raw(&out.buf, tmp, (size_t)n);
}

static void *output_thread(void *arg)
{
    (void)arg;
    for (;;) {
        struct pollfd p = {.fd = out.fd, .events = POLLIN};
        if (poll(&p, 1, -1) < 0 && errno != EINTR)
            return NULL;
        if (p.revents & (POLLHUP | POLLERR | POLLNVAL))
            return NULL;
        pthread_mutex_lock(&out.lock);
        output_take();
        pthread_mutex_unlock(&out.lock);
    }
}

void proxyd_output_capture(void)
{
    int fds[2];
    fflush(stdout);
    if (pipe(fds))
        return;
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    if (dup2(fds[1], STDOUT_FILENO) < 0) {
        close(fds[0]);
        close(fds[1]);
        return;
    }
    close(fds[1]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    vocl_wr_init(&out.buf);
    out.fd = fds[0];
    vocl_thread_detached(output_thread, NULL);
}

/* --- replies the client has not taken yet --------------------------------------------------
 *
 * A reply MPI cannot hand over at once (one past the eager size, to a
 * client that is stopped, or slow to read) is kept with its buffer until
 * the client takes it: the thread replying goes on to other sessions.
 * A client that leaves UNSENT_MAX bytes untaken has its next requests
 * wait (the serving loop asks proxyd_chan_flowing); one that leaves a
 * reply untaken for DATA_TIMEOUT_NS has its session ended, as before.
 */
#define UNSENT_MAX (64u << 20)

struct unsent {
    struct unsent *next;
    MPI_Request req;
    uint8_t *buf;
    size_t len;
    uint64_t posted_ns;
};

/* Keeps req, a send of w's message, until it completes: w's buffer goes
 * with it (w is left empty, and usable).  -1 when it cannot be kept. */
static int keep_unsent(struct proxyd_chan *c, MPI_Request req, struct vocl_wr *w)
{
    struct unsent *u = malloc(sizeof(*u));
    if (!u)
        return -1;
    *u = (struct unsent){.req = req, .buf = w->buf, .len = w->len, .posted_ns = vocl_now_ns()};
    vocl_wr_init(w);
    pthread_mutex_lock(&c->lock);
    u->next = c->unsent;
    c->unsent = u;
    atomic_fetch_add(&c->unsent_bytes, u->len);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

bool proxyd_chan_flowing(struct proxyd_chan *c, bool *stuck)
{
    *stuck = false;
    if (atomic_load(&c->unsent_bytes) == 0)
        return true;
    uint64_t now = vocl_now_ns();
    pthread_mutex_lock(&c->lock);
    for (struct unsent **pu = &c->unsent, *u; (u = *pu);) {
        int done = 0;
        if (MPI_Test(&u->req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || done) {
            *pu = u->next;
            atomic_fetch_sub(&c->unsent_bytes, u->len);
            free(u->buf);
            free(u);
            continue;
        }
        *stuck |= now - u->posted_ns > DATA_TIMEOUT_NS;
        pu = &u->next;
    }
    bool flowing = atomic_load(&c->unsent_bytes) < UNSENT_MAX;
    pthread_mutex_unlock(&c->lock);
    return flowing;
}

void proxyd_chan_drop(struct proxyd_chan *c)
{
    pthread_mutex_lock(&c->lock);
    while (c->unsent) {
        struct unsent *u = c->unsent;
        c->unsent = u->next;
        MPI_Cancel(&u->req);
        MPI_Request_free(&u->req);
        free(u->buf);
        free(u);
    }
    atomic_store(&c->unsent_bytes, 0);
    pthread_mutex_unlock(&c->lock);
}

/* A reply, after the kernel output and context notifications before it.
 * Any thread may reply: the OUTPUT is posted under the lock, so that
 * output leaves in the order it was printed; nothing waits under it, nor
 * after it: what the client does not take at once is kept (above). */
int proxyd_mpi_reply(struct proxyd_session *s, struct vocl_wr *w)
{
    struct vocl_wr output, note;
    MPI_Request req[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    struct vocl_wr *msg[3] = {&output, &note, w};
    vocl_wr_init(&output);
    vocl_wr_init(&note);
    if (out.fd >= 0) {
        fflush(stdout);
        pthread_mutex_lock(&out.lock);
        output_take();
        if (out.buf.len) {
            vocl_wr_begin(&output, VOCL_OP_OUTPUT, 0, 0);
            vocl_enc_OUTPUT_req(&output, &(struct vocl_msg_OUTPUT_req){
                                             .text = {out.buf.buf, out.buf.len}});
            vocl_wr_finish(&output);
            if (!output.fail)
                post(s, VOCL_TAG_REP, output.buf, output.len, &req[0]);
            vocl_wr_reset(&out.buf);
        }
        pthread_mutex_unlock(&out.lock);
    }
    if (proxyd_notify_take(s, &note))
        post(s, VOCL_TAG_REP, note.buf, note.len, &req[1]);
    int rc = post(s, VOCL_TAG_REP, w->buf, w->len, &req[2]);
    for (int i = 0; i < 3; i++) {
        int done = 0;
        if (req[i] == MPI_REQUEST_NULL)
            continue;
        if (atomic_load(&s->lost)) /* (found by an earlier one): nothing takes it */
            MPI_Request_free(&req[i]);
        else if (MPI_Test(&req[i], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            rc = -1;
        else if (!done && keep_unsent(chan(s), req[i], msg[i]) && sent(s, &req[i]))
            rc = -1; /* (no memory to keep it: waited for, as it was) */
    }
    if (atomic_load(&s->lost))
        rc = -1;
    vocl_wr_free(&output);
    vocl_wr_free(&note);
    return rc;
}

/* Migrations go between the proxies of one job (MPI_COMM_NULL in connect mode). */
MPI_Comm proxyd_peer_comm = MPI_COMM_NULL;
int proxyd_peer_self, proxyd_peer_size;

static bool mpi_peer_ok(int rank)
{
    return proxyd_peer_comm != MPI_COMM_NULL && rank >= 0 && rank < proxyd_peer_size &&
           rank != proxyd_peer_self;
}

static int mpi_peer_send(int rank, int tag, const void *buf, size_t n)
{
    return MPI_Send(buf, (int)n, MPI_BYTE, rank, tag, proxyd_peer_comm) == MPI_SUCCESS ? 0 : -1;
}

static int mpi_peer_recv(int rank, int tag, void *buf, size_t n, size_t *got)
{
    MPI_Message msg;
    MPI_Status st;
    int count = 0, flag = 0;
    uint64_t start = vocl_now_ns();
    struct vocl_live lw;
    vocl_live_begin(&lw, rank);
    for (;;) {
        if (MPI_Improbe(rank, tag, proxyd_peer_comm, &flag, &msg, &st) != MPI_SUCCESS)
            return -1;
        if (flag)
            break;
        if (!vocl_live_ok(&lw)) {
            vocl_warn("proxy rank %d: %s: it died", rank, vocl_live_why(rank));
            atomic_store(&proxyd_peer_died, true);
            return -1;
        }
        vocl_backoff(start, 100000);
    }
    MPI_Get_count(&st, MPI_BYTE, &count);
    *got = (size_t)count;
    if ((size_t)count <= n)
        return MPI_Mrecv(buf, count, MPI_BYTE, &msg, MPI_STATUS_IGNORE) == MPI_SUCCESS ? 0 : -1;
    void *drop = malloc((size_t)count);
    int rc = drop && MPI_Mrecv(drop, count, MPI_BYTE, &msg, MPI_STATUS_IGNORE) == MPI_SUCCESS;
    free(drop);
    return rc ? 0 : -1;
}

const struct proxyd_data_ops proxyd_mpi_data = {.recv = mpi_recv,
                                                .recv_try = mpi_recv_try,
                                                .recv_busy = mpi_recv_busy,
                                                .recv_give_up = mpi_recv_give_up,
                                                .send = mpi_send,
                                                .send_post = mpi_send_post,
                                                .send_test = mpi_send_test,
                                                .peer_ok = mpi_peer_ok,
                                                .peer_send = mpi_peer_send,
                                                .peer_recv = mpi_peer_recv,
                                                .peer_died = mpi_peer_died};
