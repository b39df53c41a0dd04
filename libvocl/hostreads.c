/*
 * hostreads.c - the host memory that non-blocking reads are still to fill,
 * and the non-blocking buffer writes that send such memory once it is filled.
 *
 * A non-blocking read's data lands in the application's memory whenever a
 * thread drives its proxy (transport.c); a write that sends that memory and
 * comes after the read (its wait list, its queue's order) must send what
 * the read brought.  Only a write whose memory overlaps such a read has to
 * care (two buffers' transfers through different memory are unrelated), and
 * a non-blocking one may not wait for the read in the enqueueing thread: the
 * read may wait for a user event that thread sets next.  So such a write (of
 * a buffer, a rectangle of one, or an image) is enqueued at once as a copy
 * from a buffer of its own, held by a user event, and a thread of its own
 * sends the memory (its rows packed) to that buffer once the read has landed
 * and then lets the copy go.
 */
#include "vocl.h"

#include <stdlib.h>
#include <string.h>

struct host_read {
    struct vocl_proxy *px;
    const void *queue; /* its chunks' queue (transport.c) */
    uint64_t ticket;   /* its last chunk */
    uintptr_t lo, hi;  /* the host memory it fills: [lo, hi) */
};

static pthread_mutex_t reads_lock = PTHREAD_MUTEX_INITIALIZER;
static struct host_read *reads; /* under reads_lock */
static size_t nreads, capreads;
static size_t prune_at = 64; /* under reads_lock: the count at which landed reads are forgotten */

static size_t reads_due(const void *p, size_t n, struct host_read **due);

void vocl_host_read_posted(struct vocl_proxy *px, const void *queue, uint64_t ticket,
                           const void *p, size_t n)
{
    if (!ticket || !p || !n || px->local)
        return;
    pthread_mutex_lock(&reads_lock);
    if (nreads == capreads) {
        size_t cap = capreads ? 2 * capreads : 16;
        struct host_read *v = realloc(reads, cap * sizeof(*v));
        if (v) {
            reads = v;
            capreads = cap;
        }
    }
    /* (Out of memory: the read is not known here, as before this file.) */
    if (nreads < capreads)
        reads[nreads++] = (struct host_read){.px = px, .queue = queue, .ticket = ticket,
                                             .lo = (uintptr_t)p, .hi = (uintptr_t)p + n};
    bool prune = nreads >= prune_at;
    if (prune)
        prune_at = SIZE_MAX; /* (one thread prunes) */
    pthread_mutex_unlock(&reads_lock);
    if (!prune)
        return;
    /* Reads into memory no write sends are never looked at otherwise: those
     * that landed are forgotten now and then (all of memory overlaps all). */
    struct host_read *due;
    size_t left = reads_due(NULL, SIZE_MAX, &due);
    free(due);
    pthread_mutex_lock(&reads_lock);
    prune_at = (left == (size_t)-1 ? nreads : 2 * nreads) + 64;
    pthread_mutex_unlock(&reads_lock);
}

/* Whether r's data is still on its way: transport.c's question about an
 * event of r's queue made right after r (its chunks, and those of its
 * queue's earlier reads).  No lock of ours held: a pass of progress may run
 * the application's callbacks. */
static bool read_pending(const struct host_read *r)
{
    struct vocl_event ev = {.obj = {.type = VOCL_T_EVENT, .px = r->px,
                                    .parent = (struct vocl_obj *)(uintptr_t)r->queue}};
    atomic_init(&ev.data_ticket, r->ticket);
    return vocl_event_data_pending(&ev.obj);
}

/*
 * The reads still on their way into [p, p + n), in *due (malloc'd; NULL
 * when none); their count, or (size_t)-1 out of memory.  Those that have
 * landed are forgotten.
 */
static size_t reads_due(const void *p, size_t n, struct host_read **due)
{
    uintptr_t lo = (uintptr_t)p, hi = n > UINTPTR_MAX - lo ? UINTPTR_MAX : lo + n;
    size_t k = 0;
    *due = NULL;
    pthread_mutex_lock(&reads_lock);
    for (size_t i = 0; i < nreads; i++)
        k += reads[i].lo < hi && lo < reads[i].hi;
    struct host_read *v = k ? malloc(k * sizeof(*v)) : NULL;
    size_t j = 0;
    for (size_t i = 0; v && i < nreads; i++)
        if (reads[i].lo < hi && lo < reads[i].hi)
            v[j++] = reads[i];
    pthread_mutex_unlock(&reads_lock);
    if (k && !v)
        return (size_t)-1;
    size_t left = 0;
    for (size_t i = 0; i < k; i++) {
        if (read_pending(&v[i])) {
            v[left++] = v[i];
            continue;
        }
        pthread_mutex_lock(&reads_lock);
        for (size_t x = 0; x < nreads; x++)
            if (reads[x].px == v[i].px && reads[x].queue == v[i].queue &&
                reads[x].ticket == v[i].ticket && reads[x].lo == v[i].lo) {
                reads[x] = reads[--nreads];
                break;
            }
        pthread_mutex_unlock(&reads_lock);
    }
    if (!left) {
        free(v);
        v = NULL;
    }
    *due = v;
    return left;
}

/* Lands the reads of due, holding nothing; the first failure. */
static cl_int land(const struct host_read *due, size_t n)
{
    cl_int err = CL_SUCCESS;
    for (size_t i = 0; i < n; i++) {
        cl_int e = vocl_xport_landed(due[i].px, due[i].queue, due[i].ticket);
        if (err == CL_SUCCESS)
            err = e;
    }
    return err;
}

void vocl_call_reads_host(struct vocl_call *c, const void *p, size_t n)
{
    if (c->err)
        return;
    struct host_read *due;
    size_t k = reads_due(p, n, &due);
    if (k == (size_t)-1) {
        vocl_call_error(c, CL_OUT_OF_HOST_MEMORY);
        return;
    }
    /* (A read that failed is reported by this call, the synchronisation it becomes.) */
    cl_int err = land(due, k);
    free(due);
    if (err != CL_SUCCESS)
        vocl_call_error(c, err);
}

/* --- writes that send memory a read is still to fill ------------------------------------------- */

struct deferred {
    cl_context ctx; /* held */
    cl_device_id dev;
    cl_mem tmp;     /* held: the copy's source, the write's rows packed */
    cl_event gate;  /* held: the copy waits for it */
    struct vocl_host_rows rows;
    size_t ndue;
    struct host_read due[];
};

static size_t packed_size(const struct vocl_host_rows *r)
{
    return r->row_bytes * r->rows * r->slices;
}

static bool packed(const struct vocl_host_rows *r)
{
    return (r->rows == 1 || r->row_pitch == r->row_bytes) &&
           (r->slices == 1 || r->slice_pitch == r->row_bytes * r->rows);
}

/* The rows of r, packed (p itself when they are; else malloc'd, or NULL). */
static const void *pack(const struct vocl_host_rows *r)
{
    if (packed(r))
        return r->p;
    char *out = malloc(packed_size(r));
    for (size_t z = 0; out && z < r->slices; z++)
        for (size_t y = 0; y < r->rows; y++)
            memcpy(out + (z * r->rows + y) * r->row_bytes,
                   (const char *)r->p + z * r->slice_pitch + y * r->row_pitch, r->row_bytes);
    return out;
}

static void *deferred_run(void *arg)
{
    struct deferred *d = arg;
    cl_int err = land(d->due, d->ndue);
    const void *data = err == CL_SUCCESS ? pack(&d->rows) : NULL;
    if (err == CL_SUCCESS && !data)
        err = CL_OUT_OF_HOST_MEMORY;
    if (data) {
        /* A queue of its own: the application's may hold the copy behind the gate. */
        cl_command_queue q = clCreateCommandQueueWithProperties(d->ctx, d->dev, NULL, &err);
        if (q) {
            err = clEnqueueWriteBuffer(q, d->tmp, CL_TRUE, 0, packed_size(&d->rows), data, 0,
                                       NULL, NULL);
            clReleaseCommandQueue(q);
        }
        if (data != d->rows.p)
            free((void *)data);
    }
    if (err != CL_SUCCESS)
        vocl_warn("a non-blocking write of memory a read was to fill failed (%d)", err);
    clSetUserEventStatus(d->gate, err == CL_SUCCESS ? CL_COMPLETE
                                  : err < 0         ? err
                                                    : CL_OUT_OF_RESOURCES);
    clReleaseEvent(d->gate);
    clReleaseMemObject(d->tmp);
    clReleaseContext(d->ctx);
    free(d);
    return NULL;
}

/* The command that moves the packed rows from tmp to where w writes. */
static cl_int copy_in(cl_command_queue q, cl_mem tmp, const struct vocl_deferred_write *w,
                      cl_uint n, const cl_event *wl, cl_event *event)
{
    const size_t zero[3] = {0, 0, 0};
    switch (w->type) {
    case CL_COMMAND_WRITE_BUFFER:
        return clEnqueueCopyBuffer(q, tmp, w->dst, 0, w->origin[0], packed_size(&w->rows), n, wl,
                                   event);
    case CL_COMMAND_WRITE_BUFFER_RECT:
        return clEnqueueCopyBufferRect(q, tmp, w->dst, zero, w->origin, w->region,
                                       w->rows.row_bytes, w->rows.row_bytes * w->rows.rows,
                                       w->row_pitch, w->slice_pitch, n, wl, event);
    default:
        return clEnqueueCopyBufferToImage(q, tmp, w->dst, 0, w->origin, w->region, n, wl, event);
    }
}

bool vocl_write_deferred(struct vocl_obj *q, const struct vocl_deferred_write *w, cl_uint nwl,
                         const cl_event *wl, cl_event *event, cl_int *ret)
{
    const struct vocl_host_rows *r = &w->rows;
    size_t span = (r->slices - 1) * r->slice_pitch + (r->rows - 1) * r->row_pitch + r->row_bytes;
    struct host_read *due;
    size_t k = reads_due(r->p, span, &due);
    if (k == 0 || k == (size_t)-1)
        return false; /* (out of memory: the write waits for them, as a blocking one) */
    cl_int err = CL_SUCCESS;
    struct deferred *d = calloc(1, sizeof(*d) + k * sizeof(*due));
    cl_event *wl2 = malloc((nwl + 1) * sizeof(*wl2));
    if (!d || !wl2) {
        free(d), free(wl2), free(due);
        return false;
    }
    memcpy(d->due, due, k * sizeof(*due));
    free(due);
    d->ndue = k;
    d->ctx = (cl_context)q->context;
    d->dev = (cl_device_id)q->parent;
    d->rows = *r;
    d->gate = clCreateUserEvent(d->ctx, &err);
    if (d->gate)
        d->tmp = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, packed_size(r), NULL, &err);
    if (d->tmp) {
        if (nwl)
            memcpy(wl2, wl, nwl * sizeof(*wl2));
        wl2[nwl] = d->gate;
        err = copy_in((cl_command_queue)q, d->tmp, w, nwl + 1, wl2, event);
    }
    free(wl2);
    if (err == CL_SUCCESS) {
        if (event) /* (a write, to whoever asks, though a copy does it) */
            vocl_info_know(vocl_lookup(*event, VOCL_T_EVENT), VOCL_OP_clGetEventInfo,
                           CL_EVENT_COMMAND_TYPE, &w->type, sizeof(w->type));
        clRetainContext(d->ctx);
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, deferred_run, d) != 0)
            deferred_run(d); /* no thread: this one waits, as before */
        pthread_attr_destroy(&attr);
        *ret = CL_SUCCESS;
        return true;
    }
    if (d->gate) {
        clSetUserEventStatus(d->gate, CL_OUT_OF_RESOURCES);
        clReleaseEvent(d->gate);
    }
    if (d->tmp)
        clReleaseMemObject(d->tmp);
    free(d);
    *ret = err;
    return true;
}
