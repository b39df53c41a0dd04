/*
 * launch.c - kernel launches: the arguments a replica has not had yet
 * travel with each clEnqueueNDRangeKernel (kargs.h, filled by kernel.c),
 * and the first launch of each shape waits for the driver's answer.
 */
#include "vocl.h"

#include <stdlib.h>
#include <string.h>

#include "kargs.h"

/* The arguments that replica bit of the kernel has not had yet, in out[]
 * (ka->n of them at most; each mask read once: another launch may be
 * setting bits meanwhile). */
static struct vocl_launch_args args_to_send(struct vocl_call *c, struct vocl_kargs *ka,
                                            uint64_t bit, struct vocl_karg_wire *out)
{
    uint32_t n = 0;
    for (cl_uint i = 0; i < ka->n; i++) {
        struct vocl_karg *a = &ka->a[i];
        if (atomic_load_explicit(&a->sent, memory_order_relaxed) & bit)
            continue;
        struct vocl_karg_wire *w = &out[n++];
        *w = (struct vocl_karg_wire){.index = i, .kind = a->kind};
        switch (a->kind) {
        case VOCL_LARG_BYTES:
            w->p = a->big ? a->big : a->small;
            w->len = a->size;
            break;
        case VOCL_LARG_MEM:
        case VOCL_LARG_SAMPLER: w->v = vocl_id_on(a->obj, c->px); break;
        default: w->v = a->size; break;
        }
    }
    return (struct vocl_launch_args){.n = n, .a = out};
}

/* The objects the arguments name, held for one launch in held[] (n of
 * them): false, with none held, when one was released since it was set. */
static bool hold_args(const struct vocl_kargs *ka, struct vocl_obj **held, cl_uint *n)
{
    *n = 0;
    for (cl_uint i = 0; i < ka->n; i++) {
        const struct vocl_karg *a = &ka->a[i];
        if ((a->kind != VOCL_LARG_MEM && a->kind != VOCL_LARG_SAMPLER) || !a->obj)
            continue;
        struct vocl_obj *o =
            vocl_lookup(a->obj, a->kind == VOCL_LARG_MEM ? VOCL_T_MEM : VOCL_T_SAMPLER);
        if (o != a->obj || o->serial != a->serial) {
            while (*n)
                vocl_obj_drop(held[--*n]);
            return false;
        }
        vocl_obj_hold(o);
        held[(*n)++] = o;
    }
    return true;
}

/* The shape of a launch (struct vocl_shape), its ok mask empty. */
static struct vocl_shape launch_shape(cl_uint dim, const size_t *global, const size_t *local)
{
    struct vocl_shape sh = {.dim = dim, .uniform = true};
    for (cl_uint i = 0; local && i < dim && i < 3; i++) {
        sh.local[i] = local[i];
        if (local[i] && global && global[i] % local[i])
            sh.uniform = false;
    }
    return sh;
}

static bool same_shape(const struct vocl_shape *a, const struct vocl_shape *b)
{
    return a->dim == b->dim && a->uniform == b->uniform &&
           !memcmp(a->local, b->local, sizeof(a->local));
}

/* Whether replica bit of the kernel accepted shape sh (add: now it has). */
static bool shape_known(struct vocl_kargs *ka, const struct vocl_shape *sh, uint64_t bit,
                        bool add)
{
    bool known = false;
    pthread_mutex_lock(&ka->shape_lock);
    unsigned i = 0;
    while (i < ka->nshape && !same_shape(&ka->shape[i], sh))
        i++;
    if (i < ka->nshape)
        known = ka->shape[i].ok & bit;
    if (add && !known) {
        if (i == ka->nshape) { /* a new one, or the oldest goes */
            i = ka->nshape < SHAPES ? ka->nshape++ : ka->next_shape++ % SHAPES;
            ka->shape[i] = *sh;
        }
        ka->shape[i].ok |= bit;
    }
    pthread_mutex_unlock(&ka->shape_lock);
    return known;
}

/* The bit of the kernel's replica on px in its arguments' sent masks. */
static uint64_t rep_bit(const struct vocl_obj *k, const struct vocl_proxy *px)
{
    return (uint64_t)1 << (vocl_rep_index(k, px) & 63);
}

void vocl_kargs_forget(struct vocl_obj *k, const struct vocl_proxy *px)
{
    struct vocl_kargs *ka = vocl_as_kernel(k)->kargs;
    uint64_t bit = rep_bit(k, px);
    for (cl_uint i = 0; ka && i < ka->n; i++)
        atomic_fetch_and_explicit(&ka->a[i].sent, ~bit, memory_order_relaxed);
}

cl_int CL_API_CALL vocl_hand_clEnqueueNDRangeKernel(
    cl_command_queue command_queue, cl_kernel kernel, cl_uint work_dim,
    const size_t *global_work_offset, const size_t *global_work_size,
    const size_t *local_work_size, cl_uint num_events_in_wait_list,
    const cl_event *event_wait_list, cl_event *event)
{
    struct vocl_call c;
    vocl_call_init(&c);
    struct vocl_obj *q = vocl_call_h(&c, command_queue, VOCL_T_QUEUE, 0);
    struct vocl_obj *k = vocl_call_h(&c, kernel, VOCL_T_KERNEL, 0);
    struct vocl_kargs *kargs = k ? vocl_as_kernel(k)->kargs : NULL;
    vocl_call_wl(&c, num_events_in_wait_list, event_wait_list);
    if (!c.err && (work_dim < 1 || work_dim > 3))
        vocl_call_error(&c, CL_INVALID_WORK_DIMENSION);
    if (!c.err && k->context != q->context)
        vocl_call_error(&c, CL_INVALID_CONTEXT);
    for (cl_uint i = 0; !c.err && i < kargs->n; i++)
        if (!kargs->a[i].set)
            vocl_call_error(&c, CL_INVALID_KERNEL_ARGS);
    /* Its objects stay until the launch is sent (an argument whose object
     * the application released is no longer set). */
    struct vocl_obj *held_small[16], **held = held_small;
    cl_uint nheld = 0;
    if (!c.err && kargs->n > 16 && !(held = malloc(kargs->n * sizeof(*held))))
        vocl_call_error(&c, CL_OUT_OF_HOST_MEMORY);
    if (!c.err && !hold_args(kargs, held, &nheld))
        vocl_call_error(&c, CL_INVALID_KERNEL_ARGS);
    /* Buffers and images of a context spanning proxies: their data here. */
    for (cl_uint i = 0; !c.err && i < kargs->n; i++) {
        const struct vocl_karg *a = &kargs->a[i];
        if (a->kind == VOCL_LARG_MEM && a->obj) {
            bool ro = a->ro || (vocl_as_mem(a->obj)->mem_flags & CL_MEM_READ_ONLY);
            vocl_mem_use(&c, a->obj, ro ? VOCL_USE_R : VOCL_USE_RW);
        }
    }
    /* A launch does not wait, but for the first of its shape: the driver
     * then says whether its work-group size is valid.  Its other errors
     * (resources) are deferred. */
    struct vocl_shape shape = launch_shape(work_dim, global_work_size, local_work_size);
    uint64_t bit = c.err ? 0 : rep_bit(k, c.px);
    bool probe = !c.err && !shape_known(kargs, &shape, bit, false);
    c.async = !probe;
    if (vocl_call_start(&c, VOCL_OP_clEnqueueNDRangeKernel) == 0) {
        struct vocl_karg_wire args_small[16], *args = args_small;
        if (kargs->n > 16 && !(args = malloc(kargs->n * sizeof(*args))))
            vocl_call_error(&c, CL_OUT_OF_HOST_MEMORY);
        uint64_t ev_id = event ? vocl_call_new_id(&c) : 0;
        if (args)
            vocl_enc_clEnqueueNDRangeKernel_req(
                c.w, &(struct vocl_msg_clEnqueueNDRangeKernel_req){
                         .queue = q->id,
                         .kernel = vocl_id_on(k, c.px),
                         .work_dim = work_dim,
                         .global_work_offset = vocl_va_of(global_work_offset, work_dim),
                         .global_work_size = vocl_va_of(global_work_size, work_dim),
                         .local_work_size = vocl_va_of(local_work_size, work_dim),
                         .args = args_to_send(&c, kargs, bit, args),
                         .wait_list = vocl_call_wl_ids(&c, num_events_in_wait_list,
                                                       event_wait_list),
                         .event = ev_id});
        if (args != args_small)
            free(args);
        if (vocl_call_post(&c) == 0) {
            /* The proxy has applied the arguments, whatever the launch does. */
            for (cl_uint i = 0; i < kargs->n; i++)
                atomic_fetch_or_explicit(&kargs->a[i].sent, bit, memory_order_relaxed);
            if (vocl_call_wait(&c) == 0) {
                if (probe)
                    shape_known(kargs, &shape, bit, true);
                if (event)
                    *event = (cl_event)vocl_call_new_event(&c, ev_id, q);
            }
        }
    }
    vocl_call_end(&c);
    while (nheld)
        vocl_obj_drop(held[--nheld]);
    if (held != held_small)
        free(held);
    return c.err;
}

cl_int CL_API_CALL vocl_hand_clEnqueueTask(cl_command_queue command_queue, cl_kernel kernel,
                                              cl_uint num_events_in_wait_list,
                                              const cl_event *event_wait_list, cl_event *event)
{
    static const size_t one = 1;
    return clEnqueueNDRangeKernel(command_queue, kernel, 1, NULL, &one, &one,
                                  num_events_in_wait_list, event_wait_list, event);
}

cl_int CL_API_CALL vocl_hand_clEnqueueNativeKernel(
    cl_command_queue command_queue, void (CL_CALLBACK *user_func)(void *), void *args,
    size_t cb_args, cl_uint num_mem_objects, const cl_mem *mem_list, const void **args_mem_loc,
    cl_uint num_events_in_wait_list, const cl_event *event_wait_list, cl_event *event)
{
    (void)user_func, (void)args, (void)cb_args, (void)num_mem_objects, (void)mem_list;
    (void)args_mem_loc, (void)num_events_in_wait_list, (void)event_wait_list, (void)event;
    if (!vocl_lookup(command_queue, VOCL_T_QUEUE))
        return CL_INVALID_COMMAND_QUEUE;
    /* A host function pointer means nothing in another process. */
    vocl_warn_once_unsupported("clEnqueueNativeKernel");
    return CL_INVALID_OPERATION;
}
