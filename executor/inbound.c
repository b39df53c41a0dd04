/*
 * inbound.c - the chunks of large writes, received between other sessions'
 * requests.
 *
 * A chunked write's data follows its request on the data channel.  The
 * thread that serves every session must wait neither for those chunks (a
 * client that is stopped, or slow, would hold up all the others) nor for
 * the device (a staging buffer is free again only once its copy to the
 * device is done, and the client's own long kernel may come first).  So a
 * chunked write parks its session: each step takes the chunks that have
 * come and hands them on, and returns as soon as the next one has not come
 * or has nowhere to land yet.  The transport steps parked sessions between
 * the requests of others, and serves a parked session's next request only
 * once its write is done: its requests keep their order.
 *
 * Where a chunk lands, the fastest way first:
 *   direct  the device keeps buffers in host memory (a CPU device): the
 *           region itself, mapped once the commands before the write are
 *           done;
 *   staged  the next staging buffer (pool.c), if its last copy is done;
 *   own     memory of the write's own, freed when its copy is done: the
 *           staging buffers are all in use (with VOCL_PIPELINE=0 the write
 *           waits for its one buffer instead).
 * Otherwise it waits for a later step.  While the client has a user event
 * unset, the commands before the write may wait for the client, whose
 * clSetUserEventStatus would wait behind the parked write: the write then
 * maps nothing and waits for nothing (staged if free, else own, else it
 * fails).  Each chunk is written to the device after the one before, so the
 * command completes with the last.
 *
 * A rectangle's or an image's data (its rows are not the buffer's) is
 * received whole into memory of its own, and the request then runs again
 * with it.  A request refused while its chunks are on their way (a bad
 * handle, no memory) parks too, to drain them; its reply, already made,
 * goes after.
 */
#include "internal.h"
#include "xfer.h"

#include <stdlib.h>
#include <string.h>

#include "backoff.h"

/* The most a step keeps landing chunks, once it has landed one. */
#define STEP_NS (1000u * 1000u)

enum inbound_kind {
    INBOUND_WRITE,  /* clEnqueueWriteBuffer */
    INBOUND_CREATE, /* clCreateBuffer with the data (a queue of its own) */
    INBOUND_DRAIN,  /* a refused request: the chunks dropped, then its reply */
    INBOUND_WHOLE,  /* a rectangle or image: received whole, then the request again */
};

struct exec_inbound {
    enum inbound_kind kind;
    unsigned op;
    uint32_t seq;
    bool async;
    int tag;
    cl_command_queue queue; /* CREATE: the write's own, released at the end */
    cl_mem buf;             /* CREATE: the new buffer, recorded at the end */
    size_t offset;
    struct exec_xfer x;
    cl_bool blocking;
    uint64_t id; /* WRITE: the event's (0: none); CREATE: the buffer's */
    bool may_wait; /* no user event of the client unset: the device may be waited for */
    size_t done;   /* bytes landed */
    cl_int rc;     /* the first failure: the chunks after it are drained */
    uint8_t *map;  /* direct: the region, mapped by the command mapped */
    cl_event mapped;
    struct exec_pool *pool;   /* NULL: own memory only */
    cl_event last;            /* the last chunk's write */
    uint8_t *dst;             /* where the next chunk lands (NULL: not chosen) */
    enum { LAND_MAP, LAND_POOL, LAND_OWN, LAND_WHOLE, LAND_DROP } land;
    unsigned slot;          /* LAND_POOL */
    uint8_t *scratch;       /* LAND_DROP: malloc'd once */
    uint64_t waiting_since; /* the next chunk: waited for since (0: not yet) */
    bool warned;            /* let go while its chunk was still coming: said once */
    struct vocl_wr reply;   /* DRAIN: the refusal, as the handler made it */
    uint8_t *whole;         /* WHOLE: where the data lands (exec_host_alloc'd) */
    void *again;            /* WHOLE: a copy of the request, to run again */
    size_t again_len;
    cl_uint nwl;
    cl_event wl[]; /* retained */
};

static size_t next_len(const struct exec_inbound *in)
{
    size_t left = in->x.size - in->done;
    return left < in->x.chunk ? left : in->x.chunk;
}

/* The write's wait list, as the native call takes it (none: NULL). */
static const cl_event *wait_list(const struct exec_inbound *in)
{
    return in->nwl ? in->wl : NULL;
}

/* Parks q's session on a new inbound of kind; NULL when out of memory. */
static struct exec_inbound *park(struct exec_req *q, enum inbound_kind kind,
                                 const struct exec_xfer *x, cl_uint nwl, const cl_event *wl)
{
    struct exec_inbound *in = calloc(1, sizeof(*in) + nwl * sizeof(cl_event));
    if (!in)
        return NULL;
    *in = (struct exec_inbound){.kind = kind,
                                .op = q->op,
                                .seq = q->seq,
                                .async = q->async,
                                .tag = q->s->data_tag,
                                .x = *x,
                                .nwl = nwl,
                                .may_wait = q->s->user_events == 0};
    for (cl_uint i = 0; i < nwl; i++) {
        in->wl[i] = wl[i];
        q->cl->clRetainEvent(wl[i]);
    }
    vocl_wr_init(&in->reply);
    q->s->inbound = in;
    return in;
}

/* The data of a write into [offset, +x->size) of buf through queue. */
static cl_int start(struct exec_req *q, enum inbound_kind kind, cl_command_queue queue, cl_mem buf,
                    size_t offset, const struct exec_xfer *x, cl_uint nwl, const cl_event *wl)
{
    struct exec_inbound *in = park(q, kind, x, nwl, wl);
    if (!in)
        return CL_OUT_OF_HOST_MEMORY;
    in->queue = queue;
    in->buf = buf;
    in->offset = offset;
    if (in->may_wait && x->size && exec_xfer_direct(q, queue)) {
        cl_int rc;
        in->map = q->cl->clEnqueueMapBuffer(queue, buf, CL_FALSE, CL_MAP_WRITE_INVALIDATE_REGION,
                                            offset, x->size, in->nwl, wait_list(in),
                                            &in->mapped, &rc);
        if (in->map)
            q->cl->clFlush(queue);
        /* Not mappable (CL_MEM_HOST_NO_ACCESS, ...): the staged write says why. */
    }
    if (!in->map)
        in->pool = exec_queue_pool(q->s->node, queue);
    return CL_SUCCESS;
}

cl_int exec_inbound_write(struct exec_req *q, cl_command_queue queue, cl_mem buf, size_t offset,
                          const struct exec_xfer *x, cl_uint nwl, const cl_event *wl,
                          cl_bool blocking, uint64_t ev_id)
{
    cl_int rc = start(q, INBOUND_WRITE, queue, buf, offset, x, nwl, wl);
    if (rc == CL_SUCCESS) {
        q->s->inbound->blocking = blocking;
        q->s->inbound->id = ev_id;
    }
    return rc;
}

cl_int exec_inbound_create(struct exec_req *q, cl_command_queue queue, cl_mem buf,
                           const struct exec_xfer *x, uint64_t id)
{
    cl_int rc = start(q, INBOUND_CREATE, queue, buf, 0, x, 0, NULL);
    if (rc == CL_SUCCESS)
        q->s->inbound->id = id;
    return rc;
}

void exec_xfer_drain(struct exec_req *q, const struct exec_xfer *x)
{
    if (x->mode != VOCL_DATA_CHUNKED || x->chunk == 0 || q->s->inbound)
        return;
    struct exec_inbound *in = park(q, INBOUND_DRAIN, x, 0, NULL);
    if (in)
        in->rc = CL_INVALID_OPERATION; /* (a refusal: every chunk dropped) */
    else
        q->s->broken = true; /* the data channel cannot be kept in step */
}

static void inbound_free(struct exec_session *s, struct exec_inbound *in);

void exec_inbound_whole(struct exec_req *q, const struct exec_xfer *x, uint8_t *buf)
{
    struct exec_inbound *in = park(q, INBOUND_WHOLE, x, 0, NULL);
    void *again = in ? malloc(q->s->msg_len) : NULL;
    if (!again) {
        if (in)
            inbound_free(q->s, in);
        exec_host_free(buf);
        exec_xfer_drain(q, x);
        return;
    }
    memcpy(again, q->s->msg, q->s->msg_len);
    in->again = again;
    in->again_len = q->s->msg_len;
    in->whole = buf;
}

void exec_inbound_keep_reply(struct exec_session *s, const struct vocl_wr *w)
{
    struct exec_inbound *in = s->inbound;
    if (in->kind != INBOUND_DRAIN)
        return;
    void *p = vocl_wr_reserve(&in->reply, w->len);
    if (p)
        memcpy(p, w->buf, w->len);
}

/* Whether ev has completed (*failed: in error); false while it runs. */
static bool event_done(const struct vocl_native_api *cl, cl_event ev, bool *failed)
{
    cl_int st = CL_COMPLETE;
    if (cl->clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL) !=
        CL_SUCCESS)
        st = CL_INVALID_EVENT;
    *failed = st < 0;
    return st <= CL_COMPLETE;
}

/* Chooses where the next chunk of n bytes lands; false: nowhere yet. */
static bool choose(struct exec_session *s, struct exec_inbound *in, size_t n)
{
    const struct vocl_native_api *cl = s->node->cl;
    if (in->whole) {
        in->land = LAND_WHOLE;
        in->dst = in->whole + in->done;
        return true;
    }
    if (in->rc == CL_SUCCESS && in->map) {
        bool failed;
        if (!event_done(cl, in->mapped, &failed))
            return false;
        if (!failed) {
            in->land = LAND_MAP;
            in->dst = in->map + in->done;
            return true;
        }
        in->rc = CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
    }
    if (in->rc == CL_SUCCESS && in->pool && (in->dst = exec_pool_try(in->pool, &in->slot))) {
        in->land = LAND_POOL;
        return true;
    }
    if (in->rc == CL_SUCCESS && in->pool && !s->node->xfer.pipeline && in->may_wait)
        return false; /* (VOCL_PIPELINE=0: one buffer, each stage waited for) */
    if (in->rc == CL_SUCCESS && (in->dst = exec_host_alloc(s, n))) {
        in->land = LAND_OWN;
        return true;
    }
    if (in->rc == CL_SUCCESS && in->may_wait && in->pool)
        return false; /* over the session's memory: a staging buffer will be free */
    if (in->rc == CL_SUCCESS)
        in->rc = CL_OUT_OF_HOST_MEMORY;
    if (!in->scratch)
        in->scratch = malloc(in->x.chunk);
    in->land = LAND_DROP;
    in->dst = in->scratch;
    return in->dst != NULL;
}

/* The next chunk of n bytes has landed in in->dst: on to the device. */
static void landed(struct exec_session *s, struct exec_inbound *in, size_t n)
{
    const struct vocl_native_api *cl = s->node->cl;
    cl_int rc = in->rc;
    cl_event e = NULL, prev = in->last;
    if (rc == CL_SUCCESS && (in->land == LAND_POOL || in->land == LAND_OWN)) {
        /* Each after the one before: the command completes with the last. */
        rc = cl->clEnqueueWriteBuffer(in->queue, in->buf, CL_FALSE, in->offset + in->done, n,
                                      in->dst, prev ? 1 : in->nwl, prev ? &prev : wait_list(in),
                                      &e);
        if (prev)
            cl->clReleaseEvent(prev);
        in->last = rc == CL_SUCCESS ? e : NULL;
    }
    if (in->land == LAND_POOL)
        exec_pool_busy(in->pool, in->slot, rc == CL_SUCCESS ? e : NULL);
    else if (in->land == LAND_OWN)
        exec_keep_until_done(s, rc, e, in->dst);
    in->rc = rc;
    in->dst = NULL;
    in->done += n;
}

/* Lets go of what in holds; the session is no longer parked. */
static void inbound_free(struct exec_session *s, struct exec_inbound *in)
{
    const struct vocl_native_api *cl = s->node->cl;
    if (in->dst && in->land == LAND_POOL)
        exec_pool_give(in->pool, in->slot);
    else if (in->dst && in->land == LAND_OWN)
        exec_host_free(in->dst);
    if (in->map)
        cl->clEnqueueUnmapMemObject(in->queue, in->buf, in->map, 0, NULL, NULL);
    if (in->mapped)
        cl->clReleaseEvent(in->mapped);
    if (in->last)
        cl->clReleaseEvent(in->last);
    for (cl_uint i = 0; i < in->nwl; i++)
        cl->clReleaseEvent(in->wl[i]);
    if (in->kind == INBOUND_CREATE) {
        cl->clReleaseCommandQueue(in->queue);
        if (in->buf)
            cl->clReleaseMemObject(in->buf);
    }
    free(in->scratch);
    vocl_wr_free(&in->reply);
    exec_host_free(in->whole);
    free(in->again);
    free(in);
    s->inbound = NULL;
}

/* Whether the data channel still writes into in's next chunk: one that
 * began to come from a client that stopped in the middle of sending it. */
static bool receiving(struct exec_session *s, const struct exec_inbound *in)
{
    return in->dst && s->data->recv_busy && s->data->recv_busy(s);
}

bool exec_inbound_busy(struct exec_session *s)
{
    return s->inbound && receiving(s, s->inbound);
}

void exec_inbound_drop(struct exec_session *s)
{
    struct exec_inbound *in = s->inbound;
    if (!in)
        return;
    if (!receiving(s, in)) {
        inbound_free(s, in);
    } else if (!in->warned) {
        in->warned = true;
        vocl_warn("client %d: a chunk of its write is still coming: what its session holds is"
                  " released once it is in (or given up)",
                  s->who);
    }
}

void exec_inbound_give_up(struct exec_session *s)
{
    struct exec_inbound *in = s->inbound;
    if (!in || !receiving(s, in))
        return;
    vocl_warn("client %d: the chunk it began to send did not come: the %zu bytes it would land in"
              " are left to it for good, the rest is released",
              s->who, next_len(in));
    switch (in->land) {
    case LAND_MAP: /* the buffer stays, mapped */
        s->node->cl->clRetainMemObject(in->buf);
        in->map = NULL;
        break;
    case LAND_POOL:
        exec_pool_lose(in->pool, in->slot);
        break;
    case LAND_WHOLE:
        in->whole = NULL;
        break;
    case LAND_DROP:
        in->scratch = NULL;
        break;
    case LAND_OWN:
        break;
    }
    in->dst = NULL; /* (LAND_OWN: not freed) */
    s->data->recv_give_up(s);
    inbound_free(s, in);
}

/* Every chunk has landed: the command's end, as its handler would have
 * answered it. */
static int finish(struct exec_session *s, struct exec_inbound *in, struct vocl_wr *w)
{
    const struct vocl_native_api *cl = s->node->cl;
    struct exec_req q = {
        .s = s, .cl = cl, .w = w, .op = in->op, .seq = in->seq, .async = in->async};
    if (in->kind == INBOUND_WHOLE) {
        void *again = in->again;
        size_t len = in->again_len;
        in->again = NULL;
        s->preloaded = in->whole;
        in->whole = NULL;
        inbound_free(s, in);
        int rc = exec_request_again(s, again, len, w);
        exec_host_free(s->preloaded); /* (where the request did not take it) */
        s->preloaded = NULL;
        free(again);
        return rc;
    }
    cl_int rc = in->rc;
    cl_event e = in->last;
    in->last = NULL;
    if (in->map) {
        cl_int un = cl->clEnqueueUnmapMemObject(in->queue, in->buf, in->map, 0, NULL, &e);
        rc = rc == CL_SUCCESS ? un : rc;
        in->map = NULL;
    }
    s->inbound = NULL;
    vocl_wr_begin(w, (uint16_t)in->op, 0, in->seq);
    switch (in->kind) {
    case INBOUND_WRITE: {
        cl_event ev = NULL;
        rc = exec_finish_cmd(&q, rc, e, in->blocking, in->id ? &ev : NULL);
        exec_put_event(&q, rc, in->id, ev);
        vocl_wr_i32(w, rc);
        break;
    }
    case INBOUND_CREATE: {
        /* Recorded now, answered once the data is in (or at once). */
        cl_mem buf = in->buf;
        in->buf = NULL;
        if (rc == CL_SUCCESS)
            rc = exec_put_new(&q, in->id, VOCL_T_MEM, buf);
        else
            cl->clReleaseMemObject(buf);
        cl_int st = CL_SUCCESS;
        if (rc == CL_SUCCESS && e && !exec_reply_after(&q, 1, &e, NULL, 0, &st))
            rc = st; /* (a write that failed: the client drops the id, released at its end) */
        if (e)
            cl->clReleaseEvent(e);
        vocl_wr_i32(w, rc);
        break;
    }
    case INBOUND_WHOLE: /* (above) */
    case INBOUND_DRAIN:
        vocl_wr_reset(w);
        if (in->reply.len && vocl_wr_reserve(w, in->reply.len))
            memcpy(w->buf, in->reply.buf, in->reply.len);
        else
            vocl_wr_i32(w, CL_OUT_OF_HOST_MEMORY);
        break;
    }
    inbound_free(s, in);
    return exec_req_end(&q, 0);
}

int exec_inbound_step(struct exec_session *s, struct vocl_wr *w, bool *moved)
{
    struct exec_inbound *in = s->inbound;
    if (!in)
        return 0;
    /* A chunk or more, then the other sessions' turn: a chunk of 4 MiB
     * takes a millisecond or two to copy, 64 MiB would take them 30. */
    uint64_t until = vocl_now_ns() + STEP_NS;
    while (in->done < in->x.size) {
        if (*moved && vocl_now_ns() > until)
            return 0;
        size_t n = next_len(in);
        if (!in->dst && !choose(s, in, n)) {
            if (!in->scratch && in->rc != CL_SUCCESS) /* (no memory even to drop it) */
                goto broken;
            return 0;
        }
        int got = s->data->recv_try ? s->data->recv_try(s, in->tag, in->dst, n)
                                    : s->data->recv(s, in->tag, in->dst, n);
        if (got > 0) {
            uint64_t now = vocl_now_ns();
            if (!in->waiting_since)
                in->waiting_since = now;
            if (now - in->waiting_since < EXEC_CLIENT_TIMEOUT_NS)
                return 0;
            vocl_warn("client %d: a chunk of its write did not come in 30 s", s->who);
        }
        if (got != 0)
            goto broken;
        in->waiting_since = 0;
        landed(s, in, n);
        *moved = true;
    }
    return finish(s, in, w);
broken:
    s->broken = true; /* the data channel is out of step */
    exec_inbound_drop(s);
    return -1;
}
