/*
 * transport.c - moving requests, replies and bulk data between libvocl and
 * its proxies: MPI for voclproxyd ranks, a direct call for the in-process
 * executor that serves local passthrough devices.
 * Waits poll with vocl_backoff (backoff.h), never in a spinning MPI call.
 */
#include "vocl.h"

#include <stdlib.h>
#include <string.h>

#include "backoff.h"
#include "proxyd.h"

void vocl_xport_fail(struct vocl_proxy *px, const char *what)
{
    if (!px->dead)
        vocl_error("proxy %d (rank %d): %s: its devices are no longer available", px->index,
                   px->rank, what);
    px->dead = true;
}

int vocl_xport_send(struct vocl_proxy *px, const void *buf, size_t n)
{
    if (px->local) {
        /* The executor runs right here; its reply waits in px->reply. */
        return proxyd_execute(px->session, buf, n, &px->reply) < 0 ? -1 : 0;
    }
    if (MPI_Send(buf, (int)n, MPI_BYTE, px->rank, VOCL_TAG_REQ, vocl.comm) != MPI_SUCCESS) {
        vocl_xport_fail(px, "send failed");
        return -1;
    }
    return 0;
}

int vocl_xport_recv_reply(struct vocl_proxy *px, struct vocl_rd *r)
{
    struct vocl_msg_hdr h;
    if (!px->local) {
        MPI_Message msg;
        MPI_Status st;
        int flag = 0, count = 0;
        uint64_t start = vocl_now_ns();
        for (;;) {
            if (MPI_Improbe(px->rank, VOCL_TAG_REP, vocl.comm, &flag, &msg, &st) != MPI_SUCCESS) {
                vocl_xport_fail(px, "probe failed");
                return -1;
            }
            if (flag)
                break;
            vocl_backoff(start, 50000);
        }
        MPI_Get_count(&st, MPI_BYTE, &count);
        vocl_wr_reset(&px->reply);
        if (count < 0 || !vocl_wr_reserve(&px->reply, (size_t)count)) {
            char dummy[1];
            MPI_Mrecv(dummy, 0, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
            vocl_xport_fail(px, "reply too large");
            return -1;
        }
        if (MPI_Mrecv(px->reply.buf, count, MPI_BYTE, &msg, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            vocl_xport_fail(px, "receive failed");
            return -1;
        }
    }
    if (!vocl_hdr_get(px->reply.buf, px->reply.len, &h)) {
        vocl_xport_fail(px, "malformed reply");
        return -1;
    }
    vocl_rd_init(r, px->reply.buf + VOCL_HDR_SIZE, h.length);
    return 0;
}

/* Bulk data: every chunk posted at once, so MPI streams them back to back. */
static int xfer_chunks(struct vocl_proxy *px, void *buf, size_t n, size_t chunk, bool out)
{
    size_t nchunks = (n + chunk - 1) / chunk;
    if (nchunks == 0)
        return 0;
    /* Real statuses: gcc 12 takes MPI_STATUSES_IGNORE for a 0-byte array. */
    MPI_Request *reqs = malloc(nchunks * sizeof(*reqs));
    MPI_Status *sts = malloc(nchunks * sizeof(*sts));
    if (!reqs || !sts) {
        free(reqs);
        free(sts);
        return -1;
    }
    int rc = MPI_SUCCESS;
    for (size_t i = 0; i < nchunks; i++) {
        size_t off = i * chunk;
        int len = (int)(n - off < chunk ? n - off : chunk);
        if (out)
            rc = MPI_Isend((char *)buf + off, len, MPI_BYTE, px->rank, VOCL_TAG_DATA, vocl.comm,
                           &reqs[i]);
        else
            rc = MPI_Irecv((char *)buf + off, len, MPI_BYTE, px->rank, VOCL_TAG_DATA, vocl.comm,
                           &reqs[i]);
        if (rc != MPI_SUCCESS) {
            nchunks = i;
            break;
        }
    }
    /* Test rather than wait, so a long transfer does not spin one core flat. */
    uint64_t start = vocl_now_ns();
    int done = 0;
    while (rc == MPI_SUCCESS && !done) {
        rc = MPI_Testall((int)nchunks, reqs, &done, sts);
        if (!done)
            vocl_backoff(start, 50000);
    }
    free(reqs);
    free(sts);
    if (rc != MPI_SUCCESS)
        vocl_xport_fail(px, out ? "data send failed" : "data receive failed");
    return rc == MPI_SUCCESS ? 0 : -1;
}

int vocl_xport_send_data(struct vocl_proxy *px, const void *buf, size_t n, size_t chunk)
{
    return xfer_chunks(px, (void *)buf, n, chunk, true);
}

int vocl_xport_recv_data(struct vocl_proxy *px, void *buf, size_t n, size_t chunk)
{
    return xfer_chunks(px, buf, n, chunk, false);
}
