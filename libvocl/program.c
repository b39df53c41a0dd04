/*
 * program.c - programs, kernels, the kernel-argument cache and launches.
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
 */
#include "vocl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelparse.h"
#include "thread.h"

struct vocl_karg {
    uint8_t set, kind; /* kind: how it travels (enum vocl_launch_arg, cl_api.def) */
    uint8_t decl;       /* enum vocl_arg_kind */
    uint8_t ro;         /* a buffer or image the kernel cannot write (const, read_only) */
    uint16_t decl_size; /* decl VALUE of a built-in type: its size; else 0 */
    /* The kernel's replicas that have this value (bit per replica): atomic,
     * as two threads may enqueue one kernel at once. */
    _Atomic uint64_t sent;
    size_t size;
    /* VOCL_LARG_MEM, VOCL_LARG_SAMPLER (NULL: NULL): not held, as a driver does not
     * retain them, so a release frees the object (and runs its destructor
     * callbacks); hold_args finds it again by address and serial. */
    struct vocl_obj *obj;
    uint64_t serial;
    uint8_t small[16]; /* VOCL_LARG_BYTES up to 16 bytes */
    uint8_t *big;      /* VOCL_LARG_BYTES above */
};

/*
 * A launch shape the driver accepted: work dimensions, local size (0: none
 * given) and whether the global size is a multiple of it.  Whether a launch
 * has a valid work-group size (reqd_work_group_size, non-uniform groups,
 * the device's limits) depends on nothing else, and a driver says so at
 * once; so the first launch of each shape waits for the proxy's answer, and
 * the later ones do not (their other errors are deferred, libvocl(7)).
 */
struct vocl_shape {
    cl_uint dim;
    bool uniform;
    size_t local[3];
    uint64_t ok; /* the kernel's replicas (bit each) that accepted it */
};
enum { SHAPES = 8 };

struct vocl_kargs {
    cl_uint n;
    pthread_mutex_t shape_lock;
    struct vocl_shape shape[SHAPES];
    unsigned nshape, next_shape; /* filled, and the next to reuse once full */
    struct vocl_karg a[];
};

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
static const struct kp_kernel *program_kernel(const struct vocl_obj *p, const char *name,
                                              bool *cond)
{
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

struct src_name {
    const char *p;
    size_t n;
};

static int src_name_cmp(const void *a, const void *b)
{
    const struct src_name *x = a, *y = b;
    int c = memcmp(x->p, y->p, x->n < y->n ? x->n : y->n);
    return c ? c : (x->n > y->n) - (x->n < y->n);
}

static const char *skip_blanks(const char *s, const char *end)
{
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    return s;
}

/*
 * What the parser cannot see through, from the source's directives:
 * *cond, a conditional (-D options may then change a type); *twice, a
 * macro defined twice (in #if branches, all of which the parser reads, so
 * it may have taken the wrong one).  Errs on the side of true.
 */
static void src_directives(const char *src, size_t len, bool *cond, bool *twice)
{
    struct src_name *names = NULL;
    size_t n = 0, cap = 0;
    const char *end = src + len;
    *cond = *twice = false;
    for (const char *line = src; line < end;) {
        const char *eol = memchr(line, '\n', (size_t)(end - line));
        eol = eol ? eol : end;
        const char *t = skip_blanks(line, eol);
        line = eol < end ? eol + 1 : end;
        if (t == eol || *t != '#')
            continue;
        t = skip_blanks(t + 1, eol);
        if ((eol - t >= 2 && !strncmp(t, "if", 2)) || (eol - t >= 4 && !strncmp(t, "elif", 4)))
            *cond = true;
        if (eol - t < 7 || strncmp(t, "define", 6) || (t[6] != ' ' && t[6] != '\t'))
            continue;
        t = skip_blanks(t + 6, eol);
        size_t w = 0;
        while (t + w < eol && (t[w] == '_' || (t[w] >= '0' && t[w] <= '9') ||
                               ((t[w] | 0x20) >= 'a' && (t[w] | 0x20) <= 'z')))
            w++;
        if (n == cap) {
            struct src_name *more = realloc(names, (cap = cap ? 2 * cap : 64) * sizeof(*more));
            if (!more) {
                *twice = true;
                break;
            }
            names = more;
        }
        names[n++] = (struct src_name){t, w};
    }
    if (n)
        qsort(names, n, sizeof(*names), src_name_cmp);
    for (size_t i = 1; i < n; i++)
        if (!src_name_cmp(&names[i - 1], &names[i]))
            *twice = true;
    free(names);
}

/*
 * Reads the kernel signatures of p's source.  Not being able to is no error
 * of the application's: its kernels then get their kinds from the proxy.
 */
static void program_parse(struct vocl_obj *p, cl_uint count, const char **strings,
                          const size_t *lengths)
{
    size_t total = 0;
    for (cl_uint i = 0; i < count; i++)
        total += lengths && lengths[i] ? lengths[i] : strlen(strings[i]);
    char *src = malloc(total ? total : 1);
    if (!src) {
        vocl_info("no memory to read the kernel signatures of a program");
        return;
    }
    size_t at = 0;
    for (cl_uint i = 0; i < count; i++) {
        size_t len = lengths && lengths[i] ? lengths[i] : strlen(strings[i]);
        memcpy(src + at, strings[i], len);
        at += len;
    }
    char err[160];
    bool twice;
    src_directives(src, total, &p->kp_cond, &twice);
    if (twice)
        vocl_info("kernel signatures not read (a macro is defined twice): argument kinds will "
                  "come from the proxy");
    else if (kp_parse(src, total, &p->kp, err, sizeof(err)) != KP_OK)
        vocl_info("kernel signatures not read (%s): argument kinds will come from the proxy",
                  err);
    free(src);
}

cl_program CL_API_CALL vocl_hand_clCreateProgramWithSource(cl_context context, cl_uint count,
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
    for (cl_uint rep = 0; vocl_call_each(&c, ctx, rep); rep++) {
        if (vocl_call_start(&c, VOCL_OP_clCreateProgramWithSource))
            break;
        size_t *lens = malloc(count * sizeof(*lens));
        if (!lens) {
            vocl_call_error(&c, CL_OUT_OF_HOST_MEMORY);
            break;
        }
        for (cl_uint i = 0; i < count; i++)
            lens[i] = lengths && lengths[i] ? lengths[i] : strlen(strings[i]);
        uint64_t id = vocl_call_new_id(&c);
        vocl_enc_clCreateProgramWithSource_req(
            c.w, &(struct vocl_msg_clCreateProgramWithSource_req){
                     .context = vocl_id_on(ctx, c.px),
                     .strings = {.n = count, .p = (const void *const *)strings, .len = lens},
                     .new_id = id});
        free(lens);
        if (vocl_call_send(&c) == 0)
            vocl_call_made(&c, &p, rep, vocl_nreps(ctx), VOCL_T_PROGRAM, id, ctx, NULL);
    }
    vocl_call_end(&c);
    if (c.err && p) {
        clReleaseProgram((cl_program)p);
        p = NULL;
    }
    if (p) {
        program_devices(p, 0, NULL);
        program_parse(p, count, strings, lengths);
    }
    if (errcode_ret)
        *errcode_ret = c.err;
    return (cl_program)p;
}

cl_program CL_API_CALL vocl_hand_clCreateProgramWithBinary(
    cl_context context, cl_uint num_devices, const cl_device_id *device_list,
    const size_t *lengths, const unsigned char **binaries, cl_int *binary_status,
    cl_int *errcode_ret)
{
    struct vocl_call c;
    struct vocl_obj *p = NULL;
    vocl_call_init(&c);
    struct vocl_obj *ctx = vocl_call_h(&c, context, VOCL_T_CONTEXT, 0);
    vocl_call_devs(&c, ctx, num_devices, device_list);
    if (!c.err && (!num_devices || !lengths || !binaries))
        vocl_call_error(&c, CL_INVALID_VALUE);
    for (cl_uint i = 0; !c.err && i < num_devices; i++)
        if (!lengths[i] || !binaries[i])
            vocl_call_error(&c, CL_INVALID_VALUE);
    /* Each proxy gets the binaries of its devices. */
    for (cl_uint rep = 0; vocl_call_each(&c, ctx, rep); rep++) {
        cl_uint mine = vocl_count_on(c.px, num_devices, (const void *const *)device_list);
        if (!mine || vocl_call_start(&c, VOCL_OP_clCreateProgramWithBinary))
            continue;
        /* Its devices' ids, binaries and lengths, in the list's order. */
        uint64_t *devs = malloc(mine * (sizeof(uint64_t) + sizeof(void *) + sizeof(size_t)));
        if (!devs) {
            vocl_call_error(&c, CL_OUT_OF_HOST_MEMORY);
            break;
        }
        const void **bins = (const void **)(devs + mine);
        size_t *lens = (size_t *)(bins + mine);
        for (cl_uint i = 0, j = 0; i < num_devices; i++)
            if (vocl_on((const void *)device_list[i], c.px)) {
                devs[j] = vocl_id_on((const void *)device_list[i], c.px);
                bins[j] = binaries[i];
                lens[j++] = lengths[i];
            }
        uint64_t id = vocl_call_new_id(&c);
        vocl_enc_clCreateProgramWithBinary_req(
            c.w, &(struct vocl_msg_clCreateProgramWithBinary_req){
                     .context = vocl_id_on(ctx, c.px),
                     .devices = {.n = mine, .v = devs},
                     .binaries = {.n = mine, .p = bins, .len = lens},
                     .new_id = id});
        free(devs);
        int rc = vocl_call_send(&c);
        if (c.r.p) {
            /* The statuses come back whether or not the creation succeeded. */
            struct vocl_msg_clCreateProgramWithBinary_rep st;
            vocl_dec_clCreateProgramWithBinary_rep(&c.r, &st);
            for (cl_uint i = 0, j = 0; i < num_devices && j < st.binary_status.n && binary_status;
                 i++)
                if (vocl_on((const void *)device_list[i], c.px))
                    binary_status[i] = vocl_i32s_at(&st.binary_status, j++);
        }
        if (rc == 0)
            vocl_call_made(&c, &p, rep, vocl_nreps(ctx), VOCL_T_PROGRAM, id, ctx, NULL);
    }
    vocl_call_end(&c);
    if (c.err && p) {
        clReleaseProgram((cl_program)p);
        p = NULL;
    }
    if (p)
        program_devices(p, num_devices, device_list);
    if (errcode_ret)
        *errcode_ret = c.err;
    return (cl_program)p;
}

/* Whether the proxy of c builds (compiles, links) o: o is there, and so is a
 * device of the list (no list: all its devices). */
static bool builds_here(const struct vocl_call *c, const struct vocl_obj *o, cl_uint n,
                        const cl_device_id *list)
{
    return vocl_id_on(o, c->px) && (!list || vocl_count_on(c->px, n, (const void *const *)list));
}

/* Starts op (build or compile) of program p on the proxy of replica rep:
 * its id, its devices of the list and the options.  False where that proxy
 * has nothing to build, or the request could not start (c->err). */
static bool build_start(struct vocl_call *c, unsigned op, struct vocl_obj *p, cl_uint rep,
                        cl_uint n, const cl_device_id *list, const char *options)
{
    if (!builds_here(c, p, n, list))
        return false;
    p->build_tried |= UINT64_C(1) << rep;
    return vocl_call_start(c, op) == 0;
}

/* The ids of the devices of list on the proxy of c, in buf (owned by c:
 * the wait-list buffer, which builds do not use). */
static struct vocl_ids devs_on(struct vocl_call *c, cl_uint n, const cl_device_id *list)
{
    struct vocl_ids ids = {0};
    uint32_t k = vocl_count_on(c->px, n, (const void *const *)list);
    free(c->wl_ids);
    c->wl_ids = k ? malloc(k * sizeof(*c->wl_ids)) : NULL;
    if (k && !c->wl_ids) {
        vocl_call_error(c, CL_OUT_OF_HOST_MEMORY);
        return ids;
    }
    for (cl_uint i = 0; i < n; i++)
        if (vocl_on((const void *)list[i], c->px))
            c->wl_ids[ids.n++] = vocl_id_on((const void *)list[i], c->px);
    ids.v = c->wl_ids;
    return ids;
}

/* The ids of n handles (all on the proxy of c: vocl_call_ha checked). */
static uint64_t *ids_of(struct vocl_call *c, cl_uint n, const void *const *list)
{
    uint64_t *ids = n ? malloc(n * sizeof(*ids)) : NULL;
    if (n && !ids)
        vocl_call_error(c, CL_OUT_OF_HOST_MEMORY);
    for (cl_uint i = 0; ids && i < n; i++)
        ids[i] = vocl_id_on(list[i], c->px);
    return ids;
}

/*
 * A build's pfn_notify.  The work is done before clBuildProgram (Compile,
 * Link) returns, which the spec allows; the application's function is
 * called on a thread of libvocl, as the spec has it, holding a reference
 * so that the program outlives an application release.  Where no thread
 * can start, the call is made here.
 */
struct build_note {
    cl_program program;
    void (CL_CALLBACK *fn)(cl_program, void *);
    void *user_data;
};

static void *build_note_thread(void *arg)
{
    struct build_note *n = arg;
    n->fn(n->program, n->user_data);
    clReleaseProgram(n->program);
    free(n);
    return NULL;
}

static void notify_built(cl_program program, void (CL_CALLBACK *fn)(cl_program, void *),
                         void *user_data)
{
    if (!fn || !program)
        return;
    struct build_note *n = malloc(sizeof(*n));
    if (n && clRetainProgram(program) == CL_SUCCESS) {
        *n = (struct build_note){program, fn, user_data};
        if (vocl_thread_detached(build_note_thread, n) == 0)
            return;
        clReleaseProgram(program);
    }
    free(n);
    fn(program, user_data);
}

cl_int CL_API_CALL vocl_hand_clBuildProgram(cl_program program, cl_uint num_devices,
                                               const cl_device_id *device_list,
                                               const char *options,
                                               void (CL_CALLBACK *pfn_notify)(cl_program program,
                                                                              void *user_data),
                                               void *user_data)
{
    struct vocl_call c;
    vocl_call_init(&c);
    struct vocl_obj *p = vocl_call_h(&c, program, VOCL_T_PROGRAM, 0);
    vocl_call_devs(&c, p ? p->context : NULL, num_devices, device_list);
    if (!c.err && !pfn_notify && user_data)
        vocl_call_error(&c, CL_INVALID_VALUE);
    /* Each proxy builds for its devices of the list (all of its own if none). */
    for (cl_uint rep = 0; vocl_call_each(&c, p, rep); rep++)
        if (build_start(&c, VOCL_OP_clBuildProgram, p, rep, num_devices, device_list, options)) {
            vocl_enc_clBuildProgram_req(c.w, &(struct vocl_msg_clBuildProgram_req){
                                                 .program = vocl_id_on(p, c.px),
                                                 .devices = devs_on(&c, num_devices, device_list),
                                                 .options = vocl_str_of(options)});
            vocl_call_send(&c);
        }
    vocl_call_end(&c);
    if (p)
        p->built = c.err == CL_SUCCESS;
    notify_built(p ? program : NULL, pfn_notify, user_data);
    return c.err;
}

cl_int CL_API_CALL vocl_hand_clCompileProgram(
    cl_program program, cl_uint num_devices, const cl_device_id *device_list, const char *options,
    cl_uint num_input_headers, const cl_program *input_headers, const char **header_include_names,
    void (CL_CALLBACK *pfn_notify)(cl_program program, void *user_data), void *user_data)
{
    struct vocl_call c;
    vocl_call_init(&c);
    struct vocl_obj *p = vocl_call_h(&c, program, VOCL_T_PROGRAM, 0);
    vocl_call_devs(&c, p ? p->context : NULL, num_devices, device_list);
    vocl_call_ha(&c, num_input_headers, (const void *const *)input_headers, VOCL_T_PROGRAM);
    if (!c.err && ((num_input_headers && !header_include_names) || (!pfn_notify && user_data)))
        vocl_call_error(&c, CL_INVALID_VALUE);
    for (cl_uint rep = 0; vocl_call_each(&c, p, rep); rep++) {
        if (!build_start(&c, VOCL_OP_clCompileProgram, p, rep, num_devices, device_list,
                         options))
            continue;
        uint64_t *headers = ids_of(&c, num_input_headers, (const void *const *)input_headers);
        vocl_enc_clCompileProgram_req(
            c.w, &(struct vocl_msg_clCompileProgram_req){
                     .program = vocl_id_on(p, c.px),
                     .devices = devs_on(&c, num_devices, device_list),
                     .options = vocl_str_of(options),
                     .input_headers = {.n = headers ? num_input_headers : 0, .v = headers},
                     .header_include_names = {.s = header_include_names}});
        free(headers);
        vocl_call_send(&c);
    }
    vocl_call_end(&c);
    notify_built(p ? program : NULL, pfn_notify, user_data);
    return c.err;
}

cl_program CL_API_CALL vocl_hand_clLinkProgram(
    cl_context context, cl_uint num_devices, const cl_device_id *device_list, const char *options,
    cl_uint num_input_programs, const cl_program *input_programs,
    void (CL_CALLBACK *pfn_notify)(cl_program program, void *user_data), void *user_data,
    cl_int *errcode_ret)
{
    struct vocl_call c;
    struct vocl_obj *p = NULL;
    vocl_call_init(&c);
    struct vocl_obj *ctx = vocl_call_h(&c, context, VOCL_T_CONTEXT, 0);
    vocl_call_devs(&c, ctx, num_devices, device_list);
    vocl_call_ha(&c, num_input_programs, (const void *const *)input_programs, VOCL_T_PROGRAM);
    if (!c.err && (!num_input_programs || (!pfn_notify && user_data)))
        vocl_call_error(&c, CL_INVALID_VALUE);
    for (cl_uint rep = 0; vocl_call_each(&c, ctx, rep); rep++) {
        if (!builds_here(&c, ctx, num_devices, device_list))
            continue;
        if (vocl_call_start(&c, VOCL_OP_clLinkProgram))
            break;
        uint64_t *inputs = ids_of(&c, num_input_programs, (const void *const *)input_programs);
        uint64_t id = vocl_call_new_id(&c);
        vocl_enc_clLinkProgram_req(
            c.w, &(struct vocl_msg_clLinkProgram_req){
                     .context = vocl_id_on(ctx, c.px),
                     .devices = devs_on(&c, num_devices, device_list),
                     .options = vocl_str_of(options),
                     .input_programs = {.n = inputs ? num_input_programs : 0, .v = inputs},
                     .new_id = id});
        free(inputs);
        vocl_call_send(&c);
        /* A failed link can still make a program (to read its build log). */
        cl_int err = c.err;
        struct vocl_msg_clLinkProgram_rep rep_m = {0};
        if (err == CL_SUCCESS || err == CL_LINK_PROGRAM_FAILURE)
            vocl_dec_clLinkProgram_rep(&c.r, &rep_m);
        bool made = rep_m.made;
        if (made) {
            c.err = CL_SUCCESS;
            vocl_call_made(&c, &p, rep, vocl_nreps(ctx), VOCL_T_PROGRAM, id, ctx, NULL);
            c.err = err;
        }
    }
    vocl_call_end(&c);
    if (p) {
        p->built = c.err == CL_SUCCESS && !(options && strstr(options, "-create-library"));
        program_devices(p, num_devices, device_list);
        /* Its kernels' signatures are in the inputs' sources. */
        p->inputs = malloc(num_input_programs * sizeof(*p->inputs));
        for (cl_uint i = 0; p->inputs && i < num_input_programs; i++) {
            p->inputs[i] = (struct vocl_obj *)input_programs[i];
            vocl_obj_hold(p->inputs[i]);
            p->ninputs++;
        }
    }
    notify_built((cl_program)p, pfn_notify, user_data);
    if (errcode_ret)
        *errcode_ret = c.err;
    return (cl_program)p;
}

/* CL_PROGRAM_BINARIES fills the application's own buffers: one message
 * brings every binary, copied into place here. */
static cl_int program_binaries(struct vocl_obj *p, size_t size, void *value, size_t *size_ret)
{
    if (!p->devs) /* made by a generated create: the context's devices */
        program_devices(p, 0, NULL);
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
    /* Each proxy has the binaries of its devices, in the program's order. */
    for (cl_uint rep = 0; vocl_call_each(&c, p, rep); rep++) {
        if (!vocl_id_on(p, c.px) || vocl_call_start(&c, VOCL_OP_PROGRAM_BINARIES))
            continue;
        vocl_enc_PROGRAM_BINARIES_req(c.w, &(struct vocl_msg_PROGRAM_BINARIES_req){
                                                .program = vocl_id_on(p, c.px)});
        if (vocl_call_send(&c) == 0) {
            struct vocl_msg_PROGRAM_BINARIES_rep rep;
            vocl_dec_PROGRAM_BINARIES_rep(&c.r, &rep);
            cl_uint n = rep.binaries.n;
            struct vocl_rd items;
            vocl_rd_init(&items, rep.binaries.raw, rep.binaries.raw_len);
            for (cl_uint i = 0; n && i < p->ndevs; i++) {
                if (p->devs[i]->px != c.px)
                    continue;
                size_t len;
                const void *bin = vocl_rd_bytes(&items, &len);
                if (out[i] && bin)
                    memcpy(out[i], bin, len);
                n--;
            }
        }
    }
    vocl_call_end(&c);
    return c.err;
}

/* Spanning proxies: each proxy has the sizes of its devices' binaries. */
static cl_int program_binary_sizes(struct vocl_obj *p, size_t size, void *value,
                                   size_t *size_ret)
{
    if (!p->devs)
        program_devices(p, 0, NULL);
    size_t need = p->ndevs * sizeof(size_t);
    if (size_ret)
        *size_ret = need;
    if (!value)
        return CL_SUCCESS;
    if (size < need)
        return CL_INVALID_VALUE;
    size_t *out = value, got[64];
    struct vocl_call c;
    vocl_call_init(&c);
    for (cl_uint rep = 0; vocl_call_each(&c, p, rep); rep++) {
        if (!vocl_id_on(p, c.px) || vocl_call_start(&c, VOCL_OP_clGetProgramInfo))
            continue;
        vocl_wr_u64(c.w, vocl_id_on(p, c.px));
        vocl_wr_u64(c.w, CL_PROGRAM_BINARY_SIZES);
        vocl_wr_u64(c.w, sizeof(got));
        vocl_wr_u8(c.w, 1);
        size_t n = 0;
        if (vocl_call_send(&c) == 0)
            vocl_call_get_info(&c, sizeof(got), got, &n);
        n /= sizeof(size_t);
        for (cl_uint i = 0, j = 0; !c.err && i < p->ndevs && j < n; i++)
            if (p->devs[i]->px == c.px)
                out[i] = got[j++];
    }
    vocl_call_end(&c);
    return c.err;
}

/* A program of a context spanning proxies, built for devices of one proxy
 * only, was never built on the others, where PoCL (for one) then fails a
 * query of the build log with CL_INVALID_PROGRAM.  Natively the program is
 * one object, and such a log is empty: answered here. */
int vocl_hook_clGetProgramBuildInfo(cl_program program, cl_device_id device,
                                    cl_program_build_info param_name, size_t param_value_size,
                                    void *param_value, size_t *param_value_size_ret, cl_int *ret)
{
    struct vocl_obj *p = vocl_lookup(program, VOCL_T_PROGRAM);
    struct vocl_obj *d = vocl_lookup(device, VOCL_T_DEVICE);
    if (!p || !d || !p->reps || !p->build_tried || param_name != CL_PROGRAM_BUILD_LOG)
        return 0;
    cl_uint i = vocl_rep_index(p, d->px);
    if (i >= p->nreps || p->build_tried & (UINT64_C(1) << i))
        return 0;
    *ret = vocl_info_answer("", 1, param_value_size, param_value, param_value_size_ret);
    return 1;
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
    case CL_PROGRAM_BINARY_SIZES:
        if (!p->reps)
            return 0;
        *ret = program_binary_sizes(p, param_value_size, param_value, param_value_size_ret);
        return 1;
    default:
        return 0;
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
    if (!c.err && p->built && (kk = program_kernel(p, kernel_name, &cond)) && !cond &&
        (known = kargs_new(kk->nargs)))
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
            k->kargs = ka;
            ka = NULL;
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
    if (vocl_call_start(&c, VOCL_OP_clCreateKernelsInProgram) == 0) {
        uint64_t first = kernels_request(&c, p->id, nids);
        if (vocl_call_send(&c) == 0) {
            got = vocl_rd_u32(&c.r);
            made = got < nids ? got : nids;
            kas = calloc(made ? made : 1, sizeof(*kas));
            if (!kas)
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
            free(cname);
        }
        if (c.r.fail)
            vocl_call_error(&c, CL_OUT_OF_RESOURCES);
        for (; !c.err && objs < made; objs++) {
            struct vocl_obj *k =
                vocl_call_new_obj(&c, VOCL_T_KERNEL, first + objs, p->context, p);
            if (!k)
                break;
            k->kargs = kas[objs];
            kas[objs] = NULL;
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
    free(kas);
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
    if (arg_index >= k->kargs->n)
        return CL_INVALID_ARG_INDEX;
    struct vocl_karg *old = &k->kargs->a[arg_index];
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
    vocl_call_wl(&c, num_events_in_wait_list, event_wait_list);
    if (!c.err && (work_dim < 1 || work_dim > 3))
        vocl_call_error(&c, CL_INVALID_WORK_DIMENSION);
    if (!c.err && k->context != q->context)
        vocl_call_error(&c, CL_INVALID_CONTEXT);
    for (cl_uint i = 0; !c.err && i < k->kargs->n; i++)
        if (!k->kargs->a[i].set)
            vocl_call_error(&c, CL_INVALID_KERNEL_ARGS);
    /* Its objects stay until the launch is sent (an argument whose object
     * the application released is no longer set). */
    struct vocl_obj *held_small[16], **held = held_small;
    cl_uint nheld = 0;
    if (!c.err && k->kargs->n > 16 && !(held = malloc(k->kargs->n * sizeof(*held))))
        vocl_call_error(&c, CL_OUT_OF_HOST_MEMORY);
    if (!c.err && !hold_args(k->kargs, held, &nheld))
        vocl_call_error(&c, CL_INVALID_KERNEL_ARGS);
    /* Buffers and images of a context spanning proxies: their data here. */
    for (cl_uint i = 0; !c.err && i < k->kargs->n; i++) {
        const struct vocl_karg *a = &k->kargs->a[i];
        if (a->kind == VOCL_LARG_MEM && a->obj)
            vocl_mem_use(&c, a->obj,
                         a->ro || (a->obj->mem_flags & CL_MEM_READ_ONLY) ? VOCL_USE_R
                                                                         : VOCL_USE_RW);
    }
    /* A launch does not wait, but for the first of its shape: the driver
     * then says whether its work-group size is valid.  Its other errors
     * (resources) are deferred. */
    struct vocl_shape shape = launch_shape(work_dim, global_work_size, local_work_size);
    uint64_t bit = c.err ? 0 : rep_bit(k, c.px);
    bool probe = !c.err && !shape_known(k->kargs, &shape, bit, false);
    c.async = !probe;
    if (vocl_call_start(&c, VOCL_OP_clEnqueueNDRangeKernel) == 0) {
        struct vocl_karg_wire args_small[16], *args = args_small;
        if (k->kargs->n > 16 && !(args = malloc(k->kargs->n * sizeof(*args))))
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
                         .args = args_to_send(&c, k->kargs, bit, args),
                         .wait_list = vocl_call_wl_ids(&c, num_events_in_wait_list,
                                                       event_wait_list),
                         .event = ev_id});
        if (args != args_small)
            free(args);
        if (vocl_call_post(&c) == 0) {
            /* The proxy has applied the arguments, whatever the launch does. */
            for (cl_uint i = 0; i < k->kargs->n; i++)
                atomic_fetch_or_explicit(&k->kargs->a[i].sent, bit, memory_order_relaxed);
            if (vocl_call_wait(&c) == 0) {
                if (probe)
                    shape_known(k->kargs, &shape, bit, true);
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
