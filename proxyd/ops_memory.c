/*
 * ops_memory.c - proxy handlers for memory objects and transfers.
 *
 * Bulk data comes in one of three modes (protocol.h): inline in the message,
 * in chunks on the data channel (staged through one chunk-sized buffer), or,
 * for the in-process executor only, as a host pointer used in place.
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

static void rd_xfer(struct proxyd_req *q, struct xfer *x, size_t size, bool data_in)
{
    memset(x, 0, sizeof(*x));
    x->mode = vocl_rd_u8(q->r);
    x->size = size;
    switch (x->mode) {
    case VOCL_DATA_NONE:
        break;
    case VOCL_DATA_INLINE: {
        size_t n = 0;
        if (data_in)
            x->inline_data = vocl_rd_bytes(q->r, &n);
        if (data_in && n != size)
            proxyd_fail(q, "inline data size differs from the transfer size");
        if (size > VOCL_INLINE_MAX)
            proxyd_fail(q, "inline transfer too large");
        break;
    }
    case VOCL_DATA_CHUNKED:
        x->chunk = (size_t)vocl_rd_u64(q->r);
        if (x->chunk < PROXYD_CHUNK_MIN || x->chunk > PROXYD_CHUNK_MAX)
            proxyd_fail(q, "chunk size out of range");
        break;
    case VOCL_DATA_HOSTPTR:
        x->host = (void *)(uintptr_t)vocl_rd_u64(q->r);
        if (!q->s->in_process)
            proxyd_fail(q, "host pointers are accepted in-process only");
        break;
    default:
        proxyd_fail(q, "unknown data mode");
    }
}

/*
 * A chunked transfer whose request was rejected: the client sent (or will
 * send) its chunks anyway, so they are drained to keep the channel in step.
 */
static int drain_chunks(struct proxyd_req *q, const struct xfer *x)
{
    if (x->mode != VOCL_DATA_CHUNKED || x->chunk == 0)
        return 0;
    void *buf = malloc(x->chunk);
    int rc = buf ? 0 : -1;
    for (size_t done = 0; rc == 0 && done < x->size; done += x->chunk) {
        size_t n = x->size - done < x->chunk ? x->size - done : x->chunk;
        rc = q->s->data->recv(q->s, buf, n);
    }
    free(buf);
    if (rc)
        q->s->broken = true;
    return rc;
}

/* Writes x's bytes into [offset, offset+size) of buf through queue. */
static cl_int write_chunks(struct proxyd_req *q, cl_command_queue queue, cl_mem buf, size_t offset,
                           const struct xfer *x, cl_uint nwl, const cl_event *wl, cl_event *ev)
{
    void *stage = malloc(x->chunk);
    cl_int rc = stage ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
    for (size_t done = 0; done < x->size; done += x->chunk) {
        size_t n = x->size - done < x->chunk ? x->size - done : x->chunk;
        bool last = done + n == x->size;
        if (!stage || q->s->data->recv(q->s, stage, n)) {
            q->s->broken = true; /* the data channel is out of step */
            free(stage);
            return stage ? CL_OUT_OF_RESOURCES : CL_OUT_OF_HOST_MEMORY;
        }
        if (rc != CL_SUCCESS)
            continue; /* an earlier chunk failed: drain the rest */
        rc = q->cl->clEnqueueWriteBuffer(queue, buf, CL_TRUE, offset + done, n, stage,
                                         done == 0 ? nwl : 0, done == 0 ? wl : NULL,
                                         last ? ev : NULL);
    }
    free(stage);
    return rc;
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
    cl_context ctx = proxyd_rd_h(q, VOCL_T_CONTEXT, 0);
    const cl_mem_properties *props = proxyd_rd_props(q);
    cl_mem_flags flags = vocl_rd_u64(q->r);
    size_t size = (size_t)vocl_rd_u64(q->r);
    struct xfer x;
    rd_xfer(q, &x, size, true);
    uint64_t id = proxyd_rd_newobj(q);
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
    else
        mem = q->cl->clCreateBuffer(ctx, flags, size, host, &err);
    if (x.mode == VOCL_DATA_CHUNKED) {
        cl_command_queue tq = mem ? context_queue(q, ctx) : NULL;
        if (mem && !tq)
            err = CL_OUT_OF_RESOURCES;
        if (tq) {
            err = write_chunks(q, tq, mem, 0, &x, 0, NULL, NULL);
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
    cl_mem buf = proxyd_rd_h(q, VOCL_T_MEM, 0);
    cl_mem_flags flags = vocl_rd_u64(q->r);
    cl_buffer_create_type type = (cl_buffer_create_type)vocl_rd_u64(q->r);
    cl_buffer_region region = {(size_t)vocl_rd_u64(q->r), (size_t)vocl_rd_u64(q->r)};
    uint64_t id = proxyd_rd_newobj(q);
    cl_int err = CL_SUCCESS;
    if (!proxyd_req_begin(q))
        return;
    cl_mem mem = q->cl->clCreateSubBuffer(buf, flags, type, &region, &err);
    proxyd_reply_made(q, id, VOCL_T_MEM, mem, err);
}

/* The fields a buffer read and a buffer write share (libvocl: put_xfer_head). */
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
    b->queue = proxyd_rd_h(q, VOCL_T_QUEUE, 0);
    b->buf = proxyd_rd_h(q, VOCL_T_MEM, 0);
    b->blocking = vocl_rd_u8(q->r);
    b->offset = (size_t)vocl_rd_u64(q->r);
    b->size = (size_t)vocl_rd_u64(q->r);
    b->wl = proxyd_rd_ha(q, VOCL_T_EVENT, &b->nwl);
    b->ev_id = proxyd_rd_newid(q);
    rd_xfer(q, &b->x, b->size, data_in);
    if (b->x.mode == VOCL_DATA_NONE)
        proxyd_fail(q, "transfer without data or destination");
}

void proxyd_op_clEnqueueWriteBuffer(struct proxyd_req *q)
{
    struct buf_xfer b;
    rd_buf_xfer(q, &b, true);
    cl_event ev = NULL;
    cl_int rc;

    if (!proxyd_req_begin(q)) {
        drain_chunks(q, &b.x);
        return;
    }
    switch (b.x.mode) {
    case VOCL_DATA_CHUNKED:
        rc = write_chunks(q, b.queue, b.buf, b.offset, &b.x, b.nwl, b.wl, b.ev_id ? &ev : NULL);
        break;
    case VOCL_DATA_HOSTPTR:
        rc = q->cl->clEnqueueWriteBuffer(b.queue, b.buf, b.blocking, b.offset, b.size, b.x.host,
                                         b.nwl, b.wl, b.ev_id ? &ev : NULL);
        break;
    default: /* inline: the message is gone after this call, so block */
        rc = q->cl->clEnqueueWriteBuffer(b.queue, b.buf, CL_TRUE, b.offset, b.size, b.x.inline_data,
                                         b.nwl, b.wl, b.ev_id ? &ev : NULL);
    }
    proxyd_put_event(q, rc, b.ev_id, ev);
    vocl_wr_i32(q->w, rc);
}

/* Sends the reply written so far, then starts the next one in q->w. */
static int flush_reply(struct proxyd_req *q)
{
    vocl_wr_finish(q->w);
    int rc = q->s->data->reply(q->s, q->w);
    vocl_wr_begin(q->w, (uint16_t)q->op, 0, 0);
    return rc;
}

void proxyd_op_clEnqueueReadBuffer(struct proxyd_req *q)
{
    struct buf_xfer b;
    rd_buf_xfer(q, &b, false);
    cl_event ev = NULL;
    cl_int rc;

    void *out = b.x.mode == VOCL_DATA_INLINE ? proxyd_tmp(q, b.size) : NULL;
    if (!proxyd_req_begin(q))
        return;
    if (b.x.mode == VOCL_DATA_HOSTPTR) {
        rc = q->cl->clEnqueueReadBuffer(b.queue, b.buf, b.blocking, b.offset, b.size, b.x.host,
                                        b.nwl, b.wl, b.ev_id ? &ev : NULL);
    } else if (b.x.mode == VOCL_DATA_INLINE) {
        rc = q->cl->clEnqueueReadBuffer(b.queue, b.buf, CL_TRUE, b.offset, b.size, out, b.nwl, b.wl,
                                        b.ev_id ? &ev : NULL);
        vocl_wr_i32(q->w, rc);
        if (rc == CL_SUCCESS)
            vocl_wr_bytes(q->w, out, b.size);
        proxyd_put_event(q, rc, b.ev_id, ev);
        return;
    } else {
        /* Chunked: the first chunk decides the reply; the rest stream after it. */
        void *stage = malloc(b.x.chunk);
        size_t n0 = b.size < b.x.chunk ? b.size : b.x.chunk;
        rc = stage ? q->cl->clEnqueueReadBuffer(b.queue, b.buf, CL_TRUE, b.offset, n0, stage, b.nwl,
                                                b.wl, n0 == b.size && b.ev_id ? &ev : NULL)
                   : CL_OUT_OF_HOST_MEMORY;
        vocl_wr_i32(q->w, rc);
        if (rc != CL_SUCCESS) {
            free(stage);
            return;
        }
        if (flush_reply(q) || q->s->data->send(q->s, stage, n0)) {
            q->s->broken = true;
            free(stage);
            return;
        }
        for (size_t done = n0; done < b.size; done += b.x.chunk) {
            size_t n = b.size - done < b.x.chunk ? b.size - done : b.x.chunk;
            if (rc == CL_SUCCESS)
                rc =
                    q->cl->clEnqueueReadBuffer(b.queue, b.buf, CL_TRUE, b.offset + done, n, stage,
                                               0, NULL, done + n == b.size && b.ev_id ? &ev : NULL);
            if (rc != CL_SUCCESS)
                memset(stage, 0, n);
            if (q->s->data->send(q->s, stage, n)) {
                q->s->broken = true;
                break;
            }
        }
        free(stage);
    }
    proxyd_put_event(q, rc, b.ev_id, ev);
    vocl_wr_i32(q->w, rc);
}

/* Map and unmap reach the executor only in-process: remote maps are host
 * shadows that libvocl fills with reads and writes back with writes. */
void proxyd_op_clEnqueueMapBuffer(struct proxyd_req *q)
{
    cl_command_queue queue = proxyd_rd_h(q, VOCL_T_QUEUE, 0);
    cl_mem buf = proxyd_rd_h(q, VOCL_T_MEM, 0);
    cl_bool blocking = vocl_rd_u8(q->r);
    cl_map_flags flags = vocl_rd_u64(q->r);
    size_t offset = (size_t)vocl_rd_u64(q->r);
    size_t size = (size_t)vocl_rd_u64(q->r);
    cl_uint nwl;
    const cl_event *wl = proxyd_rd_ha(q, VOCL_T_EVENT, &nwl);
    uint64_t ev_id = proxyd_rd_newid(q);
    cl_event ev = NULL;
    cl_int err = CL_SUCCESS;

    if (!q->s->in_process)
        proxyd_fail(q, "map is served in-process only");
    if (!proxyd_req_begin(q))
        return;
    void *p = q->cl->clEnqueueMapBuffer(queue, buf, blocking, flags, offset, size, nwl, wl,
                                        ev_id ? &ev : NULL, &err);
    vocl_wr_i32(q->w, p ? CL_SUCCESS : err);
    vocl_wr_u64(q->w, (uint64_t)(uintptr_t)p);
    if (p && ev_id)
        proxyd_put_new(q, ev_id, VOCL_T_EVENT, ev);
}

void proxyd_op_clEnqueueUnmapMemObject(struct proxyd_req *q)
{
    cl_command_queue queue = proxyd_rd_h(q, VOCL_T_QUEUE, 0);
    cl_mem mem = proxyd_rd_h(q, VOCL_T_MEM, 0);
    void *ptr = (void *)(uintptr_t)vocl_rd_u64(q->r);
    cl_uint nwl;
    const cl_event *wl = proxyd_rd_ha(q, VOCL_T_EVENT, &nwl);
    uint64_t ev_id = proxyd_rd_newid(q);
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

/* The bytes of an incoming span; *owned says whether to free them. */
static const void *span_in(struct proxyd_req *q, const struct xfer *x, bool *owned)
{
    *owned = false;
    if (x->mode == VOCL_DATA_INLINE)
        return x->inline_data;
    if (x->mode == VOCL_DATA_HOSTPTR)
        return x->host;
    if (x->mode != VOCL_DATA_CHUNKED)
        return NULL;
    uint8_t *buf = malloc(x->size ? x->size : 1);
    if (!buf) {
        drain_chunks(q, x);
        return NULL;
    }
    for (size_t done = 0; done < x->size; done += x->chunk) {
        size_t n = x->size - done < x->chunk ? x->size - done : x->chunk;
        if (q->s->data->recv(q->s, buf + done, n)) {
            q->s->broken = true;
            free(buf);
            return NULL;
        }
    }
    *owned = true;
    return buf;
}

/* Sends a span that was read into buf (remote) after the status rc. */
static void span_out(struct proxyd_req *q, const struct xfer *x, cl_int rc, const void *buf)
{
    vocl_wr_i32(q->w, rc);
    if (rc != CL_SUCCESS || x->mode == VOCL_DATA_HOSTPTR)
        return;
    if (x->mode == VOCL_DATA_INLINE) {
        vocl_wr_bytes(q->w, buf, x->size);
        return;
    }
    if (flush_reply(q)) {
        q->s->broken = true;
        return;
    }
    for (size_t done = 0; done < x->size; done += x->chunk) {
        size_t n = x->size - done < x->chunk ? x->size - done : x->chunk;
        if (q->s->data->send(q->s, (const uint8_t *)buf + done, n)) {
            q->s->broken = true;
            return;
        }
    }
    vocl_wr_i32(q->w, CL_SUCCESS); /* the trailer */
}

/* The span must hold what the pitches and region address. */
static void check_span(struct proxyd_req *q, size_t span, const size_t *origin,
                       const size_t *region, size_t row, size_t slice, size_t elem)
{
    if (!origin || !region)
        return;
    size_t need = 0;
    if (region[0] && region[1] && region[2] && elem && row && slice)
        need = (origin[2] + region[2] - 1) * slice + (origin[1] + region[1] - 1) * row +
               (origin[0] + region[0]) * elem;
    if (need > span)
        proxyd_fail(q, "span shorter than the region it holds");
}

static void buffer_rect(struct proxyd_req *q, bool write)
{
    cl_command_queue queue = proxyd_rd_h(q, VOCL_T_QUEUE, 0);
    cl_mem buf = proxyd_rd_h(q, VOCL_T_MEM, 0);
    cl_bool blocking = vocl_rd_u8(q->r);
    const size_t *borigin = proxyd_rd_va(q, sizeof(size_t), 3);
    const size_t *horigin = proxyd_rd_va(q, sizeof(size_t), 3);
    const size_t *region = proxyd_rd_va(q, sizeof(size_t), 3);
    size_t brow = (size_t)vocl_rd_u64(q->r), bslice = (size_t)vocl_rd_u64(q->r);
    size_t hrow = (size_t)vocl_rd_u64(q->r), hslice = (size_t)vocl_rd_u64(q->r);
    cl_uint nwl;
    const cl_event *wl = proxyd_rd_ha(q, VOCL_T_EVENT, &nwl);
    uint64_t ev_id = proxyd_rd_newid(q);
    size_t span = (size_t)vocl_rd_u64(q->r);
    struct xfer x;
    rd_xfer(q, &x, span, write);
    cl_event ev = NULL;
    bool owned = false;

    if (x.mode != VOCL_DATA_HOSTPTR)
        check_span(q, span, horigin, region, hrow, hslice, 1);
    if (!borigin || !horigin || !region)
        proxyd_fail(q, "rect transfer without origins or region");
    void *out = !write && x.mode != VOCL_DATA_HOSTPTR ? proxyd_tmp(q, span) : NULL;
    if (!proxyd_req_begin(q)) {
        drain_chunks(q, &x);
        return;
    }
    cl_int rc;
    if (write) {
        const void *data = span_in(q, &x, &owned);
        rc = data
                 ? q->cl->clEnqueueWriteBufferRect(queue, buf,
                                                   x.mode == VOCL_DATA_HOSTPTR ? blocking : CL_TRUE,
                                                   borigin, horigin, region, brow, bslice, hrow,
                                                   hslice, data, nwl, wl, ev_id ? &ev : NULL)
                 : CL_OUT_OF_HOST_MEMORY;
        if (owned)
            free((void *)data);
        vocl_wr_i32(q->w, rc);
    } else {
        void *dst = x.mode == VOCL_DATA_HOSTPTR ? x.host : out;
        rc = q->cl->clEnqueueReadBufferRect(
            queue, buf, x.mode == VOCL_DATA_HOSTPTR ? blocking : CL_TRUE, borigin, horigin, region,
            brow, bslice, hrow, hslice, dst, nwl, wl, ev_id ? &ev : NULL);
        span_out(q, &x, rc, out);
    }
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
    cl_command_queue queue = proxyd_rd_h(q, VOCL_T_QUEUE, 0);
    cl_mem img = proxyd_rd_h(q, VOCL_T_MEM, 0);
    cl_bool blocking = vocl_rd_u8(q->r);
    const size_t *origin = proxyd_rd_va(q, sizeof(size_t), 3);
    const size_t *region = proxyd_rd_va(q, sizeof(size_t), 3);
    size_t row = (size_t)vocl_rd_u64(q->r), slice = (size_t)vocl_rd_u64(q->r);
    cl_uint nwl;
    const cl_event *wl = proxyd_rd_ha(q, VOCL_T_EVENT, &nwl);
    uint64_t ev_id = proxyd_rd_newid(q);
    size_t span = (size_t)vocl_rd_u64(q->r);
    struct xfer x;
    rd_xfer(q, &x, span, write);
    cl_event ev = NULL;
    bool owned = false;

    if (!origin || !region)
        proxyd_fail(q, "image transfer without origin or region");
    /* The native call checks the pitches against the image; the span must
     * cover them, which the element size (asked of the image) tells. */
    size_t elem = 0;
    if (img && !q->fail)
        q->cl->clGetImageInfo(img, CL_IMAGE_ELEMENT_SIZE, sizeof(elem), &elem, NULL);
    if (x.mode != VOCL_DATA_HOSTPTR && region && elem) {
        size_t rp = row ? row : region[0] * elem;
        size_t sp = slice ? slice : rp * region[1];
        const size_t zero[3] = {0, 0, 0};
        check_span(q, span, zero, region, rp, sp, elem);
    }
    void *out = !write && x.mode != VOCL_DATA_HOSTPTR ? proxyd_tmp(q, span) : NULL;
    if (!proxyd_req_begin(q)) {
        drain_chunks(q, &x);
        return;
    }
    cl_int rc;
    cl_bool block = x.mode == VOCL_DATA_HOSTPTR ? blocking : CL_TRUE;
    if (write) {
        const void *data = span_in(q, &x, &owned);
        rc = data ? q->cl->clEnqueueWriteImage(queue, img, block, origin, region, row, slice, data,
                                               nwl, wl, ev_id ? &ev : NULL)
                  : CL_OUT_OF_HOST_MEMORY;
        if (owned)
            free((void *)data);
        vocl_wr_i32(q->w, rc);
    } else {
        void *dst = x.mode == VOCL_DATA_HOSTPTR ? x.host : out;
        rc = q->cl->clEnqueueReadImage(queue, img, block, origin, region, row, slice, dst, nwl, wl,
                                       ev_id ? &ev : NULL);
        span_out(q, &x, rc, out);
    }
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
    cl_context ctx = proxyd_rd_h(q, VOCL_T_CONTEXT, 0);
    const cl_mem_properties *props = proxyd_rd_props(q);
    cl_mem_flags flags = vocl_rd_u64(q->r);
    cl_image_format fmt = {vocl_rd_u32(q->r), vocl_rd_u32(q->r)};
    cl_image_desc desc = {0};
    desc.image_type = (cl_mem_object_type)vocl_rd_u64(q->r);
    desc.image_width = (size_t)vocl_rd_u64(q->r);
    desc.image_height = (size_t)vocl_rd_u64(q->r);
    desc.image_depth = (size_t)vocl_rd_u64(q->r);
    desc.image_array_size = (size_t)vocl_rd_u64(q->r);
    desc.image_row_pitch = (size_t)vocl_rd_u64(q->r);
    desc.image_slice_pitch = (size_t)vocl_rd_u64(q->r);
    desc.num_mip_levels = vocl_rd_u32(q->r);
    desc.num_samples = vocl_rd_u32(q->r);
    desc.mem_object = proxyd_rd_h(q, VOCL_T_MEM, 1);
    size_t span = (size_t)vocl_rd_u64(q->r);
    struct xfer x;
    rd_xfer(q, &x, span, true);
    uint64_t id = proxyd_rd_newobj(q);
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
        host = (void *)span_in(q, &x, &owned);
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
