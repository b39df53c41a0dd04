/*
 * fake_cl.c - the native OpenCL library behind the request fuzzer: a fake.
 *
 * Why a fake and not PoCL: what is fuzzed is the executor's decoding of
 * requests (executor/exec.c, executor/ops_*.c, the generated decoders), not a
 * driver.  A real driver makes every input slow (contexts, queues, compiler
 * threads), finds the driver's own bugs, and accepts, or dies on, a garbage
 * handle as it pleases.  This fake is fast and strict where the executor can
 * be wrong:
 *
 *   handles    every handle it is given must be one it made, of the type the
 *              parameter wants, and not yet released (abort() otherwise): a
 *              decoder that passes garbage, a stale handle or one of another
 *              type crashes at once, where a driver might go on.  Handles are
 *              numbers in a range that is never memory: never dereferenced.
 *   memory     it reads and writes host memory exactly as far as the call's
 *              arguments say a driver would (sizes, pitches, regions, string
 *              lengths, property lists), so the sanitizers catch a request
 *              whose sizes the decoder failed to check against its data.
 *   commands   complete as late as the executor allows: a non-blocking
 *              command runs when something waits for it (clWaitForEvents on
 *              its event, clFinish, an event status query, a blocking command
 *              after it) or at the end of the input.  Host memory a command
 *              reads is checksummed when it is enqueued and must be unchanged
 *              when it runs; memory it writes is written then.  Freeing or
 *              reusing a transfer's memory too early is caught.
 *   leaks      objects count references like OpenCL's (children hold their
 *              parents), and when an input ends every object the executor
 *              made must have been released (fake_cl_end).
 *
 * Otherwise every call succeeds with plausible results: info queries answer
 * the values the executor acts on (a queue's context, a buffer's size, an
 * event's status) and zeros of the requested size for the rest.  Nothing
 * blocks: a wait on a user event not yet set returns as if the client had
 * set it meanwhile.  The fuzzer runs everything on one thread (fuzz_request.c
 * runs the executor's own threads in between requests), so there is no lock.
 *
 * The entries that need no more than their cl_api.def annotations are
 * generated (gen-fake.py, fake_gen.c); the others are here.
 */
#include "fake_cl.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Handles: FAKE_TAG | index.  Not a canonical x86-64 address, so a
 * dereference faults at once. */
#define FAKE_TAG  UINT64_C(0xfa4e000000000000)
#define FAKE_MASK UINT64_C(0x000000ffffffffff)

#define FAKE_NDEV      2
#define FAKE_MAX_ALLOC (16u << 20) /* CL_DEVICE_MAX_MEM_ALLOC_SIZE, and the largest image */
#define FAKE_BIN_SIZE  16u         /* every program binary */

/* The first failed check decides the error; later ones are not evaluated. */
#define FAIL_IF(cond, code)                                                                        \
    do {                                                                                           \
        if (err == CL_SUCCESS && (cond))                                                           \
            err = (code);                                                                          \
    } while (0)

/* Host memory of a command, in rows: rows x slices of len bytes. */
struct span {
    uint8_t *p;
    size_t len, pitch, rows, spitch, slices;
};

struct mapping {
    struct mapping *next;
    void *p;
};

struct fake_obj {
    enum vocl_type type;
    uint64_t id;
    unsigned refs; /* 0: released: the handle is dead */
    bool root;     /* the platform and root devices: not reference counted */
    const char *made_by;
    struct fake_obj *parent; /* held: a queue's context, a kernel's program, an event's queue */
    struct fake_obj *dev;    /* held: a queue's device */
    struct fake_obj *ctx;    /* the context it belongs to (not held: the parent holds it) */
    struct fake_obj **devs;  /* a context's devices (held) */
    cl_uint ndev;
    bool unified; /* devices: CL_DEVICE_HOST_UNIFIED_MEMORY */
    /* memory objects */
    cl_mem_object_type mtype;
    cl_mem_flags flags;
    size_t size, offset, elem, row, slice;
    cl_image_format fmt;
    cl_image_desc desc;
    struct mapping *maps;
    /* programs and kernels */
    bool built;
    cl_uint nbin; /* a program's devices (binaries) */
    char name[32];
    cl_uint nargs;
    /* events */
    bool user;
    cl_int status;
    uint64_t seq; /* the command it is the event of (0: a user event) */
};

/* A command not yet run. */
struct cmd {
    struct cmd *next;
    uint64_t seq;
    const char *fn;
    struct fake_obj *queue;
    struct span span;
    bool writes_host; /* else reads it: sum is its checksum once it may run */
    uint64_t sum;
    struct fake_obj *unmap; /* an unmap: the mapping at span.p goes */
    struct fake_obj **wait; /* the events it waits for */
    cl_uint nwait;
    bool gated;   /* held back by a user event not yet set (is_gated) */
    bool has_sum; /* sum was taken (not if it ran held back) */
};

static struct {
    struct fake_obj **v;
    size_t n, cap;
    const char *fn;
    struct fake_obj *platform, *devs[FAKE_NDEV];
    struct cmd *head, **tail;
    uint64_t seq;
} fk;

static _Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static _Noreturn void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "fake OpenCL: %s: ", fk.fn ? fk.fn : "(no call)");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

void fake_enter(const char *fn)
{
    fk.fn = fn;
}

void fake_unexpected(const char *fn)
{
    fk.fn = fn;
    die("called, and the fake does not model it: write it in tests/fuzz/fake_cl.c");
}

/* --- objects ---------------------------------------------------------------------------------- */

static void *handle(const struct fake_obj *o)
{
    return o ? (void *)(uintptr_t)(FAKE_TAG | o->id) : NULL;
}

static struct fake_obj *lookup(const void *h)
{
    uint64_t v = (uint64_t)(uintptr_t)h;
    if ((v & ~FAKE_MASK) != FAKE_TAG || (v & FAKE_MASK) == 0 || (v & FAKE_MASK) > fk.n)
        return NULL;
    return fk.v[(v & FAKE_MASK) - 1];
}

/* The live object h names, of type t (VOCL_T_NONE: any); aborts otherwise. */
static struct fake_obj *live(const void *h, enum vocl_type t)
{
    struct fake_obj *o = lookup(h);
    if (!o)
        die("%p is not a handle this library made", h);
    if (!o->refs)
        die("%s #%llu was released (made by %s)", vocl_type_name(o->type),
            (unsigned long long)o->id, o->made_by);
    if (t != VOCL_T_NONE && o->type != t)
        die("%s #%llu passed as a %s", vocl_type_name(o->type), (unsigned long long)o->id,
            vocl_type_name(t));
    return o;
}

static void hold(struct fake_obj *o)
{
    if (o && !o->root)
        o->refs++;
}

static void drop(struct fake_obj *o)
{
    if (!o || o->root)
        return;
    if (o->refs == 0)
        die("%s #%llu released once too often", vocl_type_name(o->type),
            (unsigned long long)o->id);
    if (--o->refs)
        return;
    drop(o->parent);
    drop(o->dev);
    for (cl_uint i = 0; i < o->ndev; i++)
        drop(o->devs[i]);
}

static struct fake_obj *obj_new(enum vocl_type t, struct fake_obj *parent, struct fake_obj *dev)
{
    if (fk.n == fk.cap) {
        size_t cap = fk.cap ? 2 * fk.cap : 64;
        struct fake_obj **v = realloc(fk.v, cap * sizeof(*v));
        if (!v)
            die("out of memory");
        fk.v = v;
        fk.cap = cap;
    }
    struct fake_obj *o = calloc(1, sizeof(*o));
    if (!o)
        die("out of memory");
    fk.v[fk.n++] = o;
    o->type = t;
    o->id = fk.n;
    o->refs = 1;
    o->made_by = fk.fn ? fk.fn : "setup";
    o->parent = parent;
    o->dev = dev;
    hold(parent);
    hold(dev);
    o->ctx = !parent ? NULL : parent->type == VOCL_T_CONTEXT ? parent : parent->ctx;
    if (t == VOCL_T_EVENT)
        o->status = CL_COMPLETE;
    return o;
}

void *fake_new(enum vocl_type t, const void *parent, const void *dev)
{
    return handle(obj_new(t, parent ? live(parent, VOCL_T_NONE) : NULL,
                          dev ? live(dev, VOCL_T_DEVICE) : NULL));
}

/* Checks h as fake_use does; returns its object (NULL for NULL). */
static struct fake_obj *use(cl_int *err, const void *h, enum vocl_type t, bool nullable)
{
    *err = fake_use(*err, h, t, nullable);
    return h ? lookup(h) : NULL;
}

cl_int fake_use(cl_int err, const void *h, enum vocl_type t, bool nullable)
{
    if (!h)
        return err != CL_SUCCESS ? err : nullable ? CL_SUCCESS : vocl_type_invalid_err(t);
    live(h, t);
    return err;
}

cl_int fake_use_list(cl_int err, const void *list, cl_uint n, enum vocl_type t)
{
    const void *const *v = list;
    FAIL_IF((n == 0) != (v == NULL),
            t == VOCL_T_EVENT ? CL_INVALID_EVENT_WAIT_LIST : CL_INVALID_VALUE);
    for (cl_uint i = 0; v && i < n; i++)
        err = fake_use(err, v[i], t, false);
    return err;
}

cl_int fake_retain(const void *h, enum vocl_type t)
{
    if (!h)
        return vocl_type_invalid_err(t);
    hold(live(h, t));
    return CL_SUCCESS;
}

cl_int fake_release(const void *h, enum vocl_type t)
{
    if (!h)
        return vocl_type_invalid_err(t);
    drop(live(h, t));
    return CL_SUCCESS;
}

/* --- memory ----------------------------------------------------------------------------------- */

static uint64_t checksum(const void *p, size_t n, uint64_t h)
{
    const volatile uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * UINT64_C(0x100000001b3);
    return h;
}

void fake_read(const void *p, size_t n)
{
    if (p)
        checksum(p, n, 0);
}

void fake_read_str(const char *s)
{
    if (s)
        fake_read(s, strlen(s));
}

cl_int fake_read_props(cl_int err, const void *props)
{
    const volatile uint64_t *p = props;
    for (size_t i = 0; p && p[i]; i += 2)
        (void)p[i + 1];
    return err;
}

cl_int fake_info(cl_int err, size_t size, void *value, size_t *size_ret, const void *data,
                 size_t n)
{
    FAIL_IF(value && size < n, CL_INVALID_VALUE);
    if (err != CL_SUCCESS)
        return err;
    if (value && data)
        memcpy(value, data, n);
    else if (value)
        memset(value, 0, n);
    if (size_ret)
        *size_ret = n;
    return CL_SUCCESS;
}

#define INFO(v)   fake_info(err, size, value, size_ret, &(v), sizeof(v))
#define INFO_H(o) info_handle(err, size, value, size_ret, (o))
#define INFO_S(s) fake_info(err, size, value, size_ret, (s), strlen(s) + 1)
#define INFO_ZERO fake_info(err, size, value, size_ret, NULL, size ? size : 8)

static cl_int info_handle(cl_int err, size_t size, void *value, size_t *size_ret,
                          const struct fake_obj *o)
{
    void *h = handle(o);
    return fake_info(err, size, value, size_ret, &h, sizeof(h));
}

/* a * b, or SIZE_MAX when it overflows. */
static size_t mul(size_t a, size_t b)
{
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

/* Offset of the last byte of s, plus one; SIZE_MAX when it overflows. */
static size_t span_end(const struct span *s)
{
    if (!s->len || !s->rows || !s->slices)
        return 0;
    size_t a = mul(s->slices - 1, s->spitch), b = mul(s->rows - 1, s->pitch), r;
    if (__builtin_add_overflow(a, b, &r) || __builtin_add_overflow(r, s->len, &r))
        return SIZE_MAX;
    return r;
}

static uint64_t span_visit(const struct span *s, bool write)
{
    uint64_t sum = 0;
    for (size_t z = 0; z < s->slices; z++)
        for (size_t y = 0; y < s->rows; y++) {
            uint8_t *row = s->p + z * s->spitch + y * s->pitch;
            if (write)
                memset(row, 0x5a, s->len);
            else
                sum = checksum(row, s->len, sum);
        }
    return sum;
}

/* --- commands --------------------------------------------------------------------------------- */

/* The pending command of seq, or NULL (done, or a user event's 0). */
static struct cmd *pending(uint64_t seq)
{
    for (struct cmd *c = fk.head; c && seq; c = c->next)
        if (c->seq == seq)
            return c;
    return NULL;
}

/* Whether c waits on a user event not yet set, directly, through the
 * events it waits for, or behind such a command of its (in-order) queue. */
static bool is_gated(const struct cmd *c)
{
    for (cl_uint i = 0; i < c->nwait; i++) {
        const struct fake_obj *e = c->wait[i];
        const struct cmd *w = pending(e->seq);
        if ((e->user && e->status > CL_COMPLETE) || (w && w->gated))
            return true;
    }
    for (const struct cmd *p = fk.head; p && p != c; p = p->next)
        if (p->queue == c->queue && p->gated)
            return true;
    return false;
}

/* The host memory a command reads, as the driver will read it: once the
 * command is no longer held back by a user event. */
static void snapshot(struct cmd *c)
{
    if (c->span.p && !c->writes_host && !c->unmap) {
        c->sum = span_visit(&c->span, false);
        c->has_sum = true;
    }
}

/* A user event was set: the commands it held back may read their memory now. */
static void ungate(void)
{
    for (struct cmd *c = fk.head; c; c = c->next) {
        bool gated = is_gated(c);
        if (c->gated && !gated)
            snapshot(c);
        c->gated = gated;
    }
}

static void cmd_run(struct cmd *c)
{
    const char *fn = fk.fn;
    fk.fn = c->fn; /* messages name the command */
    if (c->unmap) {
        struct mapping **pp = &c->unmap->maps;
        while (*pp && (*pp)->p != c->span.p)
            pp = &(*pp)->next;
        if (!*pp)
            die("the mapping at %p is gone before its unmap ran", (void *)c->span.p);
        struct mapping *m = *pp;
        *pp = m->next;
        free(m->p);
        free(m);
    } else if (c->writes_host) {
        span_visit(&c->span, true);
    } else if (c->span.p && span_visit(&c->span, false) != c->sum && c->has_sum) {
        die("host memory the command reads changed before it ran (freed or reused early?)");
    }
    fk.fn = fn;
}

/* Runs every pending command up to seq, in order (an in-order queue, and
 * earlier than needed is always allowed).  One still held back by a user
 * event runs too, as if the event were set meanwhile: nothing blocks. */
static void complete(uint64_t seq)
{
    while (fk.head && fk.head->seq <= seq) {
        struct cmd *c = fk.head;
        fk.head = c->next;
        if (!fk.head)
            fk.tail = &fk.head;
        cmd_run(c);
        free(c->wait);
        free(c);
    }
}

/* The last command of queue q so far. */
static uint64_t last_of(const struct fake_obj *q)
{
    uint64_t seq = 0;
    for (struct cmd *c = fk.head; c; c = c->next)
        if (c->queue == q)
            seq = c->seq;
    return seq;
}

/*
 * Enqueues a command on queue q, after the nwl events of wl (checked), with
 * host memory s (NULL: none), and makes its event (*ev when ev is not NULL).
 * A blocking command runs now, after the ones before it; the others when
 * something waits for them.
 */
static void enqueue(struct fake_obj *q, const struct span *s, bool writes_host, bool blocking,
                    struct fake_obj *unmap, cl_uint nwl, const cl_event *wl, cl_event *ev)
{
    struct cmd *c = calloc(1, sizeof(*c));
    if (!c || (nwl && !(c->wait = calloc(nwl, sizeof(*c->wait)))))
        die("out of memory");
    c->seq = ++fk.seq;
    c->fn = fk.fn;
    c->queue = q;
    for (cl_uint i = 0; i < nwl; i++)
        c->wait[i] = lookup(wl[i]);
    c->nwait = nwl;
    if (s)
        c->span = *s;
    c->writes_host = writes_host;
    c->unmap = unmap;
    c->gated = is_gated(c);
    if (!c->gated)
        snapshot(c);
    if (!fk.tail)
        fk.tail = &fk.head;
    *fk.tail = c;
    fk.tail = &c->next;
    if (ev) {
        struct fake_obj *e = obj_new(VOCL_T_EVENT, q, NULL);
        e->seq = c->seq;
        *ev = handle(e);
    }
    if (blocking)
        complete(c->seq);
}

void *fake_command(const void *queue, cl_uint nwl, const void *wl)
{
    cl_event ev;
    enqueue(live(queue, VOCL_T_QUEUE), NULL, false, false, NULL, nwl, wl, &ev);
    return ev;
}

/* --- platform and devices ------------------------------------------------------------------- */

void fake_cl_begin(void)
{
    if (fk.n)
        die("fake_cl_begin: the last input did not end");
    fk.tail = &fk.head;
    fk.fn = NULL;
    fk.platform = obj_new(VOCL_T_PLATFORM, NULL, NULL);
    fk.platform->root = true;
    for (int i = 0; i < FAKE_NDEV; i++) {
        fk.devs[i] = obj_new(VOCL_T_DEVICE, NULL, NULL);
        fk.devs[i]->root = true;
        /* One device keeps buffers in host memory (the executor's direct
         * transfers), the other does not (staged transfers). */
        fk.devs[i]->unified = i == 0;
    }
}

void fake_cl_end(void)
{
    fk.fn = "end of input";
    complete(UINT64_MAX);
    size_t leaks = 0;
    for (size_t i = 0; i < fk.n; i++) {
        struct fake_obj *o = fk.v[i];
        if (o->root || !o->refs)
            continue;
        fprintf(stderr, "fake OpenCL: leaked: %s #%llu made by %s, %u reference%s left\n",
                vocl_type_name(o->type), (unsigned long long)o->id, o->made_by, o->refs,
                o->refs == 1 ? "" : "s");
        leaks++;
    }
    if (leaks)
        die("%zu object%s the executor made outlived the session and its node", leaks,
            leaks == 1 ? "" : "s");
    for (size_t i = 0; i < fk.n; i++) {
        struct fake_obj *o = fk.v[i];
        for (struct mapping *m = o->maps, *next; m; m = next) {
            next = m->next;
            free(m->p);
            free(m);
        }
        free(o->devs);
        free(o);
    }
    fk.n = 0;
    fk.seq = 0;
    fk.fn = NULL;
}

cl_int CL_API_CALL fake_clGetPlatformIDs(cl_uint num_entries, cl_platform_id *platforms,
                                         cl_uint *num_platforms)
{
    fake_enter("clGetPlatformIDs");
    cl_int err = CL_SUCCESS;
    FAIL_IF(num_entries == 0 && platforms, CL_INVALID_VALUE);
    FAIL_IF(!platforms && !num_platforms, CL_INVALID_VALUE);
    if (err != CL_SUCCESS)
        return err;
    if (platforms)
        platforms[0] = handle(fk.platform);
    if (num_platforms)
        *num_platforms = 1;
    return CL_SUCCESS;
}

cl_int CL_API_CALL fake_clGetPlatformInfo(cl_platform_id platform, cl_platform_info param,
                                          size_t size, void *value, size_t *size_ret)
{
    fake_enter("clGetPlatformInfo");
    cl_int err = fake_use(CL_SUCCESS, platform, VOCL_T_PLATFORM, false);
    switch (param) {
    case CL_PLATFORM_NAME: return INFO_S("Fake OpenCL");
    case CL_PLATFORM_VENDOR: return INFO_S("VOCL tests");
    case CL_PLATFORM_VERSION: return INFO_S("OpenCL 3.0 fake");
    case CL_PLATFORM_PROFILE: return INFO_S("FULL_PROFILE");
    case CL_PLATFORM_EXTENSIONS: return INFO_S("");
    default: return INFO_ZERO;
    }
}

cl_int CL_API_CALL fake_clGetDeviceIDs(cl_platform_id platform, cl_device_type type,
                                       cl_uint num_entries, cl_device_id *devices,
                                       cl_uint *num_devices)
{
    fake_enter("clGetDeviceIDs");
    cl_int err = fake_use(CL_SUCCESS, platform, VOCL_T_PLATFORM, true);
    FAIL_IF(num_entries == 0 && devices, CL_INVALID_VALUE);
    FAIL_IF(!devices && !num_devices, CL_INVALID_VALUE);
    FAIL_IF(!(type & (CL_DEVICE_TYPE_CPU | CL_DEVICE_TYPE_DEFAULT)), CL_DEVICE_NOT_FOUND);
    if (err != CL_SUCCESS)
        return err;
    for (cl_uint i = 0; devices && i < num_entries && i < FAKE_NDEV; i++)
        devices[i] = handle(fk.devs[i]);
    if (num_devices)
        *num_devices = FAKE_NDEV;
    return CL_SUCCESS;
}

cl_int CL_API_CALL fake_clGetDeviceInfo(cl_device_id device, cl_device_info param, size_t size,
                                        void *value, size_t *size_ret)
{
    fake_enter("clGetDeviceInfo");
    cl_int err = CL_SUCCESS;
    struct fake_obj *d = use(&err, device, VOCL_T_DEVICE, false);
    struct fake_obj *root = d;
    while (root && !root->root)
        root = root->parent;
    cl_device_type type = CL_DEVICE_TYPE_CPU;
    cl_ulong alloc = FAKE_MAX_ALLOC, global = 4 * (cl_ulong)FAKE_MAX_ALLOC;
    cl_bool yes = CL_TRUE, unified = root && root->unified;
    cl_uint dims = 3, units = 4, refs = d ? d->refs : 0;
    size_t items[3] = {1024, 1024, 1024}, group = 1024;
    switch (param) {
    case CL_DEVICE_TYPE: return INFO(type);
    case CL_DEVICE_MAX_MEM_ALLOC_SIZE: return INFO(alloc);
    case CL_DEVICE_GLOBAL_MEM_SIZE: return INFO(global);
    case CL_DEVICE_HOST_UNIFIED_MEMORY: return INFO(unified);
    case CL_DEVICE_AVAILABLE:
    case CL_DEVICE_COMPILER_AVAILABLE:
    case CL_DEVICE_LINKER_AVAILABLE:
    case CL_DEVICE_IMAGE_SUPPORT: return INFO(yes);
    case CL_DEVICE_MAX_COMPUTE_UNITS: return INFO(units);
    case CL_DEVICE_MAX_WORK_ITEM_DIMENSIONS: return INFO(dims);
    case CL_DEVICE_MAX_WORK_ITEM_SIZES: return INFO(items);
    case CL_DEVICE_MAX_WORK_GROUP_SIZE: return INFO(group);
    case CL_DEVICE_REFERENCE_COUNT: return INFO(refs);
    case CL_DEVICE_PLATFORM: return INFO_H(fk.platform);
    case CL_DEVICE_PARENT_DEVICE: return INFO_H(d && !d->root ? d->parent : NULL);
    case CL_DEVICE_NAME: return INFO_S(d && d->unified ? "fake unified" : "fake device");
    case CL_DEVICE_VENDOR: return INFO_S("VOCL tests");
    case CL_DEVICE_VERSION: return INFO_S("OpenCL 3.0 fake");
    case CL_DRIVER_VERSION: return INFO_S("1.0");
    case CL_DEVICE_OPENCL_C_VERSION: return INFO_S("OpenCL C 1.2 fake");
    case CL_DEVICE_PROFILE: return INFO_S("FULL_PROFILE");
    case CL_DEVICE_EXTENSIONS:
    case CL_DEVICE_BUILT_IN_KERNELS: return INFO_S("");
    default: return INFO_ZERO;
    }
}

/* How many sub-devices a partition makes, after reading it as a driver does. */
static cl_int partition(cl_int err, const cl_device_partition_property *p, cl_uint *n)
{
    *n = 0;
    FAIL_IF(!p, CL_INVALID_VALUE);
    if (err != CL_SUCCESS)
        return err;
    switch (p[0]) {
    case CL_DEVICE_PARTITION_EQUALLY:
        FAIL_IF(p[1] <= 0 || p[2] != 0, CL_INVALID_VALUE);
        *n = 2;
        break;
    case CL_DEVICE_PARTITION_BY_COUNTS:
        for (size_t i = 1; p[i] != CL_DEVICE_PARTITION_BY_COUNTS_LIST_END; i++)
            (*n)++;
        FAIL_IF(*n == 0 || *n > 64, CL_INVALID_DEVICE_PARTITION_COUNT);
        break;
    case CL_DEVICE_PARTITION_BY_AFFINITY_DOMAIN:
        FAIL_IF(p[2] != 0, CL_INVALID_VALUE);
        *n = 1;
        break;
    default:
        err = CL_INVALID_VALUE;
    }
    return err;
}

cl_int CL_API_CALL fake_clCreateSubDevices(cl_device_id in_device,
                                           const cl_device_partition_property *properties,
                                           cl_uint num_devices, cl_device_id *out_devices,
                                           cl_uint *num_devices_ret)
{
    fake_enter("clCreateSubDevices");
    cl_int err = CL_SUCCESS;
    struct fake_obj *d = use(&err, in_device, VOCL_T_DEVICE, false);
    cl_uint n;
    err = partition(err, properties, &n);
    FAIL_IF(out_devices && num_devices < n, CL_INVALID_VALUE);
    if (err != CL_SUCCESS)
        return err;
    for (cl_uint i = 0; out_devices && i < n; i++)
        out_devices[i] = handle(obj_new(VOCL_T_DEVICE, d, NULL));
    if (num_devices_ret)
        *num_devices_ret = n;
    return CL_SUCCESS;
}

/* --- contexts and queues ---------------------------------------------------------------------- */

static bool in_context(const struct fake_obj *ctx, const struct fake_obj *dev)
{
    for (cl_uint i = 0; ctx && i < ctx->ndev; i++)
        if (ctx->devs[i] == dev)
            return true;
    return false;
}

/* Checks a device list of a program call against the program's context. */
static cl_int use_devices(cl_int err, const struct fake_obj *ctx, cl_uint n,
                          const cl_device_id *devs)
{
    err = fake_use_list(err, devs, n, VOCL_T_DEVICE);
    for (cl_uint i = 0; devs && i < n; i++)
        FAIL_IF(!in_context(ctx, lookup(devs[i])), CL_INVALID_DEVICE);
    return err;
}

cl_context CL_API_CALL fake_clCreateContext(
    const cl_context_properties *properties, cl_uint num_devices, const cl_device_id *devices,
    void(CL_CALLBACK *pfn_notify)(const char *, const void *, size_t, void *), void *user_data,
    cl_int *errcode_ret)
{
    fake_enter("clCreateContext");
    cl_int err = fake_read_props(CL_SUCCESS, properties);
    for (size_t i = 0; properties && properties[i]; i += 2) {
        if (properties[i] == CL_CONTEXT_PLATFORM)
            FAIL_IF(lookup((void *)properties[i + 1]) != fk.platform, CL_INVALID_PLATFORM);
        else
            FAIL_IF(properties[i] != CL_CONTEXT_INTEROP_USER_SYNC, CL_INVALID_PROPERTY);
    }
    FAIL_IF(num_devices == 0 || !devices, CL_INVALID_VALUE);
    FAIL_IF(!pfn_notify && user_data, CL_INVALID_VALUE);
    err = fake_use_list(err, devices, num_devices, VOCL_T_DEVICE);
    struct fake_obj *c = NULL;
    if (err == CL_SUCCESS) {
        c = obj_new(VOCL_T_CONTEXT, NULL, NULL);
        c->devs = calloc(num_devices, sizeof(*c->devs));
        if (!c->devs)
            die("out of memory");
        for (cl_uint i = 0; i < num_devices; i++) {
            c->devs[i] = lookup(devices[i]);
            hold(c->devs[i]);
        }
        c->ndev = num_devices;
        /* As a driver may, at once: the executor's note must find its way. */
        static const uint8_t priv[4] = {1, 2, 3, 4};
        if (pfn_notify)
            pfn_notify("fake OpenCL: context created", priv, sizeof(priv), user_data);
    }
    if (errcode_ret)
        *errcode_ret = err;
    return handle(c);
}

cl_int CL_API_CALL fake_clGetContextInfo(cl_context context, cl_context_info param, size_t size,
                                         void *value, size_t *size_ret)
{
    fake_enter("clGetContextInfo");
    cl_int err = CL_SUCCESS;
    struct fake_obj *c = use(&err, context, VOCL_T_CONTEXT, false);
    cl_uint n = c ? c->ndev : 0, refs = c ? c->refs : 0;
    switch (param) {
    case CL_CONTEXT_REFERENCE_COUNT: return INFO(refs);
    case CL_CONTEXT_NUM_DEVICES: return INFO(n);
    case CL_CONTEXT_PROPERTIES: return fake_info(err, size, value, size_ret, NULL, 0);
    case CL_CONTEXT_DEVICES: {
        cl_device_id *devs = err == CL_SUCCESS ? calloc(n ? n : 1, sizeof(*devs)) : NULL;
        for (cl_uint i = 0; devs && i < n; i++)
            devs[i] = handle(c->devs[i]);
        err = fake_info(err, size, value, size_ret, devs, n * sizeof(*devs));
        free(devs);
        return err;
    }
    default: return INFO_ZERO;
    }
}

cl_int CL_API_CALL fake_clGetCommandQueueInfo(cl_command_queue command_queue,
                                              cl_command_queue_info param, size_t size,
                                              void *value, size_t *size_ret)
{
    fake_enter("clGetCommandQueueInfo");
    cl_int err = CL_SUCCESS;
    struct fake_obj *q = use(&err, command_queue, VOCL_T_QUEUE, false);
    cl_uint refs = q ? q->refs : 0;
    switch (param) {
    case CL_QUEUE_CONTEXT: return INFO_H(q ? q->ctx : NULL);
    case CL_QUEUE_DEVICE: return INFO_H(q ? q->dev : NULL);
    case CL_QUEUE_REFERENCE_COUNT: return INFO(refs);
    default: return INFO_ZERO;
    }
}

cl_int CL_API_CALL fake_clFinish(cl_command_queue command_queue)
{
    fake_enter("clFinish");
    cl_int err = CL_SUCCESS;
    struct fake_obj *q = use(&err, command_queue, VOCL_T_QUEUE, false);
    if (err == CL_SUCCESS)
        complete(last_of(q));
    return err;
}

/* --- memory objects --------------------------------------------------------------------------- */

#define MEM_ACCESS (CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY)
#define MEM_HOST   (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS)
#define MEM_FLAGS                                                                                  \
    (MEM_ACCESS | MEM_HOST | CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR)

static cl_int check_flags(cl_int err, cl_mem_flags flags, const void *host)
{
    FAIL_IF(flags & ~(cl_mem_flags)MEM_FLAGS, CL_INVALID_VALUE);
    FAIL_IF(__builtin_popcountll(flags & MEM_ACCESS) > 1, CL_INVALID_VALUE);
    FAIL_IF(__builtin_popcountll(flags & MEM_HOST) > 1, CL_INVALID_VALUE);
    FAIL_IF((flags & CL_MEM_USE_HOST_PTR) &&
                (flags & (CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR)),
            CL_INVALID_VALUE);
    FAIL_IF(!host != !(flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR)),
            CL_INVALID_HOST_PTR);
    /* The executor never hands a driver memory to keep (USE_HOST_PTR): the
     * request's memory is gone after it. */
    if (err == CL_SUCCESS && (flags & CL_MEM_USE_HOST_PTR))
        die("CL_MEM_USE_HOST_PTR with memory the request owns");
    return err;
}

static cl_mem create_buffer(cl_context context, const cl_mem_properties *properties,
                            cl_mem_flags flags, size_t size, void *host_ptr, cl_int *errcode_ret)
{
    cl_int err = CL_SUCCESS;
    struct fake_obj *c = use(&err, context, VOCL_T_CONTEXT, false);
    err = fake_read_props(err, properties);
    FAIL_IF(properties && properties[0], CL_INVALID_PROPERTY);
    err = check_flags(err, flags, host_ptr);
    FAIL_IF(size == 0 || size > FAKE_MAX_ALLOC, CL_INVALID_BUFFER_SIZE);
    struct fake_obj *b = NULL;
    if (err == CL_SUCCESS) {
        fake_read(host_ptr, size);
        b = obj_new(VOCL_T_MEM, c, NULL);
        b->mtype = CL_MEM_OBJECT_BUFFER;
        b->flags = flags;
        b->size = size;
    }
    if (errcode_ret)
        *errcode_ret = err;
    return handle(b);
}

cl_mem CL_API_CALL fake_clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size,
                                       void *host_ptr, cl_int *errcode_ret)
{
    fake_enter("clCreateBuffer");
    return create_buffer(context, NULL, flags, size, host_ptr, errcode_ret);
}

cl_mem CL_API_CALL fake_clCreateBufferWithProperties(cl_context context,
                                                     const cl_mem_properties *properties,
                                                     cl_mem_flags flags, size_t size,
                                                     void *host_ptr, cl_int *errcode_ret)
{
    fake_enter("clCreateBufferWithProperties");
    return create_buffer(context, properties, flags, size, host_ptr, errcode_ret);
}

cl_mem CL_API_CALL fake_clCreateSubBuffer(cl_mem buffer, cl_mem_flags flags,
                                          cl_buffer_create_type type, const void *info,
                                          cl_int *errcode_ret)
{
    fake_enter("clCreateSubBuffer");
    cl_int err = CL_SUCCESS;
    struct fake_obj *b = use(&err, buffer, VOCL_T_MEM, false);
    const cl_buffer_region *r = info;
    FAIL_IF(b->mtype != CL_MEM_OBJECT_BUFFER || b->parent->type == VOCL_T_MEM,
            CL_INVALID_MEM_OBJECT);
    FAIL_IF(type != CL_BUFFER_CREATE_TYPE_REGION || !r, CL_INVALID_VALUE);
    err = check_flags(err, flags & ~(cl_mem_flags)CL_MEM_COPY_HOST_PTR, NULL);
    FAIL_IF(r->size == 0, CL_INVALID_BUFFER_SIZE);
    FAIL_IF(r->origin > b->size || r->size > b->size - r->origin, CL_INVALID_VALUE);
    struct fake_obj *s = NULL;
    if (err == CL_SUCCESS) {
        s = obj_new(VOCL_T_MEM, b, NULL);
        s->mtype = CL_MEM_OBJECT_BUFFER;
        s->flags = flags ? flags : b->flags;
        s->offset = r->origin;
        s->size = r->size;
    }
    if (errcode_ret)
        *errcode_ret = err;
    return handle(s);
}

/* The formats the fake's devices support, with their pixel sizes. */
static const struct {
    cl_image_format fmt;
    size_t size;
} formats[] = {
    {{CL_RGBA, CL_UNORM_INT8}, 4},  {{CL_RGBA, CL_UNSIGNED_INT8}, 4}, {{CL_RGBA, CL_FLOAT}, 16},
    {{CL_BGRA, CL_UNORM_INT8}, 4},  {{CL_R, CL_FLOAT}, 4},            {{CL_R, CL_SIGNED_INT32}, 4},
};

static size_t format_size(const cl_image_format *f)
{
    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
        if (formats[i].fmt.image_channel_order == f->image_channel_order &&
            formats[i].fmt.image_channel_data_type == f->image_channel_data_type)
            return formats[i].size;
    return 0;
}

static bool is_image(cl_mem_object_type t)
{
    switch (t) {
    case CL_MEM_OBJECT_IMAGE1D:
    case CL_MEM_OBJECT_IMAGE1D_BUFFER:
    case CL_MEM_OBJECT_IMAGE1D_ARRAY:
    case CL_MEM_OBJECT_IMAGE2D:
    case CL_MEM_OBJECT_IMAGE2D_ARRAY:
    case CL_MEM_OBJECT_IMAGE3D: return true;
    default: return false;
    }
}

/* An image's rows (height, or 1) and planes (depth, array size, or 1). */
static size_t image_rows(const cl_image_desc *d)
{
    switch (d->image_type) {
    case CL_MEM_OBJECT_IMAGE2D:
    case CL_MEM_OBJECT_IMAGE2D_ARRAY:
    case CL_MEM_OBJECT_IMAGE3D: return d->image_height;
    default: return 1;
    }
}

static size_t image_planes(const cl_image_desc *d)
{
    switch (d->image_type) {
    case CL_MEM_OBJECT_IMAGE3D: return d->image_depth;
    case CL_MEM_OBJECT_IMAGE1D_ARRAY:
    case CL_MEM_OBJECT_IMAGE2D_ARRAY: return d->image_array_size;
    default: return 1;
    }
}

static cl_mem create_image(cl_context context, const cl_mem_properties *properties,
                           cl_mem_flags flags, const cl_image_format *format,
                           const cl_image_desc *desc, void *host_ptr, cl_int *errcode_ret)
{
    cl_int err = CL_SUCCESS;
    struct fake_obj *c = use(&err, context, VOCL_T_CONTEXT, false);
    err = fake_read_props(err, properties);
    FAIL_IF(properties && properties[0], CL_INVALID_PROPERTY);
    err = check_flags(err, flags, host_ptr);
    FAIL_IF(!format, CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    size_t elem = err == CL_SUCCESS ? format_size(format) : 0;
    FAIL_IF(!elem, CL_IMAGE_FORMAT_NOT_SUPPORTED);
    FAIL_IF(!desc || !is_image(desc->image_type), CL_INVALID_IMAGE_DESCRIPTOR);
    FAIL_IF(desc->num_mip_levels || desc->num_samples, CL_INVALID_IMAGE_DESCRIPTOR);
    size_t rows = err == CL_SUCCESS ? image_rows(desc) : 0;
    size_t planes = err == CL_SUCCESS ? image_planes(desc) : 0;
    FAIL_IF(!desc->image_width || !rows || !planes, CL_INVALID_IMAGE_SIZE);
    size_t bytes = err == CL_SUCCESS ? mul(mul(mul(desc->image_width, rows), planes), elem) : 0;
    FAIL_IF(bytes > FAKE_MAX_ALLOC, CL_INVALID_IMAGE_SIZE);
    /* An image of a buffer: 1D buffer images and 2D images only. */
    struct fake_obj *of = NULL;
    if (desc && desc->mem_object) {
        FAIL_IF(desc->image_type != CL_MEM_OBJECT_IMAGE1D_BUFFER &&
                    desc->image_type != CL_MEM_OBJECT_IMAGE2D,
                CL_INVALID_IMAGE_DESCRIPTOR);
        of = use(&err, desc->mem_object, VOCL_T_MEM, false);
        FAIL_IF(of->mtype != CL_MEM_OBJECT_BUFFER || host_ptr, CL_INVALID_IMAGE_DESCRIPTOR);
        FAIL_IF(bytes > of->size, CL_INVALID_IMAGE_SIZE);
    } else {
        FAIL_IF(desc->image_type == CL_MEM_OBJECT_IMAGE1D_BUFFER, CL_INVALID_IMAGE_DESCRIPTOR);
    }
    /* Pitches: given only with host memory; at least a row (a slice). */
    size_t row = 0, slice = 0;
    if (err == CL_SUCCESS) {
        FAIL_IF(!host_ptr && (desc->image_row_pitch || desc->image_slice_pitch),
                CL_INVALID_IMAGE_DESCRIPTOR);
        row = desc->image_row_pitch ? desc->image_row_pitch : desc->image_width * elem;
        FAIL_IF(row < desc->image_width * elem || row % elem, CL_INVALID_IMAGE_DESCRIPTOR);
        size_t min_slice = mul(row, rows);
        slice = desc->image_slice_pitch ? desc->image_slice_pitch : min_slice;
        FAIL_IF(planes > 1 && slice < min_slice, CL_INVALID_IMAGE_DESCRIPTOR);
    }
    struct fake_obj *img = NULL;
    if (err == CL_SUCCESS) {
        if (host_ptr) {
            struct span s = {host_ptr, desc->image_width * elem, row, rows, slice, planes};
            span_visit(&s, false);
        }
        img = obj_new(VOCL_T_MEM, of ? of : c, NULL);
        img->mtype = desc->image_type;
        img->flags = flags;
        img->fmt = *format;
        img->desc = *desc;
        img->elem = elem;
        img->size = bytes;
        img->row = desc->image_width * elem;
        img->slice = img->row * rows;
    }
    if (errcode_ret)
        *errcode_ret = err;
    return handle(img);
}

cl_mem CL_API_CALL fake_clCreateImage(cl_context context, cl_mem_flags flags,
                                      const cl_image_format *image_format,
                                      const cl_image_desc *image_desc, void *host_ptr,
                                      cl_int *errcode_ret)
{
    fake_enter("clCreateImage");
    return create_image(context, NULL, flags, image_format, image_desc, host_ptr, errcode_ret);
}

cl_mem CL_API_CALL fake_clCreateImageWithProperties(cl_context context,
                                                    const cl_mem_properties *properties,
                                                    cl_mem_flags flags,
                                                    const cl_image_format *image_format,
                                                    const cl_image_desc *image_desc,
                                                    void *host_ptr, cl_int *errcode_ret)
{
    fake_enter("clCreateImageWithProperties");
    return create_image(context, properties, flags, image_format, image_desc, host_ptr,
                        errcode_ret);
}

cl_mem CL_API_CALL fake_clCreatePipe(cl_context context, cl_mem_flags flags,
                                     cl_uint pipe_packet_size, cl_uint pipe_max_packets,
                                     const cl_pipe_properties *properties, cl_int *errcode_ret)
{
    fake_enter("clCreatePipe");
    cl_int err = CL_SUCCESS;
    struct fake_obj *c = use(&err, context, VOCL_T_CONTEXT, false);
    err = fake_read_props(err, properties);
    FAIL_IF(properties && properties[0], CL_INVALID_VALUE);
    FAIL_IF(flags & ~(cl_mem_flags)(CL_MEM_READ_WRITE | CL_MEM_HOST_NO_ACCESS), CL_INVALID_VALUE);
    FAIL_IF(!pipe_packet_size || pipe_packet_size > 1024, CL_INVALID_PIPE_SIZE);
    FAIL_IF(mul(pipe_packet_size, pipe_max_packets) > FAKE_MAX_ALLOC, CL_INVALID_PIPE_SIZE);
    struct fake_obj *p = NULL;
    if (err == CL_SUCCESS) {
        p = obj_new(VOCL_T_MEM, c, NULL);
        p->mtype = CL_MEM_OBJECT_PIPE;
        p->flags = flags;
        p->size = (size_t)pipe_packet_size * pipe_max_packets;
    }
    if (errcode_ret)
        *errcode_ret = err;
    return handle(p);
}

cl_int CL_API_CALL fake_clGetSupportedImageFormats(cl_context context, cl_mem_flags flags,
                                                   cl_mem_object_type image_type,
                                                   cl_uint num_entries,
                                                   cl_image_format *image_formats,
                                                   cl_uint *num_image_formats)
{
    (void)flags;
    fake_enter("clGetSupportedImageFormats");
    cl_int err = fake_use(CL_SUCCESS, context, VOCL_T_CONTEXT, false);
    const cl_uint n = sizeof(formats) / sizeof(formats[0]);
    FAIL_IF(num_entries == 0 && image_formats, CL_INVALID_VALUE);
    FAIL_IF(!is_image(image_type), CL_INVALID_VALUE);
    if (err != CL_SUCCESS)
        return err;
    for (cl_uint i = 0; image_formats && i < num_entries && i < n; i++)
        image_formats[i] = formats[i].fmt;
    if (num_image_formats)
        *num_image_formats = n;
    return CL_SUCCESS;
}

cl_int CL_API_CALL fake_clGetMemObjectInfo(cl_mem memobj, cl_mem_info param, size_t size,
                                           void *value, size_t *size_ret)
{
    fake_enter("clGetMemObjectInfo");
    cl_int err = CL_SUCCESS;
    struct fake_obj *m = use(&err, memobj, VOCL_T_MEM, false);
    cl_mem_object_type type = m ? m->mtype : 0;
    cl_mem_flags flags = m ? m->flags : 0;
    size_t msize = m ? m->size : 0, offset = m ? m->offset : 0;
    cl_uint refs = m ? m->refs : 0, maps = 0;
    void *host = NULL;
    for (struct mapping *p = m ? m->maps : NULL; p; p = p->next)
        maps++;
    switch (param) {
    case CL_MEM_TYPE: return INFO(type);
    case CL_MEM_FLAGS: return INFO(flags);
    case CL_MEM_SIZE: return INFO(msize);
    case CL_MEM_OFFSET: return INFO(offset);
    case CL_MEM_HOST_PTR: return INFO(host);
    case CL_MEM_MAP_COUNT: return INFO(maps);
    case CL_MEM_REFERENCE_COUNT: return INFO(refs);
    case CL_MEM_CONTEXT: return INFO_H(m ? m->ctx : NULL);
    case CL_MEM_ASSOCIATED_MEMOBJECT:
        return INFO_H(m && m->parent->type == VOCL_T_MEM ? m->parent : NULL);
    default: return INFO_ZERO;
    }
}

cl_int CL_API_CALL fake_clGetImageInfo(cl_mem image, cl_image_info param, size_t size,
                                       void *value, size_t *size_ret)
{
    fake_enter("clGetImageInfo");
    cl_int err = CL_SUCCESS;
    struct fake_obj *m = use(&err, image, VOCL_T_MEM, false);
    FAIL_IF(!is_image(m->mtype), CL_INVALID_MEM_OBJECT);
    if (err != CL_SUCCESS)
        return err;
    const cl_image_desc *d = &m->desc;
    size_t zero = 0;
    bool rows = d->image_type != CL_MEM_OBJECT_IMAGE1D &&
                d->image_type != CL_MEM_OBJECT_IMAGE1D_BUFFER &&
                d->image_type != CL_MEM_OBJECT_IMAGE1D_ARRAY;
    bool array = d->image_type == CL_MEM_OBJECT_IMAGE1D_ARRAY ||
                 d->image_type == CL_MEM_OBJECT_IMAGE2D_ARRAY;
    cl_uint none = 0;
    switch (param) {
    case CL_IMAGE_FORMAT: return INFO(m->fmt);
    case CL_IMAGE_ELEMENT_SIZE: return INFO(m->elem);
    case CL_IMAGE_ROW_PITCH: return INFO(m->row);
    case CL_IMAGE_SLICE_PITCH: return d->image_type == CL_MEM_OBJECT_IMAGE2D ? INFO(zero)
                                                                             : INFO(m->slice);
    case CL_IMAGE_WIDTH: return INFO(d->image_width);
    case CL_IMAGE_HEIGHT: return rows ? INFO(d->image_height) : INFO(zero);
    case CL_IMAGE_DEPTH:
        return d->image_type == CL_MEM_OBJECT_IMAGE3D ? INFO(d->image_depth) : INFO(zero);
    case CL_IMAGE_ARRAY_SIZE: return array ? INFO(d->image_array_size) : INFO(zero);
    case CL_IMAGE_BUFFER:
        return INFO_H(m->parent->type == VOCL_T_MEM ? m->parent : NULL);
    case CL_IMAGE_NUM_MIP_LEVELS:
    case CL_IMAGE_NUM_SAMPLES: return INFO(none);
    default: return INFO_ZERO;
    }
}

/* --- programs and kernels --------------------------------------------------------------------- */

static struct fake_obj *new_program(struct fake_obj *ctx, cl_uint ndev)
{
    struct fake_obj *p = obj_new(VOCL_T_PROGRAM, ctx, NULL);
    p->nbin = ndev ? ndev : ctx->ndev;
    return p;
}

cl_program CL_API_CALL fake_clCreateProgramWithSource(cl_context context, cl_uint count,
                                                      const char **strings,
                                                      const size_t *lengths,
                                                      cl_int *errcode_ret)
{
    fake_enter("clCreateProgramWithSource");
    cl_int err = CL_SUCCESS;
    struct fake_obj *c = use(&err, context, VOCL_T_CONTEXT, false);
    FAIL_IF(count == 0 || !strings, CL_INVALID_VALUE);
    for (cl_uint i = 0; err == CL_SUCCESS && i < count; i++) {
        FAIL_IF(!strings[i], CL_INVALID_VALUE);
        if (err == CL_SUCCESS && lengths && lengths[i])
            fake_read(strings[i], lengths[i]);
        else if (err == CL_SUCCESS)
            fake_read_str(strings[i]);
    }
    struct fake_obj *p = err == CL_SUCCESS ? new_program(c, 0) : NULL;
    if (errcode_ret)
        *errcode_ret = err;
    return handle(p);
}

cl_program CL_API_CALL fake_clCreateProgramWithBinary(cl_context context, cl_uint num_devices,
                                                      const cl_device_id *device_list,
                                                      const size_t *lengths,
                                                      const unsigned char **binaries,
                                                      cl_int *binary_status,
                                                      cl_int *errcode_ret)
{
    fake_enter("clCreateProgramWithBinary");
    cl_int err = CL_SUCCESS;
    struct fake_obj *c = use(&err, context, VOCL_T_CONTEXT, false);
    FAIL_IF(num_devices == 0 || !device_list || !lengths || !binaries, CL_INVALID_VALUE);
    err = use_devices(err, c, num_devices, device_list);
    for (cl_uint i = 0; err == CL_SUCCESS && i < num_devices; i++) {
        FAIL_IF(!lengths[i] || !binaries[i], CL_INVALID_VALUE);
        if (err == CL_SUCCESS)
            fake_read(binaries[i], lengths[i]);
    }
    for (cl_uint i = 0; err == CL_SUCCESS && binary_status && i < num_devices; i++)
        binary_status[i] = CL_SUCCESS;
    struct fake_obj *p = err == CL_SUCCESS ? new_program(c, num_devices) : NULL;
    if (errcode_ret)
        *errcode_ret = err;
    return handle(p);
}

static cl_int use_program(cl_int err, const struct fake_obj *p, cl_uint ndev,
                          const cl_device_id *devs, const char *options, bool notify,
                          const void *user_data)
{
    err = use_devices(err, p ? p->ctx : NULL, ndev, devs);
    fake_read_str(options);
    FAIL_IF(!notify && user_data, CL_INVALID_VALUE);
    return err;
}

cl_int CL_API_CALL fake_clBuildProgram(cl_program program, cl_uint num_devices,
                                       const cl_device_id *device_list, const char *options,
                                       void(CL_CALLBACK *pfn_notify)(cl_program, void *),
                                       void *user_data)
{
    fake_enter("clBuildProgram");
    cl_int err = CL_SUCCESS;
    struct fake_obj *p = use(&err, program, VOCL_T_PROGRAM, false);
    err = use_program(err, p, num_devices, device_list, options, pfn_notify, user_data);
    if (err == CL_SUCCESS)
        p->built = true;
    return err;
}

cl_int CL_API_CALL fake_clCompileProgram(cl_program program, cl_uint num_devices,
                                         const cl_device_id *device_list, const char *options,
                                         cl_uint num_input_headers,
                                         const cl_program *input_headers,
                                         const char **header_include_names,
                                         void(CL_CALLBACK *pfn_notify)(cl_program, void *),
                                         void *user_data)
{
    fake_enter("clCompileProgram");
    cl_int err = CL_SUCCESS;
    struct fake_obj *p = use(&err, program, VOCL_T_PROGRAM, false);
    err = use_program(err, p, num_devices, device_list, options, pfn_notify, user_data);
    err = fake_use_list(err, input_headers, num_input_headers, VOCL_T_PROGRAM);
    FAIL_IF(num_input_headers && !header_include_names, CL_INVALID_VALUE);
    for (cl_uint i = 0; err == CL_SUCCESS && i < num_input_headers; i++) {
        FAIL_IF(!header_include_names[i], CL_INVALID_VALUE);
        fake_read_str(header_include_names[i]);
    }
    return err;
}

cl_program CL_API_CALL fake_clLinkProgram(cl_context context, cl_uint num_devices,
                                          const cl_device_id *device_list, const char *options,
                                          cl_uint num_input_programs,
                                          const cl_program *input_programs,
                                          void(CL_CALLBACK *pfn_notify)(cl_program, void *),
                                          void *user_data, cl_int *errcode_ret)
{
    fake_enter("clLinkProgram");
    cl_int err = CL_SUCCESS;
    struct fake_obj *c = use(&err, context, VOCL_T_CONTEXT, false);
    err = use_devices(err, c, num_devices, device_list);
    fake_read_str(options);
    FAIL_IF(!pfn_notify && user_data, CL_INVALID_VALUE);
    FAIL_IF(num_input_programs == 0, CL_INVALID_VALUE);
    err = fake_use_list(err, input_programs, num_input_programs, VOCL_T_PROGRAM);
    struct fake_obj *p = NULL;
    if (err == CL_SUCCESS) {
        p = new_program(c, num_devices);
        p->built = true;
    }
    if (errcode_ret)
        *errcode_ret = err;
    return handle(p);
}

/* Every built program has these kernels (clCreateKernelsInProgram). */
static const char *const program_kernels[] = {"k0", "k1"};
#define NKERNELS (sizeof(program_kernels) / sizeof(program_kernels[0]))

cl_int CL_API_CALL fake_clGetProgramInfo(cl_program program, cl_program_info param, size_t size,
                                         void *value, size_t *size_ret)
{
    fake_enter("clGetProgramInfo");
    cl_int err = CL_SUCCESS;
    struct fake_obj *p = use(&err, program, VOCL_T_PROGRAM, false);
    cl_uint n = p ? p->nbin : 0, refs = p ? p->refs : 0;
    size_t nk = NKERNELS;
    switch (param) {
    case CL_PROGRAM_REFERENCE_COUNT: return INFO(refs);
    case CL_PROGRAM_CONTEXT: return INFO_H(p ? p->ctx : NULL);
    case CL_PROGRAM_NUM_DEVICES: return INFO(n);
    case CL_PROGRAM_SOURCE: return INFO_S("");
    case CL_PROGRAM_NUM_KERNELS:
        FAIL_IF(!p->built, CL_INVALID_PROGRAM_EXECUTABLE);
        return INFO(nk);
    case CL_PROGRAM_KERNEL_NAMES:
        FAIL_IF(!p->built, CL_INVALID_PROGRAM_EXECUTABLE);
        return INFO_S("k0;k1");
    case CL_PROGRAM_DEVICES:
    case CL_PROGRAM_BINARY_SIZES:
    case CL_PROGRAM_BINARIES: {
        /* Arrays of ndev: the context's devices, FAKE_BIN_SIZE, and the
         * binaries themselves, written where the caller's pointers say. */
        size_t elem = param == CL_PROGRAM_BINARY_SIZES ? sizeof(size_t) : sizeof(void *);
        FAIL_IF(value && size < n * elem, CL_INVALID_VALUE);
        if (err != CL_SUCCESS)
            return err;
        for (cl_uint i = 0; value && i < n; i++) {
            if (param == CL_PROGRAM_DEVICES)
                ((cl_device_id *)value)[i] = handle(i < p->ctx->ndev ? p->ctx->devs[i] : NULL);
            else if (param == CL_PROGRAM_BINARY_SIZES)
                ((size_t *)value)[i] = FAKE_BIN_SIZE;
            else if (((unsigned char **)value)[i])
                memset(((unsigned char **)value)[i], 0xb1, FAKE_BIN_SIZE);
        }
        if (size_ret)
            *size_ret = n * elem;
        return CL_SUCCESS;
    }
    default: return INFO_ZERO;
    }
}

static struct fake_obj *new_kernel(struct fake_obj *program, const char *name)
{
    struct fake_obj *k = obj_new(VOCL_T_KERNEL, program, NULL);
    snprintf(k->name, sizeof(k->name), "%s", name);
    /* Some arguments, of the kinds in kernel_args; as many as real kernels
     * have, mostly, so that recorded launches set them all. */
    k->nargs = (cl_uint)(4 + strlen(name) % 12);
    return k;
}

cl_kernel CL_API_CALL fake_clCreateKernel(cl_program program, const char *kernel_name,
                                          cl_int *errcode_ret)
{
    fake_enter("clCreateKernel");
    cl_int err = CL_SUCCESS;
    struct fake_obj *p = use(&err, program, VOCL_T_PROGRAM, false);
    FAIL_IF(!p->built, CL_INVALID_PROGRAM_EXECUTABLE);
    FAIL_IF(!kernel_name, CL_INVALID_VALUE);
    fake_read_str(err == CL_SUCCESS ? kernel_name : NULL);
    FAIL_IF(!kernel_name[0], CL_INVALID_KERNEL_NAME);
    struct fake_obj *k = err == CL_SUCCESS ? new_kernel(p, kernel_name) : NULL;
    if (errcode_ret)
        *errcode_ret = err;
    return handle(k);
}

cl_int CL_API_CALL fake_clCreateKernelsInProgram(cl_program program, cl_uint num_kernels,
                                                 cl_kernel *kernels, cl_uint *num_kernels_ret)
{
    fake_enter("clCreateKernelsInProgram");
    cl_int err = CL_SUCCESS;
    struct fake_obj *p = use(&err, program, VOCL_T_PROGRAM, false);
    FAIL_IF(!p->built, CL_INVALID_PROGRAM_EXECUTABLE);
    FAIL_IF(kernels && num_kernels < NKERNELS, CL_INVALID_VALUE);
    if (err != CL_SUCCESS)
        return err;
    for (size_t i = 0; kernels && i < NKERNELS; i++)
        kernels[i] = handle(new_kernel(p, program_kernels[i]));
    if (num_kernels_ret)
        *num_kernels_ret = NKERNELS;
    return CL_SUCCESS;
}

cl_kernel CL_API_CALL fake_clCloneKernel(cl_kernel source_kernel, cl_int *errcode_ret)
{
    fake_enter("clCloneKernel");
    cl_int err = CL_SUCCESS;
    struct fake_obj *src = use(&err, source_kernel, VOCL_T_KERNEL, false);
    struct fake_obj *k = err == CL_SUCCESS ? new_kernel(src->parent, src->name) : NULL;
    if (errcode_ret)
        *errcode_ret = err;
    return handle(k);
}

cl_int CL_API_CALL fake_clGetKernelInfo(cl_kernel kernel, cl_kernel_info param, size_t size,
                                        void *value, size_t *size_ret)
{
    fake_enter("clGetKernelInfo");
    cl_int err = CL_SUCCESS;
    struct fake_obj *k = use(&err, kernel, VOCL_T_KERNEL, false);
    cl_uint nargs = k ? k->nargs : 0, refs = k ? k->refs : 0;
    switch (param) {
    case CL_KERNEL_FUNCTION_NAME: return INFO_S(k ? k->name : "");
    case CL_KERNEL_NUM_ARGS: return INFO(nargs);
    case CL_KERNEL_REFERENCE_COUNT: return INFO(refs);
    case CL_KERNEL_CONTEXT: return INFO_H(k ? k->ctx : NULL);
    case CL_KERNEL_PROGRAM: return INFO_H(k ? k->parent : NULL);
    case CL_KERNEL_ATTRIBUTES: return INFO_S("");
    default: return INFO_ZERO;
    }
}

/* Argument i of every kernel: one of each kind the executor tells apart,
 * and what clSetKernelArg takes for it. */
enum arg_value { ARG_BYTES, ARG_BUFFER, ARG_IMAGE, ARG_SAMPLER, ARG_LOCAL, ARG_PIPE };
static const struct {
    const char *type, *name;
    cl_kernel_arg_address_qualifier addr;
    cl_kernel_arg_type_qualifier tq;
    enum arg_value value;
} kernel_args[] = {
    {"float*", "buf", CL_KERNEL_ARG_ADDRESS_GLOBAL, CL_KERNEL_ARG_TYPE_NONE, ARG_BUFFER},
    {"int", "n", CL_KERNEL_ARG_ADDRESS_PRIVATE, CL_KERNEL_ARG_TYPE_CONST, ARG_BYTES},
    {"image2d_t", "img", CL_KERNEL_ARG_ADDRESS_GLOBAL, CL_KERNEL_ARG_TYPE_NONE, ARG_IMAGE},
    {"sampler_t", "smp", CL_KERNEL_ARG_ADDRESS_PRIVATE, CL_KERNEL_ARG_TYPE_NONE, ARG_SAMPLER},
    {"float4*", "tmp", CL_KERNEL_ARG_ADDRESS_LOCAL, CL_KERNEL_ARG_TYPE_NONE, ARG_LOCAL},
    {"int", "in", CL_KERNEL_ARG_ADDRESS_GLOBAL, CL_KERNEL_ARG_TYPE_PIPE, ARG_PIPE},
};
#define NARGKINDS (sizeof(kernel_args) / sizeof(kernel_args[0]))

cl_int CL_API_CALL fake_clGetKernelArgInfo(cl_kernel kernel, cl_uint arg_index,
                                           cl_kernel_arg_info param, size_t size, void *value,
                                           size_t *size_ret)
{
    fake_enter("clGetKernelArgInfo");
    cl_int err = CL_SUCCESS;
    struct fake_obj *k = use(&err, kernel, VOCL_T_KERNEL, false);
    FAIL_IF(arg_index >= k->nargs, CL_INVALID_ARG_INDEX);
    if (err != CL_SUCCESS)
        return err;
    size_t i = arg_index % NARGKINDS;
    cl_kernel_arg_access_qualifier access = CL_KERNEL_ARG_ACCESS_NONE;
    switch (param) {
    case CL_KERNEL_ARG_ADDRESS_QUALIFIER: return INFO(kernel_args[i].addr);
    case CL_KERNEL_ARG_TYPE_QUALIFIER: return INFO(kernel_args[i].tq);
    case CL_KERNEL_ARG_ACCESS_QUALIFIER: return INFO(access);
    case CL_KERNEL_ARG_TYPE_NAME: return INFO_S(kernel_args[i].type);
    case CL_KERNEL_ARG_NAME: return INFO_S(kernel_args[i].name);
    default: return CL_INVALID_VALUE;
    }
}

/*
 * A driver takes the value of an object argument for a handle and uses it
 * as one: a value there that is not a live handle is the executor's bug,
 * like any other garbage handle.  (A handle of another type it can tell.)
 */
cl_int CL_API_CALL fake_clSetKernelArg(cl_kernel kernel, cl_uint arg_index, size_t arg_size,
                                       const void *arg_value)
{
    fake_enter("clSetKernelArg");
    cl_int err = CL_SUCCESS;
    struct fake_obj *k = use(&err, kernel, VOCL_T_KERNEL, false);
    FAIL_IF(arg_index >= k->nargs, CL_INVALID_ARG_INDEX);
    if (err != CL_SUCCESS)
        return err;
    fake_read(arg_value, arg_size);
    enum arg_value kind = kernel_args[arg_index % NARGKINDS].value;
    if (kind == ARG_BYTES)
        return arg_size && arg_value ? CL_SUCCESS : CL_INVALID_ARG_VALUE;
    if (kind == ARG_LOCAL)
        return arg_value ? CL_INVALID_ARG_VALUE : arg_size ? CL_SUCCESS : CL_INVALID_ARG_SIZE;
    FAIL_IF(arg_size != sizeof(void *), CL_INVALID_ARG_SIZE);
    void *h = NULL;
    if (err == CL_SUCCESS && arg_value)
        memcpy(&h, arg_value, sizeof(h));
    FAIL_IF(!h && kind != ARG_BUFFER, CL_INVALID_ARG_VALUE);
    if (err != CL_SUCCESS || !h)
        return err;
    struct fake_obj *o = live(h, VOCL_T_NONE);
    FAIL_IF(o->type != (kind == ARG_SAMPLER ? VOCL_T_SAMPLER : VOCL_T_MEM), CL_INVALID_ARG_VALUE);
    FAIL_IF(kind == ARG_BUFFER && o->mtype != CL_MEM_OBJECT_BUFFER, CL_INVALID_ARG_VALUE);
    FAIL_IF(kind == ARG_IMAGE && !is_image(o->mtype), CL_INVALID_ARG_VALUE);
    FAIL_IF(kind == ARG_PIPE && o->mtype != CL_MEM_OBJECT_PIPE, CL_INVALID_ARG_VALUE);
    FAIL_IF(o->ctx != k->ctx, CL_INVALID_ARG_VALUE);
    return err;
}

cl_int CL_API_CALL fake_clEnqueueNDRangeKernel(cl_command_queue command_queue, cl_kernel kernel,
                                               cl_uint work_dim, const size_t *global_work_offset,
                                               const size_t *global_work_size,
                                               const size_t *local_work_size,
                                               cl_uint num_events_in_wait_list,
                                               const cl_event *event_wait_list, cl_event *event)
{
    fake_enter("clEnqueueNDRangeKernel");
    cl_int err = CL_SUCCESS;
    struct fake_obj *q = use(&err, command_queue, VOCL_T_QUEUE, false);
    struct fake_obj *k = use(&err, kernel, VOCL_T_KERNEL, false);
    FAIL_IF(q->ctx != k->ctx, CL_INVALID_CONTEXT);
    FAIL_IF(work_dim < 1 || work_dim > 3, CL_INVALID_WORK_DIMENSION);
    FAIL_IF(!global_work_size, CL_INVALID_GLOBAL_WORK_SIZE);
    if (err == CL_SUCCESS) {
        fake_read(global_work_offset, global_work_offset ? work_dim * sizeof(size_t) : 0);
        fake_read(global_work_size, work_dim * sizeof(size_t));
        fake_read(local_work_size, local_work_size ? work_dim * sizeof(size_t) : 0);
    }
    err = fake_use_list(err, event_wait_list, num_events_in_wait_list, VOCL_T_EVENT);
    if (err == CL_SUCCESS)
        enqueue(q, NULL, false, false, NULL, num_events_in_wait_list, event_wait_list, event);
    return err;
}

/* --- events ----------------------------------------------------------------------------------- */

cl_event CL_API_CALL fake_clCreateUserEvent(cl_context context, cl_int *errcode_ret)
{
    fake_enter("clCreateUserEvent");
    cl_int err = CL_SUCCESS;
    struct fake_obj *c = use(&err, context, VOCL_T_CONTEXT, false);
    struct fake_obj *e = NULL;
    if (err == CL_SUCCESS) {
        e = obj_new(VOCL_T_EVENT, c, NULL);
        e->user = true;
        e->status = CL_SUBMITTED;
    }
    if (errcode_ret)
        *errcode_ret = err;
    return handle(e);
}

cl_int CL_API_CALL fake_clSetUserEventStatus(cl_event event, cl_int execution_status)
{
    fake_enter("clSetUserEventStatus");
    cl_int err = CL_SUCCESS;
    struct fake_obj *e = use(&err, event, VOCL_T_EVENT, false);
    FAIL_IF(!e->user, CL_INVALID_EVENT);
    FAIL_IF(execution_status != CL_COMPLETE && execution_status >= 0, CL_INVALID_VALUE);
    FAIL_IF(e->status <= CL_COMPLETE, CL_INVALID_OPERATION);
    if (err == CL_SUCCESS) {
        e->status = execution_status;
        ungate();
    }
    return err;
}

cl_int CL_API_CALL fake_clWaitForEvents(cl_uint num_events, const cl_event *event_list)
{
    fake_enter("clWaitForEvents");
    cl_int err = CL_SUCCESS;
    FAIL_IF(num_events == 0 || !event_list, CL_INVALID_VALUE);
    err = fake_use_list(err, event_list, num_events, VOCL_T_EVENT);
    for (cl_uint i = 1; err == CL_SUCCESS && i < num_events; i++)
        FAIL_IF(lookup(event_list[i])->ctx != lookup(event_list[0])->ctx, CL_INVALID_CONTEXT);
    if (err != CL_SUCCESS)
        return err;
    /* Never blocks: an unset user event is taken as set meanwhile. */
    uint64_t last = 0;
    for (cl_uint i = 0; i < num_events; i++) {
        struct fake_obj *e = lookup(event_list[i]);
        last = e->seq > last ? e->seq : last;
        if (e->status < 0)
            err = CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
    }
    complete(last);
    return err;
}

/* A callback is a wait too: the command runs now, and the callback with it
 * (the executor must cope with a callback inside the call that sets it). */
cl_int CL_API_CALL fake_clSetEventCallback(cl_event event, cl_int type,
                                           void(CL_CALLBACK *fn)(cl_event, cl_int, void *),
                                           void *user_data)
{
    fake_enter("clSetEventCallback");
    cl_int err = CL_SUCCESS;
    FAIL_IF(!fn || (type != CL_COMPLETE && type != CL_RUNNING && type != CL_SUBMITTED),
            CL_INVALID_VALUE);
    err = fake_use_list(err, &event, 1, VOCL_T_EVENT);
    if (err != CL_SUCCESS)
        return err;
    struct fake_obj *e = lookup(event);
    complete(e->seq);
    fn(event, e->status < 0 ? e->status : type, user_data);
    return CL_SUCCESS;
}

cl_int CL_API_CALL fake_clGetEventInfo(cl_event event, cl_event_info param, size_t size,
                                       void *value, size_t *size_ret)
{
    fake_enter("clGetEventInfo");
    cl_int err = CL_SUCCESS;
    struct fake_obj *e = use(&err, event, VOCL_T_EVENT, false);
    cl_uint refs = e ? e->refs : 0;
    cl_command_type type = e && e->user ? CL_COMMAND_USER : CL_COMMAND_MARKER;
    cl_int status = e ? e->status : 0;
    switch (param) {
    case CL_EVENT_COMMAND_EXECUTION_STATUS:
        /* Asked: the command is done (as late as the caller allows). */
        if (err == CL_SUCCESS && e->seq)
            complete(e->seq);
        return INFO(status);
    case CL_EVENT_REFERENCE_COUNT: return INFO(refs);
    case CL_EVENT_COMMAND_TYPE: return INFO(type);
    case CL_EVENT_CONTEXT: return INFO_H(e ? e->ctx : NULL);
    case CL_EVENT_COMMAND_QUEUE:
        return INFO_H(e && e->parent->type == VOCL_T_QUEUE ? e->parent : NULL);
    default: return INFO_ZERO;
    }
}

/* --- transfers -------------------------------------------------------------------------------- */

/* The checks every command on a memory object makes; m's type must be mtype. */
static cl_int use_command(cl_int err, struct fake_obj *q, struct fake_obj *m, bool image,
                          cl_uint nwl, const cl_event *wl)
{
    FAIL_IF(image ? !is_image(m->mtype) : m->mtype != CL_MEM_OBJECT_BUFFER,
            CL_INVALID_MEM_OBJECT);
    FAIL_IF(q->ctx != m->ctx, CL_INVALID_CONTEXT);
    return fake_use_list(err, wl, nwl, VOCL_T_EVENT);
}

static cl_int buffer_rw(cl_command_queue queue, cl_mem buffer, cl_bool blocking, size_t offset,
                        size_t size, void *ptr, cl_uint nwl, const cl_event *wl, cl_event *event,
                        bool read)
{
    cl_int err = CL_SUCCESS;
    struct fake_obj *q = use(&err, queue, VOCL_T_QUEUE, false);
    struct fake_obj *b = use(&err, buffer, VOCL_T_MEM, false);
    err = use_command(err, q, b, false, nwl, wl);
    FAIL_IF(!ptr || size == 0 || offset > b->size || size > b->size - offset, CL_INVALID_VALUE);
    if (err == CL_SUCCESS) {
        struct span s = {ptr, size, 0, 1, 0, 1};
        enqueue(q, &s, read, blocking, NULL, nwl, wl, event);
    }
    return err;
}

cl_int CL_API_CALL fake_clEnqueueReadBuffer(cl_command_queue command_queue, cl_mem buffer,
                                            cl_bool blocking_read, size_t offset, size_t size,
                                            void *ptr, cl_uint num_events_in_wait_list,
                                            const cl_event *event_wait_list, cl_event *event)
{
    fake_enter("clEnqueueReadBuffer");
    return buffer_rw(command_queue, buffer, blocking_read, offset, size, ptr,
                     num_events_in_wait_list, event_wait_list, event, true);
}

cl_int CL_API_CALL fake_clEnqueueWriteBuffer(cl_command_queue command_queue, cl_mem buffer,
                                             cl_bool blocking_write, size_t offset, size_t size,
                                             const void *ptr, cl_uint num_events_in_wait_list,
                                             const cl_event *event_wait_list, cl_event *event)
{
    fake_enter("clEnqueueWriteBuffer");
    return buffer_rw(command_queue, buffer, blocking_write, offset, size, (void *)ptr,
                     num_events_in_wait_list, event_wait_list, event, false);
}

/*
 * The rows of a rectangle (OpenCL's pitch rules: 0 means tightly packed)
 * at origin in memory of size bytes; false when it does not fit.  elem is
 * 1 for buffers; for images origin[0] and region[0] count pixels.
 */
static bool rect_span(struct span *s, uint8_t *base, size_t size, const size_t *origin,
                      const size_t *region, size_t row, size_t slice, size_t elem)
{
    size_t len = mul(region[0], elem);
    if (!region[0] || !region[1] || !region[2] || len == SIZE_MAX)
        return false;
    row = row ? row : len;
    slice = slice ? slice : mul(row, region[1]);
    if (row < len || slice < mul(row, region[1]))
        return false;
    size_t off = 0, r;
    if (__builtin_add_overflow(mul(origin[2], slice), mul(origin[1], row), &off) ||
        __builtin_add_overflow(off, mul(origin[0], elem), &off))
        return false;
    *s = (struct span){base, len, row, region[1], slice, region[2]};
    r = span_end(s);
    if (r == SIZE_MAX || __builtin_add_overflow(r, off, &r) || r > size)
        return false;
    s->p = base ? base + off : NULL;
    return true;
}

static cl_int buffer_rect(cl_command_queue queue, cl_mem buffer, cl_bool blocking,
                          const size_t *buffer_origin, const size_t *host_origin,
                          const size_t *region, size_t buffer_row_pitch,
                          size_t buffer_slice_pitch, size_t host_row_pitch,
                          size_t host_slice_pitch, void *ptr, cl_uint nwl, const cl_event *wl,
                          cl_event *event, bool read)
{
    cl_int err = CL_SUCCESS;
    struct fake_obj *q = use(&err, queue, VOCL_T_QUEUE, false);
    struct fake_obj *b = use(&err, buffer, VOCL_T_MEM, false);
    err = use_command(err, q, b, false, nwl, wl);
    FAIL_IF(!ptr || !buffer_origin || !host_origin || !region, CL_INVALID_VALUE);
    struct span dev, host;
    FAIL_IF(!rect_span(&dev, NULL, b->size, buffer_origin, region, buffer_row_pitch,
                       buffer_slice_pitch, 1),
            CL_INVALID_VALUE);
    /* The host side has no size to check against: the driver believes the
     * arguments, and reads or writes just what they say. */
    FAIL_IF(!rect_span(&host, ptr, SIZE_MAX, host_origin, region, host_row_pitch,
                       host_slice_pitch, 1),
            CL_INVALID_VALUE);
    if (err == CL_SUCCESS)
        enqueue(q, &host, read, blocking, NULL, nwl, wl, event);
    return err;
}

cl_int CL_API_CALL fake_clEnqueueReadBufferRect(
    cl_command_queue command_queue, cl_mem buffer, cl_bool blocking_read,
    const size_t *buffer_origin, const size_t *host_origin, const size_t *region,
    size_t buffer_row_pitch, size_t buffer_slice_pitch, size_t host_row_pitch,
    size_t host_slice_pitch, void *ptr, cl_uint num_events_in_wait_list,
    const cl_event *event_wait_list, cl_event *event)
{
    fake_enter("clEnqueueReadBufferRect");
    return buffer_rect(command_queue, buffer, blocking_read, buffer_origin, host_origin, region,
                       buffer_row_pitch, buffer_slice_pitch, host_row_pitch, host_slice_pitch, ptr,
                       num_events_in_wait_list, event_wait_list, event, true);
}

cl_int CL_API_CALL fake_clEnqueueWriteBufferRect(
    cl_command_queue command_queue, cl_mem buffer, cl_bool blocking_write,
    const size_t *buffer_origin, const size_t *host_origin, const size_t *region,
    size_t buffer_row_pitch, size_t buffer_slice_pitch, size_t host_row_pitch,
    size_t host_slice_pitch, const void *ptr, cl_uint num_events_in_wait_list,
    const cl_event *event_wait_list, cl_event *event)
{
    fake_enter("clEnqueueWriteBufferRect");
    return buffer_rect(command_queue, buffer, blocking_write, buffer_origin, host_origin, region,
                       buffer_row_pitch, buffer_slice_pitch, host_row_pitch, host_slice_pitch,
                       (void *)ptr, num_events_in_wait_list, event_wait_list, event, false);
}

static cl_int image_rw(cl_command_queue queue, cl_mem image, cl_bool blocking,
                       const size_t *origin, const size_t *region, size_t row_pitch,
                       size_t slice_pitch, void *ptr, cl_uint nwl, const cl_event *wl,
                       cl_event *event, bool read)
{
    cl_int err = CL_SUCCESS;
    struct fake_obj *q = use(&err, queue, VOCL_T_QUEUE, false);
    struct fake_obj *m = use(&err, image, VOCL_T_MEM, false);
    err = use_command(err, q, m, true, nwl, wl);
    FAIL_IF(!ptr || !origin || !region, CL_INVALID_VALUE);
    if (err != CL_SUCCESS)
        return err;
    /* The image's extent, and the region within it. */
    const cl_image_desc *d = &m->desc;
    size_t ext[3] = {d->image_width, image_rows(d), 1};
    if (d->image_type == CL_MEM_OBJECT_IMAGE1D_ARRAY)
        ext[1] = d->image_array_size;
    else if (d->image_type != CL_MEM_OBJECT_IMAGE2D)
        ext[2] = image_planes(d);
    for (int i = 0; i < 3; i++)
        FAIL_IF(!region[i] || origin[i] > ext[i] || region[i] > ext[i] - origin[i],
                CL_INVALID_VALUE);
    /* Host rows: a 1D array's images are its rows (slice_pitch apart). */
    size_t len = region[0] * m->elem;
    size_t row = row_pitch ? row_pitch : len;
    size_t slice = slice_pitch ? slice_pitch : mul(row, region[1]);
    struct span host = {ptr, len, row, region[1], slice, region[2]};
    if (d->image_type == CL_MEM_OBJECT_IMAGE1D_ARRAY) {
        slice = slice_pitch ? slice_pitch : row;
        host = (struct span){ptr, len, slice, region[1], 0, 1};
    }
    FAIL_IF(row < len || (region[2] > 1 && slice < mul(row, region[1])), CL_INVALID_VALUE);
    FAIL_IF(span_end(&host) == SIZE_MAX, CL_INVALID_VALUE);
    if (err == CL_SUCCESS)
        enqueue(q, &host, read, blocking, NULL, nwl, wl, event);
    return err;
}

cl_int CL_API_CALL fake_clEnqueueReadImage(cl_command_queue command_queue, cl_mem image,
                                           cl_bool blocking_read, const size_t *origin,
                                           const size_t *region, size_t row_pitch,
                                           size_t slice_pitch, void *ptr,
                                           cl_uint num_events_in_wait_list,
                                           const cl_event *event_wait_list, cl_event *event)
{
    fake_enter("clEnqueueReadImage");
    return image_rw(command_queue, image, blocking_read, origin, region, row_pitch, slice_pitch,
                    ptr, num_events_in_wait_list, event_wait_list, event, true);
}

cl_int CL_API_CALL fake_clEnqueueWriteImage(cl_command_queue command_queue, cl_mem image,
                                            cl_bool blocking_write, const size_t *origin,
                                            const size_t *region, size_t input_row_pitch,
                                            size_t input_slice_pitch, const void *ptr,
                                            cl_uint num_events_in_wait_list,
                                            const cl_event *event_wait_list, cl_event *event)
{
    fake_enter("clEnqueueWriteImage");
    return image_rw(command_queue, image, blocking_write, origin, region, input_row_pitch,
                    input_slice_pitch, (void *)ptr, num_events_in_wait_list, event_wait_list,
                    event, false);
}

/* Maps are memory of the fake's own, valid until the unmap runs. */
void *CL_API_CALL fake_clEnqueueMapBuffer(cl_command_queue command_queue, cl_mem buffer,
                                          cl_bool blocking_map, cl_map_flags map_flags,
                                          size_t offset, size_t size,
                                          cl_uint num_events_in_wait_list,
                                          const cl_event *event_wait_list, cl_event *event,
                                          cl_int *errcode_ret)
{
    fake_enter("clEnqueueMapBuffer");
    cl_int err = CL_SUCCESS;
    struct fake_obj *q = use(&err, command_queue, VOCL_T_QUEUE, false);
    struct fake_obj *b = use(&err, buffer, VOCL_T_MEM, false);
    err = use_command(err, q, b, false, num_events_in_wait_list, event_wait_list);
    FAIL_IF(size == 0 || offset > b->size || size > b->size - offset, CL_INVALID_VALUE);
    FAIL_IF(map_flags & ~(cl_map_flags)(CL_MAP_READ | CL_MAP_WRITE |
                                        CL_MAP_WRITE_INVALIDATE_REGION),
            CL_INVALID_VALUE);
    FAIL_IF((map_flags & CL_MAP_WRITE_INVALIDATE_REGION) &&
                (map_flags & (CL_MAP_READ | CL_MAP_WRITE)),
            CL_INVALID_VALUE);
    FAIL_IF(b->flags & CL_MEM_HOST_NO_ACCESS, CL_INVALID_OPERATION);
    struct mapping *m = NULL;
    if (err == CL_SUCCESS) {
        m = calloc(1, sizeof(*m));
        if (!m || !(m->p = calloc(1, size)))
            die("out of memory");
        m->next = b->maps;
        b->maps = m;
        struct span s = {m->p, size, 0, 1, 0, 1};
        enqueue(q, &s, true, blocking_map, NULL, num_events_in_wait_list, event_wait_list, event);
    }
    if (errcode_ret)
        *errcode_ret = err;
    return m ? m->p : NULL;
}

cl_int CL_API_CALL fake_clEnqueueUnmapMemObject(cl_command_queue command_queue, cl_mem memobj,
                                                void *mapped_ptr,
                                                cl_uint num_events_in_wait_list,
                                                const cl_event *event_wait_list,
                                                cl_event *event)
{
    fake_enter("clEnqueueUnmapMemObject");
    cl_int err = CL_SUCCESS;
    struct fake_obj *q = use(&err, command_queue, VOCL_T_QUEUE, false);
    struct fake_obj *m = use(&err, memobj, VOCL_T_MEM, false);
    FAIL_IF(q->ctx != m->ctx, CL_INVALID_CONTEXT);
    err = fake_use_list(err, event_wait_list, num_events_in_wait_list, VOCL_T_EVENT);
    struct mapping *p = m ? m->maps : NULL;
    while (p && p->p != mapped_ptr)
        p = p->next;
    FAIL_IF(!p, CL_INVALID_VALUE);
    if (err == CL_SUCCESS) {
        struct span s = {mapped_ptr, 0, 0, 0, 0, 0};
        enqueue(q, &s, false, false, m, num_events_in_wait_list, event_wait_list, event);
    }
    return err;
}
