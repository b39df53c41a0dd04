/*
 * program.c - programs: creation from source (read by kernelparse, for the
 * kernels' argument kinds: kernel.c) or binaries, builds, compiles, links
 * and their notifications, and the program queries answered here.
 */
#include "vocl.h"

#include <stdlib.h>
#include <string.h>

#include "kernelparse.h"
#include "thread.h"

static void program_devices(struct vocl_obj *p, cl_uint n, const cl_device_id *list)
{
    struct vocl_program *prog = vocl_as_program(p);
    if (!list) {
        const struct vocl_context *ctx = vocl_as_context(p->context);
        n = ctx->ndevs;
        list = (const cl_device_id *)ctx->devs;
    }
    prog->devs = malloc(n * sizeof(*prog->devs));
    if (prog->devs) {
        memcpy(prog->devs, list, n * sizeof(*prog->devs));
        prog->ndevs = n;
    }
}

/* A program that a generated create made learns its devices (the
 * context's) when first asked; two threads may ask at once. */
static struct vocl_program *with_devices(struct vocl_obj *p)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    struct vocl_program *prog = vocl_as_program(p);
    pthread_mutex_lock(&lock);
    if (!prog->devs)
        program_devices(p, 0, NULL);
    pthread_mutex_unlock(&lock);
    return prog;
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
 * Reads the kernel signatures of p's source, and keeps the source (a
 * migration makes the program again from it).  Not being able to read the
 * signatures is no error of the application's: its kernels then get their
 * kinds from the proxy.
 */
static void program_parse(struct vocl_obj *p, cl_uint count, const char **strings,
                          const size_t *lengths)
{
    size_t total = 0;
    for (cl_uint i = 0; i < count; i++)
        total += lengths && lengths[i] ? lengths[i] : strlen(strings[i]);
    char *src = malloc(total + 1);
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
    struct vocl_program *prog = vocl_as_program(p);
    src_directives(src, total, &prog->kp_cond, &twice);
    if (twice)
        vocl_info("kernel signatures not read (a macro is defined twice): argument kinds will "
                  "come from the proxy");
    else if (kp_parse(src, total, &prog->kp, err, sizeof(err)) != KP_OK)
        vocl_info("kernel signatures not read (%s): argument kinds will come from the proxy",
                  err);
    src[total] = '\0';
    prog->source = src;
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
    /* What the driver could still refuse (its memory) is a deferred error:
     * PyOpenCL makes a program for nearly every operation. */
    c.async = true;
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

/* Starts op (build or compile) of program p on the proxy of replica rep
 * (the caller writes its fields: the program's id, its devices of the list,
 * the options).  False where that proxy has nothing to build, or the
 * request could not start (c->err). */
static bool build_start(struct vocl_call *c, unsigned op, struct vocl_obj *p, cl_uint rep,
                        cl_uint n, const cl_device_id *list)
{
    if (!builds_here(c, p, n, list))
        return false;
    vocl_as_program(p)->build_tried |= UINT64_C(1) << rep;
    vocl_info_forget(p); /* its build information changes (and again at the end) */
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

/* A build's or a compile's arguments, for build_everywhere. */
struct build_args {
    unsigned op; /* VOCL_OP_clBuildProgram or VOCL_OP_clCompileProgram */
    cl_uint ndev;
    const cl_device_id *devs;
    const char *options;
    cl_uint nheaders; /* (a compile's) */
    const cl_program *headers;
    const char **names;
};

/* Posts a's request for program p to the proxy of replica rep, in e (e->w
 * its own buffer), its reply to be read by vocl_call_wait; nothing
 * where that proxy has nothing to build. */
static void build_post(struct vocl_call *e, struct vocl_obj *p, cl_uint rep,
                       const struct build_args *a)
{
    if (!build_start(e, a->op, p, rep, a->ndev, a->devs))
        return;
    struct vocl_ids devs = devs_on(e, a->ndev, a->devs);
    if (a->op == VOCL_OP_clBuildProgram) {
        vocl_enc_clBuildProgram_req(e->w, &(struct vocl_msg_clBuildProgram_req){
                                              .program = vocl_id_on(p, e->px),
                                              .devices = devs,
                                              .options = vocl_str_of(a->options)});
    } else {
        uint64_t *headers = ids_of(e, a->nheaders, (const void *const *)a->headers);
        vocl_enc_clCompileProgram_req(
            e->w, &(struct vocl_msg_clCompileProgram_req){
                      .program = vocl_id_on(p, e->px),
                      .devices = devs,
                      .options = vocl_str_of(a->options),
                      .input_headers = {.n = headers ? a->nheaders : 0, .v = headers},
                      .header_include_names = {.s = a->names}});
        free(headers);
    }
    vocl_call_post_only(e);
}

/*
 * Builds (or compiles) p on each of its proxies at once: every request is
 * posted, then every reply awaited, so that N proxies build in the time of
 * one, as a driver builds for its devices.  (One after another, a build
 * over two proxies took 49-79 ms against 47-64 natively, medians of 15
 * PoCL builds from its cache on the idle 2-core machine; at once, 36-52
 * ms.)  Every proxy builds even
 * where another fails, as a driver does for each device (before, one that
 * failed left the next proxies' devices unbuilt: tests/integration/
 * spanning.c, 12); the call's status is the first failure, in the
 * replicas' order.  Errors go to c.
 */
static void build_everywhere(struct vocl_call *c, struct vocl_obj *p, const struct build_args *a)
{
    if (c->err || !p)
        return;
    cl_uint n = vocl_nreps(p);
    struct vocl_call *each = calloc(n, sizeof(*each));
    struct vocl_wr *bufs = calloc(n, sizeof(*bufs));
    if (!each || !bufs) {
        free(each);
        free(bufs);
        vocl_call_error(c, CL_OUT_OF_HOST_MEMORY);
        return;
    }
    for (cl_uint rep = 0; rep < n; rep++) {
        vocl_call_init(&each[rep]);
        each[rep].px = vocl_rep_px(p, rep);
        each[rep].w = &bufs[rep];
        build_post(&each[rep], p, rep, a);
    }
    for (cl_uint rep = 0; rep < n; rep++) {
        if (each[rep].op) /* (started: its reply, or its error, is read) */
            vocl_call_wait(&each[rep]);
        vocl_call_end(&each[rep]);
        vocl_call_error(c, each[rep].err);
        vocl_wr_free(&bufs[rep]);
    }
    free(each);
    free(bufs);
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
    struct build_args a = {VOCL_OP_clBuildProgram, num_devices, device_list, options, 0, NULL,
                           NULL};
    build_everywhere(&c, p, &a);
    vocl_call_end(&c);
    if (p) {
        struct vocl_program *pp = vocl_as_program(p);
        pp->built = c.err == CL_SUCCESS;
        if (pp->built) {
            free(pp->options);
            pp->options = options ? strdup(options) : NULL;
        }
        vocl_info_forget(p);
    }
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
    struct build_args a = {VOCL_OP_clCompileProgram, num_devices, device_list, options,
                           num_input_headers, input_headers, header_include_names};
    build_everywhere(&c, p, &a);
    vocl_call_end(&c);
    if (p)
        vocl_info_forget(p);
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
        struct vocl_program *prog = vocl_as_program(p);
        prog->built = c.err == CL_SUCCESS && !(options && strstr(options, "-create-library"));
        program_devices(p, num_devices, device_list);
        /* Its kernels' signatures are in the inputs' sources. */
        prog->inputs = malloc(num_input_programs * sizeof(*prog->inputs));
        for (cl_uint i = 0; prog->inputs && i < num_input_programs; i++) {
            prog->inputs[i] = (struct vocl_obj *)input_programs[i];
            vocl_obj_hold(prog->inputs[i]);
            prog->ninputs++;
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
    struct vocl_program *prog = with_devices(p);
    size_t need = prog->ndevs * sizeof(unsigned char *);
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
            for (cl_uint i = 0; n && i < prog->ndevs; i++) {
                if (prog->devs[i]->px != c.px)
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
    struct vocl_program *prog = with_devices(p);
    size_t need = prog->ndevs * sizeof(size_t);
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
        vocl_enc_clGetProgramInfo_req(c.w, &(struct vocl_msg_clGetProgramInfo_req){
                                               .program = vocl_id_on(p, c.px),
                                               .param_name = CL_PROGRAM_BINARY_SIZES,
                                               .param_value_size = sizeof(got),
                                               .want_value = 1});
        size_t n = 0;
        if (vocl_call_send(&c) == 0)
            vocl_call_get_info(&c, sizeof(got), got, &n);
        n /= sizeof(size_t);
        for (cl_uint i = 0, j = 0; !c.err && i < prog->ndevs && j < n; i++)
            if (prog->devs[i]->px == c.px)
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
    if (!p || !d || !p->reps || !vocl_as_program(p)->build_tried ||
        param_name != CL_PROGRAM_BUILD_LOG)
        return 0;
    cl_uint i = vocl_rep_index(p, d->px);
    if (i >= p->nreps || vocl_as_program(p)->build_tried & (UINT64_C(1) << i))
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
    case CL_PROGRAM_DEVICES: {
        struct vocl_program *prog = with_devices(p);
        *ret = vocl_info_answer(prog->devs, prog->ndevs * sizeof(void *), param_value_size,
                                param_value, param_value_size_ret);
        return 1;
    }
    case CL_PROGRAM_NUM_DEVICES: {
        /* The list's length: a proxy knows only its own devices of it. */
        cl_uint n = with_devices(p)->ndevs;
        *ret = vocl_info_answer(&n, sizeof(n), param_value_size, param_value,
                                param_value_size_ret);
        return 1;
    }
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
