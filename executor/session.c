/*
 * session.c - the node (the devices this process serves, its staging pool)
 * and the sessions, one per client: each has its own table of objects (so
 * ids of other clients do not exist in it), counted against the limits,
 * and ending it releases everything the client held.
 */
#include "internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* --- node: the devices this process serves ---------------------------------------------- */

int exec_node_open(struct exec_node *node, const struct vocl_native_api *cl,
                   cl_device_type type_filter, const void *skip_dispatch)
{
    cl_uint nplat = 0;
    cl_platform_id plats[16];

    memset(node, 0, sizeof(*node));
    node->cl = cl;
    node->xfer = (struct exec_xfer_cfg){.pool_n = EXEC_POOL_N,
                                        .pool_size = EXEC_POOL_SIZE,
                                        .pipeline = true,
                                        .direct = true,
                                        .driver_staging = true};
    node->poll_ns = EXEC_POLL_NS;
    node->gate_batches = true;
    _Static_assert(sizeof(node->node_name) == VOCL_NODE_NAME_MAX + 1, "a node name and its NUL");
    const char *named = getenv("VOCL_NODE_NAME");
    if (named && !vocl_node_name_ok(named, strlen(named))) {
        vocl_warn("VOCL_NODE_NAME \"%.64s\" is not a node name (1 to %u printable characters, "
                  "no space): the host's name is used",
                  named, VOCL_NODE_NAME_MAX);
        named = NULL;
    }
    if (named)
        snprintf(node->node_name, sizeof(node->node_name), "%s", named);
    else if (gethostname(node->node_name, sizeof(node->node_name) - 1) != 0 ||
             !vocl_node_name_ok(node->node_name, strlen(node->node_name)))
        strcpy(node->node_name, "localhost");
    if (cl->clGetPlatformIDs(16, plats, &nplat) != CL_SUCCESS || nplat == 0)
        return 0; /* no native platform: a node with no devices */
    if (nplat > 16)
        nplat = 16;
    for (cl_uint p = 0; p < nplat; p++) {
        cl_uint n = 0;
        /* Where libvocl is an ICD, the loader lists VOCL's own platform too:
         * never serve it (in libvocl: by its dispatch table; in a proxy: by name). */
        char name[64] = "";
        cl->clGetPlatformInfo(plats[p], CL_PLATFORM_NAME, sizeof(name), name, NULL);
        if ((skip_dispatch && *(const void *const *)plats[p] == skip_dispatch) ||
            !strcmp(name, "VOCL"))
            continue;
        if (cl->clGetDeviceIDs(plats[p], type_filter, 0, NULL, &n) != CL_SUCCESS || n == 0)
            continue;
        cl_device_id *devs = realloc(node->devs, (node->ndev + n) * sizeof(*devs));
        cl_device_type *types = realloc(node->types, (node->ndev + n) * sizeof(*types));
        cl_ulong *max_alloc = realloc(node->max_alloc, (node->ndev + n) * sizeof(*max_alloc));
        if (devs)
            node->devs = devs;
        if (types)
            node->types = types;
        if (max_alloc)
            node->max_alloc = max_alloc;
        if (!devs || !types || !max_alloc)
            return -1;
        if (cl->clGetDeviceIDs(plats[p], type_filter, n, node->devs + node->ndev, NULL))
            continue;
        for (cl_uint i = 0; i < n; i++) {
            cl_uint d = node->ndev + i;
            node->types[d] = 0;
            node->max_alloc[d] = 0;
            cl->clGetDeviceInfo(node->devs[d], CL_DEVICE_TYPE, sizeof(cl_device_type),
                                &node->types[d], NULL);
            cl->clGetDeviceInfo(node->devs[d], CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(cl_ulong),
                                &node->max_alloc[d], NULL);
            node->look_at_events |= !(node->types[d] & CL_DEVICE_TYPE_CPU);
        }
        if (!node->platform)
            node->platform = plats[p];
        node->ndev += n;
    }
    return 0;
}

struct exec_pool *exec_node_pool(struct exec_node *node)
{
    if (!node->pool)
        node->pool = exec_pool_new(node->cl, exec_pool_n(node), node->xfer.pool_size);
    return node->pool;
}

void exec_node_close(struct exec_node *node)
{
    for (unsigned i = 0; i < EXEC_CTX_POOLS; i++)
        exec_ctx_pool_drop(node, node->ctx_pools[i].ctx);
    exec_reap(node, true);
    exec_busy_free(node);
    free(node->kept);
    exec_pool_free(node->pool);
    free(node->devs);
    free(node->types);
    free(node->max_alloc);
    memset(node, 0, sizeof(*node));
}

/* --- sessions ---------------------------------------------------------------------------- */

void exec_session_init(struct exec_session *s, struct exec_node *node, int peer)
{
    memset(s, 0, sizeof(*s));
    s->node = node;
    s->peer = peer;
    s->who = peer;
    s->uid = -1;
    s->serial = exec_notify_serial();
    vocl_map_init(&s->objs);
    exec_account_open(s);
}

/* The device storage a memory object adds: its size, unless it lives in
 * another one's (a sub-buffer, an image from a buffer). */
static uint64_t mem_bytes(const struct vocl_native_api *cl, cl_mem m)
{
    size_t size = 0;
    cl_mem parent = NULL;
    if (cl->clGetMemObjectInfo(m, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof(parent), &parent, NULL) !=
            CL_SUCCESS ||
        parent)
        return 0;
    if (cl->clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof(size), &size, NULL) != CL_SUCCESS)
        return 0;
    return size;
}

/* Records an object of the session; CL_SUCCESS, or why it cannot (a limit). */
cl_int exec_add_obj(struct exec_session *s, uint64_t id, enum vocl_type t, void *native,
                    uint32_t refs)
{
    struct exec_node *node = s->node;
    uint64_t bytes = t == VOCL_T_MEM ? mem_bytes(node->cl, native) : 0;
    if (node->limits.objects && s->nobjs >= node->limits.objects && t != VOCL_T_DEVICE &&
        t != VOCL_T_EVENT) { /* a command's event: the command ran already */
        vocl_warn("client %d: refused an object: the session holds %" PRIu64 " (limit %" PRIu64
                  ", --max-session-objects)", s->who, s->nobjs, node->limits.objects);
        return CL_OUT_OF_RESOURCES;
    }
    if (node->limits.mem && s->bytes + bytes > node->limits.mem) {
        vocl_warn("client %d: refused %" PRIu64 " bytes: the session holds %" PRIu64
                  " (limit %" PRIu64 ", --max-session-mem)", s->who, bytes, s->bytes,
                  node->limits.mem);
        return CL_MEM_OBJECT_ALLOCATION_FAILURE;
    }
    struct exec_obj *o = malloc(sizeof(*o));
    if (!o)
        return CL_OUT_OF_HOST_MEMORY;
    *o = (struct exec_obj){.type = t, .native = native, .refs = refs, .bytes = bytes};
    if (vocl_map_put(&s->objs, id, o)) {
        free(o);
        return CL_OUT_OF_HOST_MEMORY;
    }
    s->nobjs++;
    s->bytes += bytes;
    atomic_fetch_add(&node->nobjs, 1);
    atomic_fetch_add(&node->bytes, bytes);
    return CL_SUCCESS;
}

/* Forgets o, taken out of the session's table (its native references are
 * gone): the counts of the session and of the node go down. */
void exec_forget_obj(struct exec_session *s, struct exec_obj *o)
{
    if (o->type == VOCL_T_CONTEXT)
        exec_ctx_pool_drop(s->node, o->native);
    if (o->type == VOCL_T_QUEUE)
        exec_busy_forget(s->node, o);
    s->nobjs--;
    s->bytes -= o->bytes;
    atomic_fetch_sub(&s->node->nobjs, 1);
    atomic_fetch_sub(&s->node->bytes, o->bytes);
    free(o);
}

cl_int exec_release_native(const struct vocl_native_api *cl, enum vocl_type t, void *native)
{
    switch (t) {
    case VOCL_T_DEVICE: return cl->clReleaseDevice((cl_device_id)native);
    case VOCL_T_CONTEXT: return cl->clReleaseContext((cl_context)native);
    case VOCL_T_QUEUE: return cl->clReleaseCommandQueue((cl_command_queue)native);
    case VOCL_T_MEM: return cl->clReleaseMemObject((cl_mem)native);
    case VOCL_T_SAMPLER: return cl->clReleaseSampler((cl_sampler)native);
    case VOCL_T_PROGRAM: return cl->clReleaseProgram((cl_program)native);
    case VOCL_T_KERNEL: return cl->clReleaseKernel((cl_kernel)native);
    case VOCL_T_EVENT: return cl->clReleaseEvent((cl_event)native);
    case VOCL_T_PLATFORM:
    case VOCL_T_NONE:
    case VOCL_T_COUNT: break;
    }
    return CL_INVALID_VALUE;
}

cl_int exec_retain_native(const struct vocl_native_api *cl, enum vocl_type t, void *native)
{
    switch (t) {
    case VOCL_T_DEVICE: return cl->clRetainDevice((cl_device_id)native);
    case VOCL_T_CONTEXT: return cl->clRetainContext((cl_context)native);
    case VOCL_T_QUEUE: return cl->clRetainCommandQueue((cl_command_queue)native);
    case VOCL_T_MEM: return cl->clRetainMemObject((cl_mem)native);
    case VOCL_T_SAMPLER: return cl->clRetainSampler((cl_sampler)native);
    case VOCL_T_PROGRAM: return cl->clRetainProgram((cl_program)native);
    case VOCL_T_KERNEL: return cl->clRetainKernel((cl_kernel)native);
    case VOCL_T_EVENT: return cl->clRetainEvent((cl_event)native);
    case VOCL_T_PLATFORM:
    case VOCL_T_NONE:
    case VOCL_T_COUNT: break;
    }
    return CL_INVALID_VALUE;
}

/*
 * Fails the user events the client left unset: no one will set them now,
 * and the commands they gate (reads the stream thread waits to send among
 * them) must end rather than wait for ever.
 */
static void fail_user_events(struct exec_session *s)
{
    const struct vocl_native_api *cl = s->node->cl;
    size_t pos = 0;
    uint64_t id;
    void *v;
    while (vocl_map_next(&s->objs, &pos, &id, &v)) {
        struct exec_obj *o = v;
        cl_command_type type;
        cl_int status;
        if (o->type == VOCL_T_EVENT &&
            cl->clGetEventInfo(o->native, CL_EVENT_COMMAND_TYPE, sizeof(type), &type, NULL) ==
                CL_SUCCESS &&
            type == CL_COMMAND_USER &&
            cl->clGetEventInfo(o->native, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status),
                               &status, NULL) == CL_SUCCESS &&
            status > CL_COMPLETE)
            cl->clSetUserEventStatus(o->native, CL_DEVICE_NOT_AVAILABLE);
    }
}

void exec_session_close(struct exec_session *s)
{
    s->pool_due.ctx = NULL; /* (its context goes with the session) */
    exec_after_reply(s);
    exec_inbound_drop(s);
    atomic_store(&s->closed, true); /* replies still due have no one to go to */
    if (atomic_load(&s->lost))
        atomic_store(&s->broken, true); /* nor do chunks: the stream drops them */
    fail_user_events(s);
}

bool exec_session_draining(struct exec_session *s)
{
    return exec_stream_busy(s->node, s) || exec_inbound_busy(s);
}

void exec_session_end(struct exec_session *s)
{
    /*
     * Release what the client left behind, dependants first (events and
     * kernels before the queues, programs and contexts they hold), though
     * the native reference counts make any order safe.
     */
    static const enum vocl_type order[] = {VOCL_T_EVENT,   VOCL_T_KERNEL, VOCL_T_SAMPLER,
                                           VOCL_T_MEM,     VOCL_T_QUEUE,  VOCL_T_PROGRAM,
                                           VOCL_T_CONTEXT, VOCL_T_DEVICE};
    const struct vocl_native_api *cl = s->node->cl;
    size_t leaked = 0;

    exec_session_close(s);
    exec_stream_flush(s->node, s); /* nothing may still be sending from its objects */

    for (size_t k = 0; k < sizeof(order) / sizeof(order[0]); k++) {
        size_t pos = 0;
        uint64_t id;
        void *v;
        while (vocl_map_next(&s->objs, &pos, &id, &v)) {
            struct exec_obj *o = v;
            if (o->type != order[k])
                continue;
            leaked += o->refs;
            for (; o->refs; o->refs--)
                exec_release_native(cl, o->type, o->native);
        }
    }
    uint64_t nobjs = s->nobjs, bytes = s->bytes;
    size_t pos = 0;
    uint64_t id;
    void *v;
    while (vocl_map_next(&s->objs, &pos, &id, &v))
        exec_forget_obj(s, v);
    vocl_map_free(&s->objs);
    if (!s->in_process)
        vocl_info("session of %s %d: ended; released %" PRIu64 " objects (%" PRIu64
                  " bytes of memory objects); the proxy holds %" PRIu64 " objects (%" PRIu64
                  " bytes)", s->who == s->peer ? "rank" : "client", s->who, nobjs, bytes, (uint64_t)atomic_load(&s->node->nobjs),
                  (uint64_t)atomic_load(&s->node->bytes));
    exec_trace_free(s->trace);
    s->trace = NULL;
    exec_notify_drop(s);
    if (leaked)
        vocl_info("client %d: released %zu references the client left", s->who, leaked);
    exec_account_close(s); /* (its blocks still out keep the count) */
}

bool exec_session_held(struct exec_session *s)
{
    return atomic_load(&s->held) > 0;
}

struct exec_obj *exec_lookup(struct exec_session *s, uint64_t id, enum vocl_type t)
{
    struct exec_obj *o = vocl_map_get(&s->objs, id);
    return o && o->type == t ? o : NULL;
}
