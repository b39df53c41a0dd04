/*
 * ops_migrate.c - a memory object's data, from one proxy to another, for
 * contexts whose devices live in several proxies (libvocl/replica.c; an
 * event's completion goes by ops_link.c, the other end is peer_link.c's).
 *
 * The client sends MIGRATE_IN to the proxy that needs the data and
 * MIGRATE_OUT to one that has it; the data goes between the two directly,
 * or, between two daemons, which share no communicator, through the client
 * (VOCL_PEER_CLIENT, libvocl/relay.c).  Neither request blocks its proxy:
 *
 *   out  a thread reads the object chunk by chunk (once the events the
 *        client named complete) on a queue of its own, and sends each chunk
 *        as its read completes, up to STREAM_SLOTS chunks ahead;
 *   in   a marker waits on a user event of this proxy; a thread receives
 *        the chunks and writes each as it comes, on a second queue, then
 *        sets the user event (an error status when the data did not come,
 *        which fails the marker and every command waiting for it).  The
 *        marker's event is the one the client named, and the client makes
 *        its commands on the object wait for it.
 *
 * So the device's copies, the sending and the receiving overlap, and a
 * migration holds STREAM_SLOTS chunks of host memory, not the whole object
 * (which the system had to map afresh, page by page, for each migration).
 * An object of one chunk, an image, a buffer the host may not read or
 * write, and a diff go whole: one read, then the chunks; all the chunks,
 * then one write (for one chunk, streaming would only add a wake-up).
 *
 * The sender sends every chunk or, when its read failed, one empty message,
 * so a receiver is never left waiting for a proxy that is alive.
 *
 * A buffer written on two proxies at once has a twin on each (MIGRATE_OUT
 * and MIGRATE_IN may make them); DIFF_OUT sends what changed since, and
 * DIFF_IN patches it into the buffer here (the runs: diff.c).
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define STREAM_SLOTS 4 /* chunks a streamed migration has between device and peer */

struct migration {
    struct exec_peer_link l;
    size_t size, chunk;
    uint8_t *buf;  /* out: what is sent (diff: mem now); in: what comes, or mem (diff);
                      streamed: STREAM_SLOTS chunks */
    uint8_t *twin; /* diff out: the twin's bytes */
    cl_event ev;   /* out: the (last) read, or (streamed) what the reads follow;
                      in: the write, or (streamed) the marker after the writes */
    cl_event gate; /* in: the user event the write (or marker) waits on */
    cl_event read; /* diff in: the read of mem, before the runs are patched in */
    bool diff;     /* in: a DIFF_IN (what is drained when it fails) */
    /* Streamed: the buffer the chunks are read from (mem, or its twin) or
     * written to, and the queue of those reads or writes. */
    cl_mem stream_mem;
    cl_command_queue stream_queue;
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

/* Whether the host may write (else read) buffer mem. */
static bool host_may(const struct vocl_native_api *cl, cl_mem mem, bool write)
{
    cl_mem_flags flags = 0;
    if (cl->clGetMemObjectInfo(mem, CL_MEM_FLAGS, sizeof(flags), &flags, NULL) != CL_SUCCESS)
        return false;
    return !(flags & (write ? CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS
                            : CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS));
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
    if (host_may(cl, mem, write))
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

/*
 * The twin of a buffer: a copy of it on the device, enqueued on queue after
 * wl.  Recorded under twin_id, and the copy's event under ev_id.  NULL when
 * it cannot be made.
 */
static cl_mem make_twin(struct exec_req *q, cl_command_queue queue, cl_mem mem, size_t size,
                        uint64_t twin_id, uint64_t ev_id, cl_uint nwl, const cl_event *wl)
{
    cl_context ctx;
    cl_int rc = q->cl->clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof(ctx), &ctx, NULL);
    cl_mem twin = rc == CL_SUCCESS ? q->cl->clCreateBuffer(ctx, CL_MEM_READ_WRITE, size, NULL, &rc)
                                   : NULL;
    cl_event copied = NULL;
    if (twin && q->cl->clEnqueueCopyBuffer(queue, mem, twin, 0, 0, size, nwl, nwl ? wl : NULL,
                                           &copied) != CL_SUCCESS) {
        q->cl->clReleaseMemObject(twin);
        return NULL;
    }
    if (!twin)
        return NULL;
    /* One reference for the session, one for the caller; without the
     * session's (a limit), a diff against it fails and says so. */
    q->cl->clRetainMemObject(twin);
    exec_put_new(q, twin_id, VOCL_T_MEM, twin);
    exec_put_new(q, ev_id, VOCL_T_EVENT, copied);
    return twin;
}

static void migration_free(struct migration *m)
{
    const struct vocl_native_api *cl = m->l.cl;
    if (m->ev)
        cl->clReleaseEvent(m->ev);
    if (m->gate)
        cl->clReleaseEvent(m->gate);
    if (m->read)
        cl->clReleaseEvent(m->read);
    if (m->stream_queue)
        cl->clReleaseCommandQueue(m->stream_queue);
    if (m->stream_mem)
        cl->clReleaseMemObject(m->stream_mem);
    free(m->buf);
    free(m->twin);
    exec_peer_drop(&m->l);
    free(m);
}

/* Whether ev (if any) completed. */
static bool completed(const struct vocl_native_api *cl, cl_event ev)
{
    cl_int status = CL_INVALID_VALUE;
    if (ev && cl->clWaitForEvents(1, &ev) == CL_SUCCESS)
        cl->clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status, NULL);
    return status == CL_COMPLETE;
}

/* Sends n bytes in chunks; 0, or -1 when the peer is gone. */
static int send_all(const struct migration *m, const uint8_t *p, size_t n)
{
    for (size_t done = 0; done < n; done += m->chunk)
        if (exec_peer_send(&m->l, p + done, n - done < m->chunk ? n - done : m->chunk))
            return -1;
    return 0;
}

/* Receives the chunk of want bytes at done of n into p (NULL: drains it);
 * 0, or -1 when it is short (the sender failed) or the peer is gone. */
static int recv_chunk(const struct migration *m, uint8_t *p, size_t want, size_t done, size_t n)
{
    size_t got = 0;
    if (!exec_peer_recv(&m->l, p, p ? want : 0, &got) && got == want)
        return 0;
    char who[24];
    if (p)
        vocl_warn("migration from %s: %zu of %zu bytes came", exec_peer_who(&m->l, who), done + got,
                  n);
    return -1;
}

/* Receives n bytes in chunks into p (NULL: drains them); 0, or -1 when
 * one is short (the sender failed: nothing follows) or the peer is gone. */
static int recv_all(const struct migration *m, uint8_t *p, size_t n)
{
    for (size_t done = 0; done < n; done += m->chunk)
        if (recv_chunk(m, p ? p + done : NULL, n - done < m->chunk ? n - done : m->chunk, done, n))
            return -1;
    return 0;
}

static void *out_thread(void *arg)
{
    struct migration *m = arg;
    if (!completed(m->l.cl, m->ev) || send_all(m, m->buf, m->size))
        exec_peer_send(&m->l, NULL, 0);
    migration_free(m);
    return NULL;
}

static void *in_thread(void *arg)
{
    struct migration *m = arg;
    cl_int status = recv_all(m, m->buf, m->size) ? -1 : CL_COMPLETE; /* < 0 fails the write */
    m->l.cl->clSetUserEventStatus(m->gate, status);
    m->l.cl->clWaitForEvents(1, &m->ev); /* the write reads buf until then */
    migration_free(m);
    return NULL;
}

/* ---- streamed: chunk by chunk, STREAM_SLOTS of them in flight ---- */

static size_t chunks_of(const struct migration *m)
{
    return (m->size + m->chunk - 1) / m->chunk;
}

/* The bytes of chunk k, and the slot of buf it goes through. */
static size_t chunk_bytes(const struct migration *m, size_t k)
{
    size_t at = k * m->chunk;
    return m->size - at < m->chunk ? m->size - at : m->chunk;
}

static uint8_t *slot(const struct migration *m, size_t k)
{
    return m->buf + (k % STREAM_SLOTS) * m->chunk;
}

/* The host memory a streamed migration of m->size bytes stages in. */
static size_t stream_bytes(const struct migration *m)
{
    size_t chunks = chunks_of(m);
    return (chunks < STREAM_SLOTS ? chunks : STREAM_SLOTS) * m->chunk;
}

/* Whether the copy of event *ev completed; releases it. */
static bool done(const struct vocl_native_api *cl, cl_event *ev)
{
    bool ok = completed(cl, *ev);
    if (*ev)
        cl->clReleaseEvent(*ev);
    *ev = NULL;
    return ok;
}

/* Whether every copy of evs completed (they no longer use their slots). */
static bool all_done(const struct vocl_native_api *cl, cl_event evs[STREAM_SLOTS])
{
    bool ok = true;
    for (unsigned i = 0; i < STREAM_SLOTS; i++)
        if (evs[i])
            ok = done(cl, &evs[i]) && ok;
    return ok;
}

static void *stream_out_thread(void *arg)
{
    struct migration *m = arg;
    const struct vocl_native_api *cl = m->l.cl;
    cl_event read[STREAM_SLOTS] = {0};
    size_t chunks = chunks_of(m), next = 0;
    bool ok = completed(cl, m->ev);
    for (size_t k = 0; ok && k < chunks; k++) {
        for (; ok && next < chunks && next < k + STREAM_SLOTS; next++)
            ok = cl->clEnqueueReadBuffer(m->stream_queue, m->stream_mem, CL_FALSE, next * m->chunk,
                                         chunk_bytes(m, next), slot(m, next), 0, NULL,
                                         &read[next % STREAM_SLOTS]) == CL_SUCCESS;
        cl->clFlush(m->stream_queue);
        ok = done(cl, &read[k % STREAM_SLOTS]) && ok &&
             !exec_peer_send(&m->l, slot(m, k), chunk_bytes(m, k));
    }
    all_done(cl, read);
    if (!ok) /* the receiver stops at a short chunk */
        exec_peer_send(&m->l, NULL, 0);
    migration_free(m);
    return NULL;
}

static void *stream_in_thread(void *arg)
{
    struct migration *m = arg;
    const struct vocl_native_api *cl = m->l.cl;
    cl_event wrote[STREAM_SLOTS] = {0};
    size_t chunks = chunks_of(m);
    bool ok = true;
    for (size_t k = 0; k < chunks; k++) {
        cl_event *w = &wrote[k % STREAM_SLOTS];
        if (*w) /* the slot's last write must be done before it is filled again */
            ok = done(cl, w) && ok;
        /* After a failure, what comes is drained: the sender sends on. */
        size_t want = chunk_bytes(m, k);
        if (recv_chunk(m, ok ? slot(m, k) : NULL, want, k * m->chunk, m->size)) {
            ok = false;
            break; /* the sender failed (nothing follows), or is gone */
        }
        if (ok) {
            ok = cl->clEnqueueWriteBuffer(m->stream_queue, m->stream_mem, CL_FALSE, k * m->chunk,
                                          want, slot(m, k), 0, NULL, w) == CL_SUCCESS;
            cl->clFlush(m->stream_queue);
        }
    }
    ok = all_done(cl, wrote) && ok;
    cl->clSetUserEventStatus(m->gate, ok ? CL_COMPLETE : -1); /* < 0 fails the marker */
    migration_free(m);
    return NULL;
}

static void *diff_out_thread(void *arg)
{
    struct migration *m = arg;
    size_t changed = 0, n = 0;
    uint8_t *d = NULL;
    char who[24];
    if (completed(m->l.cl, m->ev)) {
        n = exec_diff_encode(m->buf, m->twin, m->size, NULL, &changed);
        if ((d = malloc(n ? n : 1)))
            exec_diff_encode(m->buf, m->twin, m->size, d, &changed);
    }
    uint8_t head[8];
    exec_put_u64(head, n);
    if (!d || exec_peer_send(&m->l, head, sizeof(head)) || send_all(m, d, n))
        exec_peer_send(&m->l, NULL, 0);
    else
        vocl_info("diff to %s: %zu of %zu bytes changed, %zu sent", exec_peer_who(&m->l, who),
                  changed, m->size, n + sizeof(head));
    free(d);
    migration_free(m);
    return NULL;
}

static void *diff_in_thread(void *arg)
{
    struct migration *m = arg;
    uint8_t head[8], *d = NULL;
    size_t got = 0;
    uint64_t n = 0;
    char who[24];
    bool ok = !exec_peer_recv(&m->l, head, sizeof(head), &got) && got == sizeof(head) &&
              (n = exec_get_u64(head)) <= exec_diff_max(m->size);
    if (ok && !(d = malloc(n ? n : 1))) {
        recv_all(m, NULL, n); /* nowhere to put it */
        ok = false;
    }
    ok = ok && !recv_all(m, d, n) && completed(m->l.cl, m->read);
    if (ok && exec_diff_apply(m->buf, m->size, d, n)) {
        vocl_warn("diff from %s: malformed runs", exec_peer_who(&m->l, who));
        ok = false;
    }
    free(d);
    m->l.cl->clSetUserEventStatus(m->gate, ok ? CL_COMPLETE : -1);
    m->l.cl->clWaitForEvents(1, &m->ev);
    migration_free(m);
    return NULL;
}

/* What the peer sends for an IN request that failed, taken and dropped. */
static void *drain_thread(void *arg)
{
    struct migration *m = arg;
    if (m->ev)
        m->l.cl->clWaitForEvents(1, &m->ev); /* (the write failed with its gate) */
    uint64_t n = m->size;
    if (m->diff) {
        uint8_t head[8];
        size_t got = 0;
        n = 0;
        if (!exec_peer_recv(&m->l, head, sizeof(head), &got) && got == sizeof(head) &&
            exec_get_u64(head) <= exec_diff_max(m->size))
            n = exec_get_u64(head);
    }
    recv_all(m, NULL, n);
    migration_free(m);
    return NULL;
}

/* The fields every migration request starts with (cl_api.def). */
struct head {
    uint64_t mem;
    uint32_t peer, tag;
    uint64_t chunk;
};

/* A migration with the fields of h; NULL when out of memory. */
static struct migration *new_migration(struct exec_req *q, const struct head *h, cl_mem *mem)
{
    struct migration *m = calloc(1, sizeof(*m));
    if (!m) {
        exec_fail(q, "out of memory");
        return NULL;
    }
    *mem = q->r->fail ? NULL : exec_h(q, h->mem, VOCL_T_MEM, 0);
    exec_peer_set(q, &m->l, h->peer, h->tag, false);
    m->chunk = (size_t)h->chunk;
    if (m->chunk < EXEC_CHUNK_MIN || m->chunk > EXEC_CHUNK_MAX)
        exec_fail(q, "migration chunk size out of range");
    return m;
}

/*
 * What a read of mem here comes after: the events the client named, and
 * what the queues that wrote mem here enqueued before (a queue already
 * released is skipped, and so are its commands).
 */
struct after {
    cl_command_queue *writers;
    cl_uint nw, nwl;
    const cl_event *wl;
    cl_event *list; /* room for the events and a marker per writer */
};

static void set_after(struct exec_req *q, struct after *a, const struct vocl_ids *queues,
                      const struct vocl_ids *events)
{
    uint32_t nq = queues->n;
    a->writers = exec_tmp(q, (nq ? nq : 1) * sizeof(*a->writers));
    a->nw = 0;
    for (uint32_t i = 0; i < nq && !q->fail && !q->r->fail; i++) {
        struct exec_obj *o = exec_lookup(q->s, vocl_ids_at(queues, i), VOCL_T_QUEUE);
        if (o && a->writers)
            a->writers[a->nw++] = o->native;
    }
    a->nwl = 0;
    a->wl = exec_ha(q, VOCL_T_EVENT, events, &a->nwl);
    a->list = exec_tmp(q, (a->nwl + a->nw + 1) * sizeof(*a->list));
}

/* The events of a, with a marker on each writer (released by after_done). */
static cl_uint after_events(struct exec_req *q, struct after *a)
{
    cl_uint n = a->nwl;
    if (n)
        memcpy(a->list, a->wl, n * sizeof(*a->list));
    for (cl_uint i = 0; i < a->nw; i++)
        if (q->cl->clEnqueueMarkerWithWaitList(a->writers[i], 0, NULL, &a->list[n]) ==
            CL_SUCCESS) {
            q->cl->clFlush(a->writers[i]);
            n++;
        }
    return n;
}

static void after_done(struct exec_req *q, struct after *a, cl_uint n)
{
    for (cl_uint i = a->nwl; i < n; i++)
        q->cl->clReleaseEvent(a->list[i]);
}

/*
 * MIGRATE_OUT sends all of mem; kept is the twin it may make of what it
 * sends.  DIFF_OUT sends what changed since twin was made.
 */
static void op_out(struct exec_req *q, bool diff)
{
    struct vocl_msg_MIGRATE_OUT_req w;
    struct vocl_msg_DIFF_OUT_req d;
    const char *why;
    struct head h;
    if (diff) {
        why = vocl_dec_DIFF_OUT_req(q->r, &d);
        h = (struct head){d.mem, d.peer, d.tag, d.chunk};
    } else {
        why = vocl_dec_MIGRATE_OUT_req(q->r, &w);
        h = (struct head){w.mem, w.peer, w.tag, w.chunk};
    }
    if (why)
        exec_fail(q, why);
    cl_mem mem, twin = NULL;
    struct migration *m = new_migration(q, &h, &mem);
    if (!m)
        return;
    uint64_t twin_id = 0, ev_id = 0;
    if (diff) {
        twin = q->r->fail ? NULL : exec_h(q, d.twin, VOCL_T_MEM, 0);
    } else if ((twin_id = exec_newid(q, w.twin)) != 0 && !(ev_id = exec_newid(q, w.twin_event))) {
        exec_fail(q, "a twin without an event");
    }
    struct after a;
    set_after(q, &a, diff ? &d.queues : &w.queues, diff ? &d.events : &w.events);
    size_t region[3], size = 0;
    bool image = false;
    if (!q->fail && !q->r->fail)
        size = whole_size(q->cl, mem, region, &image);
    if ((diff || twin_id) && image)
        exec_fail(q, "a twin of an image");
    if (!exec_req_begin(q) || !a.writers || !a.list) {
        /* The receiver waits for this peer: the thread tells it (no read:
         * a failure), if the peer is sane. */
        if (m->l.sane)
            exec_peer_start(&m->l, diff ? diff_out_thread : out_thread, m);
        else
            migration_free(m);
        return;
    }
    cl_int rc = CL_OUT_OF_RESOURCES;
    m->size = size;
    bool streamed = !diff && !image && size > m->chunk && (twin_id || host_may(q->cl, mem, false));
    m->buf = m->size ? malloc(streamed ? stream_bytes(m) : m->size) : NULL;
    if (diff)
        m->twin = m->size ? malloc(m->size) : NULL;
    cl_command_queue queue = m->buf && (!diff || m->twin) ? mem_queue(q->cl, mem) : NULL;
    if (queue && streamed) {
        /* The thread reads after a marker that waits for what a names (or
         * after the twin's copy, which does), on this queue, in order. */
        cl_uint n = after_events(q, &a);
        const cl_event *wl = n ? a.list : NULL;
        cl_mem from = mem;
        cl_uint nm = n; /* what the marker waits for: nothing after the twin's copy */
        if (twin_id) {
            from = make_twin(q, queue, mem, m->size, twin_id, ev_id, n, wl);
            nm = 0;
        } else {
            q->cl->clRetainMemObject(mem);
        }
        if (from)
            rc = q->cl->clEnqueueMarkerWithWaitList(queue, nm, nm ? wl : NULL, &m->ev);
        after_done(q, &a, n);
        q->cl->clFlush(queue);
        m->stream_mem = from;
        m->stream_queue = queue;
    } else if (queue) {
        cl_uint n = after_events(q, &a);
        const cl_event *wl = n ? a.list : NULL; /* (an empty list must be NULL) */
        if (diff) {
            rc = whole_xfer(q->cl, queue, twin, false, false, region, m->size, m->twin, n, wl,
                            NULL);
            if (rc == CL_SUCCESS)
                rc = whole_xfer(q->cl, queue, mem, false, false, region, m->size, m->buf, 0,
                                NULL, &m->ev);
        } else if (twin_id) {
            /* What is sent is read from the twin: both are the same bytes,
             * even while a kernel writes mem. */
            cl_mem made = make_twin(q, queue, mem, m->size, twin_id, ev_id, n, wl);
            if (made) {
                rc = whole_xfer(q->cl, queue, made, false, false, region, m->size, m->buf, 0,
                                NULL, &m->ev);
                q->cl->clReleaseMemObject(made);
            }
        } else {
            rc = whole_xfer(q->cl, queue, mem, false, image, region, m->size, m->buf, n, wl,
                            &m->ev);
        }
        after_done(q, &a, n);
        q->cl->clFlush(queue);
        q->cl->clReleaseCommandQueue(queue);
    }
    if (rc != CL_SUCCESS && m->ev) {
        q->cl->clReleaseEvent(m->ev);
        m->ev = NULL;
    }
    /* (A failure goes at once; data waits for the read.) */
    exec_peer_start(&m->l, diff ? diff_out_thread : streamed ? stream_out_thread : out_thread, m);
    vocl_wr_i32(q->w, rc);
}

void exec_op_migrate_out(struct exec_req *q)
{
    op_out(q, false);
}

void exec_op_diff_out(struct exec_req *q)
{
    op_out(q, true);
}

/*
 * MIGRATE_IN writes what the peer sends into all of mem, and may make a
 * twin of it; DIFF_IN reads mem (after what a names), patches the runs in
 * and writes it back.  The write waits on a user event a thread sets when
 * the bytes are in; ev_id names the write (or the twin's copy after it).
 */
static void op_in(struct exec_req *q, bool diff)
{
    struct vocl_msg_MIGRATE_IN_req w;
    struct vocl_msg_DIFF_IN_req d;
    const char *why;
    struct head h;
    uint64_t event;
    if (diff) {
        why = vocl_dec_DIFF_IN_req(q->r, &d);
        h = (struct head){d.mem, d.peer, d.tag, d.chunk};
        event = d.event;
    } else {
        why = vocl_dec_MIGRATE_IN_req(q->r, &w);
        h = (struct head){w.mem, w.peer, w.tag, w.chunk};
        event = w.event;
    }
    if (why)
        exec_fail(q, why);
    cl_mem mem;
    struct migration *m = new_migration(q, &h, &mem);
    if (!m)
        return;
    uint64_t ev_id = exec_newid(q, event), twin_id = 0;
    struct after a = {0};
    if (diff)
        set_after(q, &a, &d.queues, &d.events);
    else
        twin_id = exec_newid(q, w.twin);
    size_t region[3], size = 0;
    bool image = false;
    cl_int rc = CL_OUT_OF_RESOURCES;
    if (!ev_id)
        exec_fail(q, "migration without an event");
    if (!q->fail && !q->r->fail)
        size = whole_size(q->cl, mem, region, &image);
    if ((diff || twin_id) && image)
        exec_fail(q, "a twin of an image");
    if (!exec_req_begin(q)) {
        migration_free(m);
        return;
    }
    m->size = size;
    bool streamed = !diff && !image && size > m->chunk && host_may(q->cl, mem, true);
    m->buf = m->size ? malloc(streamed ? stream_bytes(m) : m->size) : NULL;
    cl_command_queue queue = m->buf && (!diff || a.list) ? mem_queue(q->cl, mem) : NULL;
    cl_context ctx = NULL;
    if (queue && q->cl->clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof(ctx), &ctx, NULL) ==
                     CL_SUCCESS)
        m->gate = q->cl->clCreateUserEvent(ctx, &rc);
    if (m->gate && diff) {
        cl_uint n = after_events(q, &a);
        rc = whole_xfer(q->cl, queue, mem, false, false, region, m->size, m->buf, n,
                        n ? a.list : NULL, &m->read);
        after_done(q, &a, n);
    }
    if (m->gate && rc == CL_SUCCESS && streamed) {
        /* The thread writes on a second queue: this one's marker waits for
         * the gate, which the thread opens once the writes are done. */
        m->stream_queue = mem_queue(q->cl, mem);
        rc = m->stream_queue ? q->cl->clEnqueueMarkerWithWaitList(queue, 1, &m->gate, &m->ev)
                             : CL_OUT_OF_RESOURCES;
        m->stream_mem = mem;
        q->cl->clRetainMemObject(mem);
    } else if (m->gate && rc == CL_SUCCESS) {
        rc = whole_xfer(q->cl, queue, mem, true, image, region, m->size, m->buf, 1, &m->gate,
                        &m->ev);
    }
    cl_mem twin = NULL;
    if (rc == CL_SUCCESS && twin_id) /* the twin holds what came, as mem does */
        twin = make_twin(q, queue, mem, m->size, twin_id, ev_id, 1, &m->ev);
    if (twin)
        q->cl->clReleaseMemObject(twin);
    if (queue) {
        q->cl->clFlush(queue);
        q->cl->clReleaseCommandQueue(queue);
    }
    if (rc == CL_SUCCESS) {
        if (!twin) {
            q->cl->clRetainEvent(m->ev); /* one for the session, one for the thread */
            exec_put_new(q, ev_id, VOCL_T_EVENT, m->ev);
        }
        exec_peer_start(&m->l, diff ? diff_in_thread : streamed ? stream_in_thread : in_thread, m);
        vocl_wr_i32(q->w, rc);
        return;
    }
    /* Nothing will take the data: fail the write, and have a thread drain
     * what the sender sends, so that it is not left waiting. */
    if (m->gate)
        q->cl->clSetUserEventStatus(m->gate, -1);
    m->diff = diff;
    exec_peer_start(&m->l, drain_thread, m);
    vocl_wr_i32(q->w, rc);
}

void exec_op_migrate_in(struct exec_req *q)
{
    op_in(q, false);
}

void exec_op_diff_in(struct exec_req *q)
{
    op_in(q, true);
}
