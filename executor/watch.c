/*
 * watch.c - a native command's end, told once: by the driver's callback, or
 * by a thread that looks at the event's status, whichever comes first.
 *
 * A reply that waits for commands (complete.c) and a read's chunk that
 * waits for its device copy (stream.c) went out when the driver called
 * back.  NVIDIA's driver calls a CL_COMPLETE callback some 20 ms after the
 * command is over (docs/report/gpu/: an n-body step of 1 ms took 20 through
 * the proxy), so this file's thread also looks at each watched event: first
 * WATCH_FIRST_NS after it was watched, then at gaps of an eighth of the
 * time watched so far, at most WATCH_MAX_NS.  Only where the caller asks
 * (exec_node.look_at_events: a node with a device that is not a CPU): on a
 * node of CPU devices (PoCL's, which call back at once) the thread's
 * wake-ups cost more than they find, on 2 cores kmer-assemble took 0.37 s
 * against 0.21 with callbacks alone.  There it looks only every
 * WATCH_NET_NS, a net for a callback that never comes: PoCL 3.1 now and
 * then never called back a marker that failed with its wait list (1 run
 * in 8 of tests/integration/waits), whose clWaitForEvents then stayed
 * unanswered.
 *
 * The callback stays registered, and the driver holds the watch's address
 * until it calls: a watch is freed once the callback has come and the
 * thread has let it go.  The event is retained meanwhile, and so is the
 * device of its queue: PoCL 3.1's queue does not hold its device, and the
 * last release of an event (which releases its queue) after the device
 * went reads the freed sub-device: the proxy died so when a client
 * released its sub-devices right after a clFinish (CTS device_partition,
 * issue 61; natively too, 1 run in 3 of a program that releases an event
 * after its sub-device).  So a watch with a device lingers until its
 * reference is the event's last (the driver's own threads, the client's
 * event, let go of theirs first), looked at by the thread; only then are
 * the event and the device released.  The thread holds no lock while it
 * asks the driver or calls fn.
 */
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "backoff.h"
#include "thread.h"

#define WATCH_FIRST_NS (200u * 1000u)
#define WATCH_MAX_NS   (2u * 1000u * 1000u)
#define WATCH_NET_NS   (100u * 1000u * 1000u)
#define WATCH_BATCH    64 /* events asked about in one pass */
#define LINGER_NS      (1000u * 1000u) /* the first look at a lingering watch, then doubling */

struct watch {
    struct watch *next; /* in the thread's list */
    const struct vocl_native_api *cl;
    cl_event ev;      /* retained */
    cl_device_id dev; /* retained: its queue's (NULL: none) */
    exec_watch_fn *fn;
    void *arg;
    atomic_bool armed; /* the callback is registered: the thread may tell */
    atomic_bool told;  /* fn has been called (or is being) */
    atomic_int refs;   /* the callback to come, the thread's list, exec_watch's */
    uint64_t since;    /* watched at */
    uint64_t look_at;  /* (the thread's; lingering: under w.lock) */
    uint64_t gap;      /* lingering: the next look's */
    bool net;          /* looked at only every WATCH_NET_NS */
};

static struct {
    pthread_once_t once;
    pthread_mutex_t lock;
    pthread_cond_t wake; /* on CLOCK_MONOTONIC */
    struct watch *list;
    struct watch *linger; /* put, waiting to hold the event's last reference */
    uint64_t until; /* when the thread wakes (UINT64_MAX: when told) */
    bool running;
} w = {.once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER}; /* (wake: setup) */

static void setup(void)
{
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&w.wake, &a);
    pthread_condattr_destroy(&a);
}

static void release(struct watch *x)
{
    x->cl->clReleaseEvent(x->ev);
    if (x->dev)
        x->cl->clReleaseDevice(x->dev);
    free(x);
}

/* x lingers, to be looked at in gap (x has a device: the thread runs). */
static void linger(struct watch *x, uint64_t gap)
{
    pthread_mutex_lock(&w.lock);
    x->gap = gap;
    x->look_at = vocl_now_ns() + gap;
    x->next = w.linger;
    w.linger = x;
    if (x->look_at < w.until)
        pthread_cond_signal(&w.wake);
    pthread_mutex_unlock(&w.lock);
}

/* Never asks the driver: the callback may put (within the driver's call). */
static void put(struct watch *x)
{
    if (atomic_fetch_sub(&x->refs, 1) != 1)
        return;
    if (x->dev) /* (only where the thread runs) */
        linger(x, LINGER_NS);
    else
        release(x);
}

/* A lingering watch, due: released if its reference is the event's last. */
static void settle(struct watch *x)
{
    cl_uint refs = 0;
    if (x->cl->clGetEventInfo(x->ev, CL_EVENT_REFERENCE_COUNT, sizeof(refs), &refs, NULL) !=
            CL_SUCCESS ||
        refs <= 1)
        release(x);
    else
        linger(x, x->gap * 2 < WATCH_NET_NS ? x->gap * 2 : WATCH_NET_NS);
}

static void tell(struct watch *x, cl_int status)
{
    if (!atomic_exchange(&x->told, true))
        x->fn(x->ev, status, x->arg);
}

static void CL_CALLBACK on_complete(cl_event ev, cl_int status, void *arg)
{
    (void)ev;
    struct watch *x = arg;
    tell(x, status);
    put(x);
}

static uint64_t next_look(const struct watch *x, uint64_t now)
{
    if (x->net)
        return now + WATCH_NET_NS;
    uint64_t gap = (now - x->since) / 8;
    return now + (gap < WATCH_FIRST_NS ? WATCH_FIRST_NS : gap > WATCH_MAX_NS ? WATCH_MAX_NS : gap);
}

static void sleep_until_locked(uint64_t t)
{
    struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
    pthread_cond_timedwait(&w.wake, &w.lock, &ts);
}

static void *watch_thread(void *arg)
{
    (void)arg;
    struct watch *due[WATCH_BATCH];
    pthread_mutex_lock(&w.lock);
    for (;;) {
        /* Those told drop out; the earliest look of the others. */
        uint64_t now = vocl_now_ns(), first = UINT64_MAX;
        unsigned n = 0;
        struct watch *gone = NULL;
        for (struct watch **p = &w.list; *p;) {
            struct watch *x = *p;
            if (atomic_load(&x->told)) {
                *p = x->next;
                x->next = gone;
                gone = x;
                continue;
            }
            uint64_t at = x->look_at;
            if (at <= now && n < WATCH_BATCH && atomic_load(&x->armed))
                due[n++] = x; /* (stays listed, so alive, while asked about) */
            else if ((at = at > now ? at : now + WATCH_FIRST_NS) < first)
                first = at;
            p = &x->next;
        }
        struct watch *due_lingering = NULL;
        for (struct watch **p = &w.linger; *p;) {
            struct watch *x = *p;
            if (x->look_at <= now) {
                *p = x->next;
                x->next = due_lingering;
                due_lingering = x;
                continue;
            }
            if (x->look_at < first)
                first = x->look_at;
            p = &x->next;
        }
        if (!n && !gone && !due_lingering) {
            w.until = first;
            if (!w.list && !w.linger)
                pthread_cond_wait(&w.wake, &w.lock);
            else
                sleep_until_locked(first);
            w.until = 0;
            continue;
        }
        pthread_mutex_unlock(&w.lock);
        while (gone) {
            struct watch *x = gone;
            gone = x->next;
            put(x);
        }
        while (due_lingering) {
            struct watch *x = due_lingering;
            due_lingering = x->next;
            settle(x);
        }
        for (unsigned i = 0; i < n; i++) {
            struct watch *x = due[i];
            cl_int st = CL_QUEUED;
            cl_int rc = x->cl->clGetEventInfo(x->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st),
                                              &st, NULL);
            if (rc != CL_SUCCESS || st <= CL_COMPLETE)
                tell(x, rc != CL_SUCCESS ? rc : st); /* (an event it cannot ask about: failed) */
            x->look_at = next_look(x, vocl_now_ns());
        }
        pthread_mutex_lock(&w.lock);
    }
    return NULL;
}

bool exec_watch_start(void)
{
    pthread_once(&w.once, setup);
    pthread_mutex_lock(&w.lock);
    if (!w.running)
        w.running = vocl_thread_detached(watch_thread, NULL) == 0;
    bool ok = w.running;
    pthread_mutex_unlock(&w.lock);
    return ok;
}

cl_int exec_watch(const struct vocl_native_api *cl, cl_event ev, bool look, exec_watch_fn *fn,
                  void *arg)
{
    struct watch *x = malloc(sizeof(*x));
    if (!x)
        return CL_OUT_OF_HOST_MEMORY;
    *x = (struct watch){.cl = cl, .ev = ev, .fn = fn, .arg = arg, .net = !look};
    uint64_t now = vocl_now_ns();
    x->since = now;
    x->look_at = now + (look ? WATCH_FIRST_NS : WATCH_NET_NS);
    atomic_init(&x->armed, false);
    atomic_init(&x->told, false);
    atomic_init(&x->refs, 3);
    cl->clRetainEvent(ev);
    /* Listed before the callback is registered: the callback may come at
     * once, and a watch is let go only by both. */
    bool listed = exec_watch_start();
    cl_command_queue queue = NULL;
    if (listed && /* (only the thread lets a device go) */
        cl->clGetEventInfo(ev, CL_EVENT_COMMAND_QUEUE, sizeof(queue), &queue, NULL) == CL_SUCCESS &&
        queue &&
        cl->clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof(x->dev), &x->dev, NULL) ==
            CL_SUCCESS &&
        x->dev && cl->clRetainDevice(x->dev) != CL_SUCCESS)
        x->dev = NULL;
    if (listed) {
        pthread_mutex_lock(&w.lock);
        x->next = w.list;
        w.list = x;
        if (x->look_at < w.until) /* (it sleeps past the first look) */
            pthread_cond_signal(&w.wake);
        pthread_mutex_unlock(&w.lock);
    }
    if (!listed)
        atomic_fetch_sub(&x->refs, 1); /* (not looked at: the callback alone tells) */
    /* The callback may come, and the thread let the watch go, before
     * clSetEventCallback returns: this call's reference keeps it. */
    cl_int rc = cl->clSetEventCallback(ev, CL_COMPLETE, on_complete, x);
    if (rc == CL_SUCCESS) {
        atomic_store(&x->armed, true);
    } else if (listed) {
        /* No callback will come: the thread alone tells, looking soon and
         * often (the callback's part is put here). */
        pthread_mutex_lock(&w.lock);
        x->net = false;
        x->look_at = now + WATCH_FIRST_NS;
        atomic_store(&x->armed, true);
        pthread_cond_signal(&w.wake);
        pthread_mutex_unlock(&w.lock);
        put(x);
        rc = CL_SUCCESS;
    } else {
        /* No callback will come, and the thread told nothing (not armed):
         * it lets the watch go, and the callback's part is put here. */
        atomic_store(&x->told, true);
        put(x);
    }
    put(x);
    return rc;
}
