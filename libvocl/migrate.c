/*
 * migrate.c - live migration: everything an application has on one proxy
 * moves to another while it runs, and its handles keep their values.
 *
 * The steps (vocl_migrate):
 *   1. the gate (gate.h) shuts: no thread of the application is inside
 *      libvocl from here until the end;
 *   2. the source's queues finish, so its objects hold their final data;
 *   3. each object of the source is made again on the target, oldest
 *      first, by the very calls the application would make (a "double"
 *      per object, made from the target's devices and the doubles of its
 *      context and parents), with what the source says of it: a queue's
 *      properties, a program's source or binaries and build options, a
 *      kernel's name, a sub-buffer's region, an event's status;
 *   4. each buffer's bytes are read from the source and written to its
 *      double;
 *   5. each object takes its double's place on the target (its proxy and
 *      id); the double's husk is dropped without a word to the target, and
 *      the source is told to release the old objects;
 *   6. the gate opens.
 * Until step 5 nothing of the application's has changed: a failure (the
 * target refuses or dies) releases the doubles, and the application goes
 * on on the source; with failover, should the source die meanwhile, on the
 * target (failover.c).
 *
 * A context spanning proxies moves its part on the source: each of its
 * objects' replicas there becomes one on the target, as if the context had
 * been made with the target's devices in the source's place (replica.c
 * numbers replicas as the context's proxies: the target takes the
 * source's number).
 *
 * Not moved yet, refused with the reason: this node's own devices,
 * pipes, 1D images of buffers, sub-devices, programs linked from
 * others or made from IL or built-in kernels, device-side queues, and user
 * events not yet set (a command behind one could not finish in step 2).
 * A command's event becomes a user event on the target with the command's
 * final status: CL_EVENT_COMMAND_TYPE then says CL_COMMAND_USER, and its
 * profiling times are gone.
 */
#include "vocl.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "backoff.h"
#include "gate.h"
#include "kargs.h"

/* --- the gate -------------------------------------------------------------------------------------- */

atomic_bool vocl_gate_shut;
bool vocl_gate_fenced;
_Thread_local struct vocl_gate_slot *vocl_gate_mine __attribute__((tls_model("initial-exec")));

static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_opened = PTHREAD_COND_INITIALIZER;
static struct vocl_gate_slot *slots; /* every thread's that called, under gate_lock */
static pthread_key_t slot_key;
static pthread_once_t slot_once = PTHREAD_ONCE_INIT;
static atomic_bool slotless; /* a thread got no slot: migrations cannot know it is out */

/* A thread ended: its slot is for the next thread. */
static void slot_gone(void *p)
{
    struct vocl_gate_slot *s = p;
    pthread_mutex_lock(&gate_lock);
    atomic_store(&s->in, 0);
    s->depth = 0;
    s->taken = false;
    pthread_mutex_unlock(&gate_lock);
}

static void make_key(void)
{
    if (pthread_key_create(&slot_key, slot_gone))
        atomic_store(&slotless, true);
    /* Before any slot is taken: from here on entries store plainly. */
    vocl_gate_fenced =
        syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

struct vocl_gate_slot *vocl_gate_slot(void)
{
    pthread_once(&slot_once, make_key);
    pthread_mutex_lock(&gate_lock);
    struct vocl_gate_slot *s = slots;
    while (s && s->taken)
        s = s->next;
    if (!s && (s = calloc(1, sizeof(*s)))) {
        s->next = slots;
        slots = s;
    }
    if (s)
        s->taken = true;
    pthread_mutex_unlock(&gate_lock);
    if (!s || pthread_setspecific(slot_key, s)) {
        atomic_store(&slotless, true);
        return NULL;
    }
    vocl_gate_mine = s;
    return s;
}

void vocl_gate_wait(struct vocl_gate_slot *s)
{
    for (;;) {
        atomic_store(&s->in, 0);
        pthread_mutex_lock(&gate_lock);
        while (atomic_load(&vocl_gate_shut))
            pthread_cond_wait(&gate_opened, &gate_lock);
        pthread_mutex_unlock(&gate_lock);
        atomic_store(&s->in, 1);
        if (!atomic_load(&vocl_gate_shut))
            return;
    }
}

/* Whether a thread other than s is inside. */
static bool others_inside(const struct vocl_gate_slot *s)
{
    bool in = false;
    pthread_mutex_lock(&gate_lock);
    for (const struct vocl_gate_slot *o = slots; o && !in; o = o->next)
        in = o != s && atomic_load(&o->in);
    pthread_mutex_unlock(&gate_lock);
    return in;
}

bool vocl_gate_close(long wait_ms)
{
    struct vocl_gate_slot *s = vocl_gate_mine ? vocl_gate_mine : vocl_gate_slot();
    if (!s || atomic_load(&slotless))
        return false;
    s->depth++;
    atomic_store(&s->in, 1);
    atomic_store(&vocl_gate_shut, true);
    /* Every thread's plain store of its flag, made before it loaded the
     * gate open, is seen from here on (gate.h). */
    if (vocl_gate_fenced && syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0)) {
        vocl_gate_open();
        return false;
    }
    uint64_t until = vocl_now_ns() + (uint64_t)wait_ms * 1000000u;
    while (others_inside(s)) {
        if (vocl_now_ns() > until) {
            vocl_gate_open();
            return false;
        }
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return true;
}

void vocl_gate_open(void)
{
    pthread_mutex_lock(&gate_lock);
    atomic_store(&vocl_gate_shut, false);
    pthread_cond_broadcast(&gate_opened);
    pthread_mutex_unlock(&gate_lock);
    vocl_gate_leave(vocl_gate_mine);
}

/* --- the migration --------------------------------------------------------------------------------- */

struct mig {
    struct vocl_proxy *from, *to;
    struct vocl_obj **objs;   /* held: the source's objects, oldest first */
    struct vocl_obj **twin;   /* each one's double on the target (NULL: none yet) */
    uint64_t *old_id;
    size_t n;
    struct vocl_map where;    /* an object's address -> its index + 1 */
    struct vocl_obj **tdev;   /* the target's devices, as objects of its own (id i + 1) */
    cl_uint ntdev;
    char *why;
    size_t whylen;
    struct vocl_migration *st;
    bool spanning; /* a context spans the source and other proxies */
    char src[80], dst[80]; /* the two proxies, for messages: their names, else numbers */
};

static int fail(struct mig *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct mig *m, const char *fmt, ...)
{
    if (m->why[0] == '\0') {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(m->why, m->whylen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* A proxy as messages name it: by its name (daemon mode), else its number. */
static void label(char buf[80], const struct vocl_proxy *px)
{
    if (px->name)
        snprintf(buf, 80, "%.70s", px->name);
    else
        snprintf(buf, 80, "%d", px->index);
}

static const char *type_name(enum vocl_type t)
{
    switch (t) {
    case VOCL_T_DEVICE: return "device";
    case VOCL_T_CONTEXT: return "context";
    case VOCL_T_QUEUE: return "command queue";
    case VOCL_T_MEM: return "memory object";
    case VOCL_T_PROGRAM: return "program";
    case VOCL_T_KERNEL: return "kernel";
    case VOCL_T_EVENT: return "event";
    case VOCL_T_SAMPLER: return "sampler";
    default: return "object";
    }
}

/* o's double on the target: a device of the target for a device, else
 * the double made of o (NULL: o is not the source's). */
static struct vocl_obj *twin_of(const struct mig *m, const struct vocl_obj *o)
{
    if (!o)
        return NULL;
    if (o->type == VOCL_T_DEVICE)
        return o->id >= 1 && o->id <= m->ntdev ? m->tdev[o->id - 1] : NULL;
    uintptr_t i = (uintptr_t)vocl_map_get(&m->where, (uint64_t)(uintptr_t)o);
    return i ? m->twin[i - 1] : NULL;
}

/* The source's devices must be the target's, one for one. */
static int match_devices(struct mig *m)
{
    m->ntdev = m->to->ndev;
    m->tdev = calloc(m->ntdev ? m->ntdev : 1, sizeof(*m->tdev));
    if (!m->tdev)
        return fail(m, "out of memory");
    for (cl_uint i = 0; i < m->ntdev; i++)
        if (!(m->tdev[i] = vocl_obj_new(VOCL_T_DEVICE, m->to, i + 1, NULL, NULL)))
            return fail(m, "out of memory");
    for (size_t i = 0; i < m->n; i++) {
        struct vocl_obj *d = m->objs[i];
        if (d->type != VOCL_T_DEVICE)
            continue;
        if (d->parent)
            return fail(m, "the application has sub-devices on proxy %s: not moved yet", m->src);
        struct vocl_obj *t = twin_of(m, d);
        char a[256] = "", b[256] = "";
        cl_device_type ta = 0, tb = 0;
        if (!t)
            return fail(m, "proxy %s has no device %llu like proxy %s's", m->dst,
                        (unsigned long long)d->id, m->src);
        if (clGetDeviceInfo((cl_device_id)d, CL_DEVICE_NAME, sizeof(a) - 1, a, NULL) ||
            clGetDeviceInfo((cl_device_id)t, CL_DEVICE_NAME, sizeof(b) - 1, b, NULL) ||
            clGetDeviceInfo((cl_device_id)d, CL_DEVICE_TYPE, sizeof(ta), &ta, NULL) ||
            clGetDeviceInfo((cl_device_id)t, CL_DEVICE_TYPE, sizeof(tb), &tb, NULL))
            return fail(m, "the devices' names could not be asked");
        if (strcmp(a, b) || ta != tb)
            return fail(m, "device %llu of proxy %s (%s) is not like proxy %s's (%s)",
                        (unsigned long long)d->id, m->src, a, m->dst, b);
    }
    return 0;
}

/* The source's objects, oldest first; those an object holds come first. */
static int collect(struct mig *m)
{
    m->objs = vocl_objs_on(m->from, &m->n);
    if (!m->objs)
        return fail(m, "out of memory");
    m->twin = calloc(m->n + 1, sizeof(*m->twin));
    m->old_id = calloc(m->n + 1, sizeof(*m->old_id));
    if (!m->twin || !m->old_id)
        return fail(m, "out of memory");
    for (size_t i = 0; i < m->n; i++) {
        struct vocl_obj *o = m->objs[i];
        m->old_id[i] = vocl_id_on(o, m->from);
        if (vocl_map_put(&m->where, (uint64_t)(uintptr_t)o, (void *)(uintptr_t)(i + 1)))
            return fail(m, "out of memory");
        m->spanning |= o->reps != NULL;
        if (o->reps && vocl_names(o, m->to))
            return fail(m, "a context of the application spans proxies %d and %d already",
                        m->from->index, m->to->index);
        struct vocl_mem *mem = vocl_as_mem(o);
        if (mem && !mem->mem_type && !mem->mem_size) /* (made by generated code: a pipe) */
            return fail(m, "the application has pipes on proxy %s: not moved yet", m->src);
        if (mem && mem->mem_type == CL_MEM_OBJECT_IMAGE1D_BUFFER)
            return fail(m, "the application has 1D images of buffers on proxy %s: not moved yet",
                        m->src);
        if (mem && !o->parent && atomic_load(&o->app_refs) == 0)
            return fail(m, "a buffer the application released is still used by its "
                           "sub-buffers or images on proxy %s: not moved yet", m->src);
        struct vocl_program *p = vocl_as_program(o);
        if (p && p->ninputs)
            return fail(m, "the application has a linked program on proxy %s: not moved yet",
                        m->src);
    }
    return 0;
}

/* Every command of the source's queues has finished. */
static int drain(struct mig *m)
{
    for (size_t i = 0; i < m->n; i++) {
        struct vocl_obj *e = m->objs[i];
        cl_int st = CL_COMPLETE;
        if (e->type != VOCL_T_EVENT || e->parent || atomic_load(&e->app_refs) == 0)
            continue;
        if (clGetEventInfo((cl_event)e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st,
                           NULL) == CL_SUCCESS &&
            st > CL_COMPLETE)
            return fail(m, "a user event on proxy %s is not set yet: commands may wait for it",
                        m->src);
    }
    /* The source's queues; with a context spanning proxies, every queue:
     * moves between proxies read from or write to the source.  (A queue
     * the application released cannot be asked.) */
    size_t n;
    struct vocl_obj **all = m->spanning ? vocl_objs_on(NULL, &n) : m->objs;
    if (!m->spanning)
        n = m->n;
    cl_event *marks = all ? calloc(n + 1, sizeof(*marks)) : NULL;
    int rc = marks ? 0 : fail(m, "out of memory");
    /* A marker on each, then waited for at most as long as for the
     * threads: a kernel that runs on (or waits for something that never
     * comes) makes the migration fail, not the application hang. */
    for (size_t i = 0; rc == 0 && i < n; i++)
        if (all[i]->type == VOCL_T_QUEUE && atomic_load(&all[i]->app_refs) > 0 &&
            clEnqueueMarkerWithWaitList((cl_command_queue)all[i], 0, NULL, &marks[i]))
            rc = fail(m, "a queue of proxy %s took no marker", m->src);
    uint64_t until = vocl_now_ns() + (uint64_t)vocl.migrate_wait_ms * 1000000u;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char name[80];
        cl_int st = CL_QUEUED;
        while (marks[i] && clGetEventInfo(marks[i], CL_EVENT_COMMAND_EXECUTION_STATUS,
                                          sizeof(st), &st, NULL) == CL_SUCCESS &&
               st > CL_COMPLETE && vocl_now_ns() < until)
            nanosleep(&(struct timespec){0, 1000000}, NULL);
        if (marks[i] && st != CL_COMPLETE) {
            label(name, all[i]->px);
            rc = fail(m, "a queue of proxy %s did not finish its commands in %ld ms%s", name,
                      vocl.migrate_wait_ms, st < 0 ? " (one failed)" : "");
        }
    }
    for (size_t i = 0; marks && i < n; i++)
        if (marks[i])
            clReleaseEvent(marks[i]);
    free(marks);
    for (size_t i = 0; m->spanning && all && i < n; i++)
        vocl_obj_drop(all[i]);
    if (m->spanning)
        free(all);
    return rc;
}

/* The devices of list on the source, as the target's (free them). */
static cl_device_id *devs_on(const struct mig *m, cl_uint n, struct vocl_obj *const *list,
                             cl_uint *k)
{
    cl_device_id *devs = malloc((n ? n : 1) * sizeof(*devs));
    *k = 0;
    for (cl_uint i = 0; devs && i < n; i++)
        if (list[i]->px == m->from)
            devs[(*k)++] = (cl_device_id)twin_of(m, list[i]);
    return devs;
}

static struct vocl_obj *twin_context(struct mig *m, struct vocl_obj *o)
{
    struct vocl_context *cx = vocl_as_context(o);
    cl_uint n;
    cl_device_id *devs = devs_on(m, cx->ndevs, cx->devs, &n);
    if (!devs)
        return NULL;
    cl_int err;
    cl_context t = clCreateContext(cx->props, n, devs, NULL, NULL, &err);
    free(devs);
    return (struct vocl_obj *)t;
}

static struct vocl_obj *twin_queue(struct mig *m, struct vocl_obj *o)
{
    cl_command_queue_properties props = 0;
    cl_int err = CL_SUCCESS;
    if (atomic_load(&o->app_refs) > 0) /* (else only its events are left: any queue will do) */
        err = clGetCommandQueueInfo((cl_command_queue)o, CL_QUEUE_PROPERTIES, sizeof(props),
                                    &props, NULL);
    if (err || (props & CL_QUEUE_ON_DEVICE)) {
        fail(m, "a device-side queue: not moved yet");
        return NULL;
    }
    cl_queue_properties list[] = {CL_QUEUE_PROPERTIES, props, 0};
    return (struct vocl_obj *)clCreateCommandQueueWithProperties(
        (cl_context)twin_of(m, o->context), (cl_device_id)twin_of(m, o->parent),
        props ? list : NULL, &err);
}

static struct vocl_obj *twin_mem(struct mig *m, struct vocl_obj *o)
{
    const struct vocl_mem *mm = vocl_as_mem(o);
    const cl_mem_flags keep = CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY |
                              CL_MEM_ALLOC_HOST_PTR;
    cl_int err;
    if (mm->mem_type) { /* an image; of a buffer, its double's */
        cl_image_desc desc = mm->desc;
        desc.mem_object = (cl_mem)twin_of(m, o->parent);
        return (struct vocl_obj *)clCreateImage((cl_context)twin_of(m, o->context),
                                                mm->mem_flags & keep, &mm->format, &desc, NULL,
                                                &err);
    }
    if (!o->parent)
        return (struct vocl_obj *)clCreateBuffer((cl_context)twin_of(m, o->context),
                                                 mm->mem_flags & keep, mm->mem_size, NULL, &err);
    size_t offset = 0;
    if (clGetMemObjectInfo((cl_mem)o, CL_MEM_OFFSET, sizeof(offset), &offset, NULL))
        return NULL;
    cl_buffer_region region = {offset, mm->mem_size};
    return (struct vocl_obj *)clCreateSubBuffer((cl_mem)twin_of(m, o->parent),
                                                mm->mem_flags & keep & ~CL_MEM_ALLOC_HOST_PTR,
                                                CL_BUFFER_CREATE_TYPE_REGION, &region, &err);
}

/* Asks a program's info of variable size (free it). */
static void *program_info(cl_program p, cl_program_info what, size_t *n)
{
    *n = 0;
    if (clGetProgramInfo(p, what, 0, NULL, n) || *n == 0)
        return NULL;
    void *v = malloc(*n);
    if (v && clGetProgramInfo(p, what, *n, v, NULL)) {
        free(v);
        v = NULL;
    }
    return v;
}

/* A program from its source, else its binaries, built as it was. */
static struct vocl_obj *twin_program(struct mig *m, struct vocl_obj *o)
{
    const struct vocl_program *p = vocl_as_program(o);
    const struct vocl_context *cx = vocl_as_context(o->context);
    cl_context tctx = (cl_context)twin_of(m, o->context);
    cl_uint ndevs;
    cl_device_id *devs = devs_on(m, p->devs ? p->ndevs : cx->ndevs, p->devs ? p->devs : cx->devs,
                                 &ndevs);
    size_t nsizes = 0;
    size_t *sizes = NULL;
    unsigned char **bins = NULL;
    cl_program t = NULL;
    cl_int err = CL_OUT_OF_HOST_MEMORY;
    if (devs && p->source) {
        t = clCreateProgramWithSource(tctx, 1, (const char **)&p->source, NULL, &err);
    } else if (devs && atomic_load(&o->app_refs) > 0 &&
               (sizes = program_info((cl_program)o, CL_PROGRAM_BINARY_SIZES, &nsizes)) &&
               nsizes == ndevs * sizeof(size_t) && (bins = calloc(ndevs, sizeof(*bins)))) {
        bool whole = true;
        for (cl_uint i = 0; i < ndevs; i++)
            whole &= sizes[i] && (bins[i] = malloc(sizes[i])) != NULL;
        if (whole && clGetProgramInfo((cl_program)o, CL_PROGRAM_BINARIES,
                                      ndevs * sizeof(*bins), bins, NULL) == CL_SUCCESS)
            t = clCreateProgramWithBinary(tctx, ndevs, devs, sizes,
                                          (const unsigned char **)bins, NULL, &err);
        for (cl_uint i = 0; i < ndevs; i++)
            free(bins[i]);
    }
    if (!t)
        fail(m, "a program of proxy %s could not be made again from its source or binaries",
             m->src);
    if (t && p->built && (err = clBuildProgram(t, ndevs, devs, p->options, NULL, NULL))) {
        fail(m, "a program did not build on proxy %s (%s)", m->dst, vocl_err_name(err));
        clReleaseProgram(t);
        t = NULL;
    }
    free(bins);
    free(sizes);
    free(devs);
    return (struct vocl_obj *)t;
}

static struct vocl_obj *twin_kernel(struct mig *m, struct vocl_obj *o)
{
    char name[1024];
    cl_int err = clGetKernelInfo((cl_kernel)o, CL_KERNEL_FUNCTION_NAME, sizeof(name), name, NULL);
    if (err)
        return NULL;
    return (struct vocl_obj *)clCreateKernel((cl_program)twin_of(m, o->parent), name, &err);
}

static struct vocl_obj *twin_sampler(struct mig *m, struct vocl_obj *o)
{
    cl_bool norm = CL_FALSE;
    cl_addressing_mode am = 0;
    cl_filter_mode fm = 0;
    cl_int err;
    if (clGetSamplerInfo((cl_sampler)o, CL_SAMPLER_NORMALIZED_COORDS, sizeof(norm), &norm, NULL) ||
        clGetSamplerInfo((cl_sampler)o, CL_SAMPLER_ADDRESSING_MODE, sizeof(am), &am, NULL) ||
        clGetSamplerInfo((cl_sampler)o, CL_SAMPLER_FILTER_MODE, sizeof(fm), &fm, NULL))
        return NULL;
    return (struct vocl_obj *)clCreateSampler((cl_context)twin_of(m, o->context), norm, am, fm,
                                              &err);
}

/* Every event: a user event with the status its command ended with. */
static struct vocl_obj *twin_event(struct mig *m, struct vocl_obj *o)
{
    cl_int st = CL_COMPLETE, err;
    if (atomic_load(&o->app_refs) > 0 &&
        clGetEventInfo((cl_event)o, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL))
        st = CL_COMPLETE;
    cl_event t = clCreateUserEvent((cl_context)twin_of(m, o->context), &err);
    if (t && clSetUserEventStatus(t, st < 0 ? st : CL_COMPLETE)) {
        clReleaseEvent(t);
        t = NULL;
    }
    return (struct vocl_obj *)t;
}

static int make_twins(struct mig *m)
{
    for (size_t i = 0; i < m->n; i++) {
        struct vocl_obj *o = m->objs[i], *t = NULL;
        if (o->reps && !m->old_id[i])
            continue; /* a kernel of a program not built on the source: none there either */
        switch (o->type) {
        case VOCL_T_DEVICE: continue;
        case VOCL_T_CONTEXT: t = twin_context(m, o); break;
        case VOCL_T_QUEUE: t = twin_queue(m, o); break;
        case VOCL_T_MEM: t = twin_mem(m, o); break;
        case VOCL_T_PROGRAM: t = twin_program(m, o); break;
        case VOCL_T_KERNEL: t = twin_kernel(m, o); break;
        case VOCL_T_SAMPLER: t = twin_sampler(m, o); break;
        case VOCL_T_EVENT: t = twin_event(m, o); break;
        default: break;
        }
        if (!t)
            return fail(m, "a %s could not be made again on proxy %s", type_name(o->type),
                        m->dst);
        m->twin[i] = t;
    }
    return 0;
}

/* A queue of ctx the application holds (or its double, on the target);
 * else one made for the copy (*made). */
static cl_command_queue queue_of(const struct mig *m, struct vocl_obj *ctx, bool target,
                                 bool *made)
{
    *made = false;
    for (size_t i = 0; i < m->n; i++)
        if (m->objs[i]->type == VOCL_T_QUEUE && m->objs[i]->context == ctx &&
            atomic_load(&m->objs[i]->app_refs) > 0)
            return (cl_command_queue)(target ? m->twin[i] : m->objs[i]);
    const struct vocl_context *cx = vocl_as_context(target ? twin_of(m, ctx) : ctx);
    cl_uint d = 0; /* (the double has the source's devices alone) */
    while (!target && d < cx->ndevs && cx->devs[d]->px != m->from)
        d++;
    cl_int err;
    cl_command_queue q = clCreateCommandQueueWithProperties(
        (cl_context)cx, (cl_device_id)cx->devs[d], NULL, &err);
    *made = q != NULL;
    return q;
}

/* Tells px to retain id, or to release it as the client's last reference. */
static void refcount_on(struct vocl_proxy *px, uint64_t id, bool retain)
{
    struct vocl_call c;
    vocl_call_init(&c);
    c.async = true;
    c.px = px;
    if (vocl_call_start(&c, retain ? VOCL_OP_RETAIN : VOCL_OP_RELEASE) == 0) {
        if (retain)
            vocl_enc_RETAIN_req(c.w, &(struct vocl_msg_RETAIN_req){.id = id});
        else
            vocl_enc_RELEASE_req(c.w, &(struct vocl_msg_RELEASE_req){.id = id, .last = true});
        vocl_call_send(&c);
    }
    vocl_call_end(&c);
}

/* Waits on px for its events ids (n of them), then releases them. */
static cl_int wait_release(struct vocl_proxy *px, const uint64_t *ids, cl_uint n)
{
    struct vocl_call c;
    vocl_call_init(&c);
    c.px = px;
    if (n && vocl_call_start(&c, VOCL_OP_clWaitForEvents) == 0) {
        vocl_enc_clWaitForEvents_req(c.w, &(struct vocl_msg_clWaitForEvents_req){
                                              .events = {.n = n, .v = ids}});
        vocl_call_send(&c);
    }
    vocl_call_end(&c);
    for (cl_uint i = 0; i < n; i++)
        refcount_on(px, ids[i], false);
    return c.err;
}

/* A buffer's bytes through this process: read from the source, written to
 * its double (tmp: room for them). */
static cl_int copy_through(struct mig *m, size_t i, void *tmp)
{
    struct vocl_obj *o = m->objs[i];
    const struct vocl_mem *mm = vocl_as_mem(o);
    bool made, tmade;
    cl_command_queue q = queue_of(m, o->context, false, &made);
    cl_command_queue tq = queue_of(m, o->context, true, &tmade);
    cl_int err = !q || !tq ? CL_INVALID_CONTEXT : CL_SUCCESS;
    const size_t origin[3] = {0, 0, 0};
    if (err == CL_SUCCESS && mm->mem_type) {
        err = clEnqueueReadImage(q, (cl_mem)o, CL_TRUE, origin, mm->dims, 0, 0, tmp, 0, NULL,
                                 NULL);
        if (err == CL_SUCCESS)
            err = clEnqueueWriteImage(tq, (cl_mem)m->twin[i], CL_TRUE, origin, mm->dims, 0, 0,
                                      tmp, 0, NULL, NULL);
    }
    if (err != CL_SUCCESS || mm->mem_type)
        goto out;
    err = clEnqueueReadBuffer(q, (cl_mem)o, CL_TRUE, 0, mm->mem_size, tmp, 0, NULL, NULL);
    if (err == CL_SUCCESS && o->reps &&
        (mm->twinned & (UINT64_C(1) << vocl_rep_index(o, m->from))))
        err = CL_INVALID_OPERATION; /* (the read should have merged them) */
    if (err == CL_SUCCESS)
        err = clEnqueueWriteBuffer(tq, (cl_mem)m->twin[i], CL_TRUE, 0, mm->mem_size, tmp, 0,
                                   NULL, NULL);
out:
    if (made)
        clReleaseCommandQueue(q);
    if (tmade)
        clReleaseCommandQueue(tq);
    return err;
}

/* Each buffer's bytes, source to target: directly between the proxies
 * where they share a communicator (job mode) and are not both on this
 * node, else through this process (on this node its buffers are shared
 * with the proxies: two copies in memory, faster here than MPI's chunks:
 * docs/report/migration). */
static int copy_contents(struct mig *m)
{
    void *tmp = NULL;
    size_t cap = 0;
    uint64_t *evs = calloc(m->n + 1, sizeof(*evs));
    cl_uint nev = 0;
    cl_int err = evs ? CL_SUCCESS : CL_OUT_OF_HOST_MEMORY;
    bool logged = vocl_failover_kept(m->from); /* (its log stays whole: through here) */
    for (size_t i = 0; i < m->n && err == CL_SUCCESS; i++) {
        struct vocl_obj *o = m->objs[i];
        const struct vocl_mem *mm = vocl_as_mem(o);
        uint64_t bit = UINT64_C(1) << vocl_rep_index(o, m->from);
        if (!mm || o->parent || (o->reps && !(mm->valid & bit)))
            continue; /* (a replica without the latest data: the target's is as stale) */
        size_t size = vocl_mem_bytes(mm);
        m->st->bytes += size;
        /* Unmerged writes of several devices are merged by a read first;
         * images go through this process. */
        if (!mm->mem_type && !(o->reps && (mm->twinned & bit)) && !(m->from->shm && m->to->shm) &&
            !logged &&
            vocl_copy_across(m->from, m->old_id[i], m->to, m->twin[i]->id, &evs[nev]) !=
                CL_INVALID_OPERATION) {
            nev++;
            continue;
        }
        if (size > cap) {
            free(tmp);
            tmp = malloc(cap = size);
        }
        err = tmp ? copy_through(m, i, tmp) : CL_OUT_OF_HOST_MEMORY;
    }
    cl_int waited = wait_release(m->to, evs, nev);
    free(evs);
    free(tmp);
    if (err == CL_SUCCESS)
        err = waited;
    return err ? fail(m, "the buffers' bytes did not move (%s)", vocl_err_name(err)) : 0;
}

/* The double's place is o's now: the double's husk goes, unknown to the target. */
static void take_place(struct mig *m, size_t i)
{
    struct vocl_obj *o = m->objs[i], *t = m->twin[i];
    if (o->type == VOCL_T_DEVICE) {
        o->px = m->to; /* the same id there */
        return;
    }
    vocl_rep_move(o, m->from, m->to, t ? t->id : 0);
    if (!t)
        return; /* a kernel not made on the source (nor on the target) */
    struct vocl_mem *mo = vocl_as_mem(o), *mt = vocl_as_mem(t);
    struct vocl_kernel *k = vocl_as_kernel(o);
    struct vocl_queue *q = vocl_as_queue(o);
    struct vocl_event *e = vocl_as_event(o);
    if (mo && !o->reps) { /* a buffer shared with a proxy of this node: the target's now */
        void *shm = mo->shm;
        int state = atomic_load(&mo->shm_state);
        mo->shm = mt->shm;
        atomic_store(&mo->shm_state, atomic_load(&mt->shm_state));
        mt->shm = shm;
        atomic_store(&mt->shm_state, state);
    }
    for (struct vocl_mapping *mp = mo ? mo->maps : NULL; mp; mp = mp->next)
        if (mp->px == m->from)
            mp->px = m->to, mp->ticket = 0;
    if (k) /* every argument goes with its next launch, every shape is asked again */
        for (cl_uint a = 0; a < k->kargs->n; a++)
            atomic_store(&k->kargs->a[a].sent, 0);
    if (k)
        for (unsigned s = 0; s < k->kargs->nshape; s++)
            k->kargs->shape[s].ok = 0;
    if (q)
        atomic_store(&q->data_ticket, 0);
    if (e) {
        atomic_store(&e->data_ticket, 0);
        atomic_store(&e->complete, true);
    }
    if (o->type == VOCL_T_CONTEXT && vocl_as_context(o)->ctx_notify) {
        atomic_fetch_sub(&m->from->notes_watch, 1);
        atomic_fetch_add(&m->to->notes_watch, 1);
    }
    vocl_obj_forget(t);
    m->twin[i] = NULL;
}

static void release_twins(struct mig *m)
{
    for (size_t i = m->n; i-- > 0;)
        if (m->twin[i]) {
            vocl_release(m->twin[i], m->twin[i]->type);
            m->twin[i] = NULL;
        }
}

int vocl_migrate(struct vocl_proxy *from, struct vocl_proxy *to, struct vocl_migration *st,
                 char *why, size_t whylen)
{
    struct mig m = {.from = from, .to = to, .why = why, .whylen = whylen, .st = st};
    label(m.src, from);
    label(m.dst, to);
    memset(st, 0, sizeof(*st));
    why[0] = '\0';
    vocl_map_init(&m.where);
    uint64_t t0 = vocl_now_ns();
    if (from == to)
        return fail(&m, "the source and the target are one proxy");
    if (from->local || to->local)
        return fail(&m, "this node's own devices (--local) do not move");
    if (atomic_load(&from->dead) || atomic_load(&to->dead))
        return fail(&m, "proxy %s is gone", atomic_load(&from->dead) ? m.src : m.dst);
    if (!vocl_gate_close(vocl.migrate_wait_ms))
        return fail(&m, "a thread of the application stayed inside OpenCL for %ld ms "
                        "(a blocking call): try again", vocl.migrate_wait_ms);
    uint64_t t1 = vocl_now_ns();
    vocl_failover_migrating(from, to);
    int rc = collect(&m);
    if (rc == 0)
        rc = match_devices(&m);
    if (rc == 0)
        rc = drain(&m);
    if (rc == 0)
        rc = make_twins(&m);
    uint64_t t2 = vocl_now_ns();
    if (rc == 0)
        rc = copy_contents(&m);
    for (size_t i = 0; rc == 0 && i < m.n; i++) /* the last word: any deferred error */
        if (m.twin[i] && m.twin[i]->type == VOCL_T_QUEUE && clFinish((cl_command_queue)m.twin[i]))
            rc = fail(&m, "proxy %s failed a command of the migration", m.dst);
    uint64_t t3 = vocl_now_ns();
    if (rc) {
        release_twins(&m);
    } else {
        for (size_t i = 0; i < m.n; i++)
            take_place(&m, i);
        /* The target's counts of references become the source's. */
        for (size_t i = m.n; i-- > 0;) {
            struct vocl_obj *o = m.objs[i];
            int refs = atomic_load(&o->app_refs);
            uint64_t id = vocl_id_on(o, to);
            if (o->type == VOCL_T_DEVICE || !m.old_id[i])
                continue;
            if (refs > 0)
                refcount_on(from, m.old_id[i], false);
            else /* only held by others: made again for them, the last reference is theirs */
                refcount_on(to, id, false);
            for (int r = 1; r < refs; r++)
                refcount_on(to, id, true);
            st->objects++;
        }
        vocl_xport_flush(from);
        vocl_xport_flush(to);
    }
    for (cl_uint i = 0; i < m.ntdev; i++)
        if (m.tdev[i])
            vocl_obj_forget(m.tdev[i]);
    if (vocl_failover_migrated(from, to, rc == 0)) {
        snprintf(why, whylen,
                 "proxy %s died amid the migration; its session went on on proxy %s "
                 "by failover",
                 m.src, m.dst);
        rc = 1;
    }
    vocl_gate_open();
    for (size_t i = 0; i < m.n; i++)
        vocl_obj_drop(m.objs[i]);
    free(m.objs);
    free(m.twin);
    free(m.old_id);
    free(m.tdev);
    vocl_map_free(&m.where);
    st->pause_ns = vocl_now_ns() - t1;
    st->total_ns = vocl_now_ns() - t0;
    st->copy_ns = t3 - t2;
    if (rc == 1)
        vocl_info("%s", why);
    if (rc == 0)
        vocl_info("migrated proxy %s to proxy %s: %zu objects, %llu bytes, paused %.1f ms",
                  m.src, m.dst, st->objects, (unsigned long long)st->bytes,
                  (double)st->pause_ns / 1e6);
    return rc;
}
