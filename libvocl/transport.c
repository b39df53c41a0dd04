/*
 * transport.c - moving requests, replies and bulk data between libvocl and
 * its proxies: MPI for voclproxyd ranks, a direct call for the in-process
 * executor that serves local passthrough devices.
 * Waits poll with vocl_backoff (backoff.h), never in a spinning MPI call.
 */
#include "vocl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backoff.h"
#include "liveness.h"
#include "proxyd.h"

void vocl_xport_fail(struct vocl_proxy *px, const char *what)
{
    if (px->dead)
        return;
    vocl_error("proxy %d (rank %d): %s: its devices are no longer available", px->index,
               px->rank, what);
    vocl.proxies_lost++;
    px->dead = true;
    /* Nothing more will come: what was posted for it is given up. */
    struct vocl_pending *pd = &px->pending;
    for (size_t i = 0; i < pd->n; i++) {
        if (pd->expect[i] >= 0)
            MPI_Cancel(&pd->reqs[i]);
        MPI_Request_free(&pd->reqs[i]);
    }
    if (pd->n && pd->failed == CL_SUCCESS)
        pd->failed = CL_DEVICE_NOT_AVAILABLE;
    pd->done += pd->n;
    pd->n = 0;
}

/* Between polls of a wait on px: false once the proxy is known dead. */
static bool still_there(struct vocl_proxy *px, struct vocl_live *lw)
{
    if (px->dead)
        return false;
    if (vocl_live_ok(lw))
        return true;
    char what[96];
    snprintf(what, sizeof(what), "no sign of life for %.1f s (VOCL_PEER_TIMEOUT): it died",
             vocl_live_timeout_s());
    vocl_xport_fail(px, what);
    return false;
}

int vocl_xport_send(struct vocl_proxy *px, const void *buf, size_t n)
{
    if (px->local) {
        /* The executor runs right here; its reply waits in px->reply. */
        if (proxyd_execute(px->session, buf, n, &px->reply) < 0)
            return -1;
        struct vocl_wr notes;
        vocl_wr_init(&notes);
        if (proxyd_notify_take(px->session, &notes))
            vocl_context_notes(px, notes.buf + VOCL_HDR_SIZE, notes.len - VOCL_HDR_SIZE);
        vocl_wr_free(&notes);
        return 0;
    }
    /* Posted, then polled: a send to a dead proxy must not wait forever. */
    MPI_Request req;
    int done = 0;
    if (MPI_Isend(buf, (int)n, MPI_BYTE, px->rank, VOCL_TAG_REQ, vocl.comm, &req) != MPI_SUCCESS) {
        vocl_xport_fail(px, "send failed");
        return -1;
    }
    struct vocl_live lw;
    vocl_live_begin(&lw, px->rank);
    uint64_t start = vocl_now_ns();
    for (;;) {
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            vocl_xport_fail(px, "send failed");
            return -1;
        }
        if (done)
            return 0;
        if (!still_there(px, &lw)) {
            MPI_Request_free(&req);
            return -1;
        }
        vocl_backoff(start, 50000);
    }
}

static size_t reap(struct vocl_proxy *px);

/* What kernels printed on the proxy (an OUTPUT message before a reply):
 * to the application's stdout, before the call that saw them complete returns. */
static void put_output(const struct vocl_msg_hdr *h, const uint8_t *buf)
{
    fflush(stdout);
    size_t done = 0;
    while (done < h->length) {
        ssize_t n = write(STDOUT_FILENO, buf + VOCL_HDR_SIZE + done, h->length - done);
        if (n <= 0)
            break;
        done += (size_t)n;
    }
}

int vocl_xport_recv_reply(struct vocl_proxy *px, struct vocl_rd *r)
{
    struct vocl_msg_hdr h;
again:
    if (!px->local) {
        MPI_Message msg;
        MPI_Status st;
        int flag = 0, count = 0;
        uint64_t start = vocl_now_ns();
        struct vocl_live lw;
        vocl_live_begin(&lw, px->rank);
        for (;;) {
            if (MPI_Improbe(px->rank, VOCL_TAG_REP, vocl.comm, &flag, &msg, &st) != MPI_SUCCESS) {
                vocl_xport_fail(px, "probe failed");
                return -1;
            }
            if (flag)
                break;
            /* Chunks still moving: this process copies them as it polls,
             * so keep polling while they complete. */
            if (reap(px))
                start = vocl_now_ns();
            if (!still_there(px, &lw))
                return -1;
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
    if (h.opcode == VOCL_OP_OUTPUT && !px->local) {
        put_output(&h, px->reply.buf);
        goto again;
    }
    if (h.opcode == VOCL_OP_NOTIFY && !px->local) {
        vocl_context_notes(px, px->reply.buf + VOCL_HDR_SIZE, h.length);
        goto again;
    }
    vocl_rd_init(r, px->reply.buf + VOCL_HDR_SIZE, h.length);
    return 0;
}

/*
 * Bulk data.  Every chunk of a transfer is posted at once, so MPI streams
 * them back to back, and the requests join the proxy's pending list:
 * blocking transfers complete them before returning, non-blocking ones at
 * the next synchronisation (vocl_xport_complete).  Receives of a read are
 * posted before its request leaves, and MPI matches messages in order, so
 * the proxy's chunks land in the right place however many transfers are
 * in flight.
 */
static int post_chunks(struct vocl_proxy *px, void *buf, size_t n, bool out)
{
    size_t chunk = px->chunk;
    size_t nchunks = (n + chunk - 1) / chunk;
    struct vocl_pending *pd = &px->pending;
    if (pd->n + nchunks > pd->cap) {
        size_t cap = pd->cap ? pd->cap : 64;
        while (cap < pd->n + nchunks)
            cap *= 2;
        MPI_Request *reqs = realloc(pd->reqs, cap * sizeof(*reqs));
        if (reqs)
            pd->reqs = reqs;
        int *expect = reqs ? realloc(pd->expect, cap * sizeof(*expect)) : NULL;
        if (expect)
            pd->expect = expect;
        if (!reqs || !expect)
            return -1;
        pd->cap = cap;
    }
    for (size_t i = 0; i < nchunks; i++) {
        size_t off = i * chunk;
        int len = (int)(n - off < chunk ? n - off : chunk);
        MPI_Request *r = &pd->reqs[pd->n];
        int rc = out ? MPI_Isend((char *)buf + off, len, MPI_BYTE, px->rank, VOCL_TAG_DATA,
                                 vocl.comm, r)
                     : MPI_Irecv((char *)buf + off, len, MPI_BYTE, px->rank, VOCL_TAG_DATA,
                                 vocl.comm, r);
        if (rc != MPI_SUCCESS) {
            vocl_xport_fail(px, out ? "data send failed" : "data receive failed");
            return -1;
        }
        pd->expect[pd->n++] = out ? -1 : len;
    }
    return 0;
}

int vocl_xport_send_data(struct vocl_proxy *px, const void *buf, size_t n)
{
    return post_chunks(px, (void *)buf, n, true);
}

int vocl_xport_recv_data(struct vocl_proxy *px, void *buf, size_t n)
{
    return post_chunks(px, buf, n, false);
}

/* Completes the pending requests at the front that are done; how many. */
static size_t reap(struct vocl_proxy *px)
{
    struct vocl_pending *pd = &px->pending;
    size_t done = 0;
    while (done < pd->n) {
        int flag = 0, count = 0;
        MPI_Status st;
        if (MPI_Test(&pd->reqs[done], &flag, &st) != MPI_SUCCESS) {
            vocl_xport_fail(px, "data transfer failed");
            pd->failed = CL_DEVICE_NOT_AVAILABLE;
            done = pd->n; /* the requests are lost with the proxy */
            break;
        }
        if (!flag)
            break;
        if (pd->expect[done] >= 0) {
            MPI_Get_count(&st, MPI_BYTE, &count);
            if (count != pd->expect[done] && pd->failed == CL_SUCCESS)
                pd->failed = CL_OUT_OF_RESOURCES;
        }
        done++;
    }
    if (done == 0)
        return 0;
    /* They complete in the order posted: the done ones leave from the front. */
    memmove(pd->reqs, pd->reqs + done, (pd->n - done) * sizeof(*pd->reqs));
    memmove(pd->expect, pd->expect + done, (pd->n - done) * sizeof(*pd->expect));
    pd->n -= done;
    pd->done += done;
    return done;
}

/* A read whose device command failed, reported once by a synchronisation. */
static cl_int take_failure(struct vocl_proxy *px)
{
    cl_int err = px->pending.failed;
    px->pending.failed = CL_SUCCESS;
    if (err != CL_SUCCESS && !px->dead)
        vocl_warn("proxy %d: a read failed on the device: its data did not arrive", px->index);
    return err;
}

/*
 * Completes the proxy's pending transfers (wait), or reaps those already
 * done.  A read chunk shorter than posted is the proxy saying the read
 * failed: a wait reports that, reaping keeps it for the synchronisation.
 */
cl_int vocl_xport_complete(struct vocl_proxy *px, bool wait)
{
    uint64_t start = vocl_now_ns();
    struct vocl_live lw;
    vocl_live_begin(&lw, px->rank);
    for (;;) {
        if (reap(px))
            start = vocl_now_ns(); /* data is flowing: keep polling */
        if (!wait || px->pending.n == 0 || !still_there(px, &lw))
            break;
        vocl_backoff(start, 50000);
    }
    return wait ? take_failure(px) : CL_SUCCESS;
}

uint64_t vocl_xport_ticket(struct vocl_proxy *px)
{
    return px->pending.done + px->pending.n;
}

bool vocl_event_data_pending(struct vocl_obj *e)
{
    if (!e->data_ticket)
        return false;
    pthread_mutex_lock(&e->px->lock);
    reap(e->px);
    bool pending = e->px->pending.done < e->data_ticket;
    pthread_mutex_unlock(&e->px->lock);
    return pending;
}

/* Polls without holding the proxy between polls, so that other threads can
 * go on calling it (one may set the user event the read waits for). */
cl_int vocl_event_data_wait(struct vocl_obj *e)
{
    struct vocl_proxy *px = e->px;
    uint64_t start = vocl_now_ns();
    struct vocl_live lw;
    vocl_live_begin(&lw, px->rank);
    cl_int err = CL_SUCCESS;
    for (bool landed = !e->data_ticket; !landed;) {
        pthread_mutex_lock(&px->lock);
        if (reap(px))
            start = vocl_now_ns();
        landed = px->pending.done >= e->data_ticket || !still_there(px, &lw);
        if (landed)
            err = px->dead ? CL_DEVICE_NOT_AVAILABLE : take_failure(px);
        pthread_mutex_unlock(&px->lock);
        if (!landed)
            vocl_backoff(start, 50000);
    }
    return err;
}
