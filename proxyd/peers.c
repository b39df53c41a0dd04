/*
 * peers.c - traffic between the proxies of one job (migrations, event
 * links): a communicator of their own, none in daemon mode.
 */
#include <stdlib.h>

#include <mpi.h>

#include "backoff.h"
#include "daemon.h"
#include "liveness.h"
#include "log.h"

/* Migrations go between the proxies of one job (MPI_COMM_NULL in daemon mode). */
MPI_Comm proxyd_peer_comm = MPI_COMM_NULL;
int proxyd_peer_self, proxyd_peer_size;

bool proxyd_peer_ok(int rank)
{
    return proxyd_peer_comm != MPI_COMM_NULL && rank >= 0 && rank < proxyd_peer_size &&
           rank != proxyd_peer_self;
}

int proxyd_peer_send(int rank, int tag, const void *buf, size_t n)
{
    return MPI_Send(buf, (int)n, MPI_BYTE, rank, tag, proxyd_peer_comm) == MPI_SUCCESS ? 0 : -1;
}

int proxyd_peer_recv(int rank, int tag, void *buf, size_t n, size_t *got)
{
    int rc = proxyd_recv_from(VOCL_CHAN_MPI(proxyd_peer_comm, rank), tag, rank, NULL, buf, n, got);
    if (rc > 0) {
        vocl_warn("proxy rank %d: %s: it died", rank, vocl_live_why(rank));
        atomic_store(&proxyd_peer_died, true);
    }
    return rc ? -1 : 0;
}

int proxyd_recv_from(struct vocl_chan ch, int tag, int live, const atomic_bool *closed, void *buf,
                     size_t n, size_t *got)
{
    struct vocl_probed msg;
    int flag = 0;
    uint64_t start = vocl_now_ns();
    struct vocl_live lw;
    vocl_live_begin(&lw, live);
    for (;;) {
        if ((closed && atomic_load(closed)) || (flag = vocl_improbe(ch, tag, &msg)) < 0)
            return -1;
        if (flag)
            break;
        if (!vocl_live_ok(&lw))
            return 1;
        vocl_backoff(start, 100000);
    }
    *got = msg.len;
    if (msg.len <= n)
        return vocl_mrecv(&msg, buf, msg.len);
    void *drop = malloc(msg.len);
    int rc = drop ? vocl_mrecv(&msg, drop, msg.len) : -1;
    free(drop);
    return rc;
}

bool proxyd_peer_gone(void)
{
    return atomic_load(&proxyd_peer_died);
}
