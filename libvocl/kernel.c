/*
 * kernel.c - kernels and the kernel-argument cache.
 *
 * clSetKernelArg sends nothing: the value is kept here and travels with the
 * next launch, and an argument unchanged since the last launch is not sent
 * again (the proxy's native kernel still holds it).  So that it can still
 * return the errors the spec asks of it, every argument has a declared kind
 * (enum vocl_arg_kind), fixed when the kernel is made:
 *   - from the source, read by kernelparse at clCreateProgramWithSource (a
 *     linked program looks in its inputs' sources), with the size of
 *     built-in scalar and vector value types unless the source has #if;
 *   - else (binaries, built-in kernels, source the parser could not read,
 *     that defines a macro or the kernel twice, or an argument type it
 *     cannot resolve) from the proxy, which reads the native argument info
 *     and sends a kind byte per argument with the kernel;
 *   - where the proxy has no argument info either, the kind is unknown and
 *     the value decides: a pointer-sized value that is a live VOCL memory
 *     object or sampler of the kernel's proxy is one.
 * Where the two disagree the proxy's answer (the native truth) wins.
 *
 * The cache itself is in kargs.h; launch.c sends it.
 */
#include "vocl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kargs.h"
#include "kernelparse.h"

void vocl_kargs_free(struct vocl_kargs *k)
{
    for (cl_uint i = 0; k && i < k->n; i++)
        free(k->a[i].big);
    if (k)
        pthread_mutex_destroy(&k->shape_lock);
    free(k);
}

static struct vocl_kargs *kargs_new(cl_uint n)
{
    struct vocl_kargs *k = calloc(1, sizeof(*k) + n * sizeof(k->a[0]));
    if (k) {
        k->n = n;
        pthread_mutex_init(&k->shape_lock, NULL);
    }
    return k;
}

/*
 * Reads a kernel's arguments from a reply: u32 count, then a kind byte each
 * (so the count cannot exceed what the reply holds).  NULL with c->err set
 * on a short reply or no memory.
 */
static struct vocl_kargs *kargs_read(struct vocl_call *c)
{
    struct vocl_msg_clCreateKernel_rep rep;
    if (vocl_dec_clCreateKernel_rep(&c->r, &rep) || c->r.fail) {
        vocl_call_error(c, CL_OUT_OF_RESOURCES);
        return NULL;
    }
    struct vocl_kargs *ka = kargs_new(rep.arg_kinds.n);
    if (!ka) {
        vocl_call_error(c, CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    for (cl_uint i = 0; i < rep.arg_kinds.n; i++) {
        uint8_t kind = vocl_u8s_at(&rep.arg_kinds, i);
        ka->a[i].decl = kind <= VOCL_ARG_VALUE ? kind : VOCL_ARG_UNKNOWN;
    }
    return ka;
}

/*
 * Bytes of a built-in scalar or vector type as kernelparse writes it
 * ("float4", "unsigned int"), a 3-vector counting as 4 elements; 0 for any
 * other name.  (bool, size_t and the like cannot be kernel arguments.)
 */
static size_t builtin_size(const char *type)
{
    static const struct {
        const char *name;
        size_t size;
    } scalars[] = {
        {"char", 1}, {"uchar", 1}, {"short", 2}, {"ushort", 2}, {"int", 4},    {"uint", 4},
        {"long", 8}, {"ulong", 8}, {"half", 2},  {"float", 4},  {"double", 8},
    };
    char buf[32];
    if (!strcmp(type, "unsigned")) {
        type = "uint";
    } else if (!strncmp(type, "unsigned ", 9)) {
        snprintf(buf, sizeof(buf), "u%s", type + 9);
        type = buf;
    } else if (!strncmp(type, "signed ", 7)) {
        type += 7;
    }
    for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++) {
        size_t len = strlen(scalars[i].name);
        if (strncmp(type, scalars[i].name, len))
            continue;
        const char *lanes = type + len;
        if (!*lanes)
            return scalars[i].size;
        if (!strcmp(lanes, "3"))
            return 4 * scalars[i].size;
        if (!strcmp(lanes, "2") || !strcmp(lanes, "4") || !strcmp(lanes, "8") ||
            !strcmp(lanes, "16"))
            return (size_t)atoi(lanes) * scalars[i].size;
    }
    return 0;
}

/* The one kernel called name in p's source (or its inputs'); NULL when
 * unknown or defined twice (#if branches: the parser reads them all). */
static const struct kp_kernel *program_kernel(const struct vocl_obj *program, const char *name,
                                              bool *cond)
{
    const struct vocl_program *p = vocl_as_program(program);
    if (p->kp) {
        const struct kp_kernel *found = NULL;
        for (unsigned i = 0; i < p->kp->nkernels; i++) {
            if (strcmp(p->kp->kernels[i].name, name))
                continue;
            if (found)
                return NULL;
            found = &p->kp->kernels[i];
        }
        *cond = p->kp_cond;
        return found;
    }
    for (cl_uint i = 0; i < p->ninputs; i++) {
        const struct kp_kernel *kk = program_kernel(p->inputs[i], name, cond);
        if (kk)
            return kk;
    }
    return NULL;
}

static uint8_t kp_kind(enum kp_arg_kind k)
{
    switch (k) {
    case KP_ARG_VALUE: return VOCL_ARG_VALUE;
    case KP_ARG_GLOBAL_PTR:
    case KP_ARG_CONSTANT_PTR: return VOCL_ARG_BUFFER;
    case KP_ARG_LOCAL_PTR: return VOCL_ARG_LOCAL;
    case KP_ARG_IMAGE:
    case KP_ARG_PIPE: return VOCL_ARG_IMAGE;
    case KP_ARG_SAMPLER: return VOCL_ARG_SAMPLER;
    case KP_ARG_PRIVATE_PTR: /* not a legal kernel argument: the build fails */
    case KP_ARG_QUEUE:       /* device-side queues are not forwarded */
        break;
    }
    return VOCL_ARG_UNKNOWN;
}

/* What a new kernel's creation told: its name and how many arguments it
 * has, kept as clGetKernelInfo's answers (info.c). */
static void kernel_known(struct vocl_obj *k, const char *name)
{
    vocl_info_know(k, VOCL_OP_clGetKernelInfo, CL_KERNEL_FUNCTION_NAME, name, strlen(name) + 1);
    const struct vocl_kargs *ka = vocl_as_kernel(k)->kargs;
    if (ka)
        vocl_info_know(k, VOCL_OP_clGetKernelInfo, CL_KERNEL_NUM_ARGS, &ka->n, sizeof(ka->n));
}

/*
 * Declares the arguments of kernel name of program p, whose kinds from the
 * proxy are already in ka: the source's kinds take their place where the
 * proxy knows none, when the source has the kernel with as many arguments.
 */
static void kargs_declare(struct vocl_kargs *ka, const struct vocl_obj *p, const char *name)
{
    bool cond = false;
    const struct kp_kernel *kk = program_kernel(p, name, &cond);
    if (!kk || kk->nargs != ka->n) {
        vocl_debug("kernel %s: argument kinds from the proxy (%s)", name,
                   kk ? "the source disagrees on the count" : "not in a parsed source");
        return;
    }
    for (cl_uint i = 0; i < ka->n; i++) {
        struct vocl_karg *a = &ka->a[i];
        const char *type = kk->args[i].type_name;
        uint8_t kind = kp_kind(kk->args[i].kind);
        size_t size = kind == VOCL_ARG_VALUE ? builtin_size(type) : 0;
        /* A bare name that is no built-in type may be a typedef, or a macro
         * from a header or a -D option that stands for a pointer: unknown. */
        if (kind == VOCL_ARG_VALUE && !size && strncmp(type, "struct ", 7) &&
            strncmp(type, "union ", 6) && strncmp(type, "enum ", 5))
            kind = VOCL_ARG_UNKNOWN;
        if (a->decl != VOCL_ARG_UNKNOWN && kind != a->decl) {
            if (kind != VOCL_ARG_UNKNOWN)
                vocl_debug("kernel %s: argument %u: the proxy's kind %u, not the source's %u",
                           name, i, a->decl, kind);
            continue;
        }
        a->decl = kind;
        a->decl_size = cond ? 0 : (uint16_t)size;
        a->ro = kk->args[i].kind == KP_ARG_CONSTANT_PTR ||
                (kk->args[i].kind == KP_ARG_GLOBAL_PTR && kk->args[i].is_const) ||
                (kk->args[i].kind == KP_ARG_IMAGE && kk->args[i].access == KP_ACCESS_READ_ONLY);
    }
}

/* --- kernels ------------------------------------------------------------------------------------------------ */

cl_kernel CL_API_CALL vocl_hand_clCreateKernel(cl_program program, const char *kernel_name,
                                                  cl_int *errcode_ret)
{
    struct vocl_call c;
    struct vocl_obj *k = NULL;
    vocl_call_init(&c);
    struct vocl_obj *p = vocl_call_h(&c, program, VOCL_T_PROGRAM, 0);
    if (!c.err && !kernel_name)
        vocl_call_error(&c, CL_INVALID_VALUE);
    /* A kernel the source shows, of a built program: nothing the proxy
     * could say is unknown here, so the creation does not wait. */
    struct vocl_kargs *known = NULL;
    const struct kp_kernel *kk = NULL;
    bool cond = false;
    if (!c.err && vocl_as_program(p)->built && (kk = program_kernel(p, kernel_name, &cond)) &&
        !cond && (known = kargs_new(kk->nargs)))
        kargs_declare(known, p, kernel_name);
    /* In a context spanning proxies, a proxy whose devices the program was
     * not built for has no such kernel: only the others make one. */
    cl_uint nrep = vocl_nreps(p);
    cl_int missing = CL_SUCCESS;
    c.async = known != NULL && nrep == 1;
    for (cl_uint rep = 0; vocl_call_each(&c, p, rep); rep++) {
        if (!vocl_id_on(p, c.px) || vocl_call_start(&c, VOCL_OP_clCreateKernel))
            continue;
        uint64_t id = vocl_call_new_id(&c);
        vocl_enc_clCreateKernel_req(c.w, &(struct vocl_msg_clCreateKernel_req){
                                             .program = vocl_id_on(p, c.px),
                                             .kernel_name = vocl_str_of(kernel_name),
                                             .new_id = id});
        struct vocl_kargs *ka = NULL;
        if (vocl_call_send(&c) == 0 && !k) {
            ka = known && c.async ? known : kargs_read(&c);
            if (ka == known)
                known = NULL;
        }
        if (nrep > 1 && c.err == CL_INVALID_PROGRAM_EXECUTABLE) {
            missing = c.err;
            c.err = CL_SUCCESS;
            continue;
        }
        bool first = !k;
        if (vocl_call_made(&c, &k, rep, nrep, VOCL_T_KERNEL, id, p->context, p) && first) {
            if (ka)
                kargs_declare(ka, p, kernel_name);
            vocl_as_kernel(k)->kargs = ka;
            ka = NULL;
            kernel_known(k, kernel_name);
        }
        vocl_kargs_free(ka);
    }
    vocl_call_end(&c);
    if (!c.err && !k)
        c.err = missing ? missing : CL_INVALID_PROGRAM_EXECUTABLE;
    if (c.err && k) {
        clReleaseKernel((cl_kernel)k);
        k = NULL;
    }
    vocl_kargs_free(known); /* not used: the call failed before it was sent */
    if (errcode_ret)
        *errcode_ret = c.err;
    return (cl_kernel)k;
}

/* A clCreateKernelsInProgram request of program id for n new kernels:
 * returns the first new id (the others follow it). */
static uint64_t kernels_request(struct vocl_call *c, uint64_t program, cl_uint n)
{
    uint64_t first = atomic_fetch_add(&c->px->next_id, n);
    uint64_t *ids = n ? malloc(n * sizeof(*ids)) : NULL;
    if (n && !ids) {
        vocl_call_error(c, CL_OUT_OF_HOST_MEMORY);
        n = 0;
    }
    for (cl_uint i = 0; i < n; i++)
        ids[i] = first + i;
    vocl_enc_clCreateKernelsInProgram_req(c->w, &(struct vocl_msg_clCreateKernelsInProgram_req){
                                                    .program = program,
                                                    .new_ids = {.n = n, .v = ids}});
    free(ids);
    return first;
}

cl_int CL_API_CALL vocl_hand_clCreateKernelsInProgram(cl_program program, cl_uint num_kernels,
                                                         cl_kernel *kernels,
                                                         cl_uint *num_kernels_ret)
{
    struct vocl_call c;
    vocl_call_init(&c);
    struct vocl_obj *p = vocl_call_h(&c, program, VOCL_T_PROGRAM, 0);
    cl_uint nids = kernels ? num_kernels : 0;
    cl_uint got = 0, made = 0, objs = 0;
    struct vocl_kargs **kas = NULL;
    char **names = NULL;
    if (vocl_call_start(&c, VOCL_OP_clCreateKernelsInProgram) == 0) {
        uint64_t first = kernels_request(&c, p->id, nids);
        if (vocl_call_send(&c) == 0) {
            got = vocl_rd_u32(&c.r);
            made = got < nids ? got : nids;
            kas = calloc(made ? made : 1, sizeof(*kas));
            names = calloc(made ? made : 1, sizeof(*names));
            if (!kas || !names)
                vocl_call_error(&c, CL_OUT_OF_HOST_MEMORY);
        }
        /* Per kernel: its name, then its arguments as clCreateKernel has them. */
        for (cl_uint i = 0; !c.err && i < made; i++) {
            size_t len;
            bool is_null;
            const char *name = vocl_rd_str(&c.r, &len, &is_null);
            char *cname = c.r.fail ? NULL : strndup(name ? name : "", len);
            if (!c.r.fail && !cname)
                vocl_call_error(&c, CL_OUT_OF_HOST_MEMORY);
            kas[i] = c.err ? NULL : kargs_read(&c);
            if (kas[i])
                kargs_declare(kas[i], p, cname);
            names[i] = cname;
        }
        if (c.r.fail)
            vocl_call_error(&c, CL_OUT_OF_RESOURCES);
        for (; !c.err && objs < made; objs++) {
            struct vocl_obj *k =
                vocl_call_new_obj(&c, VOCL_T_KERNEL, first + objs, p->context, p);
            if (!k)
                break;
            vocl_as_kernel(k)->kargs = kas[objs];
            kas[objs] = NULL;
            kernel_known(k, names[objs]);
            kernels[objs] = (cl_kernel)k;
        }
    }
    vocl_call_end(&c);
    /* That was the first proxy of the program; the others add replicas. */
    cl_uint nrep = vocl_nreps(p);
    for (cl_uint rep = 1; objs && rep < nrep && !c.err; rep++) {
        c.px = vocl_rep_px(p, rep);
        if (!vocl_id_on(p, c.px) || vocl_call_start(&c, VOCL_OP_clCreateKernelsInProgram))
            continue;
        uint64_t first = kernels_request(&c, vocl_id_on(p, c.px), nids);
        if (vocl_call_send(&c) == 0 && vocl_rd_u32(&c.r) != got)
            vocl_call_error(&c, CL_INVALID_PROGRAM_EXECUTABLE);
        for (cl_uint i = 0; !c.err && i < objs; i++) {
            struct vocl_obj *k = (struct vocl_obj *)kernels[i];
            if (vocl_obj_add_rep(k, 0, nrep, k->px, k->id) ||
                vocl_obj_add_rep(k, rep, nrep, c.px, first + i)) {
                vocl_call_error(&c, CL_OUT_OF_HOST_MEMORY);
                break;
            }
        }
        vocl_call_end(&c);
    }
    for (cl_uint i = 0; kas && i < made; i++)
        vocl_kargs_free(kas[i]);
    for (cl_uint i = 0; names && i < made; i++)
        free(names[i]);
    free(kas);
    free(names);
    /* All or nothing: the kernels made before a failure go again. */
    for (cl_uint i = 0; c.err && i < objs; i++)
        clReleaseKernel(kernels[i]);
    if (c.err == CL_SUCCESS && num_kernels_ret)
        *num_kernels_ret = got;
    return c.err;
}

cl_kernel CL_API_CALL vocl_hand_clCloneKernel(cl_kernel source_kernel, cl_int *errcode_ret)
{
    struct vocl_call c;
    struct vocl_obj *k = NULL;
    vocl_call_init(&c);
    struct vocl_obj *src = vocl_call_h(&c, source_kernel, VOCL_T_KERNEL, 0);
    for (cl_uint rep = 0; vocl_call_each(&c, src, rep); rep++) {
        if (!vocl_id_on(src, c.px) || vocl_call_start(&c, VOCL_OP_clCloneKernel))
            continue;
        uint64_t id = vocl_call_new_id(&c);
        vocl_enc_clCloneKernel_req(c.w, &(struct vocl_msg_clCloneKernel_req){
                                            .source_kernel = vocl_id_on(src, c.px), .new_id = id});
        if (vocl_call_send(&c) == 0)
            vocl_call_made(&c, &k, rep, vocl_nreps(src), VOCL_T_KERNEL, id, src->context,
                           src->parent);
    }
    vocl_call_end(&c);
    if (c.err && k) {
        clReleaseKernel((cl_kernel)k);
        k = NULL;
    }
    if (k) {
        /* The native clone has the source's arguments: so does the cache. */
        const struct vocl_kargs *from = vocl_as_kernel(src)->kargs;
        struct vocl_kargs *to = kargs_new(from->n);
        vocl_as_kernel(k)->kargs = to;
        for (cl_uint i = 0; to && i < from->n; i++) {
            to->a[i] = from->a[i];
            to->a[i].big = NULL;
            if (from->a[i].big) {
                to->a[i].big = malloc(from->a[i].size);
                if (to->a[i].big)
                    memcpy(to->a[i].big, from->a[i].big, from->a[i].size);
                else
                    to->a[i].set = 0;
            }
        }
        if (!to) {
            clReleaseKernel((cl_kernel)k);
            k = NULL;
            c.err = CL_OUT_OF_HOST_MEMORY;
        }
    }
    if (errcode_ret)
        *errcode_ret = c.err;
    return (cl_kernel)k;
}

/*
 * The errors clSetKernelArg owes for an argument declared as d, in the order
 * PoCL checks them, so a remote call fails as the native one does:
 *   __local: a value, then a zero size;
 *   anything else: a NULL arg_value (a buffer may have one), then the size.
 * PoCL 3.1 differs from the spec, and is followed, in that it answers
 * CL_INVALID_ARG_VALUE (not CL_INVALID_SAMPLER) for a NULL sampler
 * arg_value, and takes a value of 3/4 of its type's size (12 bytes for a
 * float3 as the spec has it, but for a float4 or 3 for an int too).
 */
static cl_int arg_check(const struct vocl_karg *d, size_t size, const void *value)
{
    switch (d->decl) {
    case VOCL_ARG_LOCAL:
        if (value)
            return CL_INVALID_ARG_VALUE;
        return size ? CL_SUCCESS : CL_INVALID_ARG_SIZE;
    case VOCL_ARG_BUFFER: return size == sizeof(cl_mem) ? CL_SUCCESS : CL_INVALID_ARG_SIZE;
    case VOCL_ARG_IMAGE:
    case VOCL_ARG_SAMPLER:
        if (!value)
            return CL_INVALID_ARG_VALUE;
        return size == sizeof(cl_mem) ? CL_SUCCESS : CL_INVALID_ARG_SIZE;
    case VOCL_ARG_VALUE:
        if (!value)
            return CL_INVALID_ARG_VALUE;
        if (d->decl_size && size != d->decl_size &&
            !(size % 3 == 0 && size / 3 * 4 == d->decl_size))
            return CL_INVALID_ARG_SIZE;
        return CL_SUCCESS;
    default: return CL_SUCCESS;
    }
}

cl_int CL_API_CALL vocl_hand_clSetKernelArg(cl_kernel kernel, cl_uint arg_index,
                                               size_t arg_size, const void *arg_value)
{
    cl_int err = vocl_init();
    if (err != CL_SUCCESS)
        return err;
    struct vocl_obj *k = vocl_lookup(kernel, VOCL_T_KERNEL);
    if (!k)
        return CL_INVALID_KERNEL;
    struct vocl_kargs *kargs = vocl_as_kernel(k)->kargs;
    if (arg_index >= kargs->n)
        return CL_INVALID_ARG_INDEX;
    struct vocl_karg *old = &kargs->a[arg_index];
    err = arg_check(old, arg_size, arg_value);
    if (err != CL_SUCCESS)
        return err;

    struct vocl_karg a = {
        .set = 1, .size = arg_size, .decl = old->decl, .ro = old->ro, .decl_size = old->decl_size};
    /* The handle a pointer-sized value holds; NULL travels as the bytes it is. */
    const void *hv = arg_value && arg_size == sizeof(void *) ? *(void *const *)arg_value : NULL;
    struct vocl_obj *h = NULL;
    switch (a.decl) {
    case VOCL_ARG_BUFFER:
    case VOCL_ARG_IMAGE:
        /* PoCL 3.1 takes any pointer here; an address that is no VOCL object
         * means nothing to the proxy, so this follows the spec. */
        if (hv && !(h = vocl_lookup(hv, VOCL_T_MEM)))
            return CL_INVALID_MEM_OBJECT;
        break;
    case VOCL_ARG_SAMPLER:
        if (hv && !(h = vocl_lookup(hv, VOCL_T_SAMPLER)))
            return CL_INVALID_SAMPLER; /* as above: PoCL 3.1 does not check */
        break;
    case VOCL_ARG_LOCAL:
    case VOCL_ARG_VALUE: break;
    default:
        /* Unknown: the value decides. */
        if (hv && !(h = vocl_lookup(hv, VOCL_T_MEM)))
            h = vocl_lookup(hv, VOCL_T_SAMPLER);
        break;
    }

    if (!arg_value) {
        /* __local memory, or a NULL buffer: the native call tells them apart. */
        a.kind = VOCL_LARG_LOCAL;
    } else if (h) {
        if (vocl_ctx_of(h) != k->context)
            return CL_INVALID_ARG_VALUE; /* an object of another context */
        a.kind = h->type == VOCL_T_MEM ? VOCL_LARG_MEM : VOCL_LARG_SAMPLER;
        a.obj = h;
        a.serial = h->serial;
    } else {
        a.kind = VOCL_LARG_BYTES;
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
    /* Same value as last time: nothing to resend. */
    if (old->set && old->kind == a.kind && old->size == a.size && old->obj == a.obj &&
        old->serial == a.serial && !a.big && !old->big &&
        !memcmp(old->small, a.small, sizeof(a.small)))
        return CL_SUCCESS;
    free(old->big);
    *old = a;
    return CL_SUCCESS;
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
