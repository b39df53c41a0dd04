/*
 * chan.h - tagged messages to one peer: the few primitives libvocl and
 * voclproxyd exchange everything with, over MPI (job mode: a rank of the
 * job's communicator) or over UCX (daemon mode: a connection of its own,
 * ucx.h).
 *
 * The shape is MPI's: a send posted and tested later, a probe that takes
 * the message it found off the queue (MPI_Improbe), and a receive of that
 * message (MPI_Mrecv, MPI_Imrecv).  UCX's tag API has the same shape
 * (ucp_tag_send_nbx, ucp_tag_probe_nb with remove, ucp_tag_msg_recv_nbx),
 * so one protocol and one codec run on either; only the functions below
 * look at which one a channel is.
 *
 * A UCX connection has a UCX worker of its own, so its tags are its peer's
 * alone: a client cannot send into another client's session, whatever tag
 * it uses, and what it leaves unreceived stays in its own queue.
 */
#ifndef VOCL_CHAN_H
#define VOCL_CHAN_H

#include <stdbool.h>
#include <stddef.h>

#include <mpi.h>

struct vocl_conn; /* a UCX connection (ucx.h) */

/* Where messages go: rank of comm (MPI), or conn (UCX) when it is set. */
struct vocl_chan {
    MPI_Comm comm;
    int rank;
    struct vocl_conn *conn;
};

#define VOCL_CHAN_MPI(c, r) ((struct vocl_chan){.comm = (c), .rank = (r), .conn = NULL})
#define VOCL_CHAN_UCX(c) ((struct vocl_chan){.comm = MPI_COMM_NULL, .rank = 0, .conn = (c)})

/* A posted send or receive. */
struct vocl_req {
    MPI_Request mpi;
    void *ucx; /* UCX's request; NULL: none (or done) */
    struct vocl_conn *conn;
    bool recv; /* a receive (UCX: its size is asked of it) */
};

#define VOCL_REQ_NULL                                                                              \
    ((struct vocl_req){.mpi = MPI_REQUEST_NULL, .ucx = NULL, .conn = NULL, .recv = false})

/* A message probed and taken off the queue, not yet received. */
struct vocl_probed {
    MPI_Message mpi;
    void *ucx;
    struct vocl_conn *conn;
    size_t len; /* its size in bytes */
};

static inline bool vocl_req_null(const struct vocl_req *r)
{
    return r->conn ? r->ucx == NULL : r->mpi == MPI_REQUEST_NULL;
}

/* Posts n bytes of buf to ch on tag (buf stays until the send is done):
 * 0, or -1 (*r: VOCL_REQ_NULL). */
int vocl_isend(struct vocl_chan ch, int tag, const void *buf, size_t n, struct vocl_req *r);
/* Posts a receive of at most n bytes from ch on tag into buf. 0 or -1. */
int vocl_irecv(struct vocl_chan ch, int tag, void *buf, size_t n, struct vocl_req *r);
/* The next message from ch on tag, taken off the queue: 1 (*m, its size
 * in m->len), 0 (none yet), -1 (the channel failed). */
int vocl_improbe(struct vocl_chan ch, int tag, struct vocl_probed *m);
/* Receives the probed message into buf (n bytes; one longer is cut short
 * and dropped: -1).  0 or -1. */
int vocl_mrecv(struct vocl_probed *m, void *buf, size_t n);
/* The same, posted: *r says when it is in. */
int vocl_imrecv(struct vocl_probed *m, void *buf, size_t n, struct vocl_req *r);
/* 1 once r is done (r becomes VOCL_REQ_NULL; *got: a receive's size, if
 * given), 0 while under way, -1 when it failed (r becomes null too). */
int vocl_test(struct vocl_req *r, size_t *got);
/* Gives up on r: a receive not yet matched is cancelled; a UCX send
 * cannot be, so its connection is closed under it (a send given up on
 * ends its session anyway).  r becomes VOCL_REQ_NULL. */
void vocl_req_cancel(struct vocl_req *r);
/* Forgets r: it completes on its own (its buffer must stay). */
void vocl_req_free(struct vocl_req *r);

#endif
