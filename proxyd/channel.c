/*
 * channel.c - a session's MPI channel: its client's liveness, and the
 * chunks of transfers (the data channel the executor is given).  Replies
 * are in replies.c, what kernels print in output.c, traffic between the
 * proxies of one job in peers.c.
 */
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "backoff.h"
#include "daemon.h"
#include "executor.h"
#include "liveness.h"
#include "log.h"

/* A session's channel (daemon.h). */
static struct proxyd_chan *chan(struct exec_session *s)
{
    return s->transport;
}

static MPI_Comm session_comm(struct exec_session *s)
{
    return chan(s)->comm;
}

/* --- the MPI data channel ---------------------------------------------------------------------- */

/* A peer (client or proxy) stopped answering pings (liveness.h): MPI_Finalize
 * would wait for it forever, so this proxy will exit without it. */
atomic_bool proxyd_peer_died;

/* Clients that said BYE, told that a peer died (they leave without
 * MPI_Finalize) or not (they wait in it): how the job ends (main). */
int proxyd_left_told, proxyd_left_untold;

static int client_died(struct exec_session *s)
{
    if (chan(s)->job)
        atomic_store(&proxyd_peer_died, true);
    atomic_store(&s->lost, true);
    return -1;
}

/* Receives the chunk msg (probed: st) into buf, if it is the n bytes due;
 * 0, or -1 (the session is out of step). */
static int take_chunk(struct exec_session *s, MPI_Message *msg, MPI_Status *st, void *buf, size_t n)
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

static int mpi_recv(struct exec_session *s, int tag, void *buf, size_t n)
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
        if (!flag && vocl_now_ns() - start > EXEC_CLIENT_TIMEOUT_NS) {
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

static bool mpi_recv_busy(struct exec_session *s)
{
    return rx_test(chan(s)) > 0;
}

static void mpi_recv_give_up(struct exec_session *s)
{
    MPI_Request_free(&chan(s)->rx); /* (MPI frees it when it completes, if ever) */
}

/* The chunk on tag into buf, if it has come: 0, 1 (not yet) or -1.  A
 * chunk that has begun to come is received with MPI_Imrecv and tested on
 * later calls (with buf the same until it is in): MPICH on one node copies
 * it from the sender's memory at once, but between nodes, and with Open
 * MPI's shared-memory transport, a sender stopped in the middle of it
 * holds it up until it goes on, and this thread serves every session. */
static int mpi_recv_try(struct exec_session *s, int tag, void *buf, size_t n)
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

int proxyd_chan_sent(struct exec_session *s, MPI_Request *req)
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
        if (vocl_now_ns() - start > EXEC_CLIENT_TIMEOUT_NS) {
            vocl_warn("rank %d: a message was not taken in 30 s", s->peer);
            MPI_Cancel(req);
            MPI_Request_free(req);
            return -1;
        }
        vocl_backoff(start, 100000);
    }
}

int proxyd_chan_post(struct exec_session *s, int tag, const void *buf, size_t n, MPI_Request *req)
{
    if (MPI_Isend(buf, (int)n, MPI_BYTE, s->peer, tag, session_comm(s), req) == MPI_SUCCESS)
        return 0;
    *req = MPI_REQUEST_NULL;
    return -1;
}

/* A chunk of a read, posted; mpi_send_test says when the client took it. */
static int mpi_send_post(struct exec_session *s, int tag, const void *buf, size_t n,
                         struct exec_sending *h)
{
    _Static_assert(sizeof(MPI_Request) <= sizeof(h->handle), "an MPI_Request fits the handle");
    MPI_Request req;
    if (proxyd_chan_post(s, tag, buf, n, &req))
        return -1;
    memcpy(h->handle, &req, sizeof(req));
    return 0;
}

static int mpi_send_test(struct exec_session *s, struct exec_sending *h, bool give_up)
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

/* --- the client as the peer of a migration (relay: libvocl/relay.c) -------------------------- */

static int relay_send(struct exec_session *s, int tag, const void *buf, size_t n)
{
    MPI_Request req;
    int rtag = s->tag_base + vocl_relay_tag(tag);
    return proxyd_chan_post(s, rtag, buf, n, &req) ? -1 : proxyd_chan_sent(s, &req);
}

/* As proxyd_peer_recv, from the client; -1 once its session is closed. */
static int relay_recv(struct exec_session *s, int tag, void *buf, size_t n, size_t *got)
{
    int rc = proxyd_recv_from(session_comm(s), s->peer, s->tag_base + vocl_relay_tag(tag),
                              chan(s)->live, &s->closed, buf, n, got);
    return rc > 0 ? client_died(s) : rc;
}

static int mpi_send(struct exec_session *s, int tag, const void *buf, size_t n)
{
    MPI_Request req;
    return proxyd_chan_post(s, tag, buf, n, &req) ? -1 : proxyd_chan_sent(s, &req);
}

const struct exec_data_ops proxyd_mpi_data = {.recv = mpi_recv,
                                              .recv_try = mpi_recv_try,
                                              .recv_busy = mpi_recv_busy,
                                              .recv_give_up = mpi_recv_give_up,
                                              .send = mpi_send,
                                              .send_post = mpi_send_post,
                                              .send_test = mpi_send_test,
                                              .peer_ok = proxyd_peer_ok,
                                              .peer_send = proxyd_peer_send,
                                              .peer_recv = proxyd_peer_recv,
                                              .peer_died = proxyd_peer_gone,
                                              .relay_send = relay_send,
                                              .relay_recv = relay_recv};
