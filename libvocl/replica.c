/*
 * replica.c - contexts whose devices live in several proxies.
 *
 * Such a context is one native context in each of its proxies, and every
 * object made in it (memory objects, samplers, programs, kernels, user
 * events) is one native object in each: its replicas, kept in the order of
 * the context's proxies.  Queues and the events of commands live in the
 * proxy of their device.  A call on a queue goes to the queue's proxy with
 * the ids the other objects have there; a create, a build or a user event's
 * status goes to every proxy (vocl_call_each).
 *
 * Memory made in such a context is kept coherent between its replicas
 * (coherence.c), and a command whose wait list holds events of other
 * proxies waits for mirrors of them on its own (mirror.c).
 */
#include "vocl.h"

#include <stdlib.h>

cl_uint vocl_nreps(const struct vocl_obj *o)
{
    return o && o->reps ? o->nreps : 1;
}

struct vocl_proxy *vocl_rep_px(const struct vocl_obj *o, cl_uint i)
{
    return o->reps ? o->reps[i].px : o->px;
}

static struct vocl_rep *rep_on(const struct vocl_obj *o, const struct vocl_proxy *px)
{
    for (cl_uint i = 0; o->reps && i < o->nreps; i++)
        if (o->reps[i].px == px)
            return o->reps[i].id ? &o->reps[i] : NULL;
    return NULL;
}

bool vocl_on(const struct vocl_obj *o, const struct vocl_proxy *px)
{
    return o->reps ? rep_on(o, px) != NULL : o->px == px;
}

uint64_t vocl_id_on(const struct vocl_obj *o, const struct vocl_proxy *px)
{
    if (!o)
        return 0;
    if (!o->reps)
        return o->id;
    struct vocl_rep *r = rep_on(o, px);
    return r ? r->id : 0;
}

bool vocl_call_each(struct vocl_call *c, const struct vocl_obj *o, cl_uint i)
{
    if (c->err || !o || i >= vocl_nreps(o))
        return false;
    if (i > 0)
        vocl_call_end(c);
    c->px = vocl_rep_px(o, i);
    return true;
}

struct vocl_obj *vocl_call_made(struct vocl_call *c, struct vocl_obj **made, cl_uint i, cl_uint n,
                                enum vocl_type t, uint64_t id, struct vocl_obj *context,
                                struct vocl_obj *parent)
{
    if (c->err)
        return NULL;
    if (!*made && !(*made = vocl_call_new_obj(c, t, id, context, parent)))
        return NULL;
    if (n > 1 && vocl_obj_add_rep(*made, i, n, c->px, id)) {
        vocl_call_error(c, CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    return *made;
}

int vocl_obj_add_rep(struct vocl_obj *o, cl_uint i, cl_uint n, struct vocl_proxy *px, uint64_t id)
{
    if (!o->reps) {
        if (!(o->reps = calloc(n, sizeof(*o->reps))))
            return -1;
        o->nreps = n;
        struct vocl_mem *m = vocl_as_mem(o);
        if (m)
            m->valid = ~(uint64_t)0; /* nothing written yet: any copy will do */
        /* Replicas are numbered as the context's: one not made (a kernel
         * where its program was not built) still names its proxy, id 0. */
        const struct vocl_obj *ctx = o->context;
        for (cl_uint k = 0; ctx && ctx->reps && k < n && k < ctx->nreps; k++)
            o->reps[k].px = ctx->reps[k].px;
    }
    o->reps[i] = (struct vocl_rep){.px = px, .id = id};
    return 0;
}

bool vocl_names(const struct vocl_obj *o, const struct vocl_proxy *px)
{
    for (cl_uint i = 0; o->reps && i < o->nreps; i++)
        if (o->reps[i].px == px)
            return true;
    return !o->reps && o->px == px;
}

void vocl_rep_move(struct vocl_obj *o, struct vocl_proxy *from, struct vocl_proxy *to,
                   uint64_t id)
{
    cl_uint i = vocl_rep_index(o, from);
    if (!o->reps || i == o->nreps) {
        o->px = to;
        o->id = id;
        return;
    }
    struct vocl_rep *r = &o->reps[i];
    vocl_rep_clear(r);
    *r = (struct vocl_rep){.px = to, .id = id};
    if (i == 0) {
        o->px = to;
        o->id = id;
    }
}

void vocl_reps_free(struct vocl_obj *o)
{
    for (cl_uint i = 0; o->reps && i < o->nreps; i++)
        vocl_rep_clear(&o->reps[i]);
    free(o->reps);
    o->reps = NULL;
}

cl_uint vocl_rep_index(const struct vocl_obj *o, const struct vocl_proxy *px)
{
    cl_uint i = 0;
    while (o->reps && i < o->nreps && o->reps[i].px != px)
        i++;
    return i;
}
