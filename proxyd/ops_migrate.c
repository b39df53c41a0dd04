/*
 * ops_migrate.c - what goes from one proxy to another, for contexts whose
 * devices live in several proxies (libvocl/replica.c): a memory object's
 * data, and the completion of an event a command of the other waits for.
 *
 * The client sends MIGRATE_IN to the proxy that needs the data and
 * MIGRATE_OUT to one that has it; the data goes between the two directly,
 * never through the client.  Neither request blocks its proxy:
 *
 *   out  the whole object is read (once the events the client named
 *        complete) on a queue of its own, and a thread sends it in chunks;
 *   in   a write of the whole object waits on a user event of this proxy; a
 *        thread receives the chunks, then sets the user event (an error
 *        status when the data did not come, which fails the write and every
 *        command waiting for it).  The write's event is the one the client
 *        named, and the client makes its commands on the object wait for it.
 *
 * The sender sends every chunk or, when its read failed, one empty message,
 * so a receiver is never left waiting for a proxy that is alive.
 */
#include "proxyd.h"
#include "thread.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The other proxy of a request, and the tag its messages travel on. */
struct peer_link {
    const struct vocl_native_api *cl;
    const struct proxyd_data_ops *data;
    int peer, tag;
};

/* Reads and checks the peer's rank and the tag (what: "migration", "event"). */
static void rd_peer(struct proxyd_req *q, struct peer_link *l, const char *what)
{
    l->cl = q->cl;
    l->data = q->s->data;
    l->peer = (int)vocl_rd_u32(q->r);
    l->tag = (int)vocl_rd_u32(q->r);
    char why[96];
    if (!l->data->peer_send || !l->data->peer_ok || !l->data->peer_ok(l->peer)) {
        snprintf(why, sizeof(why), "%s peer is not another proxy of this job", what);
        proxyd_fail(q, why);
    }
    if (l->tag < VOCL_TAG_PEER_MIN || l->tag > VOCL_TAG_PEER_MAX) {
        snprintf(why, sizeof(why), "%s tag out of range", what);
        proxyd_fail(q, why);
    }
}

struct migration {
    struct peer_link l;
    size_t size, chunk;
    uint8_t *buf;
    cl_event ev;   /* out: the read; in: the write */
    cl_event gate; /* in: the user event the write waits on */
};

/* The bytes of all of mem, and a read or write of them on queue. */
static size_t whole_size(const struct vocl_native_api *cl, cl_mem mem, size_t region[3],
                         bool *image)
{
    cl_mem_object_type t = 0;
    size_t size = 0;
    if (cl->clGetMemObjectInfo(mem, CL_MEM_TYPE, sizeof(t), &t, NULL) != CL_SUCCESS)
        return 0;
    *image = t != CL_MEM_OBJECT_BUFFER;
    if (!*image) {
        cl_int rc = cl->clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof(size), &size, NULL);
        return rc == CL_SUCCESS ? size : 0;
    }
    size_t w = 0, h = 0, d = 0, arr = 0, px = 0;
    cl->clGetImageInfo(mem, CL_IMAGE_WIDTH, sizeof(w), &w, NULL);
    cl->clGetImageInfo(mem, CL_IMAGE_HEIGHT, sizeof(h), &h, NULL);
    cl->clGetImageInfo(mem, CL_IMAGE_DEPTH, sizeof(d), &d, NULL);
    cl->clGetImageInfo(mem, CL_IMAGE_ARRAY_SIZE, sizeof(arr), &arr, NULL);
    cl->clGetImageInfo(mem, CL_IMAGE_ELEMENT_SIZE, sizeof(px), &px, NULL);
    region[0] = w ? w : 1;
    region[1] = h ? h : 1;
    region[2] = d ? d : 1;
    if (arr) /* arrays: the last dimension counts the images */
        region[t == CL_MEM_OBJECT_IMAGE1D_ARRAY ? 1 : 2] = arr;
    return region[0] * region[1] * region[2] * px;
}

static cl_int whole_xfer(const struct vocl_native_api *cl, cl_command_queue queue, cl_mem mem,
                         bool write, bool image, const size_t region[3], size_t size, void *buf,
                         cl_uint nwl, const cl_event *wl, cl_event *ev)
{
    static const size_t origin[3] = {0, 0, 0};
    if (image)
        return write ? cl->clEnqueueWriteImage(queue, mem, CL_FALSE, origin, region, 0, 0, buf,
                                               nwl, wl, ev)
                     : cl->clEnqueueReadImage(queue, mem, CL_FALSE, origin, region, 0, 0, buf,
                                              nwl, wl, ev);
    /* A buffer the host may not read (or write) is moved through a copy
     * the device makes into (or from) a buffer of its own. */
    cl_mem_flags flags = 0;
    cl->clGetMemObjectInfo(mem, CL_MEM_FLAGS, sizeof(flags), &flags, NULL);
    if (!(flags & (write ? CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS
                         : CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS)))
        return write ? cl->clEnqueueWriteBuffer(queue, mem, CL_FALSE, 0, size, buf, nwl, wl, ev)
                     : cl->clEnqueueReadBuffer(queue, mem, CL_FALSE, 0, size, buf, nwl, wl, ev);
    cl_context ctx;
    cl_int rc = cl->clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof(ctx), &ctx, NULL);
    cl_mem tmp = rc == CL_SUCCESS ? cl->clCreateBuffer(ctx, CL_MEM_READ_WRITE, size, NULL, &rc)
                                  : NULL;
    cl_event step = NULL;
    if (tmp && write) {
        rc = cl->clEnqueueWriteBuffer(queue, tmp, CL_FALSE, 0, size, buf, nwl, wl, &step);
        if (rc == CL_SUCCESS)
            rc = cl->clEnqueueCopyBuffer(queue, tmp, mem, 0, 0, size, 1, &step, ev);
    } else if (tmp) {
        rc = cl->clEnqueueCopyBuffer(queue, mem, tmp, 0, 0, size, nwl, wl, &step);
        if (rc == CL_SUCCESS)
            rc = cl->clEnqueueReadBuffer(queue, tmp, CL_FALSE, 0, size, buf, 1, &step, ev);
    }
    if (step)
        cl->clReleaseEvent(step);
    if (tmp)
        cl->clReleaseMemObject(tmp); /* freed once the commands using it are done */
    return rc;
}

/* A queue of its own on mem's context, on the context's first device. */
static cl_command_queue mem_queue(const struct vocl_native_api *cl, cl_mem mem)
{
    cl_context ctx;
    cl_device_id devs[64];
    size_t size = 0;
    cl_int err;
    if (cl->clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof(ctx), &ctx, NULL) != CL_SUCCESS ||
        cl->clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof(devs), devs, &size) != CL_SUCCESS ||
        size < sizeof(devs[0]))
        return NULL;
    return cl->clCreateCommandQueue(ctx, devs[0], 0, &err);
}

static void migration_free(struct migration *m)
{
    if (m->ev)
        m->l.cl->clReleaseEvent(m->ev);
    if (m->gate)
        m->l.cl->clReleaseEvent(m->gate);
    free(m->buf);
    free(m);
}

static void *out_thread(void *arg)
{
    struct migration *m = arg;
    cl_int status = CL_INVALID_VALUE;
    if (m->ev && m->l.cl->clWaitForEvents(1, &m->ev) == CL_SUCCESS)
        m->l.cl->clGetEventInfo(m->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status,
                              NULL);
    if (status != CL_COMPLETE) {
        m->l.data->peer_send(m->l.peer, m->l.tag, NULL, 0);
    } else {
        for (size_t done = 0; done < m->size; done += m->chunk) {
            size_t n = m->size - done < m->chunk ? m->size - done : m->chunk;
            if (m->l.data->peer_send(m->l.peer, m->l.tag, m->buf + done, n))
                break;
        }
    }
    migration_free(m);
    return NULL;
}

static void *in_thread(void *arg)
{
    struct migration *m = arg;
    cl_int status = CL_COMPLETE;
    for (size_t done = 0; done < m->size && status == CL_COMPLETE; done += m->chunk) {
        size_t n = m->size - done < m->chunk ? m->size - done : m->chunk, got = 0;
        if (m->l.data->peer_recv(m->l.peer, m->l.tag, m->buf + done, n, &got) || got != n) {
            vocl_warn("migration from rank %d: %zu of %zu bytes came", m->l.peer, done + got,
                      m->size);
            status = CL_MEM_COPY_OVERLAP - 100; /* any negative status fails the write */
        }
    }
    m->l.cl->clSetUserEventStatus(m->gate, status);
    m->l.cl->clWaitForEvents(1, &m->ev); /* the write reads buf until then */
    migration_free(m);
    return NULL;
}

/* A migration with the fields both requests start with; NULL when out of memory. */
static struct migration *rd_head(struct proxyd_req *q, cl_mem *mem)
{
    struct migration *m = calloc(1, sizeof(*m));
    if (!m) {
        proxyd_fail(q, "out of memory");
        return NULL;
    }
    *mem = proxyd_rd_h(q, VOCL_T_MEM, 0);
    rd_peer(q, &m->l, "migration");
    m->chunk = (size_t)vocl_rd_u64(q->r);
    if (m->chunk < PROXYD_CHUNK_MIN || m->chunk > PROXYD_CHUNK_MAX)
        proxyd_fail(q, "migration chunk size out of range");
    return m;
}

void proxyd_op_migrate_out(struct proxyd_req *q)
{
    cl_mem mem;
    struct migration *m = rd_head(q, &mem);
    if (!m)
        return;
    /* The queues that wrote mem here: after their commands (a queue may be
     * gone already, and then so are they). */
    uint32_t nq = vocl_rd_u32(q->r);
    if (nq > (size_t)(q->r->end - q->r->p) / 8)
        proxyd_fail(q, "migration writer count beyond the request");
    cl_command_queue *writers = proxyd_tmp(q, (nq ? nq : 1) * sizeof(*writers));
    cl_uint nw = 0;
    for (uint32_t i = 0; i < nq && !q->fail && !q->r->fail; i++) {
        struct proxyd_obj *o = proxyd_lookup(q->s, vocl_rd_u64(q->r), VOCL_T_QUEUE);
        if (o && writers)
            writers[nw++] = o->native;
    }
    cl_uint nwl = 0;
    const cl_event *wl = proxyd_rd_ha(q, VOCL_T_EVENT, &nwl);
    cl_event *wl2 = proxyd_tmp(q, (nwl + nw + 1) * sizeof(*wl2));
    size_t region[3];
    bool image = false;
    if (!proxyd_req_begin(q)) {
        /* The receiver waits for this peer: tell it, if the peer is sane. */
        if (!q->fail)
            m->l.data->peer_send(m->l.peer, m->l.tag, NULL, 0);
        free(m);
        return;
    }
    cl_int rc = CL_OUT_OF_RESOURCES;
    m->size = whole_size(q->cl, mem, region, &image);
    m->buf = m->size ? malloc(m->size) : NULL;
    cl_command_queue queue = m->buf && wl2 ? mem_queue(q->cl, mem) : NULL;
    if (queue) {
        if (nwl)
            memcpy(wl2, wl, nwl * sizeof(*wl2));
        cl_uint first_marker = nwl;
        for (cl_uint i = 0; i < nw; i++)
            if (q->cl->clEnqueueMarkerWithWaitList(writers[i], 0, NULL, &wl2[nwl]) ==
                CL_SUCCESS) {
                q->cl->clFlush(writers[i]);
                nwl++;
            }
        /* (An empty list must be NULL: the native call checks.) */
        rc = whole_xfer(q->cl, queue, mem, false, image, region, m->size, m->buf, nwl,
                        nwl ? wl2 : NULL, &m->ev);
        for (cl_uint i = first_marker; i < nwl; i++)
            q->cl->clReleaseEvent(wl2[i]);
        q->cl->clFlush(queue);
        q->cl->clReleaseCommandQueue(queue);
    }
    if (rc != CL_SUCCESS && m->ev) {
        q->cl->clReleaseEvent(m->ev);
        m->ev = NULL;
    }
    if (vocl_thread_detached(out_thread, m))
        out_thread(m); /* sends the failure at once */
    vocl_wr_i32(q->w, rc);
}

/*
 * EVENT_OUT / EVENT_IN: a command here (IN) waits for an event of the peer
 * (OUT).  IN makes a user event for it; a thread receives the event's final
 * status from the peer and sets it.  OUT has a thread wait for the event and
 * send that status.  No request thread waits, and the client is not involved.
 */
struct event_link {
    struct peer_link l;
    cl_event ev;
};

static void *event_out_thread(void *arg)
{
    struct event_link *l = arg;
    cl_int st = CL_INVALID_EVENT;
    if (l->ev) {
        l->l.cl->clWaitForEvents(1, &l->ev);
        if (l->l.cl->clGetEventInfo(l->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st,
                                  NULL) != CL_SUCCESS)
            st = CL_INVALID_EVENT;
        l->l.cl->clReleaseEvent(l->ev);
    }
    int32_t wire = st;
    l->l.data->peer_send(l->l.peer, l->l.tag, &wire, sizeof(wire));
    free(l);
    return NULL;
}

static void *event_in_thread(void *arg)
{
    struct event_link *l = arg;
    int32_t st = -1;
    size_t got = 0;
    if (l->l.data->peer_recv(l->l.peer, l->l.tag, &st, sizeof(st), &got) || got != sizeof(st))
        st = -1;
    l->l.cl->clSetUserEventStatus(l->ev, st < 0 ? st : CL_COMPLETE);
    l->l.cl->clReleaseEvent(l->ev);
    free(l);
    return NULL;
}

static struct event_link *rd_link(struct proxyd_req *q)
{
    struct event_link *l = calloc(1, sizeof(*l));
    if (!l) {
        proxyd_fail(q, "out of memory");
        return NULL;
    }
    rd_peer(q, &l->l, "event");
    return l;
}

void proxyd_op_event_out(struct proxyd_req *q)
{
    cl_event ev = proxyd_rd_h(q, VOCL_T_EVENT, 0);
    struct event_link *l = rd_link(q);
    if (!l)
        return;
    bool sane = !q->fail;
    if (proxyd_req_begin(q) && q->cl->clRetainEvent(ev) == CL_SUCCESS)
        l->ev = ev;
    cl_int rc = l->ev ? CL_SUCCESS : CL_INVALID_EVENT; /* l is the thread's from here */
    /* Without the event, the peer still hears (a failure). */
    if (!sane || vocl_thread_detached(event_out_thread, l)) {
        if (sane)
            event_out_thread(l);
        else
            free(l);
    }
    if (!q->fail)
        vocl_wr_i32(q->w, rc);
}

void proxyd_op_event_in(struct proxyd_req *q)
{
    cl_context ctx = proxyd_rd_h(q, VOCL_T_CONTEXT, 0);
    struct event_link *l = rd_link(q);
    uint64_t ev_id = proxyd_rd_newid(q);
    cl_int rc = CL_OUT_OF_RESOURCES;
    if (!l)
        return;
    if (!ev_id)
        proxyd_fail(q, "event link without an event");
    if (!proxyd_req_begin(q)) {
        free(l);
        return;
    }
    l->ev = q->cl->clCreateUserEvent(ctx, &rc);
    if (l->ev) {
        q->cl->clRetainEvent(l->ev); /* one for the session, one for the thread */
        proxyd_put_new(q, ev_id, VOCL_T_EVENT, l->ev);
        if (vocl_thread_detached(event_in_thread, l))
            event_in_thread(l); /* waits for the peer here: it is on its way */
    } else {
        free(l);
    }
    vocl_wr_i32(q->w, rc);
}

void proxyd_op_migrate_in(struct proxyd_req *q)
{
    cl_mem mem;
    struct migration *m = rd_head(q, &mem);
    if (!m)
        return;
    uint64_t ev_id = proxyd_rd_newid(q);
    size_t region[3];
    bool image = false;
    cl_int rc = CL_OUT_OF_RESOURCES;
    if (!ev_id)
        proxyd_fail(q, "migration without an event");
    if (!proxyd_req_begin(q)) {
        free(m);
        return;
    }
    m->size = whole_size(q->cl, mem, region, &image);
    m->buf = m->size ? malloc(m->size) : NULL;
    cl_command_queue queue = m->buf ? mem_queue(q->cl, mem) : NULL;
    cl_context ctx = NULL;
    if (queue && q->cl->clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof(ctx), &ctx, NULL) ==
                     CL_SUCCESS)
        m->gate = q->cl->clCreateUserEvent(ctx, &rc);
    if (m->gate)
        rc = whole_xfer(q->cl, queue, mem, true, image, region, m->size, m->buf, 1, &m->gate,
                        &m->ev);
    if (queue) {
        q->cl->clFlush(queue);
        q->cl->clReleaseCommandQueue(queue);
    }
    if (rc == CL_SUCCESS) {
        q->cl->clRetainEvent(m->ev); /* one for the session, one for the thread */
        proxyd_put_new(q, ev_id, VOCL_T_EVENT, m->ev);
        if (vocl_thread_detached(in_thread, m) == 0) {
            vocl_wr_i32(q->w, rc);
            return;
        }
        rc = CL_OUT_OF_HOST_MEMORY;
    }
    /* Nothing will take the data: fail the write, and drain what the
     * sender sends so that it is not left waiting. */
    if (m->gate)
        q->cl->clSetUserEventStatus(m->gate, -1);
    if (m->ev)
        q->cl->clWaitForEvents(1, &m->ev);
    size_t got = 1;
    for (size_t done = 0; done < m->size && got; done += m->chunk)
        if (m->l.data->peer_recv(m->l.peer, m->l.tag, NULL, 0, &got))
            break;
    migration_free(m);
    vocl_wr_i32(q->w, rc);
}
