/*
 * call.c - the life of one forwarded call: validate and route the handles,
 * encode the request, exchange it with the owning proxy, decode the reply.
 *
 * A call goes to the proxy that owns its first handle; every other handle
 * must live there too.  Events of other proxies in a wait list are waited
 * for here, before the request leaves, which keeps their order.
 */
#include "backoff.h"
#include "vocl.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static pthread_key_t wr_key;
static pthread_once_t wr_once = PTHREAD_ONCE_INIT;

static void wr_destroy(void *p)
{
    vocl_wr_free(p);
    free(p);
}

static void wr_key_init(void)
{
    pthread_key_create(&wr_key, wr_destroy);
}

/* Each thread encodes into its own buffer, kept between calls. */
static struct vocl_wr *thread_writer(void)
{
    pthread_once(&wr_once, wr_key_init);
    struct vocl_wr *w = pthread_getspecific(wr_key);
    if (!w) {
        w = calloc(1, sizeof(*w));
        if (w)
            pthread_setspecific(wr_key, w);
    }
    return w;
}

void vocl_call_init(struct vocl_call *c)
{
    memset(c, 0, sizeof(*c));
    c->err = vocl_init();
}

void vocl_call_error(struct vocl_call *c, cl_int err)
{
    if (c->err == CL_SUCCESS)
        c->err = err;
}

struct vocl_obj *vocl_call_h(struct vocl_call *c, const void *h, enum vocl_type t, int nullable)
{
    if (c->err)
        return NULL;
    if (!h) {
        if (!nullable)
            vocl_call_error(c, vocl_type_invalid_err(t));
        return NULL;
    }
    struct vocl_obj *o = vocl_lookup(h, t);
    if (!o) {
        vocl_call_error(c, vocl_type_invalid_err(t));
        return NULL;
    }
    if (t == VOCL_T_QUEUE && !c->queue)
        c->queue = o;
    if (o->reps && !c->px && c->nspread < sizeof(c->spread) / sizeof(c->spread[0])) {
        /* It lives in several proxies: another handle may pick which. */
        c->spread[c->nspread++] = o;
        return o;
    }
    if (!c->px)
        c->px = o->px;
    else if (!vocl_on(o, c->px)) {
        /* Objects of different proxies never share a context. */
        vocl_call_error(c, t == VOCL_T_DEVICE ? CL_INVALID_DEVICE : CL_INVALID_CONTEXT);
        return NULL;
    }
    return o;
}

void vocl_call_devs(struct vocl_call *c, const struct vocl_obj *ctx, cl_uint n,
                    const cl_device_id *list)
{
    if (c->err)
        return;
    if ((n == 0) != (list == NULL)) {
        vocl_call_error(c, CL_INVALID_VALUE);
        return;
    }
    const struct vocl_context *cx = vocl_as_context(ctx);
    for (cl_uint i = 0; i < n; i++) {
        struct vocl_obj *d = vocl_lookup(list[i], VOCL_T_DEVICE);
        cl_uint j = 0;
        while (d && cx && j < cx->ndevs && cx->devs[j] != d)
            j++;
        if (!d || (cx && j == cx->ndevs)) {
            vocl_call_error(c, CL_INVALID_DEVICE);
            return;
        }
    }
}

cl_uint vocl_count_on(const struct vocl_proxy *px, cl_uint n, const void *const *list)
{
    cl_uint k = 0;
    for (cl_uint i = 0; list && i < n; i++)
        k += vocl_on(list[i], px);
    return k;
}

void vocl_call_ha(struct vocl_call *c, cl_uint n, const void *const *list, enum vocl_type t)
{
    if (c->err)
        return;
    if ((n == 0) != (list == NULL)) {
        vocl_call_error(c, CL_INVALID_VALUE);
        return;
    }
    for (cl_uint i = 0; i < n && !c->err; i++)
        vocl_call_h(c, list[i], t, 0);
}

cl_int vocl_wl_check(const struct vocl_obj *queue, cl_uint n, const cl_event *list)
{
    if ((n == 0) != (list == NULL))
        return CL_INVALID_EVENT_WAIT_LIST;
    for (cl_uint i = 0; i < n; i++) {
        struct vocl_obj *e = vocl_lookup(list[i], VOCL_T_EVENT);
        if (!e)
            return CL_INVALID_EVENT_WAIT_LIST;
        /* A command's events must be of its queue's context. */
        if (queue && e->context != queue->context)
            return CL_INVALID_CONTEXT;
    }
    return CL_SUCCESS;
}

void vocl_call_wl(struct vocl_call *c, cl_uint n, const cl_event *list)
{
    if (c->err)
        return;
    cl_int err = vocl_wl_check(c->queue, n, list);
    if (err != CL_SUCCESS) {
        vocl_call_error(c, err);
        return;
    }
    if (n)
        c->wl_px = ((const struct vocl_obj *)list[0])->px;
    c->wl_n = n;
    c->wl = list;
}

int vocl_call_route(struct vocl_call *c)
{
    if (c->err)
        return -1;
    if (c->routed)
        return 0;
    c->routed = true;
    /* Not looked up again: another thread may have released the event since. */
    if (!c->px)
        c->px = c->wl_px;
    if (!c->px && c->nspread)
        c->px = c->spread[0]->px;
    if (!c->px) {
        vocl_call_error(c, CL_INVALID_VALUE);
        return -1;
    }
    for (cl_uint i = 0; i < c->nspread; i++)
        if (!vocl_on(c->spread[i], c->px)) {
            enum vocl_type t = c->spread[i]->type;
            vocl_call_error(c, t == VOCL_T_KERNEL    ? CL_INVALID_PROGRAM_EXECUTABLE
                               : t == VOCL_T_PROGRAM ? CL_INVALID_PROGRAM_EXECUTABLE
                                                     : CL_INVALID_CONTEXT);
            return -1;
        }
    /* Events of other proxies: a command waits for a mirror of each on its
     * proxy (mirror.c); anything else waits here, before taking our proxy. */
    for (cl_uint i = 0; i < c->wl_n; i++) {
        struct vocl_obj *e = vocl_lookup(c->wl[i], VOCL_T_EVENT);
        if (e && !vocl_on(e, c->px) && vocl_event_mirror(c, c->wl[i]) != 0) {
            cl_int rc = clWaitForEvents(1, &c->wl[i]);
            if (rc != CL_SUCCESS) {
                vocl_call_error(c, CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
                return -1;
            }
        }
    }
    return 0;
}

int vocl_call_start(struct vocl_call *c, unsigned op)
{
    if (vocl_call_route(c))
        return -1;
    /* What comes after it on its queue may depend on anything enqueued
     * until now (coherence.c: which writes a command may depend on). */
    if (c->queue && c->wl_n)
        atomic_store(&vocl_as_queue(c->queue)->ordered_at, vocl_tick());
    /* A shared buffer's transfer needs its queue drained (memory.c), and
     * a clFinish may be answered here only if nothing was sent since the
     * last one (vocl_hook_clFinish). */
    uint64_t tick = vocl_tick();
    if (c->queue)
        atomic_store(&vocl_as_queue(c->queue)->enqueued_at, tick);
    atomic_store(&c->px->called_at, tick);
    /* Calls that may tell the host that commands ended. */
    if (c->sync || op == VOCL_OP_clWaitForEvents || op == VOCL_OP_clGetEventInfo ||
        op == VOCL_OP_clGetEventProfilingInfo) {
        uint64_t now = vocl_tick();
        atomic_store(&vocl.synced_at, now);
        if (op == VOCL_OP_clFinish)
            c->finish_tick = now;
    }
#ifdef VOCL_TEST_HOOKS
    if (vocl.post_delay_us && c->coherent) { /* (tests: the window coherence.c closes) */
        struct timespec d = {vocl.post_delay_us / 1000000, vocl.post_delay_us % 1000000 * 1000};
        nanosleep(&d, NULL);
    }
#endif
    if (c->px->dead) {
        vocl_call_error(c, CL_DEVICE_NOT_AVAILABLE);
        return -1;
    }
    if (!c->w) /* (a caller may give the request a buffer of its own) */
        c->w = thread_writer();
    if (!c->w) {
        vocl_call_error(c, CL_OUT_OF_HOST_MEMORY);
        return -1;
    }
    /* Short: the lock orders this request and its chunks among the others
     * of the proxy, and is let go before any wait (vocl_call_wait). */
    pthread_mutex_lock(&c->px->lock);
    if (c->px->dead) { /* it died, or the process left (init.c), meanwhile */
        pthread_mutex_unlock(&c->px->lock);
        vocl_call_error(c, CL_DEVICE_NOT_AVAILABLE);
        return -1;
    }
    c->locked = true;
    c->op = op;
    c->seq = ++c->px->seq;
    c->ticket = vocl_xport_ticket(c->px);
    vocl_wr_begin(c->w, (uint16_t)op, c->async ? 0 : VOCL_F_REPLY, c->seq);
    return 0;
}

struct vocl_ids vocl_call_wl_ids(struct vocl_call *c, cl_uint n, const cl_event *list)
{
    /* Events of other proxies were waited for by vocl_call_start (c->xw:
     * those it waits for here instead). */
    struct vocl_ids ids = {0};
    uint32_t k = vocl_count_on(c->px, n, (const void *const *)list) + c->nxw;
    if (!k)
        return ids;
    free(c->wl_ids);
    c->wl_ids = malloc(k * sizeof(*c->wl_ids));
    if (!c->wl_ids) {
        vocl_call_error(c, CL_OUT_OF_HOST_MEMORY);
        return ids;
    }
    uint32_t j = 0;
    for (cl_uint i = 0; i < n; i++)
        if (vocl_on((const void *)list[i], c->px))
            c->wl_ids[j++] = vocl_id_on((const void *)list[i], c->px);
    for (cl_uint i = 0; i < c->nxw; i++)
        c->wl_ids[j++] = c->xw[i];
    ids.n = j;
    ids.v = c->wl_ids;
    return ids;
}

struct vocl_ids vocl_call_ha_ids(struct vocl_call *c, cl_uint n, const void *const *list)
{
    /* (Each checked by vocl_call_ha.) */
    struct vocl_ids ids = {0};
    if (!n)
        return ids;
    free(c->ha_ids);
    c->ha_ids = malloc(n * sizeof(*c->ha_ids));
    if (!c->ha_ids) {
        vocl_call_error(c, CL_OUT_OF_HOST_MEMORY);
        return ids;
    }
    for (cl_uint i = 0; i < n; i++)
        c->ha_ids[i] = vocl_id_on(list[i], c->px);
    ids.n = n;
    ids.v = c->ha_ids;
    return ids;
}

struct vocl_ids vocl_props_ids(const void *props, uint64_t buf[VOCL_PROPS_MAX])
{
    /* Property lists are (name, value) pairs ended by a 0 name; every
     * property type of OpenCL 3.0 is 64 bits wide on this ABI. */
    const uint64_t *p = props;
    uint32_t n = 0;
    if (p) {
        while (p[n] && n < 255)
            n += 2;
        n += 1;
    }
    for (uint32_t i = 0; i < n; i++)
        buf[i] = i + 1 == n ? 0 : p[i];
    return (struct vocl_ids){.n = n, .v = buf};
}

uint64_t vocl_call_new_id(struct vocl_call *c)
{
    return atomic_fetch_add(&c->px->next_id, 1);
}

int vocl_call_post(struct vocl_call *c)
{
    if (c->err)
        return -1;
    vocl_wr_finish(c->w);
    if (c->w->fail) {
        vocl_call_error(c, CL_OUT_OF_HOST_MEMORY);
        return -1;
    }
    if (!c->async && !c->px->local) /* the reply's time measures the link */
        c->t_post = vocl_now_ns();
    int rc = vocl_xport_post(c);
    vocl_coherence_posted(c); /* it is ordered among the proxy's requests */
    if (rc) {
        vocl_call_error(c, CL_DEVICE_NOT_AVAILABLE);
        return -1;
    }
    return 0;
}

/* What c posted is ordered among its proxy's: the proxy is the others'
 * again.  Returns the proxy's last chunk ticket then (0: c never held it). */
static uint64_t let_go(struct vocl_call *c)
{
    if (!c->locked)
        return c->posted;
    c->posted = vocl_xport_ticket(c->px);
    pthread_mutex_unlock(&c->px->lock);
    c->locked = false;
    return c->posted;
}

int vocl_call_wait(struct vocl_call *c)
{
    uint64_t posted = let_go(c);
    if (c->err && !c->waiting && !c->sending)
        return -1;
    /* Even after an error, a request that left has its reply taken. */
    int gone = vocl_xport_wait_reply(c);
    if (c->err)
        return -1;
    if (gone) {
        vocl_call_error(c, CL_DEVICE_NOT_AVAILABLE);
        return -1;
    }
    if (c->async) {
        if (!c->batched)
            vocl_xport_progress(c->px); /* completes done chunks: the list stays short */
        return 0;
    }
    c->err = vocl_rd_i32(&c->r);
    if (c->r.fail) {
        vocl_xport_fail(c->px, "short reply");
        c->err = CL_OUT_OF_RESOURCES;
    }
    /* A synchronisation: its own chunks, and those of its queue's earlier
     * transfers, have landed when it returns. */
    if (c->sync && !c->px->local) {
        cl_int data_err = vocl_xport_land(c->px, c->queue, c->ticket, posted);
        if (c->err == CL_SUCCESS && data_err != CL_SUCCESS)
            c->err = data_err;
    }
    /* What the link took: a round trip, or a transfer's bytes. */
    if (c->err == CL_SUCCESS && c->t_post) {
        uint64_t ns = vocl_now_ns() - c->t_post;
        if (c->data_n)
            vocl_link_transfer(&c->px->link, c->data_n, ns);
        else
            vocl_link_round_trip(&c->px->link, ns);
    }
    /* What the queue had when a clFinish began has ended (coherence.c). */
    if (c->finish_tick && c->queue && c->err == CL_SUCCESS)
        vocl_raise(&vocl_as_queue(c->queue)->finished_at, c->finish_tick);
    /* What its kernels printed came before the reply: on stdout by now. */
    if (c->op == VOCL_OP_clFinish || c->op == VOCL_OP_clWaitForEvents)
        vocl_output_write();
    return c->err != CL_SUCCESS;
}

/* clFinish of a queue that was named in no call, and whose proxy was sent
 * no request, since its last clFinish returned: nothing can be pending on
 * it, nor any deferred error of its proxy, so it returns at once, without
 * a round trip (libvocl(7), DEFERRED ERRORS).  A transfer of a shared
 * buffer is done by then (memory.c). */
int vocl_hook_clFinish(cl_command_queue command_queue, cl_int *ret)
{
    struct vocl_obj *q = vocl_lookup(command_queue, VOCL_T_QUEUE);
    if (!q || !q->px || q->px->local || atomic_load(&q->px->dead) || vocl.failover)
        return 0; /* (with failover, a replay may be under way: asked as before) */
    struct vocl_queue *vq = vocl_as_queue(q);
    if (!vocl_queue_finished_since_used(vq) ||
        atomic_load(&q->px->called_at) >= atomic_load(&vq->finished_at))
        return 0;
    atomic_store(&vocl.synced_at, vocl_tick()); /* (as a clFinish sent would) */
    *ret = CL_SUCCESS;
    return 1;
}

int vocl_call_post_only(struct vocl_call *c)
{
    int rc = vocl_call_post(c);
    let_go(c);
    return rc;
}

int vocl_call_post_away(struct vocl_call *c)
{
    int rc = vocl_call_post_only(c);
    if (rc == 0 && vocl_xport_sent(c)) {
        vocl_call_error(c, CL_DEVICE_NOT_AVAILABLE);
        rc = -1;
    }
    return rc;
}

bool vocl_call_ready(struct vocl_call *c, struct vocl_live *lw)
{
    return !c->waiting || vocl_xport_test_reply(c, lw);
}

int vocl_call_send(struct vocl_call *c)
{
    if (vocl_call_post(c))
        return -1;
    return vocl_call_wait(c);
}

cl_int vocl_info_answer(const void *src, size_t n, size_t size, void *value, size_t *size_ret)
{
    if (value && size < n)
        return CL_INVALID_VALUE;
    if (value && n)
        memcpy(value, src, n);
    if (size_ret)
        *size_ret = n;
    return CL_SUCCESS;
}

void vocl_call_get_info(struct vocl_call *c, size_t size, void *value, size_t *size_ret)
{
    vocl_call_get_info_kept(c, NULL, 0, 0, 0, size, value, size_ret);
}

void vocl_call_get_info_kept(struct vocl_call *c, struct vocl_obj *o, unsigned op, uint64_t param,
                             uint32_t gen, size_t size, void *value, size_t *size_ret)
{
    struct vocl_bytes b;
    uint64_t n = vocl_rd_u64(&c->r);
    vocl_rd_sbytes(&c->r, &b);
    vocl_call_info(c, size, value, size_ret, n, &b);
    if (o && !c->err)
        vocl_info_keep(o, op, param, 0, gen, n, &b);
}

void vocl_call_info(struct vocl_call *c, size_t size, void *value, size_t *size_ret, uint64_t n,
                    const struct vocl_bytes *b)
{
    if (c->r.fail || b->len > size) {
        vocl_call_error(c, CL_OUT_OF_RESOURCES);
        return;
    }
    if (value && b->len)
        memcpy(value, b->p, b->len);
    if (size_ret)
        *size_ret = (size_t)n;
}

struct vocl_obj *vocl_call_new_obj(struct vocl_call *c, enum vocl_type t, uint64_t id,
                                   struct vocl_obj *context, struct vocl_obj *parent)
{
    if (c->err)
        return NULL;
    struct vocl_obj *o = vocl_obj_new(t, c->px, id, context, parent);
    if (!o)
        vocl_call_error(c, CL_OUT_OF_HOST_MEMORY);
    return o;
}

struct vocl_obj *vocl_call_new_event(struct vocl_call *c, uint64_t id, struct vocl_obj *queue)
{
    struct vocl_obj *e = vocl_call_new_obj(c, VOCL_T_EVENT, id, queue->context, queue);
    if (!e)
        return NULL;
    /* Waiting for it covers the data of the queue's earlier reads. */
    vocl_as_event(e)->data_ticket =
        atomic_load_explicit(&vocl_as_queue(queue)->data_ticket, memory_order_relaxed);
    vocl_writes_done(c, e, queue);
    return e;
}

void vocl_call_end(struct vocl_call *c)
{
    vocl_coherence_posted(c); /* (not posted: an error) */
    let_go(c);
    vocl_coherence_sent(c);
    if (c->waiting || c->sending)
        vocl_call_wait(c); /* posted but never waited for: a reply is due */
    vocl_wr_free(&c->reply);
    vocl_wr_free(&c->out); /* (not sent: an error) */
    vocl_call_release_mirrors(c);
    vocl_call_drop_arrivals(c);
    c->nwrote = 0;
    free(c->xw);
    c->xw = NULL;
    free(c->wl_ids);
    c->wl_ids = NULL;
    free(c->ha_ids);
    c->ha_ids = NULL;
    c->nxw = c->capxw = 0;
    c->routed = false; /* a call made again, to another proxy, routes again */
    if ((c->op == VOCL_OP_clFinish || c->sync) && c->err == CL_SUCCESS && c->px && c->px->flog)
        vocl_failover_checkpoint(c->px); /* (a moment its queue is drained) */
}
