/*
 * channel.c - a session's channel (chan.h: MPI in job mode, UCX in daemon
 * mode): its client's liveness, and the
 * chunks of transfers (the data channel the executor is given).  Replies
 * are in replies.c, what kernels print in output.c, traffic between the
 * proxies of one job in peers.c.
 */
#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "daemon.h"
#include "executor.h"
#include "liveness.h"
#include "log.h"
#include "metrics.h"

/* A session's channel (daemon.h). */
static struct proxyd_chan *chan(struct exec_session *s)
{
    return s->transport;
}

/* --- the data channel -------------------------------------------------------------------------- */

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

/* Receives the chunk msg (probed) into buf, if it is the n bytes due; 0,
 * or -1 (the session is out of step). */
static int take_chunk(struct exec_session *s, struct vocl_probed *msg, void *buf, size_t n)
{
    if (msg->len != n) {
        /* Out of step: take the message off the queue and give up on the session. */
        char dummy;
        vocl_mrecv(msg, &dummy, 0);
        vocl_warn("client %d: data chunk of %zu bytes where %zu were due", s->who, msg->len, n);
        return -1;
    }
    proxyd_count(PROXYD_BYTES_IN, n);
    return vocl_mrecv(msg, buf, n);
}

static int chan_recv(struct exec_session *s, int tag, void *buf, size_t n)
{
    struct vocl_probed msg;
    int flag = 0;
    uint64_t start = vocl_now_ns();
    struct vocl_live lw;
    vocl_live_begin(&lw, chan(s)->live);
    while (!flag) {
        if ((flag = vocl_improbe(chan(s)->ch, tag, &msg)) < 0)
            return -1;
        if (!flag && !vocl_live_ok(&lw))
            return client_died(s);
        if (!flag && vocl_now_ns() - start > EXEC_CLIENT_TIMEOUT_NS) {
            vocl_warn("client %d: data chunk did not arrive in 30 s", s->who);
            return -1;
        }
        if (!flag)
            vocl_backoff(start, 100000);
    }
    return take_chunk(s, &msg, buf, n);
}

/* Tests the chunk chan_recv_try began: 1 while it is still coming, 0 once
 * in, -1: the transport failed it (nothing more is written to its buffer). */
static int rx_test(struct proxyd_chan *c)
{
    int done = vocl_test(&c->rx, NULL);
    return done < 0 ? -1 : done ? 0 : 1;
}

static bool chan_recv_busy(struct exec_session *s)
{
    return rx_test(chan(s)) > 0;
}

static void chan_recv_give_up(struct exec_session *s)
{
    vocl_req_free(&chan(s)->rx); /* (freed by the transport when it completes, if ever) */
}

/* The chunk on tag into buf, if it has come: 0, 1 (not yet) or -1.  A
 * chunk that has begun to come is received with vocl_imrecv and tested on
 * later calls (with buf the same until it is in): MPICH on one node copies
 * it from the sender's memory at once, but between nodes (and over UCX's
 * rendezvous) a sender stopped in the middle of it holds it up until it
 * goes on, and this thread serves every session. */
static int chan_recv_try(struct exec_session *s, int tag, void *buf, size_t n)
{
    struct proxyd_chan *c = chan(s);
    if (vocl_req_null(&c->rx)) {
        struct vocl_probed msg;
        int flag = vocl_improbe(c->ch, tag, &msg);
        if (flag < 0)
            return -1;
        if (!flag)
            return 1;
        if (msg.len != n)
            return take_chunk(s, &msg, buf, n); /* (out of step: dropped, -1) */
        if (vocl_imrecv(&msg, buf, n, &c->rx))
            return -1;
        proxyd_count(PROXYD_BYTES_IN, n);
        c->rx_buf = buf;
    }
    if (c->rx_buf != buf) {
        vocl_warn("client %d: a chunk's receive was moved while under way", s->who);
        return -1; /* (a bug of the caller: never seen) */
    }
    return rx_test(c);
}

int proxyd_chan_sent(struct exec_session *s, struct vocl_req *req)
{
    uint64_t start = vocl_now_ns();
    struct vocl_live lw;
    vocl_live_begin(&lw, chan(s)->live);
    for (;;) {
        int done = vocl_test(req, NULL);
        if (done)
            return done > 0 ? 0 : -1;
        if (!vocl_live_ok(&lw)) {
            vocl_req_free(req);
            return client_died(s);
        }
        if (vocl_now_ns() - start > EXEC_CLIENT_TIMEOUT_NS) {
            vocl_warn("client %d: a message was not taken in 30 s", s->who);
            vocl_req_cancel(req);
            return -1;
        }
        vocl_backoff(start, 100000);
    }
}

int proxyd_chan_post(struct exec_session *s, int tag, const void *buf, size_t n,
                     struct vocl_req *req)
{
    int rc = vocl_isend(chan(s)->ch, tag, buf, n, req);
    if (rc == 0)
        proxyd_count(PROXYD_BYTES_OUT, n);
    return rc;
}

/* A chunk of a read, posted; mpi_send_test says when the client took it. */
static int chan_send_post(struct exec_session *s, int tag, const void *buf, size_t n,
                          struct exec_sending *h)
{
    _Static_assert(sizeof(struct vocl_req) <= sizeof(h->handle), "a vocl_req fits the handle");
    struct vocl_req req;
    if (proxyd_chan_post(s, tag, buf, n, &req))
        return -1;
    memcpy(h->handle, &req, sizeof(req));
    return 0;
}

static int chan_send_test(struct exec_session *s, struct exec_sending *h, bool give_up)
{
    struct vocl_req req;
    memcpy(&req, h->handle, sizeof(req));
    if (give_up || atomic_load(&s->lost)) {
        vocl_req_cancel(&req);
        return -1;
    }
    int done = vocl_test(&req, NULL);
    memcpy(h->handle, &req, sizeof(req));
    return done;
}

/* --- the client as the peer of a migration (relay: libvocl/relay.c) -------------------------- */

static int relay_send(struct exec_session *s, int tag, const void *buf, size_t n)
{
    struct vocl_req req;
    int rtag = vocl_relay_tag(tag);
    return proxyd_chan_post(s, rtag, buf, n, &req) ? -1 : proxyd_chan_sent(s, &req);
}

/* As proxyd_peer_recv, from the client; -1 once its session is closed. */
static int relay_recv(struct exec_session *s, int tag, void *buf, size_t n, size_t *got)
{
    int rc = proxyd_recv_from(chan(s)->ch, vocl_relay_tag(tag), chan(s)->live,
                              &s->closed, buf, n, got);
    if (rc == 0)
        proxyd_count(PROXYD_BYTES_IN, *got);
    return rc > 0 ? client_died(s) : rc;
}

static int chan_send(struct exec_session *s, int tag, const void *buf, size_t n)
{
    struct vocl_req req;
    return proxyd_chan_post(s, tag, buf, n, &req) ? -1 : proxyd_chan_sent(s, &req);
}

const struct exec_data_ops proxyd_chan_data = {.recv = chan_recv,
                                               .recv_try = chan_recv_try,
                                               .recv_busy = chan_recv_busy,
                                               .recv_give_up = chan_recv_give_up,
                                               .send = chan_send,
                                               .send_post = chan_send_post,
                                               .send_test = chan_send_test,
                                              .peer_ok = proxyd_peer_ok,
                                              .peer_send = proxyd_peer_send,
                                              .peer_recv = proxyd_peer_recv,
                                              .peer_died = proxyd_peer_gone,
                                              .relay_send = relay_send,
                                              .relay_recv = relay_recv};
