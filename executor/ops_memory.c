/*
 * ops_memory.c - proxy handlers for memory objects and transfers.
 *
 * Bulk data comes in one of three modes (protocol.h): inline in the message,
 * in chunks on the data channel, or, for the in-process executor only, as a
 * host pointer used in place.  Chunked buffer transfers take the fastest of
 * three paths:
 *
 *   direct   the device keeps its buffers in host memory (a CPU device):
 *            the region is mapped (no copy) and the chunks are received
 *            straight into it, or sent straight from it;
 *   staged   each chunk passes through the next buffer of the node's pinned
 *            pool; the device copy of chunk k runs (on the driver's threads)
 *            while chunk k+1 crosses the network (on this thread for writes,
 *            on the stream thread for reads: stream.c);
 *   serial   VOCL_PIPELINE=0: one staging buffer, each stage waited for.
 *
 * No request, blocking or not, may leave this thread waiting on a queue
 * that a user event not yet set may hold (the client would be waiting for
 * us to read its clSetUserEventStatus, sent by another of its threads):
 * while the client has such events, transfers go through memory of their
 * own instead (may_block).
 */
#include "proxyd.h"

#include <stdlib.h>
#include <string.h>

/* Where the bytes of one transfer are, once its header is decoded. */
struct xfer {
    uint8_t mode;
    size_t size;
    const void *inline_data; /* INLINE */
    size_t chunk;            /* CHUNKED */
    void *host;              /* HOSTPTR */
};

/* Checks the data fields a generated decoder read (d) for a transfer of size bytes. */
static void use_xfer(struct proxyd_req *q, struct xfer *x, const struct vocl_data *d, size_t size,
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
            proxyd_fail(q, "inline data size differs from the transfer size");
        if (size > VOCL_INLINE_MAX)
            proxyd_fail(q, "inline transfer too large");
        break;
    }
    case VOCL_DATA_CHUNKED:
        x->chunk = (size_t)d->arg;
        if (x->chunk < PROXYD_CHUNK_MIN || x->chunk > q->s->node->xfer.pool_size)
            proxyd_fail(q, "chunk size out of range");
        /* A chunked read answers with one message per chunk, even when it
         * fails: keep that count sane. */
        else if (size / PROXYD_CHUNK_MIN > (1u << 24))
            proxyd_fail(q, "transfer too large");
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
            proxyd_fail(q, "host pointers are accepted in-process only");
        break;
    default:
        proxyd_fail(q, "unknown data mode");
    }
}

static size_t chunk_len(const struct xfer *x, size_t done)
{
    return x->size - done < x->chunk ? x->size - done : x->chunk;
}

/* Receives every chunk of x into dst. */
static int recv_chunks(struct proxyd_req *q, const struct xfer *x, uint8_t *dst)
{
    for (size_t done = 0; done < x->size; done += x->chunk)
        if (q->s->data->recv(q->s, q->s->data_tag, dst + done, chunk_len(x, done))) {
            q->s->broken = true; /* the data channel is out of step */
            return -1;
        }
    return 0;
}

/*
 * A chunked write whose request was rejected: the client sent (or will
 * send) its chunks anyway, so they are drained to keep the channel in step.
 */
static void drain_chunks(struct proxyd_req *q, const struct xfer *x)
{
    if (x->mode != VOCL_DATA_CHUNKED || x->chunk == 0)
        return;
    uint8_t *buf = malloc(x->chunk);
    for (size_t done = 0; buf && done < x->size; done += x->chunk)
        if (q->s->data->recv(q->s, q->s->data_tag, buf, chunk_len(x, done)))
            break;
    if (!buf)
        q->s->broken = true;
    free(buf);
}

/* A failed chunked read: as many empty chunks as the client waits for. */
static void fail_chunks(struct proxyd_req *q, const struct xfer *x)
{
    if (x->mode != VOCL_DATA_CHUNKED || x->chunk == 0)
        return;
    for (size_t done = 0; done < x->size; done += x->chunk)
        proxyd_stream_send(q->s->node, &(struct proxyd_stream_chunk){.s = q->s});
}

/* A rejected request's data: drained (a write's) or answered empty (a read's). */
static void reject_data(struct proxyd_req *q, const struct xfer *x, bool write)
{
    if (write)
        drain_chunks(q, x);
    else
        fail_chunks(q, x);
}

/* All the chunks of x in memory of its own (to free); NULL when out of
 * memory (drained) or when the data channel broke. */
static uint8_t *recv_whole(struct proxyd_req *q, const struct xfer *x)
{
    uint8_t *buf = malloc(x->size ? x->size : 1);
    if (!buf)
        drain_chunks(q, x);
    else if (recv_chunks(q, x, buf)) {
        free(buf);
        buf = NULL;
    }
    return buf;
}

/* Sends buf's x->size bytes as chunks once ready completes (NULL: now);
 * buf is freed after. */
static void send_owned(struct proxyd_req *q, const struct xfer *x, uint8_t *buf, bool ok,
                       cl_event ready)
{
    for (size_t done = 0; done < x->size; done += x->chunk) {
        bool last = done + x->chunk >= x->size;
        if (ready)
            q->cl->clRetainEvent(ready); /* each chunk releases its own */
        proxyd_stream_send(q->s->node,
                           &(struct proxyd_stream_chunk){.s = q->s,
                                                         .ready = ready,
                                                         .data = buf ? buf + done : NULL,
                                                         .n = chunk_len(x, done),
                                                         .ok = ok && buf,
                                                         .free_after = last ? buf : NULL});
    }
    if (x->size == 0)
        free(buf);
}

/* The proxy may wait on queues: no user event of the client is still unset.
 * One may hold the queue, and the client's clSetUserEventStatus, sent by
 * another thread while the one that sent q waits for its reply, would wait
 * behind this request. */
static bool may_block(const struct proxyd_req *q)
{
    return q->s->user_events == 0;
}

/* Whether queue's device keeps buffers in host memory, so a map costs no copy. */
static bool direct_ok(struct proxyd_req *q, cl_command_queue queue)
{
    cl_device_id dev;
    cl_bool unified = CL_FALSE;
    return q->s->node->xfer.direct && q->s->node->xfer.pipeline &&
           q->cl->clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof(dev), &dev, NULL) ==
               CL_SUCCESS &&
           q->cl->clGetDeviceInfo(dev, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof(unified), &unified,
                                  NULL) == CL_SUCCESS &&
           unified;
}

/* The end of a command: a blocking one is answered when e completes
 * (complete.c; q->later, and the status the handler writes is dropped), or
 * now if it has; its event is handed over. */
static cl_int finish_cmd(struct proxyd_req *q, cl_int rc, cl_event e, cl_bool blocking,
                         cl_event *ev)
{
    if (rc == CL_SUCCESS && e && blocking)
        proxyd_reply_after(q, 1, &e, NULL, 0, &rc);
    if (rc == CL_SUCCESS && ev)
        *ev = e;
    else if (e)
        q->cl->clReleaseEvent(e);
    return rc;
}

/* A read whose bytes go in the reply (out: malloc'd, taken), once its
 * command e completes: answered later, or now where it has; the status. */
static cl_int reply_with_data(struct proxyd_req *q, cl_int rc, cl_event e, void *out, size_t size,
                              cl_event *ev)
{
    if (rc == CL_SUCCESS && proxyd_reply_after(q, 1, &e, out, size, &rc))
        return finish_cmd(q, CL_SUCCESS, e, CL_FALSE, ev);
    rc = finish_cmd(q, rc, e, CL_FALSE, ev);
    vocl_wr_i32(q->w, rc);
    if (rc == CL_SUCCESS)
        vocl_wr_bytes(q->w, out, size);
    free(out);
    return rc;
}

/* Host memory a non-blocking write reads from: freed when the write is done. */
static void keep_until_done(struct proxyd_req *q, cl_int rc, cl_event e, void *mem)
{
    if (rc != CL_SUCCESS || !e) {
        free(mem);
    } else if (proxyd_keep(q->s->node, e, mem)) {
        q->cl->clWaitForEvents(1, &e);
        free(mem);
    }
}

/* Writes x's bytes into [offset, offset+size) of buf through queue. */
static cl_int write_chunks(struct proxyd_req *q, cl_command_queue queue, cl_mem buf, size_t offset,
                           const struct xfer *x, cl_uint nwl, const cl_event *wl, cl_bool blocking,
                           cl_event *ev)
{
    cl_event e = NULL;
    cl_int rc;
    if (!may_block(q)) {
        uint8_t *mem = recv_whole(q, x);
        if (!mem)
            return q->s->broken ? CL_OUT_OF_RESOURCES : CL_OUT_OF_HOST_MEMORY;
        rc = q->cl->clEnqueueWriteBuffer(queue, buf, CL_FALSE, offset, x->size, mem, nwl, wl, &e);
        keep_until_done(q, rc, e, mem);
        return finish_cmd(q, rc, e, blocking, ev);
    }
    if (direct_ok(q, queue)) {
        uint8_t *p = q->cl->clEnqueueMapBuffer(queue, buf, CL_TRUE, CL_MAP_WRITE_INVALIDATE_REGION,
                                               offset, x->size, nwl, wl, NULL, &rc);
        if (p) {
            int got = recv_chunks(q, x, p);
            rc = q->cl->clEnqueueUnmapMemObject(queue, buf, p, 0, NULL, &e);
            return finish_cmd(q, got ? CL_OUT_OF_RESOURCES : rc, e, blocking, ev);
        }
        /* Not mappable (CL_MEM_HOST_NO_ACCESS, ...): the staged write says why. */
    }
    struct proxyd_pool *pool = proxyd_node_pool(q->s->node);
    if (!pool) {
        drain_chunks(q, x);
        return CL_OUT_OF_HOST_MEMORY;
    }
    cl_bool serial = !q->s->node->xfer.pipeline;
    rc = CL_SUCCESS;
    for (size_t done = 0; done < x->size; done += x->chunk) {
        size_t n = chunk_len(x, done);
        unsigned slot;
        uint8_t *stage = proxyd_pool_take(pool, &slot);
        if (q->s->data->recv(q->s, q->s->data_tag, stage, n)) {
            q->s->broken = true;
            rc = CL_OUT_OF_RESOURCES;
            break;
        }
        if (rc != CL_SUCCESS)
            continue; /* an earlier chunk failed: drain the rest */
        cl_event prev = e;
        e = NULL;
        /* Each chunk after the one before: the command completes with the last. */
        rc = q->cl->clEnqueueWriteBuffer(queue, buf, serial, offset + done, n, stage,
                                         prev ? 1 : nwl, prev ? &prev : wl, &e);
        if (prev)
            q->cl->clReleaseEvent(prev);
        if (rc == CL_SUCCESS)
            proxyd_pool_busy(pool, slot, e);
    }
    return finish_cmd(q, rc, e, blocking, ev);
}

/* Reads [offset, offset+size) of buf through queue and sends it as x's chunks. */
static cl_int read_chunks(struct proxyd_req *q, cl_command_queue queue, cl_mem buf, size_t offset,
                          const struct xfer *x, cl_uint nwl, const cl_event *wl, cl_bool blocking,
                          cl_event *ev)
{
    cl_event e = NULL;
    cl_int rc = CL_SUCCESS;
    cl_context ctx;
    cl_event gate = NULL, mapped = NULL;
    if (direct_ok(q, queue) &&
        q->cl->clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof(ctx), &ctx, NULL) ==
            CL_SUCCESS &&
        (gate = q->cl->clCreateUserEvent(ctx, &rc))) {
        /* The unmap waits for the stream to send the last chunk (gate), so
         * the commands after the read cannot touch the region before. */
        uint8_t *p = q->cl->clEnqueueMapBuffer(queue, buf, CL_FALSE, CL_MAP_READ, offset, x->size,
                                               nwl, wl, &mapped, &rc);
        if (p && q->cl->clEnqueueUnmapMemObject(queue, buf, p, 1, &gate, &e) == CL_SUCCESS) {
            for (size_t done = 0; done < x->size; done += x->chunk) {
                bool last = done + x->chunk >= x->size;
                q->cl->clRetainEvent(mapped);
                proxyd_stream_send(q->s->node,
                                   &(struct proxyd_stream_chunk){.s = q->s,
                                                                 .ready = mapped,
                                                                 .data = p + done,
                                                                 .n = chunk_len(x, done),
                                                                 .ok = true,
                                                                 .gate = last ? gate : NULL});
            }
            q->cl->clReleaseEvent(mapped);
            return finish_cmd(q, CL_SUCCESS, e, blocking, ev);
        }
        if (mapped) { /* mapped but not unmapped: give it back */
            q->cl->clWaitForEvents(1, &mapped);
            q->cl->clEnqueueUnmapMemObject(queue, buf, p, 0, NULL, NULL);
            q->cl->clReleaseEvent(mapped);
        }
        q->cl->clSetUserEventStatus(gate, CL_COMPLETE);
        q->cl->clReleaseEvent(gate);
        /* Not mappable: the staged read says why. */
    }
    struct proxyd_pool *pool = proxyd_node_pool(q->s->node);
    bool own = !may_block(q) || !pool; /* memory of its own, not the pool */
    cl_bool serial = !q->s->node->xfer.pipeline && may_block(q);
    rc = CL_SUCCESS;
    for (size_t done = 0; done < x->size; done += x->chunk) {
        size_t n = chunk_len(x, done);
        struct proxyd_stream_chunk c = {.s = q->s, .n = n};
        unsigned slot = 0;
        if (rc == CL_SUCCESS) {
            uint8_t *stage = own ? malloc(n) : proxyd_pool_take(pool, &slot);
            cl_event prev = e;
            e = NULL;
            rc = stage ? q->cl->clEnqueueReadBuffer(queue, buf, serial, offset + done, n, stage,
                                                    prev ? 1 : nwl, prev ? &prev : wl, &e)
                       : CL_OUT_OF_HOST_MEMORY;
            if (prev)
                q->cl->clReleaseEvent(prev);
            if (rc == CL_SUCCESS) {
                c.ok = true;
                c.data = stage;
                c.ready = e;
                q->cl->clRetainEvent(e);
                if (own)
                    c.free_after = stage;
                else
                    c.slot = proxyd_pool_hold(pool, slot);
            } else if (own) {
                free(stage);
            }
        }
        proxyd_stream_send(q->s->node, &c);
    }
    return finish_cmd(q, rc, e, blocking, ev);
}

/* A temporary queue on the context's first device, to fill a new buffer. */
static cl_command_queue context_queue(struct proxyd_req *q, cl_context ctx)
{
    cl_device_id devs[64];
    size_t sz = 0;
    cl_int err;
    if (q->cl->clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof(devs), devs, &sz) != CL_SUCCESS ||
        sz < sizeof(cl_device_id))
        return NULL;
    return q->cl->clCreateCommandQueue(ctx, devs[0], 0, &err);
}

void proxyd_op_clCreateBuffer(struct proxyd_req *q)
{
    struct vocl_msg_clCreateBuffer_req m;
    const char *why = vocl_dec_clCreateBuffer_req(q->r, &m);
    if (why)
        proxyd_fail(q, why);
    cl_context ctx = proxyd_h(q, m.context, VOCL_T_CONTEXT, 0);
    const cl_mem_properties *props = proxyd_props(q, &m.properties);
    cl_mem_flags flags = m.flags;
    size_t size = (size_t)m.size;
    struct xfer x;
    use_xfer(q, &x, &m.data, size, true);
    uint64_t id = proxyd_newobj(q, m.new_id);
    cl_int err = CL_SUCCESS;
    cl_mem mem = NULL;

    if (!proxyd_req_begin(q)) {
        drain_chunks(q, &x);
        return;
    }
    void *host = x.mode == VOCL_DATA_INLINE    ? (void *)x.inline_data
                 : x.mode == VOCL_DATA_HOSTPTR ? x.host
                                               : NULL;
    if (x.mode == VOCL_DATA_INLINE || x.mode == VOCL_DATA_CHUNKED)
        flags = (flags & ~(cl_mem_flags)CL_MEM_USE_HOST_PTR) |
                (x.mode == VOCL_DATA_INLINE ? CL_MEM_COPY_HOST_PTR : 0);
    if (x.mode == VOCL_DATA_CHUNKED)
        flags &= ~(cl_mem_flags)CL_MEM_COPY_HOST_PTR;
    if (props)
        mem = q->cl->clCreateBufferWithProperties(ctx, props, flags, size, host, &err);
    else if (x.mode == VOCL_DATA_NONE)
        mem = proxyd_shm_buffer(q, ctx, flags, size, &err);
    if (!mem && !props && err == CL_SUCCESS)
        mem = q->cl->clCreateBuffer(ctx, flags, size, host, &err);
    if (x.mode == VOCL_DATA_CHUNKED) {
        cl_command_queue tq = mem ? context_queue(q, ctx) : NULL;
        if (mem && !tq)
            err = CL_OUT_OF_RESOURCES;
        if (tq) {
            /* A new buffer on a queue of its own: nothing can hold this up. */
            cl_event e = NULL;
            err = write_chunks(q, tq, mem, 0, &x, 0, NULL, CL_FALSE, &e);
            if (e) {
                if (err == CL_SUCCESS)
                    err = q->cl->clWaitForEvents(1, &e);
                q->cl->clReleaseEvent(e);
            }
            q->cl->clReleaseCommandQueue(tq);
        } else {
            drain_chunks(q, &x);
        }
        if (err != CL_SUCCESS && mem) {
            q->cl->clReleaseMemObject(mem);
            mem = NULL;
        }
    }
    proxyd_reply_made(q, id, VOCL_T_MEM, mem, err);
}

void proxyd_op_clCreateSubBuffer(struct proxyd_req *q)
{
    struct vocl_msg_clCreateSubBuffer_req m;
    vocl_dec_clCreateSubBuffer_req(q->r, &m); /* (fixed fields: truncation is all that fails) */
    cl_mem buf = proxyd_h(q, m.buffer, VOCL_T_MEM, 0);
    cl_mem_flags flags = m.flags;
    cl_buffer_create_type type = (cl_buffer_create_type)m.create_type;
    cl_buffer_region region = {(size_t)m.origin, (size_t)m.size};
    uint64_t id = proxyd_newobj(q, m.new_id);
    cl_int err = CL_SUCCESS;
    if (!proxyd_req_begin(q))
        return;
    cl_mem mem = q->cl->clCreateSubBuffer(buf, flags, type, &region, &err);
    proxyd_reply_made(q, id, VOCL_T_MEM, mem, err);
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
    struct xfer x;
};

static void rd_buf_xfer(struct proxyd_req *q, struct buf_xfer *b, bool data_in)
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
        proxyd_fail(q, why);
    b->queue = proxyd_h(q, m.queue, VOCL_T_QUEUE, 0);
    b->buf = proxyd_h(q, m.buffer, VOCL_T_MEM, 0);
    b->blocking = m.blocking;
    b->offset = (size_t)m.offset;
    b->size = (size_t)m.size;
    b->wl = proxyd_ha(q, VOCL_T_EVENT, &m.wait_list, &b->nwl);
    b->ev_id = proxyd_newid(q, m.event);
    use_xfer(q, &b->x, &m.data, b->size, data_in);
    if (b->x.mode == VOCL_DATA_NONE)
        proxyd_fail(q, "transfer without data or destination");
    /* libvocl checks the range; past the buffer, a chunked read would be
     * answered by up to 2^24 empty chunks: the session ends instead. */
    size_t msize = 0;
    if (b->x.mode == VOCL_DATA_CHUNKED && b->x.chunk && b->buf &&
        (q->cl->clGetMemObjectInfo(b->buf, CL_MEM_SIZE, sizeof(msize), &msize, NULL) ||
         b->offset > msize || b->size > msize - b->offset)) {
        proxyd_fail(q, "chunked transfer past the end of the buffer");
        b->x.chunk = 0;
        q->s->broken = true;
    }
    /* A read that answers in its reply must have a reply to answer in. */
    if (!data_in && b->x.mode == VOCL_DATA_INLINE && q->async)
        proxyd_fail(q, "inline read without a reply");
}

void proxyd_op_clEnqueueWriteBuffer(struct proxyd_req *q)
{
    struct buf_xfer b;
    rd_buf_xfer(q, &b, true);
    cl_event ev = NULL, *evp = b.ev_id ? &ev : NULL;
    cl_int rc;

    if (!proxyd_req_begin(q)) {
        drain_chunks(q, &b.x);
        return;
    }
    cl_event e = NULL;
    switch (b.x.mode) {
    case VOCL_DATA_CHUNKED:
        rc = write_chunks(q, b.queue, b.buf, b.offset, &b.x, b.nwl, b.wl, b.blocking, evp);
        break;
    case VOCL_DATA_HOSTPTR:
        /* Blocking or not, the request thread does not wait (finish_cmd). */
        rc = q->cl->clEnqueueWriteBuffer(b.queue, b.buf, CL_FALSE, b.offset, b.size, b.x.host,
                                         b.nwl, b.wl, &e);
        rc = finish_cmd(q, rc, e, b.blocking, evp);
        break;
    default: {
        /* The message is gone after this call: write from a copy. */
        void *copy = malloc(b.size);
        if (copy)
            memcpy(copy, b.x.inline_data, b.size);
        rc = copy ? q->cl->clEnqueueWriteBuffer(b.queue, b.buf, CL_FALSE, b.offset, b.size, copy,
                                                b.nwl, b.wl, &e)
                  : CL_OUT_OF_HOST_MEMORY;
        keep_until_done(q, rc, e, copy);
        rc = finish_cmd(q, rc, e, b.blocking, evp);
    }
    }
    proxyd_put_event(q, rc, b.ev_id, ev);
    vocl_wr_i32(q->w, rc);
}

void proxyd_op_clEnqueueReadBuffer(struct proxyd_req *q)
{
    struct buf_xfer b;
    rd_buf_xfer(q, &b, false);
    cl_event ev = NULL, *evp = b.ev_id ? &ev : NULL;
    cl_int rc;

    if (!proxyd_req_begin(q)) {
        fail_chunks(q, &b.x);
        return;
    }
    cl_event e = NULL;
    switch (b.x.mode) {
    case VOCL_DATA_HOSTPTR:
        rc = q->cl->clEnqueueReadBuffer(b.queue, b.buf, CL_FALSE, b.offset, b.size, b.x.host,
                                        b.nwl, b.wl, &e);
        rc = finish_cmd(q, rc, e, b.blocking, evp);
        break;
    case VOCL_DATA_INLINE: {
        /* The data goes in the reply, once the read has completed. */
        void *out = malloc(b.size ? b.size : 1);
        rc = out ? q->cl->clEnqueueReadBuffer(b.queue, b.buf, CL_FALSE, b.offset, b.size, out,
                                              b.nwl, b.wl, &e)
                 : CL_OUT_OF_HOST_MEMORY;
        rc = reply_with_data(q, rc, e, out, b.size, evp);
        proxyd_put_event(q, rc, b.ev_id, ev);
        return;
    }
    default:
        rc = read_chunks(q, b.queue, b.buf, b.offset, &b.x, b.nwl, b.wl, b.blocking, evp);
    }
    proxyd_put_event(q, rc, b.ev_id, ev);
    vocl_wr_i32(q->w, rc);
}

/* Map and unmap reach the executor only in-process: remote maps are host
 * shadows that libvocl fills with reads and writes back with writes. */
void proxyd_op_clEnqueueMapBuffer(struct proxyd_req *q)
{
    struct vocl_msg_clEnqueueMapBuffer_req m;
    const char *why = vocl_dec_clEnqueueMapBuffer_req(q->r, &m);
    if (why)
        proxyd_fail(q, why);
    cl_command_queue queue = proxyd_h(q, m.queue, VOCL_T_QUEUE, 0);
    cl_mem buf = proxyd_h(q, m.buffer, VOCL_T_MEM, 0);
    cl_bool blocking = m.blocking;
    cl_map_flags flags = m.map_flags;
    size_t offset = (size_t)m.offset;
    size_t size = (size_t)m.size;
    cl_uint nwl;
    const cl_event *wl = proxyd_ha(q, VOCL_T_EVENT, &m.wait_list, &nwl);
    uint64_t ev_id = proxyd_newid(q, m.event);
    cl_event ev = NULL;
    cl_int err = CL_SUCCESS;

    if (!q->s->in_process)
        proxyd_fail(q, "map is served in-process only");
    if (!proxyd_req_begin(q))
        return;
    void *p = q->cl->clEnqueueMapBuffer(queue, buf, blocking, flags, offset, size, nwl, wl,
                                        ev_id ? &ev : NULL, &err);
    vocl_wr_i32(q->w, p ? CL_SUCCESS : err);
    vocl_enc_clEnqueueMapBuffer_rep(q->w, &(struct vocl_msg_clEnqueueMapBuffer_rep){
                                              .ptr = (uint64_t)(uintptr_t)p});
    if (p && ev_id)
        proxyd_put_new(q, ev_id, VOCL_T_EVENT, ev);
}

void proxyd_op_clEnqueueUnmapMemObject(struct proxyd_req *q)
{
    struct vocl_msg_clEnqueueUnmapMemObject_req m;
    const char *why = vocl_dec_clEnqueueUnmapMemObject_req(q->r, &m);
    if (why)
        proxyd_fail(q, why);
    cl_command_queue queue = proxyd_h(q, m.queue, VOCL_T_QUEUE, 0);
    cl_mem mem = proxyd_h(q, m.memobj, VOCL_T_MEM, 0);
    void *ptr = (void *)(uintptr_t)m.mapped_ptr;
    cl_uint nwl;
    const cl_event *wl = proxyd_ha(q, VOCL_T_EVENT, &m.wait_list, &nwl);
    uint64_t ev_id = proxyd_newid(q, m.event);
    cl_event ev = NULL;

    if (!q->s->in_process)
        proxyd_fail(q, "unmap is served in-process only");
    if (!proxyd_req_begin(q))
        return;
    cl_int rc = q->cl->clEnqueueUnmapMemObject(queue, mem, ptr, nwl, wl, ev_id ? &ev : NULL);
    vocl_wr_i32(q->w, rc);
    proxyd_put_event(q, rc, ev_id, ev);
}

/* --- spans: the host rows of rectangular transfers and images ------------------------------- */

/*
 * Where the bytes of an image creation or of a rectangular or image
 * transfer are for the native call, which does not block: a write's data
 * (a copy when inline, received whole when chunked), or where a read lands
 * (the client's memory in-process).  All but the client's own memory must
 * outlive the request: *owned (freed by the caller, or span_end).
 */
static void *span_begin(struct proxyd_req *q, const struct xfer *x, bool write, bool *owned)
{
    *owned = x->mode == VOCL_DATA_INLINE || x->mode == VOCL_DATA_CHUNKED;
    switch (x->mode) {
    case VOCL_DATA_INLINE: {
        void *p = malloc(x->size ? x->size : 1);
        if (p && write)
            memcpy(p, x->inline_data, x->size);
        return p;
    }
    case VOCL_DATA_HOSTPTR: return x->host;
    case VOCL_DATA_CHUNKED: return write ? recv_whole(q, x) : malloc(x->size ? x->size : 1);
    default: return NULL;
    }
}

/*
 * After the native call (status rc, command e, not blocking): a write's
 * bytes are freed once e completes; a read's go out once it completes, in
 * the reply or as chunks; a blocking call is answered then.  The status.
 */
static cl_int span_end(struct proxyd_req *q, const struct xfer *x, bool write, cl_int rc,
                       cl_event e, void *buf, bool owned, cl_bool blocking, cl_event *ev)
{
    if (!write && x->mode == VOCL_DATA_INLINE)
        return reply_with_data(q, rc, e, buf, x->size, ev);
    if (write && owned)
        keep_until_done(q, rc, e, buf);
    else if (!write && x->mode == VOCL_DATA_CHUNKED)
        send_owned(q, x, buf, rc == CL_SUCCESS, rc == CL_SUCCESS ? e : NULL);
    rc = finish_cmd(q, rc, e, blocking, ev);
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
static void check_span(struct proxyd_req *q, size_t span, const size_t *origin,
                       const size_t *region, size_t row, size_t slice, size_t elem)
{
    if (!origin || !region || !region[0] || !region[1] || !region[2] || !elem)
        return; /* the native call refuses an empty region */
    row = row ? row : sat_mul(region[0], elem);
    slice = slice ? slice : sat_mul(row, region[1]);
    size_t need = sat_add(sat_add(sat_mul(sat_add(origin[2], region[2] - 1), slice),
                                  sat_mul(sat_add(origin[1], region[1] - 1), row)),
                          sat_mul(sat_add(origin[0], region[0]), elem));
    if (need > span)
        proxyd_fail(q, "span shorter than the region it holds");
}

static void buffer_rect(struct proxyd_req *q, bool write)
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
        proxyd_fail(q, why);
    cl_command_queue queue = proxyd_h(q, m.queue, VOCL_T_QUEUE, 0);
    cl_mem buf = proxyd_h(q, m.buffer, VOCL_T_MEM, 0);
    cl_bool blocking = m.blocking;
    const size_t *borigin = proxyd_va3(q, &m.buffer_origin);
    const size_t *horigin = proxyd_va3(q, &m.host_origin);
    const size_t *region = proxyd_va3(q, &m.region);
    size_t brow = (size_t)m.buffer_row_pitch, bslice = (size_t)m.buffer_slice_pitch;
    size_t hrow = (size_t)m.host_row_pitch, hslice = (size_t)m.host_slice_pitch;
    cl_uint nwl;
    const cl_event *wl = proxyd_ha(q, VOCL_T_EVENT, &m.wait_list, &nwl);
    uint64_t ev_id = proxyd_newid(q, m.event);
    size_t span = (size_t)m.span;
    struct xfer x;
    use_xfer(q, &x, &m.data, span, write);
    cl_event ev = NULL;

    if (x.mode != VOCL_DATA_HOSTPTR)
        check_span(q, span, horigin, region, hrow, hslice, 1);
    if (!borigin || !horigin || !region)
        proxyd_fail(q, "rect transfer without origins or region");
    if (!proxyd_req_begin(q)) {
        reject_data(q, &x, write);
        return;
    }
    /* Never blocking here: the command may wait for the client (span_end). */
    bool owned;
    void *data = span_begin(q, &x, write, &owned);
    cl_event e = NULL;
    cl_int rc = !data ? CL_OUT_OF_HOST_MEMORY
                : write ? q->cl->clEnqueueWriteBufferRect(queue, buf, CL_FALSE, borigin, horigin,
                                                          region, brow, bslice, hrow, hslice, data,
                                                          nwl, wl, &e)
                        : q->cl->clEnqueueReadBufferRect(queue, buf, CL_FALSE, borigin, horigin,
                                                         region, brow, bslice, hrow, hslice, data,
                                                         nwl, wl, &e);
    rc = span_end(q, &x, write, rc, e, data, owned, blocking, ev_id ? &ev : NULL);
    proxyd_put_event(q, rc, ev_id, ev);
}

void proxyd_op_clEnqueueReadBufferRect(struct proxyd_req *q)
{
    buffer_rect(q, false);
}

void proxyd_op_clEnqueueWriteBufferRect(struct proxyd_req *q)
{
    buffer_rect(q, true);
}

static void image_rw(struct proxyd_req *q, bool write)
{
    /* The two messages have the same fields (their data's direction aside). */
    struct vocl_msg_clEnqueueWriteImage_req m;
    const char *why;
    if (write) {
        why = vocl_dec_clEnqueueWriteImage_req(q->r, &m);
    } else {
        struct vocl_msg_clEnqueueReadImage_req rm;
        why = vocl_dec_clEnqueueReadImage_req(q->r, &rm);
        m = (struct vocl_msg_clEnqueueWriteImage_req){
            .queue = rm.queue, .image = rm.image, .blocking = rm.blocking, .origin = rm.origin,
            .region = rm.region, .row_pitch = rm.row_pitch, .slice_pitch = rm.slice_pitch,
            .wait_list = rm.wait_list, .event = rm.event, .span = rm.span, .data = rm.data};
    }
    if (why)
        proxyd_fail(q, why);
    cl_command_queue queue = proxyd_h(q, m.queue, VOCL_T_QUEUE, 0);
    cl_mem img = proxyd_h(q, m.image, VOCL_T_MEM, 0);
    cl_bool blocking = m.blocking;
    const size_t *origin = proxyd_va3(q, &m.origin);
    const size_t *region = proxyd_va3(q, &m.region);
    size_t row = (size_t)m.row_pitch, slice = (size_t)m.slice_pitch;
    cl_uint nwl;
    const cl_event *wl = proxyd_ha(q, VOCL_T_EVENT, &m.wait_list, &nwl);
    uint64_t ev_id = proxyd_newid(q, m.event);
    size_t span = (size_t)m.span;
    struct xfer x;
    use_xfer(q, &x, &m.data, span, write);
    cl_event ev = NULL;

    if (!origin || !region)
        proxyd_fail(q, "image transfer without origin or region");
    /* The native call checks the pitches against the image; the span must
     * cover them, which the element size and the type (asked of the image)
     * tell: a 1D array's images are host rows slice_pitch apart. */
    size_t elem = 0;
    cl_mem_object_type type = 0;
    if (img && !q->fail) {
        q->cl->clGetImageInfo(img, CL_IMAGE_ELEMENT_SIZE, sizeof(elem), &elem, NULL);
        q->cl->clGetMemObjectInfo(img, CL_MEM_TYPE, sizeof(type), &type, NULL);
    }
    if (x.mode != VOCL_DATA_HOSTPTR && region && elem) {
        const size_t zero[3] = {0, 0, 0};
        const size_t rows[3] = {region[0], 1, region[1]};
        check_span(q, span, zero, type == CL_MEM_OBJECT_IMAGE1D_ARRAY ? rows : region, row, slice,
                   elem);
    }
    if (!proxyd_req_begin(q)) {
        reject_data(q, &x, write);
        return;
    }
    bool owned;
    void *data = span_begin(q, &x, write, &owned);
    cl_event e = NULL;
    cl_int rc = !data ? CL_OUT_OF_HOST_MEMORY
                : write ? q->cl->clEnqueueWriteImage(queue, img, CL_FALSE, origin, region, row,
                                                     slice, data, nwl, wl, &e)
                        : q->cl->clEnqueueReadImage(queue, img, CL_FALSE, origin, region, row,
                                                    slice, data, nwl, wl, &e);
    rc = span_end(q, &x, write, rc, e, data, owned, blocking, ev_id ? &ev : NULL);
    proxyd_put_event(q, rc, ev_id, ev);
}

void proxyd_op_clEnqueueReadImage(struct proxyd_req *q)
{
    image_rw(q, false);
}

void proxyd_op_clEnqueueWriteImage(struct proxyd_req *q)
{
    image_rw(q, true);
}

void proxyd_op_clCreateImage(struct proxyd_req *q)
{
    struct vocl_msg_clCreateImage_req m;
    const char *why = vocl_dec_clCreateImage_req(q->r, &m);
    if (why)
        proxyd_fail(q, why);
    cl_context ctx = proxyd_h(q, m.context, VOCL_T_CONTEXT, 0);
    const cl_mem_properties *props = proxyd_props(q, &m.properties);
    cl_mem_flags flags = m.flags;
    cl_image_format fmt = {m.channel_order, m.channel_data_type};
    cl_image_desc desc = {0};
    desc.image_type = (cl_mem_object_type)m.image_type;
    desc.image_width = (size_t)m.width;
    desc.image_height = (size_t)m.height;
    desc.image_depth = (size_t)m.depth;
    desc.image_array_size = (size_t)m.array_size;
    desc.image_row_pitch = (size_t)m.row_pitch;
    desc.image_slice_pitch = (size_t)m.slice_pitch;
    desc.num_mip_levels = m.num_mip_levels;
    desc.num_samples = m.num_samples;
    desc.mem_object = proxyd_h(q, m.buffer, VOCL_T_MEM, 1);
    size_t span = (size_t)m.span;
    struct xfer x;
    use_xfer(q, &x, &m.data, span, true);
    uint64_t id = proxyd_newobj(q, m.new_id);
    cl_int err = CL_SUCCESS;
    bool owned = false;

    /* The native library reads as much as the descriptor says: never more
     * than the client sent. */
    if (x.mode != VOCL_DATA_NONE && x.mode != VOCL_DATA_HOSTPTR &&
        span < vocl_image_host_size(&fmt, &desc))
        proxyd_fail(q, "image data shorter than its descriptor");
    if (!proxyd_req_begin(q)) {
        drain_chunks(q, &x);
        return;
    }
    void *host = NULL;
    if (x.mode != VOCL_DATA_NONE) {
        host = span_begin(q, &x, true, &owned);
        if (!host) {
            vocl_wr_i32(q->w, CL_OUT_OF_HOST_MEMORY);
            return;
        }
        if (x.mode != VOCL_DATA_HOSTPTR)
            flags = (flags & ~(cl_mem_flags)CL_MEM_USE_HOST_PTR) | CL_MEM_COPY_HOST_PTR;
    }
    cl_mem img =
        props ? q->cl->clCreateImageWithProperties(ctx, props, flags, &fmt, &desc, host, &err)
              : q->cl->clCreateImage(ctx, flags, &fmt, &desc, host, &err);
    if (owned)
        free(host);
    proxyd_reply_made(q, id, VOCL_T_MEM, img, err);
}
