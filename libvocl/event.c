/*
 * event.c - waiting on events (of several proxies at once), event
 * callbacks, and the info the client answers about queues, events and
 * samplers.
 */
#include "vocl.h"
#include "gate.h"

#include "backoff.h"
#include "liveness.h"
#include "thread.h"

#include <stdlib.h>
#include <string.h>

cl_int CL_API_CALL vocl_hand_clWaitForEvents(cl_uint num_events, const cl_event *event_list)
{
    cl_int err = vocl_init();
    if (err != CL_SUCCESS)
        return err;
    if (num_events == 0 || !event_list)
        return CL_INVALID_VALUE;
    struct vocl_obj *first = NULL;
    for (cl_uint i = 0; i < num_events; i++) {
        struct vocl_obj *e = vocl_lookup(event_list[i], VOCL_T_EVENT);
        if (!e)
            return CL_INVALID_EVENT;
        if (!first)
            first = e;
        else if (e->context != first->context)
            return CL_INVALID_CONTEXT;
    }
    /* The data of non-blocking reads lands first. */
    bool known = true;
    for (cl_uint i = 0; i < num_events; i++) {
        struct vocl_obj *e = (struct vocl_obj *)event_list[i]; /* (checked above) */
        err = vocl_event_data_wait(e);
        if (err != CL_SUCCESS)
            return CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
        struct vocl_event *ev = vocl_as_event(e);
        if (ev && ev->lands)
            atomic_store(&ev->complete, true); /* (its data came: no need to ask) */
        known = known && atomic_load(&vocl_as_event(e)->complete);
    }
    /* Complete ones stay so: waiting for them again asks no proxy (nor
     * returns an error deferred meanwhile: the next synchronisation that
     * does ask returns it). */
    if (known) {
        vocl_output_write(); /* (what another thread's wait brought in meanwhile) */
        return CL_SUCCESS;
    }
    /* One request per proxy the events live in (a user event of a context
     * spanning proxies: its first replica, which is set with the others),
     * all posted before any reply is waited for: the proxies wait side by
     * side, and each is sent what waits in its batch. */
    struct waiting {
        struct vocl_call c;
        struct vocl_wr w; /* its own: it is still leaving as the next is made */
    } calls_small[4], *calls = calls_small;
    cl_uint ncalls = 0;
    uint64_t ids_small[64], *ids = ids_small;
    if (num_events > 4 && !(calls = malloc(num_events * sizeof(*calls))))
        return CL_OUT_OF_HOST_MEMORY;
    if (num_events > 64 && !(ids = malloc(num_events * sizeof(*ids)))) {
        if (calls != calls_small)
            free(calls);
        return CL_OUT_OF_HOST_MEMORY;
    }
    for (cl_uint i = 0; i < num_events; i++) {
        struct vocl_proxy *px = ((struct vocl_obj *)event_list[i])->px;
        bool seen = false;
        for (cl_uint j = 0; j < ncalls && !seen; j++)
            seen = calls[j].c.px == px;
        if (seen)
            continue;
        struct vocl_call *c = &calls[ncalls].c;
        vocl_wr_init(&calls[ncalls].w);
        vocl_call_init(c);
        c->w = &calls[ncalls++].w;
        c->px = px;
        if (vocl_call_start(c, VOCL_OP_clWaitForEvents) == 0) {
            uint32_t n = 0;
            for (cl_uint j = i; j < num_events; j++)
                if (((struct vocl_obj *)event_list[j])->px == px)
                    ids[n++] = ((struct vocl_obj *)event_list[j])->id;
            vocl_enc_clWaitForEvents_req(c->w, &(struct vocl_msg_clWaitForEvents_req){
                                                   .events = {.n = n, .v = ids}});
            vocl_call_post_only(c);
        }
    }
    for (cl_uint i = 0; i < ncalls; i++) {
        struct vocl_call *c = &calls[i].c;
        if (!c->err)
            vocl_call_wait(c);
        vocl_call_end(c);
        vocl_wr_free(&calls[i].w);
        if (err == CL_SUCCESS)
            err = c->err;
    }
    if (ids != ids_small)
        free(ids);
    if (calls != calls_small)
        free(calls);
    for (cl_uint i = 0; i < num_events && err == CL_SUCCESS; i++) {
        atomic_store(&vocl_as_event((struct vocl_obj *)event_list[i])->complete, true);
        atomic_store(&vocl_as_event((struct vocl_obj *)event_list[i])->driver_done, true);
    }
    return err;
}

/*
 * An event known complete here (its read's data came, its blocking
 * transfer returned) may not be so yet for its proxy's driver: the proxy
 * sends a read's data as the read ends, before the driver's event says
 * CL_COMPLETE, and PoCL has no profiling times until it does (CTS
 * profiling read_array_*).  So its profiling times are asked once the
 * proxy has waited for it too.
 */
void vocl_pre_clGetEventProfilingInfo(struct vocl_call *c, cl_event event,
                                      cl_profiling_info param_name, size_t param_value_size,
                                      void *param_value, size_t *param_value_size_ret)
{
    (void)param_name, (void)param_value_size, (void)param_value, (void)param_value_size_ret;
    struct vocl_obj *e = vocl_lookup(event, VOCL_T_EVENT);
    struct vocl_event *ev = vocl_as_event(e);
    if (c->err || !ev || e->px->local || !atomic_load(&ev->complete) ||
        atomic_load(&ev->driver_done))
        return;
    struct vocl_call w;
    vocl_call_init(&w);
    w.px = e->px;
    if (vocl_call_start(&w, VOCL_OP_clWaitForEvents) == 0) {
        uint64_t id = e->id;
        vocl_enc_clWaitForEvents_req(w.w, &(struct vocl_msg_clWaitForEvents_req){
                                              .events = {.n = 1, .v = &id}});
        vocl_call_send(&w);
    }
    vocl_call_end(&w);
    if (w.err == CL_SUCCESS)
        atomic_store(&ev->driver_done, true);
}

/*
 * Event callbacks.  One thread of libvocl calls them all back: for each
 * CL_COMPLETE callback it posts a wait for the event to the event's proxy
 * (answered when the event completes) and polls the replies, so that a
 * callback costs no thread of its own blocked in a wait (the runtimes set
 * one per command).  A callback runs on that thread once its event has
 * completed, and a read's data has landed, with the status reached.  A
 * CL_SUBMITTED or CL_RUNNING callback asks the event's status instead,
 * again and again (every 50 us at first, at most every POLL_MAX_NS), and
 * runs once the command has got that far: the spec allows it later, but a
 * runtime that counts running commands sees them then.  One that blocks
 * holds up those after it; the spec leaves blocking calls in a callback
 * undefined.  The same thread looks, every NOTES_LOOK_NS, at the proxies
 * of contexts with a pfn_notify: their notifications come when they
 * happen, while the application may not be calling libvocl at all.
 */
struct event_cb {
    struct event_cb *next;
    cl_event event; /* retained */
    cl_int type;
    void (CL_CALLBACK *fn)(cl_event, cl_int, void *);
    void *user_data;
    struct vocl_call wait; /* clWaitForEvents, or clGetEventInfo: posted by the thread */
    struct vocl_live lw;
    /* CL_SUBMITTED and CL_RUNNING: the status asked, and again when */
    bool asking;
    cl_int reached;   /* the status the callback is called with */
    uint64_t ask_at, ask_gap;
};

#define POLL_MAX_NS (2u * 1000u * 1000u)

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct event_cb *todo; /* registered, not posted yet */
    bool running;          /* the thread is there (started on first use) */
    atomic_int watching;   /* contexts with a pfn_notify (vocl_notes_watch) */
} cbs = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, false, 0};

#define NOTES_LOOK_NS (10u * 1000u * 1000u)

/* Posts cb's request: a wait for its event (CL_COMPLETE), or a question
 * of its status (CL_SUBMITTED, CL_RUNNING). */
static void post(struct event_cb *cb)
{
    struct vocl_obj *e = (struct vocl_obj *)cb->event;
    bool wait = cb->type == CL_COMPLETE;
    vocl_call_init(&cb->wait);
    cb->wait.px = e->px;
    vocl_live_begin(&cb->lw, e->px->live);
    if (vocl_call_start(&cb->wait, wait ? VOCL_OP_clWaitForEvents : VOCL_OP_clGetEventInfo))
        return;
    if (wait)
        vocl_enc_clWaitForEvents_req(cb->wait.w, &(struct vocl_msg_clWaitForEvents_req){
                                                     .events = {.n = 1, .v = &e->id}});
    else
        vocl_enc_clGetEventInfo_req(cb->wait.w, &(struct vocl_msg_clGetEventInfo_req){
                                                    .event = e->id,
                                                    .param_name = CL_EVENT_COMMAND_EXECUTION_STATUS,
                                                    .param_value_size = sizeof(cl_int),
                                                    .want_value = 1});
    vocl_call_post_away(&cb->wait);
}

/* Whether cb's command got as far as its type (or failed): cb->reached. */
static bool got_there(struct event_cb *cb)
{
    uint64_t now = vocl_now_ns();
    if (atomic_load(&vocl_as_event((struct vocl_obj *)cb->event)->complete)) {
        cb->reached = cb->type;
        return !cb->asking || vocl_call_ready(&cb->wait, &cb->lw);
    }
    if (!cb->asking) {
        if (now < cb->ask_at)
            return false;
        post(cb);
        cb->asking = true;
    }
    if (!vocl_call_ready(&cb->wait, &cb->lw))
        return false;
    cl_int st = CL_QUEUED;
    if (vocl_call_wait(&cb->wait) == 0)
        vocl_call_get_info(&cb->wait, sizeof(st), &st, NULL);
    cl_int err = cb->wait.err;
    vocl_call_end(&cb->wait);
    cb->asking = false;
    if (err != CL_SUCCESS || st <= cb->type) {
        cb->reached = err != CL_SUCCESS ? err : st < 0 ? st : cb->type;
        return true;
    }
    cb->ask_gap = cb->ask_gap ? cb->ask_gap * 2 : 50000;
    if (cb->ask_gap > POLL_MAX_NS)
        cb->ask_gap = POLL_MAX_NS;
    cb->ask_at = now + cb->ask_gap;
    return false;
}

static bool ready(struct event_cb *cb)
{
    if (cb->type != CL_COMPLETE)
        return got_there(cb);
    return vocl_call_ready(&cb->wait, &cb->lw) &&
           (cb->wait.err || !vocl_event_data_pending((struct vocl_obj *)cb->event));
}

static void call_back(struct event_cb *cb)
{
    if (cb->type != CL_COMPLETE) {
        if (cb->asking) { /* (known complete meanwhile: the answer is dropped) */
            vocl_call_wait(&cb->wait);
            vocl_call_end(&cb->wait);
        }
        cb->fn(cb->event, cb->reached, cb->user_data);
        clReleaseEvent(cb->event);
        free(cb);
        return;
    }
    vocl_call_wait(&cb->wait); /* the reply is here: takes its status */
    vocl_call_end(&cb->wait);
    /* A wait that succeeded means CL_COMPLETE: asking the proxy again
     * would cost each callback a round trip on this one thread.  A failed
     * command's own status says how it failed. */
    cl_int status = cb->wait.err; /* CL_SUCCESS, or its proxy is gone */
    if (cb->wait.err == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST &&
        (clGetEventInfo(cb->event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status,
                        NULL) != CL_SUCCESS ||
         status >= 0))
        status = cb->wait.err;
    cb->fn(cb->event, status < 0 ? status : cb->type, cb->user_data);
    clReleaseEvent(cb->event);
    free(cb);
}

/* The notifications the watched proxies sent since (vocl_notes_watch). */
static void look_for_notes(void)
{
    for (int i = 0; i < vocl.nproxies; i++) {
        struct vocl_proxy *px = vocl.proxies[i];
        if (atomic_load(&px->notes_watch) > 0)
            vocl_xport_notes(px);
    }
}

/* Sleeps until there is a callback to post, or (while a context watches
 * for notifications) until it is time to look again; under cbs.lock. */
static void idle_locked(uint64_t looked)
{
    if (!atomic_load(&cbs.watching)) {
        pthread_cond_wait(&cbs.wake, &cbs.lock);
        return;
    }
    uint64_t since = vocl_now_ns() - looked;
    if (since >= NOTES_LOOK_NS)
        return;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += (long)(NOTES_LOOK_NS - since);
    until.tv_sec += until.tv_nsec / 1000000000;
    until.tv_nsec %= 1000000000;
    pthread_cond_timedwait(&cbs.wake, &cbs.lock, &until);
}

static void *callbacks_thread(void *arg)
{
    (void)arg;
    struct event_cb *active = NULL;
    uint64_t idle_since = vocl_now_ns(), looked = 0;
    for (;;) {
        pthread_mutex_lock(&cbs.lock);
        if (!active && !cbs.todo)
            idle_locked(looked);
        struct event_cb *fresh = cbs.todo;
        cbs.todo = NULL;
        pthread_mutex_unlock(&cbs.lock);
        /* Its passes are calls as the application's are: a migration
         * (migrate.c) waits for them to end, and they wait for it. */
        struct vocl_gate_slot *gate = vocl_gate_enter();
        if (atomic_load(&cbs.watching) && vocl_now_ns() - looked >= NOTES_LOOK_NS) {
            looked = vocl_now_ns();
            look_for_notes();
        }
        bool moved = fresh != NULL;
        while (fresh) {
            struct event_cb *cb = fresh;
            fresh = cb->next;
            if (cb->type == CL_COMPLETE)
                post(cb); /* (the others ask when ready() says) */
            cb->next = active;
            active = cb;
        }
        for (struct event_cb **p = &active; *p;) {
            struct event_cb *cb = *p;
            if (!ready(cb)) {
                p = &cb->next;
                continue;
            }
            *p = cb->next;
            call_back(cb);
            moved = true;
        }
        vocl_gate_leave(gate);
        if (moved)
            idle_since = vocl_now_ns();
        else
            vocl_backoff(idle_since, 50000);
    }
    return NULL;
}

/* Whether the callbacks thread is there, started if not; under cbs.lock. */
static bool running_locked(void)
{
    if (!cbs.running)
        cbs.running = vocl_thread_detached(callbacks_thread, NULL) == 0;
    return cbs.running;
}

void vocl_notes_watch(const struct vocl_obj *ctx, int delta)
{
    for (cl_uint i = 0; i < vocl_nreps(ctx); i++)
        atomic_fetch_add(&vocl_rep_px(ctx, i)->notes_watch, delta);
    pthread_mutex_lock(&cbs.lock);
    if (atomic_fetch_add(&cbs.watching, delta) + delta > 0 && !running_locked())
        vocl_warn("no thread to look for context notifications: they come with replies");
    pthread_cond_signal(&cbs.wake);
    pthread_mutex_unlock(&cbs.lock);
}

cl_int CL_API_CALL vocl_hand_clSetEventCallback(
    cl_event event, cl_int command_exec_callback_type,
    void (CL_CALLBACK *pfn_notify)(cl_event event, cl_int event_command_status, void *user_data),
    void *user_data)
{
    if (!vocl_lookup(event, VOCL_T_EVENT))
        return CL_INVALID_EVENT;
    if (!pfn_notify || (command_exec_callback_type != CL_COMPLETE &&
                        command_exec_callback_type != CL_RUNNING &&
                        command_exec_callback_type != CL_SUBMITTED))
        return CL_INVALID_VALUE;
    struct event_cb *cb = calloc(1, sizeof(*cb));
    if (!cb)
        return CL_OUT_OF_HOST_MEMORY;
    cb->event = event;
    cb->type = command_exec_callback_type;
    cb->fn = pfn_notify;
    cb->user_data = user_data;
    clRetainEvent(event);
    pthread_mutex_lock(&cbs.lock);
    bool ok = running_locked();
    if (ok) {
        cb->next = cbs.todo;
        cbs.todo = cb;
        pthread_cond_signal(&cbs.wake);
    }
    pthread_mutex_unlock(&cbs.lock);
    if (!ok) {
        clReleaseEvent(event);
        free(cb);
        return CL_OUT_OF_HOST_MEMORY;
    }
    return CL_SUCCESS;
}

static int answer_handle(const void *h, size_t size, void *value, size_t *size_ret, cl_int *ret)
{
    *ret = vocl_info_answer(&h, sizeof(h), size, value, size_ret);
    return 1;
}

/* The execution status of e's command as its proxy's driver has it. */
static cl_int device_status(struct vocl_obj *e, cl_int *st)
{
    struct vocl_call c;
    vocl_call_init(&c);
    vocl_call_h(&c, e, VOCL_T_EVENT, 0);
    if (vocl_call_start(&c, VOCL_OP_clGetEventInfo) == 0) {
        vocl_enc_clGetEventInfo_req(c.w, &(struct vocl_msg_clGetEventInfo_req){
                                             .event = vocl_id_on(e, c.px),
                                             .param_name = CL_EVENT_COMMAND_EXECUTION_STATUS,
                                             .param_value_size = sizeof(*st),
                                             .want_value = 1});
        if (vocl_call_send(&c) == 0)
            vocl_call_get_info(&c, sizeof(*st), st, NULL);
    }
    vocl_call_end(&c);
    return c.err;
}

void vocl_event_known_complete(struct vocl_obj *e)
{
    struct vocl_event *ev = vocl_as_event(e);
    if (ev)
        atomic_store(&ev->complete, true);
}

void vocl_event_lands(struct vocl_obj *e)
{
    struct vocl_event *ev = vocl_as_event(e);
    if (ev)
        ev->lands = true;
}

int vocl_hook_clGetEventInfo(cl_event event, cl_event_info param_name, size_t param_value_size,
                             void *param_value, size_t *param_value_size_ret, cl_int *ret)
{
    struct vocl_obj *e = vocl_lookup(event, VOCL_T_EVENT);
    if (!e)
        return 0;
    if (param_name == CL_EVENT_COMMAND_QUEUE)
        return answer_handle(e->parent, param_value_size, param_value, param_value_size_ret, ret);
    if (param_name == CL_EVENT_CONTEXT)
        return answer_handle(e->context, param_value_size, param_value, param_value_size_ret, ret);
    if (param_name == CL_EVENT_COMMAND_EXECUTION_STATUS &&
        atomic_load(&vocl_as_event(e)->complete)) {
        cl_int st = CL_COMPLETE;
        *ret = vocl_info_answer(&st, sizeof(st), param_value_size, param_value,
                                param_value_size_ret);
        return 1;
    }
    if (param_name == CL_EVENT_COMMAND_EXECUTION_STATUS && vocl_event_data_pending(e)) {
        /* A read is not complete until its data is in the application's
         * memory: the device's word, but running where it says complete. */
        cl_int st = CL_RUNNING;
        *ret = device_status(e, &st);
        if (*ret == CL_SUCCESS) {
            if (st == CL_COMPLETE)
                st = CL_RUNNING;
            *ret = vocl_info_answer(&st, sizeof(st), param_value_size, param_value,
                                    param_value_size_ret);
        }
        return 1;
    }
    return 0;
}

int vocl_hook_clGetCommandQueueInfo(cl_command_queue command_queue,
                                    cl_command_queue_info param_name, size_t param_value_size,
                                    void *param_value, size_t *param_value_size_ret, cl_int *ret)
{
    struct vocl_obj *q = vocl_lookup(command_queue, VOCL_T_QUEUE);
    if (!q)
        return 0;
    switch (param_name) {
    case CL_QUEUE_CONTEXT:
        return answer_handle(q->context, param_value_size, param_value, param_value_size_ret, ret);
    case CL_QUEUE_DEVICE:
        return answer_handle(q->parent, param_value_size, param_value, param_value_size_ret, ret);
    case CL_QUEUE_DEVICE_DEFAULT:
        /* Device-side queues are not forwarded: no default device queue. */
        return answer_handle(NULL, param_value_size, param_value, param_value_size_ret, ret);
    default:
        return 0;
    }
}

int vocl_hook_clGetSamplerInfo(cl_sampler sampler, cl_sampler_info param_name,
                               size_t param_value_size, void *param_value,
                               size_t *param_value_size_ret, cl_int *ret)
{
    struct vocl_obj *s = vocl_lookup(sampler, VOCL_T_SAMPLER);
    if (!s || param_name != CL_SAMPLER_CONTEXT)
        return 0;
    return answer_handle(s->context, param_value_size, param_value, param_value_size_ret, ret);
}
