/*
 * program.c - programs, kernels, the kernel-argument cache and launches.
 *
 * clSetKernelArg sends nothing: the value is kept here and travels with the
 * next launch, and an argument unchanged since the last launch is not sent
 * again (the proxy's native kernel still holds it).  Whether a value names a
 * memory object or sampler is read from the handle table: a pointer-sized
 * value that is a live VOCL handle of the kernel's proxy is one.
 */
#include "vocl.h"

#include <stdlib.h>
#include <string.h>

enum { ARG_BYTES = 0, ARG_MEM = 1, ARG_SAMPLER = 2, ARG_LOCAL = 3 };

struct vocl_karg {
    uint8_t set, dirty, kind;
    size_t size;
    uint64_t id;       /* ARG_MEM, ARG_SAMPLER (0: NULL) */
    uint8_t small[16]; /* ARG_BYTES up to 16 bytes */
    uint8_t *big;      /* ARG_BYTES above */
};

struct vocl_kargs {
    cl_uint n;
    struct vocl_karg a[];
};

void vocl_kargs_free(struct vocl_kargs *k)
{
    for (cl_uint i = 0; k && i < k->n; i++)
        free(k->a[i].big);
    free(k);
}

static struct vocl_kargs *kargs_new(cl_uint n)
{
    struct vocl_kargs *k = calloc(1, sizeof(*k) + n * sizeof(k->a[0]));
    if (k)
        k->n = n;
    return k;
}

static void kernel_setup(struct vocl_call *c, struct vocl_obj *k, cl_uint nargs)
{
    if (!k)
        return;
    k->kargs = kargs_new(nargs);
    if (!k->kargs) {
        clReleaseKernel((cl_kernel)k);
        vocl_call_error(c, CL_OUT_OF_HOST_MEMORY);
    }
}

/* --- programs ------------------------------------------------------------------------------------------ */

static void program_devices(struct vocl_obj *p, cl_uint n, const cl_device_id *list)
{
    struct vocl_obj *ctx = p->context;
    if (!list) {
        n = ctx->ndevs;
        list = (const cl_device_id *)ctx->devs;
    }
    p->devs = malloc(n * sizeof(*p->devs));
    if (p->devs) {
        memcpy(p->devs, list, n * sizeof(*p->devs));
        p->ndevs = n;
    }
}

CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithSource(cl_context context, cl_uint count,
                                                              const char **strings,
                                                              const size_t *lengths,
                                                              cl_int *errcode_ret)
{
    struct vocl_call c;
    struct vocl_obj *p = NULL;
    vocl_call_init(&c);
    struct vocl_obj *ctx = vocl_call_h(&c, context, VOCL_T_CONTEXT, 0);
    if (!c.err && (count == 0 || !strings))
        vocl_call_error(&c, CL_INVALID_VALUE);
    for (cl_uint i = 0; !c.err && i < count; i++)
        if (!strings[i])
            vocl_call_error(&c, CL_INVALID_VALUE);
    if (vocl_call_start(&c, VOCL_OP_clCreateProgramWithSource) == 0) {
        vocl_wr_u64(c.w, ctx->id);
        vocl_wr_u32(c.w, count);
        for (cl_uint i = 0; i < count; i++) {
            size_t len = lengths && lengths[i] ? lengths[i] : strlen(strings[i]);
            vocl_wr_bytes(c.w, strings[i], len);
        }
        uint64_t id = vocl_call_new_id(&c);
        vocl_wr_u64(c.w, id);
        if (vocl_call_send(&c) == 0)
            p = vocl_call_new_obj(&c, VOCL_T_PROGRAM, id, ctx, NULL);
    }
    vocl_call_end(&c);
    if (p)
        program_devices(p, 0, NULL);
    if (errcode_ret)
        *errcode_ret = c.err;
    return (cl_program)p;
}

CL_API_ENTRY cl_program CL_API_CALL clCreateProgramWithBinary(
    cl_context context, cl_uint num_devices, const cl_device_id *device_list,
    const size_t *lengths, const unsigned char **binaries, cl_int *binary_status,
    cl_int *errcode_ret)
{
    struct vocl_call c;
    struct vocl_obj *p = NULL;
    vocl_call_init(&c);
    struct vocl_obj *ctx = vocl_call_h(&c, context, VOCL_T_CONTEXT, 0);
    vocl_call_ha(&c, num_devices, (const void *const *)device_list, VOCL_T_DEVICE);
    if (!c.err && (!num_devices || !lengths || !binaries))
        vocl_call_error(&c, CL_INVALID_VALUE);
    for (cl_uint i = 0; !c.err && i < num_devices; i++)
        if (!lengths[i] || !binaries[i])
            vocl_call_error(&c, CL_INVALID_VALUE);
    if (vocl_call_start(&c, VOCL_OP_clCreateProgramWithBinary) == 0) {
        vocl_wr_u64(c.w, ctx->id);
        vocl_call_put_ha(&c, num_devices, (const void *const *)device_list);
        vocl_wr_u32(c.w, num_devices);
        for (cl_uint i = 0; i < num_devices; i++)
            vocl_wr_bytes(c.w, binaries[i], lengths[i]);
        uint64_t id = vocl_call_new_id(&c);
        vocl_wr_u64(c.w, id);
        int rc = vocl_call_send(&c);
        if (c.r.p) {
            /* The statuses come back whether or not the creation succeeded. */
            cl_uint n = vocl_rd_u32(&c.r);
            for (cl_uint i = 0; i < n && i < num_devices && binary_status; i++)
                binary_status[i] = vocl_rd_i32(&c.r);
        }
        if (rc == 0)
            p = vocl_call_new_obj(&c, VOCL_T_PROGRAM, id, ctx, NULL);
    }
    vocl_call_end(&c);
    if (p)
        program_devices(p, num_devices, device_list);
    if (errcode_ret)
        *errcode_ret = c.err;
    return (cl_program)p;
}

/* pfn_notify runs here, after the work: allowed, since the spec lets
 * clBuildProgram and friends return after the build has completed. */
CL_API_ENTRY cl_int CL_API_CALL clBuildProgram(cl_program program, cl_uint num_devices,
                                               const cl_device_id *device_list,
                                               const char *options,
                                               void (CL_CALLBACK *pfn_notify)(cl_program program,
                                                                              void *user_data),
                                               void *user_data)
{
    struct vocl_call c;
    vocl_call_init(&c);
    struct vocl_obj *p = vocl_call_h(&c, program, VOCL_T_PROGRAM, 0);
    vocl_call_ha(&c, num_devices, (const void *const *)device_list, VOCL_T_DEVICE);
    if (!c.err && !pfn_notify && user_data)
        vocl_call_error(&c, CL_INVALID_VALUE);
    if (vocl_call_start(&c, VOCL_OP_clBuildProgram) == 0) {
        vocl_wr_u64(c.w, p->id);
        vocl_call_put_ha(&c, num_devices, (const void *const *)device_list);
        vocl_wr_str(c.w, options);
        vocl_call_send(&c);
    }
    vocl_call_end(&c);
    if (pfn_notify && p)
        pfn_notify(program, user_data);
    return c.err;
}

CL_API_ENTRY cl_int CL_API_CALL clCompileProgram(
    cl_program program, cl_uint num_devices, const cl_device_id *device_list, const char *options,
    cl_uint num_input_headers, const cl_program *input_headers, const char **header_include_names,
    void (CL_CALLBACK *pfn_notify)(cl_program program, void *user_data), void *user_data)
{
    struct vocl_call c;
    vocl_call_init(&c);
    struct vocl_obj *p = vocl_call_h(&c, program, VOCL_T_PROGRAM, 0);
    vocl_call_ha(&c, num_devices, (const void *const *)device_list, VOCL_T_DEVICE);
    vocl_call_ha(&c, num_input_headers, (const void *const *)input_headers, VOCL_T_PROGRAM);
    if (!c.err && ((num_input_headers && !header_include_names) || (!pfn_notify && user_data)))
        vocl_call_error(&c, CL_INVALID_VALUE);
    if (vocl_call_start(&c, VOCL_OP_clCompileProgram) == 0) {
        vocl_wr_u64(c.w, p->id);
        vocl_call_put_ha(&c, num_devices, (const void *const *)device_list);
        vocl_wr_str(c.w, options);
        vocl_call_put_ha(&c, num_input_headers, (const void *const *)input_headers);
        for (cl_uint i = 0; i < num_input_headers; i++)
            vocl_wr_str(c.w, header_include_names[i]);
        vocl_call_send(&c);
    }
    vocl_call_end(&c);
    if (pfn_notify && p)
        pfn_notify(program, user_data);
    return c.err;
}

CL_API_ENTRY cl_program CL_API_CALL clLinkProgram(
    cl_context context, cl_uint num_devices, const cl_device_id *device_list, const char *options,
    cl_uint num_input_programs, const cl_program *input_programs,
    void (CL_CALLBACK *pfn_notify)(cl_program program, void *user_data), void *user_data,
    cl_int *errcode_ret)
{
    struct vocl_call c;
    struct vocl_obj *p = NULL;
    vocl_call_init(&c);
    struct vocl_obj *ctx = vocl_call_h(&c, context, VOCL_T_CONTEXT, 0);
    vocl_call_ha(&c, num_devices, (const void *const *)device_list, VOCL_T_DEVICE);
    vocl_call_ha(&c, num_input_programs, (const void *const *)input_programs, VOCL_T_PROGRAM);
    if (!c.err && (!num_input_programs || (!pfn_notify && user_data)))
        vocl_call_error(&c, CL_INVALID_VALUE);
    if (vocl_call_start(&c, VOCL_OP_clLinkProgram) == 0) {
        vocl_wr_u64(c.w, ctx->id);
        vocl_call_put_ha(&c, num_devices, (const void *const *)device_list);
        vocl_wr_str(c.w, options);
        vocl_call_put_ha(&c, num_input_programs, (const void *const *)input_programs);
        uint64_t id = vocl_call_new_id(&c);
        vocl_wr_u64(c.w, id);
        vocl_call_send(&c);
        /* A failed link can still make a program (to read its build log). */
        cl_int err = c.err;
        bool made = (err == CL_SUCCESS || err == CL_LINK_PROGRAM_FAILURE) && vocl_rd_u8(&c.r);
        if (made) {
            c.err = CL_SUCCESS;
            p = vocl_call_new_obj(&c, VOCL_T_PROGRAM, id, ctx, NULL);
            c.err = err;
        }
    }
    vocl_call_end(&c);
    if (p)
        program_devices(p, num_devices, device_list);
    if (pfn_notify && p)
        pfn_notify((cl_program)p, user_data);
    if (errcode_ret)
        *errcode_ret = c.err;
    return (cl_program)p;
}

/* CL_PROGRAM_BINARIES fills the application's own buffers: one message
 * brings every binary, copied into place here. */
static cl_int program_binaries(struct vocl_obj *p, size_t size, void *value, size_t *size_ret)
{
    size_t need = p->ndevs * sizeof(unsigned char *);
    if (size_ret)
        *size_ret = need;
    if (!value)
        return CL_SUCCESS;
    if (size < need)
        return CL_INVALID_VALUE;
    unsigned char **out = value;
    struct vocl_call c;
    vocl_call_init(&c);
    c.px = p->px;
    if (vocl_call_start(&c, VOCL_OP_PROGRAM_BINARIES) == 0) {
        vocl_wr_u64(c.w, p->id);
        if (vocl_call_send(&c) == 0) {
            cl_uint n = vocl_rd_u32(&c.r);
            for (cl_uint i = 0; i < n && i < p->ndevs; i++) {
                size_t len;
                const void *bin = vocl_rd_bytes(&c.r, &len);
                if (out[i] && bin)
                    memcpy(out[i], bin, len);
            }
        }
    }
    vocl_call_end(&c);
    return c.err;
}

int vocl_hook_clGetProgramInfo(cl_program program, cl_program_info param_name,
                               size_t param_value_size, void *param_value,
                               size_t *param_value_size_ret, cl_int *ret)
{
    struct vocl_obj *p = vocl_lookup(program, VOCL_T_PROGRAM);
    if (!p)
        return 0;
    switch (param_name) {
    case CL_PROGRAM_CONTEXT:
        *ret = vocl_info_answer(&p->context, sizeof(void *), param_value_size, param_value,
                                param_value_size_ret);
        return 1;
    case CL_PROGRAM_DEVICES:
        if (!p->devs) /* made by a generated create: the context's devices */
            program_devices(p, 0, NULL);
        *ret = vocl_info_answer(p->devs, p->ndevs * sizeof(void *), param_value_size,
                                param_value, param_value_size_ret);
        return 1;
    case CL_PROGRAM_BINARIES:
        *ret = program_binaries(p, param_value_size, param_value, param_value_size_ret);
        return 1;
    default:
        return 0;
    }
}

/* --- kernels ------------------------------------------------------------------------------------------------ */

CL_API_ENTRY cl_kernel CL_API_CALL clCreateKernel(cl_program program, const char *kernel_name,
                                                  cl_int *errcode_ret)
{
    struct vocl_call c;
    struct vocl_obj *k = NULL;
    vocl_call_init(&c);
    struct vocl_obj *p = vocl_call_h(&c, program, VOCL_T_PROGRAM, 0);
    if (!c.err && !kernel_name)
        vocl_call_error(&c, CL_INVALID_VALUE);
    if (vocl_call_start(&c, VOCL_OP_clCreateKernel) == 0) {
        vocl_wr_u64(c.w, p->id);
        vocl_wr_str(c.w, kernel_name);
        uint64_t id = vocl_call_new_id(&c);
        vocl_wr_u64(c.w, id);
        if (vocl_call_send(&c) == 0) {
            cl_uint nargs = vocl_rd_u32(&c.r);
            k = vocl_call_new_obj(&c, VOCL_T_KERNEL, id, p->context, p);
            vocl_call_end(&c);
            kernel_setup(&c, k, nargs);
        }
    }
    vocl_call_end(&c);
    if (errcode_ret)
        *errcode_ret = c.err;
    return c.err ? NULL : (cl_kernel)k;
}

CL_API_ENTRY cl_int CL_API_CALL clCreateKernelsInProgram(cl_program program, cl_uint num_kernels,
                                                         cl_kernel *kernels,
                                                         cl_uint *num_kernels_ret)
{
    struct vocl_call c;
    vocl_call_init(&c);
    struct vocl_obj *p = vocl_call_h(&c, program, VOCL_T_PROGRAM, 0);
    cl_uint nids = kernels ? num_kernels : 0;
    uint64_t first = 0;
    cl_uint got = 0, *nargs = NULL;
    if (vocl_call_start(&c, VOCL_OP_clCreateKernelsInProgram) == 0) {
        vocl_wr_u64(c.w, p->id);
        first = vocl_call_put_new_ids(&c, nids);
        if (vocl_call_send(&c) == 0) {
            got = vocl_rd_u32(&c.r);
            cl_uint made = got < nids ? got : nids;
            nargs = calloc(made ? made : 1, sizeof(*nargs));
            for (cl_uint i = 0; nargs && i < made; i++)
                nargs[i] = vocl_rd_u32(&c.r);
            for (cl_uint i = 0; i < made; i++)
                kernels[i] = (cl_kernel)vocl_call_new_obj(&c, VOCL_T_KERNEL, first + i,
                                                          p->context, p);
        }
    }
    vocl_call_end(&c);
    for (cl_uint i = 0; c.err == CL_SUCCESS && kernels && i < got && i < nids; i++)
        kernel_setup(&c, (struct vocl_obj *)kernels[i], nargs ? nargs[i] : 0);
    free(nargs);
    if (c.err == CL_SUCCESS && num_kernels_ret)
        *num_kernels_ret = got;
    return c.err;
}

CL_API_ENTRY cl_kernel CL_API_CALL clCloneKernel(cl_kernel source_kernel, cl_int *errcode_ret)
{
    struct vocl_call c;
    struct vocl_obj *k = NULL;
    vocl_call_init(&c);
    struct vocl_obj *src = vocl_call_h(&c, source_kernel, VOCL_T_KERNEL, 0);
    if (vocl_call_start(&c, VOCL_OP_clCloneKernel) == 0) {
        vocl_wr_u64(c.w, src->id);
        uint64_t id = vocl_call_new_id(&c);
        vocl_wr_u64(c.w, id);
        if (vocl_call_send(&c) == 0)
            k = vocl_call_new_obj(&c, VOCL_T_KERNEL, id, src->context, src->parent);
    }
    vocl_call_end(&c);
    if (k) {
        /* The native clone has the source's arguments: so does the cache. */
        k->kargs = kargs_new(src->kargs->n);
        for (cl_uint i = 0; k->kargs && i < src->kargs->n; i++) {
            k->kargs->a[i] = src->kargs->a[i];
            k->kargs->a[i].big = NULL;
            if (src->kargs->a[i].big) {
                k->kargs->a[i].big = malloc(src->kargs->a[i].size);
                if (k->kargs->a[i].big)
                    memcpy(k->kargs->a[i].big, src->kargs->a[i].big, src->kargs->a[i].size);
                else
                    k->kargs->a[i].set = 0;
            }
        }
        if (!k->kargs) {
            clReleaseKernel((cl_kernel)k);
            k = NULL;
            c.err = CL_OUT_OF_HOST_MEMORY;
        }
    }
    if (errcode_ret)
        *errcode_ret = c.err;
    return (cl_kernel)k;
}

CL_API_ENTRY cl_int CL_API_CALL clSetKernelArg(cl_kernel kernel, cl_uint arg_index,
                                               size_t arg_size, const void *arg_value)
{
    cl_int err = vocl_init();
    if (err != CL_SUCCESS)
        return err;
    struct vocl_obj *k = vocl_lookup(kernel, VOCL_T_KERNEL);
    if (!k)
        return CL_INVALID_KERNEL;
    if (arg_index >= k->kargs->n)
        return CL_INVALID_ARG_INDEX;

    struct vocl_karg a = {.set = 1, .dirty = 1, .size = arg_size};
    struct vocl_obj *h = NULL;
    if (!arg_value) {
        /* __local memory, or a NULL buffer: the native call tells them apart. */
        a.kind = ARG_LOCAL;
    } else if (arg_size == sizeof(void *) &&
               ((h = vocl_lookup(*(void *const *)arg_value, VOCL_T_MEM)) ||
                (h = vocl_lookup(*(void *const *)arg_value, VOCL_T_SAMPLER)))) {
        if (h->px != k->px)
            return CL_INVALID_ARG_VALUE; /* an object of another proxy's context */
        a.kind = h->type == VOCL_T_MEM ? ARG_MEM : ARG_SAMPLER;
        a.id = h->id;
    } else {
        a.kind = ARG_BYTES;
        if (arg_size > sizeof(a.small)) {
            if (arg_size > VOCL_INLINE_MAX)
                return CL_INVALID_ARG_SIZE;
            a.big = malloc(arg_size);
            if (!a.big)
                return CL_OUT_OF_HOST_MEMORY;
            memcpy(a.big, arg_value, arg_size);
        } else {
            memcpy(a.small, arg_value, arg_size);
        }
    }
    struct vocl_karg *old = &k->kargs->a[arg_index];
    /* Same value as last time: nothing to resend. */
    if (old->set && !old->dirty && old->kind == a.kind && old->size == a.size &&
        old->id == a.id && !a.big && !old->big && !memcmp(old->small, a.small, sizeof(a.small)))
        return CL_SUCCESS;
    free(old->big);
    *old = a;
    return CL_SUCCESS;
}

/* Writes the arguments changed since the last launch. */
static void put_args(struct vocl_call *c, struct vocl_kargs *ka)
{
    uint32_t n = 0;
    for (cl_uint i = 0; i < ka->n; i++)
        n += ka->a[i].dirty;
    vocl_wr_u32(c->w, n);
    for (cl_uint i = 0; i < ka->n; i++) {
        struct vocl_karg *a = &ka->a[i];
        if (!a->dirty)
            continue;
        vocl_wr_u32(c->w, i);
        vocl_wr_u8(c->w, a->kind);
        switch (a->kind) {
        case ARG_BYTES: vocl_wr_bytes(c->w, a->big ? a->big : a->small, a->size); break;
        case ARG_MEM:
        case ARG_SAMPLER: vocl_wr_u64(c->w, a->id); break;
        default: vocl_wr_u64(c->w, a->size); break;
        }
    }
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueNDRangeKernel(
    cl_command_queue command_queue, cl_kernel kernel, cl_uint work_dim,
    const size_t *global_work_offset, const size_t *global_work_size,
    const size_t *local_work_size, cl_uint num_events_in_wait_list,
    const cl_event *event_wait_list, cl_event *event)
{
    struct vocl_call c;
    vocl_call_init(&c);
    struct vocl_obj *q = vocl_call_h(&c, command_queue, VOCL_T_QUEUE, 0);
    struct vocl_obj *k = vocl_call_h(&c, kernel, VOCL_T_KERNEL, 0);
    vocl_call_wl(&c, num_events_in_wait_list, event_wait_list);
    if (!c.err && (work_dim < 1 || work_dim > 3))
        vocl_call_error(&c, CL_INVALID_WORK_DIMENSION);
    if (!c.err && k->context != q->context)
        vocl_call_error(&c, CL_INVALID_CONTEXT);
    for (cl_uint i = 0; !c.err && i < k->kargs->n; i++)
        if (!k->kargs->a[i].set)
            vocl_call_error(&c, CL_INVALID_KERNEL_ARGS);
    if (vocl_call_start(&c, VOCL_OP_clEnqueueNDRangeKernel) == 0) {
        vocl_wr_u64(c.w, q->id);
        vocl_wr_u64(c.w, k->id);
        vocl_wr_u32(c.w, work_dim);
        vocl_call_put_va(&c, global_work_offset, sizeof(size_t), work_dim);
        vocl_call_put_va(&c, global_work_size, sizeof(size_t), work_dim);
        vocl_call_put_va(&c, local_work_size, sizeof(size_t), work_dim);
        put_args(&c, k->kargs);
        vocl_call_put_wl(&c, num_events_in_wait_list, event_wait_list);
        uint64_t ev_id = event ? vocl_call_new_id(&c) : 0;
        vocl_wr_u64(c.w, ev_id);
        if (vocl_call_post(&c) == 0) {
            /* The proxy has applied the arguments, whatever the launch does. */
            for (cl_uint i = 0; i < k->kargs->n; i++)
                k->kargs->a[i].dirty = 0;
            if (vocl_call_wait(&c) == 0 && event)
                *event = (cl_event)vocl_call_new_event(&c, ev_id, q);
        }
    }
    vocl_call_end(&c);
    return c.err;
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueTask(cl_command_queue command_queue, cl_kernel kernel,
                                              cl_uint num_events_in_wait_list,
                                              const cl_event *event_wait_list, cl_event *event)
{
    static const size_t one = 1;
    return clEnqueueNDRangeKernel(command_queue, kernel, 1, NULL, &one, &one,
                                  num_events_in_wait_list, event_wait_list, event);
}

CL_API_ENTRY cl_int CL_API_CALL clEnqueueNativeKernel(
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

int vocl_hook_clGetKernelInfo(cl_kernel kernel, cl_kernel_info param_name,
                              size_t param_value_size, void *param_value,
                              size_t *param_value_size_ret, cl_int *ret)
{
    struct vocl_obj *k = vocl_lookup(kernel, VOCL_T_KERNEL);
    const void *v;
    if (!k)
        return 0;
    switch (param_name) {
    case CL_KERNEL_CONTEXT: v = k->context; break;
    case CL_KERNEL_PROGRAM: v = k->parent; break;
    default: return 0;
    }
    *ret = vocl_info_answer(&v, sizeof(v), param_value_size, param_value, param_value_size_ret);
    return 1;
}
