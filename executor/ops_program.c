/*
 * ops_program.c - proxy handlers for programs, kernels and launches.
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* More arguments than any device's parameter space holds: a broken library. */
enum { KERNEL_ARGS_MAX = 65536 };

static cl_uint kernel_nargs(struct exec_req *q, cl_kernel k)
{
    cl_uint n = 0;
    if (q->cl->clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof(n), &n, NULL) != CL_SUCCESS)
        return 0;
    return n < KERNEL_ARGS_MAX ? n : KERNEL_ARGS_MAX;
}

/*
 * The enum vocl_arg_kind of argument i, from the native argument info.
 * Images count whatever their address qualifier (PoCL calls them global);
 * pipes are named by their packet type, with CL_KERNEL_ARG_TYPE_PIPE set.
 */
static uint8_t arg_kind(struct exec_req *q, cl_kernel k, cl_uint i)
{
    cl_kernel_arg_address_qualifier addr;
    cl_kernel_arg_type_qualifier tq;
    size_t len = 0;
    if (q->cl->clGetKernelArgInfo(k, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof(addr), &addr,
                                  NULL) != CL_SUCCESS ||
        q->cl->clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_QUALIFIER, sizeof(tq), &tq, NULL) !=
            CL_SUCCESS ||
        q->cl->clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_NAME, 0, NULL, &len) != CL_SUCCESS)
        return VOCL_ARG_UNKNOWN;
    char *type = malloc(len + 1);
    if (!type)
        return VOCL_ARG_UNKNOWN;
    uint8_t kind = VOCL_ARG_UNKNOWN;
    if (q->cl->clGetKernelArgInfo(k, i, CL_KERNEL_ARG_TYPE_NAME, len, type, NULL) == CL_SUCCESS) {
        type[len] = '\0';
        bool pointer = strchr(type, '*') != NULL;
        if ((tq & CL_KERNEL_ARG_TYPE_PIPE) || !strncmp(type, "pipe", 4) ||
            (!pointer && !strncmp(type, "image", 5) && type[5] >= '1' && type[5] <= '3'))
            kind = VOCL_ARG_IMAGE;
        else if (addr == CL_KERNEL_ARG_ADDRESS_GLOBAL || addr == CL_KERNEL_ARG_ADDRESS_CONSTANT)
            kind = VOCL_ARG_BUFFER;
        else if (addr == CL_KERNEL_ARG_ADDRESS_LOCAL)
            kind = VOCL_ARG_LOCAL;
        else if (!strcmp(type, "sampler_t"))
            kind = VOCL_ARG_SAMPLER;
        else
            kind = VOCL_ARG_VALUE;
    }
    free(type);
    return kind;
}

/* A kernel's shape in a reply: u32 argument count, then one enum
 * vocl_arg_kind byte per argument.  k may be NULL (no arguments). */
static void put_kernel_args(struct exec_req *q, cl_kernel k)
{
    cl_uint n = k ? kernel_nargs(q, k) : 0;
    uint8_t *kinds = n ? malloc(n) : NULL;
    if (n && !kinds) {
        q->w->fail = true; /* the reply says CL_OUT_OF_HOST_MEMORY (exec.c) */
        return;
    }
    for (cl_uint i = 0; i < n; i++)
        kinds[i] = arg_kind(q, k, i);
    vocl_enc_clCreateKernel_rep(q->w, &(struct vocl_msg_clCreateKernel_rep){
                                          .arg_kinds = {.n = n, .v = kinds}});
    free(kinds);
}

void exec_op_clCreateProgramWithSource(struct exec_req *q)
{
    struct vocl_msg_clCreateProgramWithSource_req m;
    vocl_dec_clCreateProgramWithSource_req(q->r, &m); /* (a bad count: the message runs out) */
    cl_context ctx = exec_h(q, m.context, VOCL_T_CONTEXT, 0);
    uint32_t count = m.strings.n;
    const char **strs = NULL;
    size_t *lens = NULL;
    cl_int err = CL_SUCCESS;

    if (!q->r->fail && (count == 0 || count > 65536))
        exec_fail(q, "source string count out of range");
    else if (!q->r->fail) {
        strs = exec_tmp(q, count * sizeof(*strs));
        lens = exec_tmp(q, count * sizeof(*lens));
        struct vocl_rd items;
        vocl_rd_init(&items, m.strings.raw, m.strings.raw_len);
        for (uint32_t i = 0; strs && lens && i < count; i++) {
            strs[i] = vocl_rd_bytes(&items, &lens[i]);
            strs[i] = lens[i] ? strs[i] : NULL;
        }
    }
    uint64_t id = exec_newobj(q, m.new_id);
    if (!exec_req_begin(q))
        return;
    /* Empty strings are legal: give the native call a non-NULL pointer. */
    for (uint32_t i = 0; i < count; i++)
        if (!strs[i])
            strs[i] = "";
    cl_program p = q->cl->clCreateProgramWithSource(ctx, count, strs, lens, &err);
    exec_reply_made(q, id, VOCL_T_PROGRAM, p, err);
}

void exec_op_clCreateProgramWithBinary(struct exec_req *q)
{
    struct vocl_msg_clCreateProgramWithBinary_req m;
    const char *why = vocl_dec_clCreateProgramWithBinary_req(q->r, &m);
    if (why)
        exec_fail(q, why);
    cl_context ctx = exec_h(q, m.context, VOCL_T_CONTEXT, 0);
    cl_uint ndev;
    const cl_device_id *devs = exec_ha(q, VOCL_T_DEVICE, &m.devices, &ndev);
    uint32_t n = m.binaries.n;
    const unsigned char **bins = NULL;
    size_t *lens = NULL;
    cl_int *status = NULL;
    cl_int err = CL_SUCCESS;

    if (q->r->fail || why)
        n = 0; /* (rejected: the reply says so) */
    else if (n != ndev)
        exec_fail(q, "binary count differs from device count");
    else if (n) {
        bins = exec_tmp(q, n * sizeof(*bins));
        lens = exec_tmp(q, n * sizeof(*lens));
        status = exec_tmp(q, n * sizeof(*status));
        struct vocl_rd items;
        vocl_rd_init(&items, m.binaries.raw, m.binaries.raw_len);
        for (uint32_t i = 0; bins && lens && i < n; i++) {
            bins[i] = vocl_rd_bytes(&items, &lens[i]);
            bins[i] = lens[i] ? bins[i] : NULL;
        }
    }
    uint64_t id = exec_newobj(q, m.new_id);
    if (!exec_req_begin(q))
        return;
    cl_program p = q->cl->clCreateProgramWithBinary(ctx, ndev, devs, lens, bins, status, &err);
    exec_reply_made(q, id, VOCL_T_PROGRAM, p, err);
    /* (status is there whenever n is not 0: a failed scratch fails the request) */
    vocl_enc_clCreateProgramWithBinary_rep(
        q->w, &(struct vocl_msg_clCreateProgramWithBinary_rep){
                  .binary_status = {.n = status ? n : 0, .v = status}});
}

/* Builds, compiles and links run on a thread of their own (build.c). */
void exec_op_clBuildProgram(struct exec_req *q)
{
    struct vocl_msg_clBuildProgram_req m;
    const char *why = vocl_dec_clBuildProgram_req(q->r, &m);
    if (why)
        exec_fail(q, why);
    struct exec_build b = {.op = q->op, .prog = exec_h(q, m.program, VOCL_T_PROGRAM, 0)};
    b.devs = exec_ha(q, VOCL_T_DEVICE, &m.devices, &b.ndev);
    b.options = exec_str(q, &m.options);
    if (exec_req_begin(q))
        exec_build(q, &b);
}

void exec_op_clCompileProgram(struct exec_req *q)
{
    struct vocl_msg_clCompileProgram_req m;
    const char *why = vocl_dec_clCompileProgram_req(q->r, &m);
    if (why)
        exec_fail(q, why);
    struct exec_build b = {.op = q->op, .prog = exec_h(q, m.program, VOCL_T_PROGRAM, 0)};
    b.devs = exec_ha(q, VOCL_T_DEVICE, &m.devices, &b.ndev);
    b.options = exec_str(q, &m.options);
    b.in = exec_ha(q, VOCL_T_PROGRAM, &m.input_headers, &b.nin);
    const char **names =
        b.nin && m.header_include_names.raw ? exec_tmp(q, b.nin * sizeof(*names)) : NULL;
    struct vocl_rd items;
    vocl_rd_init(&items, m.header_include_names.raw, m.header_include_names.raw_len);
    for (cl_uint i = 0; names && i < b.nin; i++) {
        struct vocl_str name;
        vocl_rd_sstr(&items, &name);
        names[i] = exec_str(q, &name);
        if (!names[i])
            exec_fail(q, "header without a name");
    }
    b.names = names;
    if (exec_req_begin(q))
        exec_build(q, &b);
}

void exec_op_clLinkProgram(struct exec_req *q)
{
    struct vocl_msg_clLinkProgram_req m;
    const char *why = vocl_dec_clLinkProgram_req(q->r, &m);
    if (why)
        exec_fail(q, why);
    struct exec_build b = {.op = q->op, .ctx = exec_h(q, m.context, VOCL_T_CONTEXT, 0)};
    b.devs = exec_ha(q, VOCL_T_DEVICE, &m.devices, &b.ndev);
    b.options = exec_str(q, &m.options);
    b.in = exec_ha(q, VOCL_T_PROGRAM, &m.input_programs, &b.nin);
    b.id = exec_newobj(q, m.new_id);
    if (exec_req_begin(q))
        exec_build(q, &b);
}

void exec_op_program_binaries(struct exec_req *q)
{
    struct vocl_msg_PROGRAM_BINARIES_req m;
    vocl_dec_PROGRAM_BINARIES_req(q->r, &m); /* (fixed fields: truncation is all that fails) */
    cl_program prog = exec_h(q, m.program, VOCL_T_PROGRAM, 0);
    if (!exec_req_begin(q))
        return;
    cl_uint ndev = 0;
    cl_int rc = q->cl->clGetProgramInfo(prog, CL_PROGRAM_NUM_DEVICES, sizeof(ndev), &ndev, NULL);
    size_t *sizes = rc == CL_SUCCESS && ndev ? calloc(ndev, sizeof(*sizes)) : NULL;
    unsigned char **bins = sizes ? calloc(ndev, sizeof(*bins)) : NULL;
    if (rc == CL_SUCCESS && !bins)
        rc = ndev ? CL_OUT_OF_HOST_MEMORY : CL_INVALID_PROGRAM;
    if (rc == CL_SUCCESS)
        rc = q->cl->clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, ndev * sizeof(*sizes), sizes,
                                     NULL);
    for (cl_uint i = 0; rc == CL_SUCCESS && i < ndev; i++)
        if (sizes[i] && !(bins[i] = malloc(sizes[i])))
            rc = CL_OUT_OF_HOST_MEMORY;
    if (rc == CL_SUCCESS)
        rc = q->cl->clGetProgramInfo(prog, CL_PROGRAM_BINARIES, ndev * sizeof(*bins), bins, NULL);
    vocl_wr_i32(q->w, rc);
    if (rc == CL_SUCCESS)
        vocl_enc_PROGRAM_BINARIES_rep(q->w, &(struct vocl_msg_PROGRAM_BINARIES_rep){
                                                .binaries = {.n = ndev,
                                                             .p = (const void *const *)bins,
                                                             .len = sizes}});
    for (cl_uint i = 0; bins && i < ndev; i++)
        free(bins[i]);
    free(bins);
    free(sizes);
}

void exec_op_clCreateKernel(struct exec_req *q)
{
    struct vocl_msg_clCreateKernel_req m;
    vocl_dec_clCreateKernel_req(q->r, &m); /* (no counts: truncation is all that fails) */
    cl_program prog = exec_h(q, m.program, VOCL_T_PROGRAM, 0);
    const char *name = exec_str(q, &m.kernel_name);
    uint64_t id = exec_newobj(q, m.new_id);
    cl_int err = CL_SUCCESS;
    if (!exec_req_begin(q))
        return;
    cl_kernel k = q->cl->clCreateKernel(prog, name, &err);
    /* As exec_reply_made, but the arguments are read before the kernel is
     * recorded: a refused id releases it. */
    vocl_wr_i32(q->w, k ? CL_SUCCESS : err);
    put_kernel_args(q, k);
    if (k)
        exec_put_new(q, id, VOCL_T_KERNEL, k);
}

/* CL_KERNEL_FUNCTION_NAME as a string; "" when the native call fails. */
static void put_kernel_name(struct exec_req *q, cl_kernel k)
{
    size_t len = 0;
    char *name = NULL;
    if (q->cl->clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, 0, NULL, &len) == CL_SUCCESS && len)
        name = malloc(len);
    if (name && q->cl->clGetKernelInfo(k, CL_KERNEL_FUNCTION_NAME, len, name, NULL) == CL_SUCCESS)
        vocl_wr_bytes(q->w, name, strnlen(name, len));
    else
        vocl_wr_str(q->w, "");
    free(name);
}

void exec_op_clCreateKernelsInProgram(struct exec_req *q)
{
    struct vocl_msg_clCreateKernelsInProgram_req m;
    const char *why = vocl_dec_clCreateKernelsInProgram_req(q->r, &m);
    if (why)
        exec_fail(q, why);
    cl_program prog = exec_h(q, m.program, VOCL_T_PROGRAM, 0);
    uint32_t nids;
    const uint64_t *ids = exec_newids(q, &m.new_ids, &nids, 65536);
    cl_kernel *ks = nids ? exec_tmp(q, nids * sizeof(*ks)) : NULL;
    cl_uint nret = 0;
    if (!exec_req_begin(q))
        return;
    cl_int rc = q->cl->clCreateKernelsInProgram(prog, nids, ks, &nret);
    vocl_wr_i32(q->w, rc);
    if (rc != CL_SUCCESS)
        return;
    vocl_wr_u32(q->w, nret);
    /* Per kernel made: its name (the client has not asked for it by name),
     * then its arguments as clCreateKernel sends them. */
    for (cl_uint i = 0; ks && i < nret && i < nids; i++) {
        put_kernel_name(q, ks[i]);
        put_kernel_args(q, ks[i]);
        exec_put_new(q, ids[i], VOCL_T_KERNEL, ks[i]);
    }
}

void exec_op_clCloneKernel(struct exec_req *q)
{
    struct vocl_msg_clCloneKernel_req m;
    vocl_dec_clCloneKernel_req(q->r, &m); /* (fixed fields: truncation is all that fails) */
    cl_kernel src = exec_h(q, m.source_kernel, VOCL_T_KERNEL, 0);
    uint64_t id = exec_newobj(q, m.new_id);
    cl_int err = CL_SUCCESS;
    if (!exec_req_begin(q))
        return;
    cl_kernel k = q->cl->clCloneKernel(src, &err);
    exec_reply_made(q, id, VOCL_T_KERNEL, k, err);
}

/*
 * Kernel arguments travel with the launch: u32 count, then per argument
 * u32 index, u8 kind (enum vocl_launch_arg, from cl_api.def), and the value
 * (bytes, an id, or a __local size).
 * Only arguments changed since the last launch are sent: the native kernel
 * keeps the others.
 */

/* A NULL object, which the spec allows for a buffer argument (the client
 * sends it as bytes when it cannot tell the argument is an object). */
static bool is_null_handle(const void *v)
{
    void *h;
    memcpy(&h, v, sizeof(h));
    return h == NULL;
}

/*
 * Whether argument i of k takes an object: the driver reads its value as a
 * handle, so it must come as an id (VOCL_LARG_MEM, VOCL_LARG_SAMPLER), never as bytes
 * (a forged handle, or another session's).  Unknown without argument info.
 */
static bool takes_object(struct exec_req *q, cl_kernel k, cl_uint i)
{
    uint8_t kind = arg_kind(q, k, i);
    return kind == VOCL_ARG_BUFFER || kind == VOCL_ARG_IMAGE || kind == VOCL_ARG_SAMPLER;
}

/* Applies the arguments the decoder checked (k NULL: only their errors). */
static cl_int set_args(struct exec_req *q, cl_kernel k, const struct vocl_launch_args *args)
{
    cl_int rc = CL_SUCCESS;
    struct vocl_rd it;
    struct vocl_karg_wire a;
    vocl_rd_init(&it, args->raw, args->raw_len);
    while (vocl_kargs_next(&it, &a)) {
        cl_int r = CL_SUCCESS;
        if (a.kind == VOCL_LARG_BYTES) {
            size_t len = (size_t)a.len;
            if (k && len == sizeof(cl_mem) && !is_null_handle(a.p) && takes_object(q, k, a.index))
                r = CL_INVALID_ARG_VALUE;
            else if (k)
                r = q->cl->clSetKernelArg(k, a.index, len, len ? a.p : NULL);
        } else if (a.kind == VOCL_LARG_MEM || a.kind == VOCL_LARG_SAMPLER) {
            enum vocl_type t = a.kind == VOCL_LARG_MEM ? VOCL_T_MEM : VOCL_T_SAMPLER;
            struct exec_obj *o = a.v ? exec_lookup(q->s, a.v, t) : NULL;
            if (a.v && !o)
                r = CL_INVALID_ARG_VALUE;
            else if (k)
                r = q->cl->clSetKernelArg(k, a.index, sizeof(void *), o ? &o->native : NULL);
        } else { /* VOCL_LARG_LOCAL (the decoder refuses any other kind) */
            if (k)
                r = q->cl->clSetKernelArg(k, a.index, (size_t)a.v, NULL);
        }
        if (rc == CL_SUCCESS)
            rc = r;
    }
    return rc;
}

void exec_op_clEnqueueNDRangeKernel(struct exec_req *q)
{
    struct vocl_msg_clEnqueueNDRangeKernel_req m;
    const char *why = vocl_dec_clEnqueueNDRangeKernel_req(q->r, &m);
    if (why)
        exec_fail(q, why);
    cl_command_queue queue = exec_h(q, m.queue, VOCL_T_QUEUE, 0);
    cl_kernel k = exec_h(q, m.kernel, VOCL_T_KERNEL, 0);
    cl_uint dim = m.work_dim > 3 ? 0 : m.work_dim;
    const size_t *offset = exec_va3(q, &m.global_work_offset);
    const size_t *global = exec_va3(q, &m.global_work_size);
    const size_t *local = exec_va3(q, &m.local_work_size);
    /* The arguments are decoded whole first, and applied only if the whole
     * request is well formed, so a rejected message changes nothing.  A
     * request that is well formed applies its arguments even if the launch
     * then fails (a stale event, say), as the application's clSetKernelArg
     * calls would have natively; a bad argument fails the launch. */
    cl_int arg_err = set_args(q, NULL, &m.args);
    cl_uint nwl;
    const cl_event *wl = exec_ha(q, VOCL_T_EVENT, &m.wait_list, &nwl);
    uint64_t ev_id = exec_newid(q, m.event);
    cl_event ev = NULL;
    if (!q->fail && !q->r->fail && q->r->p == q->r->end && k)
        arg_err = set_args(q, k, &m.args);
    if (!exec_req_begin(q))
        return;
    if (arg_err != CL_SUCCESS) {
        vocl_wr_i32(q->w, arg_err);
        return;
    }
    cl_int rc = q->cl->clEnqueueNDRangeKernel(queue, k, dim, offset, global, local, nwl, wl,
                                              ev_id ? &ev : NULL);
    exec_put_event(q, rc, ev_id, ev);
    vocl_wr_i32(q->w, rc);
}
