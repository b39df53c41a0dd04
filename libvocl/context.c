/*
 * context.c - contexts: creation from devices or a device type, and the
 * info the client answers itself (devices and properties).
 */
#include "vocl.h"

#include <stdlib.h>
#include <string.h>

#include "thread.h"

/* Checks a context property list; 0 or the spec's error. */
static cl_int check_props(const cl_context_properties *p, size_t *n)
{
    size_t i = 0;
    bool seen_platform = false, seen_sync = false;
    for (; p && p[i]; i += 2) {
        switch (p[i]) {
        case CL_CONTEXT_PLATFORM:
            if (seen_platform)
                return CL_INVALID_PROPERTY;
            seen_platform = true;
            if (!vocl_lookup((void *)p[i + 1], VOCL_T_PLATFORM))
                return CL_INVALID_PLATFORM;
            break;
        case CL_CONTEXT_INTEROP_USER_SYNC:
            if (seen_sync)
                return CL_INVALID_PROPERTY;
            seen_sync = true;
            break;
        default:
            return CL_INVALID_PROPERTY; /* GL, D3D, ...: no window system remotely */
        }
        if (i > 64)
            return CL_INVALID_PROPERTY;
    }
    *n = p ? i + 1 : 0;
    return CL_SUCCESS;
}

/* The proxies of a device list, in order of first appearance; 0 when a
 * local device would share the context with a remote one. */
static cl_uint list_proxies(cl_uint n, const cl_device_id *devices, struct vocl_proxy **out)
{
    cl_uint k = 0;
    bool local = false;
    for (cl_uint i = 0; i < n; i++) {
        struct vocl_proxy *px = ((struct vocl_obj *)devices[i])->px;
        cl_uint j = 0;
        while (j < k && out[j] != px)
            j++;
        if (j == k)
            out[k++] = px;
        local |= px->local;
    }
    return local && k > 1 ? 0 : k;
}

/*
 * One native context in each proxy of the devices (replica.c), with the
 * devices that proxy has.
 */
static struct vocl_obj *create_context(const cl_context_properties *properties,
                                       cl_uint num_devices, const cl_device_id *devices,
                                       void (CL_CALLBACK *pfn_notify)(const char *, const void *,
                                                                      size_t, void *),
                                       void *user_data, cl_int *errcode_ret)
{
    struct vocl_call c;
    struct vocl_obj *ctx = NULL;
    size_t nprops = 0;
    struct vocl_proxy **pxs = NULL;
    cl_uint npx = 0;
    vocl_call_init(&c);
    if (!c.err && (!devices || num_devices == 0 || (!pfn_notify && user_data)))
        vocl_call_error(&c, CL_INVALID_VALUE);
    if (!c.err)
        vocl_call_error(&c, check_props(properties, &nprops));
    vocl_call_devs(&c, NULL, num_devices, devices);
    if (!c.err && !(pxs = malloc(num_devices * sizeof(*pxs))))
        vocl_call_error(&c, CL_OUT_OF_HOST_MEMORY);
    if (!c.err) {
        npx = list_proxies(num_devices, devices, pxs);
        if (npx == 0 || npx > 64) {
            vocl_error("clCreateContext: %s", npx ? "a context spans at most 64 proxies"
                                                  : "this node's devices (--local) cannot share "
                                                    "a context with remote ones");
            vocl_call_error(&c, CL_INVALID_DEVICE);
        }
    }
    for (cl_uint rep = 0; !c.err && rep < npx; rep++) {
        vocl_call_end(&c);
        c.px = pxs[rep];
        if (vocl_call_start(&c, VOCL_OP_clCreateContext))
            break;
        uint64_t *props = malloc((nprops + num_devices) * sizeof(*props));
        if (!props) {
            vocl_call_error(&c, CL_OUT_OF_HOST_MEMORY);
            break;
        }
        for (size_t i = 0; i < nprops; i++) {
            /* The proxy puts its own platform where ours was. */
            bool platform_value = i % 2 == 1 && properties[i - 1] == CL_CONTEXT_PLATFORM;
            props[i] = platform_value ? 0 : (uint64_t)properties[i];
        }
        uint64_t *devs = props + nprops; /* those on this proxy */
        uint32_t ndevs = 0;
        for (cl_uint i = 0; i < num_devices; i++)
            if (vocl_on((const void *)devices[i], c.px))
                devs[ndevs++] = vocl_id_on((const void *)devices[i], c.px);
        uint64_t id = vocl_call_new_id(&c);
        vocl_enc_clCreateContext_req(c.w, &(struct vocl_msg_clCreateContext_req){
                                              .properties = {.n = (uint32_t)nprops, .v = props},
                                              .devices = {.n = ndevs, .v = devs},
                                              .new_id = id});
        free(props);
        if (vocl_call_send(&c) == 0)
            vocl_call_made(&c, &ctx, rep, npx, VOCL_T_CONTEXT, id, NULL, NULL);
    }
    free(pxs);
    if (c.err && ctx) {
        vocl_call_end(&c);
        clReleaseContext((cl_context)ctx);
        ctx = NULL;
    }
    vocl_call_end(&c);
    if (ctx) {
        struct vocl_context *cx = vocl_as_context(ctx);
        cx->devs = malloc(num_devices * sizeof(*cx->devs));
        cx->props = nprops ? malloc(nprops * sizeof(*cx->props)) : NULL;
        if (!cx->devs || (nprops && !cx->props)) {
            clReleaseContext((cl_context)ctx);
            ctx = NULL;
            c.err = CL_OUT_OF_HOST_MEMORY;
        } else {
            cx->ndevs = num_devices;
            memcpy(cx->devs, devices, num_devices * sizeof(*cx->devs));
            cx->nprops = nprops;
            if (nprops)
                memcpy(cx->props, properties, nprops * sizeof(*cx->props));
            cx->ctx_notify = pfn_notify;
            cx->ctx_notify_data = user_data;
            if (pfn_notify)
                vocl_notes_watch(ctx, 1);
        }
    }
    if (errcode_ret)
        *errcode_ret = c.err;
    return ctx;
}

cl_context CL_API_CALL vocl_hand_clCreateContext(const cl_context_properties *properties, cl_uint num_devices,
                const cl_device_id *devices,
                void (CL_CALLBACK *pfn_notify)(const char *errinfo, const void *private_info,
                                               size_t cb, void *user_data),
                void *user_data, cl_int *errcode_ret)
{
    return (cl_context)create_context(properties, num_devices, devices, pfn_notify, user_data,
                                      errcode_ret);
}

cl_context CL_API_CALL vocl_hand_clCreateContextFromType(const cl_context_properties *properties, cl_device_type device_type,
                        void (CL_CALLBACK *pfn_notify)(const char *errinfo,
                                                       const void *private_info, size_t cb,
                                                       void *user_data),
                        void *user_data, cl_int *errcode_ret)
{
    cl_uint n = 0;
    size_t nprops;
    cl_int err = vocl_init();
    if (err == CL_SUCCESS)
        err = check_props(properties, &nprops);
    if (err == CL_SUCCESS)
        err = clGetDeviceIDs(NULL, device_type, 0, NULL, &n);
    cl_device_id *devs = err == CL_SUCCESS ? malloc(n * sizeof(*devs)) : NULL;
    if (err == CL_SUCCESS && !devs)
        err = CL_OUT_OF_HOST_MEMORY;
    if (err == CL_SUCCESS)
        err = clGetDeviceIDs(NULL, device_type, n, devs, NULL);
    if (err != CL_SUCCESS) {
        free(devs);
        if (errcode_ret)
            *errcode_ret = err;
        return NULL;
    }
    struct vocl_obj *ctx = create_context(properties, n, devs, pfn_notify, user_data, errcode_ret);
    free(devs);
    return (cl_context)ctx;
}

int vocl_hook_clGetContextInfo(cl_context context, cl_context_info param_name,
                               size_t param_value_size, void *param_value,
                               size_t *param_value_size_ret, cl_int *ret)
{
    struct vocl_context *ctx = vocl_as_context(vocl_lookup(context, VOCL_T_CONTEXT));
    if (!ctx)
        return 0;
    switch (param_name) {
    case CL_CONTEXT_DEVICES:
        *ret = vocl_info_answer(ctx->devs, ctx->ndevs * sizeof(cl_device_id), param_value_size,
                                param_value, param_value_size_ret);
        return 1;
    case CL_CONTEXT_NUM_DEVICES:
        *ret = vocl_info_answer(&ctx->ndevs, sizeof(cl_uint), param_value_size, param_value,
                                param_value_size_ret);
        return 1;
    case CL_CONTEXT_PROPERTIES:
        *ret = vocl_info_answer(ctx->props, ctx->nprops * sizeof(cl_context_properties),
                                param_value_size, param_value, param_value_size_ret);
        return 1;
    default:
        return 0;
    }
}

static cl_int add_dtor(const void *h, enum vocl_type t, void (*fn)(void *, void *), void *data)
{
    struct vocl_obj *o = vocl_lookup(h, t);
    if (!o)
        return vocl_type_invalid_err(t);
    if (!fn)
        return CL_INVALID_VALUE;
    struct vocl_dtor *d = malloc(sizeof(*d));
    if (!d)
        return CL_OUT_OF_HOST_MEMORY;
    d->fn = fn;
    d->user_data = data;
    d->next = o->dtors; /* newest first: they run in reverse order */
    o->dtors = d;
    return CL_SUCCESS;
}

cl_int CL_API_CALL vocl_hand_clSetContextDestructorCallback(
    cl_context context, void (CL_CALLBACK *pfn_notify)(cl_context context, void *user_data),
    void *user_data)
{
    return add_dtor(context, VOCL_T_CONTEXT, (void (*)(void *, void *))pfn_notify, user_data);
}

cl_int CL_API_CALL vocl_hand_clSetMemObjectDestructorCallback(
    cl_mem memobj, void (CL_CALLBACK *pfn_notify)(cl_mem memobj, void *user_data),
    void *user_data)
{
    return add_dtor(memobj, VOCL_T_MEM, (void (*)(void *, void *))pfn_notify, user_data);
}

/* --- context notifications ------------------------------------------------------------------------
 *
 * A proxy sends its clients' context notifications (the native driver's, and
 * its own on deferred errors: executor/notify.c) in a NOTIFY message before a
 * reply.  Each becomes a call of the application's pfn_notify on a thread of
 * libvocl, as the spec lets a driver call it, never on the thread that
 * happened to receive the reply (it may hold locks the callback needs).
 */
struct note {
    struct vocl_obj *ctx; /* held */
    char *errinfo;
    void *priv;
    size_t cb;
};

static void note_free(struct note *n)
{
    vocl_obj_drop(n->ctx);
    free(n->errinfo);
    free(n->priv);
    free(n);
}

static void *note_thread(void *arg)
{
    struct note *n = arg;
    const struct vocl_context *ctx = vocl_as_context(n->ctx);
    ctx->ctx_notify(n->errinfo, n->priv, n->cb, ctx->ctx_notify_data);
    note_free(n);
    return NULL;
}

static void note_deliver(struct vocl_proxy *px, uint64_t id, const char *errinfo, size_t len,
                         const void *priv, size_t cb)
{
    struct vocl_obj *ctx = vocl_find_on(px, id, VOCL_T_CONTEXT);
    if (!ctx)
        return;
    vocl_debug("proxy %d: context notification: %.*s", px->index, (int)len, errinfo);
    struct note *n = calloc(1, sizeof(*n));
    if (!vocl_as_context(ctx)->ctx_notify || !n) {
        vocl_obj_drop(ctx);
        free(n);
        return;
    }
    n->ctx = ctx;
    n->errinfo = malloc(len + 1);
    n->priv = cb ? malloc(cb) : NULL;
    if (!n->errinfo || (cb && !n->priv)) {
        note_free(n);
        return;
    }
    memcpy(n->errinfo, errinfo, len);
    n->errinfo[len] = '\0';
    if (cb)
        memcpy(n->priv, priv, cb);
    n->cb = cb;
    if (vocl_thread_detached(note_thread, n))
        note_free(n);
}

void vocl_context_notes(struct vocl_proxy *px, const void *payload, size_t size)
{
    struct vocl_rd r, it;
    struct vocl_msg_NOTIFY_req m;
    struct vocl_rec_notification n;
    vocl_rd_init(&r, payload, size);
    const char *why = vocl_dec_NOTIFY_req(&r, &m);
    vocl_rd_init(&it, m.notes.raw, m.notes.raw_len);
    /* (A NULL errinfo cannot come from a proxy: the rest is not read.) */
    while (!why && !r.fail && vocl_next_notification(&it, &n) && !n.errinfo.null)
        note_deliver(px, n.context, n.errinfo.p, (size_t)n.errinfo.len, n.private_info.p,
                     n.private_info.len);
    if (why || r.fail)
        vocl_warn("proxy %d: malformed context notification: ignored", px->index);
}
