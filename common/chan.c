/*
 * chan.c - tagged messages over MPI or UCX (chan.h).
 */
#include "chan.h"

#include <limits.h>

#include <ucp/api/ucp.h>

#include "ucx.h"

/* UCX's requests carry nothing of VOCL's: their status says it all.  A
 * receive always gives a request (its size is read from it). */
static ucp_request_param_t contig(bool receive)
{
    return (ucp_request_param_t){
        .op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE | (receive ? UCP_OP_ATTR_FLAG_NO_IMM_CMPL : 0),
        .datatype = ucp_dt_make_contig(1)};
}

/* A UCX call's result as a request of conn: 0, or -1. */
static int posted(struct vocl_conn *conn, ucs_status_ptr_t sp, bool recv, struct vocl_req *r)
{
    *r = VOCL_REQ_NULL;
    if (UCS_PTR_IS_ERR(sp))
        return -1;
    r->conn = conn;
    r->ucx = sp; /* NULL: done at once */
    r->recv = recv;
    return 0;
}

int vocl_isend(struct vocl_chan ch, int tag, const void *buf, size_t n, struct vocl_req *r)
{
    if (!ch.conn) {
        *r = VOCL_REQ_NULL;
        if (n > INT_MAX)
            return -1;
        return MPI_Isend(buf, (int)n, MPI_BYTE, ch.rank, tag, ch.comm, &r->mpi) == MPI_SUCCESS
                   ? 0
                   : -1;
    }
    if (vocl_conn_dead(ch.conn)) {
        *r = VOCL_REQ_NULL;
        return -1;
    }
    ucp_request_param_t p = contig(false);
    return posted(ch.conn,
                  ucp_tag_send_nbx(vocl_conn_ep(ch.conn), buf, n, (ucp_tag_t)(unsigned)tag, &p),
                  false, r);
}

int vocl_irecv(struct vocl_chan ch, int tag, void *buf, size_t n, struct vocl_req *r)
{
    if (!ch.conn) {
        *r = VOCL_REQ_NULL;
        if (n > INT_MAX)
            return -1;
        return MPI_Irecv(buf, (int)n, MPI_BYTE, ch.rank, tag, ch.comm, &r->mpi) == MPI_SUCCESS
                   ? 0
                   : -1;
    }
    ucp_request_param_t p = contig(true);
    return posted(ch.conn,
                  ucp_tag_recv_nbx(vocl_conn_worker(ch.conn), buf, n, (ucp_tag_t)(unsigned)tag,
                                   ~(ucp_tag_t)0, &p),
                  true, r);
}

int vocl_improbe(struct vocl_chan ch, int tag, struct vocl_probed *m)
{
    *m = (struct vocl_probed){.mpi = MPI_MESSAGE_NULL};
    if (!ch.conn) {
        MPI_Status st;
        int flag = 0, count = 0;
        if (MPI_Improbe(ch.rank, tag, ch.comm, &flag, &m->mpi, &st) != MPI_SUCCESS)
            return -1;
        if (!flag)
            return 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        m->len = count < 0 ? 0 : (size_t)count;
        return 1;
    }
    vocl_conn_progress(ch.conn);
    ucp_tag_recv_info_t info;
    ucp_tag_message_h msg = ucp_tag_probe_nb(vocl_conn_worker(ch.conn), (ucp_tag_t)(unsigned)tag,
                                             ~(ucp_tag_t)0, 1, &info);
    if (!msg)
        return vocl_conn_dead(ch.conn) ? -1 : 0;
    m->ucx = msg;
    m->conn = ch.conn;
    m->len = info.length;
    return 1;
}

int vocl_imrecv(struct vocl_probed *m, void *buf, size_t n, struct vocl_req *r)
{
    if (!m->conn) {
        *r = VOCL_REQ_NULL;
        int count = n > (size_t)INT_MAX ? INT_MAX : (int)n;
        return MPI_Imrecv(buf, count, MPI_BYTE, &m->mpi, &r->mpi) == MPI_SUCCESS ? 0 : -1;
    }
    ucp_request_param_t p = contig(true);
    return posted(m->conn,
                  ucp_tag_msg_recv_nbx(vocl_conn_worker(m->conn), buf, n, m->ucx, &p), true,
                  r);
}

int vocl_mrecv(struct vocl_probed *m, void *buf, size_t n)
{
    if (!m->conn) {
        int count = n > (size_t)INT_MAX ? INT_MAX : (int)n;
        return MPI_Mrecv(buf, count, MPI_BYTE, &m->mpi, MPI_STATUS_IGNORE) == MPI_SUCCESS &&
                       m->len <= n
                   ? 0
                   : -1;
    }
    struct vocl_req r;
    bool cut = m->len > n;
    if (vocl_imrecv(m, buf, n, &r))
        return -1;
    /* Probed, so it is here (or being fetched from the sender's memory). */
    int done;
    while ((done = vocl_test(&r, NULL)) == 0)
        ;
    return done > 0 && !cut ? 0 : -1;
}

int vocl_test(struct vocl_req *r, size_t *got)
{
    if (!r->conn) {
        if (r->mpi == MPI_REQUEST_NULL)
            return 1;
        int done = 0, count = 0;
        MPI_Status st;
        if (MPI_Test(&r->mpi, &done, &st) != MPI_SUCCESS) {
            *r = VOCL_REQ_NULL;
            return -1;
        }
        if (done && got) {
            MPI_Get_count(&st, MPI_BYTE, &count);
            *got = count < 0 ? 0 : (size_t)count;
        }
        return done;
    }
    if (!r->ucx) {
        *r = VOCL_REQ_NULL;
        if (got)
            *got = 0; /* (done at once: only sends and empty receives are) */
        return 1;
    }
    ucs_status_t st = ucp_request_check_status(r->ucx);
    if (st == UCS_INPROGRESS) {
        vocl_conn_progress(r->conn);
        st = ucp_request_check_status(r->ucx);
        if (st == UCS_INPROGRESS)
            return 0;
    }
    if (got)
        *got = 0;
    if (got && st == UCS_OK && r->recv) {
        ucp_tag_recv_info_t info;
        *got = ucp_tag_recv_request_test(r->ucx, &info) == UCS_OK ? info.length : 0;
    }
    ucp_request_free(r->ucx);
    *r = VOCL_REQ_NULL;
    return st == UCS_OK ? 1 : -1;
}

void vocl_req_cancel(struct vocl_req *r)
{
    if (!r->conn) {
        if (r->mpi != MPI_REQUEST_NULL) {
            MPI_Cancel(&r->mpi);
            MPI_Request_free(&r->mpi);
        }
        *r = VOCL_REQ_NULL;
        return;
    }
    if (r->ucx) {
        /* A receive not matched yet ends now; a send (or a receive under
         * way) cannot be stopped but by closing its connection. */
        ucp_request_cancel(vocl_conn_worker(r->conn), r->ucx);
        if (ucp_request_check_status(r->ucx) == UCS_INPROGRESS)
            vocl_conn_fail(r->conn, "a message given up on");
        ucp_request_free(r->ucx);
    }
    *r = VOCL_REQ_NULL;
}

void vocl_req_free(struct vocl_req *r)
{
    if (!r->conn) {
        if (r->mpi != MPI_REQUEST_NULL)
            MPI_Request_free(&r->mpi);
    } else if (r->ucx) {
        ucp_request_free(r->ucx);
    }
    *r = VOCL_REQ_NULL;
}
