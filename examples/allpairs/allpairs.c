/*
 * allpairs.c: the all-pairs runtime (include/allpairs.h).
 *
 * Threads, each owning one resource (Rocket's design on OpenCL):
 *  - a worker per device: takes tasks (blocks of the pair matrix) from its
 *    deque, splits them, steals when it has none, and starts a job per pair
 *    while the device has fewer than `jobs` in flight;
 *  - one I/O thread reads files; `parsers` threads parse them;
 *  - a submitter per device enqueues everything for its device, in the
 *    order it was asked to, on three in-order queues (to the device,
 *    kernels, from the device) joined by events; it never waits for them;
 *  - event callbacks only hand the event over to one completion thread,
 *    which moves slots to readable, releases references, postprocesses
 *    results and wakes whoever waits.
 * One lock guards all the state; no OpenCL call is made while holding it,
 * and nobody waits while holding it (condition waits release it).
 *
 * A job (i, j) on device d takes a reference on the slots of i and j in d's
 * cache.  A slot missing from the cache is filled, in Rocket's order: from
 * the host cache (a write), else from another device that holds it (its
 * point of contact names candidates; two copies through an export buffer
 * of the destination, so that only one slot's bytes leave the source
 * device), else from its file (read, parse, write, preprocess kernel, and a
 * read into the host cache).  The job's compare is enqueued once both slots
 * have their fill enqueued, waiting on the fills' events; a job whose slot
 * is still waiting for its file or for the host cache waits in that slot's
 * list of waiters rather than loading it twice.
 */
#define _POSIX_C_SOURCE 200809L
#undef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#include "allpairs.h"

#include "apcore.h"
#include "clutil.h"
#include "copycost.h"

#include <CL/cl.h>

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define STAGING 4 /* device buffers for parsed items, per device */
#define EXPORTS 4 /* export buffers (third level), per destination device */

/* ---- what flows between the threads ---- */

struct job {
    uint32_t i, j, dev;
    int32_t slot[2];
    uint32_t pending; /* of its slots, those whose fill is not yet enqueued */
    uint32_t result;  /* its result buffer on the device */
    cl_event kernel;  /* the compare */
    struct job *link[2]; /* in the waiters of slot[0] and of slot[1] */
    /* Every job started and not yet finished, so that those a failure
     * strands (waiting for a fill, or their compare never enqueued) are
     * freed at the end. */
    struct job *prev, *next;
    unsigned char data[]; /* the result, result_size bytes */
};

enum op_kind { OP_LOAD, OP_H2D, OP_D2D, OP_COMPARE };

/* One thing for a submitter to enqueue. */
struct op {
    enum op_kind kind;
    int32_t slot;      /* the slot filled (not OP_COMPARE) */
    uint32_t item;     /* OP_LOAD: the item preprocessed */
    int32_t host_slot; /* OP_LOAD: where its copy goes (-1: none); OP_H2D: its source */
    uint32_t src_dev;  /* OP_D2D */
    int32_t src_slot;
    void *parsed; /* OP_LOAD, freed once preprocessed */
    struct job *job;
    struct op *next;
};

/* An item on its way from its file to a device. */
struct load {
    uint32_t item, dev;
    int32_t slot, host_slot;
    void *file, *parsed;
    size_t size;
    struct load *next;
};

enum done_kind { DONE_SLOT, DONE_HOST, DONE_SOURCE, DONE_JOB };

/* An event callback's message to the completion thread. */
struct done {
    enum done_kind kind;
    struct engine *e;
    cl_int status;
    cl_event event;
    uint32_t dev;
    int32_t slot, host_slot; /* DONE_SLOT: the host slot it was copied from, or -1 */
    void *parsed;
    struct job *job;
    struct done *next;
};

/* A first-in first-out list of any of these (all have `next`). */
#define FIFO(type)                                                                                 \
    struct {                                                                                       \
        type *head, *tail;                                                                         \
    }
#define FIFO_PUSH(f, x)                                                                            \
    do {                                                                                           \
        (x)->next = NULL;                                                                          \
        if ((f).tail)                                                                              \
            (f).tail->next = (x);                                                                  \
        else                                                                                       \
            (f).head = (x);                                                                        \
        (f).tail = (x);                                                                            \
    } while (0)
#define FIFO_POP(f, x)                                                                             \
    do {                                                                                           \
        (x) = (f).head;                                                                            \
        if (x) {                                                                                   \
            (f).head = (x)->next;                                                                  \
            if (!(f).head)                                                                         \
                (f).tail = NULL;                                                                   \
        }                                                                                          \
    } while (0)

/* Per device slot: the OpenCL side of ap_slot. */
struct dslot {
    cl_mem mem;         /* a sub-buffer of the device's cache buffer */
    cl_event ready;     /* its last fill; owned here until the next */
    struct job *waiters; /* jobs waiting for its fill to be enqueued */
    bool queued;         /* its fill is in the device's op list (PENDING) */
};

/* A device slot waiting for a host slot that is being loaded. */
struct host_waiter {
    uint32_t dev;
    int32_t slot;
    struct host_waiter *next;
};

struct export {
    cl_mem mem;
    cl_event last; /* the last copy out of it */
};

struct device {
    uint32_t index;
    cl_device_id id;
    struct app_location loc; /* where it is (cl_vocl_device_location) */
    cl_command_queue to_dev, exec, from_dev;
    cl_kernel preprocess, compare; /* used by the submitter only */
    cl_mem cache;
    struct ap_cache slots;
    struct dslot *dslots;
    cl_mem staging[STAGING];
    cl_event staged[STAGING]; /* the last preprocess that read each */
    unsigned next_staging;
    struct export exports[EXPORTS];
    unsigned next_export;
    cl_mem *results; /* one per job in flight */
    uint32_t *free_results, n_free_results;
    struct ap_deque deque;
    uint32_t in_flight;
    uint64_t rng;
    uint32_t *order; /* steal order, p - 1 */
    FIFO(struct op) ops;
    pthread_cond_t work_cond; /* worker: a job ended */
    pthread_cond_t op_cond;   /* submitter: an op came */
    pthread_t worker, submitter;
};

/* The trace: spans of every thread, in memory until the end. */
struct span {
    const char *name;
    uint32_t tid;
    double t0, t1;
};

struct engine {
    const struct allpairs_app *app;
    struct allpairs_config cfg;
    struct allpairs_stats st;
    uint32_t p;
    uint32_t *nodes; /* each device's node, for the steal order */
    uint64_t total_pairs, done_pairs;
    double t_start, t_end;

    cl_context context;
    cl_program program;
    struct device *devs;
    size_t slot_stride;

    /* The host cache: host_slots slots of item_size bytes in one mapped
     * CL_MEM_ALLOC_HOST_PTR buffer. */
    cl_mem host_mem;
    unsigned char *host;
    struct ap_cache host_slots;
    struct host_waiter **host_waiters;
    struct ap_contacts contacts;
    struct job *jobs; /* started, not finished (under the lock) */

    pthread_mutex_t lock;
    pthread_cond_t idle_cond; /* idle workers: new tasks */
    pthread_cond_t io_cond, parse_cond, done_cond, main_cond;
    FIFO(struct load) io_queue;
    FIFO(struct load) parse_queue;
    FIFO(struct done) done_queue;
    uint64_t callbacks; /* registered and not yet handled */
    uint32_t idle;      /* workers waiting for tasks */
    bool stop;
    bool drained; /* nothing more will be enqueued */
    char *error;
    size_t error_size;
    bool failed;

    pthread_t io_thread, done_thread, *parsers;
    uint32_t n_parsers;

    /* trace */
    pthread_mutex_t trace_lock;
    struct span *spans;
    size_t n_spans, cap_spans;
    char l3_note[256]; /* --hops auto's decision and figures, for the trace */
};

/* ---- small things ---- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *cl_name(cl_int err)
{
    switch (err) {
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE: return "CL_DEVICE_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_MISALIGNED_SUB_BUFFER_OFFSET: return "CL_MISALIGNED_SUB_BUFFER_OFFSET";
    case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST:
        return "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_CONTEXT: return "CL_INVALID_CONTEXT";
    case CL_INVALID_MEM_OBJECT: return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_ARG_INDEX: return "CL_INVALID_ARG_INDEX";
    case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_EVENT_WAIT_LIST: return "CL_INVALID_EVENT_WAIT_LIST";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_OPERATION: return "CL_INVALID_OPERATION";
    default: return "OpenCL error";
    }
}

/* Records the first failure and stops every thread.  Under the lock. */
static void fail_locked(struct engine *e, const char *format, ...)
    __attribute__((format(printf, 2, 3)));
static void fail_locked(struct engine *e, const char *format, ...)
{
    if (!e->failed) {
        va_list args;
        va_start(args, format);
        vsnprintf(e->error, e->error_size, format, args);
        va_end(args);
        e->failed = true;
    }
    e->stop = true;
    pthread_cond_broadcast(&e->idle_cond);
    pthread_cond_broadcast(&e->io_cond);
    pthread_cond_broadcast(&e->parse_cond);
    pthread_cond_broadcast(&e->main_cond);
    for (uint32_t d = 0; d < e->p; d++) {
        pthread_cond_broadcast(&e->devs[d].work_cond);
        pthread_cond_broadcast(&e->devs[d].op_cond);
    }
}

static void fail_cl(struct engine *e, const char *call, cl_int err)
{
    pthread_mutex_lock(&e->lock);
    fail_locked(e, "%s failed: %s (%d)", call, cl_name(err), (int)err);
    pthread_mutex_unlock(&e->lock);
}

/* Calls that may fail in a thread: on failure record it and go on, so that
 * the thread finds e->stop at its next turn. */
#define TRY(e, call)                                                                               \
    do {                                                                                           \
        cl_int try_err_ = (call);                                                                  \
        if (try_err_ != CL_SUCCESS)                                                                \
            fail_cl(e, #call, try_err_);                                                           \
    } while (0)

static void trace_span(struct engine *e, const char *name, uint32_t tid, double t0)
{
    if (!e->cfg.trace)
        return;
    double t1 = now();
    pthread_mutex_lock(&e->trace_lock);
    if (e->n_spans == e->cap_spans) {
        size_t cap = e->cap_spans ? 2 * e->cap_spans : 4096;
        struct span *more = realloc(e->spans, cap * sizeof(*more));
        if (more) {
            e->spans = more;
            e->cap_spans = cap;
        }
    }
    if (e->n_spans < e->cap_spans)
        e->spans[e->n_spans++] = (struct span){name, tid, t0, t1};
    pthread_mutex_unlock(&e->trace_lock);
}

/* Thread ids in the trace. */
static uint32_t tid_worker(uint32_t d) { return 10 + d; }
static uint32_t tid_submitter(const struct engine *e, uint32_t d) { return 10 + e->p + d; }
enum { TID_IO = 1, TID_DONE = 2, TID_PARSER = 3 }; /* parsers: 3 .. 9 */

/* ---- event callbacks ---- */

static void CL_CALLBACK on_event(cl_event event, cl_int status, void *user)
{
    struct done *dn = user;
    struct engine *e = dn->e;
    dn->status = status;
    dn->event = event;
    pthread_mutex_lock(&e->lock);
    FIFO_PUSH(e->done_queue, dn);
    pthread_cond_signal(&e->done_cond);
    pthread_mutex_unlock(&e->lock);
}

/* Hands `event`'s completion to the completion thread as `dn`.  Keeps its
 * own reference on the event (released by the completion thread). */
static void watch(struct engine *e, cl_event event, struct done *dn)
{
    pthread_mutex_lock(&e->lock);
    e->callbacks++;
    pthread_mutex_unlock(&e->lock);
    dn->e = e;
    cl_int err = clRetainEvent(event);
    if (err == CL_SUCCESS)
        err = clSetEventCallback(event, CL_COMPLETE, on_event, dn);
    if (err != CL_SUCCESS) {
        fail_cl(e, "clSetEventCallback", err);
        pthread_mutex_lock(&e->lock);
        e->callbacks--;
        pthread_cond_signal(&e->done_cond);
        pthread_mutex_unlock(&e->lock);
        free(dn);
    }
}

static struct done *new_done(struct engine *e, enum done_kind kind, uint32_t dev, int32_t slot)
{
    struct done *dn = calloc(1, sizeof(*dn));
    if (!dn) {
        pthread_mutex_lock(&e->lock);
        fail_locked(e, "out of memory");
        pthread_mutex_unlock(&e->lock);
        return NULL;
    }
    dn->kind = kind;
    dn->dev = dev;
    dn->slot = slot;
    dn->host_slot = -1;
    return dn;
}

/* ---- the caches (under the lock) ---- */

static void push_op(struct engine *e, uint32_t dev, struct op *op)
{
    FIFO_PUSH(e->devs[dev].ops, op);
    pthread_cond_signal(&e->devs[dev].op_cond);
}

static struct op *new_op(struct engine *e, enum op_kind kind, int32_t slot)
{
    struct op *op = calloc(1, sizeof(*op));
    if (!op)
        fail_locked(e, "out of memory");
    else {
        op->kind = kind;
        op->slot = slot;
        op->host_slot = -1;
    }
    return op;
}

/* The fill of (dev, slot) is now in dev's op list: the jobs that waited for
 * that, and now have both fills there, follow it. */
static void fill_queued(struct engine *e, uint32_t dev, int32_t slot)
{
    struct dslot *ds = &e->devs[dev].dslots[slot];
    struct job *w = ds->waiters;
    ds->waiters = NULL;
    ds->queued = true;
    while (w) {
        struct job *next = w->link[w->slot[0] == slot ? 0 : 1];
        if (--w->pending == 0) {
            struct op *op = new_op(e, OP_COMPARE, -1);
            if (op) {
                op->job = w;
                push_op(e, dev, op);
            }
        }
        w = next;
    }
}

/* Fills (dev, slot), which was just given to item: host cache, another
 * device, or the file. */
static void start_fill(struct engine *e, uint32_t dev, int32_t slot, uint32_t item)
{
    struct device *d = &e->devs[dev];
    ap_cache_ref(&d->slots, slot); /* the filler's, until the fill completes */
    d->dslots[slot].queued = false;

    if (e->cfg.host_slots > 0) {
        e->st.l2_lookups++;
        int32_t hs = ap_cache_find(&e->host_slots, item);
        if (hs >= 0) {
            e->st.l2_hits++;
            struct ap_slot *h = &e->host_slots.slots[hs];
            if (h->state == AP_SLOT_READABLE) {
                ap_cache_ref(&e->host_slots, hs);
                struct op *op = new_op(e, OP_H2D, slot);
                if (op) {
                    op->host_slot = hs;
                    push_op(e, dev, op);
                }
                fill_queued(e, dev, slot);
            } else { /* being loaded for another device: wait for it */
                struct host_waiter *w = malloc(sizeof(*w));
                if (!w) {
                    fail_locked(e, "out of memory");
                    return;
                }
                *w = (struct host_waiter){dev, slot, e->host_waiters[hs]};
                e->host_waiters[hs] = w;
            }
            return;
        }
    }

    if (e->cfg.hops > 0 && e->p > 1) {
        e->st.l3_lookups++;
        uint32_t cand[64];
        uint32_t n = ap_contacts_ask(&e->contacts, item, dev, cand);
        for (uint32_t k = 0; k < n; k++) {
            struct device *c = &e->devs[cand[k]];
            int32_t cs = ap_cache_find(&c->slots, item);
            if (cs < 0 || (c->slots.slots[cs].state != AP_SLOT_WRITING &&
                           c->slots.slots[cs].state != AP_SLOT_READABLE))
                continue;
            e->st.l3_hits++;
            e->st.l3_first_hop += k == 0;
            ap_cache_ref(&c->slots, cs); /* until it has been copied out */
            struct op *op = new_op(e, OP_D2D, slot);
            if (op) {
                op->src_dev = cand[k];
                op->src_slot = cs;
                push_op(e, dev, op);
            }
            fill_queued(e, dev, slot);
            return;
        }
    }

    /* From the file. */
    e->st.loads++;
    int32_t hs = -1;
    if (e->cfg.host_slots > 0) {
        bool hit;
        hs = ap_cache_acquire(&e->host_slots, item, &hit); /* -1: all busy, bypass */
    }
    struct load *ld = calloc(1, sizeof(*ld));
    if (!ld) {
        fail_locked(e, "out of memory");
        return;
    }
    *ld = (struct load){.item = item, .dev = dev, .slot = slot, .host_slot = hs};
    FIFO_PUSH(e->io_queue, ld);
    pthread_cond_signal(&e->io_cond);
}

/* Takes job's reference on the slot of its k-th item. */
static void acquire_item(struct engine *e, struct job *job, int k)
{
    struct device *d = &e->devs[job->dev];
    uint32_t item = k == 0 ? job->i : job->j;
    bool hit;
    int32_t s = ap_cache_acquire(&d->slots, item, &hit);
    if (s < 0) { /* cannot happen: device_slots > 2 jobs */
        fail_locked(e, "device %u: no free cache slot", job->dev);
        return;
    }
    job->slot[k] = s;
    e->st.l1_lookups++;
    e->st.l1_hits += hit;
    /* A fill already in the op list comes before this job's compare. */
    if (d->slots.slots[s].state == AP_SLOT_PENDING && (!hit || !d->dslots[s].queued)) {
        job->pending++;
        job->link[k] = d->dslots[s].waiters;
        d->dslots[s].waiters = job;
        if (!hit)
            start_fill(e, job->dev, s, item);
    }
}

/* Whether dev's cache can take items i and j now: a slot whose fill has
 * not completed (its callback may come after its job's) or that another
 * device is copying from cannot be evicted, so a job may have to wait. */
static bool can_start(struct engine *e, uint32_t dev, uint32_t i, uint32_t j)
{
    const struct ap_cache *c = &e->devs[dev].slots;
    uint32_t needed = (ap_cache_find(c, i) < 0) + (ap_cache_find(c, j) < 0), free_slots = 0;
    for (uint32_t s = 0; s < c->count && free_slots < needed; s++)
        free_slots += c->slots[s].refs == 0 && c->slots[s].item != i && c->slots[s].item != j &&
                      (c->slots[s].state == AP_SLOT_EMPTY || c->slots[s].state == AP_SLOT_READABLE);
    return free_slots >= needed;
}

/* Takes a finished job out of e->jobs.  Under the lock. */
static void unlink_job(struct engine *e, struct job *job)
{
    if (job->prev)
        job->prev->next = job->next;
    else
        e->jobs = job->next;
    if (job->next)
        job->next->prev = job->prev;
}

/* Starts the job of pair (i, j) on dev. */
static void start_job(struct engine *e, uint32_t dev, uint32_t i, uint32_t j)
{
    struct device *d = &e->devs[dev];
    struct job *job = calloc(1, sizeof(*job) + e->app->result_size);
    if (!job) {
        fail_locked(e, "out of memory");
        return;
    }
    job->i = i;
    job->j = j;
    job->dev = dev;
    job->next = e->jobs;
    if (e->jobs)
        e->jobs->prev = job;
    e->jobs = job;
    job->result = d->free_results[--d->n_free_results];
    d->in_flight++;
    /* Counts as pending until both items are looked at, so that a fill
     * queued by the first does not release it early. */
    job->pending = 1;
    /* An item already cached first: its reference keeps the other's
     * eviction from choosing its slot. */
    int first = ap_cache_find(&d->slots, i) < 0 && ap_cache_find(&d->slots, j) >= 0;
    acquire_item(e, job, first);
    acquire_item(e, job, !first);
    if (--job->pending == 0) {
        struct op *op = new_op(e, OP_COMPARE, -1);
        if (op) {
            op->job = job;
            push_op(e, dev, op);
        }
    }
}

/* ---- workers ---- */

struct thread_arg {
    struct engine *e;
    uint32_t index;
};

static void *worker_main(void *arg)
{
    struct engine *e = ((struct thread_arg *)arg)->e;
    uint32_t dev = ((struct thread_arg *)arg)->index;
    struct device *d = &e->devs[dev];
    pthread_mutex_lock(&e->lock);
    while (!e->stop) {
        if (d->in_flight >= e->cfg.jobs) {
            pthread_cond_wait(&d->work_cond, &e->lock); /* back-pressure */
            continue;
        }
        struct ap_task t;
        bool got = ap_deque_pop_newest(&d->deque, &t);
        if (!got) {
            double t0 = now();
            ap_steal_order(dev, e->p, e->nodes, &d->rng, d->order);
            for (uint32_t k = 0; k + 1 < e->p && !got; k++)
                got = ap_deque_pop_oldest(&e->devs[d->order[k]].deque, &t);
            if (got) {
                e->st.steals++;
                pthread_mutex_unlock(&e->lock);
                trace_span(e, "steal", tid_worker(dev), t0);
                pthread_mutex_lock(&e->lock);
            }
        }
        if (!got) {
            if (e->done_pairs >= e->total_pairs)
                break;
            /* Nothing anywhere: wait until someone splits a task (or a
             * little while, in case the last ones are only in flight). */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 20 * 1000 * 1000;
            if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
            }
            e->idle++;
            pthread_cond_timedwait(&e->idle_cond, &e->lock, &ts);
            e->idle--;
            continue;
        }
        if (ap_task_is_leaf(&t)) {
            if (can_start(e, dev, t.r0, t.c0)) {
                start_job(e, dev, t.r0, t.c0);
            } else { /* back on top, until a slot is released */
                ap_deque_push(&d->deque, &t);
                pthread_cond_wait(&d->work_cond, &e->lock);
            }
            continue;
        }
        struct ap_task parts[4];
        unsigned n = ap_task_split(&t, parts);
        /* The first quadrant last, so that it comes out first. */
        for (unsigned k = n; k-- > 0;) {
            if (ap_deque_push(&d->deque, &parts[k]) != 0) {
                fail_locked(e, "out of memory");
                break;
            }
        }
        if (e->idle > 0)
            pthread_cond_broadcast(&e->idle_cond);
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

/* ---- I/O and parsing ---- */

static bool read_file(const char *path, void **data, size_t *size, char *error, size_t error_size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(error, error_size, "cannot open %s: %s", path, strerror(errno));
        return false;
    }
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        unsigned char *more = realloc(buf, cap * 2);
        if (!more) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = more;
        cap *= 2;
    }
    bool ok = buf && !ferror(f);
    if (!ok)
        snprintf(error, error_size, "cannot read %s: %s", path, buf ? strerror(errno) : "no memory");
    fclose(f);
    if (!ok) {
        free(buf);
        return false;
    }
    *data = buf;
    *size = n;
    return true;
}

static void *io_main(void *arg)
{
    struct engine *e = arg;
    pthread_mutex_lock(&e->lock);
    while (!e->stop) {
        struct load *ld;
        FIFO_POP(e->io_queue, ld);
        if (!ld) {
            pthread_cond_wait(&e->io_cond, &e->lock);
            continue;
        }
        pthread_mutex_unlock(&e->lock);
        double t0 = now();
        char path[4096], error[512];
        bool ok = e->app->file_path(e->app->user, ld->item, path, sizeof(path));
        if (!ok)
            snprintf(error, sizeof(error), "item %u: its path is too long", ld->item);
        else
            ok = read_file(path, &ld->file, &ld->size, error, sizeof(error));
        trace_span(e, "read", TID_IO, t0);
        pthread_mutex_lock(&e->lock);
        if (!ok) {
            fail_locked(e, "%s", error);
            free(ld);
            break;
        }
        e->st.bytes_file += ld->size;
        FIFO_PUSH(e->parse_queue, ld);
        pthread_cond_signal(&e->parse_cond);
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

static void *parser_main(void *arg)
{
    struct engine *e = ((struct thread_arg *)arg)->e;
    uint32_t tid = TID_PARSER + ((struct thread_arg *)arg)->index;
    pthread_mutex_lock(&e->lock);
    while (!e->stop) {
        struct load *ld;
        FIFO_POP(e->parse_queue, ld);
        if (!ld) {
            pthread_cond_wait(&e->parse_cond, &e->lock);
            continue;
        }
        pthread_mutex_unlock(&e->lock);
        double t0 = now();
        char error[512] = "";
        ld->parsed = calloc(1, e->app->parsed_size);
        bool ok = ld->parsed && e->app->parse(e->app->user, ld->item, ld->file, ld->size,
                                              ld->parsed, error, sizeof(error));
        free(ld->file);
        trace_span(e, "parse", tid, t0);
        pthread_mutex_lock(&e->lock);
        struct op *op = ok ? new_op(e, OP_LOAD, ld->slot) : NULL;
        if (!ok) {
            char path[4096] = "?";
            e->app->file_path(e->app->user, ld->item, path, sizeof(path));
            fail_locked(e, "%s: %s", path, ld->parsed ? error : "out of memory");
        }
        if (!op) {
            free(ld->parsed);
            free(ld);
            break;
        }
        op->item = ld->item;
        op->host_slot = ld->host_slot;
        op->parsed = ld->parsed;
        push_op(e, ld->dev, op);
        fill_queued(e, ld->dev, ld->slot);
        free(ld);
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

/* ---- submitters ---- */

/* Marks (dev, slot) as being written by `event` (before its callback can
 * run); the slot keeps the event until its next fill, which releases it. */
static void set_writing(struct engine *e, struct device *d, int32_t slot, cl_event event)
{
    pthread_mutex_lock(&e->lock);
    cl_event old = d->dslots[slot].ready;
    d->slots.slots[slot].state = AP_SLOT_WRITING;
    d->dslots[slot].ready = event;
    pthread_mutex_unlock(&e->lock);
    if (old)
        clReleaseEvent(old);
}

/* The fill event of (d, slot) if it is still being written.  Valid while
 * the caller holds a reference on the slot: only a refill, which needs the
 * slot evicted first, releases it. */
static cl_event fill_event(struct engine *e, struct device *d, int32_t slot)
{
    pthread_mutex_lock(&e->lock);
    cl_event ev = d->slots.slots[slot].state == AP_SLOT_WRITING ? d->dslots[slot].ready : NULL;
    pthread_mutex_unlock(&e->lock);
    return ev;
}

static void set_arg(struct engine *e, cl_kernel k, cl_uint index, size_t size, const void *value)
{
    TRY(e, clSetKernelArg(k, index, size, value));
}

static void do_load(struct engine *e, struct device *d, struct op *op)
{
    const struct allpairs_app *app = e->app;
    unsigned k = d->next_staging;
    d->next_staging = (k + 1) % STAGING;
    cl_event written = NULL, kernel = NULL;
    cl_event last = d->staged[k];
    TRY(e, clEnqueueWriteBuffer(d->to_dev, d->staging[k], CL_FALSE, 0, app->parsed_size,
                                op->parsed, last ? 1 : 0, last ? &last : NULL, &written));
    cl_uint item = op->item;
    set_arg(e, d->preprocess, 0, sizeof(cl_mem), &d->staging[k]);
    set_arg(e, d->preprocess, 1, sizeof(cl_mem), &d->dslots[op->slot].mem);
    set_arg(e, d->preprocess, 2, sizeof(cl_uint), &item);
    size_t global = app->preprocess_global, local = app->preprocess_local;
    TRY(e, clEnqueueNDRangeKernel(d->exec, d->preprocess, 1, NULL, &global, local ? &local : NULL,
                                  written ? 1 : 0, written ? &written : NULL, &kernel));
    if (written)
        clReleaseEvent(written);
    if (!kernel) {
        free(op->parsed);
        return;
    }
    if (last)
        clReleaseEvent(last);
    clRetainEvent(kernel);
    d->staged[k] = kernel;
    TRY(e, clFlush(d->to_dev));
    TRY(e, clFlush(d->exec));

    if (op->host_slot >= 0) {
        cl_event copied = NULL;
        TRY(e, clEnqueueReadBuffer(d->from_dev, d->dslots[op->slot].mem, CL_FALSE, 0,
                                   app->item_size, e->host + (size_t)op->host_slot * app->item_size,
                                   1, &kernel, &copied));
        TRY(e, clFlush(d->from_dev));
        struct done *dn = copied ? new_done(e, DONE_HOST, d->index, -1) : NULL;
        if (dn) {
            dn->host_slot = op->host_slot;
            watch(e, copied, dn);
        }
        if (copied)
            clReleaseEvent(copied);
    }
    pthread_mutex_lock(&e->lock);
    e->st.bytes_parsed += app->parsed_size;
    e->st.bytes_l2_out += op->host_slot >= 0 ? app->item_size : 0;
    pthread_mutex_unlock(&e->lock);
    set_writing(e, d, op->slot, kernel);
    struct done *dn = new_done(e, DONE_SLOT, d->index, op->slot);
    if (dn) {
        dn->parsed = op->parsed;
        watch(e, kernel, dn);
    } else {
        free(op->parsed);
    }
}

static void do_h2d(struct engine *e, struct device *d, struct op *op)
{
    size_t size = e->app->item_size;
    cl_event written = NULL;
    TRY(e, clEnqueueWriteBuffer(d->to_dev, d->dslots[op->slot].mem, CL_FALSE, 0, size,
                                e->host + (size_t)op->host_slot * size, 0, NULL, &written));
    TRY(e, clFlush(d->to_dev));
    if (!written)
        return;
    pthread_mutex_lock(&e->lock);
    e->st.bytes_l2_in += size;
    pthread_mutex_unlock(&e->lock);
    set_writing(e, d, op->slot, written);
    struct done *dn = new_done(e, DONE_SLOT, d->index, op->slot);
    if (dn) {
        dn->host_slot = op->host_slot;
        watch(e, written, dn);
    }
}

/* Device to device: the source copies the slot into one of the
 * destination's export buffers, the destination copies that into its slot.
 * The export buffer is declared undefined on the source first, so that
 * nothing of its old content moves there. */
static void do_d2d(struct engine *e, struct device *d, struct op *op)
{
    struct device *src = &e->devs[op->src_dev];
    size_t size = e->app->item_size;
    struct export *x = &d->exports[d->next_export];
    d->next_export = (d->next_export + 1) % EXPORTS;
    cl_event waits[2];
    cl_uint n = 0;
    cl_event src_ready = fill_event(e, src, op->src_slot);
    if (src_ready)
        waits[n++] = src_ready;
    if (x->last)
        waits[n++] = x->last;
    cl_event moved = NULL, out = NULL, in = NULL;
    TRY(e, clEnqueueMigrateMemObjects(src->from_dev, 1, &x->mem,
                                      CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, n, n ? waits : NULL,
                                      &moved));
    if (moved)
        TRY(e, clEnqueueCopyBuffer(src->from_dev, src->dslots[op->src_slot].mem, x->mem, 0, 0,
                                   size, 1, &moved, &out));
    TRY(e, clFlush(src->from_dev));
    if (out)
        TRY(e, clEnqueueCopyBuffer(d->to_dev, x->mem, d->dslots[op->slot].mem, 0, 0, size, 1, &out,
                                   &in));
    TRY(e, clFlush(d->to_dev));
    if (moved)
        clReleaseEvent(moved);
    if (out) {
        struct done *dn = new_done(e, DONE_SOURCE, op->src_dev, op->src_slot);
        if (dn)
            watch(e, out, dn);
        clReleaseEvent(out);
    }
    if (!in)
        return;
    if (x->last)
        clReleaseEvent(x->last);
    clRetainEvent(in);
    x->last = in;
    pthread_mutex_lock(&e->lock);
    e->st.bytes_l3 += size;
    pthread_mutex_unlock(&e->lock);
    set_writing(e, d, op->slot, in);
    struct done *dn = new_done(e, DONE_SLOT, d->index, op->slot);
    if (dn)
        watch(e, in, dn);
}

static void do_compare(struct engine *e, struct device *d, struct op *op)
{
    const struct allpairs_app *app = e->app;
    struct job *job = op->job;
    cl_event waits[2];
    cl_uint n = 0;
    for (int k = 0; k < 2; k++) {
        cl_event ev = fill_event(e, d, job->slot[k]);
        if (ev)
            waits[n++] = ev;
    }
    cl_uint i = job->i, j = job->j;
    set_arg(e, d->compare, 0, sizeof(cl_mem), &d->dslots[job->slot[0]].mem);
    set_arg(e, d->compare, 1, sizeof(cl_mem), &d->dslots[job->slot[1]].mem);
    set_arg(e, d->compare, 2, sizeof(cl_mem), &d->results[job->result]);
    set_arg(e, d->compare, 3, sizeof(cl_uint), &i);
    set_arg(e, d->compare, 4, sizeof(cl_uint), &j);
    size_t global = app->compare_global, local = app->compare_local;
    cl_event kernel = NULL, read = NULL;
    TRY(e, clEnqueueNDRangeKernel(d->exec, d->compare, 1, NULL, &global, local ? &local : NULL, n,
                                  n ? waits : NULL, &kernel));
    TRY(e, clFlush(d->exec));
    if (kernel)
        TRY(e, clEnqueueReadBuffer(d->from_dev, d->results[job->result], CL_FALSE, 0,
                                   app->result_size, job->data, 1, &kernel, &read));
    TRY(e, clFlush(d->from_dev));
    job->kernel = kernel;
    if (!read)
        return;
    struct done *dn = new_done(e, DONE_JOB, d->index, -1);
    if (dn) {
        dn->job = job;
        watch(e, read, dn);
    }
    clReleaseEvent(read);
}

static const char *op_name(enum op_kind kind)
{
    static const char *names[] = {"load", "from host cache", "device to device", "compare"};
    return names[kind];
}

static void *submitter_main(void *arg)
{
    struct engine *e = ((struct thread_arg *)arg)->e;
    struct device *d = &e->devs[((struct thread_arg *)arg)->index];
    pthread_mutex_lock(&e->lock);
    while (!e->stop) {
        struct op *op;
        FIFO_POP(d->ops, op);
        if (!op) {
            pthread_cond_wait(&d->op_cond, &e->lock);
            continue;
        }
        pthread_mutex_unlock(&e->lock);
        double t0 = now();
        switch (op->kind) {
        case OP_LOAD: do_load(e, d, op); break;
        case OP_H2D: do_h2d(e, d, op); break;
        case OP_D2D: do_d2d(e, d, op); break;
        case OP_COMPARE: do_compare(e, d, op); break;
        }
        trace_span(e, op_name(op->kind), tid_submitter(e, d->index), t0);
        free(op);
        pthread_mutex_lock(&e->lock);
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

/* ---- completions ---- */

static void *done_main(void *arg)
{
    struct engine *e = arg;
    const struct allpairs_app *app = e->app;
    pthread_mutex_lock(&e->lock);
    /* Runs until every callback has come, even after a failure: they point
     * into the engine. */
    while (!(e->drained && e->callbacks == 0)) {
        struct done *dn;
        FIFO_POP(e->done_queue, dn);
        if (!dn) {
            pthread_cond_wait(&e->done_cond, &e->lock);
            continue;
        }
        e->callbacks--;
        if (dn->status < 0)
            fail_locked(e, "a command failed: %s (%d)", cl_name(dn->status), (int)dn->status);
        struct job *finished = NULL;
        bool stopped = e->stop;
        void *parsed = NULL;
        switch (dn->kind) {
        case DONE_SLOT: {
            struct device *d = &e->devs[dn->dev];
            if (d->dslots[dn->slot].ready == dn->event)
                d->slots.slots[dn->slot].state = AP_SLOT_READABLE;
            ap_cache_release(&d->slots, dn->slot);
            pthread_cond_signal(&d->work_cond);
            if (dn->host_slot >= 0)
                ap_cache_release(&e->host_slots, dn->host_slot);
            parsed = dn->parsed;
            break;
        }
        case DONE_HOST: {
            int32_t hs = dn->host_slot;
            e->host_slots.slots[hs].state = AP_SLOT_READABLE;
            ap_cache_release(&e->host_slots, hs);
            for (struct host_waiter *w = e->host_waiters[hs], *next; w; w = next) {
                next = w->next;
                ap_cache_ref(&e->host_slots, hs);
                struct op *op = new_op(e, OP_H2D, w->slot);
                if (op) {
                    op->host_slot = hs;
                    push_op(e, w->dev, op);
                }
                fill_queued(e, w->dev, w->slot);
                free(w);
            }
            e->host_waiters[hs] = NULL;
            break;
        }
        case DONE_SOURCE:
            ap_cache_release(&e->devs[dn->dev].slots, dn->slot);
            pthread_cond_signal(&e->devs[dn->dev].work_cond);
            break;
        case DONE_JOB:
            finished = dn->job;
            break;
        }
        pthread_mutex_unlock(&e->lock);

        double t0 = now();
        if (finished && dn->status >= 0 && !stopped)
            app->postprocess(app->user, finished->i, finished->j, finished->data);
        if (finished)
            trace_span(e, "postprocess", TID_DONE, t0);
        if (finished && finished->kernel)
            clReleaseEvent(finished->kernel);
        clReleaseEvent(dn->event); /* watch()'s reference */
        free(parsed);

        pthread_mutex_lock(&e->lock);
        if (finished) {
            struct device *d = &e->devs[finished->dev];
            ap_cache_release(&d->slots, finished->slot[0]);
            if (finished->i != finished->j)
                ap_cache_release(&d->slots, finished->slot[1]);
            d->free_results[d->n_free_results++] = finished->result;
            d->in_flight--;
            pthread_cond_signal(&d->work_cond);
            if (++e->done_pairs == e->total_pairs) {
                e->t_end = now();
                pthread_cond_broadcast(&e->main_cond);
                pthread_cond_broadcast(&e->idle_cond);
            }
            unlink_job(e, finished);
            free(finished);
        }
        free(dn);
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

/* ---- setup ---- */

#define SETUP(call)                                                                                \
    do {                                                                                           \
        cl_int setup_err_ = (call);                                                                \
        if (setup_err_ != CL_SUCCESS) {                                                            \
            snprintf(e->error, e->error_size, "%s failed: %s (%d)", #call,                         \
                     cl_name(setup_err_), (int)setup_err_);                                        \
            return -1;                                                                             \
        }                                                                                          \
    } while (0)

/* Each device's node, for stealing from peers of the same node first
 * (Rocket's local peers: a steal brings work whose items the thief then
 * loads, from its node's caches where they are).  --group K says it: K
 * consecutive devices a node.  Without it the driver does where it has
 * cl_vocl_device_location (VOCL: the proxies' hosts); a driver without it
 * has every device on this node. */
static int number_nodes(struct engine *e)
{
    e->nodes = calloc(e->p, sizeof(*e->nodes));
    struct app_location *locs = calloc(e->p, sizeof(*locs));
    int *numbers = calloc(e->p, sizeof(*numbers));
    int rc = 0;
    if (!e->nodes || !locs || !numbers) {
        snprintf(e->error, e->error_size, "out of memory");
        rc = -1;
    } else {
        for (uint32_t d = 0; d < e->p; d++) {
            app_device_location(e->devs[d].id, &e->devs[d].loc);
            locs[d] = e->devs[d].loc;
        }
        app_number_nodes(locs, e->p, numbers);
        for (uint32_t d = 0; d < e->p; d++)
            e->nodes[d] = e->cfg.group ? d / e->cfg.group : (uint32_t)numbers[d];
    }
    free(locs);
    free(numbers);
    return rc;
}

/* With cfg.verbose: each device's node and the order of its first steal
 * (the same function and random state its worker will use), on stderr. */
static void print_steal_orders(struct engine *e)
{
    uint32_t *order = calloc(e->p, sizeof(*order));
    if (!order)
        return;
    for (uint32_t d = 0; d < e->p; d++) {
        uint64_t rng = e->devs[d].rng;
        ap_steal_order(d, e->p, e->nodes, &rng, order);
        fprintf(stderr, "%s: device %u: node %u \"%s\"%s, steal order", e->app->name, d,
                e->nodes[d], e->devs[d].loc.node, e->cfg.group ? " (--group)" : "");
        /* The peers of its own node, "|", the others. */
        bool bar = false;
        for (uint32_t k = 0; k + 1 < e->p; k++) {
            if (!bar && e->nodes[order[k]] != e->nodes[d]) {
                fputs(" |", stderr);
                bar = true;
            }
            fprintf(stderr, " %u", order[k]);
        }
        fputs(bar ? "\n" : " |\n", stderr);
    }
    free(order);
}

static int open_devices(struct engine *e)
{
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err != CL_SUCCESS || np == 0) {
        snprintf(e->error, e->error_size, "no OpenCL platform found");
        return -1;
    }
    cl_platform_id platforms[16];
    if (np > 16)
        np = 16;
    SETUP(clGetPlatformIDs(np, platforms, NULL));
    cl_device_id *ids = NULL;
    cl_uint count = 0;
    for (cl_uint k = 0; k < np && !ids; k++) {
        if (clGetDeviceIDs(platforms[k], CL_DEVICE_TYPE_ALL, 0, NULL, &count) != CL_SUCCESS ||
            count == 0)
            continue;
        ids = calloc(count, sizeof(*ids));
        if (!ids)
            return -1;
        SETUP(clGetDeviceIDs(platforms[k], CL_DEVICE_TYPE_ALL, count, ids, NULL));
    }
    if (!ids) {
        snprintf(e->error, e->error_size, "no OpenCL device found");
        return -1;
    }
    if (e->cfg.devices > count) {
        snprintf(e->error, e->error_size, "%u devices asked for, %u available", e->cfg.devices,
                 count);
        free(ids);
        return -1;
    }
    e->p = e->cfg.devices ? e->cfg.devices : count;
    e->devs = calloc(e->p, sizeof(*e->devs));
    if (!e->devs) {
        free(ids);
        return -1;
    }
    for (uint32_t d = 0; d < e->p; d++)
        e->devs[d].id = ids[d];
    if (number_nodes(e) != 0) {
        free(ids);
        return -1;
    }
    /* One context over every device: what lets a copy go device to device. */
    e->context = clCreateContext(NULL, e->p, ids, NULL, NULL, &err);
    free(ids);
    SETUP(err);

    const char *sources[1] = {e->app->source};
    e->program = clCreateProgramWithSource(e->context, 1, sources, NULL, &err);
    SETUP(err);
    err = clBuildProgram(e->program, 0, NULL, e->app->build_options, NULL, NULL);
    if (err == CL_BUILD_PROGRAM_FAILURE) {
        char log[2048] = "";
        clGetProgramBuildInfo(e->program, e->devs[0].id, CL_PROGRAM_BUILD_LOG, sizeof(log) - 1,
                              log, NULL);
        snprintf(e->error, e->error_size, "the kernels do not build: %s", log);
        return -1;
    }
    SETUP(err);

    /* Sub-buffers must start at the strictest device's alignment. */
    cl_uint align_bits = 0;
    for (uint32_t d = 0; d < e->p; d++) {
        cl_uint bits = 0;
        SETUP(clGetDeviceInfo(e->devs[d].id, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof(bits), &bits,
                              NULL));
        align_bits = bits > align_bits ? bits : align_bits;
    }
    size_t align = align_bits / 8 ? align_bits / 8 : 128;
    e->slot_stride = (e->app->item_size + align - 1) / align * align;
    return 0;
}

static cl_mem new_buffer(struct engine *e, cl_mem_flags flags, size_t size, cl_int *err)
{
    return clCreateBuffer(e->context, flags, size ? size : 1, NULL, err);
}

static int setup_device(struct engine *e, uint32_t index)
{
    const struct allpairs_app *app = e->app;
    struct device *d = &e->devs[index];
    cl_int err;
    d->index = index;
    d->rng = e->cfg.seed ^ (0x5851f42d4c957f2dULL * (index + 1));
    cl_command_queue_properties props = 0;
    d->to_dev = clCreateCommandQueue(e->context, d->id, props, &err);
    SETUP(err);
    d->exec = clCreateCommandQueue(e->context, d->id, props, &err);
    SETUP(err);
    d->from_dev = clCreateCommandQueue(e->context, d->id, props, &err);
    SETUP(err);
    d->preprocess = clCreateKernel(e->program, app->preprocess_kernel, &err);
    SETUP(err);
    d->compare = clCreateKernel(e->program, app->compare_kernel, &err);
    SETUP(err);

    /* The cache: one buffer, a sub-buffer per slot. */
    d->cache = new_buffer(e, CL_MEM_READ_WRITE, e->slot_stride * e->cfg.device_slots, &err);
    SETUP(err);
    d->dslots = calloc(e->cfg.device_slots, sizeof(*d->dslots));
    if (!d->dslots || ap_cache_init(&d->slots, e->cfg.device_slots, e->cfg.items) != 0)
        return -1;
    for (uint32_t s = 0; s < e->cfg.device_slots; s++) {
        cl_buffer_region region = {s * e->slot_stride, app->item_size};
        d->dslots[s].mem = clCreateSubBuffer(d->cache, CL_MEM_READ_WRITE,
                                             CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
        SETUP(err);
    }
    for (unsigned k = 0; k < STAGING; k++) {
        d->staging[k] = new_buffer(e, CL_MEM_READ_ONLY, app->parsed_size, &err);
        SETUP(err);
    }
    for (unsigned k = 0; k < EXPORTS && e->cfg.hops > 0 && e->p > 1; k++) {
        d->exports[k].mem = new_buffer(e, CL_MEM_READ_WRITE, app->item_size, &err);
        SETUP(err);
    }
    d->results = calloc(e->cfg.jobs, sizeof(*d->results));
    d->free_results = calloc(e->cfg.jobs, sizeof(*d->free_results));
    d->order = calloc(e->p, sizeof(*d->order));
    if (!d->results || !d->free_results || !d->order || ap_deque_init(&d->deque, 64) != 0)
        return -1;
    for (uint32_t k = 0; k < e->cfg.jobs; k++) {
        d->results[k] = new_buffer(e, CL_MEM_WRITE_ONLY, app->result_size, &err);
        SETUP(err);
        d->free_results[d->n_free_results++] = e->cfg.jobs - 1 - k;
    }
    pthread_cond_init(&d->work_cond, NULL);
    pthread_cond_init(&d->op_cond, NULL);
    return 0;
}

/* One launch of each kernel on every device before anything is timed, so
 * that compiling them (PoCL does at the first launch) is not timed either. */
static int warm_up(struct engine *e)
{
    const struct allpairs_app *app = e->app;
    for (uint32_t d = 0; d < e->p; d++) {
        struct device *dv = &e->devs[d];
        cl_uint zero = 0;
        unsigned char pattern = 0;
        SETUP(clEnqueueFillBuffer(dv->exec, dv->staging[0], &pattern, 1, 0, app->parsed_size, 0,
                                  NULL, NULL));
        SETUP(clEnqueueFillBuffer(dv->exec, dv->dslots[0].mem, &pattern, 1, 0, app->item_size, 0,
                                  NULL, NULL));
        SETUP(clSetKernelArg(dv->preprocess, 0, sizeof(cl_mem), &dv->staging[0]));
        SETUP(clSetKernelArg(dv->preprocess, 1, sizeof(cl_mem), &dv->dslots[1].mem));
        SETUP(clSetKernelArg(dv->preprocess, 2, sizeof(cl_uint), &zero));
        size_t global = app->preprocess_global, local = app->preprocess_local;
        SETUP(clEnqueueNDRangeKernel(dv->exec, dv->preprocess, 1, NULL, &global,
                                     local ? &local : NULL, 0, NULL, NULL));
        SETUP(clSetKernelArg(dv->compare, 0, sizeof(cl_mem), &dv->dslots[0].mem));
        SETUP(clSetKernelArg(dv->compare, 1, sizeof(cl_mem), &dv->dslots[0].mem));
        SETUP(clSetKernelArg(dv->compare, 2, sizeof(cl_mem), &dv->results[0]));
        SETUP(clSetKernelArg(dv->compare, 3, sizeof(cl_uint), &zero));
        SETUP(clSetKernelArg(dv->compare, 4, sizeof(cl_uint), &zero));
        global = app->compare_global;
        local = app->compare_local;
        SETUP(clEnqueueNDRangeKernel(dv->exec, dv->compare, 1, NULL, &global,
                                     local ? &local : NULL, 0, NULL, NULL));
        SETUP(clFlush(dv->exec));
    }
    for (uint32_t d = 0; d < e->p; d++)
        SETUP(clFinish(e->devs[d].exec));
    return 0;
}

/* ---- calibration: T_min on the first device alone ---- */

static double event_seconds(cl_event ev)
{
    cl_ulong t0 = 0, t1 = 0;
    if (clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(t0), &t0, NULL) !=
            CL_SUCCESS ||
        clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, NULL) != CL_SUCCESS)
        return -1.0;
    return (double)(t1 - t0) * 1e-9;
}

/* Preprocesses `s` items spread over [0, n) into slots 0 .. s-1 of the
 * first device, then compares every pair of them, one command at a time on
 * a profiling queue; t_pre and t_cmp are the kernels' mean times. */
static int calibrate(struct engine *e)
{
    const struct allpairs_app *app = e->app;
    struct device *d = &e->devs[0];
    uint32_t s = e->cfg.calibrate;
    if (s > e->cfg.items)
        s = e->cfg.items;
    if (s > e->cfg.device_slots)
        s = e->cfg.device_slots;
    if (s < 2)
        return 0;
    cl_int err;
    cl_command_queue q =
        clCreateCommandQueue(e->context, d->id, CL_QUEUE_PROFILING_ENABLE, &err);
    SETUP(err);
    double pre = 0.0, cmp = 0.0;
    uint64_t pairs = 0;
    int rc = 0;
    void *parsed = calloc(1, app->parsed_size);
    for (uint32_t k = 0; k < s && rc == 0; k++) {
        uint32_t item = (uint32_t)((uint64_t)k * e->cfg.items / s);
        char path[4096];
        void *data = NULL;
        size_t size = 0;
        if (!parsed || !app->file_path(app->user, item, path, sizeof(path)) ||
            !read_file(path, &data, &size, e->error, e->error_size)) {
            rc = -1;
            break;
        }
        memset(parsed, 0, app->parsed_size);
        char error[512] = "";
        bool ok = app->parse(app->user, item, data, size, parsed, error, sizeof(error));
        free(data);
        if (!ok) {
            snprintf(e->error, e->error_size, "%s: %s", path, error);
            rc = -1;
            break;
        }
        cl_uint index = item;
        cl_event ev = NULL;
        err = clEnqueueWriteBuffer(q, d->staging[0], CL_TRUE, 0, app->parsed_size, parsed, 0, NULL,
                                   NULL);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(d->preprocess, 0, sizeof(cl_mem), &d->staging[0]);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(d->preprocess, 1, sizeof(cl_mem), &d->dslots[k].mem);
        if (err == CL_SUCCESS)
            err = clSetKernelArg(d->preprocess, 2, sizeof(cl_uint), &index);
        size_t global = app->preprocess_global, local = app->preprocess_local;
        if (err == CL_SUCCESS)
            err = clEnqueueNDRangeKernel(q, d->preprocess, 1, NULL, &global, local ? &local : NULL,
                                         0, NULL, &ev);
        if (err == CL_SUCCESS)
            err = clFinish(q);
        if (err != CL_SUCCESS) {
            snprintf(e->error, e->error_size, "calibration: %s (%d)", cl_name(err), (int)err);
            rc = -1;
        } else {
            pre += event_seconds(ev);
        }
        if (ev)
            clReleaseEvent(ev);
    }
    for (uint32_t a = 0; a < s && rc == 0; a++) {
        for (uint32_t b = a + 1; b < s && rc == 0; b++) {
            cl_uint i = (cl_uint)((uint64_t)a * e->cfg.items / s);
            cl_uint j = (cl_uint)((uint64_t)b * e->cfg.items / s);
            cl_event ev = NULL;
            err = clSetKernelArg(d->compare, 0, sizeof(cl_mem), &d->dslots[a].mem);
            if (err == CL_SUCCESS)
                err = clSetKernelArg(d->compare, 1, sizeof(cl_mem), &d->dslots[b].mem);
            if (err == CL_SUCCESS)
                err = clSetKernelArg(d->compare, 2, sizeof(cl_mem), &d->results[0]);
            if (err == CL_SUCCESS)
                err = clSetKernelArg(d->compare, 3, sizeof(cl_uint), &i);
            if (err == CL_SUCCESS)
                err = clSetKernelArg(d->compare, 4, sizeof(cl_uint), &j);
            size_t global = app->compare_global, local = app->compare_local;
            if (err == CL_SUCCESS)
                err = clEnqueueNDRangeKernel(q, d->compare, 1, NULL, &global,
                                             local ? &local : NULL, 0, NULL, &ev);
            if (err == CL_SUCCESS)
                err = clFinish(q);
            if (err != CL_SUCCESS) {
                snprintf(e->error, e->error_size, "calibration: %s (%d)", cl_name(err), (int)err);
                rc = -1;
            } else {
                cmp += event_seconds(ev);
                pairs++;
            }
            if (ev)
                clReleaseEvent(ev);
        }
    }
    free(parsed);
    clReleaseCommandQueue(q);
    if (rc == 0 && pre >= 0.0 && cmp >= 0.0) {
        double n = e->cfg.items;
        e->st.calibrated_items = s;
        e->st.t_pre = pre / s;
        e->st.t_cmp = cmp / (double)pairs;
        e->st.t_min = n * e->st.t_pre + n * (n - 1) / 2 * e->st.t_cmp;
    }
    return rc;
}

/* ---- the third level: on only where it pays ---- */

/* With --hops auto: a third-level hit replaces a load (read the item's file,
 * parse it, write it to the device) by a device-to-device copy of the
 * preprocessed item.  Through VOCL on one host that copy can cost more than
 * the load it saves (issue 38), on a cluster with slow files far less, so both
 * are measured here and the third level stays on only where the copy is
 * clearly cheaper (app_copy_pays).  The copy is timed between the first and
 * the last device: under vocl-run those are in different proxies whenever
 * there are several, the case the third level is for. */
static int decide_l3(struct engine *e)
{
    const struct allpairs_app *app = e->app;
    enum { REPS = 3 };
    double t_start = now();
    /* The write of a load moves the parsed item, not the preprocessed one;
     * a write of an item's size stands for it (a second timing of the
     * parsed size would double the time this takes for a few percent). */
    struct app_copy_cost item;
    cl_device_id a = e->devs[0].id, b = e->devs[e->p - 1].id;
    SETUP(app_copy_cost(e->context, a, b, app->item_size, REPS, &item));
    /* Reading and parsing: item 0's file, as a load would (the fastest
     * of REPS, as app_copy_cost takes). */
    double t_parse[REPS];
    void *out = calloc(1, app->parsed_size);
    char path[4096];
    if (!out || !app->file_path(app->user, 0, path, sizeof(path))) {
        free(out);
        snprintf(e->error, e->error_size, "out of memory, or the path of item 0 too long");
        return -1;
    }
    for (int r = 0; r < REPS; r++) {
        double t0 = now();
        void *data = NULL;
        size_t size = 0;
        if (!read_file(path, &data, &size, e->error, e->error_size)) {
            free(out);
            return -1;
        }
        memset(out, 0, app->parsed_size);
        char error[512] = "";
        bool ok = app->parse(app->user, 0, data, size, out, error, sizeof(error));
        free(data);
        if (!ok) {
            free(out);
            snprintf(e->error, e->error_size, "%s: %s", path, error);
            return -1;
        }
        t_parse[r] = now() - t0;
    }
    free(out);
    e->st.l3_auto = true;
    e->st.l3_copy = item.copy;
    double parse = app_fastest(t_parse, REPS);
    e->st.l3_load = parse + item.write;
    /* The copy against the whole load: the ratio to the write, measured
     * side by side, scaled by the write's share of the load. */
    double ratio = item.ratio * item.write / e->st.l3_load;
    bool on = app_copy_pays(e->st.l3_copy / e->st.l3_load, ratio);
    if (!on)
        e->cfg.hops = 0;
    snprintf(e->l3_note, sizeof(e->l3_note),
             "third level %s: a device-to-device copy of an item (%zu bytes, device 0 to %u) "
             "takes %.0f us, a load %.0f us (read and parse %.0f us, write %.0f us), "
             "copy/load %.2f; measured in %.0f ms",
             on ? "on" : "off", app->item_size, e->p - 1, e->st.l3_copy * 1e6,
             e->st.l3_load * 1e6, parse * 1e6, item.write * 1e6, ratio,
             (now() - t_start) * 1e3);
    fprintf(stderr, "%s: %s\n", app->name, e->l3_note);
    return 0;
}

/* ---- trace ---- */

static void write_trace(struct engine *e)
{
    FILE *f = fopen(e->cfg.trace, "w");
    if (!f) {
        fprintf(stderr, "%s: cannot write the trace %s: %s\n", e->app->name, e->cfg.trace,
                strerror(errno));
        return;
    }
    fprintf(f, "{\"traceEvents\":[\n");
    if (e->l3_note[0])
        fprintf(f, "{\"name\":\"%s\",\"ph\":\"i\",\"s\":\"g\",\"pid\":1,\"tid\":%d,"
                   "\"ts\":0},\n", e->l3_note, TID_IO);
    fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
               "\"args\":{\"name\":\"io\"}},\n", TID_IO);
    fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%d,"
               "\"args\":{\"name\":\"completion\"}},\n", TID_DONE);
    for (uint32_t k = 0; k < e->n_parsers; k++)
        fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,"
                   "\"args\":{\"name\":\"parser %u\"}},\n", TID_PARSER + k, k);
    for (uint32_t d = 0; d < e->p; d++) {
        fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,"
                   "\"args\":{\"name\":\"worker %u\"}},\n", tid_worker(d), d);
        fprintf(f, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":%u,"
                   "\"args\":{\"name\":\"submitter %u\"}},\n", tid_submitter(e, d), d);
    }
    for (size_t k = 0; k < e->n_spans; k++) {
        const struct span *s = &e->spans[k];
        fprintf(f, "{\"name\":\"%s\",\"ph\":\"X\",\"pid\":1,\"tid\":%u,\"ts\":%.3f,\"dur\":%.3f}%s\n",
                s->name, s->tid, (s->t0 - e->t_start) * 1e6, (s->t1 - s->t0) * 1e6,
                k + 1 < e->n_spans ? "," : "");
    }
    fprintf(f, "]}\n");
    if (fclose(f) != 0)
        fprintf(stderr, "%s: cannot write the trace %s\n", e->app->name, e->cfg.trace);
}

/* ---- the run ---- */

static void progress(struct engine *e, bool tty, int *shown, bool last)
{
    app_progress(e->app->name, "pairs", e->done_pairs, e->total_pairs, tty, shown, last);
}

static void wait_for_end(struct engine *e)
{
    bool tty = isatty(2);
    int shown = 0;
    bool drawn = false;
    pthread_mutex_lock(&e->lock);
    while (!e->stop && e->done_pairs < e->total_pairs) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 250 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&e->main_cond, &e->lock, &ts);
        if (e->cfg.progress && now() - e->t_start > 1.0 && e->done_pairs < e->total_pairs) {
            progress(e, tty, &shown, false);
            drawn = true;
        }
    }
    if (drawn && !e->failed)
        progress(e, tty, &shown, true);
    e->stop = true;
    pthread_cond_broadcast(&e->idle_cond);
    pthread_cond_broadcast(&e->io_cond);
    pthread_cond_broadcast(&e->parse_cond);
    pthread_cond_broadcast(&e->done_cond);
    for (uint32_t d = 0; d < e->p; d++) {
        pthread_cond_broadcast(&e->devs[d].work_cond);
        pthread_cond_broadcast(&e->devs[d].op_cond);
    }
    pthread_mutex_unlock(&e->lock);
}

static int check_config(struct engine *e)
{
    const struct allpairs_config *c = &e->cfg;
    const struct allpairs_app *a = e->app;
    const char *why = NULL;
    if (c->items < 2)
        why = "at least 2 items are needed";
    else if (c->device_slots < 3)
        why = "a device cache needs at least 3 slots";
    else if (c->jobs < 1)
        why = "the concurrent-job limit must be at least 1";
    else if (c->hops > 64)
        why = "at most 64 hops";
    else if (!a->source || !a->preprocess_kernel || !a->compare_kernel || !a->file_path ||
             !a->parse || !a->postprocess || !a->item_size || !a->parsed_size ||
             !a->result_size || !a->preprocess_global || !a->compare_global)
        why = "the application leaves out a kernel, a callback or a size";
    if (why) {
        snprintf(e->error, e->error_size, "%s", why);
        return -1;
    }
    /* Every job holds at most two slots: with more than 2 x jobs slots a
     * job never waits for a free one. */
    if (e->cfg.jobs > (c->device_slots - 1) / 2)
        e->cfg.jobs = (c->device_slots - 1) / 2;
    if (e->cfg.parsers == 0)
        e->cfg.parsers = 2;
    if (e->cfg.parsers > 7)
        e->cfg.parsers = 7;
    return 0;
}

static void release_all(struct engine *e)
{
    for (uint32_t d = 0; e->devs && d < e->p; d++) {
        struct device *dv = &e->devs[d];
        for (uint32_t s = 0; dv->dslots && s < e->cfg.device_slots; s++) {
            if (dv->dslots[s].ready)
                clReleaseEvent(dv->dslots[s].ready);
            if (dv->dslots[s].mem)
                clReleaseMemObject(dv->dslots[s].mem);
        }
        free(dv->dslots);
        if (dv->cache)
            clReleaseMemObject(dv->cache);
        for (unsigned k = 0; k < STAGING; k++) {
            if (dv->staged[k])
                clReleaseEvent(dv->staged[k]);
            if (dv->staging[k])
                clReleaseMemObject(dv->staging[k]);
        }
        for (unsigned k = 0; k < EXPORTS; k++) {
            if (dv->exports[k].last)
                clReleaseEvent(dv->exports[k].last);
            if (dv->exports[k].mem)
                clReleaseMemObject(dv->exports[k].mem);
        }
        for (uint32_t k = 0; dv->results && k < e->cfg.jobs; k++)
            if (dv->results[k])
                clReleaseMemObject(dv->results[k]);
        free(dv->results);
        free(dv->free_results);
        free(dv->order);
        ap_deque_free(&dv->deque);
        ap_cache_free(&dv->slots);
        for (struct op *op = dv->ops.head, *next; op; op = next) {
            next = op->next;
            free(op->parsed); /* a compare's job is in e->jobs */
            free(op);
        }
        if (dv->preprocess)
            clReleaseKernel(dv->preprocess);
        if (dv->compare)
            clReleaseKernel(dv->compare);
        if (dv->to_dev)
            clReleaseCommandQueue(dv->to_dev);
        if (dv->exec)
            clReleaseCommandQueue(dv->exec);
        if (dv->from_dev)
            clReleaseCommandQueue(dv->from_dev);
        if (dv->index == d && dv->to_dev) {
            pthread_cond_destroy(&dv->work_cond);
            pthread_cond_destroy(&dv->op_cond);
        }
    }
    free(e->devs);
    free(e->nodes);
    for (struct job *job = e->jobs, *next; job; job = next) {
        next = job->next;
        if (job->kernel)
            clReleaseEvent(job->kernel);
        free(job);
    }
    e->jobs = NULL;
    for (uint32_t h = 0; e->host_waiters && h < e->cfg.host_slots; h++)
        for (struct host_waiter *w = e->host_waiters[h], *next; w; w = next) {
            next = w->next;
            free(w);
        }
    free(e->host_waiters);
    for (struct load *ld = e->io_queue.head, *next; ld; ld = next) {
        next = ld->next;
        free(ld);
    }
    for (struct load *ld = e->parse_queue.head, *next; ld; ld = next) {
        next = ld->next;
        free(ld->file);
        free(ld);
    }
    if (e->host_mem)
        clReleaseMemObject(e->host_mem);
    ap_cache_free(&e->host_slots);
    ap_contacts_free(&e->contacts);
    if (e->program)
        clReleaseProgram(e->program);
    if (e->context)
        clReleaseContext(e->context);
    free(e->spans);
}

int allpairs_run(const struct allpairs_app *app, const struct allpairs_config *config,
                 struct allpairs_stats *stats, char *error, size_t error_size)
{
    struct engine *e = calloc(1, sizeof(*e));
    if (!e) {
        snprintf(error, error_size, "out of memory");
        return -1;
    }
    e->app = app;
    e->cfg = *config;
    e->error = error;
    e->error_size = error_size;
    error[0] = '\0';
    pthread_mutex_init(&e->lock, NULL);
    pthread_mutex_init(&e->trace_lock, NULL);
    pthread_cond_init(&e->idle_cond, NULL);
    pthread_cond_init(&e->io_cond, NULL);
    pthread_cond_init(&e->parse_cond, NULL);
    pthread_cond_init(&e->done_cond, NULL);
    pthread_cond_init(&e->main_cond, NULL);

    int rc = check_config(e) == 0 && open_devices(e) == 0 ? 0 : -1;
    /* Before anything is set up for the third level (export buffers,
     * points of contact), so that a run it turns off is a --hops 0 run. */
    if (rc == 0 && e->cfg.hops_auto && e->cfg.hops > 0 && e->p > 1)
        rc = decide_l3(e);
    e->st.hops = e->cfg.hops;
    for (uint32_t d = 0; rc == 0 && d < e->p; d++)
        rc = setup_device(e, d);
    if (rc == 0 && e->cfg.verbose)
        print_steal_orders(e);
    if (rc == 0 && (ap_cache_init(&e->host_slots, e->cfg.host_slots, e->cfg.items) != 0 ||
                    ap_contacts_init(&e->contacts, e->cfg.items, e->p, e->cfg.hops) != 0 ||
                    !(e->host_waiters = calloc(e->cfg.host_slots + 1, sizeof(*e->host_waiters))))) {
        snprintf(error, error_size, "out of memory");
        rc = -1;
    }
    cl_command_queue map_queue = NULL;
    if (rc == 0 && e->cfg.host_slots > 0) {
        /* The host cache: pinned memory the devices can reach, mapped once
         * for the whole run, its old content of no interest. */
        cl_int err;
        size_t size = (size_t)e->cfg.host_slots * app->item_size;
        e->host_mem = new_buffer(e, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, size, &err);
        map_queue = e->devs[0].to_dev;
        if (err == CL_SUCCESS)
            e->host = clEnqueueMapBuffer(map_queue, e->host_mem, CL_TRUE,
                                         CL_MAP_WRITE_INVALIDATE_REGION, 0, size, 0, NULL, NULL,
                                         &err);
        if (err != CL_SUCCESS) {
            snprintf(error, error_size, "the host cache (%zu bytes): %s (%d)", size,
                     cl_name(err), (int)err);
            rc = -1;
        }
    }
    if (rc == 0)
        rc = warm_up(e);
    if (rc == 0 && e->cfg.calibrate)
        rc = calibrate(e);

    if (rc == 0) {
        e->total_pairs = (uint64_t)e->cfg.items * (e->cfg.items - 1) / 2;
        struct ap_task root = {0, e->cfg.items, 0, e->cfg.items};
        ap_deque_push(&e->devs[0].deque, &root); /* the others steal from it */
        e->n_parsers = e->cfg.parsers;
        e->parsers = calloc(e->n_parsers, sizeof(*e->parsers));
        struct thread_arg *args = calloc(2 * e->p + e->n_parsers, sizeof(*args));
        if (!e->parsers || !args) {
            snprintf(error, error_size, "out of memory");
            rc = -1;
            free(args);
        } else {
            e->t_start = now();
            pthread_create(&e->done_thread, NULL, done_main, e);
            pthread_create(&e->io_thread, NULL, io_main, e);
            for (uint32_t k = 0; k < e->n_parsers; k++) {
                args[k] = (struct thread_arg){e, k};
                pthread_create(&e->parsers[k], NULL, parser_main, &args[k]);
            }
            for (uint32_t d = 0; d < e->p; d++) {
                args[e->n_parsers + d] = (struct thread_arg){e, d};
                pthread_create(&e->devs[d].submitter, NULL, submitter_main,
                               &args[e->n_parsers + d]);
                pthread_create(&e->devs[d].worker, NULL, worker_main, &args[e->n_parsers + d]);
            }
            wait_for_end(e);
            for (uint32_t d = 0; d < e->p; d++) {
                pthread_join(e->devs[d].worker, NULL);
                pthread_join(e->devs[d].submitter, NULL);
            }
            pthread_join(e->io_thread, NULL);
            for (uint32_t k = 0; k < e->n_parsers; k++)
                pthread_join(e->parsers[k], NULL);
            /* Whatever is still enqueued (after a failure) completes, and
             * its callbacks reach the completion thread before it ends. */
            for (uint32_t d = 0; d < e->p; d++) {
                clFinish(e->devs[d].to_dev);
                clFinish(e->devs[d].exec);
                clFinish(e->devs[d].from_dev);
            }
            pthread_mutex_lock(&e->lock);
            e->drained = true;
            pthread_cond_broadcast(&e->done_cond);
            pthread_mutex_unlock(&e->lock);
            pthread_join(e->done_thread, NULL);
            free(args);
            if (e->failed)
                rc = -1;
        }
        free(e->parsers);
    }
    if (rc == 0) {
        e->st.devices = e->p;
        e->st.pairs = e->done_pairs;
        e->st.seconds = e->t_end - e->t_start;
        e->st.bytes_results = e->done_pairs * app->result_size;
        *stats = e->st;
        if (e->cfg.trace)
            write_trace(e);
    }
    if (e->host && map_queue) {
        clEnqueueUnmapMemObject(map_queue, e->host_mem, e->host, 0, NULL, NULL);
        clFinish(map_queue);
    }
    release_all(e);
    pthread_mutex_destroy(&e->lock);
    pthread_mutex_destroy(&e->trace_lock);
    free(e);
    return rc;
}

/* ---- figures ---- */

double allpairs_r(const struct allpairs_stats *s, uint32_t items)
{
    return items ? (double)s->loads / items : 0.0;
}

double allpairs_efficiency(const struct allpairs_stats *s)
{
    if (s->t_min <= 0.0 || s->seconds <= 0.0 || s->devices == 0)
        return 0.0;
    return s->t_min / s->devices / s->seconds;
}

uint64_t allpairs_bytes_host(const struct allpairs_stats *s)
{
    return s->bytes_parsed + s->bytes_l2_in + s->bytes_l2_out + s->bytes_results;
}

static double rate(uint64_t hits, uint64_t lookups)
{
    return lookups ? 100.0 * (double)hits / (double)lookups : 0.0;
}

void allpairs_print_stats(FILE *out, const struct allpairs_stats *s, uint32_t items)
{
    fprintf(out, "allpairs: %" PRIu64 " pairs on %u devices in %.4f s: %.4g pairs/s\n", s->pairs,
            s->devices, s->seconds, s->seconds > 0 ? (double)s->pairs / s->seconds : 0.0);
    fprintf(out, "allpairs: %" PRIu64 " loads of %u items: R = %.3f; %" PRIu64 " steals\n",
            s->loads, items, allpairs_r(s, items), s->steals);
    fprintf(out,
            "allpairs: hits: device %.1f%% of %" PRIu64 ", host %.1f%% of %" PRIu64
            ", other devices %.1f%% of %" PRIu64 " (%" PRIu64 " on the first hop)\n",
            rate(s->l1_hits, s->l1_lookups), s->l1_lookups, rate(s->l2_hits, s->l2_lookups),
            s->l2_lookups, rate(s->l3_hits, s->l3_lookups), s->l3_lookups, s->l3_first_hop);
    fprintf(out,
            "allpairs: bytes: files %" PRIu64 ", parsed to devices %" PRIu64
            ", host cache to devices %" PRIu64 ", devices to host cache %" PRIu64
            ", device to device %" PRIu64 ", results %" PRIu64 "\n",
            s->bytes_file, s->bytes_parsed, s->bytes_l2_in, s->bytes_l2_out, s->bytes_l3,
            s->bytes_results);
    if (s->t_min > 0.0)
        fprintf(out,
                "allpairs: t_pre %.4g s, t_cmp %.4g s (from %u items on device 0): T_min %.4g s, "
                "efficiency (T_min / p) / T = %.1f%%\n",
                s->t_pre, s->t_cmp, s->calibrated_items, s->t_min, 100.0 * allpairs_efficiency(s));
}
