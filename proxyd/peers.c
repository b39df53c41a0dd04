/*
 * peers.c - traffic between the proxies of one job (migrations, event
 * links): a communicator of their own, none in connect mode.
 */
#include <stdlib.h>

#include <mpi.h>

#include "backoff.h"
#include "daemon.h"
#include "liveness.h"
#include "log.h"

/* Migrations go between the proxies of one job (MPI_COMM_NULL in connect mode). */
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
    int rc = proxyd_recv_from(proxyd_peer_comm, rank, tag, rank, NULL, buf, n, got);
    if (rc > 0) {
        vocl_warn("proxy rank %d: %s: it died", rank, vocl_live_why(rank));
        atomic_store(&proxyd_peer_died, true);
    }
    return rc ? -1 : 0;
}

int proxyd_recv_from(MPI_Comm comm, int src, int tag, int live, const atomic_bool *closed,
                     void *buf, size_t n, size_t *got)
{
    MPI_Message msg;
    MPI_Status st;
    int count = 0, flag = 0;
    uint64_t start = vocl_now_ns();
    struct vocl_live lw;
    vocl_live_begin(&lw, live);
    for (;;) {
        if ((closed && atomic_load(closed)) ||
            MPI_Improbe(src, tag, comm, &flag, &msg, &st) != MPI_SUCCESS)
            return -1;
        if (flag)
            break;
        if (!vocl_live_ok(&lw))
            return 1;
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

bool proxyd_peer_gone(void)
{
    return atomic_load(&proxyd_peer_died);
}
