/*
 * vocl-bench-worker: the measuring half of vocl-bench.  An ordinary OpenCL
 * 1.2 program that knows nothing of VOCL: vocl-bench runs the same binary
 * natively and under vocl-run and compares what it prints.
 *
 * Output on stdout, one measurement a line: section,name,param,value,unit
 * (section: info, call, bw, lat, launch, rss, end).  Every transfer and
 * launch is checked; a wrong result ends the run with exit status 3, so no
 * speed of a wrong result is ever printed.  Diagnostics go to stderr.
 */

/* The build may pass a newer target on the command line; this program
 * deliberately sticks to the 1.2 API, so override it. */
#undef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* clock_gettime, posix_memalign */
#endif

#include <CL/cl.h>

#include "clutil.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define PROG "vocl-bench-worker"

#define EXIT_CL_ERROR 1
#define EXIT_USAGE    2
#define EXIT_VERIFY   3

#define MAX_SIZES       32
#define KERNEL_ARGS     7
#define LAUNCH_GLOBAL   64u /* work-items of each small kernel */
#define CALL_BUF_BYTES  4096u
#define LAT_WARMUP_FRAC 10 /* 1/10 of the latency samples are warm-up */
#define IDLE_READS      20 /* blocking reads after 10 ms idle (at most lat_iters) */

static const char kernel_source[] =
    "/* 7 arguments, as in the launch-throughput test: out, then 6 scalars. */\n"
    "__kernel void k7(__global uint *out, uint a, uint b, uint c, uint d,\n"
    "                 uint e, uint f)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    out[i] += a + 2u * b + 3u * c + 4u * d + 5u * e + 6u * f + (uint)i;\n"
    "}\n";

/* The scalar arguments 2..6 of k7: set again before every launch, same
 * values; argument 1 changes every launch. */
static const cl_uint k7_const[5] = {3, 5, 7, 11, 13};

enum section {
    SEC_CALL = 1 << 0,   /* (a) per-call overhead, the calls of the VOCL paper's Table 3 */
    SEC_BW = 1 << 1,     /* (b) bandwidth */
    SEC_LAT = 1 << 2,    /* (c) blocking round-trip latency */
    SEC_LAUNCH = 1 << 3, /* (d) launch throughput */
};

struct options {
    unsigned sections;
    size_t sizes[MAX_SIZES];
    unsigned nsizes;
    unsigned window;
    unsigned reps;     /* timed repetitions after one warm-up */
    unsigned launches; /* kernels per launch-throughput repetition */
    unsigned lat_iters;
    unsigned call_outer;  /* context/queue/program rounds in (a) */
    unsigned call_inner;  /* buffer/kernel/transfer rounds per context round */
    unsigned call_simple; /* clGetPlatformIDs / clGetDeviceIDs repetitions */
    unsigned platform, device;
};

/* The objects every section uses. */
struct bench {
    cl_platform_id platform;
    cl_device_id device;
    cl_context context;
    cl_command_queue queue;
    cl_program program;
    cl_kernel kernel;
};

void app_cl_fail(const char *call, cl_int err, int line)
{
    fprintf(stderr, PROG ": %s failed with OpenCL error %d at line %d\n", call, (int)err, line);
    exit(EXIT_CL_ERROR);
}

static void verify_fail(const char *what, size_t param, const char *detail)
{
    fprintf(stderr, PROG ": verification failed: %s (%zu): %s\n", what, param, detail);
    exit(EXIT_VERIFY);
}

static void *xmalloc(size_t size)
{
    void *p = NULL;
    /* Page-aligned, as drivers like their host pointers. */
    if (posix_memalign(&p, 4096, size ? size : 1) != 0) {
        fprintf(stderr, PROG ": out of memory (%zu bytes)\n", size);
        exit(EXIT_CL_ERROR);
    }
    return p;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v in place. */
static double median(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void emit(const char *section, const char *name, const char *param, double value,
                 const char *unit)
{
    printf("%s,%s,%s,%.6e,%s\n", section, name, param, value, unit);
}

static void emit_size(const char *section, const char *name, size_t param, double value,
                      const char *unit)
{
    char p[32];
    snprintf(p, sizeof(p), "%zu", param);
    emit(section, name, p, value, unit);
}

/* info lines carry text: commas would break the CSV, so they become spaces. */
static void emit_info(const char *name, const char *text)
{
    printf("info,%s,,", name);
    for (const char *c = text; *c; c++)
        putchar(*c == ',' || *c == '\n' ? ' ' : *c);
    printf(",\n");
}

/* ---- options ---- */

static void usage(FILE *out)
{
    fprintf(out, "usage: " PROG " [OPTIONS]\n"
                 "Measures OpenCL call overhead, bandwidth, latency and launch throughput;\n"
                 "prints CSV lines section,name,param,value,unit.\n"
                 "  --sections LIST  any of a,b,c,d (or call,bw,lat,launch); default all\n"
                 "  --sizes LIST     transfer sizes, e.g. 512K,1M,64M (default 512K..64M, x2)\n"
                 "  --window N       non-blocking transfers per window (default 32)\n"
                 "  --reps N         timed repetitions after one warm-up (default 5)\n"
                 "  --launches N     kernels per launch-throughput repetition (default 10000)\n"
                 "  --platform P     platform index (default 0)\n"
                 "  --device N       device index on that platform (default 0)\n"
                 "  --quick          tiny sizes and iteration counts (a smoke test)\n"
                 "  --help           this help\n");
}

static bool parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
    uint64_t v;
    if (!s || !app_parse_u64(s, &v) || v > max)
        return false;
    *out = v;
    return true;
}

/* A size: a number with an optional K, M or G suffix (binary units). */
static bool parse_size(const char *s, size_t *out)
{
    if (s[0] < '0' || s[0] > '9')
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift)
        end++;
    if (errno || *end || v == 0 || v > (SIZE_MAX >> shift))
        return false;
    *out = (size_t)v << shift;
    return true;
}

static bool parse_sizes(char *list, struct options *o)
{
    o->nsizes = 0;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        if (o->nsizes == MAX_SIZES || !parse_size(tok, &o->sizes[o->nsizes]))
            return false;
        o->nsizes++;
    }
    return o->nsizes > 0;
}

static bool parse_sections(char *list, unsigned *out)
{
    static const struct {
        const char *letter, *name;
        unsigned bit;
    } names[] = {
        {"a", "call", SEC_CALL},
        {"b", "bw", SEC_BW},
        {"c", "lat", SEC_LAT},
        {"d", "launch", SEC_LAUNCH},
    };
    *out = 0;
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        unsigned bit = 0;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (!strcmp(tok, names[i].letter) || !strcmp(tok, names[i].name))
                bit = names[i].bit;
        if (!bit)
            return false;
        *out |= bit;
    }
    return *out != 0;
}

static void bad_option(const char *opt, const char *value)
{
    fprintf(stderr, PROG ": bad value for %s: '%s'\n", opt, value ? value : "(missing)");
    usage(stderr);
    exit(EXIT_USAGE);
}

static void parse_args(int argc, char **argv, struct options *o)
{
    bool quick = false, sizes_given = false;
    unsigned long long v;
    for (int i = 1; i < argc; i++)
        quick |= !strcmp(argv[i], "--quick");
    /* --quick first sets small defaults; explicit options still win. */
    struct options d = {
        .sections = SEC_CALL | SEC_BW | SEC_LAT | SEC_LAUNCH,
        .window = quick ? 4 : 32,
        .reps = quick ? 2 : 5,
        .launches = quick ? 200 : 10000,
        .lat_iters = quick ? 100 : 2000,
        .call_outer = quick ? 2 : 20,
        .call_inner = quick ? 5 : 50,
        .call_simple = quick ? 50 : 1000,
    };
    *o = d;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (!strcmp(a, "--quick")) {
            continue;
        } else if (!strcmp(a, "--sections")) {
            if (!val || !parse_sections(argv[++i], &o->sections))
                bad_option(a, val);
        } else if (!strcmp(a, "--sizes")) {
            if (!val || !parse_sizes(argv[++i], o))
                bad_option(a, val);
            sizes_given = true;
        } else if (!strcmp(a, "--window")) {
            if (!parse_uint(val, 100000, &v) || v == 0)
                bad_option(a, val);
            o->window = (unsigned)v, i++;
        } else if (!strcmp(a, "--reps")) {
            if (!parse_uint(val, 100000, &v) || v == 0)
                bad_option(a, val);
            o->reps = (unsigned)v, i++;
        } else if (!strcmp(a, "--launches")) {
            if (!parse_uint(val, 100000000, &v) || v == 0)
                bad_option(a, val);
            o->launches = (unsigned)v, i++;
        } else if (!strcmp(a, "--platform")) {
            if (!parse_uint(val, 1000, &v))
                bad_option(a, val);
            o->platform = (unsigned)v, i++;
        } else if (!strcmp(a, "--device")) {
            if (!parse_uint(val, 1000, &v))
                bad_option(a, val);
            o->device = (unsigned)v, i++;
        } else {
            fprintf(stderr, PROG ": unknown argument '%s'\n", a);
            usage(stderr);
            exit(EXIT_USAGE);
        }
    }
    if (sizes_given)
        return;
    /* Quick: one size below and one at the 16 MiB of the bandwidth target. */
    o->nsizes = 0;
    if (quick) {
        o->sizes[o->nsizes++] = 512u << 10;
        o->sizes[o->nsizes++] = 16u << 20;
    } else {
        for (size_t s = 512u << 10; s <= (64u << 20); s *= 2)
            o->sizes[o->nsizes++] = s;
    }
}

/* ---- set-up ---- */

static void build_program(struct bench *b)
{
    cl_int err;
    const char *source = kernel_source;
    b->program = clCreateProgramWithSource(b->context, 1, &source, NULL, &err);
    CL_CHECK_ERR("clCreateProgramWithSource", err);
    err = clBuildProgram(b->program, 1, &b->device, "", NULL, NULL);
    if (err == CL_BUILD_PROGRAM_FAILURE) {
        size_t size = 0;
        CL_CHECK(
            clGetProgramBuildInfo(b->program, b->device, CL_PROGRAM_BUILD_LOG, 0, NULL, &size));
        char *log = xmalloc(size + 1);
        CL_CHECK(
            clGetProgramBuildInfo(b->program, b->device, CL_PROGRAM_BUILD_LOG, size, log, NULL));
        log[size] = '\0';
        fprintf(stderr, PROG ": build failed:\n%s\n", log);
        exit(EXIT_CL_ERROR);
    }
    CL_CHECK_ERR("clBuildProgram", err);
}

/* The first OpenCL call of the process is timed on its own: through VOCL it
 * is the one that connects to the proxies. */
static void open_device(const struct options *o, struct bench *b)
{
    cl_uint np = 0;
    double t0 = now();
    cl_int err = clGetPlatformIDs(0, NULL, &np);
    double first = now() - t0;
    CL_CHECK_ERR("clGetPlatformIDs", err);
    if (o->platform >= np) {
        fprintf(stderr, PROG ": platform %u does not exist (%u found)\n", o->platform, np);
        exit(EXIT_CL_ERROR);
    }
    cl_platform_id *platforms = xmalloc(np * sizeof(*platforms));
    CL_CHECK(clGetPlatformIDs(np, platforms, NULL));
    b->platform = platforms[o->platform];
    free(platforms);

    cl_uint nd = 0;
    CL_CHECK(clGetDeviceIDs(b->platform, CL_DEVICE_TYPE_ALL, 0, NULL, &nd));
    if (o->device >= nd) {
        fprintf(stderr, PROG ": device %u does not exist (%u on platform %u)\n", o->device, nd,
                o->platform);
        exit(EXIT_CL_ERROR);
    }
    cl_device_id *devices = xmalloc(nd * sizeof(*devices));
    CL_CHECK(clGetDeviceIDs(b->platform, CL_DEVICE_TYPE_ALL, nd, devices, NULL));
    b->device = devices[o->device];
    free(devices);

    char text[256];
    CL_CHECK(clGetPlatformInfo(b->platform, CL_PLATFORM_NAME, sizeof(text), text, NULL));
    text[sizeof(text) - 1] = '\0';
    emit_info("platform", text);
    CL_CHECK(clGetDeviceInfo(b->device, CL_DEVICE_NAME, sizeof(text), text, NULL));
    text[sizeof(text) - 1] = '\0';
    emit_info("device", text);
    if (o->sections & SEC_CALL)
        emit("call", "clGetPlatformIDs", "first", first, "s");

    b->context = clCreateContext(NULL, 1, &b->device, NULL, NULL, &err);
    CL_CHECK_ERR("clCreateContext", err);
    b->queue = clCreateCommandQueue(b->context, b->device, 0, &err);
    CL_CHECK_ERR("clCreateCommandQueue", err);
    build_program(b);
    b->kernel = clCreateKernel(b->program, "k7", &err);
    CL_CHECK_ERR("clCreateKernel", err);
}

static void close_device(struct bench *b)
{
    CL_CHECK(clReleaseKernel(b->kernel));
    CL_CHECK(clReleaseProgram(b->program));
    CL_CHECK(clReleaseCommandQueue(b->queue));
    CL_CHECK(clReleaseContext(b->context));
}

/* Sets all 7 arguments of k7 for launch number i. */
static void set_k7_args(cl_kernel k, cl_mem out, cl_uint i)
{
    CL_CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &out));
    CL_CHECK(clSetKernelArg(k, 1, sizeof(cl_uint), &i));
    for (cl_uint a = 0; a < 5; a++)
        CL_CHECK(clSetKernelArg(k, 2 + a, sizeof(cl_uint), &k7_const[a]));
}

/* What k7 adds to out[gid] in launch number i. */
static cl_uint k7_value(cl_uint i, cl_uint gid)
{
    cl_uint v = i + (cl_uint)gid;
    for (cl_uint a = 0; a < 5; a++)
        v += (a + 2) * k7_const[a];
    return v;
}

/* ---- (a) per-call overhead ---- */

/* The calls of Table 3 of the VOCL paper, in its order. */
#define TABLE3(X)                                                                                  \
    X(clGetPlatformIDs)                                                                            \
    X(clGetDeviceIDs)                                                                              \
    X(clCreateContext)                                                                             \
    X(clCreateCommandQueue)                                                                        \
    X(clCreateProgramWithSource)                                                                   \
    X(clBuildProgram)                                                                              \
    X(clCreateBuffer)                                                                              \
    X(clCreateKernel)                                                                              \
    X(clSetKernelArg)                                                                              \
    X(clEnqueueWriteBuffer)                                                                        \
    X(clEnqueueNDRangeKernel)                                                                      \
    X(clEnqueueReadBuffer)                                                                         \
    X(clFinish)                                                                                    \
    X(clReleaseMemObject)                                                                          \
    X(clReleaseKernel)                                                                             \
    X(clReleaseProgram)                                                                            \
    X(clReleaseCommandQueue)                                                                       \
    X(clReleaseContext)

enum call_id {
#define X(name) CALL_##name,
    TABLE3(X)
#undef X
        CALL_COUNT
};

static const char *const call_names[CALL_COUNT] = {
#define X(name) [CALL_##name] = #name,
    TABLE3(X)
#undef X
};

struct call_acc {
    double total[CALL_COUNT];
    unsigned long count[CALL_COUNT];
    bool counting; /* false during the warm-up round */
};

/* Times one call statement; errors are checked outside the timed region. */
#define TIMED(acc, id, stmt)                                                                       \
    do {                                                                                           \
        double timed_t0_ = now();                                                                  \
        stmt;                                                                                      \
        double timed_dt_ = now() - timed_t0_;                                                      \
        if ((acc)->counting) {                                                                     \
            (acc)->total[id] += timed_dt_;                                                         \
            (acc)->count[id]++;                                                                    \
        }                                                                                          \
    } while (0)

/* One round of the buffer/kernel/transfer calls on one context. */
static void call_round(struct call_acc *acc, cl_context ctx, cl_command_queue q, cl_program prog,
                       cl_uint *host, cl_uint round)
{
    cl_int err;
    cl_mem buf;
    cl_kernel k;
    const size_t n = CALL_BUF_BYTES / sizeof(cl_uint);
    for (size_t i = 0; i < n; i++)
        host[i] = (cl_uint)(i * 2654435761u) ^ round;
    cl_uint *back = host + n;
    memset(back, 0, CALL_BUF_BYTES);

    TIMED(acc, CALL_clCreateBuffer,
          buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, CALL_BUF_BYTES, NULL, &err));
    CL_CHECK_ERR("clCreateBuffer", err);
    TIMED(acc, CALL_clCreateKernel, k = clCreateKernel(prog, "k7", &err));
    CL_CHECK_ERR("clCreateKernel", err);
    cl_uint args[KERNEL_ARGS - 1] = {round};
    memcpy(args + 1, k7_const, sizeof(k7_const));
    TIMED(acc, CALL_clSetKernelArg, err = clSetKernelArg(k, 0, sizeof(cl_mem), &buf));
    CL_CHECK_ERR("clSetKernelArg", err);
    for (cl_uint a = 1; a < KERNEL_ARGS; a++) {
        TIMED(acc, CALL_clSetKernelArg, err = clSetKernelArg(k, a, sizeof(cl_uint), &args[a - 1]));
        CL_CHECK_ERR("clSetKernelArg", err);
    }
    TIMED(acc, CALL_clEnqueueWriteBuffer,
          err = clEnqueueWriteBuffer(q, buf, CL_FALSE, 0, CALL_BUF_BYTES, host, 0, NULL, NULL));
    CL_CHECK_ERR("clEnqueueWriteBuffer", err);
    size_t global = 1;
    TIMED(acc, CALL_clEnqueueNDRangeKernel,
          err = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL));
    CL_CHECK_ERR("clEnqueueNDRangeKernel", err);
    TIMED(acc, CALL_clEnqueueReadBuffer,
          err = clEnqueueReadBuffer(q, buf, CL_FALSE, 0, CALL_BUF_BYTES, back, 0, NULL, NULL));
    CL_CHECK_ERR("clEnqueueReadBuffer", err);
    TIMED(acc, CALL_clFinish, err = clFinish(q));
    CL_CHECK_ERR("clFinish", err);

    /* The kernel ran on element 0 only; the rest came back as written. */
    if (back[0] != host[0] + k7_value(round, 0))
        verify_fail("call: write, kernel, read", round, "element 0 is wrong");
    if (memcmp(back + 1, host + 1, CALL_BUF_BYTES - sizeof(cl_uint)))
        verify_fail("call: write, read", round, "data read back differs");

    TIMED(acc, CALL_clReleaseMemObject, err = clReleaseMemObject(buf));
    CL_CHECK_ERR("clReleaseMemObject", err);
    TIMED(acc, CALL_clReleaseKernel, err = clReleaseKernel(k));
    CL_CHECK_ERR("clReleaseKernel", err);
}

/* One round of the context/queue/program calls, holding inner rounds. */
static void context_round(struct call_acc *acc, const struct options *o, const struct bench *b,
                          cl_uint *host, cl_uint round)
{
    cl_int err;
    cl_context ctx;
    cl_command_queue q;
    cl_program prog;
    const char *source = kernel_source;

    TIMED(acc, CALL_clCreateContext, ctx = clCreateContext(NULL, 1, &b->device, NULL, NULL, &err));
    CL_CHECK_ERR("clCreateContext", err);
    TIMED(acc, CALL_clCreateCommandQueue, q = clCreateCommandQueue(ctx, b->device, 0, &err));
    CL_CHECK_ERR("clCreateCommandQueue", err);
    TIMED(acc, CALL_clCreateProgramWithSource,
          prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err));
    CL_CHECK_ERR("clCreateProgramWithSource", err);
    TIMED(acc, CALL_clBuildProgram, err = clBuildProgram(prog, 1, &b->device, "", NULL, NULL));
    CL_CHECK_ERR("clBuildProgram", err);
    for (unsigned i = 0; i < o->call_inner; i++)
        call_round(acc, ctx, q, prog, host, round * o->call_inner + i);
    TIMED(acc, CALL_clReleaseProgram, err = clReleaseProgram(prog));
    CL_CHECK_ERR("clReleaseProgram", err);
    TIMED(acc, CALL_clReleaseCommandQueue, err = clReleaseCommandQueue(q));
    CL_CHECK_ERR("clReleaseCommandQueue", err);
    TIMED(acc, CALL_clReleaseContext, err = clReleaseContext(ctx));
    CL_CHECK_ERR("clReleaseContext", err);
}

static void bench_calls(const struct options *o, const struct bench *b)
{
    struct call_acc acc = {0};
    cl_uint *host = xmalloc(2 * CALL_BUF_BYTES);

    /* Round 0 is warm-up (first builds, first allocations): not counted. */
    for (unsigned r = 0; r <= o->call_outer; r++) {
        acc.counting = r > 0;
        for (unsigned i = 0; i < o->call_simple / (o->call_outer + 1) + 1; i++) {
            cl_int err;
            cl_platform_id p;
            cl_device_id d;
            cl_uint n;
            TIMED(&acc, CALL_clGetPlatformIDs, err = clGetPlatformIDs(1, &p, &n));
            CL_CHECK_ERR("clGetPlatformIDs", err);
            TIMED(&acc, CALL_clGetDeviceIDs,
                  err = clGetDeviceIDs(b->platform, CL_DEVICE_TYPE_ALL, 1, &d, &n));
            CL_CHECK_ERR("clGetDeviceIDs", err);
        }
        context_round(&acc, o, b, host, r);
    }
    free(host);
    for (int c = 0; c < CALL_COUNT; c++)
        if (acc.count[c])
            emit("call", call_names[c], c == CALL_clGetPlatformIDs ? "repeat" : "",
                 acc.total[c] / (double)acc.count[c], "s");
}

/* ---- (b) bandwidth ---- */

static void fill_pattern(unsigned char *p, size_t size, uint64_t seed)
{
    uint64_t x = seed * UINT64_C(0x9e3779b97f4a7c15) + 1;
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
        memcpy(p + i, &x, 8);
    }
    for (; i < size; i++)
        p[i] = (unsigned char)(i ^ seed);
}

/* One window: `window` non-blocking transfers of the whole buffer, then
 * clFinish; returns the seconds from the first enqueue to clFinish's return. */
static double transfer_window(const struct bench *b, bool write, cl_mem buf, void *host,
                              size_t size, unsigned window)
{
    double t0 = now();
    for (unsigned w = 0; w < window; w++) {
        if (write)
            CL_CHECK(clEnqueueWriteBuffer(b->queue, buf, CL_FALSE, 0, size, host, 0, NULL, NULL));
        else
            CL_CHECK(clEnqueueReadBuffer(b->queue, buf, CL_FALSE, 0, size, host, 0, NULL, NULL));
    }
    CL_CHECK(clFinish(b->queue));
    return now() - t0;
}

static void bench_bandwidth(const struct options *o, const struct bench *b)
{
    cl_ulong max_alloc = 0;
    CL_CHECK(clGetDeviceInfo(b->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof(max_alloc), &max_alloc,
                             NULL));
    double *t = xmalloc((o->reps + 1) * sizeof(double));
    for (unsigned s = 0; s < o->nsizes; s++) {
        size_t size = o->sizes[s];
        if (size > max_alloc) {
            fprintf(stderr, PROG ": skipping %zu bytes: above the device's largest buffer\n", size);
            continue;
        }
        cl_int err;
        cl_mem buf = clCreateBuffer(b->context, CL_MEM_READ_WRITE, size, NULL, &err);
        CL_CHECK_ERR("clCreateBuffer", err);
        unsigned char *src = xmalloc(size), *dst = xmalloc(size);
        fill_pattern(src, size, size + s);

        /* Write: repetition 0 is warm-up; the buffer is read back after
         * every window, outside the timing. */
        for (unsigned r = 0; r <= o->reps; r++) {
            src[0] = (unsigned char)r; /* each window writes something new */
            t[r] = transfer_window(b, true, buf, src, size, o->window);
            memset(dst, 0, size);
            CL_CHECK(clEnqueueReadBuffer(b->queue, buf, CL_TRUE, 0, size, dst, 0, NULL, NULL));
            if (memcmp(dst, src, size))
                verify_fail("bw write", size, "the buffer does not hold what was written");
        }
        emit_size("bw", "write", size, (double)size * o->window / median(t + 1, o->reps), "B/s");

        /* Read: the buffer holds src; dst is cleared before every window. */
        for (unsigned r = 0; r <= o->reps; r++) {
            memset(dst, 0, size);
            t[r] = transfer_window(b, false, buf, dst, size, o->window);
            if (memcmp(dst, src, size))
                verify_fail("bw read", size, "the data read differs from the buffer's");
        }
        emit_size("bw", "read", size, (double)size * o->window / median(t + 1, o->reps), "B/s");
        fflush(stdout);

        CL_CHECK(clReleaseMemObject(buf));
        free(src);
        free(dst);
    }
    free(t);
}

/* ---- (c) latency ---- */

static void bench_latency(const struct options *o, const struct bench *b)
{
    cl_int err;
    cl_mem buf =
        clCreateBuffer(b->context, CL_MEM_READ_WRITE, LAUNCH_GLOBAL * sizeof(cl_uint), NULL, &err);
    CL_CHECK_ERR("clCreateBuffer", err);
    unsigned warm = o->lat_iters / LAT_WARMUP_FRAC;
    unsigned n = o->lat_iters;
    double *t = xmalloc(n * sizeof(double));

    /* Blocking 4-byte write: each writes its own value, read back below. */
    for (unsigned i = 0; i < warm + n; i++) {
        cl_uint v = 0x1000u + i;
        double t0 = now();
        CL_CHECK(clEnqueueWriteBuffer(b->queue, buf, CL_TRUE, 0, 4, &v, 0, NULL, NULL));
        if (i >= warm)
            t[i - warm] = now() - t0;
    }
    emit("lat", "write4", "", median(t, n), "s");

    /* Blocking 4-byte read of what the last write left. */
    cl_uint want = 0x1000u + warm + n - 1;
    for (unsigned i = 0; i < warm + n; i++) {
        cl_uint v = 0;
        double t0 = now();
        CL_CHECK(clEnqueueReadBuffer(b->queue, buf, CL_TRUE, 0, 4, &v, 0, NULL, NULL));
        if (i >= warm)
            t[i - warm] = now() - t0;
        if (v != want)
            verify_fail("lat read4", i, "read a value that was not written");
    }
    emit("lat", "read4", "", median(t, n), "s");

    /* A one-work-item kernel and clFinish: the launch round trip. */
    set_k7_args(b->kernel, buf, 1);
    size_t global = 1;
    for (unsigned i = 0; i < warm + n; i++) {
        double t0 = now();
        CL_CHECK(
            clEnqueueNDRangeKernel(b->queue, b->kernel, 1, NULL, &global, NULL, 0, NULL, NULL));
        CL_CHECK(clFinish(b->queue));
        if (i >= warm)
            t[i - warm] = now() - t0;
    }
    cl_uint v = 0;
    CL_CHECK(clEnqueueReadBuffer(b->queue, buf, CL_TRUE, 0, 4, &v, 0, NULL, NULL));
    if (v != want + (warm + n) * k7_value(1, 0))
        verify_fail("lat kernel", warm + n, "the kernels' sum is wrong");
    emit("lat", "kernel_finish", "", median(t, n), "s");

    /* The blocking read again, each after 10 ms without a call: what an
     * application that thinks between its calls meets (a proxy that naps,
     * the device's threads asleep). */
    unsigned idle = n < IDLE_READS ? n : IDLE_READS;
    for (unsigned i = 0; i < idle; i++) {
        nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
        cl_uint v = 0;
        double t0 = now();
        CL_CHECK(clEnqueueReadBuffer(b->queue, buf, CL_TRUE, 0, 4, &v, 0, NULL, NULL));
        t[i] = now() - t0;
        if (v != want + (warm + n) * k7_value(1, 0))
            verify_fail("lat read4 after idle", i, "read a value that was not written");
    }
    emit("lat", "read4_idle", "10ms", median(t, idle), "s");
    free(t);
    CL_CHECK(clReleaseMemObject(buf));
}

/* ---- (d) launch throughput ---- */

static void bench_launch(const struct options *o, const struct bench *b)
{
    cl_int err;
    const size_t bytes = LAUNCH_GLOBAL * sizeof(cl_uint);
    cl_mem buf = clCreateBuffer(b->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
    CL_CHECK_ERR("clCreateBuffer", err);
    cl_uint zero[LAUNCH_GLOBAL] = {0}, out[LAUNCH_GLOBAL];
    double *t = xmalloc((o->reps + 1) * sizeof(double));
    size_t global = LAUNCH_GLOBAL;

    /* Repetition 0 is warm-up.  Each launch sets all 7 arguments first. */
    for (unsigned r = 0; r <= o->reps; r++) {
        CL_CHECK(clEnqueueWriteBuffer(b->queue, buf, CL_TRUE, 0, bytes, zero, 0, NULL, NULL));
        double t0 = now();
        for (cl_uint i = 0; i < o->launches; i++) {
            set_k7_args(b->kernel, buf, i);
            CL_CHECK(
                clEnqueueNDRangeKernel(b->queue, b->kernel, 1, NULL, &global, NULL, 0, NULL, NULL));
        }
        CL_CHECK(clFinish(b->queue));
        t[r] = now() - t0;

        CL_CHECK(clEnqueueReadBuffer(b->queue, buf, CL_TRUE, 0, bytes, out, 0, NULL, NULL));
        for (cl_uint g = 0; g < LAUNCH_GLOBAL; g++) {
            cl_uint want = 0;
            for (cl_uint i = 0; i < o->launches; i++)
                want += k7_value(i, g);
            if (out[g] != want)
                verify_fail("launch", g, "the sum over all launches is wrong");
        }
    }
    char name[48];
    snprintf(name, sizeof(name), "%ux%d", o->launches, KERNEL_ARGS);
    emit("launch", name, "", median(t + 1, o->reps), "s");
    free(t);
    CL_CHECK(clReleaseMemObject(buf));
}

int main(int argc, char **argv)
{
    struct options o;
    parse_args(argc, argv, &o);
    /* Lines reach vocl-bench through a pipe (and mpiexec): keep them whole
     * and in order even if the run dies half way. */
    setvbuf(stdout, NULL, _IOLBF, 0);

    struct bench b;
    open_device(&o, &b);
    if (o.sections & SEC_CALL)
        bench_calls(&o, &b);
    if (o.sections & SEC_BW)
        bench_bandwidth(&o, &b);
    if (o.sections & SEC_LAT)
        bench_latency(&o, &b);
    if (o.sections & SEC_LAUNCH)
        bench_launch(&o, &b);
    close_device(&b);

    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) == 0)
        emit("rss", "client", "", (double)ru.ru_maxrss, "KiB"); /* Linux: KiB */
    /* The end marker: a run without it did not finish. */
    emit("end", "ok", "", 0, "");
    return 0;
}
