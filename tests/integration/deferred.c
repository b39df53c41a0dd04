/*
 * deferred.c - VOCL's deferred errors (libvocl(7)), checked from the
 * application's side.
 *
 *   deferred --native    run each failing enqueue natively and print the
 *                        error codes it gives at once, on one line
 *   deferred CODES...    (under vocl-run -n 2 -d 1) check that each failing
 *                        request returns CL_SUCCESS at once and that its
 *                        native code comes back, once, from the next
 *                        clFinish, clWaitForEvents or blocking transfer on
 *                        the same proxy connection; work around it must be
 *                        unharmed.  Those a client can know of (at_once)
 *                        come back at once, as natively.  The context's
 *                        pfn_notify hears of each, even while the
 *                        application calls nothing.  Exits 1 with a
 *                        message when not.
 *
 * Natively the errors come back at once, so no native/VOCL compare can test
 * this: deferred.sh runs the program natively first to learn the codes.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <CL/cl.h>

#define N   1024u                  /* ints in the work buffers */
#define BIG (256u * 1024u + 12u) /* bytes: more than inline, an odd number of KiB */

static const char *src =
    "kernel void inc(global int *x) { x[get_global_id(0)] += 1; }\n"
    "__attribute__((reqd_work_group_size(2, 1, 1)))\n"
    "kernel void req2(global int *x) { x[get_global_id(0)] += 1; }\n";

/* The failing requests, in the order their codes are printed. */
enum { E_NONDIV, E_TOOBIG, E_TASK, E_OVERLAP, E_PATTERN, E_HOST_RO, E_HOST_WO, E_COUNT };
static const char *const e_names[E_COUNT] = {
    "launch, local size not dividing the global one",
    "launch, local size above the device's maximum",
    "clEnqueueTask of a kernel that needs 2 work-items per group",
    "clEnqueueCopyBuffer, overlapping regions of one buffer",
    "clEnqueueFillBuffer, pattern of 3 bytes",
    "non-blocking write to a CL_MEM_HOST_READ_ONLY buffer",
    "non-blocking read of a CL_MEM_HOST_WRITE_ONLY buffer",
};

static int failures;

/* The failures a client knows of at once, as a driver does: a pattern size
 * the spec forbids, work-group sizes (the first launch of each shape waits
 * for the proxy) and host access flags (libvocl's to check).  Only the
 * overlapping copy is deferred. */
static bool at_once(int e)
{
    return e != E_OVERLAP;
}
enum { DEFERRED = 1 };

#define EXPECT(got, want, what)                                                                    \
    do {                                                                                           \
        cl_int got_ = (got), want_ = (want);                                                       \
        if (got_ != want_) {                                                                       \
            printf("FAIL %s: %d, expected %d (line %d)\n", what, got_, want_, __LINE__);           \
            failures++;                                                                            \
        } else {                                                                                   \
            printf("ok %s: %d\n", what, got_);                                                     \
        }                                                                                          \
    } while (0)
#define TRUE(cond, what)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL %s (line %d)\n", what, __LINE__);                                         \
            failures++;                                                                            \
        } else {                                                                                   \
            printf("ok %s\n", what);                                                               \
        }                                                                                          \
    } while (0)
#define DIE(...)                                                                                   \
    do {                                                                                           \
        fprintf(stderr, "deferred: " __VA_ARGS__);                                                 \
        fputc('\n', stderr);                                                                       \
        exit(1);                                                                                   \
    } while (0)

/* What the context's pfn_notify heard (device a's context under VOCL). */
static struct {
    pthread_mutex_t lock;
    pthread_t main;
    int calls, on_main;
    char copy[512]; /* the one about the failed copy */
} heard = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void CL_CALLBACK on_notify(const char *errinfo, const void *priv, size_t cb, void *data)
{
    (void)priv, (void)cb;
    pthread_mutex_lock(&heard.lock);
    heard.calls++;
    heard.on_main += pthread_equal(pthread_self(), heard.main) != 0;
    if (strstr(errinfo, "clEnqueueCopyBuffer failed with CL_"))
        snprintf(heard.copy, sizeof(heard.copy), "%s", errinfo);
    if (data != &heard)
        heard.on_main += 1000; /* the wrong user_data */
    pthread_mutex_unlock(&heard.lock);
}

/* Waits up to 10 s for the notify calls to reach calls; how many came. */
static int heard_wait(int calls)
{
    int got = 0;
    for (int i = 0; i < 1000; i++) {
        pthread_mutex_lock(&heard.lock);
        got = heard.calls;
        pthread_mutex_unlock(&heard.lock);
        if (got >= calls)
            break;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    return got;
}

/* One device's objects. */
struct dev {
    cl_device_id id;
    cl_context ctx;
    cl_command_queue q, q2;
    cl_program prog;
    cl_kernel inc, req2;
    cl_mem x, y, ro, wo; /* ro: CL_MEM_HOST_READ_ONLY, wo: CL_MEM_HOST_WRITE_ONLY */
    size_t maxwg;
};

static void dev_open(struct dev *d, cl_device_id id, bool notify)
{
    cl_int err;
    d->id = id;
    clGetDeviceInfo(id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof(d->maxwg), &d->maxwg, NULL);
    d->ctx = clCreateContext(NULL, 1, &id, notify ? on_notify : NULL, notify ? &heard : NULL, &err);
    if (!d->ctx)
        DIE("clCreateContext: %d", err);
    d->q = clCreateCommandQueue(d->ctx, id, 0, &err);
    d->q2 = clCreateCommandQueue(d->ctx, id, 0, &err);
    if (!d->q || !d->q2)
        DIE("clCreateCommandQueue: %d", err);
    d->prog = clCreateProgramWithSource(d->ctx, 1, &src, NULL, &err);
    if (!d->prog || (err = clBuildProgram(d->prog, 1, &id, NULL, NULL, NULL)) != CL_SUCCESS)
        DIE("building the kernels: %d", err);
    d->inc = clCreateKernel(d->prog, "inc", &err);
    d->req2 = clCreateKernel(d->prog, "req2", &err);
    if (!d->inc || !d->req2)
        DIE("clCreateKernel: %d", err);
    d->x = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, N * sizeof(int), NULL, &err);
    d->y = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, BIG, NULL, &err);
    d->ro = clCreateBuffer(d->ctx, CL_MEM_HOST_READ_ONLY, BIG, NULL, &err);
    d->wo = clCreateBuffer(d->ctx, CL_MEM_HOST_WRITE_ONLY, BIG, NULL, &err);
    if (!d->x || !d->y || !d->ro || !d->wo)
        DIE("clCreateBuffer: %d", err);
    if (clSetKernelArg(d->inc, 0, sizeof(cl_mem), &d->x) ||
        clSetKernelArg(d->req2, 0, sizeof(cl_mem), &d->x))
        DIE("clSetKernelArg");
}

static void dev_close(struct dev *d)
{
    clReleaseMemObject(d->x);
    clReleaseMemObject(d->y);
    clReleaseMemObject(d->ro);
    clReleaseMemObject(d->wo);
    clReleaseKernel(d->inc);
    clReleaseKernel(d->req2);
    clReleaseProgram(d->prog);
    clReleaseCommandQueue(d->q);
    clReleaseCommandQueue(d->q2);
    clReleaseContext(d->ctx);
}

/* Enqueues failing request e on queue q of d; returns what the call gave. */
static cl_int enqueue_bad(struct dev *d, cl_command_queue q, int e, cl_event *ev)
{
    static unsigned char host[BIG];
    size_t g, l;
    const int pattern = 0;
    switch (e) {
    case E_NONDIV:
        g = 100, l = 7;
        return clEnqueueNDRangeKernel(q, d->inc, 1, NULL, &g, &l, 0, NULL, ev);
    case E_TOOBIG:
        g = l = 2 * d->maxwg;
        return clEnqueueNDRangeKernel(q, d->inc, 1, NULL, &g, &l, 0, NULL, ev);
    case E_TASK: return clEnqueueTask(q, d->req2, 0, NULL, ev);
    case E_OVERLAP: return clEnqueueCopyBuffer(q, d->x, d->x, 0, 16, 64, 0, NULL, ev);
    case E_PATTERN: return clEnqueueFillBuffer(q, d->x, &pattern, 3, 0, 12, 0, NULL, ev);
    case E_HOST_RO: return clEnqueueWriteBuffer(q, d->ro, CL_FALSE, 0, BIG, host, 0, NULL, ev);
    case E_HOST_WO: return clEnqueueReadBuffer(q, d->wo, CL_FALSE, 0, BIG, host, 0, NULL, ev);
    default: return CL_INVALID_VALUE;
    }
}

static cl_device_id *all_devices(cl_uint *n)
{
    cl_platform_id plat;
    if (clGetPlatformIDs(1, &plat, NULL) != CL_SUCCESS)
        DIE("no platform");
    if (clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 0, NULL, n) != CL_SUCCESS || !*n)
        DIE("no device");
    cl_device_id *devs = calloc(*n, sizeof(*devs));
    if (!devs)
        DIE("out of memory");
    clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, *n, devs, NULL);
    return devs;
}

/* Natively: each failing request's code, at once. */
static int run_native(void)
{
    cl_uint n;
    cl_device_id *devs = all_devices(&n);
    struct dev d;
    dev_open(&d, devs[0], false);
    for (int e = 0; e < E_COUNT; e++) {
        cl_int rc = enqueue_bad(&d, d.q, e, NULL);
        if (rc == CL_SUCCESS)
            DIE("natively, '%s' succeeds: it cannot test a deferred error", e_names[e]);
        printf("%s%d", e ? " " : "", rc);
        clFinish(d.q);
    }
    printf("\n");
    dev_close(&d);
    free(devs);
    return 0;
}

/* Writes x = 0, 1, ..., N-1 (blocking). */
static void x_reset(struct dev *d)
{
    int v[N];
    for (unsigned i = 0; i < N; i++)
        v[i] = (int)i;
    EXPECT(clEnqueueWriteBuffer(d->q, d->x, CL_TRUE, 0, sizeof(v), v, 0, NULL, NULL), CL_SUCCESS,
           "blocking write of x");
}

/* Reads x back (blocking) and checks x[i] == i + add. */
static void x_check(struct dev *d, int add, const char *what)
{
    int v[N];
    cl_int rc = clEnqueueReadBuffer(d->q, d->x, CL_TRUE, 0, sizeof(v), v, 0, NULL, NULL);
    unsigned bad = 0;
    for (unsigned i = 0; i < N; i++)
        bad += v[i] != (int)i + add;
    printf("%s %s: read %d, %u wrong values\n", rc || bad ? "FAIL" : "ok", what, rc, bad);
    failures += rc || bad;
}

static cl_int launch_inc(struct dev *d, cl_command_queue q, cl_event *ev)
{
    size_t g = N, l = 64;
    return clEnqueueNDRangeKernel(q, d->inc, 1, NULL, &g, &l, 0, NULL, ev);
}

static void run_vocl(const cl_int *code)
{
    cl_uint n;
    cl_device_id *devs = all_devices(&n);
    if (n < 2)
        DIE("needs devices of two proxies (vocl-run -n 2 -d 1), has %u", n);
    struct dev a, b;
    heard.main = pthread_self();
    dev_open(&a, devs[0], true);
    dev_open(&b, devs[n - 1], false);
    char what[160];

    /* Every failing request: CL_SUCCESS at once, its code from clFinish,
     * once; the launches queued before and after it still run. */
    for (int e = 0; e < E_COUNT; e++) {
        printf("-- %s\n", e_names[e]);
        x_reset(&a);
        if (at_once(e)) {
            EXPECT(enqueue_bad(&a, a.q, e, NULL), code[e], "failing request, at once as natively");
            EXPECT(clFinish(a.q), CL_SUCCESS, "clFinish");
            continue;
        }
        EXPECT(launch_inc(&a, a.q, NULL), CL_SUCCESS, "launch before");
        EXPECT(enqueue_bad(&a, a.q, e, NULL), CL_SUCCESS, "failing request, at once");
        EXPECT(launch_inc(&a, a.q, NULL), CL_SUCCESS, "launch after");
        EXPECT(clFinish(a.q), code[e], "clFinish reports the native code");
        EXPECT(clFinish(a.q), CL_SUCCESS, "second clFinish");
        x_check(&a, 2, "both launches ran");
    }

    printf("-- the context's pfn_notify heard of each, on a thread of libvocl\n");
    {
        int calls = heard_wait(DEFERRED);
        snprintf(what, sizeof(what), "pfn_notify called %d times for %d deferred errors", calls,
                 DEFERRED);
        TRUE(calls == DEFERRED, what);
        TRUE(heard.on_main == 0, "never on the application's thread, always with its user_data");
        printf("   it said: \"%s\"\n", heard.copy);
        TRUE(heard.copy[0], "it names the copy and its error");
    }

    printf("-- pfn_notify hears of a failed request while the application calls nothing\n");
    {
        pthread_mutex_lock(&heard.lock);
        int before = heard.calls;
        pthread_mutex_unlock(&heard.lock);
        EXPECT(enqueue_bad(&a, a.q, E_OVERLAP, NULL), CL_SUCCESS, "failing copy");
        int calls = heard_wait(before + 1); /* (sleeps: no call of libvocl) */
        TRUE(calls == before + 1, "pfn_notify called, with no call of libvocl after the copy");
        EXPECT(clFinish(a.q), code[E_OVERLAP], "clFinish still reports it");
    }

    printf("-- clFlush does not report, clFinish does\n");
    EXPECT(enqueue_bad(&a, a.q, E_OVERLAP, NULL), CL_SUCCESS, "failing copy");
    EXPECT(clFlush(a.q), CL_SUCCESS, "clFlush");
    EXPECT(clFinish(a.q), code[E_OVERLAP], "clFinish");

    printf("-- the first error is kept, the later ones dropped\n");
    EXPECT(enqueue_bad(&a, a.q, E_OVERLAP, NULL), CL_SUCCESS, "failing copy");
    EXPECT(enqueue_bad(&a, a.q, E_OVERLAP, NULL), CL_SUCCESS, "failing copy again");
    EXPECT(clFinish(a.q), code[E_OVERLAP], "clFinish gives the copy's code, once");
    EXPECT(clFinish(a.q), CL_SUCCESS, "second clFinish");

    printf("-- a blocking read after a failed copy\n");
    x_reset(&a);
    EXPECT(enqueue_bad(&a, a.q, E_OVERLAP, NULL), CL_SUCCESS, "failing copy");
    {
        int v[N];
        EXPECT(clEnqueueReadBuffer(a.q, a.x, CL_TRUE, 0, sizeof(v), v, 0, NULL, NULL),
               code[E_OVERLAP], "blocking read gives the copy's code");
    }
    x_check(&a, 0, "next blocking read: x unchanged");
    EXPECT(clFinish(a.q), CL_SUCCESS, "clFinish");

    printf("-- a blocking read of more than a chunk after a failed copy\n");
    EXPECT(enqueue_bad(&a, a.q, E_OVERLAP, NULL), CL_SUCCESS, "failing copy");
    {
        static unsigned char big[BIG];
        EXPECT(clEnqueueReadBuffer(a.q, a.y, CL_TRUE, 0, BIG, big, 0, NULL, NULL),
               code[E_OVERLAP], "blocking chunked read gives the copy's code");
    }
    EXPECT(clFinish(a.q), CL_SUCCESS, "clFinish");

    printf("-- a blocking write after a failed copy\n");
    EXPECT(enqueue_bad(&a, a.q, E_OVERLAP, NULL), CL_SUCCESS, "failing copy");
    {
        int v[N] = {0};
        EXPECT(clEnqueueWriteBuffer(a.q, a.x, CL_TRUE, 0, sizeof(v), v, 0, NULL, NULL),
               code[E_OVERLAP], "blocking write gives the copy's code");
    }
    EXPECT(clFinish(a.q), CL_SUCCESS, "clFinish");

    printf("-- clWaitForEvents on a good event after a failed copy\n");
    {
        cl_event ev = NULL;
        EXPECT(enqueue_bad(&a, a.q, E_OVERLAP, NULL), CL_SUCCESS, "failing copy");
        EXPECT(launch_inc(&a, a.q, &ev), CL_SUCCESS, "launch with an event");
        EXPECT(clWaitForEvents(1, &ev), code[E_OVERLAP], "clWaitForEvents gives the copy's code");
        EXPECT(clFinish(a.q), CL_SUCCESS, "clFinish");
        EXPECT(clReleaseEvent(ev), CL_SUCCESS, "clReleaseEvent");
    }

    printf("-- the event of a failed copy\n");
    {
        cl_event ev = NULL, marker = NULL;
        EXPECT(enqueue_bad(&a, a.q, E_OVERLAP, &ev), CL_SUCCESS, "failing copy with an event");
        TRUE(ev != NULL, "it returns an event");
        cl_int w = clWaitForEvents(1, &ev);
        TRUE(w != CL_SUCCESS, "clWaitForEvents on it gives an error");
        cl_int f = clFinish(a.q);
        snprintf(what, sizeof(what),
                 "the copy's code comes once from clWaitForEvents (%d) or clFinish (%d)", w, f);
        TRUE((w == code[E_OVERLAP]) + (f == code[E_OVERLAP]) == 1 &&
                 (f == CL_SUCCESS || f == code[E_OVERLAP]),
             what);
        /* A command waiting on it cannot run: an error, deferred too. */
        EXPECT(clEnqueueMarkerWithWaitList(a.q, 1, &ev, &marker), CL_SUCCESS,
               "marker waiting on it, at once");
        TRUE(clFinish(a.q) != CL_SUCCESS, "clFinish after that marker gives an error");
        EXPECT(clFinish(a.q), CL_SUCCESS, "second clFinish");
        EXPECT(clReleaseEvent(ev), CL_SUCCESS, "clReleaseEvent of the failed copy's event");
        if (marker)
            clReleaseEvent(marker);
    }

    printf("-- one proxy connection: another queue's clFinish reports it\n");
    EXPECT(enqueue_bad(&a, a.q, E_OVERLAP, NULL), CL_SUCCESS, "failing copy on queue 1");
    EXPECT(clFinish(a.q2), code[E_OVERLAP], "clFinish of queue 2 of the same proxy");
    EXPECT(clFinish(a.q), CL_SUCCESS, "clFinish of queue 1");

    printf("-- another proxy's synchronisation does not report it\n");
    x_reset(&a);
    x_reset(&b);
    EXPECT(enqueue_bad(&b, b.q, E_OVERLAP, NULL), CL_SUCCESS, "failing copy on proxy 2");
    EXPECT(launch_inc(&b, b.q, NULL), CL_SUCCESS, "launch after it on proxy 2");
    EXPECT(clFinish(a.q), CL_SUCCESS, "clFinish on proxy 1");
    x_check(&a, 0, "blocking read on proxy 1");
    EXPECT(clFinish(b.q), code[E_OVERLAP], "clFinish on proxy 2");
    x_check(&b, 1, "proxy 2's launch ran");

    /* Left unreported on purpose: the proxy warns at exit (deferred.sh). */
    EXPECT(enqueue_bad(&b, b.q, E_OVERLAP, NULL), CL_SUCCESS, "failing copy, never synchronised");

    dev_close(&a);
    dev_close(&b);
    free(devs);
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--native"))
        return run_native();
    if (argc != 1 + E_COUNT) {
        fprintf(stderr, "usage: deferred --native | deferred CODE x %d (from --native)\n",
                E_COUNT);
        return 2;
    }
    cl_int code[E_COUNT];
    for (int e = 0; e < E_COUNT; e++)
        code[e] = (cl_int)strtol(argv[1 + e], NULL, 10);
    run_vocl(code);
    if (failures)
        printf("%d checks failed\n", failures);
    else
        printf("all checks passed\n");
    return failures ? 1 : 0;
}
