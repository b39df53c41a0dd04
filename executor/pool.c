/*
 * pool.c - the proxy's staging buffers, and host memory that must outlive
 * the request that filled it.
 *
 * A pool holds N page-aligned buffers of B bytes, handed out circularly; a
 * buffer whose device copy is still running is handed out only once that
 * copy completes, so the network stage can run up to N chunks ahead of the
 * device stage.  The device's DMA engine can only overlap that copy with
 * the next chunk's journey if it knows the buffer as pinned, and a driver
 * knows only memory it allocated itself.  So a context's transfers stage in
 * a pool of its own: one CL_MEM_ALLOC_HOST_PTR buffer of the context, mapped
 * for good through a queue of the pool's (NVIDIA's best practice for pinned
 * memory).  Where that cannot be made, the node's pool serves: malloc'd,
 * and locked in memory where the system allows it.
 *
 * A read with nowhere else to stage its first chunk takes the next buffer
 * whatever its state, as its holder's heir: the read's device copy waits
 * for a user event that completes once the holder gives the buffer up
 * (the stream has sent it, or a write's copy from it is done).  Nothing
 * waits for a buffer on the serving thread.
 */
#include "internal.h"

#include "backoff.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* A taker the buffer passes to when its holder gives it up. */
struct pool_heir {
    const struct vocl_native_api *cl;
    cl_event gate; /* completed then (failed: the memory it was given was lost) */
    uint8_t *mem;  /* the buffer's memory when it was taken */
    struct pool_heir *next;
};

struct pool_buf {
    uint8_t *mem;
    cl_event busy;   /* the last device command using the buffer, or NULL */
    atomic_int held; /* taken: being filled, or queued on the stream until sent */
    bool own;        /* mem is a block of its own (else: part of the driver's buffer) */
    bool dead;       /* lost with nothing to replace it: held for good */
    struct pool_heir *heirs, *last_heir; /* first first (under the pool's lock) */
};

struct exec_pool {
    const struct vocl_native_api *cl;
    size_t size;
    unsigned n, next;
    bool pinned;
    bool lost; /* a part of the driver's buffer was lost: it is never given back */
    /* A context's pool: the driver's buffer, mapped at base through queue. */
    cl_command_queue queue;
    cl_mem mem;
    void *base;
    struct exec_pool *retired_next; /* on the node's list of pools to free */
    /* The heirs, and held and mem where a buffer may have heirs: the
     * stream thread gives buffers back, the serving thread takes them. */
    pthread_mutex_t lock;
    struct pool_buf buf[];
};

/* A pool of n buffers of size bytes, with no memory yet. */
static struct exec_pool *pool_alloc(const struct vocl_native_api *cl, unsigned n, size_t size)
{
    struct exec_pool *p = calloc(1, sizeof(*p) + n * sizeof(p->buf[0]));
    if (p) {
        p->cl = cl;
        p->size = size;
        p->n = n;
        p->pinned = true;
        pthread_mutex_init(&p->lock, NULL);
    }
    return p;
}

struct exec_pool *exec_pool_new(const struct vocl_native_api *cl, unsigned n, size_t size)
{
    struct exec_pool *p = pool_alloc(cl, n, size);
    if (!p)
        return NULL;
    for (unsigned i = 0; i < n; i++) {
        void *m = NULL;
        if (posix_memalign(&m, 4096, size)) {
            exec_pool_free(p);
            return NULL;
        }
        /* Touch every page now: the pool is resident from the start, and
         * the first transfer does not pay for page faults. */
        memset(m, 0, size);
        if (mlock(m, size))
            p->pinned = false;
        p->buf[i].mem = m;
        p->buf[i].own = true;
    }
    if (!p->pinned)
        vocl_info("staging buffers not locked in memory (RLIMIT_MEMLOCK): transfers still work");
    vocl_debug("pool: %u buffers of %zu KiB%s", n, size >> 10, p->pinned ? ", pinned" : "");
    return p;
}

struct exec_pool *exec_pool_new_driver(const struct vocl_native_api *cl, cl_context ctx,
                                       cl_device_id dev, unsigned n, size_t size)
{
    struct exec_pool *p = pool_alloc(cl, n, size);
    if (!p)
        return NULL;
    cl_int rc = CL_SUCCESS;
    p->queue = cl->clCreateCommandQueue(ctx, dev, 0, &rc);
    if (p->queue)
        p->mem = cl->clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, n * size, NULL,
                                    &rc);
    if (p->mem)
        p->base = cl->clEnqueueMapBuffer(p->queue, p->mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0,
                                         n * size, 0, NULL, NULL, &rc);
    if (!p->base) {
        vocl_debug("pool of a context: none (%d); the node's pool serves it", rc);
        exec_pool_free(p);
        return NULL;
    }
    for (unsigned i = 0; i < n; i++)
        p->buf[i].mem = (uint8_t *)p->base + i * size;
    vocl_debug("pool of a context: %u buffers of %zu KiB, the driver's own memory", n, size >> 10);
    return p;
}

static void buf_wait(struct exec_pool *p, struct pool_buf *b)
{
    uint64_t start = vocl_now_ns();
    while (atomic_load(&b->held) && !b->dead)
        vocl_backoff(start, 20000);
    if (b->busy) {
        p->cl->clWaitForEvents(1, &b->busy);
        p->cl->clReleaseEvent(b->busy);
        b->busy = NULL;
    }
}

void exec_pool_free(struct exec_pool *p)
{
    if (!p)
        return;
    for (unsigned i = 0; i < p->n; i++) {
        buf_wait(p, &p->buf[i]);
        if (!p->buf[i].own)
            continue; /* (the driver's memory: given back below) */
        if (p->pinned)
            munlock(p->buf[i].mem, p->size);
        free(p->buf[i].mem);
    }
    if (p->base && !p->lost)
        p->cl->clEnqueueUnmapMemObject(p->queue, p->mem, p->base, 0, NULL, NULL);
    if (p->queue)
        p->cl->clFinish(p->queue);
    if (p->mem && !p->lost)
        p->cl->clReleaseMemObject(p->mem);
    if (p->queue) {
        p->cl->clReleaseCommandQueue(p->queue);
        vocl_debug("pool of a context: freed");
    }
    pthread_mutex_destroy(&p->lock);
    free(p);
}

/* Whether b is free now: not taken, not sending, its device copy done. */
static bool buf_free(struct exec_pool *p, struct pool_buf *b)
{
    cl_int st = CL_COMPLETE;
    if (atomic_load(&b->held))
        return false;
    if (b->busy && p->cl->clGetEventInfo(b->busy, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st),
                                         &st, NULL) == CL_SUCCESS &&
        st > CL_COMPLETE)
        return false;
    if (b->busy) {
        p->cl->clReleaseEvent(b->busy);
        b->busy = NULL;
    }
    return true;
}

/* Whether no buffer of p is in use any more: it can be freed at once. */
static bool pool_idle(struct exec_pool *p)
{
    for (unsigned i = 0; i < p->n; i++)
        if (!buf_free(p, &p->buf[i]))
            return false;
    return true;
}

/* --- the pools of contexts -------------------------------------------------------------------- */

/* The pool of ctx: its entry's, or a new one (its queue on dev) in a free
 * entry; NULL where there is none (the node's serves). */
static struct exec_pool *ctx_pool(struct exec_node *node, cl_context ctx, cl_device_id dev)
{
    const struct vocl_native_api *cl = node->cl;
    if (!node->xfer.driver_staging)
        return NULL;
    struct exec_ctx_pool *free_entry = NULL;
    for (unsigned i = 0; i < EXEC_CTX_POOLS; i++) {
        struct exec_ctx_pool *e = &node->ctx_pools[i];
        if (e->ctx == ctx)
            return e->pool;
        if (!e->ctx && !free_entry)
            free_entry = e;
    }
    if (!free_entry)
        return NULL; /* (more contexts than pools of contexts) */
    /* Tried once per context: where the driver cannot, the node's pool serves. */
    free_entry->ctx = ctx;
    free_entry->pool = exec_pool_new_driver(cl, ctx, dev, exec_pool_n(node), node->xfer.pool_size);
    return free_entry->pool;
}

struct exec_pool *exec_queue_pool(struct exec_node *node, cl_command_queue queue)
{
    const struct vocl_native_api *cl = node->cl;
    cl_context ctx;
    cl_device_id dev;
    struct exec_pool *own = NULL;
    if (node->xfer.driver_staging &&
        cl->clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof(ctx), &ctx, NULL) == CL_SUCCESS &&
        cl->clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof(dev), &dev, NULL) == CL_SUCCESS)
        own = ctx_pool(node, ctx, dev);
    return own ? own : exec_node_pool(node);
}

/*
 * A GPU's context gets its pool as soon as it is made, once the reply has
 * gone (exec_after_reply): on the H200 making it (a pinned buffer, a queue
 * and a map) took 8 ms, which a first transfer waited for inside the
 * application's timed work (docs/report/gpu/).  A CPU device's memory is
 * host memory, which a pool does not speed up: its pool waits for a
 * transfer that needs it, as before.
 */
void exec_ctx_pool_early(struct exec_session *s, cl_context ctx, cl_device_id dev)
{
    const struct exec_node *node = s->node;
    cl_device_type type = CL_DEVICE_TYPE_CPU; /* (a device the node does not list: as before) */
    for (cl_uint i = 0; i < node->ndev; i++)
        if (node->devs[i] == dev)
            type = node->types[i];
    if (!node->xfer.driver_staging || s->in_process || (type & CL_DEVICE_TYPE_CPU))
        return;
    s->pool_due.ctx = ctx;
    s->pool_due.dev = dev;
}

void exec_ctx_pool_due(struct exec_session *s)
{
    if (!s->pool_due.ctx)
        return;
    ctx_pool(s->node, s->pool_due.ctx, s->pool_due.dev);
    s->pool_due.ctx = NULL;
}

void exec_ctx_pool_drop(struct exec_node *node, cl_context ctx)
{
    for (unsigned i = 0; i < EXEC_CTX_POOLS; i++) {
        struct exec_ctx_pool *e = &node->ctx_pools[i];
        if (e->ctx != ctx)
            continue;
        /* Its buffers may still be sending, or copying: freed once idle
         * (exec_reap), never waited for here. */
        if (e->pool) {
            e->pool->retired_next = node->retired;
            node->retired = e->pool;
        }
        *e = (struct exec_ctx_pool){0};
    }
}

static uint8_t *take(struct exec_pool *p, unsigned *slot)
{
    struct pool_buf *b = &p->buf[p->next];
    *slot = p->next;
    p->next = (p->next + 1) % p->n;
    atomic_store(&b->held, 1);
    return b->mem;
}

uint8_t *exec_pool_try(struct exec_pool *p, unsigned *slot)
{
    return buf_free(p, &p->buf[p->next]) ? take(p, slot) : NULL;
}

uint8_t *exec_pool_take_after(struct exec_pool *p, unsigned *slot, cl_event gate, cl_event *wait)
{
    struct pool_buf *b = &p->buf[p->next];
    struct pool_heir *h = malloc(sizeof(*h));
    uint8_t *mem = NULL;
    *wait = NULL;
    if (!h || p->cl->clRetainEvent(gate) != CL_SUCCESS) {
        free(h);
        return NULL;
    }
    pthread_mutex_lock(&p->lock);
    if (b->dead) {
        /* (nothing: never given back) */
    } else if (!atomic_load(&b->held)) {
        atomic_store(&b->held, 1);
        *wait = b->busy; /* (its reference, now the caller's) */
        b->busy = NULL;
        mem = b->mem;
    } else {
        *h = (struct pool_heir){.cl = p->cl, .gate = gate, .mem = b->mem};
        if (b->last_heir)
            b->last_heir->next = h;
        else
            b->heirs = h;
        b->last_heir = h;
        h = NULL;
        *wait = gate;
        mem = b->mem;
    }
    pthread_mutex_unlock(&p->lock);
    if (h) {
        p->cl->clReleaseEvent(gate);
        free(h);
    } else {
        p->cl->clRetainEvent(gate); /* (the caller's reference to *wait) */
    }
    if (mem) {
        *slot = p->next;
        p->next = (p->next + 1) % p->n;
    }
    return mem;
}

/* An heir's gate, set to status and let go (h freed). */
static void heir_go(struct pool_heir *h, cl_int status)
{
    h->cl->clSetUserEventStatus(h->gate, status);
    h->cl->clReleaseEvent(h->gate);
    free(h);
}

/* The buffer's last device copy, which its heir waited for, is done. */
static void heir_after(cl_event ev, cl_int status, void *arg)
{
    (void)ev, (void)status;
    heir_go(arg, CL_COMPLETE);
}

/* b's holder gives it up, its last device copy after (NULL: none): it
 * passes to its first heir (once after completes), or is free. */
static void give_up(struct exec_pool *p, struct pool_buf *b, cl_event after)
{
    pthread_mutex_lock(&p->lock);
    struct pool_heir *h = b->heirs;
    bool same = h && h->mem == b->mem;
    if (h) {
        b->heirs = h->next;
        if (!b->heirs)
            b->last_heir = NULL;
    } else if (!b->dead) {
        if (after && p->cl->clRetainEvent(after) == CL_SUCCESS)
            b->busy = after;
        atomic_store(&b->held, 0);
    }
    pthread_mutex_unlock(&p->lock);
    if (!h)
        return;
    if (!same)
        heir_go(h, CL_OUT_OF_RESOURCES); /* its memory was lost meanwhile: its command fails */
    else if (!after)
        heir_go(h, CL_COMPLETE);
    else if (exec_watch(p->cl, after, false, heir_after, h) != CL_SUCCESS)
        heir_go(h, CL_OUT_OF_RESOURCES); /* (not to be waited for here) */
}

void exec_pool_busy(struct exec_pool *p, unsigned slot, cl_event ev)
{
    give_up(p, &p->buf[slot], ev);
}

void exec_pool_give(struct exec_pool *p, unsigned slot)
{
    give_up(p, &p->buf[slot], NULL);
}

void exec_pool_lose(struct exec_pool *p, unsigned slot)
{
    /* The lost block is never freed (nor the driver's buffer it is part
     * of); the slot goes on with a block of its own, not locked.  Its
     * heirs were given the lost block: each one's command fails. */
    struct pool_buf *b = &p->buf[slot];
    void *m = NULL;
    if (posix_memalign(&m, 4096, p->size)) {
        vocl_error("a staging buffer is lost, and no memory to replace it: it is held for good");
        pthread_mutex_lock(&p->lock);
        b->dead = true;
        struct pool_heir *h = b->heirs;
        b->heirs = b->last_heir = NULL;
        pthread_mutex_unlock(&p->lock);
        for (struct pool_heir *next; h; h = next) {
            next = h->next;
            heir_go(h, CL_OUT_OF_RESOURCES);
        }
        return;
    }
    pthread_mutex_lock(&p->lock);
    if (!b->own)
        p->lost = true;
    else if (p->pinned)
        munlock(b->mem, p->size); /* (its pages need not stay in memory) */
    b->mem = m;
    b->own = true;
    pthread_mutex_unlock(&p->lock);
    give_up(p, b, NULL);
}

/* --- host memory kept until a device command is done with it ---------------------------------- */

int exec_keep(struct exec_node *node, cl_event ev, void *mem)
{
    if (node->nkept == node->capkept) {
        size_t cap = node->capkept ? 2 * node->capkept : 16;
        struct exec_kept *k = realloc(node->kept, cap * sizeof(*k));
        if (!k)
            return -1;
        node->kept = k;
        node->capkept = cap;
    }
    if (node->cl->clRetainEvent(ev) != CL_SUCCESS)
        return -1;
    node->kept[node->nkept++] = (struct exec_kept){ev, mem};
    return 0;
}

void exec_reap(struct exec_node *node, bool wait)
{
    const struct vocl_native_api *cl = node->cl;
    for (struct exec_pool **pp = &node->retired; *pp;) {
        struct exec_pool *p = *pp;
        if (wait || pool_idle(p)) {
            *pp = p->retired_next;
            exec_pool_free(p);
        } else {
            pp = &p->retired_next;
        }
    }
    size_t j = 0;
    for (size_t i = 0; i < node->nkept; i++) {
        struct exec_kept *k = &node->kept[i];
        cl_int st = CL_QUEUED;
        if (wait)
            cl->clWaitForEvents(1, &k->ev);
        if (cl->clGetEventInfo(k->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL) !=
                CL_SUCCESS ||
            st <= CL_COMPLETE) {
            cl->clReleaseEvent(k->ev);
            exec_host_free(k->mem);
        } else {
            node->kept[j++] = *k;
        }
    }
    node->nkept = j;
}
