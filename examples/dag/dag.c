/*
 * dag.c: the DAG runtime (libWater's model on the standard OpenCL API); see
 * dag.h for the API and dag(3) for the whole story.
 *
 * Calls become commands (struct cmd).  A command depends on the previous
 * command of its device (`prev`: the device order) and on the commands of
 * its wait event (`deps`).  New commands collect in a window; dag_flush()
 * rewrites the window (DHDCR, then DCR) and submits it to the scheduler
 * thread.  A dependency on a command of the same device is met once that
 * command is enqueued (the device queues are in order; a write after a read
 * is the exception, see queue_orders()); one on another device once it is
 * complete, which a native event callback reports (on the command itself,
 * or on a later one of the same queue: see notify_locked()).  The scheduler
 * thread sleeps on a condition variable until some command is ready or a
 * read needs its host memory synchronised, enqueues without holding the
 * lock, and goes back to sleep.
 *
 * Threads: the host thread owns the window (commands in state S_WINDOW, the
 * devices' `last`, the buffers' guards); `rt.lock` guards everything the
 * scheduler and the callbacks touch (states, waiting counts, successor
 * lists, the ready list, counters, the first error, the trace).  Nobody
 * calls OpenCL or waits for anything but a condition variable while holding
 * it.
 */
#include "dag.h"
#include "clutil.h"
#include "copycost.h"
#include "dql.h"
#include "pattern.h"

#include <CL/cl_ext.h>

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- objects ---- */

struct program {
    struct program *next;
    char *source, *options;
    cl_program program;
    cl_int status; /* of the build */
};

/* The shared context of the selected devices of one platform. */
struct context {
    cl_platform_id platform;
    cl_context context;
    struct program *programs; /* scheduler thread only */
};

struct dag_device {
    int index, node;
    char *name;
    char *node_name; /* cl_vocl_device_location's host name; "" without it */
    cl_device_id id;
    struct context *ctx;
    cl_command_queue queue;
    struct cmd *last; /* the last command in device order (host thread) */
    bool touched;     /* enqueued to since the last clFlush (scheduler) */
    /* Enqueued commands not known to be complete, in queue order, but for
     * reads (under lock); the number of the last one enqueued. */
    struct cmd *q_head, *q_tail;
    uint64_t seq;
    struct cmd *q_head_batch; /* notify_locked()'s scratch */
    unsigned in_batch;        /* the scheduler's batch: its commands on this device */
};

struct dag_buffer {
    /* The user's reference (dropped by its release command) and one for
     * each copy that still has to be enqueued: a buffer released in device
     * order may still be the source of a copy that an optimisation put on
     * another device's queue or later in the order. */
    atomic_uint refs;
    dag_device *dev;
    size_t size;
    cl_mem_flags flags;
    cl_mem mem; /* set by the scheduler when it creates the buffer */
    /* Copies from this buffer on other devices that its next modifier must
     * wait for (host thread). */
    struct cmd **guards;
    unsigned num_guards;
};

/* An argument as the scheduler last set it on a kernel. */
struct set_arg {
    bool known, local;
    size_t size;
    unsigned char bytes[16]; /* the value, or the cl_mem; none for local memory */
};

struct dag_kernel {
    dag_device *dev;
    char *source, *name, *options;
    cl_kernel kernel; /* scheduler thread */
    /* Scheduler thread: what each argument is set to, so that a launch
     * sets only those that changed (dag-floyd: one of four).  Forgotten
     * when a memory object is freed, as its handle may come back. */
    struct set_arg *set;
    unsigned num_set;
    unsigned long mems_freed;
};

struct dag_event {
    unsigned n;
    struct cmd *cmds[];
};

enum kind {
    K_CREATE_BUFFER,
    K_RELEASE_BUFFER,
    K_CREATE_KERNEL,
    K_RELEASE_KERNEL,
    K_WRITE,
    K_READ,
    K_COPY,
    K_RUN,
};
static const char *const kind_names[] = {"create-buffer", "release-buffer", "create-kernel",
                                         "release-kernel", "write", "read", "copy", "run"};

enum state { S_WINDOW, S_WAITING, S_READY, S_DISPATCHED, S_COMPLETE };

struct run_arg {
    dag_buffer *buffer;
    void *value; /* a copy of the bytes (in small if they fit), or NULL for local memory */
    size_t size;
    unsigned char small[16];
};

struct cmd {
    uint64_t id;
    enum kind kind;
    const char *label; /* what an optimisation made of it, or NULL */
    bool internal;     /* made by an optimisation */
    dag_device *dev;
    dag_buffer *buf; /* the buffer written (COPY: the destination) or read */
    dag_buffer *src; /* COPY's source */
    size_t offset, src_offset, size;
    void *host;
    dag_kernel *kernel;
    cl_uint dims;
    size_t goffset[3], global[3], local[3];
    bool has_offset, has_local;
    unsigned num_args;
    struct run_arg *args;

    /* The graph.  prev, deps and succ hold references. */
    struct cmd *prev;
    struct cmd *next; /* successor in device order, while in the window */
    struct cmd **deps;
    unsigned num_deps, cap_deps;
    struct cmd **succ;
    unsigned num_succ, cap_succ;
    /* For a gather: the data is in host memory only when `then` is done. */
    struct cmd *then;

    bool d2d;         /* a copy between two devices */
    bool notify;      /* enqueued with an event and a completion callback */
    bool waited;      /* the host waits for it (dag_wait) */
    bool enqueued;    /* went to the device's queue */
    bool host_wait;   /* waited when it was taken: host_event is made for it */
    /* A reference to event for the host's own wait (see wait_cmds()), made
     * by the scheduler and handed over under the lock once set. */
    cl_event host_event;
    bool host_event_set;
    uint64_t seq;     /* its place in the queue */
    struct cmd *q_next;
    unsigned waiting; /* dependencies not yet met */
    enum state state;
    /* state == S_WINDOW, as the host thread reads it without the lock: the
     * scheduler changes the state of a command once it has left the
     * window, and the host still looks at it as a device's `last` or a
     * dependency (host thread). */
    bool in_window;
    struct cmd *ready_next;
    cl_event event;
    atomic_uint refs;
    size_t trace; /* 1 + index of its trace record, 0 if none */
    unsigned mark;
};

struct trace_rec {
    uint64_t id;
    const char *kind, *label;
    int dev;
    size_t bytes;
    double dispatched, completed;
    uint64_t *deps;
    unsigned num_deps;
};

static struct {
    bool up;
    int num_devices;
    dag_device *devices;
    unsigned num_contexts;
    struct context *contexts;
    bool dcr, dhdcr;
    char decision[512]; /* why the rewrites left to auto are on or off */
    size_t window_limit;

    /* Host thread. */
    struct cmd **win;
    size_t num_win, cap_win;
    size_t win_reads; /* reads among the window's commands */
    uint64_t next_id;
    unsigned epoch;

    /* Under lock. */
    pthread_mutex_t lock;
    pthread_cond_t wake; /* the scheduler: a command became ready, or stop */
    pthread_cond_t done; /* waiters: some command completed */
    struct cmd *ready_head, *ready_tail;
    struct cmd *sync_head; /* reads whose host memory to make sure of */
    bool stopping;
    unsigned live; /* submitted commands not yet complete */
    /* Event callbacks set and not yet over: a command may be complete (a
     * later one on its queue was) while its own callback is still to come,
     * and that callback touches the runtime, so the scheduler, and
     * dag_shutdown after it, wait for these too. */
    unsigned callbacks;
    cl_int error;
    char message[512];
    struct dag_stats stats;
    const char *trace_path;
    struct trace_rec *trace;
    size_t num_trace, cap_trace;
    double t0;

    pthread_t thread;
} rt = {.lock = PTHREAD_MUTEX_INITIALIZER,
        .wake = PTHREAD_COND_INITIALIZER,
        .done = PTHREAD_COND_INITIALIZER};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "dag: out of memory\n");
        abort();
    }
    return p;
}

static void *xrealloc(void *p, size_t size)
{
    p = realloc(p, size ? size : 1);
    if (!p) {
        fprintf(stderr, "dag: out of memory\n");
        abort();
    }
    return p;
}

static char *xstrdup(const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d) {
        fprintf(stderr, "dag: out of memory\n");
        abort();
    }
    return d;
}

/* ---- errors ---- */

/* Keeps the first error and its message. */
static void verror_locked(cl_int err, const char *format, va_list args)
{
    if (rt.error != CL_SUCCESS)
        return;
    rt.error = err ? err : CL_INVALID_VALUE;
    vsnprintf(rt.message, sizeof(rt.message), format, args);
}

static void error_locked(cl_int err, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void error_locked(cl_int err, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    verror_locked(err, format, args);
    va_end(args);
}

static cl_int set_error(cl_int err, const char *format, ...) __attribute__((format(printf, 2, 3)));
static cl_int set_error(cl_int err, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    pthread_mutex_lock(&rt.lock);
    verror_locked(err, format, args);
    pthread_mutex_unlock(&rt.lock);
    va_end(args);
    return err;
}

static const char *cl_error_name(cl_int err);

const char *dag_error(void)
{
    return rt.message;
}

/* ---- commands and references ---- */

static struct cmd *cmd_ref(struct cmd *c)
{
    atomic_fetch_add(&c->refs, 1);
    return c;
}

/*
 * Command records are kept for reuse, with their dependency and successor
 * arrays, and dag_init makes a first batch of them: commands then take no
 * fresh heap, whose first touch is a page fault (dag-floyd at n = 192, 388
 * commands in 5 ms, took some 55 of them, 1.4 us each on the test VM,
 * about 100 us of its 3 % over plain OpenCL).  Any thread may free a
 * command (the last reference: a callback, the scheduler, the host).
 */
#ifdef __SANITIZE_ADDRESS__
/* Freed, so that AddressSanitizer sees a use after the last reference. */
#define POOL_FIRST 0
#define POOL_MAX 0
#else
#define POOL_FIRST 512 /* made by dag_init */
#define POOL_MAX 4096  /* kept at most; more are freed */
#endif

static struct {
    pthread_mutex_t lock; /* held for a push or a pop */
    struct cmd *free;     /* linked by q_next */
    unsigned count;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

static struct cmd *cmd_alloc(void)
{
    pthread_mutex_lock(&pool.lock);
    struct cmd *c = pool.free;
    if (c) {
        pool.free = c->q_next;
        pool.count--;
    }
    pthread_mutex_unlock(&pool.lock);
    if (!c)
        return xcalloc(1, sizeof(*c));
    struct cmd **deps = c->deps, **succ = c->succ;
    unsigned cap_deps = c->cap_deps, cap_succ = c->cap_succ;
    memset(c, 0, sizeof(*c));
    c->deps = deps, c->cap_deps = cap_deps;
    c->succ = succ, c->cap_succ = cap_succ;
    return c;
}

/* c, its references given back and its arguments freed: kept or freed. */
static void cmd_recycle(struct cmd *c)
{
    pthread_mutex_lock(&pool.lock);
    static const unsigned most = POOL_MAX; /* (0 under ASan) */
    bool keep = pool.count < most;
    if (keep) {
        c->q_next = pool.free;
        pool.free = c;
        pool.count++;
    }
    pthread_mutex_unlock(&pool.lock);
    if (!keep) {
        free(c->deps);
        free(c->succ);
        free(c);
    }
}

static void pool_fill(unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        struct cmd *c = xcalloc(1, sizeof(*c));
        c->cap_deps = c->cap_succ = 4;
        c->deps = xcalloc(c->cap_deps, sizeof(*c->deps));
        c->succ = xcalloc(c->cap_succ, sizeof(*c->succ));
        cmd_recycle(c);
    }
}

static void pool_empty(void)
{
    pthread_mutex_lock(&pool.lock);
    struct cmd *list = pool.free;
    pool.free = NULL;
    pool.count = 0;
    pthread_mutex_unlock(&pool.lock);
    for (struct cmd *next; list; list = next) {
        next = list->q_next;
        free(list->deps);
        free(list->succ);
        free(list);
    }
}

static void cmd_unref(struct cmd *c)
{
    while (c && atomic_fetch_sub(&c->refs, 1) == 1) {
        /* By now its lists are empty but for references on the way out. */
        for (unsigned i = 0; i < c->num_deps; i++)
            cmd_unref(c->deps[i]);
        for (unsigned i = 0; i < c->num_succ; i++)
            cmd_unref(c->succ[i]);
        for (unsigned i = 0; i < c->num_args; i++)
            if (c->args[i].value != c->args[i].small)
                free(c->args[i].value);
        free(c->args);
        if (c->host_event)
            clReleaseEvent(c->host_event);
        struct cmd *prev = c->prev, *then = c->then;
        cmd_recycle(c);
        cmd_unref(then);
        c = prev; /* a loop, not recursion: device chains are long */
    }
}

static void add_dep(struct cmd *c, struct cmd *d)
{
    if (!d || d == c || d == c->prev)
        return;
    for (unsigned i = 0; i < c->num_deps; i++) {
        if (c->deps[i] == d)
            return;
    }
    if (c->num_deps == c->cap_deps) {
        c->cap_deps = c->cap_deps ? 2 * c->cap_deps : 4;
        c->deps = xrealloc(c->deps, c->cap_deps * sizeof(*c->deps));
    }
    c->deps[c->num_deps++] = cmd_ref(d);
}

static void remove_dep(struct cmd *c, struct cmd *d)
{
    for (unsigned i = 0; i < c->num_deps; i++) {
        if (c->deps[i] == d) {
            c->deps[i] = c->deps[--c->num_deps];
            cmd_unref(d);
            return;
        }
    }
}

/* The events' commands, and what a gather's reads wait for. */
static void add_event_deps(struct cmd *c, const dag_event *e)
{
    for (unsigned i = 0; e && i < e->n; i++) {
        add_dep(c, e->cmds[i]);
        add_dep(c, e->cmds[i]->then);
    }
}

static void flush_if_full(void);

/* A new command in the window; with a device, it goes last in its order. */
static struct cmd *new_cmd(enum kind kind, dag_device *dev)
{
    struct cmd *c = cmd_alloc();
    atomic_init(&c->refs, 1); /* the window's, then the scheduler's */
    c->id = ++rt.next_id;
    c->kind = kind;
    c->dev = dev;
    c->state = S_WINDOW;
    c->in_window = true;
    rt.win_reads += kind == K_READ;
    if (rt.num_win == rt.cap_win) {
        rt.cap_win = rt.cap_win ? 2 * rt.cap_win : 256;
        rt.win = xrealloc(rt.win, rt.cap_win * sizeof(*rt.win));
    }
    rt.win[rt.num_win++] = c;
    return c;
}

/* Puts c last in its device's order.  Done before c's other dependencies
 * are added, so that add_dep() leaves out the previous command of the
 * device, which the order already gives (dag-floyd's kernel waits on the
 * copy just before it): one array and one successor entry less a command. */
static void append_to_order(struct cmd *c)
{
    dag_device *dev = c->dev;
    c->prev = dev->last; /* the device's reference moves to c->prev */
    if (dev->last && dev->last->in_window)
        dev->last->next = c;
    dev->last = cmd_ref(c);
}

/* c modifies b: it waits for the copies that still read b elsewhere. */
static void take_guards(struct cmd *c, dag_buffer *b)
{
    for (unsigned i = 0; i < b->num_guards; i++) {
        add_dep(c, b->guards[i]);
        cmd_unref(b->guards[i]);
    }
    b->num_guards = 0;
}

static void add_guard(dag_buffer *b, struct cmd *c)
{
    b->guards = xrealloc(b->guards, (b->num_guards + 1) * sizeof(*b->guards));
    b->guards[b->num_guards++] = cmd_ref(c);
}

static dag_buffer *buffer_ref(dag_buffer *b)
{
    atomic_fetch_add(&b->refs, 1);
    return b;
}

/* Scheduler thread, without the lock: OpenCL keeps the memory object for
 * the commands already enqueued on it. */
static unsigned long mems_freed; /* scheduler thread */

static void buffer_unref(dag_buffer *b)
{
    if (atomic_fetch_sub(&b->refs, 1) != 1)
        return;
    if (b->mem) {
        clReleaseMemObject(b->mem);
        mems_freed++;
    }
    for (unsigned i = 0; i < b->num_guards; i++)
        cmd_unref(b->guards[i]);
    free(b->guards);
    free(b);
}

/* ---- the scheduler ---- */

/* Is c's dependency on d met as soon as d is enqueued, because c goes
 * after it on the same in-order queue?  Not when d reads into host memory
 * and c is a write, which may send that memory: an implementation may take
 * a write's host data when the write is enqueued rather than when it runs
 * (VOCL does), so the write waits until the read is complete. */
static bool queue_orders(const struct cmd *d, const struct cmd *c)
{
    return d->dev == c->dev && !(d->kind == K_READ && c->kind == K_WRITE);
}

/* Is c's dependency on d met? */
static bool met(const struct cmd *d, const struct cmd *c)
{
    return d->state == S_COMPLETE || (d->state == S_DISPATCHED && queue_orders(d, c));
}

static void push_ready_locked(struct cmd *c)
{
    c->state = S_READY;
    c->ready_next = NULL;
    if (rt.ready_tail)
        rt.ready_tail->ready_next = c;
    else
        rt.ready_head = c;
    rt.ready_tail = c;
}

static void add_succ_locked(struct cmd *d, struct cmd *c)
{
    if (d->num_succ == d->cap_succ) {
        d->cap_succ = d->cap_succ ? 2 * d->cap_succ : 4;
        d->succ = xrealloc(d->succ, d->cap_succ * sizeof(*d->succ));
    }
    d->succ[d->num_succ++] = cmd_ref(c);
}

static void wait_on_locked(struct cmd *c, struct cmd *d)
{
    if (d && !met(d, c)) {
        c->waiting++;
        add_succ_locked(d, c);
    }
}

static size_t cmd_bytes(const struct cmd *c)
{
    return c->kind == K_WRITE || c->kind == K_READ || c->kind == K_COPY ? c->size : 0;
}

static void trace_submit_locked(struct cmd *c)
{
    if (!rt.trace_path)
        return;
    if (rt.num_trace == rt.cap_trace) {
        rt.cap_trace = rt.cap_trace ? 2 * rt.cap_trace : 1024;
        rt.trace = xrealloc(rt.trace, rt.cap_trace * sizeof(*rt.trace));
    }
    struct trace_rec *t = &rt.trace[rt.num_trace++];
    *t = (struct trace_rec){.id = c->id,
                            .kind = kind_names[c->kind],
                            .label = c->label,
                            .dev = c->dev ? c->dev->index : -1,
                            .bytes = cmd_bytes(c)};
    t->deps = xcalloc(c->num_deps + 1, sizeof(*t->deps));
    if (c->prev)
        t->deps[t->num_deps++] = c->prev->id;
    for (unsigned i = 0; i < c->num_deps; i++)
        t->deps[t->num_deps++] = c->deps[i]->id;
    c->trace = rt.num_trace;
}

static void complete_locked(struct cmd *c, cl_int status)
{
    if (status < 0)
        error_locked(status, "%s (command %" PRIu64 ") on device %d failed: %s (%d)",
                     kind_names[c->kind], c->id, c->dev ? c->dev->index : -1,
                     cl_error_name(status), (int)status);
    c->state = S_COMPLETE;
    if (c->trace)
        rt.trace[c->trace - 1].completed = now() - rt.t0;
    for (unsigned i = 0; i < c->num_succ; i++) {
        struct cmd *s = c->succ[i];
        /* Successors that the queue orders were counted off at dispatch. */
        if (!queue_orders(c, s) && --s->waiting == 0)
            push_ready_locked(s);
        cmd_unref(s);
    }
    c->num_succ = 0;
    rt.live--;
    pthread_cond_broadcast(&rt.done);
    if (rt.ready_head)
        pthread_cond_signal(&rt.wake);
    cmd_unref(c); /* the scheduler's reference */
}

/* Builds `source` for the whole context once (scheduler thread). */
static cl_program get_program(struct context *ctx, const char *source, const char *options,
                              int dev_index)
{
    for (struct program *p = ctx->programs; p; p = p->next) {
        if (strcmp(p->source, source) == 0 && strcmp(p->options, options) == 0)
            return p->status == CL_SUCCESS ? p->program : NULL;
    }
    struct program *p = xcalloc(1, sizeof(*p));
    p->source = xstrdup(source);
    p->options = xstrdup(options);
    p->next = ctx->programs;
    ctx->programs = p;
    cl_int err;
    p->program = clCreateProgramWithSource(ctx->context, 1, &source, NULL, &err);
    if (err != CL_SUCCESS) {
        p->status = err;
        set_error(err, "clCreateProgramWithSource failed: %s (%d)", cl_error_name(err), (int)err);
        return NULL;
    }
    p->status = clBuildProgram(p->program, 0, NULL, options, NULL, NULL);
    if (p->status != CL_SUCCESS) {
        char log[400] = "";
        clGetProgramBuildInfo(p->program, rt.devices[dev_index].id, CL_PROGRAM_BUILD_LOG,
                              sizeof(log) - 1, log, NULL);
        set_error(p->status, "clBuildProgram failed: %s (%d); the build log begins: %s",
                  cl_error_name(p->status), (int)p->status, log);
        return NULL;
    }
    return p->program;
}

static bool is_enqueued_kind(enum kind kind)
{
    return kind == K_WRITE || kind == K_READ || kind == K_COPY || kind == K_RUN;
}

/* clSetKernelArg, unless the kernel has that value already (scheduler
 * thread).  value NULL: local memory of that size. */
static cl_int set_kernel_arg(dag_kernel *k, unsigned i, size_t size, const void *value)
{
    if (k->mems_freed != mems_freed) {
        for (unsigned a = 0; a < k->num_set; a++)
            k->set[a].known = false;
        k->mems_freed = mems_freed;
    }
    if (i >= k->num_set) {
        k->set = xrealloc(k->set, (i + 1) * sizeof(*k->set));
        memset(k->set + k->num_set, 0, (i + 1 - k->num_set) * sizeof(*k->set));
        k->num_set = i + 1;
    }
    struct set_arg *s = &k->set[i];
    bool fits = value && size <= sizeof(s->bytes);
    if (s->known && s->size == size && s->local == !value &&
        (!value || !memcmp(s->bytes, value, size)))
        return CL_SUCCESS;
    cl_int err = clSetKernelArg(k->kernel, i, size, value);
    s->known = err == CL_SUCCESS && (!value || fits);
    s->local = !value;
    s->size = size;
    if (fits)
        memcpy(s->bytes, value, size);
    return err;
}

/* Enqueues (or does) command c; returns its status.  Without the lock. */
static cl_int execute(struct cmd *c)
{
    cl_int err = CL_SUCCESS;
    dag_device *dev = c->dev;
    cl_event *event = c->notify ? &c->event : NULL;
    switch (c->kind) {
    case K_CREATE_BUFFER:
        c->buf->mem = clCreateBuffer(dev->ctx->context, c->buf->flags, c->buf->size, NULL, &err);
        break;
    case K_RELEASE_BUFFER:
        buffer_unref(c->buf);
        c->buf = NULL;
        break;
    case K_CREATE_KERNEL: {
        dag_kernel *k = c->kernel;
        cl_program program = get_program(dev->ctx, k->source, k->options, dev->index);
        if (!program)
            return CL_BUILD_PROGRAM_FAILURE;
        k->kernel = clCreateKernel(program, k->name, &err);
        break;
    }
    case K_RELEASE_KERNEL:
        if (c->kernel->kernel)
            err = clReleaseKernel(c->kernel->kernel);
        free(c->kernel->source);
        free(c->kernel->name);
        free(c->kernel->options);
        free(c->kernel->set);
        free(c->kernel);
        c->kernel = NULL;
        break;
    case K_WRITE:
        err = clEnqueueWriteBuffer(dev->queue, c->buf->mem, CL_FALSE, c->offset, c->size, c->host,
                                   0, NULL, event);
        break;
    case K_READ:
        err = clEnqueueReadBuffer(dev->queue, c->buf->mem, CL_FALSE, c->offset, c->size, c->host,
                                  0, NULL, event);
        break;
    case K_COPY:
        err = clEnqueueCopyBuffer(dev->queue, c->src->mem, c->buf->mem, c->src_offset, c->offset,
                                  c->size, 0, NULL, event);
        if (c->src->dev != c->buf->dev)
            c->d2d = true;
        buffer_unref(c->src);
        buffer_unref(c->buf);
        c->src = c->buf = NULL;
        break;
    case K_RUN: {
        cl_kernel k = c->kernel->kernel;
        if (!k)
            return CL_INVALID_KERNEL;
        for (unsigned i = 0; i < c->num_args && err == CL_SUCCESS; i++) {
            struct run_arg *a = &c->args[i];
            if (a->buffer)
                err = set_kernel_arg(c->kernel, i, sizeof(cl_mem), &a->buffer->mem);
            else
                err = set_kernel_arg(c->kernel, i, a->size, a->value);
        }
        if (err == CL_SUCCESS)
            err = clEnqueueNDRangeKernel(dev->queue, k, c->dims, c->has_offset ? c->goffset : NULL,
                                         c->global, c->has_local ? c->local : NULL, 0, NULL,
                                         event);
        break;
    }
    }
    if (err == CL_SUCCESS && is_enqueued_kind(c->kind)) {
        c->enqueued = true;
        dev->touched = true;
    }
    return err;
}

static void count_locked(const struct cmd *c)
{
    struct dag_stats *s = &rt.stats;
    s->commands++;
    switch (c->kind) {
    case K_WRITE:
        s->h2d_bytes += c->size;
        s->h2d_ops++;
        break;
    case K_READ:
        s->d2h_bytes += c->size;
        s->d2h_ops++;
        break;
    case K_COPY:
        if (c->d2d) {
            s->d2d_bytes += c->size;
            s->d2d_ops++;
        } else {
            s->local_bytes += c->size;
        }
        break;
    default:
        break;
    }
}

/* Commands of a queue complete in order: when c is complete, so is every
 * command enqueued on its device before it.  Only some commands carry a
 * callback (see notify_locked()); the others are completed here. */
static void complete_through_locked(dag_device *dev, uint64_t seq)
{
    while (dev->q_head && dev->q_head->seq <= seq) {
        struct cmd *h = dev->q_head;
        dev->q_head = h->q_next;
        if (!dev->q_head)
            dev->q_tail = NULL;
        if (h->state != S_COMPLETE)
            complete_locked(h, CL_SUCCESS);
        cmd_unref(h); /* the queue list's */
    }
}

/* c is complete on its device (after a sync, for a read). */
static void device_done_locked(struct cmd *c, cl_int status)
{
    dag_device *dev = c->dev;
    uint64_t seq = c->seq;
    if (c->state != S_COMPLETE)
        complete_locked(c, status);
    complete_through_locked(dev, seq);
}

/* The last thing a callback (or the read synchronisation it hands over
 * to) does: after it, it touches nothing of the runtime. */
static void callback_over(void)
{
    pthread_mutex_lock(&rt.lock);
    if (--rt.callbacks == 0)
        pthread_cond_signal(&rt.wake);
    pthread_mutex_unlock(&rt.lock);
}

static void CL_CALLBACK on_complete(cl_event event, cl_int status, void *data)
{
    struct cmd *c = data;
    pthread_mutex_lock(&rt.lock);
    if (c->kind == K_READ && status >= 0) {
        /* The scheduler makes sure the data is in host memory first; the
         * callback's reference goes with it. */
        c->ready_next = rt.sync_head;
        rt.sync_head = c;
        pthread_cond_signal(&rt.wake);
        pthread_mutex_unlock(&rt.lock);
        return;
    }
    c->event = NULL;
    device_done_locked(c, status);
    pthread_mutex_unlock(&rt.lock);
    clReleaseEvent(event);
    cmd_unref(c); /* the callback's */
    callback_over();
}

/* A read reported complete may not have filled host memory yet: an
 * implementation may fill it at the next synchronisation (VOCL fills a
 * non-blocking read's memory at the next clFinish or clWaitForEvents, as
 * libvocl(7) says).  clWaitForEvents on the complete event is that
 * synchronisation; it does not wait for anything else. */
static void sync_reads(struct cmd *list)
{
    for (struct cmd *c = list, *next; c; c = next) {
        next = c->ready_next;
        cl_event e = c->event;
        cl_int err = clWaitForEvents(1, &e);
        pthread_mutex_lock(&rt.lock);
        c->event = NULL;
        device_done_locked(c, err);
        pthread_mutex_unlock(&rt.lock);
        clReleaseEvent(e);
        cmd_unref(c); /* the callback's */
        callback_over();
    }
}

/* Which commands of a batch get an event and a callback: a read (its host
 * memory must be synchronised), one that a command on another device or the
 * host waits to complete, and the last one enqueued on each device (so
 * that every command is known to be complete before long); the others
 * complete with the next of their queue that has one.  A callback per
 * command would be simpler, but each costs an event and a hand-off between
 * threads, a few microseconds, as long as some kernels (dag-floyd's at
 * n = 192); and a chain of commands on one device is one batch. */
static void notify_locked(struct cmd *batch)
{
    for (struct cmd *c = batch; c; c = c->ready_next) {
        c->host_wait = c->waited;
        c->notify = c->kind == K_READ || c->waited;
        for (unsigned i = 0; i < c->num_succ && !c->notify; i++)
            c->notify = !queue_orders(c, c->succ[i]);
        if (is_enqueued_kind(c->kind))
            c->dev->q_head_batch = c; /* the last so far */
    }
    for (struct cmd *c = batch; c; c = c->ready_next) {
        if (is_enqueued_kind(c->kind) && c->dev->q_head_batch == c) {
            c->notify = true;
            c->dev->q_head_batch = NULL;
        }
    }
}

/* c is taken for enqueueing (or doing) in this batch (S_DISPATCHED): count
 * off its same-device successors, which may then join the batch after it. */
static void take_locked(struct cmd *c)
{
    c->state = S_DISPATCHED;
    for (unsigned i = 0; i < c->num_succ; i++) {
        struct cmd *s = c->succ[i];
        if (queue_orders(c, s) && --s->waiting == 0)
            push_ready_locked(s);
    }
    /* The graph behind a dispatched command is no longer needed. */
    for (unsigned i = 0; i < c->num_deps; i++)
        cmd_unref(c->deps[i]);
    c->num_deps = 0;
    cmd_unref(c->prev);
    c->prev = NULL;
}

/* The most commands of one device in one batch of the scheduler: a
 * command that a later flush makes another device wait for completes with
 * the last of its batch, so a batch is not a whole long chain.  (One
 * device's window, 64, is one batch.) */
#define BATCH_CHAIN 64

static void *scheduler(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&rt.lock);
    for (;;) {
        while (!rt.ready_head && !rt.sync_head &&
               !(rt.stopping && rt.live == 0 && rt.callbacks == 0))
            pthread_cond_wait(&rt.wake, &rt.lock);
        if (rt.sync_head) {
            struct cmd *list = rt.sync_head;
            rt.sync_head = NULL;
            pthread_mutex_unlock(&rt.lock);
            sync_reads(list);
            pthread_mutex_lock(&rt.lock);
            continue;
        }
        if (!rt.ready_head)
            break; /* stopping, and nothing is left */
        /* The batch: the ready commands, and those that taking them makes
         * ready, up to BATCH_CHAIN a device (a chain on one device goes in
         * few batches, and only the last command of each needs an event
         * and a callback; but a command completes only with the next one
         * that has them).  Nothing else enqueues: a command that depends on
         * one taken here goes after it on its queue, in this batch or a
         * later one. */
        struct cmd *batch = NULL, **tail = &batch, *later = NULL, *later_last = NULL;
        for (int d = 0; d < rt.num_devices; d++)
            rt.devices[d].in_batch = 0;
        while (rt.ready_head) {
            struct cmd *c = rt.ready_head;
            rt.ready_head = c->ready_next;
            if (!rt.ready_head)
                rt.ready_tail = NULL;
            c->ready_next = NULL;
            if (c->dev && c->dev->in_batch == BATCH_CHAIN) { /* the next pass's */
                if (later_last)
                    later_last->ready_next = c;
                else
                    later = c;
                later_last = c;
                continue;
            }
            if (c->dev)
                c->dev->in_batch++;
            *tail = c;
            tail = &c->ready_next;
            take_locked(c);
        }
        rt.ready_head = later;
        rt.ready_tail = later_last;
        notify_locked(batch);
        pthread_mutex_unlock(&rt.lock);

        for (struct cmd *c = batch; c; c = c->ready_next) {
            cl_int err = execute(c);
            if (err == CL_SUCCESS && c->host_wait && c->event &&
                clRetainEvent(c->event) == CL_SUCCESS)
                c->host_event = c->event;
            if (err != CL_SUCCESS) {
                c->event = NULL;
                set_error(err, "%s (command %" PRIu64 ") on device %d failed: %s (%d)",
                          kind_names[c->kind], c->id, c->dev ? c->dev->index : -1,
                          cl_error_name(err), (int)err);
            }
        }
        /* Events whose callbacks to set, collected before the lock lets
         * anyone complete (and free) a command; each callback holds a
         * reference until it has run. */
        size_t n = 0;
        for (struct cmd *c = batch; c; c = c->ready_next)
            n++;
        struct cmd **pending = xcalloc(n, sizeof(*pending));
        size_t num_pending = 0;
        pthread_mutex_lock(&rt.lock);
        for (struct cmd *c = batch, *next; c; c = next) {
            next = c->ready_next;
            dag_device *dev = c->dev;
            count_locked(c);
            if (c->trace)
                rt.trace[c->trace - 1].dispatched = now() - rt.t0;
            if (c->host_event) {
                c->host_event_set = true;
                pthread_cond_broadcast(&rt.done);
            }
            if (c->enqueued) {
                c->seq = ++dev->seq;
                if (c->kind != K_READ) {
                    c->q_next = NULL;
                    if (dev->q_tail)
                        dev->q_tail->q_next = cmd_ref(c);
                    else
                        dev->q_head = cmd_ref(c);
                    dev->q_tail = c;
                }
                if (c->event) {
                    pending[num_pending++] = cmd_ref(c);
                    rt.callbacks++;
                }
            } else {
                if (is_enqueued_kind(c->kind) && dev)
                    /* It failed: the commands before it may never be
                     * reported, so stop waiting for them (the error is
                     * what the next blocking call returns). */
                    complete_through_locked(dev, dev->seq);
                complete_locked(c, CL_SUCCESS);
            }
        }
        pthread_mutex_unlock(&rt.lock);
        for (size_t i = 0; i < num_pending; i++) {
            struct cmd *c = pending[i];
            cl_event e = c->event;
            cl_int err = clSetEventCallback(e, CL_COMPLETE, on_complete, c);
            if (err != CL_SUCCESS) {
                pthread_mutex_lock(&rt.lock);
                c->event = NULL;
                device_done_locked(c, err);
                pthread_mutex_unlock(&rt.lock);
                clReleaseEvent(e);
                cmd_unref(c);
                callback_over();
            }
        }
        free(pending);
        for (int d = 0; d < rt.num_devices; d++) {
            if (rt.devices[d].touched) {
                rt.devices[d].touched = false;
                clFlush(rt.devices[d].queue);
            }
        }
        pthread_mutex_lock(&rt.lock);
    }
    pthread_mutex_unlock(&rt.lock);
    return NULL;
}

/* ---- the optimiser (host thread, on the window) ---- */

/* Does c change the contents of b? */
static bool modifies(const struct cmd *c, const dag_buffer *b)
{
    switch (c->kind) {
    case K_WRITE:
    case K_COPY:
        return c->buf == b;
    case K_RUN: /* any buffer argument may be written */
        for (unsigned i = 0; i < c->num_args; i++) {
            if (c->args[i].buffer == b)
                return true;
        }
        return false;
    default:
        return false;
    }
}

/* Marks every window command that b depends on (itself included) with a
 * new epoch; is_marked() then answers "is a an ancestor of b". */
static void mark_ancestors(struct cmd *b)
{
    rt.epoch++;
    struct cmd **stack = xcalloc(rt.num_win + 1, sizeof(*stack));
    size_t top = 0;
    b->mark = rt.epoch;
    stack[top++] = b;
    while (top) {
        struct cmd *c = stack[--top];
        for (unsigned i = 0; i <= c->num_deps; i++) {
            struct cmd *d = i < c->num_deps ? c->deps[i] : c->prev;
            if (d && d->in_window && d->mark != rt.epoch) {
                d->mark = rt.epoch;
                stack[top++] = d;
            }
        }
    }
    free(stack);
}

static bool is_ancestor(struct cmd *a, struct cmd *b)
{
    mark_ancestors(b);
    return a != b && a->mark == rt.epoch;
}

/* Makes `copy`, which reads buffer b from after command `after` on b's
 * device but runs on another queue, finish before b's next modifier: that
 * one waits for it, or, if the window has none yet, the next one to come.
 * Returns false if that would close a cycle (the rewrite must not be done). */
static bool guard_source(struct cmd *after, dag_buffer *b, struct cmd *copy, bool check_only)
{
    struct cmd *m = after->next;
    while (m && !modifies(m, b))
        m = m->next;
    if (check_only)
        return !m || !is_ancestor(m, copy);
    if (m)
        add_dep(m, copy);
    else
        add_guard(b, copy);
    return true;
}

static struct cmd *new_internal(enum kind kind, dag_device *dev, const char *label)
{
    struct cmd *c = new_cmd(kind, dev);
    c->internal = true;
    c->label = label;
    return c;
}

static void make_copy(struct cmd *c, dag_buffer *src, size_t src_offset, dag_buffer *dst,
                      size_t dst_offset, size_t size, const char *label)
{
    c->kind = K_COPY;
    c->label = label;
    c->src = buffer_ref(src);
    c->src_offset = src_offset;
    c->buf = buffer_ref(dst);
    c->offset = dst_offset;
    c->size = size;
    c->host = NULL;
}

/* DHDCR: a write whose host range window reads filled becomes direct copies
 * from the devices those reads came from; the reads stay, so host memory is
 * still updated, asynchronously. */
static void dhdcr(void)
{
    if (rt.win_reads == 0)
        return; /* no write can come from reads: spare the arrays, every flush */
    size_t n = rt.num_win;
    struct dhdcr_read *ranges = xcalloc(n, sizeof(*ranges));
    struct cmd **reads = xcalloc(n, sizeof(*reads));
    struct dhdcr_piece *pieces = xcalloc(n, sizeof(*pieces));
    for (size_t i = 0; i < n; i++) {
        struct cmd *w = rt.win[i];
        if (w->kind != K_WRITE || w->internal)
            continue;
        uintptr_t lo = (uintptr_t)w->host, hi = lo + w->size;
        size_t nr = 0;
        bool ok = true;
        for (size_t j = 0; j < i && ok; j++) {
            struct cmd *r = rt.win[j];
            if (r->kind != K_READ || r->internal)
                continue;
            uintptr_t rlo = (uintptr_t)r->host;
            if (rlo >= hi || rlo + r->size <= lo)
                continue;
            /* A read of the range that the write does not wait for races
             * with it: leave such a program as it is. */
            ok = r->dev->ctx == w->dev->ctx && r->buf != w->buf && is_ancestor(r, w);
            reads[nr] = r;
            ranges[nr++] = (struct dhdcr_read){.host = rlo, .size = r->size};
        }
        if (!ok || nr == 0)
            continue;
        int np = dhdcr_cover(lo, w->size, ranges, nr, pieces);
        if (np <= 0)
            continue;
        /* Each source must stay unchanged until its copy has run. */
        for (int p = 0; p < np && ok; p++) {
            struct cmd *r = reads[pieces[p].read];
            if (r->dev == w->dev) {
                for (struct cmd *m = r->next; m && m != w && ok; m = m->next)
                    ok = !modifies(m, r->buf);
            } else {
                ok = guard_source(r, r->buf, w, true);
            }
        }
        if (!ok)
            continue;
        /* w becomes the copy of the last piece; the others run just before
         * it on the same queue, so w completes last. */
        struct cmd *orig_prev = w->prev;
        dag_buffer *dst = w->buf;
        size_t dst_offset = w->offset;
        for (int p = 0; p < np; p++) {
            struct cmd *r = reads[pieces[p].read];
            remove_dep(w, r);
        }
        for (int p = 0; p < np; p++) {
            struct cmd *r = reads[pieces[p].read];
            struct cmd *c = w;
            if (p + 1 < np) {
                c = new_internal(K_COPY, w->dev, "dhdcr");
                add_dep(c, orig_prev);
                for (unsigned k = 0; k < w->num_deps; k++)
                    add_dep(c, w->deps[k]);
            }
            make_copy(c, r->buf, r->offset + pieces[p].src, dst, dst_offset + pieces[p].dst,
                      pieces[p].size, "dhdcr");
            add_dep(c, r->prev);
            for (unsigned k = 0; k < r->num_deps; k++)
                add_dep(c, r->deps[k]);
            if (c != w)
                add_dep(w, c);
            if (r->dev != w->dev)
                guard_source(r, r->buf, c, false);
        }
        pthread_mutex_lock(&rt.lock);
        rt.stats.dhdcr_copies++;
        pthread_mutex_unlock(&rt.lock);
    }
    free(ranges);
    free(reads);
    free(pieces);
}

/* A buffer made by an optimisation, created and released in the window. */
static dag_buffer *staging(dag_device *dev, size_t size, struct cmd **create)
{
    dag_buffer *b = xcalloc(1, sizeof(*b));
    atomic_init(&b->refs, 1);
    b->dev = dev;
    b->size = size;
    b->flags = CL_MEM_READ_WRITE;
    *create = new_internal(K_CREATE_BUFFER, dev, "staging");
    (*create)->buf = b;
    return b;
}

static void release_staging(dag_buffer *b, struct cmd **after, size_t n)
{
    struct cmd *c = new_internal(K_RELEASE_BUFFER, b->dev, "staging");
    c->buf = b;
    for (size_t i = 0; i < n; i++)
        add_dep(c, after[i]);
}


/* Broadcast: t[0] writes the host region; every other device copies it
 * from its parent in the tree. */
static void dcr_broadcast(struct cmd **t, size_t p, const size_t *parent, const size_t *child,
                          size_t edges)
{
    for (size_t i = 1; i < p; i++) {
        for (unsigned k = 0; k < t[i]->num_deps; k++)
            add_dep(t[0], t[i]->deps[k]);
    }
    t[0]->label = "broadcast";
    /* The original buffers and offsets, before t[] become copies. */
    dag_buffer **buf = xcalloc(p, sizeof(*buf));
    size_t *off = xcalloc(p, sizeof(*off));
    for (size_t i = 0; i < p; i++) {
        buf[i] = t[i]->buf;
        off[i] = t[i]->offset;
    }
    for (size_t e = 0; e < edges; e++) {
        struct cmd *from = t[parent[e]], *to = t[child[e]];
        make_copy(to, buf[parent[e]], off[parent[e]], buf[child[e]], off[child[e]], to->size,
                  "broadcast");
        add_dep(to, from);
        guard_source(from, buf[parent[e]], to, false);
    }
    free(buf);
    free(off);
}

/* Where each rank's slice starts in the whole host region, taken before
 * the rewrite changes the commands. */
static size_t *slice_offsets(struct cmd **t, size_t p)
{
    size_t *off = xcalloc(p, sizeof(*off));
    for (size_t r = 0; r < p; r++)
        off[r] = (size_t)((uintptr_t)t[r]->host - (uintptr_t)t[0]->host);
    return off;
}

/* Bytes of the subtree of ranks r .. r+span-1. */
static size_t range(struct cmd **t, const size_t *rel, size_t r, size_t span)
{
    return rel[r + span - 1] + t[r + span - 1]->size - rel[r];
}

/* Scatter: one write of the whole region into a staging buffer on device 0;
 * each subtree's part travels down the tree into staging buffers, and every
 * device copies its slice from the staging buffer it got. */
static void dcr_scatter(struct cmd **t, size_t p, const size_t *parent, const size_t *child,
                        const size_t *span, size_t edges)
{
    size_t *rel = slice_offsets(t, p);
    dag_buffer **stage = xcalloc(p, sizeof(*stage));
    struct cmd **fill = xcalloc(p, sizeof(*fill));
    struct cmd ***readers = xcalloc(p, sizeof(*readers));
    size_t *num_readers = xcalloc(p, sizeof(*num_readers));
    for (size_t i = 0; i < p; i++)
        readers[i] = xcalloc(p + 1, sizeof(**readers));
    size_t total = range(t, rel, 0, p);

    struct cmd *create;
    stage[0] = staging(t[0]->dev, total, &create);
    fill[0] = new_internal(K_WRITE, t[0]->dev, "scatter");
    fill[0]->buf = stage[0];
    fill[0]->host = t[0]->host;
    fill[0]->size = total;
    add_dep(fill[0], create);
    for (size_t i = 0; i < p; i++) {
        for (unsigned k = 0; k < t[i]->num_deps; k++)
            add_dep(fill[0], t[i]->deps[k]);
    }
    for (size_t e = 0; e < edges; e++) {
        size_t par = parent[e], ch = child[e];
        if (span[e] == 1)
            continue; /* a leaf copies its slice straight from its parent */
        stage[ch] = staging(t[ch]->dev, range(t, rel, ch, span[e]), &create);
        fill[ch] = new_internal(K_COPY, t[ch]->dev, "scatter");
        make_copy(fill[ch], stage[par], rel[ch] - rel[par], stage[ch], 0, stage[ch]->size,
                  "scatter");
        add_dep(fill[ch], create);
        add_dep(fill[ch], fill[par]);
        readers[par][num_readers[par]++] = fill[ch];
    }
    for (size_t e = 0; e <= edges; e++) {
        /* e == edges stands for the root. */
        size_t r = e < edges ? child[e] : 0;
        size_t from = stage[r] ? r : parent[e];
        make_copy(t[r], stage[from], rel[r] - rel[from], t[r]->buf, t[r]->offset,
                  t[r]->size, "scatter");
        add_dep(t[r], fill[from]);
        readers[from][num_readers[from]++] = t[r];
    }
    for (size_t r = 0; r < p; r++) {
        if (stage[r])
            release_staging(stage[r], readers[r], num_readers[r]);
        free(readers[r]);
    }
    free(readers);
    free(num_readers);
    free(rel);
    free(stage);
    free(fill);
}

/* Gather: every device copies its slice into its parent's staging buffer
 * (internal nodes first into their own), each subtree's part goes up the
 * tree, and device 0 reads the whole region to the host at once.  The
 * original reads become the first copies; their host data is there when
 * the final read is done (`then`). */
static void dcr_gather(struct cmd **t, size_t p, const size_t *parent, const size_t *child,
                       const size_t *span, size_t edges)
{
    size_t *rel = slice_offsets(t, p);
    dag_buffer **stage = xcalloc(p, sizeof(*stage));
    struct cmd **create = xcalloc(p, sizeof(*create));
    struct cmd **up = xcalloc(p, sizeof(*up)); /* what fills the parent's part */
    size_t *span_of = xcalloc(p, sizeof(*span_of));
    size_t *parent_of = xcalloc(p, sizeof(*parent_of));
    span_of[0] = p;
    for (size_t e = 0; e < edges; e++) {
        span_of[child[e]] = span[e];
        parent_of[child[e]] = parent[e];
    }
    for (size_t r = 0; r < p; r++) {
        if (span_of[r] > 1)
            stage[r] = staging(t[r]->dev, range(t, rel, r, span_of[r]), &create[r]);
    }
    void *host = t[0]->host;
    size_t total = range(t, rel, 0, p);
    /* Slices first: a device's own slice into its staging buffer, or, for
     * a leaf, into its parent's. */
    for (size_t r = 0; r < p; r++) {
        size_t to = stage[r] ? r : parent_of[r];
        make_copy(t[r], t[r]->buf, t[r]->offset, stage[to], rel[r] - rel[to], t[r]->size,
                  "gather");
        add_dep(t[r], create[to]);
        if (!stage[r])
            up[r] = t[r];
    }
    /* Then the subtrees' parts, deepest first: the tree's edges in reverse
     * order have every child's edges before its parent's. */
    for (size_t e = edges; e-- > 0;) {
        size_t ch = child[e], par = parent[e];
        if (!stage[ch])
            continue;
        up[ch] = new_internal(K_COPY, t[ch]->dev, "gather");
        make_copy(up[ch], stage[ch], 0, stage[par], rel[ch] - rel[par], stage[ch]->size,
                  "gather");
        add_dep(up[ch], t[ch]);
        add_dep(up[ch], create[par]);
    }
    for (size_t e = 0; e < edges; e++) {
        if (up[child[e]] != t[child[e]] && stage[child[e]]) {
            /* a child's part waits for the grandchildren's */
            for (size_t g = 0; g < edges; g++) {
                if (parent[g] == child[e])
                    add_dep(up[child[e]], up[child[g]]);
            }
        }
    }
    struct cmd *final = new_internal(K_READ, t[0]->dev, "gather");
    final->buf = stage[0];
    final->host = host;
    final->size = total;
    add_dep(final, t[0]);
    for (size_t e = 0; e < edges; e++) {
        if (parent[e] == 0)
            add_dep(final, up[child[e]]);
    }
    for (size_t r = 0; r < p; r++) {
        if (!stage[r])
            continue;
        struct cmd *user = r == 0 ? final : up[r];
        release_staging(stage[r], &user, 1);
    }
    /* Whoever waited for a read now waits for the host data too. */
    for (size_t r = 0; r < p; r++)
        t[r]->then = cmd_ref(final);
    for (size_t i = 0; i < rt.num_win; i++) {
        struct cmd *c = rt.win[i];
        for (unsigned k = 0; k < c->num_deps && c != final; k++) {
            for (size_t r = 0; r < p; r++) {
                if (c->deps[k] == t[r] && c->internal == false) {
                    add_dep(c, final);
                    break;
                }
            }
        }
    }
    free(rel);
    free(stage);
    free(create);
    free(up);
    free(span_of);
    free(parent_of);
}

/* DCR: compares the devices' transfer lists position by position. */
static void dcr(void)
{
    size_t p = (size_t)rt.num_devices;
    if (p < 2 || rt.num_contexts != 1)
        return;
    struct cmd ***lists = xcalloc(p, sizeof(*lists));
    size_t *len = xcalloc(p, sizeof(*len));
    size_t n = rt.num_win;
    for (size_t d = 0; d < p; d++)
        lists[d] = xcalloc(n + 1, sizeof(**lists));
    for (size_t i = 0; i < n; i++) {
        struct cmd *c = rt.win[i];
        if ((c->kind == K_WRITE || c->kind == K_READ) && !c->internal)
            lists[c->dev->index][len[c->dev->index]++] = c;
    }
    size_t positions = n;
    for (size_t d = 0; d < p; d++)
        positions = len[d] < positions ? len[d] : positions;
    struct cmd **t = xcalloc(p, sizeof(*t));
    struct dcr_transfer *desc = xcalloc(p, sizeof(*desc));
    /* The tree enters each node once (the devices' nodes, as DQL numbers
     * them), so that a collective's bytes cross between hosts as few
     * times as they can.  A scatter or a gather needs each subtree's
     * devices consecutive (its staging buffer holds their slices in
     * order): where a node's devices are not, they take the binomial tree
     * over the device order. */
    int *nodes = xcalloc(p, sizeof(*nodes));
    for (size_t d = 0; d < p; d++)
        nodes[d] = rt.devices[d].node;
    size_t *parent = xcalloc(p, sizeof(*parent)), *child = xcalloc(p, sizeof(*child));
    size_t *span = xcalloc(p, sizeof(*span));
    bool consecutive;
    size_t edges = dcr_node_tree(p, nodes, parent, child, span, &consecutive);
    size_t *sg_parent = parent, *sg_child = child, *sg_span = span, sg_edges = edges;
    if (!consecutive) {
        sg_parent = xcalloc(p, sizeof(*sg_parent));
        sg_child = xcalloc(p, sizeof(*sg_child));
        sg_span = xcalloc(p, sizeof(*sg_span));
        sg_edges = dcr_tree(p, sg_parent, sg_child, sg_span);
    }
    free(nodes);
    for (size_t j = 0; j < positions; j++) {
        for (size_t d = 0; d < p; d++) {
            t[d] = lists[d][j];
            desc[d] = (struct dcr_transfer){.dir = t[d]->kind == K_WRITE ? DCR_WRITE : DCR_READ,
                                            .host = (uintptr_t)t[d]->host,
                                            .size = t[d]->size};
        }
        enum dcr_pattern pattern = dcr_detect(desc, p);
        if (pattern == DCR_NONE)
            continue;
        /* One collective runs all of them at once: none may wait for
         * another, or the collective would wait for itself. */
        bool independent = true;
        for (size_t b = 0; b < p && independent; b++) {
            mark_ancestors(t[b]);
            for (size_t a = 0; a < p && independent; a++)
                independent = a == b || t[a]->mark != rt.epoch;
        }
        if (!independent)
            continue;
        pthread_mutex_lock(&rt.lock);
        if (pattern == DCR_BROADCAST)
            rt.stats.broadcasts++;
        else if (pattern == DCR_SCATTER)
            rt.stats.scatters++;
        else
            rt.stats.gathers++;
        pthread_mutex_unlock(&rt.lock);
        if (pattern == DCR_BROADCAST)
            dcr_broadcast(t, p, parent, child, edges);
        else if (pattern == DCR_SCATTER)
            dcr_scatter(t, p, sg_parent, sg_child, sg_span, sg_edges);
        else
            dcr_gather(t, p, sg_parent, sg_child, sg_span, sg_edges);
    }
    if (!consecutive) {
        free(sg_parent);
        free(sg_child);
        free(sg_span);
    }
    for (size_t d = 0; d < p; d++)
        free(lists[d]);
    free(lists);
    free(len);
    free(t);
    free(desc);
    free(parent);
    free(child);
    free(span);
}

/* ---- the window ---- */

void dag_flush(void)
{
    if (!rt.up || rt.num_win == 0)
        return;
    if (rt.dhdcr)
        dhdcr();
    if (rt.dcr)
        dcr();
    pthread_mutex_lock(&rt.lock);
    size_t n = rt.num_win;
    for (size_t i = 0; i < n; i++) {
        struct cmd *c = rt.win[i];
        c->state = S_WAITING;
        c->in_window = false;
        c->next = NULL;
        rt.live++;
    }
    for (size_t i = 0; i < n; i++) {
        struct cmd *c = rt.win[i];
        trace_submit_locked(c);
        wait_on_locked(c, c->prev);
        for (unsigned k = 0; k < c->num_deps; k++)
            wait_on_locked(c, c->deps[k]);
    }
    for (size_t i = 0; i < n; i++) {
        if (rt.win[i]->waiting == 0)
            push_ready_locked(rt.win[i]);
    }
    rt.num_win = 0;
    rt.win_reads = 0;
    pthread_cond_signal(&rt.wake);
    pthread_mutex_unlock(&rt.lock);
}

static void flush_if_full(void)
{
    if (rt.num_win >= rt.window_limit)
        dag_flush();
}

static bool done_locked(const struct cmd *c)
{
    return c->state == S_COMPLETE && (!c->then || c->then->state == S_COMPLETE);
}

/* Waits for c natively once the scheduler has enqueued it: the driver
 * then wakes this thread itself, as it wakes a plain program's blocking
 * call, instead of through the completion callback and the scheduler
 * thread.  The callback still comes and finds c complete.  With the lock;
 * false when there is nothing to wait on that way. */
static bool wait_natively_locked(struct cmd *c)
{
    if (!c->host_event_set || !c->host_event || c->state == S_COMPLETE)
        return false;
    cl_event e = c->host_event;
    c->host_event = NULL;
    pthread_mutex_unlock(&rt.lock);
    cl_int err = clWaitForEvents(1, &e);
    clReleaseEvent(e);
    pthread_mutex_lock(&rt.lock);
    /* A failure is left to the callback, which reports it. */
    if (err == CL_SUCCESS && c->state != S_COMPLETE)
        device_done_locked(c, CL_SUCCESS);
    return true;
}

/* Waits for the commands (after a flush); returns the first error. */
static int wait_cmds(struct cmd *const *cmds, unsigned n)
{
    /* Not yet taken by the scheduler: it gets a callback of its own, so
     * that the wait does not last until the end of its batch. */
    pthread_mutex_lock(&rt.lock);
    for (unsigned i = 0; i < n; i++)
        cmds[i]->waited = true;
    pthread_mutex_unlock(&rt.lock);
    dag_flush();
    pthread_mutex_lock(&rt.lock);
    for (unsigned i = 0; i < n; i++) {
        while (!done_locked(cmds[i]))
            if (!wait_natively_locked(cmds[i]))
                pthread_cond_wait(&rt.done, &rt.lock);
    }
    cl_int err = rt.error;
    pthread_mutex_unlock(&rt.lock);
    return err;
}

/* Ends a call: hands out the event, or blocks until c is done. */
static int finish_call(struct cmd *c, dag_event **out)
{
    if (out) {
        dag_event *e = xcalloc(1, sizeof(*e) + sizeof(e->cmds[0]));
        e->n = 1;
        e->cmds[0] = cmd_ref(c);
        *out = e;
        flush_if_full();
        return CL_SUCCESS;
    }
    cmd_ref(c);
    int err = wait_cmds(&c, 1);
    cmd_unref(c);
    return err;
}

/* ---- the API ---- */

static bool check_up(const char *what)
{
    if (rt.up)
        return true;
    set_error(CL_INVALID_OPERATION, "%s before dag_init()", what);
    return false;
}

dag_buffer *dag_create_buffer(dag_device *dev, size_t size, cl_mem_flags flags)
{
    if (!check_up("dag_create_buffer") || !dev || size == 0) {
        set_error(CL_INVALID_VALUE, "dag_create_buffer: no device or a size of 0");
        return NULL;
    }
    dag_buffer *b = xcalloc(1, sizeof(*b));
    atomic_init(&b->refs, 1);
    b->dev = dev;
    b->size = size;
    b->flags = flags;
    struct cmd *c = new_cmd(K_CREATE_BUFFER, dev);
    c->buf = b;
    append_to_order(c);
    flush_if_full();
    return b;
}

void dag_release_buffer(dag_buffer *b, dag_event *wait)
{
    if (!b || !check_up("dag_release_buffer"))
        return;
    struct cmd *c = new_cmd(K_RELEASE_BUFFER, b->dev);
    c->buf = b;
    append_to_order(c);
    add_event_deps(c, wait);
    flush_if_full();
}

static int transfer(enum kind kind, dag_buffer *b, size_t offset, size_t size, void *host,
                    dag_event *wait, dag_event **out)
{
    const char *name = kind == K_WRITE ? "dag_write" : "dag_read";
    if (!check_up(name))
        return CL_INVALID_OPERATION;
    if (!b || !host || size == 0 || offset > b->size || size > b->size - offset)
        return set_error(CL_INVALID_VALUE, "%s: %zu bytes at %zu do not fit a buffer of %zu", name,
                         size, offset, b ? b->size : 0);
    struct cmd *c = new_cmd(kind, b->dev);
    c->buf = b;
    c->offset = offset;
    c->size = size;
    c->host = host;
    append_to_order(c);
    add_event_deps(c, wait);
    if (kind == K_WRITE)
        take_guards(c, b);
    return finish_call(c, out);
}

int dag_write(dag_buffer *b, size_t offset, size_t size, const void *host, dag_event *wait,
              dag_event **out)
{
    return transfer(K_WRITE, b, offset, size, (void *)host, wait, out);
}

int dag_read(dag_buffer *b, size_t offset, size_t size, void *host, dag_event *wait,
             dag_event **out)
{
    return transfer(K_READ, b, offset, size, host, wait, out);
}

int dag_copy(dag_buffer *dst, size_t dst_offset, dag_buffer *src, size_t src_offset, size_t size,
             dag_event *wait, dag_event **out)
{
    if (!check_up("dag_copy"))
        return CL_INVALID_OPERATION;
    if (!dst || !src || size == 0 || dst_offset > dst->size || size > dst->size - dst_offset ||
        src_offset > src->size || size > src->size - src_offset)
        return set_error(CL_INVALID_VALUE, "dag_copy: %zu bytes do not fit the buffers", size);
    if (dst->dev->ctx != src->dev->ctx)
        return set_error(CL_INVALID_CONTEXT,
                         "dag_copy: devices %d and %d are on different platforms",
                         src->dev->index, dst->dev->index);
    struct cmd *c = new_cmd(K_COPY, dst->dev);
    make_copy(c, src, src_offset, dst, dst_offset, size, NULL);
    c->label = NULL;
    append_to_order(c);
    add_event_deps(c, wait);
    add_dep(c, src->dev->last); /* what src's device did before (c itself on one device) */
    take_guards(c, dst);
    if (src->dev != dst->dev)
        add_guard(src, c);
    return finish_call(c, out);
}

dag_kernel *dag_create_kernel(dag_device *dev, const char *source, const char *name,
                              const char *options)
{
    if (!check_up("dag_create_kernel") || !dev || !source || !name) {
        set_error(CL_INVALID_VALUE, "dag_create_kernel: no device, source or name");
        return NULL;
    }
    dag_kernel *k = xcalloc(1, sizeof(*k));
    k->dev = dev;
    k->source = xstrdup(source);
    k->name = xstrdup(name);
    k->options = xstrdup(options);
    struct cmd *c = new_cmd(K_CREATE_KERNEL, dev);
    c->kernel = k;
    append_to_order(c);
    flush_if_full();
    return k;
}

void dag_release_kernel(dag_kernel *k, dag_event *wait)
{
    if (!k || !check_up("dag_release_kernel"))
        return;
    struct cmd *c = new_cmd(K_RELEASE_KERNEL, k->dev);
    c->kernel = k;
    append_to_order(c);
    add_event_deps(c, wait);
    flush_if_full();
}

int dag_run(dag_kernel *k, cl_uint dims, const size_t *offset, const size_t *global,
            const size_t *local, dag_event *wait, dag_event **out, unsigned nargs, ...)
{
    if (!check_up("dag_run"))
        return CL_INVALID_OPERATION;
    if (!k || dims < 1 || dims > 3 || !global)
        return set_error(CL_INVALID_VALUE, "dag_run: no kernel, or %u dimensions", dims);
    struct cmd *c = new_cmd(K_RUN, k->dev);
    c->kernel = k;
    c->dims = dims;
    c->has_offset = offset != NULL;
    c->has_local = local != NULL;
    for (cl_uint d = 0; d < dims; d++) {
        c->global[d] = global[d];
        c->goffset[d] = offset ? offset[d] : 0;
        c->local[d] = local ? local[d] : 0;
    }
    c->args = xcalloc(nargs, sizeof(*c->args));
    c->num_args = nargs;
    va_list args;
    va_start(args, nargs);
    cl_int err = CL_SUCCESS;
    for (unsigned i = 0; i < nargs; i++) {
        struct dag_arg a = va_arg(args, struct dag_arg);
        c->args[i].buffer = a.buffer;
        c->args[i].size = a.size;
        if (a.buffer && a.buffer->dev != k->dev)
            err = set_error(CL_INVALID_MEM_OBJECT,
                            "dag_run: argument %u is a buffer of device %d, the kernel's is %d", i,
                            a.buffer->dev->index, k->dev->index);
        if (!a.buffer && a.value) {
            c->args[i].value = a.size <= sizeof(c->args[i].small) ? c->args[i].small
                                                                  : xcalloc(1, a.size);
            memcpy(c->args[i].value, a.value, a.size);
        }
    }
    va_end(args);
    append_to_order(c);
    add_event_deps(c, wait);
    for (unsigned i = 0; i < nargs; i++) {
        if (c->args[i].buffer)
            take_guards(c, c->args[i].buffer);
    }
    int result = finish_call(c, out);
    return err != CL_SUCCESS ? err : result;
}

dag_event *dag_merge(unsigned n, dag_event *const *events)
{
    unsigned total = 0;
    for (unsigned i = 0; i < n; i++)
        total += events[i] ? events[i]->n : 0;
    dag_event *e = xcalloc(1, sizeof(*e) + total * sizeof(e->cmds[0]));
    e->n = total;
    unsigned k = 0;
    for (unsigned i = 0; i < n; i++) {
        for (unsigned j = 0; events[i] && j < events[i]->n; j++)
            e->cmds[k++] = cmd_ref(events[i]->cmds[j]);
    }
    return e;
}

int dag_wait(dag_event *e)
{
    if (!e)
        return rt.error;
    return wait_cmds(e->cmds, e->n);
}

void dag_release_event(dag_event *e)
{
    if (!e)
        return;
    for (unsigned i = 0; i < e->n; i++)
        cmd_unref(e->cmds[i]);
    free(e);
}

int dag_finish(void)
{
    if (!rt.up)
        return rt.error;
    dag_flush();
    pthread_mutex_lock(&rt.lock);
    while (rt.live > 0)
        pthread_cond_wait(&rt.done, &rt.lock);
    cl_int err = rt.error;
    pthread_mutex_unlock(&rt.lock);
    return err;
}

void dag_get_stats(struct dag_stats *stats)
{
    pthread_mutex_lock(&rt.lock);
    *stats = rt.stats;
    pthread_mutex_unlock(&rt.lock);
}

/* ---- devices ---- */

/* Every device of every platform, for DQL. */
struct candidates {
    size_t n;
    cl_device_id *ids;
    cl_platform_id *platforms;
    struct app_location *locs; /* NULL in dag_query_device's, which needs no names */
    int *nodes;
    char *string; /* the last string attribute read */
};

static int get_attr(void *ctx, size_t index, const struct dql_attr *attr, struct dql_value *v)
{
    struct candidates *cand = ctx;
    cl_device_id id = cand->ids[index];
    union {
        cl_uint u;
        cl_ulong ul;
        size_t sz;
        cl_bool b;
        cl_device_type t;
    } x = {0};
    switch (attr->kind) {
    case DQL_STRING: {
        size_t size = 0;
        if (clGetDeviceInfo(id, attr->param, 0, NULL, &size) != CL_SUCCESS)
            return -1;
        free(cand->string);
        cand->string = xcalloc(size + 1, 1);
        if (clGetDeviceInfo(id, attr->param, size, cand->string, NULL) != CL_SUCCESS)
            return -1;
        v->string = cand->string;
        return 0;
    }
    case DQL_UINT:
        if (clGetDeviceInfo(id, attr->param, sizeof(x.u), &x.u, NULL) != CL_SUCCESS)
            return -1;
        v->number = x.u;
        return 0;
    case DQL_BOOL:
        if (clGetDeviceInfo(id, attr->param, sizeof(x.b), &x.b, NULL) != CL_SUCCESS)
            return -1;
        v->number = x.b != 0;
        return 0;
    case DQL_ULONG:
        if (clGetDeviceInfo(id, attr->param, sizeof(x.ul), &x.ul, NULL) != CL_SUCCESS)
            return -1;
        v->number = x.ul;
        return 0;
    case DQL_SIZE:
        if (clGetDeviceInfo(id, attr->param, sizeof(x.sz), &x.sz, NULL) != CL_SUCCESS)
            return -1;
        v->number = x.sz;
        return 0;
    case DQL_TYPE:
        if (clGetDeviceInfo(id, attr->param, sizeof(x.t), &x.t, NULL) != CL_SUCCESS)
            return -1;
        v->number = x.t;
        return 0;
    }
    return -1;
}

/* The devices' nodes.  A driver with cl_vocl_device_location (VOCL) says
 * which host each device is on: nodes are numbered in the order they first
 * appear among all candidates, so under vocl-run node k is the k-th
 * distinct host of the proxies (by rank).  A driver without it means every
 * device is on this node: node 0 natively.  DAG_NODE_SIZE=K overrides both
 * (an experiment, or a driver that places devices and does not say so):
 * device i of the platform order is on node i / K. */
static void number_nodes(struct candidates *cand)
{
    const char *s = getenv("DAG_NODE_SIZE");
    long k = s ? strtol(s, NULL, 10) : 0;
    if (k > 0) {
        for (size_t i = 0; i < cand->n; i++)
            cand->nodes[i] = (int)(i / (size_t)k);
        return;
    }
    app_number_nodes(cand->locs, cand->n, cand->nodes);
}

static int parse_query(const char *text, struct dql_query *q)
{
    struct dql_error e;
    if (dql_parse(text ? text : "", q, &e) != 0)
        return set_error(CL_INVALID_VALUE, "DQL: at position %zu of \"%s\": %s", e.position,
                         text ? text : "", e.message);
    return CL_SUCCESS;
}

static int find_candidates(struct candidates *cand)
{
    cl_uint np = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    if (err == CL_PLATFORM_NOT_FOUND_KHR || np == 0)
        return set_error(CL_DEVICE_NOT_FOUND, "no OpenCL platform found");
    if (err != CL_SUCCESS)
        return set_error(err, "clGetPlatformIDs failed: %s", cl_error_name(err));
    cl_platform_id *platforms = xcalloc(np, sizeof(*platforms));
    clGetPlatformIDs(np, platforms, NULL);
    for (cl_uint p = 0; p < np; p++) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) != CL_SUCCESS || !nd)
            continue;
        cand->ids = xrealloc(cand->ids, (cand->n + nd) * sizeof(*cand->ids));
        cand->platforms = xrealloc(cand->platforms, (cand->n + nd) * sizeof(*cand->platforms));
        cand->nodes = xrealloc(cand->nodes, (cand->n + nd) * sizeof(*cand->nodes));
        cand->locs = xrealloc(cand->locs, (cand->n + nd) * sizeof(*cand->locs));
        clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, nd, cand->ids + cand->n, NULL);
        for (cl_uint d = 0; d < nd; d++) {
            cand->platforms[cand->n + d] = platforms[p];
            app_device_location(cand->ids[cand->n + d], &cand->locs[cand->n + d]);
        }
        cand->n += nd;
    }
    free(platforms);
    if (cand->n == 0)
        return set_error(CL_DEVICE_NOT_FOUND, "no OpenCL device found on any platform");
    number_nodes(cand);
    return CL_SUCCESS;
}

static void free_candidates(struct candidates *cand)
{
    free(cand->ids);
    free(cand->platforms);
    free(cand->locs);
    free(cand->nodes);
    free(cand->string);
}

static int open_devices(struct candidates *cand, const size_t *sel, size_t n)
{
    rt.devices = xcalloc(n, sizeof(*rt.devices));
    rt.contexts = xcalloc(n, sizeof(*rt.contexts));
    cl_device_id *ids = xcalloc(n, sizeof(*ids));
    for (size_t i = 0; i < n; i++) {
        dag_device *dev = &rt.devices[i];
        cl_platform_id platform = cand->platforms[sel[i]];
        dev->index = (int)i;
        dev->id = cand->ids[sel[i]];
        dev->node = cand->nodes[sel[i]];
        dev->node_name = xstrdup(cand->locs[sel[i]].node);
        struct dql_value v;
        get_attr(cand, sel[i], dql_find_attr("NAME"), &v);
        dev->name = xstrdup(v.string);
        for (unsigned c = 0; c < rt.num_contexts && !dev->ctx; c++) {
            if (rt.contexts[c].platform == platform)
                dev->ctx = &rt.contexts[c];
        }
        if (!dev->ctx) {
            /* One context over all selected devices of this platform. */
            struct context *ctx = &rt.contexts[rt.num_contexts++];
            ctx->platform = platform;
            size_t k = 0;
            for (size_t j = i; j < n; j++) {
                if (cand->platforms[sel[j]] == platform)
                    ids[k++] = cand->ids[sel[j]];
            }
            cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)platform,
                                             0};
            cl_int err;
            ctx->context = clCreateContext(props, (cl_uint)k, ids, NULL, NULL, &err);
            if (err != CL_SUCCESS) {
                free(ids);
                return set_error(err, "clCreateContext failed: %s", cl_error_name(err));
            }
            dev->ctx = ctx;
        }
        cl_int err;
        dev->queue = clCreateCommandQueue(dev->ctx->context, dev->id, 0, &err);
        if (err != CL_SUCCESS) {
            free(ids);
            return set_error(err, "clCreateCommandQueue failed on device %zu: %s", i,
                             cl_error_name(err));
        }
        rt.num_devices = (int)i + 1;
    }
    free(ids);
    return CL_SUCCESS;
}

/* A rewrite's switch: unset, empty or "auto" lets dag_init decide (-1);
 * "0", "off" or "no" forces it off (0); anything else on (1). */
static int env_switch(const char *name)
{
    const char *s = getenv(name);
    if (!s || !*s || strcmp(s, "auto") == 0)
        return -1;
    return !(strcmp(s, "0") == 0 || strcmp(s, "off") == 0 || strcmp(s, "no") == 0);
}

/* The size of the transfers the rewrites are decided for: the inputs a
 * broadcast replicates and the results DHDCR forwards are tens of KiB to
 * MiB in the applications; below that both paths cost their latency. */
#define DECIDE_BYTES ((size_t)64 * 1024)

/* DCR turns host writes into device-to-device copies, DHDCR a write that waits
 * for a read into a copy.  Both save bytes through the application, but they
 * pay only where a copy costs less than the write it replaces (DHDCR keeps the
 * read: the program asked for the host copy), with a margin for what a copy
 * adds in the DAG (app_copy_pays).  Through VOCL on one host a copy between
 * proxies can cost more than both (issue 38), so for a rewrite left to auto,
 * dag_init times one here and keeps it only where it pays.  The copy is timed
 * between device 0 and the last device of its context: under vocl-run those
 * are in different proxies whenever there are several, where the copies of a
 * collective go. */
static void decide_rewrites(int dcr, int dhdcr)
{
    rt.stats.dcr_auto = dcr < 0;
    rt.stats.dhdcr_auto = dhdcr < 0;
    rt.dcr = dcr != 0;
    rt.dhdcr = dhdcr != 0;
    if ((dcr >= 0 && dhdcr >= 0) || rt.num_devices < 2) {
        rt.stats.dcr = rt.dcr;
        rt.stats.dhdcr = rt.dhdcr;
        return;
    }
    dag_device *a = &rt.devices[0], *b = NULL;
    for (int d = rt.num_devices - 1; d > 0 && !b; d--)
        if (rt.devices[d].ctx == a->ctx)
            b = &rt.devices[d];
    double t_start = now();
    struct app_copy_cost cost = {0};
    cl_int err = b ? app_copy_cost(a->ctx->context, a->id, b->id, DECIDE_BYTES, 3, &cost)
                   : CL_INVALID_DEVICE;
    char figures[256];
    if (err == CL_SUCCESS) {
        rt.stats.copy_bytes = DECIDE_BYTES;
        rt.stats.copy_seconds = cost.copy;
        rt.stats.write_seconds = cost.write;
        rt.stats.read_seconds = cost.read;
        bool pays = app_copy_pays(cost.copy / cost.write, cost.ratio);
        if (dcr < 0)
            rt.dcr = pays;
        if (dhdcr < 0)
            rt.dhdcr = pays;
        snprintf(figures, sizeof(figures),
                 "a device-to-device copy of %zu bytes (device 0 to %d) takes %.0f us, a write "
                 "%.0f us, a read %.0f us, copy/write %.2f",
                 DECIDE_BYTES, b->index, cost.copy * 1e6, cost.write * 1e6, cost.read * 1e6,
                 cost.ratio);
    } else {
        /* No two devices share a context (no copies to make), or the
         * measure failed: the host path is the one known to work. */
        if (dcr < 0)
            rt.dcr = false;
        if (dhdcr < 0)
            rt.dhdcr = false;
        snprintf(figures, sizeof(figures), "no copy could be timed (%s)",
                 b ? cl_error_name(err) : "no two devices share a context");
    }
    rt.stats.dcr = rt.dcr;
    rt.stats.dhdcr = rt.dhdcr;
    snprintf(rt.decision, sizeof(rt.decision), "DCR %s%s, DHDCR %s%s: %s; measured in %.0f ms",
             rt.dcr ? "on" : "off", dcr < 0 ? "" : " (forced)", rt.dhdcr ? "on" : "off",
             dhdcr < 0 ? "" : " (forced)", figures, (now() - t_start) * 1e3);
    fprintf(stderr, "dag: %s\n", rt.decision);
}

int dag_init(const char *query)
{
    if (rt.up)
        return set_error(CL_INVALID_OPERATION, "dag_init called twice");
    struct dql_query q;
    int err = parse_query(query, &q);
    if (err != CL_SUCCESS)
        return err;
    struct candidates cand = {0};
    err = find_candidates(&cand);
    size_t *sel = xcalloc(cand.n, sizeof(*sel));
    int n = 0;
    if (err == CL_SUCCESS) {
        n = dql_select(&q, cand.n, cand.nodes, get_attr, &cand, sel);
        if (n < 0)
            err = set_error(CL_INVALID_DEVICE, "DQL: a device attribute could not be read");
        else if (n == 0)
            err = set_error(CL_DEVICE_NOT_FOUND, "DQL: \"%s\" selects none of the %zu device(s)",
                            query, cand.n);
    }
    if (err == CL_SUCCESS)
        err = open_devices(&cand, sel, (size_t)n);
    free(sel);
    free_candidates(&cand);
    dql_free(&q);
    if (err != CL_SUCCESS)
        return err;

    decide_rewrites(env_switch("DAG_DCR"), env_switch("DAG_DHDCR"));
    const char *w = getenv("DAG_WINDOW");
    /* The window is there for the rewrites, which move data between
     * devices: with one device a short one lets it start sooner. */
    rt.window_limit = w && atol(w) > 0 ? (size_t)atol(w) : rt.num_devices > 1 ? 65536 : 64;
    rt.trace_path = getenv("DAG_TRACE");
    if (rt.trace_path && !*rt.trace_path)
        rt.trace_path = NULL;
    pool_fill(POOL_FIRST);
    rt.t0 = now();
    rt.up = true;
    if (pthread_create(&rt.thread, NULL, scheduler, NULL) != 0) {
        rt.up = false;
        return set_error(CL_OUT_OF_HOST_MEMORY, "cannot start the scheduler thread");
    }
    return rt.num_devices;
}

int dag_device_count(void)
{
    return rt.num_devices;
}

dag_device *dag_get_device(int i)
{
    return i >= 0 && i < rt.num_devices ? &rt.devices[i] : NULL;
}

dag_device *dag_query_device(const char *query)
{
    struct dql_query q;
    if (!check_up("dag_query_device") || parse_query(query, &q) != CL_SUCCESS)
        return NULL;
    dag_device *found = NULL;
    if (q.select != DQL_POS) {
        set_error(CL_INVALID_VALUE, "DQL: dag_query_device needs SELECT POS, not \"%s\"", query);
    } else {
        struct candidates cand = {.n = (size_t)rt.num_devices};
        cand.ids = xcalloc(cand.n, sizeof(*cand.ids));
        cand.nodes = xcalloc(cand.n, sizeof(*cand.nodes));
        for (size_t i = 0; i < cand.n; i++) {
            cand.ids[i] = rt.devices[i].id;
            cand.nodes[i] = rt.devices[i].node;
        }
        size_t *all = xcalloc(cand.n, sizeof(*all));
        int n = dql_select(&q, cand.n, cand.nodes, get_attr, &cand, all);
        if (n == 1) {
            found = &rt.devices[all[0]];
        } else {
            set_error(CL_DEVICE_NOT_FOUND, "DQL: \"%s\" selects no device", query);
        }
        free(all);
        free_candidates(&cand);
    }
    dql_free(&q);
    return found;
}

int dag_device_index(const dag_device *dev)
{
    return dev ? dev->index : -1;
}

int dag_device_node(const dag_device *dev)
{
    return dev ? dev->node : -1;
}

const char *dag_device_node_name(const dag_device *dev)
{
    return dev ? dev->node_name : "";
}

const char *dag_device_name(const dag_device *dev)
{
    return dev ? dev->name : "";
}

/* ---- the trace ---- */

static void write_trace(void)
{
    FILE *f = fopen(rt.trace_path, "w");
    if (!f) {
        fprintf(stderr, "dag: cannot write DAG_TRACE=%s\n", rt.trace_path);
        return;
    }
    fprintf(f, "digraph dag {\n  node [shape=box, fontname=\"monospace\", fontsize=9];\n");
    if (rt.decision[0])
        fprintf(f, "  // %s\n", rt.decision);
    for (size_t i = 0; i < rt.num_trace; i++) {
        const struct trace_rec *t = &rt.trace[i];
        const char *color = t->label ? "lightblue" : strcmp(t->kind, "run") == 0 ? "lightyellow"
                                                                                  : "white";
        fprintf(f, "  c%" PRIu64 " [label=\"%" PRIu64 " %s%s%s\\ndevice %d", t->id, t->id, t->kind,
                t->label ? " " : "", t->label ? t->label : "", t->dev);
        if (t->bytes)
            fprintf(f, ", %zu bytes", t->bytes);
        fprintf(f, "\", style=filled, fillcolor=%s];\n", color);
        for (unsigned k = 0; k < t->num_deps; k++)
            fprintf(f, "  c%" PRIu64 " -> c%" PRIu64 ";\n", t->deps[k], t->id);
    }
    fprintf(f, "}\n");
    fclose(f);

    /* The timeline, as Chrome trace JSON: one row per device, from when the
     * scheduler enqueued a command to when its completion was reported. */
    size_t len = strlen(rt.trace_path) + 16;
    char *path = xcalloc(len, 1);
    snprintf(path, len, "%s.json", rt.trace_path);
    f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "dag: cannot write %s\n", path);
        free(path);
        return;
    }
    fprintf(f, "{\"traceEvents\": [\n");
    for (size_t i = 0; i < rt.num_trace; i++) {
        const struct trace_rec *t = &rt.trace[i];
        double dur = t->completed > t->dispatched ? t->completed - t->dispatched : 0;
        fprintf(f,
                "%s{\"name\": \"%s%s%s %" PRIu64 "\", \"ph\": \"X\", \"pid\": 0, \"tid\": %d, "
                "\"ts\": %.1f, \"dur\": %.1f, \"args\": {\"bytes\": %zu}}\n",
                i ? "," : "", t->kind, t->label ? " " : "", t->label ? t->label : "", t->id,
                t->dev, t->dispatched * 1e6, dur * 1e6, t->bytes);
    }
    fprintf(f, "]}\n");
    fclose(f);
    free(path);
}

int dag_shutdown(void)
{
    if (!rt.up)
        return rt.error;
    dag_finish();
    pthread_mutex_lock(&rt.lock);
    rt.stopping = true;
    pthread_cond_signal(&rt.wake);
    pthread_mutex_unlock(&rt.lock);
    pthread_join(rt.thread, NULL);
    rt.up = false;
    if (rt.trace_path)
        write_trace();
    for (size_t i = 0; i < rt.num_trace; i++)
        free(rt.trace[i].deps);
    free(rt.trace);
    for (int d = 0; d < rt.num_devices; d++) {
        dag_device *dev = &rt.devices[d];
        cmd_unref(dev->last);
        clReleaseCommandQueue(dev->queue);
        free(dev->name);
        free(dev->node_name);
    }
    for (unsigned c = 0; c < rt.num_contexts; c++) {
        for (struct program *p = rt.contexts[c].programs, *next; p; p = next) {
            next = p->next;
            if (p->program)
                clReleaseProgram(p->program);
            free(p->source);
            free(p->options);
            free(p);
        }
        clReleaseContext(rt.contexts[c].context);
    }
    free(rt.devices);
    free(rt.contexts);
    free(rt.win);
    pool_empty();
    return rt.error;
}

static const char *cl_error_name(cl_int err)
{
    return app_cl_error_name(err);
}
