/*
 * ops_transfer.c - how bulk data travels (inline, chunked, host pointer),
 * and the proxy handlers of buffer reads, writes, maps and rectangular
 * transfers; buffers are created in ops_buffer.c, images in ops_image.c.
 *
 * Bulk data comes in one of three modes (protocol.h): inline in the message,
 * in chunks on the data channel, or, for the in-process executor only, as a
 * host pointer used in place.  Chunked buffer transfers take the fastest of
 * three paths:
 *
 *   direct   the device keeps its buffers in host memory (a CPU device):
 *            the region is mapped (no copy) and the chunks are received
 *            straight into it, or sent straight from it;
 *   staged   each chunk passes through the next buffer of a staging pool
 *            (memory the driver knows as pinned: pool.c); the device copy
 *            of chunk k runs (on the driver's threads) while chunk k+1
 *            crosses the network (on this thread for writes, on the stream
 *            thread for reads: stream.c);
 *   serial   VOCL_PIPELINE=0: one staging buffer, each stage after the one
 *            before (a read's device copies gated on the sends: user events).
 *
 * No request, blocking or not, may leave this thread waiting on a queue
 * that a user event not yet set may hold (the client would be waiting for
 * us to read its clSetUserEventStatus, sent by another of its threads):
 * while the client has such events, transfers go through memory of their
 * own instead (may_block).
 */
#include "internal.h"
#include "xfer.h"

#include <stdlib.h>
#include <string.h>

/* Checks the data fields a generated decoder read (d) for a transfer of size bytes. */
void exec_xfer_use(struct exec_req *q, struct exec_xfer *x, const struct vocl_data *d, size_t size,
                   bool data_in)
{
    memset(x, 0, sizeof(*x));
    x->mode = d->mode;
    x->size = size;
    switch (x->mode) {
    case VOCL_DATA_NONE:
        break;
    case VOCL_DATA_INLINE: {
        if (data_in)
            x->inline_data = d->p;
        if (data_in && d->len != size)
            exec_fail(q, "inline data size differs from the transfer size");
        if (size > VOCL_INLINE_MAX)
            exec_fail(q, "inline transfer too large");
        break;
    }
    case VOCL_DATA_CHUNKED:
        x->chunk = (size_t)d->arg;
        x->depth = d->depth < 1 ? 1 : d->depth > EXEC_DEPTH_MAX ? EXEC_DEPTH_MAX : d->depth;
        if (x->chunk < EXEC_CHUNK_MIN || x->chunk > q->s->node->xfer.pool_size)
            exec_fail(q, "chunk size out of range");
        /* A chunked read answers with one message per chunk, even when it
         * fails: keep that count sane. */
        else if (size / EXEC_CHUNK_MIN > (1u << 24))
            exec_fail(q, "transfer too large");
        else
            break;
        /* Chunks that cannot be counted (or allocated) as the client counts
         * them are neither drained nor answered: the data channel is out of
         * step, and the session ends. */
        x->chunk = 0;
        q->s->broken = true;
        break;
    case VOCL_DATA_HOSTPTR:
        x->host = (void *)(uintptr_t)d->arg;
        if (!q->s->in_process)
            exec_fail(q, "host pointers are accepted in-process only");
        break;
    default:
        exec_fail(q, "unknown data mode");
    }
}

static size_t chunk_len(const struct exec_xfer *x, size_t done)
{
    return x->size - done < x->chunk ? x->size - done : x->chunk;
}

/* A failed chunked read: as many empty chunks as the client waits for. */
static void fail_chunks(struct exec_req *q, const struct exec_xfer *x)
{
    if (x->mode != VOCL_DATA_CHUNKED || x->chunk == 0)
        return;
    for (size_t done = 0; done < x->size; done += x->chunk)
        exec_stream_send(q->s->node, &(struct exec_stream_chunk){.s = q->s});
}

/* A rejected request's data: drained (a write's) or answered empty (a read's). */
void exec_xfer_reject(struct exec_req *q, const struct exec_xfer *x, bool write)
{
    if (write)
        exec_xfer_drain(q, x);
    else
        fail_chunks(q, x);
}

/* All the chunks of x in memory of its own (to free), on the request's
 * second run; on its first, NULL: the session is parked to receive them
 * (or drain them, out of memory), and the request runs again once they
 * are all in (inbound.c). */
static uint8_t *recv_whole(struct exec_req *q, const struct exec_xfer *x)
{
    if (q->s->preloaded) {
        uint8_t *buf = q->s->preloaded;
        q->s->preloaded = NULL;
        return buf;
    }
    uint8_t *buf = exec_host_alloc(q->s, x->size);
    if (!buf)
        exec_xfer_drain(q, x);
    else
        exec_inbound_whole(q, x, buf);
    return NULL;
}

/* Sends buf's x->size bytes as chunks once ready completes (NULL: now);
 * buf is freed after. */
static void send_owned(struct exec_req *q, const struct exec_xfer *x, uint8_t *buf, bool ok,
                       cl_event ready)
{
    for (size_t done = 0; done < x->size; done += x->chunk) {
        bool last = done + x->chunk >= x->size;
        if (ready)
            q->cl->clRetainEvent(ready); /* each chunk releases its own */
        exec_stream_send(q->s->node, &(struct exec_stream_chunk){.s = q->s,
                                                                 .depth = x->depth,
                                                                 .ready = ready,
                                                                 .data = buf ? buf + done : NULL,
                                                                 .n = chunk_len(x, done),
                                                                 .ok = ok && buf,
                                                                 .free_after = last ? buf : NULL});
    }
    if (x->size == 0)
        exec_host_free(buf);
}

/* The proxy may wait on queues: no user event of the client is still unset.
 * One may hold the queue, and the client's clSetUserEventStatus, sent by
 * another thread while the one that sent q waits for its reply, would wait
 * behind this request. */
static bool may_block(const struct exec_req *q)
{
    return q->s->user_events == 0;
}

/* Whether queue's device keeps buffers in host memory, so a map costs no copy. */
static bool host_unified(struct exec_req *q, cl_command_queue queue)
{
    cl_device_id dev;
    cl_bool unified = CL_FALSE;
    return q->cl->clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof(dev), &dev, NULL) ==
               CL_SUCCESS &&
           q->cl->clGetDeviceInfo(dev, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof(unified), &unified,
                                  NULL) == CL_SUCCESS &&
           unified;
}

bool exec_xfer_direct(struct exec_req *q, cl_command_queue queue)
{
    return q->s->node->xfer.direct && q->s->node->xfer.pipeline && host_unified(q, queue);
}

/* The end of a command: a blocking one is answered when e completes
 * (complete.c; q->later, and the status the handler writes is dropped), or
 * now if it has; its event is handed over. */
cl_int exec_finish_cmd(struct exec_req *q, cl_int rc, cl_event e, cl_bool blocking, cl_event *ev)
{
    if (rc == CL_SUCCESS && e && blocking)
        exec_reply_after(q, 1, &e, NULL, 0, &rc);
    if (rc == CL_SUCCESS && ev)
        *ev = e;
    else if (e)
        q->cl->clReleaseEvent(e);
    return rc;
}

/* A read whose bytes go in the reply (out: malloc'd, taken), once its
 * command e completes: answered later, or now where it has; the status. */
static cl_int reply_with_data(struct exec_req *q, cl_int rc, cl_event e, void *out, size_t size,
                              cl_event *ev)
{
    if (rc == CL_SUCCESS && exec_reply_after(q, 1, &e, &out, size, &rc))
        return exec_finish_cmd(q, CL_SUCCESS, e, CL_FALSE, ev);
    rc = exec_finish_cmd(q, rc, e, CL_FALSE, ev);
    vocl_wr_i32(q->w, rc);
    if (rc == CL_SUCCESS)
        vocl_wr_bytes(q->w, out, size);
    exec_host_free(out);
    return rc;
}

static void free_when_done(cl_event ev, cl_int status, void *mem)
{
    (void)ev, (void)status;
    exec_host_free(mem);
}

/* Host memory a command uses (a write's copy, a read's landing place):
 * freed when it is done (noted, or else watched; never waited for here). */
void exec_keep_until_done(struct exec_session *s, cl_int rc, cl_event e, void *mem)
{
    if (rc != CL_SUCCESS || !e)
        exec_host_free(mem);
    else if (exec_keep(s->node, e, mem) &&
             exec_watch(s->node->cl, e, false, free_when_done, mem) != CL_SUCCESS)
        vocl_warn("client %d: no memory to note when a command is done: its host memory is "
                  "kept for good",
                  s->who);
}

/* A user event of queue's context, to gate a read's commands on its
 * chunks' sends (NULL: none could be made). */
static cl_event send_gate(struct exec_req *q, cl_command_queue queue)
{
    cl_context ctx;
    if (q->cl->clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof(ctx), &ctx, NULL) !=
        CL_SUCCESS)
        return NULL;
    return q->cl->clCreateUserEvent(ctx, NULL);
}

/* Reads [offset, offset+size) of buf through queue and sends it as x's chunks. */
static cl_int read_chunks(struct exec_req *q, cl_command_queue queue, cl_mem buf, size_t offset,
                          const struct exec_xfer *x, cl_uint nwl, const cl_event *wl,
                          cl_bool blocking, cl_event *ev)
{
    cl_event e = NULL;
    cl_int rc = CL_SUCCESS;
    cl_event gate = NULL, mapped = NULL;
    if (exec_xfer_direct(q, queue) && (gate = send_gate(q, queue))) {
        /* The unmap waits for the stream to send the last chunk (gate), so
         * the commands after the read cannot touch the region before. */
        uint8_t *p = q->cl->clEnqueueMapBuffer(queue, buf, CL_FALSE, CL_MAP_READ, offset, x->size,
                                               nwl, wl, &mapped, &rc);
        if (p && q->cl->clEnqueueUnmapMemObject(queue, buf, p, 1, &gate, &e) == CL_SUCCESS) {
            for (size_t done = 0; done < x->size; done += x->chunk) {
                bool last = done + x->chunk >= x->size;
                q->cl->clRetainEvent(mapped);
                exec_stream_send(q->s->node,
                                 &(struct exec_stream_chunk){.s = q->s,
                                                             .depth = x->depth,
                                                             .ready = mapped,
                                                             .data = p + done,
                                                             .n = chunk_len(x, done),
                                                             .ok = true,
                                                             .gate = last ? gate : NULL});
            }
            q->cl->clReleaseEvent(mapped);
            return exec_finish_cmd(q, CL_SUCCESS, e, blocking, ev);
        }
        if (mapped) { /* mapped but not unmapped: give it back (once mapped) */
            q->cl->clEnqueueUnmapMemObject(queue, buf, p, 1, &mapped, NULL);
            q->cl->clReleaseEvent(mapped);
        }
        q->cl->clSetUserEventStatus(gate, CL_COMPLETE);
        q->cl->clReleaseEvent(gate);
        /* Not mappable: the staged read says why. */
    }
    struct exec_pool *pool = exec_queue_pool(q->s->node, queue);
    bool own = !may_block(q) || !pool; /* memory of its own, not the pool */
    bool serial = !q->s->node->xfer.pipeline && may_block(q);
    /* Each chunk is queued on the stream once the next one's read is
     * enqueued: that read may reuse its memory (held). */
    struct exec_stream_chunk held = {0};
    rc = CL_SUCCESS;
    for (size_t done = 0; done < x->size; done += x->chunk) {
        size_t n = chunk_len(x, done);
        struct exec_stream_chunk c = {.s = q->s, .n = n, .depth = x->depth};
        if (rc == CL_SUCCESS) {
            /* A staging buffer if one is free, else memory of its own, else
             * (no memory left, or VOCL_PIPELINE=0: one buffer, each stage
             * after the one before) the chunk before's, once it is sent
             * (gate); a first chunk with none of these takes the next
             * staging buffer once its holder gives it up (after). */
            unsigned slot = 0;
            uint8_t *stage = NULL;
            cl_event gate = NULL, after = NULL;
            if (!(serial && held.ok)) {
                stage = own ? NULL : exec_pool_try(pool, &slot);
                if (stage)
                    c.pool = pool, c.slot = slot;
                else if ((stage = exec_host_alloc(q->s, n)))
                    c.free_after = stage;
            }
            if (!stage && held.ok && (gate = send_gate(q, queue))) {
                stage = (uint8_t *)held.data;
                c.pool = held.pool, c.slot = held.slot, c.free_after = held.free_after;
                held.pool = NULL, held.free_after = NULL;
                held.gate = gate; /* (set and let go once held is sent) */
            } else if (!stage && !own && !held.ok && q->s->node->stream &&
                       (gate = send_gate(q, queue))) {
                /* (Not without a stream: the chunk would be sent on this
                 * thread, which may be what gives the buffer up.) */
                stage = exec_pool_take_after(pool, &slot, gate, &after);
                q->cl->clReleaseEvent(gate);
                gate = NULL;
                if (stage)
                    c.pool = pool, c.slot = slot;
            }
            /* It waits for the chunk before (and its gate), or for the
             * client's wait list (and the buffer's holder). */
            cl_event prev = e, pair[2] = {prev, gate}, *more = NULL;
            const cl_event *wait = prev ? pair : wl;
            cl_uint nwait = prev ? 1 + !!gate : nwl;
            if (after && (more = exec_tmp(q, (nwl + 1) * sizeof(cl_event)))) {
                for (cl_uint i = 0; i < nwl; i++)
                    more[i] = wl[i];
                more[nwait++] = after;
                wait = more;
            }
            e = NULL;
            rc = !stage || (after && !more)
                     ? CL_OUT_OF_HOST_MEMORY
                     : q->cl->clEnqueueReadBuffer(queue, buf, CL_FALSE, offset + done, n, stage,
                                                  nwait, wait, &e);
            if (prev)
                q->cl->clReleaseEvent(prev);
            if (rc == CL_SUCCESS) {
                c.ok = true;
                c.data = stage;
                c.ready = e;
                q->cl->clRetainEvent(e);
            } else if (gate) { /* the chunk before's memory: its again */
                held.pool = c.pool, held.slot = c.slot, held.free_after = c.free_after;
                c.pool = NULL, c.free_after = NULL;
            } else if (c.pool && after) { /* not the read's yet: given back once it is */
                c.ready = after;
                after = NULL;
            } else {
                if (c.pool)
                    exec_pool_give(c.pool, c.slot);
                exec_host_free(c.free_after);
                c.pool = NULL, c.free_after = NULL;
            }
            if (after)
                q->cl->clReleaseEvent(after);
        }
        if (done)
            exec_stream_send(q->s->node, &held);
        held = c;
    }
    if (x->size)
        exec_stream_send(q->s->node, &held);
    return exec_finish_cmd(q, rc, e, blocking, ev);
}

/* A buffer read's or write's fields, decoded (their messages differ in
 * the data field only: cl_api.def). */
struct buf_xfer {
    cl_command_queue queue;
    cl_mem buf;
    cl_bool blocking;
    size_t offset, size;
    cl_uint nwl;
    const cl_event *wl;
    uint64_t ev_id;
    struct exec_xfer x;
};

static void rd_buf_xfer(struct exec_req *q, struct buf_xfer *b, bool data_in)
{
    /* The two messages have the same fields (their data's direction aside). */
    struct vocl_msg_clEnqueueWriteBuffer_req m;
    const char *why;
    if (data_in) {
        why = vocl_dec_clEnqueueWriteBuffer_req(q->r, &m);
    } else {
        struct vocl_msg_clEnqueueReadBuffer_req rm;
        why = vocl_dec_clEnqueueReadBuffer_req(q->r, &rm);
        m = (struct vocl_msg_clEnqueueWriteBuffer_req){
            .queue = rm.queue, .buffer = rm.buffer, .blocking = rm.blocking, .offset = rm.offset,
            .size = rm.size, .wait_list = rm.wait_list, .event = rm.event, .data = rm.data};
    }
    if (why)
        exec_fail(q, why);
    b->queue = exec_h(q, m.queue, VOCL_T_QUEUE, 0);
    b->buf = exec_h(q, m.buffer, VOCL_T_MEM, 0);
    b->blocking = m.blocking;
    b->offset = (size_t)m.offset;
    b->size = (size_t)m.size;
    b->wl = exec_ha(q, VOCL_T_EVENT, &m.wait_list, &b->nwl);
    b->ev_id = exec_newid(q, m.event);
    exec_xfer_use(q, &b->x, &m.data, b->size, data_in);
    if (b->x.mode == VOCL_DATA_NONE)
        exec_fail(q, "transfer without data or destination");
    /* libvocl checks the range; past the buffer, a chunked read would be
     * answered by up to 2^24 empty chunks: the session ends instead. */
    size_t msize = 0;
    if (b->x.mode == VOCL_DATA_CHUNKED && b->x.chunk && b->buf &&
        (q->cl->clGetMemObjectInfo(b->buf, CL_MEM_SIZE, sizeof(msize), &msize, NULL) ||
         b->offset > msize || b->size > msize - b->offset)) {
        exec_fail(q, "chunked transfer past the end of the buffer");
        b->x.chunk = 0;
        q->s->broken = true;
    }
    /* A read that answers in its reply must have a reply to answer in. */
    if (!data_in && b->x.mode == VOCL_DATA_INLINE && q->async)
        exec_fail(q, "inline read without a reply");
}

void exec_op_clEnqueueWriteBuffer(struct exec_req *q)
{
    struct buf_xfer b;
    rd_buf_xfer(q, &b, true);
    cl_event ev = NULL, *evp = b.ev_id ? &ev : NULL;
    cl_int rc;

    if (!exec_req_begin(q)) {
        exec_xfer_drain(q, &b.x);
        return;
    }
    cl_event e = NULL;
    switch (b.x.mode) {
    case VOCL_DATA_CHUNKED:
        rc =
            exec_inbound_write(q, b.queue, b.buf, b.offset, &b.x, b.nwl, b.wl, b.blocking, b.ev_id);
        if (rc == CL_SUCCESS)
            return; /* answered once its chunks have come (inbound.c) */
        exec_xfer_drain(q, &b.x);
        break;
    case VOCL_DATA_HOSTPTR:
        /* Blocking or not, the request thread does not wait (finish_cmd). */
        rc = q->cl->clEnqueueWriteBuffer(b.queue, b.buf, CL_FALSE, b.offset, b.size, b.x.host,
                                         b.nwl, b.wl, &e);
        rc = exec_finish_cmd(q, rc, e, b.blocking, evp);
        break;
    default: {
        /* The message is gone after this call: write from a copy. */
        void *copy = exec_host_alloc(q->s, b.size);
        if (copy)
            memcpy(copy, b.x.inline_data, b.size);
        rc = copy ? q->cl->clEnqueueWriteBuffer(b.queue, b.buf, CL_FALSE, b.offset, b.size, copy,
                                                b.nwl, b.wl, &e)
                  : CL_OUT_OF_HOST_MEMORY;
        exec_keep_until_done(q->s, rc, e, copy);
        rc = exec_finish_cmd(q, rc, e, b.blocking, evp);
    }
    }
    exec_put_event(q, rc, b.ev_id, ev);
    vocl_wr_i32(q->w, rc);
}

/* A short blocking read answered from a map of the region, where the map
 * completes within the node's poll: for a map the driver copies into its
 * own pinned memory, for a read into ours (pageable) by way of a second
 * copy (4 bytes from an H200: 7 us against 15).  Only where the client
 * asked for no event (a map's is not a read's), and not where the device
 * works in host memory: there a read is one copy too, and the unmap after
 * the reply a second command, which woke PoCL's worker thread between
 * every two reads (13 us of a 30 us round trip on 2 cores).  False:
 * nothing was answered, and the read goes the usual way. */
static bool read_mapped(struct exec_req *q, const struct buf_xfer *b)
{
    if (!exec_may_poll(q) || host_unified(q, b->queue))
        return false;
    cl_event m = NULL;
    cl_int rc, failed = CL_SUCCESS;
    void *p = q->cl->clEnqueueMapBuffer(b->queue, b->buf, CL_FALSE, CL_MAP_READ, b->offset, b->size,
                                        b->nwl, b->wl, &m, &rc);
    if (!p)
        return false;
    if (exec_poll_events(q, 1, &m, &failed) && failed == CL_SUCCESS) {
        vocl_wr_i32(q->w, CL_SUCCESS);
        vocl_wr_bytes(q->w, p, b->size);
        /* Unmapped once the reply has gone: not in its way. */
        q->s->unmap_due.queue = b->queue;
        q->s->unmap_due.mem = b->buf;
        q->s->unmap_due.ptr = p;
        q->s->unmap_due.mapped = m;
        return true;
    }
    q->cl->clEnqueueUnmapMemObject(b->queue, b->buf, p, 1, &m, NULL);
    q->cl->clReleaseEvent(m);
    return false;
}

void exec_after_reply(struct exec_session *s)
{
    exec_ctx_pool_due(s);
    if (!s->unmap_due.ptr)
        return;
    cl_event m = s->unmap_due.mapped;
    s->node->cl->clEnqueueUnmapMemObject(s->unmap_due.queue, s->unmap_due.mem, s->unmap_due.ptr,
                                         1, &m, NULL);
    s->node->cl->clReleaseEvent(m);
    s->unmap_due.ptr = NULL;
}

void exec_op_clEnqueueReadBuffer(struct exec_req *q)
{
    struct buf_xfer b;
    rd_buf_xfer(q, &b, false);
    cl_event ev = NULL, *evp = b.ev_id ? &ev : NULL;
    cl_int rc;

    if (!exec_req_begin(q)) {
        fail_chunks(q, &b.x);
        return;
    }
    cl_event e = NULL;
    switch (b.x.mode) {
    case VOCL_DATA_HOSTPTR:
        rc = q->cl->clEnqueueReadBuffer(b.queue, b.buf, CL_FALSE, b.offset, b.size, b.x.host,
                                        b.nwl, b.wl, &e);
        rc = exec_finish_cmd(q, rc, e, b.blocking, evp);
        break;
    case VOCL_DATA_INLINE: {
        if (b.blocking && !b.ev_id && read_mapped(q, &b))
            return;
        /* The data goes in the reply, once the read has completed. */
        void *out = exec_host_alloc(q->s, b.size);
        rc = out ? q->cl->clEnqueueReadBuffer(b.queue, b.buf, CL_FALSE, b.offset, b.size, out,
                                              b.nwl, b.wl, &e)
                 : CL_OUT_OF_HOST_MEMORY;
        rc = reply_with_data(q, rc, e, out, b.size, evp);
        exec_put_event(q, rc, b.ev_id, ev);
        return;
    }
    default:
        rc = read_chunks(q, b.queue, b.buf, b.offset, &b.x, b.nwl, b.wl, b.blocking, evp);
    }
    exec_put_event(q, rc, b.ev_id, ev);
    vocl_wr_i32(q->w, rc);
}

/* Map and unmap reach the executor only in-process: remote maps are host
 * shadows that libvocl fills with reads and writes back with writes. */
void exec_op_clEnqueueMapBuffer(struct exec_req *q)
{
    struct vocl_msg_clEnqueueMapBuffer_req m;
    const char *why = vocl_dec_clEnqueueMapBuffer_req(q->r, &m);
    if (why)
        exec_fail(q, why);
    cl_command_queue queue = exec_h(q, m.queue, VOCL_T_QUEUE, 0);
    cl_mem buf = exec_h(q, m.buffer, VOCL_T_MEM, 0);
    cl_bool blocking = m.blocking;
    cl_map_flags flags = m.map_flags;
    size_t offset = (size_t)m.offset;
    size_t size = (size_t)m.size;
    cl_uint nwl;
    const cl_event *wl = exec_ha(q, VOCL_T_EVENT, &m.wait_list, &nwl);
    uint64_t ev_id = exec_newid(q, m.event);
    cl_event ev = NULL;
    cl_int err = CL_SUCCESS;

    if (!q->s->in_process)
        exec_fail(q, "map is served in-process only");
    if (!exec_req_begin(q))
        return;
    /* The executor runs under libvocl's lock of the proxy: a blocking map
     * waits for its commands with the lock let go (s->leave), as a build
     * does, so that another thread may set the user event it waits for. */
    bool unlocked = blocking && q->s->leave;
    void *p = q->cl->clEnqueueMapBuffer(queue, buf, blocking && !unlocked, flags, offset, size,
                                        nwl, wl, ev_id || unlocked ? &ev : NULL, &err);
    if (p && unlocked) {
        q->s->leave(q->s);
        cl_int rc = q->cl->clWaitForEvents(1, &ev);
        q->s->enter(q->s);
        if (rc != CL_SUCCESS)
            err = CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
    }
    if (p && err != CL_SUCCESS) {
        q->cl->clEnqueueUnmapMemObject(queue, buf, p, 0, NULL, NULL);
        p = NULL;
    }
    vocl_wr_i32(q->w, p ? CL_SUCCESS : err);
    vocl_enc_clEnqueueMapBuffer_rep(q->w, &(struct vocl_msg_clEnqueueMapBuffer_rep){
                                              .ptr = (uint64_t)(uintptr_t)p});
    if (p && ev_id)
        exec_put_new(q, ev_id, VOCL_T_EVENT, ev);
    else if (ev)
        q->cl->clReleaseEvent(ev);
}

void exec_op_clEnqueueUnmapMemObject(struct exec_req *q)
{
    struct vocl_msg_clEnqueueUnmapMemObject_req m;
    const char *why = vocl_dec_clEnqueueUnmapMemObject_req(q->r, &m);
    if (why)
        exec_fail(q, why);
    cl_command_queue queue = exec_h(q, m.queue, VOCL_T_QUEUE, 0);
    cl_mem mem = exec_h(q, m.memobj, VOCL_T_MEM, 0);
    void *ptr = (void *)(uintptr_t)m.mapped_ptr;
    cl_uint nwl;
    const cl_event *wl = exec_ha(q, VOCL_T_EVENT, &m.wait_list, &nwl);
    uint64_t ev_id = exec_newid(q, m.event);
    cl_event ev = NULL;

    if (!q->s->in_process)
        exec_fail(q, "unmap is served in-process only");
    if (!exec_req_begin(q))
        return;
    cl_int rc = q->cl->clEnqueueUnmapMemObject(queue, mem, ptr, nwl, wl, ev_id ? &ev : NULL);
    vocl_wr_i32(q->w, rc);
    exec_put_event(q, rc, ev_id, ev);
}

/* --- spans: the host rows of rectangular transfers and images ------------------------------- */

/*
 * Where the bytes of an image creation or of a rectangular or image
 * transfer are for the native call, which does not block: a write's data
 * (a copy when inline, received whole when chunked), or where a read lands
 * (the client's memory in-process).  All but the client's own memory must
 * outlive the request: *owned (freed by the caller, or exec_span_end).
 */
void *exec_span_begin(struct exec_req *q, const struct exec_xfer *x, bool write, bool *owned)
{
    *owned = x->mode == VOCL_DATA_INLINE || x->mode == VOCL_DATA_CHUNKED;
    switch (x->mode) {
    case VOCL_DATA_INLINE: {
        void *p = exec_host_alloc(q->s, x->size);
        if (p && write)
            memcpy(p, x->inline_data, x->size);
        return p;
    }
    case VOCL_DATA_HOSTPTR: return x->host;
    case VOCL_DATA_CHUNKED:
        return write ? recv_whole(q, x) : exec_host_alloc(q->s, x->size);
    default: return NULL;
    }
}

/*
 * After the native call (status rc, command e, not blocking): a write's
 * bytes are freed once e completes; a read's go out once it completes, in
 * the reply or as chunks; a blocking call is answered then.  The status.
 */
cl_int exec_span_end(struct exec_req *q, const struct exec_xfer *x, bool write, cl_int rc,
                     cl_event e, void *buf, bool owned, cl_bool blocking, cl_event *ev)
{
    if (!write && x->mode == VOCL_DATA_INLINE)
        return reply_with_data(q, rc, e, buf, x->size, ev);
    if (write && owned)
        exec_keep_until_done(q->s, rc, e, buf);
    else if (!write && x->mode == VOCL_DATA_CHUNKED)
        send_owned(q, x, buf, rc == CL_SUCCESS, rc == CL_SUCCESS ? e : NULL);
    rc = exec_finish_cmd(q, rc, e, blocking, ev);
    vocl_wr_i32(q->w, rc);
    return rc;
}
/* a * b and a + b, or SIZE_MAX where they overflow: no span is that long. */
static size_t sat_mul(size_t a, size_t b)
{
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

static size_t sat_add(size_t a, size_t b)
{
    size_t r;
    return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}

/* The span must hold what the region addresses with the pitches the native
 * call uses: the ones given, or (0) rows and slices packed tight. */
void exec_span_check(struct exec_req *q, size_t span, const size_t *origin, const size_t *region,
                     size_t row, size_t slice, size_t elem)
{
    if (!origin || !region || !region[0] || !region[1] || !region[2] || !elem)
        return; /* the native call refuses an empty region */
    row = row ? row : sat_mul(region[0], elem);
    slice = slice ? slice : sat_mul(row, region[1]);
    size_t need = sat_add(sat_add(sat_mul(sat_add(origin[2], region[2] - 1), slice),
                                  sat_mul(sat_add(origin[1], region[1] - 1), row)),
                          sat_mul(sat_add(origin[0], region[0]), elem));
    if (need > span)
        exec_fail(q, "span shorter than the region it holds");
}

static void buffer_rect(struct exec_req *q, bool write)
{
    /* The two messages have the same fields (their data's direction aside). */
    struct vocl_msg_clEnqueueWriteBufferRect_req m;
    const char *why;
    if (write) {
        why = vocl_dec_clEnqueueWriteBufferRect_req(q->r, &m);
    } else {
        struct vocl_msg_clEnqueueReadBufferRect_req rm;
        why = vocl_dec_clEnqueueReadBufferRect_req(q->r, &rm);
        m = (struct vocl_msg_clEnqueueWriteBufferRect_req){
            .queue = rm.queue, .buffer = rm.buffer, .blocking = rm.blocking,
            .buffer_origin = rm.buffer_origin, .host_origin = rm.host_origin,
            .region = rm.region, .buffer_row_pitch = rm.buffer_row_pitch,
            .buffer_slice_pitch = rm.buffer_slice_pitch, .host_row_pitch = rm.host_row_pitch,
            .host_slice_pitch = rm.host_slice_pitch, .wait_list = rm.wait_list,
            .event = rm.event, .span = rm.span, .data = rm.data};
    }
    if (why)
        exec_fail(q, why);
    cl_command_queue queue = exec_h(q, m.queue, VOCL_T_QUEUE, 0);
    cl_mem buf = exec_h(q, m.buffer, VOCL_T_MEM, 0);
    cl_bool blocking = m.blocking;
    const size_t *borigin = exec_va3(q, &m.buffer_origin);
    const size_t *horigin = exec_va3(q, &m.host_origin);
    const size_t *region = exec_va3(q, &m.region);
    size_t brow = (size_t)m.buffer_row_pitch, bslice = (size_t)m.buffer_slice_pitch;
    size_t hrow = (size_t)m.host_row_pitch, hslice = (size_t)m.host_slice_pitch;
    cl_uint nwl;
    const cl_event *wl = exec_ha(q, VOCL_T_EVENT, &m.wait_list, &nwl);
    uint64_t ev_id = exec_newid(q, m.event);
    size_t span = (size_t)m.span;
    struct exec_xfer x;
    exec_xfer_use(q, &x, &m.data, span, write);
    cl_event ev = NULL;

    if (x.mode != VOCL_DATA_HOSTPTR)
        exec_span_check(q, span, horigin, region, hrow, hslice, 1);
    if (!borigin || !horigin || !region)
        exec_fail(q, "rect transfer without origins or region");
    if (!exec_req_begin(q)) {
        exec_xfer_reject(q, &x, write);
        return;
    }
    /* Never blocking here: the command may wait for the client (exec_span_end). */
    bool owned;
    void *data = exec_span_begin(q, &x, write, &owned);
    cl_event e = NULL;
    cl_int rc = !data ? CL_OUT_OF_HOST_MEMORY
                : write ? q->cl->clEnqueueWriteBufferRect(queue, buf, CL_FALSE, borigin, horigin,
                                                          region, brow, bslice, hrow, hslice, data,
                                                          nwl, wl, &e)
                        : q->cl->clEnqueueReadBufferRect(queue, buf, CL_FALSE, borigin, horigin,
                                                         region, brow, bslice, hrow, hslice, data,
                                                         nwl, wl, &e);
    rc = exec_span_end(q, &x, write, rc, e, data, owned, blocking, ev_id ? &ev : NULL);
    exec_put_event(q, rc, ev_id, ev);
}

void exec_op_clEnqueueReadBufferRect(struct exec_req *q)
{
    buffer_rect(q, false);
}

void exec_op_clEnqueueWriteBufferRect(struct exec_req *q)
{
    buffer_rect(q, true);
}
