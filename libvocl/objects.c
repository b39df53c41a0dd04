/*
 * objects.c - VOCL handles: creation, the table of live handles, and
 * reference counting.
 *
 * A handle stays valid while the application holds a reference to it
 * (app_refs); the struct itself lives on while dependent objects hold it
 * (refs), so a queue can still answer CL_QUEUE_CONTEXT with the handle the
 * application created, as natively.
 */
#include "vocl.h"

#include <stdlib.h>
#include <sys/mman.h>

#include "kernelparse.h"

static pthread_rwlock_t handles_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct vocl_map handles; /* address -> object, live handles only */

/* The size of an object of type t: its type's struct (vocl.h). */
static size_t obj_size(enum vocl_type t)
{
    switch (t) {
    case VOCL_T_DEVICE: return sizeof(struct vocl_device);
    case VOCL_T_CONTEXT: return sizeof(struct vocl_context);
    case VOCL_T_QUEUE: return sizeof(struct vocl_queue);
    case VOCL_T_MEM: return sizeof(struct vocl_mem);
    case VOCL_T_PROGRAM: return sizeof(struct vocl_program);
    case VOCL_T_KERNEL: return sizeof(struct vocl_kernel);
    case VOCL_T_EVENT: return sizeof(struct vocl_event);
    default: return sizeof(struct vocl_obj); /* platform, sampler */
    }
}

struct vocl_obj *vocl_obj_new(enum vocl_type t, struct vocl_proxy *px, uint64_t id,
                              struct vocl_obj *context, struct vocl_obj *parent)
{
    /* Every type's struct begins with its struct vocl_obj: the handle is
     * the address of both. */
    struct vocl_obj *o = calloc(1, obj_size(t));
    if (!o)
        return NULL;
    o->dispatch = &vocl_dispatch;
    o->magic = VOCL_OBJ_MAGIC;
    o->type = t;
    atomic_init(&o->refs, 1);
    atomic_init(&o->app_refs, 1);
    static atomic_uint_fast64_t serials;
    o->px = px;
    o->id = id;
    o->serial = atomic_fetch_add(&serials, 1) + 1;
    if (context) {
        vocl_obj_hold(context);
        o->context = context;
    }
    if (parent) {
        vocl_obj_hold(parent);
        o->parent = parent;
    }
    pthread_rwlock_wrlock(&handles_lock);
    int rc = vocl_map_put(&handles, (uint64_t)(uintptr_t)o, o);
    pthread_rwlock_unlock(&handles_lock);
    if (rc) {
        vocl_obj_drop(o);
        return NULL;
    }
    return o;
}

struct vocl_obj *vocl_lookup(const void *h, enum vocl_type t)
{
    if (!h)
        return NULL;
    pthread_rwlock_rdlock(&handles_lock);
    struct vocl_obj *o = vocl_map_get(&handles, (uint64_t)(uintptr_t)h);
    pthread_rwlock_unlock(&handles_lock);
    return o && o->type == t ? o : NULL;
}

struct vocl_obj *vocl_find_on(const struct vocl_proxy *px, uint64_t id, enum vocl_type t)
{
    struct vocl_obj *found = NULL;
    size_t pos = 0;
    uint64_t key;
    void *v;
    pthread_rwlock_rdlock(&handles_lock);
    while (!found && vocl_map_next(&handles, &pos, &key, &v)) {
        struct vocl_obj *o = v;
        if (o->type == t && id && (o->reps ? vocl_id_on(o, px) == id : o->px == px && o->id == id))
            found = o;
    }
    if (found)
        vocl_obj_hold(found);
    pthread_rwlock_unlock(&handles_lock);
    return found;
}

void vocl_obj_hold(struct vocl_obj *o)
{
    atomic_fetch_add(&o->refs, 1);
}

static void obj_free(struct vocl_obj *o)
{
    /* Destructor callbacks run in the reverse order of registration: the
     * list is kept newest first. */
    for (struct vocl_dtor *d = o->dtors, *next; d; d = next) {
        next = d->next;
        d->fn(o, d->user_data);
        free(d);
    }
    if (o->context)
        vocl_obj_drop(o->context);
    if (o->parent)
        vocl_obj_drop(o->parent);
    struct vocl_context *ctx = vocl_as_context(o);
    struct vocl_program *p = vocl_as_program(o);
    struct vocl_kernel *k = vocl_as_kernel(o);
    struct vocl_mem *m = vocl_as_mem(o);
    if (ctx) {
        if (ctx->ctx_notify)
            vocl_notes_watch(o, -1);
        free(ctx->devs);
        free(ctx->props);
    }
    if (p) {
        free(p->devs);
        kp_free(p->kp);
        for (cl_uint i = 0; i < p->ninputs; i++)
            vocl_obj_drop(p->inputs[i]);
        free(p->inputs);
        free(p->source);
        free(p->options);
    }
    if (k)
        vocl_kargs_free(k->kargs);
    if (m)
        vocl_mappings_free(m);
    vocl_reps_free(o);
    vocl_info_forget(o);
    if (m && m->shm)
        munmap(m->shm, m->mem_size);
    o->magic = 0;
    free(o);
}

void vocl_obj_drop(struct vocl_obj *o)
{
    if (atomic_fetch_sub(&o->refs, 1) == 1)
        obj_free(o);
}

struct vocl_obj *vocl_ctx_of(struct vocl_obj *o)
{
    if (!o)
        return NULL;
    if (o->type == VOCL_T_CONTEXT)
        return o;
    return o->context;
}

static bool is_root_device(const struct vocl_obj *o)
{
    return o->type == VOCL_T_DEVICE && !o->parent;
}

/*
 * A release tells the proxy whether it is the client's last one, and the
 * proxy then forgets the id.  So the count's change and the messages must
 * happen in one order: otherwise two threads releasing one object can send
 * "last" ahead of the other's release, which then names an id the proxy no
 * longer knows.  Retains and releases send without waiting for a reply, so
 * one lock for all of them costs little.
 */
static pthread_mutex_t refs_lock = PTHREAD_MUTEX_INITIALIZER;

void vocl_refs_lock(void)
{
    pthread_mutex_lock(&refs_lock);
}

void vocl_refs_unlock(void)
{
    pthread_mutex_unlock(&refs_lock);
}

cl_int vocl_retain(const void *h, enum vocl_type t)
{
    struct vocl_obj *o = vocl_lookup(h, t);
    if (!o)
        return vocl_type_invalid_err(t);
    if (is_root_device(o))
        return CL_SUCCESS;
    struct vocl_call c;
    vocl_call_init(&c);
    c.async = true; /* a failure (the object is gone there) is deferred */
    pthread_mutex_lock(&refs_lock);
    for (cl_uint i = 0; vocl_call_each(&c, o, i); i++) {
        if (!vocl_id_on(o, c.px) || vocl_call_start(&c, VOCL_OP_RETAIN))
            continue;
        vocl_enc_RETAIN_req(c.w, &(struct vocl_msg_RETAIN_req){.id = vocl_id_on(o, c.px)});
        vocl_call_send(&c);
    }
    vocl_call_end(&c);
    if (c.err == CL_SUCCESS) {
        atomic_fetch_add(&o->app_refs, 1);
        vocl_obj_hold(o);
    }
    pthread_mutex_unlock(&refs_lock);
    return c.err;
}

cl_int vocl_release(const void *h, enum vocl_type t)
{
    struct vocl_obj *o = vocl_lookup(h, t);
    if (!o)
        return vocl_type_invalid_err(t);
    if (is_root_device(o))
        return CL_SUCCESS;
    pthread_mutex_lock(&refs_lock);
    bool last = atomic_fetch_sub(&o->app_refs, 1) == 1;
    if (last) {
        /* No new call may find it from here on. */
        pthread_rwlock_wrlock(&handles_lock);
        vocl_map_del(&handles, (uint64_t)(uintptr_t)o);
        pthread_rwlock_unlock(&handles_lock);
    }
    /* Every replica, even when one proxy fails. */
    cl_int err = CL_SUCCESS;
    for (cl_uint i = 0; i < vocl_nreps(o); i++) {
        struct vocl_call c;
        vocl_call_init(&c);
        c.async = true;
        c.px = vocl_rep_px(o, i);
        uint64_t id = vocl_id_on(o, c.px);
        if (id && vocl_call_start(&c, VOCL_OP_RELEASE) == 0) {
            vocl_enc_RELEASE_req(c.w, &(struct vocl_msg_RELEASE_req){.id = id, .last = last});
            vocl_call_send(&c);
        }
        vocl_call_end(&c);
        if (err == CL_SUCCESS && !c.px->dead)
            err = c.err;
    }
    pthread_mutex_unlock(&refs_lock);
    /* A dead proxy cannot release: the object is gone with it all the same.
     * (Dropped outside the lock: destructor callbacks may release more.) */
    vocl_obj_drop(o);
    return err;
}

/* --- for a migration (migrate.c) -------------------------------------------------------------- */

static int older(const void *a, const void *b)
{
    uint64_t x = (*(struct vocl_obj *const *)a)->serial, y = (*(struct vocl_obj *const *)b)->serial;
    return (x > y) - (x < y);
}

/* Adds o to the set, and what it holds on px (NULL: anywhere). */
static int gather(struct vocl_map *set, struct vocl_obj *o, const struct vocl_proxy *px)
{
    for (; o && o->type != VOCL_T_PLATFORM && (!px || vocl_names(o, px)) &&
           !vocl_map_get(set, (uint64_t)(uintptr_t)o);
         o = o->parent) {
        if (vocl_map_put(set, (uint64_t)(uintptr_t)o, o))
            return -1;
        if (o->context && gather(set, o->context, px))
            return -1;
    }
    return 0;
}

struct vocl_obj **vocl_objs_on(const struct vocl_proxy *px, size_t *n)
{
    struct vocl_map set;
    size_t pos = 0, k = 0;
    uint64_t key;
    void *v;
    int rc = 0;
    vocl_map_init(&set);
    pthread_rwlock_rdlock(&handles_lock);
    while (rc == 0 && vocl_map_next(&handles, &pos, &key, &v))
        rc = gather(&set, v, px);
    struct vocl_obj **out = rc ? NULL : malloc((set.count + 1) * sizeof(*out));
    for (pos = 0; out && vocl_map_next(&set, &pos, &key, &v);) {
        vocl_obj_hold(v);
        out[k++] = v;
    }
    pthread_rwlock_unlock(&handles_lock);
    vocl_map_free(&set);
    if (out)
        qsort(out, k, sizeof(*out), older);
    *n = k;
    return out;
}

void vocl_obj_forget(struct vocl_obj *o)
{
    pthread_rwlock_wrlock(&handles_lock);
    vocl_map_del(&handles, (uint64_t)(uintptr_t)o);
    pthread_rwlock_unlock(&handles_lock);
    vocl_obj_drop(o);
}
