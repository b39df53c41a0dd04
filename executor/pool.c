/*
 * pool.c - the proxy's staging buffers, and host memory that must outlive
 * the request that filled it.
 *
 * A pool holds N page-aligned buffers of B bytes, locked in memory where the
 * system allows it (pinned: the device's DMA engine and the network can use
 * them without bouncing).  They are handed out circularly; a buffer whose
 * device copy is still running is handed out only once that copy completes,
 * so the network stage can run up to N chunks ahead of the device stage.
 */
#include "proxyd.h"

#include "backoff.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct pool_buf {
    uint8_t *mem;
    cl_event busy;   /* the last device command using the buffer, or NULL */
    atomic_int held; /* queued on the stream: not free until sent */
};

struct proxyd_pool {
    const struct vocl_native_api *cl;
    size_t size;
    unsigned n, next;
    bool pinned;
    struct pool_buf buf[];
};

struct proxyd_pool *proxyd_pool_new(const struct vocl_native_api *cl, unsigned n, size_t size)
{
    struct proxyd_pool *p = calloc(1, sizeof(*p) + n * sizeof(p->buf[0]));
    if (!p)
        return NULL;
    p->cl = cl;
    p->size = size;
    p->n = n;
    p->pinned = true;
    for (unsigned i = 0; i < n; i++) {
        void *m = NULL;
        if (posix_memalign(&m, 4096, size)) {
            proxyd_pool_free(p);
            return NULL;
        }
        /* Touch every page now: the pool is resident from the start, and
         * the first transfer does not pay for page faults. */
        memset(m, 0, size);
        if (mlock(m, size))
            p->pinned = false;
        p->buf[i].mem = m;
    }
    if (!p->pinned)
        vocl_info("staging buffers not locked in memory (RLIMIT_MEMLOCK): transfers still work");
    vocl_debug("pool: %u buffers of %zu KiB%s", n, size >> 10, p->pinned ? ", pinned" : "");
    return p;
}

static void buf_wait(struct proxyd_pool *p, struct pool_buf *b)
{
    uint64_t start = vocl_now_ns();
    while (atomic_load(&b->held))
        vocl_backoff(start, 20000);
    if (b->busy) {
        p->cl->clWaitForEvents(1, &b->busy);
        p->cl->clReleaseEvent(b->busy);
        b->busy = NULL;
    }
}

void proxyd_pool_free(struct proxyd_pool *p)
{
    if (!p)
        return;
    for (unsigned i = 0; i < p->n; i++) {
        buf_wait(p, &p->buf[i]);
        if (p->buf[i].mem && p->pinned)
            munlock(p->buf[i].mem, p->size);
        free(p->buf[i].mem);
    }
    free(p);
}

uint8_t *proxyd_pool_take(struct proxyd_pool *p, unsigned *slot)
{
    struct pool_buf *b = &p->buf[p->next];
    *slot = p->next;
    p->next = (p->next + 1) % p->n;
    buf_wait(p, b);
    return b->mem;
}

void proxyd_pool_busy(struct proxyd_pool *p, unsigned slot, cl_event ev)
{
    struct pool_buf *b = &p->buf[slot];
    buf_wait(p, b);
    if (ev && p->cl->clRetainEvent(ev) == CL_SUCCESS)
        b->busy = ev;
}

atomic_int *proxyd_pool_hold(struct proxyd_pool *p, unsigned slot)
{
    atomic_store(&p->buf[slot].held, 1);
    return &p->buf[slot].held;
}

/* --- host memory kept until a device command is done with it ---------------------------------- */

int proxyd_keep(struct proxyd_node *node, cl_event ev, void *mem)
{
    if (node->nkept == node->capkept) {
        size_t cap = node->capkept ? 2 * node->capkept : 16;
        struct proxyd_kept *k = realloc(node->kept, cap * sizeof(*k));
        if (!k)
            return -1;
        node->kept = k;
        node->capkept = cap;
    }
    if (node->cl->clRetainEvent(ev) != CL_SUCCESS)
        return -1;
    node->kept[node->nkept++] = (struct proxyd_kept){ev, mem};
    return 0;
}

void proxyd_reap(struct proxyd_node *node, bool wait)
{
    const struct vocl_native_api *cl = node->cl;
    size_t j = 0;
    for (size_t i = 0; i < node->nkept; i++) {
        struct proxyd_kept *k = &node->kept[i];
        cl_int st = CL_QUEUED;
        if (wait)
            cl->clWaitForEvents(1, &k->ev);
        if (cl->clGetEventInfo(k->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL) !=
                CL_SUCCESS ||
            st <= CL_COMPLETE) {
            cl->clReleaseEvent(k->ev);
            free(k->mem);
        } else {
            node->kept[j++] = *k;
        }
    }
    node->nkept = j;
}
