/*
 * hep.c: the HEP pipeline runtime (hep.h) on the standard OpenCL API.
 *
 * Host threads take turns as data setup (DS: read and inflate a batch from
 * the HDF5 file into a host buffer) or processing (DP: run a batch through
 * the pipeline on a free device slot and wait for it).  Each device has an
 * in-order queue for the pipeline and a second, setup queue on which a
 * batch's columns and ids are uploaded and its random words made while the
 * pipeline queue still runs the other slot's batch: two slots per device
 * are the double buffer, and the device's data setup overlaps processing.
 * After every proposition the survivors' indices are compacted on the
 * device; the counts stay on the device, so the whole pipeline of a batch is
 * queued without one round trip.  A DP thread that completes a batch may hit
 * a checkpoint: the order and the DS/DP split are decided there (sched.c).
 */
#include "hep.h"
#include "hep_sched.h"

#undef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include "clutil.h"
#include "hep_sources.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Work-items per group, named at every launch: left to the driver, the group
 * size follows the batch's size, and PoCL compiles every kernel again for
 * each group size it meets (each batch size the balancing tries). */
#define WG 64

static size_t wg_round(size_t n)
{
    return (n + WG - 1) / WG * WG;
}

struct batch {
    uint64_t first;
    size_t n;
    uint64_t *ids;
    void **cols; /* per input column */
    struct batch *next;
};

struct device;

struct slot {
    struct device *dev;
    bool busy;
    cl_mem *cols; /* per column of the analysis */
    cl_mem ids, rng, idx[2], flag, counts, groups, bins;
    cl_kernel *props, rng_fill, init, count, offsets, scatter, hist;
    cl_uint *counts_host, *idx_host, *bins_host;
};

struct device {
    cl_device_id id;
    cl_command_queue q, rq;
    struct slot *slots;
    unsigned free_slots;
};

struct run {
    const struct hep_analysis *an;
    struct hep_options o;
    size_t np, nh, nin;
    uint64_t deps[HEP_MAX_PROPS];
    unsigned level[HEP_MAX_PROPS];
    size_t bins_total, *bins_at; /* offsets of each histogram in a slot's bins */
    hep_file *file;
    uint64_t total;
    cl_context ctx;
    cl_program prog;
    struct device *devs;
    unsigned ndev;
    cl_uint *zeros;

    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool failed, stop;
    char error[HEP_ERROR_SIZE];
    uint64_t next_event, done_events;
    bool ds_done;
    unsigned reading, processing; /* batches being read, being processed */
    struct batch *free_list, *ready_head, *ready_tail;
    unsigned threads, ds_target;
    bool fixed_split;
    struct hep_balance bal;
    unsigned order[HEP_MAX_PROPS];
    struct hep_sample samples[HEP_MAX_PROPS];
    unsigned since_checkpoint;
    unsigned claimed; /* batches DS has begun to read */
    size_t probe;     /* events in each of the batches before the first checkpoint */
    double ds_busy, dp_busy;
    uint64_t ds_events, dp_events; /* since the last checkpoint */
    double t0, ds_end;
    uint64_t *ids;
    size_t nids, cap_ids;
    uint64_t *hist_sum;
    struct hep_result *res;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int fail(char *error, const char *format, ...) __attribute__((format(printf, 2, 3)));
static int fail(char *error, const char *format, ...)
{
    va_list ap;
    va_start(ap, format);
    vsnprintf(error, HEP_ERROR_SIZE, format, ap);
    va_end(ap);
    return -1;
}

/* Records the first failure of the run and wakes everyone to stop. */
static void run_fail(struct run *r, const char *format, ...) __attribute__((format(printf, 2, 3)));
static void run_fail(struct run *r, const char *format, ...)
{
    pthread_mutex_lock(&r->lock);
    if (!r->failed) {
        va_list ap;
        va_start(ap, format);
        vsnprintf(r->error, sizeof(r->error), format, ap);
        va_end(ap);
        r->failed = true;
    }
    pthread_cond_broadcast(&r->cond);
    pthread_mutex_unlock(&r->lock);
}

/* ---- setup ---- */

static int find_prop(const struct hep_analysis *an, const char *name, size_t len)
{
    for (size_t i = 0; i < an->num_props; i++)
        if (strlen(an->props[i].name) == len && !strncmp(an->props[i].name, name, len))
            return (int)i;
    return -1;
}

static int check_analysis(struct run *r, char *error)
{
    const struct hep_analysis *an = r->an;
    if (an->num_props == 0 || an->num_props > HEP_MAX_PROPS)
        return fail(error, "an analysis needs 1 to %d propositions", HEP_MAX_PROPS);
    if (an->rng_per_event % 4)
        return fail(error, "rng_per_event must be a multiple of 4");
    for (size_t i = 0; i < an->num_props; i++) {
        const char *d = an->props[i].deps;
        while (d && *d) {
            size_t len = strcspn(d, ", ");
            if (len) {
                int j = find_prop(an, d, len);
                if (j < 0)
                    return fail(error, "proposition %s depends on an unknown '%.*s'",
                                an->props[i].name, (int)len, d);
                r->deps[i] |= (uint64_t)1 << j;
            }
            d += len + (d[len] != '\0');
        }
    }
    if (hep_levels(an->num_props, r->deps, r->level) < 0)
        return fail(error, "the dependencies of the propositions form a cycle");
    unsigned given[HEP_MAX_PROPS];
    for (size_t i = 0; i < an->num_props; i++)
        given[i] = (unsigned)i;
    if (!hep_order_valid(an->num_props, r->deps, given))
        return fail(error, "the given order runs a proposition before one it depends on");
    for (size_t h = 0; h < an->num_hists; h++) {
        const struct hep_hist *hh = &an->hists[h];
        bool ok = false;
        for (size_t c = 0; c < an->num_columns; c++)
            ok |= !strcmp(an->columns[c].name, hh->column) && an->columns[c].derived &&
                  an->columns[c].type == HEP_F64 && an->columns[c].width == 1;
        if (!ok || hh->bins == 0 || !(hh->hi > hh->lo))
            return fail(error, "histogram %s: needs a derived float64 column of width 1, "
                               "bins > 0 and hi > lo", hh->name);
    }
    for (size_t c = 0; c < an->num_columns; c++)
        if (an->columns[c].derived && an->columns[c].type != HEP_F64)
            return fail(error, "column %s: derived columns are float64", an->columns[c].name);
    return 0;
}

static size_t type_size(enum hep_type t)
{
    return t == HEP_F64 ? 8 : 4;
}

/* The program: hep_dev.h, the parameter macros, the analysis, one kernel
 * per proposition, the runtime's kernels. */
static char *program_source(struct run *r)
{
    const struct hep_analysis *an = r->an;
    size_t cap = strlen(hep_dev_source) + strlen(an->source) + strlen(hep_kernels_source) +
                 4096 + an->num_columns * 160 + an->num_props * 512;
    char *s = malloc(cap), *p = s;
    if (!s)
        return NULL;
    p += sprintf(p, "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
                    "#pragma OPENCL FP_CONTRACT OFF\n#define HEP_OPENCL 1\n"
                    "#define HEP_RNG_PER_EVENT %uu\n%s\n#define HEP_PARAMS ",
                 an->rng_per_event, hep_dev_source);
    for (size_t c = 0; c < an->num_columns; c++) {
        const struct hep_column *col = &an->columns[c];
        p += sprintf(p, "__global %s%s *%s, ", col->derived ? "" : "const ",
                     col->type == HEP_F32 ? "float" : col->type == HEP_I32 ? "int" : "double",
                     col->name);
    }
    p += sprintf(p, "__global const ulong *hep_ids, __global const uint *hep_rng\n"
                    "#define HEP_ARGS ");
    for (size_t c = 0; c < an->num_columns; c++)
        p += sprintf(p, "%s, ", an->columns[c].name);
    p += sprintf(p,
                 "hep_ids, hep_rng\n#define HEP_RANDOM(e, use) "
                 "(hep_rng[(size_t)(e) * HEP_RNG_PER_EVENT + (use)])\n"
                 "#define HEP_EVENT_ID(e) (hep_ids[e])\n#define HEP_SEED ((ulong)%" PRIu64
                 "ul)\n#line 1\n%s\n",
                 an->seed, an->source);
    for (size_t i = 0; i < an->num_props; i++)
        p += sprintf(p,
                     "__kernel void hep_p%zu(__global const uint *hep_counts, uint hep_k, "
                     "__global const uint *hep_idx, __global uchar *hep_flag, HEP_PARAMS)\n{\n"
                     "    uint g = get_global_id(0);\n    if (g >= hep_counts[hep_k])\n"
                     "        return;\n    hep_flag[g] = %s(HEP_ARGS, hep_idx[g]) != 0;\n}\n",
                     i, an->props[i].function);
    strcpy(p, hep_kernels_source);
    return s;
}

static int open_devices(struct run *r, char *error)
{
    cl_uint np = 0;
    cl_platform_id plats[16];
    if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS || np == 0)
        return fail(error, "no OpenCL platform");
    cl_device_id ids[256];
    cl_uint nd = 0;
    cl_platform_id plat = NULL;
    for (cl_uint i = 0; i < np && i < 16 && !nd; i++)
        if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 256, ids, &nd) == CL_SUCCESS && nd)
            plat = plats[i];
        else
            nd = 0;
    if (!nd)
        return fail(error, "no OpenCL device");
    if (nd > 256)
        nd = 256;
    if (r->o.devices && r->o.devices < nd)
        nd = r->o.devices;
    for (cl_uint i = 0; i < nd; i++) {
        char ext[4096] = "";
        clGetDeviceInfo(ids[i], CL_DEVICE_EXTENSIONS, sizeof(ext) - 1, ext, NULL);
        if (!strstr(ext, "cl_khr_fp64"))
            return fail(error, "device %u has no cl_khr_fp64: propositions compute in double "
                               "so that every device and the host agree to the bit", i);
    }
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)plat, 0};
    cl_int err;
    r->ctx = clCreateContext(props, nd, ids, NULL, NULL, &err);
    if (err != CL_SUCCESS)
        return fail(error, "clCreateContext: %s (%d)", app_cl_error_name(err), err);
    r->ndev = nd;
    r->devs = calloc(nd, sizeof(*r->devs));
    if (!r->devs)
        return fail(error, "out of memory");
    for (cl_uint i = 0; i < nd; i++) {
        r->devs[i].id = ids[i];
        r->devs[i].q = clCreateCommandQueue(r->ctx, ids[i], CL_QUEUE_PROFILING_ENABLE, &err);
        /* HEP_RNG_SAME_QUEUE=1: no second queue, so no uploading and no
         * generating ahead (for measuring what the double buffer gains). */
        const char *same = getenv("HEP_RNG_SAME_QUEUE");
        if (err == CL_SUCCESS && same && *same == '1')
            r->devs[i].rq = r->devs[i].q, clRetainCommandQueue(r->devs[i].q);
        else if (err == CL_SUCCESS)
            r->devs[i].rq = clCreateCommandQueue(r->ctx, ids[i], 0, &err);
        if (err != CL_SUCCESS)
            return fail(error, "clCreateCommandQueue: %s (%d)", app_cl_error_name(err), err);
    }
    char *src = program_source(r);
    if (!src)
        return fail(error, "out of memory");
    const char *srcs[] = {src};
    r->prog = clCreateProgramWithSource(r->ctx, 1, srcs, NULL, &err);
    free(src);
    if (err != CL_SUCCESS)
        return fail(error, "clCreateProgramWithSource: %s (%d)", app_cl_error_name(err), err);
    char options[512];
    snprintf(options, sizeof(options), "%s", r->an->build_options ? r->an->build_options : "");
    err = clBuildProgram(r->prog, nd, ids, options, NULL, NULL);
    if (err != CL_SUCCESS) {
        char log[2048] = "";
        clGetProgramBuildInfo(r->prog, ids[0], CL_PROGRAM_BUILD_LOG, sizeof(log) - 1, log, NULL);
        return fail(error, "the analysis does not build: %s", log);
    }
    return 0;
}

static cl_mem buffer(struct run *r, size_t size, cl_int *err)
{
    if (*err != CL_SUCCESS)
        return NULL;
    return clCreateBuffer(r->ctx, CL_MEM_READ_WRITE, size ? size : 4, NULL, err);
}

static cl_kernel kernel(struct run *r, const char *name, cl_int *err)
{
    if (*err != CL_SUCCESS)
        return NULL;
    return clCreateKernel(r->prog, name, err);
}

#define ARG(k, i, v) clSetKernelArg(k, i, sizeof(v), &(v))

static int make_slot(struct run *r, struct device *d, struct slot *s, char *error)
{
    const struct hep_analysis *an = r->an;
    size_t b = r->o.batch, ng = (b + WG - 1) / WG;
    cl_int err = CL_SUCCESS;
    s->dev = d;
    s->cols = calloc(an->num_columns, sizeof(cl_mem));
    s->props = calloc(r->np, sizeof(cl_kernel));
    s->counts_host = calloc(r->np + 1, sizeof(cl_uint));
    s->idx_host = calloc(b, sizeof(cl_uint));
    s->bins_host = calloc(r->bins_total + 1, sizeof(cl_uint));
    if (!s->cols || !s->props || !s->counts_host || !s->idx_host || !s->bins_host)
        return fail(error, "out of memory");
    for (size_t c = 0; c < an->num_columns; c++)
        s->cols[c] = buffer(r, b * an->columns[c].width * type_size(an->columns[c].type), &err);
    s->ids = buffer(r, b * 8, &err);
    s->rng = buffer(r, b * an->rng_per_event * 4, &err);
    s->idx[0] = buffer(r, b * 4, &err);
    s->idx[1] = buffer(r, b * 4, &err);
    s->flag = buffer(r, b, &err);
    s->counts = buffer(r, (r->np + 1) * 4, &err);
    s->groups = buffer(r, ng * 4, &err);
    s->bins = buffer(r, (r->bins_total + 1) * 4, &err);
    for (size_t i = 0; i < r->np; i++) {
        char name[32];
        snprintf(name, sizeof(name), "hep_p%zu", i);
        s->props[i] = kernel(r, name, &err);
        for (size_t c = 0; err == CL_SUCCESS && c < an->num_columns; c++)
            err = ARG(s->props[i], (cl_uint)(4 + c), s->cols[c]);
        if (err == CL_SUCCESS)
            err = ARG(s->props[i], (cl_uint)(4 + an->num_columns), s->ids);
        if (err == CL_SUCCESS)
            err = ARG(s->props[i], (cl_uint)(5 + an->num_columns), s->rng);
        if (err == CL_SUCCESS)
            err = ARG(s->props[i], 0, s->counts);
        if (err == CL_SUCCESS)
            err = ARG(s->props[i], 3, s->flag);
    }
    s->rng_fill = kernel(r, "hep_rng_fill", &err);
    s->init = kernel(r, "hep_init", &err);
    s->count = kernel(r, "hep_count", &err);
    s->offsets = kernel(r, "hep_offsets", &err);
    s->scatter = kernel(r, "hep_scatter", &err);
    s->hist = kernel(r, "hep_hist", &err);
    if (err != CL_SUCCESS)
        return fail(error, "cannot set up a device slot: %s (%d)", app_cl_error_name(err), err);
    return 0;
}

static void free_slot(struct run *r, struct slot *s)
{
    if (s->cols)
        for (size_t c = 0; c < r->an->num_columns; c++)
            if (s->cols[c])
                clReleaseMemObject(s->cols[c]);
    cl_mem mems[] = {s->ids, s->rng, s->idx[0], s->idx[1], s->flag, s->counts, s->groups, s->bins};
    for (size_t i = 0; i < sizeof(mems) / sizeof(mems[0]); i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
    if (s->props)
        for (size_t i = 0; i < r->np; i++)
            if (s->props[i])
                clReleaseKernel(s->props[i]);
    cl_kernel ks[] = {s->rng_fill, s->init, s->count, s->offsets, s->scatter, s->hist};
    for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++)
        if (ks[i])
            clReleaseKernel(ks[i]);
    free(s->cols);
    free(s->props);
    free(s->counts_host);
    free(s->idx_host);
    free(s->bins_host);
}

/* ---- one batch on one slot ---- */

struct outcome {
    cl_uint counts[HEP_MAX_PROPS + 1];
    double seconds[HEP_MAX_PROPS]; /* by proposition */
};

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cl_int e_ = (call);                                                                        \
        if (e_ != CL_SUCCESS) {                                                                    \
            fail(error, "%s: %s (%d)", #call, app_cl_error_name(e_), e_);                                    \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

static int process(struct run *r, struct slot *s, const struct batch *bt, const unsigned *order,
                   struct outcome *oc, char *error)
{
    const struct hep_analysis *an = r->an;
    struct device *d = s->dev;
    cl_uint n = (cl_uint)bt->n;
    size_t global = wg_round(bt->n), local = WG, one = 1;
    cl_event ev_rng = NULL, ev_last = NULL, ev_prop[HEP_MAX_PROPS] = {0};
    int rc = -1;

    /* Data setup on the device, on the slot's second queue: the ids, the
     * input columns and the random words of this batch travel and are made
     * while the pipeline queue still runs the other slot's batch (two slots
     * per device are the double buffer).  The first proposition waits for
     * the last of them; the queue is in order, so for all of them. */
    CHECK(clEnqueueWriteBuffer(d->rq, s->ids, CL_FALSE, 0, bt->n * 8, bt->ids, 0, NULL, NULL));
    size_t in = 0;
    for (size_t c = 0; c < an->num_columns; c++) {
        const struct hep_column *col = &an->columns[c];
        if (col->derived)
            continue;
        CHECK(clEnqueueWriteBuffer(d->rq, s->cols[c], CL_FALSE, 0,
                                   bt->n * col->width * type_size(col->type), bt->cols[in++], 0,
                                   NULL, NULL));
    }
    if (an->rng_per_event) {
        size_t rglobal = wg_round((size_t)n * (an->rng_per_event / 4));
        cl_uint lo = (cl_uint)an->seed, hi = (cl_uint)(an->seed >> 32);
        CHECK(ARG(s->rng_fill, 0, s->ids));
        CHECK(ARG(s->rng_fill, 1, s->rng));
        CHECK(ARG(s->rng_fill, 2, n));
        CHECK(ARG(s->rng_fill, 3, lo));
        CHECK(ARG(s->rng_fill, 4, hi));
        CHECK(clEnqueueNDRangeKernel(d->rq, s->rng_fill, 1, NULL, &rglobal, &local, 0, NULL,
                                     &ev_rng));
    } else {
        CHECK(clEnqueueMarkerWithWaitList(d->rq, 0, NULL, &ev_rng));
    }
    CHECK(clFlush(d->rq));
    cl_event ahead = ev_rng;

    s->counts_host[0] = n;
    CHECK(clEnqueueWriteBuffer(d->q, s->counts, CL_FALSE, 0, 4, s->counts_host, 0, NULL, NULL));
    if (r->bins_total)
        CHECK(clEnqueueWriteBuffer(d->q, s->bins, CL_FALSE, 0, (r->bins_total + 1) * 4, r->zeros,
                                   0, NULL, NULL));
    CHECK(ARG(s->init, 0, s->counts));
    CHECK(ARG(s->init, 1, s->idx[0]));
    CHECK(clEnqueueNDRangeKernel(d->q, s->init, 1, NULL, &global, &local, 0, NULL, NULL));

    for (cl_uint k = 0; k < r->np; k++) {
        unsigned p = order[k];
        cl_mem from = s->idx[k & 1], to = s->idx[(k + 1) & 1];
        CHECK(ARG(s->props[p], 1, k));
        CHECK(ARG(s->props[p], 2, from));
        CHECK(clEnqueueNDRangeKernel(d->q, s->props[p], 1, NULL, &global, &local, k == 0 ? 1 : 0,
                                     k == 0 ? &ahead : NULL, &ev_prop[k]));
        CHECK(ARG(s->count, 0, s->counts));
        CHECK(ARG(s->count, 1, k));
        CHECK(ARG(s->count, 2, s->flag));
        CHECK(ARG(s->count, 3, s->groups));
        CHECK(clEnqueueNDRangeKernel(d->q, s->count, 1, NULL, &global, &local, 0, NULL, NULL));
        CHECK(ARG(s->offsets, 0, s->counts));
        CHECK(ARG(s->offsets, 1, k));
        CHECK(ARG(s->offsets, 2, s->groups));
        CHECK(clEnqueueNDRangeKernel(d->q, s->offsets, 1, NULL, &one, NULL, 0, NULL, NULL));
        CHECK(ARG(s->scatter, 0, s->counts));
        CHECK(ARG(s->scatter, 1, k));
        CHECK(ARG(s->scatter, 2, s->flag));
        CHECK(ARG(s->scatter, 3, s->groups));
        CHECK(ARG(s->scatter, 4, from));
        CHECK(ARG(s->scatter, 5, to));
        CHECK(clEnqueueNDRangeKernel(d->q, s->scatter, 1, NULL, &global, &local, 0, NULL, NULL));
    }
    cl_mem last = s->idx[r->np & 1];
    cl_uint kk = (cl_uint)r->np;
    for (size_t h = 0; h < r->nh; h++) {
        const struct hep_hist *hh = &an->hists[h];
        size_t c = 0;
        while (strcmp(an->columns[c].name, hh->column))
            c++;
        double lo = hh->lo, scale = hh->bins / (hh->hi - hh->lo);
        cl_uint nb = hh->bins;
        cl_uint base = (cl_uint)r->bins_at[h];
        CHECK(ARG(s->hist, 0, s->counts));
        CHECK(ARG(s->hist, 1, kk));
        CHECK(ARG(s->hist, 2, last));
        CHECK(ARG(s->hist, 3, s->cols[c]));
        CHECK(ARG(s->hist, 4, s->bins));
        CHECK(ARG(s->hist, 5, base));
        CHECK(ARG(s->hist, 6, lo));
        CHECK(ARG(s->hist, 7, scale));
        CHECK(ARG(s->hist, 8, nb));
        cl_int err = clEnqueueNDRangeKernel(d->q, s->hist, 1, NULL, &global, &local, 0, NULL, NULL);
        CHECK(err);
    }
    CHECK(clEnqueueReadBuffer(d->q, s->counts, CL_FALSE, 0, (r->np + 1) * 4, s->counts_host, 0,
                              NULL, NULL));
    CHECK(clEnqueueReadBuffer(d->q, last, CL_FALSE, 0, bt->n * 4, s->idx_host, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(d->q, s->bins, CL_FALSE, 0, (r->bins_total + 1) * 4, s->bins_host,
                              0, NULL, &ev_last));
    CHECK(clFlush(d->q));
    CHECK(clWaitForEvents(1, &ev_last));
    for (size_t k = 0; k <= r->np; k++)
        oc->counts[k] = s->counts_host[k];
    for (size_t k = 0; k < r->np; k++) {
        cl_ulong t0 = 0, t1 = 0;
        clGetEventProfilingInfo(ev_prop[k], CL_PROFILING_COMMAND_START, sizeof(t0), &t0, NULL);
        clGetEventProfilingInfo(ev_prop[k], CL_PROFILING_COMMAND_END, sizeof(t1), &t1, NULL);
        oc->seconds[order[k]] = t1 > t0 ? (double)(t1 - t0) * 1e-9 : 0.0;
    }
    if (oc->counts[0] != n || oc->counts[r->np] > n) {
        fail(error, "the device returned inconsistent counts");
        goto out;
    }
    rc = 0;
out:
    if (rc && ev_last == NULL)
        clFinish(d->q); /* nothing may still write into the batch */
    if (rc)
        clFinish(d->rq); /* nor upload from it */
    for (size_t k = 0; k < r->np; k++)
        if (ev_prop[k])
            clReleaseEvent(ev_prop[k]);
    if (ev_rng)
        clReleaseEvent(ev_rng);
    if (ev_last)
        clReleaseEvent(ev_last);
    return rc;
}

/* Runs every kernel once on an empty batch: implementations that compile
 * kernels at their first launch (PoCL does) would otherwise charge the
 * compilation to the first propositions' times and to the first batches. */
static int warm_up(struct run *r, struct slot *s, size_t events, char *error)
{
    struct device *d = s->dev;
    /* Every launch names its group size (WG), so one size compiles all. */
    size_t global = wg_round(events), local = WG, one = 1;
    size_t rglobal = wg_round(events * (r->an->rng_per_event / 4));
    cl_uint zero = 0, base = 0, nb = 1;
    double lo = 0.0, scale = 1.0;
    int rc = -1;
    memset(s->counts_host, 0, (r->np + 1) * sizeof(cl_uint));
    CHECK(clEnqueueWriteBuffer(d->q, s->counts, CL_TRUE, 0, (r->np + 1) * 4, s->counts_host, 0,
                               NULL, NULL));
    CHECK(ARG(s->rng_fill, 0, s->ids));
    CHECK(ARG(s->rng_fill, 1, s->rng));
    CHECK(ARG(s->rng_fill, 2, zero));
    CHECK(ARG(s->rng_fill, 3, zero));
    CHECK(ARG(s->rng_fill, 4, zero));
    if (rglobal)
        CHECK(clEnqueueNDRangeKernel(d->rq, s->rng_fill, 1, NULL, &rglobal, &local, 0, NULL, NULL));
    CHECK(ARG(s->init, 0, s->counts));
    CHECK(ARG(s->init, 1, s->idx[0]));
    CHECK(clEnqueueNDRangeKernel(d->q, s->init, 1, NULL, &global, &local, 0, NULL, NULL));
    for (size_t p = 0; p < r->np; p++) {
        CHECK(ARG(s->props[p], 1, zero));
        CHECK(ARG(s->props[p], 2, s->idx[0]));
        CHECK(clEnqueueNDRangeKernel(d->q, s->props[p], 1, NULL, &global, &local, 0, NULL, NULL));
    }
    CHECK(ARG(s->count, 0, s->counts));
    CHECK(ARG(s->count, 1, zero));
    CHECK(ARG(s->count, 2, s->flag));
    CHECK(ARG(s->count, 3, s->groups));
    CHECK(clEnqueueNDRangeKernel(d->q, s->count, 1, NULL, &global, &local, 0, NULL, NULL));
    CHECK(ARG(s->offsets, 0, s->counts));
    CHECK(ARG(s->offsets, 1, zero));
    CHECK(ARG(s->offsets, 2, s->groups));
    CHECK(clEnqueueNDRangeKernel(d->q, s->offsets, 1, NULL, &one, NULL, 0, NULL, NULL));
    CHECK(ARG(s->scatter, 0, s->counts));
    CHECK(ARG(s->scatter, 1, zero));
    CHECK(ARG(s->scatter, 2, s->flag));
    CHECK(ARG(s->scatter, 3, s->groups));
    CHECK(ARG(s->scatter, 4, s->idx[0]));
    CHECK(ARG(s->scatter, 5, s->idx[1]));
    CHECK(clEnqueueNDRangeKernel(d->q, s->scatter, 1, NULL, &global, &local, 0, NULL, NULL));
    if (r->nh) {
        CHECK(ARG(s->hist, 0, s->counts));
        CHECK(ARG(s->hist, 1, zero));
        CHECK(ARG(s->hist, 2, s->idx[0]));
        CHECK(ARG(s->hist, 3, s->cols[0]));
        CHECK(ARG(s->hist, 4, s->bins));
        CHECK(ARG(s->hist, 5, base));
        CHECK(ARG(s->hist, 6, lo));
        CHECK(ARG(s->hist, 7, scale));
        CHECK(ARG(s->hist, 8, nb));
        CHECK(clEnqueueNDRangeKernel(d->q, s->hist, 1, NULL, &global, &local, 0, NULL, NULL));
    }
    CHECK(clFinish(d->rq));
    CHECK(clFinish(d->q));
    rc = 0;
out:
    return rc;
}

/* ---- checkpoints (called with the lock held) ---- */

static void append_number(char *s, size_t cap, unsigned v)
{
    size_t len = strlen(s);
    if (len + 12 < cap)
        snprintf(s + len, cap - len, len ? " %u" : "%u", v);
    else if (len + 4 < cap && strcmp(s + len - 3, "...") != 0)
        strcat(s, " ...");
}

static void record_positions(struct run *r)
{
    for (size_t k = 0; k < r->np; k++) {
        struct hep_prop_stats *ps = &r->res->props[r->order[k]];
        append_number(ps->positions, sizeof(ps->positions), (unsigned)k);
        ps->last_position = (unsigned)k;
    }
}

static void checkpoint(struct run *r)
{
    r->res->checkpoints++;
    if (r->o.adapt) {
        double w[HEP_MAX_PROPS];
        unsigned next[HEP_MAX_PROPS];
        hep_weights(r->np, r->samples, r->o.time_weight, w);
        if (hep_order(r->np, r->deps, w, r->order, next) == 0)
            memcpy(r->order, next, sizeof(next[0]) * r->np);
    }
    record_positions(r);
    /* Per event: the batches before the first checkpoint are smaller. */
    if (!r->fixed_split && !r->ds_done && r->ds_events && r->dp_events) {
        hep_balance_step(&r->bal, r->ds_busy / (double)r->ds_events,
                         r->dp_busy / (double)r->dp_events);
        r->ds_target = r->bal.ds;
    }
    append_number(r->res->splits, sizeof(r->res->splits), r->ds_done ? 0 : r->ds_target);
    r->ds_busy = r->dp_busy = 0.0;
    r->ds_events = r->dp_events = 0;
    r->since_checkpoint = 0;
    pthread_cond_broadcast(&r->cond);
}

/* ---- the threads ---- */

struct worker {
    struct run *r;
    unsigned index;
};

static struct batch *new_batch(struct run *r)
{
    struct batch *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    b->ids = malloc(r->o.batch * 8);
    b->cols = calloc(r->nin ? r->nin : 1, sizeof(void *));
    if (!b->ids || !b->cols)
        return NULL;
    size_t in = 0;
    for (size_t c = 0; c < r->an->num_columns; c++) {
        const struct hep_column *col = &r->an->columns[c];
        if (!col->derived && !(b->cols[in++] = malloc(r->o.batch * col->width * 4)))
            return NULL;
    }
    return b;
}

static void free_batch(struct run *r, struct batch *b)
{
    if (!b)
        return;
    for (size_t i = 0; b->cols && i < r->nin; i++)
        free(b->cols[i]);
    free(b->cols);
    free(b->ids);
    free(b);
}

/* A free slot on the device with the most free slots.  Until the first
 * checkpoint each device runs one batch at a time: the batches queued then
 * all run in the initial order, which may be the worst one. */
static struct slot *take_slot(struct run *r)
{
    unsigned limit = r->o.adapt && r->res->checkpoints == 0 ? 1 : r->o.slots;
    struct device *best = NULL;
    for (unsigned i = 0; i < r->ndev; i++) {
        struct device *d = &r->devs[i];
        if (r->o.slots - d->free_slots < limit && (!best || d->free_slots > best->free_slots))
            best = d;
    }
    if (!best)
        return NULL;
    for (unsigned i = 0; i < r->o.slots; i++)
        if (!best->slots[i].busy) {
            best->slots[i].busy = true;
            best->free_slots--;
            return &best->slots[i];
        }
    return NULL;
}

static int merge(struct run *r, struct slot *s, const struct batch *bt, const unsigned *order,
                 const struct outcome *oc)
{
    cl_uint sel = oc->counts[r->np];
    if (r->nids + sel > r->cap_ids) {
        size_t cap = r->cap_ids ? r->cap_ids * 2 : 4096;
        while (cap < r->nids + sel)
            cap *= 2;
        uint64_t *ids = realloc(r->ids, cap * 8);
        if (!ids)
            return -1;
        r->ids = ids, r->cap_ids = cap;
    }
    for (cl_uint i = 0; i < sel; i++) {
        if (s->idx_host[i] >= bt->n)
            return -1;
        r->ids[r->nids++] = bt->ids[s->idx_host[i]];
    }
    for (size_t i = 0; i < r->bins_total; i++)
        r->hist_sum[i] += s->bins_host[i];
    for (size_t k = 0; k < r->np; k++) {
        struct hep_sample *sm = &r->samples[order[k]];
        sm->in += oc->counts[k];
        sm->out += oc->counts[k + 1];
        sm->seconds += oc->seconds[order[k]];
        sm->launches++;
    }
    r->done_events += bt->n;
    return 0;
}

/* A DS turn: reads the next batch.  Called and returns with the lock held. */
static void ds_turn(struct run *r)
{
    if (r->next_event >= r->total) {
        /* Done only once the last batches claimed are in the ready queue:
         * DP threads stop when DS is done and nothing is queued. */
        if (r->reading == 0) {
            r->ds_done = true;
            r->ds_end = now();
            pthread_cond_broadcast(&r->cond);
        } else {
            pthread_cond_wait(&r->cond, &r->lock);
        }
        return;
    }
    struct batch *b = r->free_list;
    if (!b) {
        pthread_cond_wait(&r->cond, &r->lock);
        return;
    }
    r->free_list = b->next;
    b->first = r->next_event;
    /* After the small ones, a batch starts at a multiple of the batch size
     * again: the file's chunks are read whole, once each. */
    size_t want = r->claimed++ < r->o.checkpoint ? r->probe
                                                 : r->o.batch - r->next_event % r->o.batch;
    b->n = r->total - b->first < want ? (size_t)(r->total - b->first) : want;
    r->next_event += b->n;
    r->reading++;
    pthread_mutex_unlock(&r->lock);
    char error[HEP_ERROR_SIZE];
    double t = now();
    int rc = hep_file_read(r->file, b->first, b->n, b->ids, b->cols, error);
    t = now() - t;
    pthread_mutex_lock(&r->lock);
    r->reading--;
    if (rc) {
        b->next = r->free_list;
        r->free_list = b;
        if (!r->failed) {
            snprintf(r->error, sizeof(r->error), "%s", error);
            r->failed = true;
        }
        pthread_cond_broadcast(&r->cond);
        return;
    }
    b->next = NULL;
    if (r->ready_tail)
        r->ready_tail->next = b;
    else
        r->ready_head = b;
    r->ready_tail = b;
    r->ds_busy += t;
    r->ds_events += b->n;
    pthread_cond_broadcast(&r->cond);
}

/* A DP turn: runs one batch.  Called and returns with the lock held.
 * *wait_since: when this thread began to wait for a slot with a batch
 * ready (the devices are the DP side's bottleneck then), or 0. */
static void dp_turn(struct run *r, double *wait_since)
{
    if (!r->ready_head) {
        *wait_since = 0;
        if (r->ds_done && r->processing == 0)
            r->stop = true, pthread_cond_broadcast(&r->cond);
        else
            pthread_cond_wait(&r->cond, &r->lock);
        return;
    }
    struct slot *s = take_slot(r);
    if (!s) {
        if (*wait_since == 0)
            *wait_since = now();
        pthread_cond_wait(&r->cond, &r->lock);
        return;
    }
    struct batch *b = r->ready_head;
    r->ready_head = b->next;
    if (!r->ready_head)
        r->ready_tail = NULL;
    unsigned order[HEP_MAX_PROPS];
    memcpy(order, r->order, sizeof(order[0]) * r->np);
    r->processing++;
    double t = *wait_since ? *wait_since : now();
    *wait_since = 0;
    pthread_mutex_unlock(&r->lock);

    struct outcome oc;
    char error[HEP_ERROR_SIZE];
    int rc = process(r, s, b, order, &oc, error);

    pthread_mutex_lock(&r->lock);
    if (rc == 0 && merge(r, s, b, order, &oc) != 0)
        rc = fail(error, "out of memory, or a device returned a bad index");
    if (rc && !r->failed) {
        snprintf(r->error, sizeof(r->error), "%s", error);
        r->failed = true;
    }
    s->busy = false;
    s->dev->free_slots++;
    b->next = r->free_list;
    r->free_list = b;
    r->processing--;
    r->dp_busy += now() - t;
    r->dp_events += b->n;
    if (rc == 0 && ++r->since_checkpoint >= r->bal.interval)
        checkpoint(r);
    pthread_cond_broadcast(&r->cond);
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct run *r = w->r;
    double wait_since = 0;
    pthread_mutex_lock(&r->lock);
    while (!r->failed && !r->stop) {
        if (!r->ds_done && w->index < r->ds_target)
            ds_turn(r);
        else
            dp_turn(r, &wait_since);
    }
    pthread_mutex_unlock(&r->lock);
    return NULL;
}

static void progress(struct run *r, bool tty, int *shown, bool last)
{
    app_progress(r->an->name, "events", r->done_events, r->total, tty, shown, last);
}

/* ---- the run ---- */

void hep_options_default(struct hep_options *o)
{
    *o = (struct hep_options){.ds_threads = -1, .adapt = true, .time_weight = 0.3,
                              .progress = true};
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void teardown(struct run *r)
{
    if (r->devs) {
        for (unsigned i = 0; i < r->ndev; i++) {
            struct device *d = &r->devs[i];
            if (d->q)
                clFinish(d->q);
            if (d->rq)
                clFinish(d->rq);
            for (unsigned k = 0; d->slots && k < r->o.slots; k++)
                free_slot(r, &d->slots[k]);
            free(d->slots);
            if (d->q)
                clReleaseCommandQueue(d->q);
            if (d->rq)
                clReleaseCommandQueue(d->rq);
        }
        free(r->devs);
    }
    if (r->prog)
        clReleaseProgram(r->prog);
    if (r->ctx)
        clReleaseContext(r->ctx);
    while (r->free_list) {
        struct batch *b = r->free_list;
        r->free_list = b->next;
        free_batch(r, b);
    }
    while (r->ready_head) {
        struct batch *b = r->ready_head;
        r->ready_head = b->next;
        free_batch(r, b);
    }
    hep_file_close(r->file, NULL);
    free(r->zeros);
    free(r->bins_at);
    free(r->ids);
    free(r->hist_sum);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->cond);
}

int hep_run(const struct hep_analysis *an, const struct hep_options *opts,
            struct hep_result *result, char *error)
{
    struct run rr = {.an = an, .o = *opts, .res = result}, *r = &rr;
    memset(result, 0, sizeof(*result));
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->cond, NULL);
    double t0 = now();
    int rc = -1;
    pthread_t *tids = NULL;
    struct worker *ws = NULL;
    unsigned started = 0;

    r->np = an->num_props, r->nh = an->num_hists;
    if (!r->o.batch)
        r->o.batch = 4096;
    if (!r->o.slots)
        r->o.slots = 2;
    if (!r->o.checkpoint)
        r->o.checkpoint = 2;
    if (r->o.time_weight < 0 || r->o.time_weight > 1)
        r->o.time_weight = 0.3;
    if (r->o.batch > (1u << 24))
        return teardown(r), fail(error, "a batch holds at most %u events", 1u << 24);
    /* Until the first checkpoint the order is the initial one, however bad:
     * reordering, the run spends as little as it can in it, and learns the
     * weights from batches an eighth of the size. */
    r->probe = r->o.batch;
    if (r->o.adapt && r->o.batch >= 8 * WG)
        r->probe = wg_round(r->o.batch / 8);
    if (check_analysis(r, error))
        return teardown(r), -1;
    for (size_t c = 0; c < an->num_columns; c++)
        r->nin += !an->columns[c].derived;
    r->bins_at = calloc(r->nh + 1, sizeof(size_t));
    if (!r->bins_at)
        return teardown(r), fail(error, "out of memory");
    for (size_t h = 0; h < r->nh; h++) {
        r->bins_at[h] = r->bins_total;
        r->bins_total += an->hists[h].bins + 2;
    }
    r->zeros = calloc(r->bins_total + 1, 4);
    r->hist_sum = calloc(r->bins_total + 1, 8);
    if (!r->zeros || !r->hist_sum)
        return teardown(r), fail(error, "out of memory");
    if (!(r->file = hep_file_open(r->o.input, an->columns, an->num_columns, error)))
        return teardown(r), -1;
    r->total = hep_file_events(r->file);
    if (open_devices(r, error))
        return teardown(r), -1;
    for (unsigned i = 0; i < r->ndev; i++) {
        struct device *d = &r->devs[i];
        d->slots = calloc(r->o.slots, sizeof(*d->slots));
        if (!d->slots)
            return teardown(r), fail(error, "out of memory");
        for (unsigned k = 0; k < r->o.slots; k++)
            if (make_slot(r, d, &d->slots[k], error))
                return teardown(r), -1;
        if (warm_up(r, &d->slots[0], r->o.batch, error) ||
            (r->probe != r->o.batch && warm_up(r, &d->slots[0], r->probe, error)))
            return teardown(r), -1;
        d->free_slots = r->o.slots;
    }

    r->threads = r->o.threads ? r->o.threads : 2 + 2 * r->ndev;
    if (r->threads < 2)
        r->threads = 2;
    hep_balance_init(&r->bal, r->threads, r->o.checkpoint);
    r->bal.dp_cap = r->ndev * r->o.slots;
    r->fixed_split = r->o.ds_threads >= 0;
    if (r->fixed_split) {
        if (r->o.ds_threads < 1 || (unsigned)r->o.ds_threads >= r->threads)
            return teardown(r), fail(error, "DS threads must be 1 to %u (of %u threads)",
                                     r->threads - 1, r->threads);
        r->bal.ds = (unsigned)r->o.ds_threads;
    }
    r->ds_target = r->bal.ds;
    /* Host buffers: one per thread and per device slot, so neither side
     * starves for want of one. */
    for (unsigned i = 0; i < r->threads + r->ndev * r->o.slots; i++) {
        struct batch *b = new_batch(r);
        if (!b) {
            free_batch(r, b);
            return teardown(r), fail(error, "out of memory for the batches");
        }
        b->next = r->free_list;
        r->free_list = b;
    }
    for (size_t i = 0; i < r->np; i++) {
        r->order[i] = (unsigned)i;
        result->props[i].level = r->level[i];
        result->props[i].first_position = (unsigned)i;
    }
    record_positions(r);
    append_number(result->splits, sizeof(result->splits), r->ds_target);

    r->t0 = now();
    tids = calloc(r->threads, sizeof(*tids));
    ws = calloc(r->threads, sizeof(*ws));
    if (!tids || !ws) {
        fail(error, "out of memory");
        goto out;
    }
    for (; started < r->threads; started++) {
        ws[started] = (struct worker){r, started};
        if (pthread_create(&tids[started], NULL, worker_main, &ws[started])) {
            run_fail(r, "cannot start a thread");
            break;
        }
    }
    bool tty = isatty(2), drawn = false;
    int shown = 0;
    pthread_mutex_lock(&r->lock);
    while (!r->stop && !r->failed) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 250 * 1000 * 1000;
        if (ts.tv_nsec >= 1000000000L)
            ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_cond_timedwait(&r->cond, &r->lock, &ts);
        if (r->o.progress && now() - r->t0 > 1.0 && !r->stop && !r->failed) {
            progress(r, tty, &shown, false);
            drawn = true;
        }
    }
    if (drawn && !r->failed)
        progress(r, tty, &shown, true);
    pthread_mutex_unlock(&r->lock);
    for (unsigned i = 0; i < started; i++)
        pthread_join(tids[i], NULL);
    if (r->failed) {
        fail(error, "%s", r->error);
        goto out;
    }
    if (r->done_events != r->total) {
        fail(error, "internal error: %" PRIu64 " of %" PRIu64 " events processed", r->done_events,
             r->total);
        goto out;
    }

    qsort(r->ids, r->nids, 8, cmp_u64);
    result->events = r->total;
    result->selected = r->nids;
    result->devices = r->ndev;
    result->threads = r->threads;
    result->final_ds = r->ds_target;
    result->ds_seconds = (r->ds_end ? r->ds_end : now()) - r->t0;
    result->ids = r->ids;
    r->ids = NULL;
    result->hists = calloc(r->nh ? r->nh : 1, sizeof(uint64_t *));
    result->num_hists = r->nh;
    if (!result->hists) {
        fail(error, "out of memory");
        goto out;
    }
    for (size_t h = 0; h < r->nh; h++) {
        size_t nb = an->hists[h].bins + 2;
        if (!(result->hists[h] = malloc(nb * 8))) {
            fail(error, "out of memory");
            goto out;
        }
        memcpy(result->hists[h], r->hist_sum + r->bins_at[h], nb * 8);
    }
    for (size_t i = 0; i < r->np; i++) {
        result->props[i].events_in = r->samples[i].in;
        result->props[i].events_out = r->samples[i].out;
        result->props[i].seconds = r->samples[i].seconds;
        result->order[i] = r->order[i];
    }
    result->seconds = now() - r->t0;
    result->setup_seconds = r->t0 - t0;
    rc = 0;
out:
    free(tids);
    free(ws);
    teardown(r);
    if (rc)
        hep_result_free(result);
    return rc;
}

void hep_result_free(struct hep_result *res)
{
    free(res->ids);
    res->ids = NULL;
    if (res->hists)
        for (size_t h = 0; h < res->num_hists; h++)
            free(res->hists[h]);
    free(res->hists);
    res->hists = NULL;
}

/* ---- outputs ---- */

void hep_print_table(FILE *out, const struct hep_analysis *an, const struct hep_result *res)
{
    double total = 0.0;
    for (size_t i = 0; i < an->num_props; i++)
        total += res->props[i].seconds;
    fprintf(out, "%-16s %5s %12s %12s %8s %10s %8s %12s  %s\n", "proposition", "level",
            "events_in", "events_out", "drop", "seconds", "time%", "ns/event", "positions");
    for (size_t k = 0; k < an->num_props; k++) {
        unsigned i = res->order[k];
        const struct hep_prop_stats *ps = &res->props[i];
        double drop = ps->events_in ? 1.0 - (double)ps->events_out / (double)ps->events_in : 0.0;
        fprintf(out, "%-16s %5u %12" PRIu64 " %12" PRIu64 " %8.4f %10.4f %8.2f %12.1f  %s\n",
                an->props[i].name, ps->level, ps->events_in, ps->events_out, drop, ps->seconds,
                total > 0 ? 100.0 * ps->seconds / total : 0.0,
                ps->events_in ? ps->seconds * 1e9 / (double)ps->events_in : 0.0, ps->positions);
    }
}

/* Opens DIR/NAME-WHAT for writing through a temporary file. */
static FILE *open_tmp(const char *dir, const char *name, const char *what, char *path,
                      char *tmp, char *error)
{
    snprintf(path, 4096, "%s/%s-%s", dir, name, what);
    snprintf(tmp, 4096, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f)
        fail(error, "cannot write %s: %s", tmp, strerror(errno));
    return f;
}

static int close_tmp(FILE *f, const char *path, const char *tmp, char *error)
{
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        return fail(error, "cannot write %s", path);
    }
    return 0;
}

#ifndef HEP_PLOT_SCRIPT
#define HEP_PLOT_SCRIPT "hep-plot.py"
#endif

int hep_write_outputs(const struct hep_analysis *an, const struct hep_result *res,
                      const char *dir, bool plot, char *error)
{
    char path[4096], tmp[4096], hists[4096];
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return fail(error, "output directory %s does not exist", dir);
    FILE *f = open_tmp(dir, an->name, "hists.txt", path, tmp, error);
    if (!f)
        return -1;
    fprintf(f, "# %s: histograms of the %" PRIu64 " selected events of %" PRIu64 "\n",
            an->name, res->selected, res->events);
    for (size_t h = 0; h < an->num_hists; h++) {
        const struct hep_hist *hh = &an->hists[h];
        fprintf(f, "histogram %s bins=%u lo=%.17g hi=%.17g title=%s\n", hh->name, hh->bins, hh->lo,
                hh->hi, hh->title ? hh->title : hh->name);
        fprintf(f, "underflow %" PRIu64 "\n", res->hists[h][0]);
        for (unsigned b = 0; b < hh->bins; b++)
            fprintf(f, "%.17g %.17g %" PRIu64 "\n", hh->lo + (hh->hi - hh->lo) * b / hh->bins,
                    hh->lo + (hh->hi - hh->lo) * (b + 1) / hh->bins, res->hists[h][b + 1]);
        fprintf(f, "overflow %" PRIu64 "\n", res->hists[h][hh->bins + 1]);
    }
    if (close_tmp(f, path, tmp, error))
        return -1;
    snprintf(hists, sizeof(hists), "%s", path);

    if (!(f = open_tmp(dir, an->name, "ids.txt", path, tmp, error)))
        return -1;
    for (uint64_t i = 0; i < res->selected; i++)
        fprintf(f, "%" PRIu64 "\n", res->ids[i]);
    if (close_tmp(f, path, tmp, error))
        return -1;

    if (!(f = open_tmp(dir, an->name, "props.txt", path, tmp, error)))
        return -1;
    hep_print_table(f, an, res);
    if (close_tmp(f, path, tmp, error))
        return -1;

    if (plot) {
        /* The python3 first on PATH may lack matplotlib where Debian's
         * /usr/bin/python3 has it (python3-matplotlib): try each in turn;
         * the script exits 3 when it cannot import matplotlib. */
        const char *script = getenv("HEP_PLOT_SCRIPT");
        const char *pythons[] = {getenv("HEP_PYTHON"), "python3", "/usr/bin/python3"};
        char prefix[4096];
        int status = -1;
        script = script && *script ? script : HEP_PLOT_SCRIPT;
        snprintf(prefix, sizeof(prefix), "%s/%s-", dir, an->name);
        for (size_t i = 0; i < 3 && status != 0; i++) {
            if (!pythons[i] || !*pythons[i])
                continue;
            fflush(NULL);
            pid_t pid = fork();
            if (pid == 0) {
                execlp(pythons[i], pythons[i], script, hists, prefix, (char *)NULL);
                _exit(127);
            }
            int st = 0;
            if (pid < 0 || waitpid(pid, &st, 0) < 0)
                break;
            status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
            if (status != 0 && status != 3 && status != 127)
                break;
        }
        if (status != 0)
            return fail(error, "plotting failed: %s needs python3 with matplotlib "
                               "(Debian: python3-matplotlib)", script);
    }
    return 0;
}
