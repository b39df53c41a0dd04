/*
 * transfers.c - non-blocking reads and writes, and what depends on them:
 * windows of transfers of sizes around the inline limit (64 KiB) and the
 * proxy's chunk size, offsets, reads completed by clWaitForEvents, writes
 * feeding kernels through in-order queues and through events on an
 * out-of-order queue, a user event set after the write that waits on it,
 * two devices at once, memory a read fills sent on by a write that waits
 * for it, buffers created from host memory larger than a
 * chunk, and short blocking reads (which a proxy may answer from a map of
 * the region: right offsets, right words, after a long kernel too).  Every result is checked here
 * and printed as a checksum, so the output natively and under vocl-run must be identical
 * (compare.sh).
 *
 * The chunk size is read from VOCL_POOL_SIZE (what the proxies use; 4M when
 * unset) only to pick the sizes: natively it changes nothing else, and both
 * runs of compare.sh see the same environment.
 */
#include <signal.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include <CL/cl.h>

#define INLINE_MAX (64u * 1024u)

static int failures;
static size_t chunk = 4u << 20;
static const char *volatile step = "setup"; /* what runs now, for a hang's message */

/* Failures go to stderr too: compare.sh shows a failed run's stderr. */
#define DIE(...)                                                                                   \
    do {                                                                                           \
        printf("transfers: " __VA_ARGS__);                                                         \
        printf("\n");                                                                              \
        fprintf(stderr, "transfers: " __VA_ARGS__);                                                \
        fprintf(stderr, "\n");                                                                     \
        exit(1);                                                                                   \
    } while (0)
#define CL(call)                                                                                   \
    do {                                                                                           \
        cl_int err_ = (call);                                                                      \
        if (err_ != CL_SUCCESS)                                                                    \
            DIE("%s: %d (line %d)", #call, err_, __LINE__);                                        \
    } while (0)

static const char *src =
    "kernel void axpy(global uint *y, global const uint *x, uint a) {\n"
    "  size_t i = get_global_id(0); y[i] += a * x[i]; }\n"
    "kernel void add(global uint *c, global const uint *a, global const uint *b) {\n"
    "  size_t i = get_global_id(0); c[i] = a[i] + b[i]; }\n"
    "kernel void gen(global uint *x, uint seed) {\n"
    "  size_t i = get_global_id(0); x[i] = (uint)i * 2654435761u + seed; }\n";

/* FNV-1a 64 over n bytes. */
static uint64_t sum64(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static void fill(void *p, size_t n, uint32_t seed)
{
    unsigned char *b = p;
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        b[i] = (unsigned char)x;
    }
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        DIE("out of memory (%zu bytes)", n);
    return p;
}

/* Prints one result line; the check itself counts as a failure if false. */
static void report(const char *what, const void *p, size_t n, int ok)
{
    printf("%-60s %016llx %s\n", what, (unsigned long long)sum64(p, n), ok ? "ok" : "WRONG");
    if (!ok)
        fprintf(stderr, "transfers: WRONG: %s\n", what);
    failures += !ok;
}

static size_t parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end == 'K' || *end == 'k')
        v <<= 10;
    else if (*end == 'M' || *end == 'm')
        v <<= 20;
    return (size_t)v;
}

struct dev {
    cl_device_id id;
    cl_context ctx;
    cl_command_queue q, ooo; /* in-order; out-of-order (or in-order if unsupported) */
    cl_program prog;
    cl_kernel axpy, add, gen;
};

static void dev_open(struct dev *d, cl_device_id id)
{
    cl_int err;
    cl_command_queue_properties props = 0;
    d->id = id;
    d->ctx = clCreateContext(NULL, 1, &id, NULL, NULL, &err);
    if (!d->ctx)
        DIE("clCreateContext: %d", err);
    d->q = clCreateCommandQueue(d->ctx, id, 0, &err);
    if (!d->q)
        DIE("clCreateCommandQueue: %d", err);
    CL(clGetDeviceInfo(id, CL_DEVICE_QUEUE_PROPERTIES, sizeof(props), &props, NULL));
    d->ooo = clCreateCommandQueue(d->ctx, id, props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE,
                                  &err);
    if (!d->ooo)
        DIE("clCreateCommandQueue (out of order): %d", err);
    d->prog = clCreateProgramWithSource(d->ctx, 1, &src, NULL, &err);
    if (!d->prog)
        DIE("clCreateProgramWithSource: %d", err);
    CL(clBuildProgram(d->prog, 1, &id, NULL, NULL, NULL));
    d->axpy = clCreateKernel(d->prog, "axpy", &err);
    d->add = clCreateKernel(d->prog, "add", &err);
    d->gen = clCreateKernel(d->prog, "gen", &err);
    if (!d->axpy || !d->add || !d->gen)
        DIE("clCreateKernel: %d", err);
}

static void dev_close(struct dev *d)
{
    clReleaseKernel(d->axpy);
    clReleaseKernel(d->add);
    clReleaseKernel(d->gen);
    clReleaseProgram(d->prog);
    clReleaseCommandQueue(d->q);
    clReleaseCommandQueue(d->ooo);
    clReleaseContext(d->ctx);
}

static cl_mem buffer(struct dev *d, size_t n)
{
    cl_int err;
    cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, n, NULL, &err);
    if (!m)
        DIE("clCreateBuffer(%zu): %d", n, err);
    return m;
}

static void launch(cl_command_queue q, cl_kernel k, size_t n, cl_uint nwl, const cl_event *wl,
                   cl_event *ev)
{
    CL(clEnqueueNDRangeKernel(q, k, 1, NULL, &n, NULL, nwl, wl, ev));
}

/* The sizes that matter to VOCL: around the inline limit and the chunk. */
static size_t sizes[16];
static unsigned nsizes;

static void pick_sizes(void)
{
    const size_t s[] = {1,         4093,      INLINE_MAX - 1, INLINE_MAX,        INLINE_MAX + 1,
                        chunk - 1, chunk,     chunk + 1,      3 * chunk + 5,     1000003,
                        2 * chunk, chunk / 2 + 3};
    nsizes = 0;
    for (unsigned i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
        int dup = 0;
        for (unsigned j = 0; j < nsizes; j++)
            dup |= sizes[j] == s[i];
        if (!dup)
            sizes[nsizes++] = s[i];
    }
}

/* All writes of the window enqueued, then all reads, then one clFinish. */
static void window(struct dev *d, size_t offset)
{
    cl_mem m[16];
    unsigned char *in[16], *out[16];
    for (unsigned i = 0; i < nsizes; i++) {
        m[i] = buffer(d, sizes[i] + offset + 16);
        in[i] = xmalloc(sizes[i]);
        out[i] = xmalloc(sizes[i]);
        fill(in[i], sizes[i], i + 1);
        memset(out[i], 0xee, sizes[i]);
        CL(clEnqueueWriteBuffer(d->q, m[i], CL_FALSE, offset, sizes[i], in[i], 0, NULL, NULL));
    }
    for (unsigned i = 0; i < nsizes; i++)
        CL(clEnqueueReadBuffer(d->q, m[i], CL_FALSE, offset, sizes[i], out[i], 0, NULL, NULL));
    CL(clFinish(d->q));
    for (unsigned i = 0; i < nsizes; i++) {
        char what[96];
        snprintf(what, sizeof(what), "window: size %zu offset %zu", sizes[i], offset);
        report(what, out[i], sizes[i], !memcmp(in[i], out[i], sizes[i]));
        clReleaseMemObject(m[i]);
        free(in[i]);
        free(out[i]);
    }
}

/* A pattern written by a kernel, read back without blocking and waited for
 * with clWaitForEvents: on the read's own event, or on a later command's
 * event in the same in-order queue. */
static void reads_by_event(struct dev *d)
{
    const size_t sz[] = {INLINE_MAX / 4 + 1, chunk / 4 + 1, (3 * chunk + 8) / 4};
    for (unsigned i = 0; i < 3; i++) {
        size_t n = sz[i];
        uint32_t seed = 77 + i;
        cl_mem m = buffer(d, n * 4);
        uint32_t *want = xmalloc(n * 4), *got = xmalloc(n * 4), *got2 = xmalloc(n * 4);
        for (size_t k = 0; k < n; k++)
            want[k] = (uint32_t)k * 2654435761u + seed;
        CL(clSetKernelArg(d->gen, 0, sizeof(m), &m));
        CL(clSetKernelArg(d->gen, 1, sizeof(seed), &seed));
        launch(d->q, d->gen, n, 0, NULL, NULL);
        cl_event ev, later;
        CL(clEnqueueReadBuffer(d->q, m, CL_FALSE, 0, n * 4, got, 0, NULL, &ev));
        CL(clWaitForEvents(1, &ev));
        char what[96];
        snprintf(what, sizeof(what), "read waited on its event: %zu bytes", n * 4);
        report(what, got, n * 4, !memcmp(got, want, n * 4));
        cl_int status = 0;
        CL(clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status, NULL));
        printf("  its status: %d\n", status);
        clReleaseEvent(ev);

        /* The read, then a marker; waiting on the marker covers the read. */
        CL(clEnqueueReadBuffer(d->q, m, CL_FALSE, 0, n * 4, got2, 0, NULL, NULL));
        CL(clEnqueueMarkerWithWaitList(d->q, 0, NULL, &later));
        CL(clWaitForEvents(1, &later));
        snprintf(what, sizeof(what), "read waited on a later marker: %zu bytes", n * 4);
        report(what, got2, n * 4, !memcmp(got2, want, n * 4));
        clReleaseEvent(later);
        clReleaseMemObject(m);
        free(want);
        free(got);
        free(got2);
    }
}

/* Rounds of: non-blocking write of x_r, y += (r+1) * x_r, on an in-order
 * queue, no synchronisation until the final blocking read. */
static void writes_and_kernels(struct dev *d, size_t n, const char *label)
{
    enum { ROUNDS = 6 };
    cl_mem y = buffer(d, n * 4), x[2] = {buffer(d, n * 4), buffer(d, n * 4)};
    uint32_t *h[ROUNDS], *want = xmalloc(n * 4), *got = xmalloc(n * 4);
    memset(want, 0, n * 4);
    const uint32_t zero = 0;
    CL(clEnqueueFillBuffer(d->q, y, &zero, sizeof(zero), 0, n * 4, 0, NULL, NULL));
    for (unsigned r = 0; r < ROUNDS; r++) {
        h[r] = xmalloc(n * 4);
        fill(h[r], n * 4, 100 + r);
        uint32_t a = r + 1;
        for (size_t k = 0; k < n; k++)
            want[k] += a * h[r][k];
        /* Two x buffers in turn: the write of round r+2 overwrites the x of
         * round r, which the in-order queue has consumed by then. */
        CL(clEnqueueWriteBuffer(d->q, x[r % 2], CL_FALSE, 0, n * 4, h[r], 0, NULL, NULL));
        CL(clSetKernelArg(d->axpy, 0, sizeof(y), &y));
        CL(clSetKernelArg(d->axpy, 1, sizeof(x[0]), &x[r % 2]));
        CL(clSetKernelArg(d->axpy, 2, sizeof(a), &a));
        launch(d->q, d->axpy, n, 0, NULL, NULL);
    }
    CL(clEnqueueReadBuffer(d->q, y, CL_TRUE, 0, n * 4, got, 0, NULL, NULL));
    char what[96];
    snprintf(what, sizeof(what), "in-order writes and kernels%s: %zu bytes", label, n * 4);
    report(what, got, n * 4, !memcmp(got, want, n * 4));
    for (unsigned r = 0; r < ROUNDS; r++)
        free(h[r]);
    free(want);
    free(got);
    clReleaseMemObject(y);
    clReleaseMemObject(x[0]);
    clReleaseMemObject(x[1]);
}

/* c = a + b on the out-of-order queue, every dependency an event; the
 * second round's a is written while the first kernel may still run. */
static void out_of_order(struct dev *d, size_t n)
{
    cl_mem a = buffer(d, n * 4), b = buffer(d, n * 4), c = buffer(d, n * 4), a2 = buffer(d, n * 4);
    uint32_t *ha = xmalloc(n * 4), *hb = xmalloc(n * 4), *ha2 = xmalloc(n * 4);
    uint32_t *got = xmalloc(n * 4), *got2 = xmalloc(n * 4), *want = xmalloc(n * 4);
    fill(ha, n * 4, 5);
    fill(hb, n * 4, 6);
    fill(ha2, n * 4, 7);
    cl_event wa, wb, wa2, k1, k2, r1, r2;
    CL(clEnqueueWriteBuffer(d->ooo, a, CL_FALSE, 0, n * 4, ha, 0, NULL, &wa));
    CL(clEnqueueWriteBuffer(d->ooo, b, CL_FALSE, 0, n * 4, hb, 0, NULL, &wb));
    CL(clSetKernelArg(d->add, 0, sizeof(c), &c));
    CL(clSetKernelArg(d->add, 1, sizeof(a), &a));
    CL(clSetKernelArg(d->add, 2, sizeof(b), &b));
    cl_event w1[2] = {wa, wb};
    launch(d->ooo, d->add, n, 2, w1, &k1);
    CL(clEnqueueReadBuffer(d->ooo, c, CL_FALSE, 0, n * 4, got, 1, &k1, &r1));
    CL(clEnqueueWriteBuffer(d->ooo, a2, CL_FALSE, 0, n * 4, ha2, 0, NULL, &wa2));
    CL(clSetKernelArg(d->add, 1, sizeof(a2), &a2));
    cl_event w2[2] = {wa2, r1}; /* c is overwritten only once read */
    launch(d->ooo, d->add, n, 2, w2, &k2);
    CL(clEnqueueReadBuffer(d->ooo, c, CL_FALSE, 0, n * 4, got2, 1, &k2, &r2));
    CL(clWaitForEvents(1, &r2));
    CL(clWaitForEvents(1, &r1));
    for (size_t k = 0; k < n; k++)
        want[k] = ha[k] + hb[k];
    char what[96];
    snprintf(what, sizeof(what), "out-of-order, events: a+b, %zu bytes", n * 4);
    report(what, got, n * 4, !memcmp(got, want, n * 4));
    for (size_t k = 0; k < n; k++)
        want[k] = ha2[k] + hb[k];
    snprintf(what, sizeof(what), "out-of-order, events: a2+b, %zu bytes", n * 4);
    report(what, got2, n * 4, !memcmp(got2, want, n * 4));
    cl_event all[] = {wa, wb, wa2, k1, k2, r1, r2};
    for (unsigned i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        clReleaseEvent(all[i]);
    CL(clFinish(d->ooo));
    cl_mem ms[] = {a, b, c, a2};
    for (unsigned i = 0; i < 4; i++)
        clReleaseMemObject(ms[i]);
    free(ha), free(hb), free(ha2), free(got), free(got2), free(want);
}

/* A non-blocking write (and a read) held by a user event that is set only
 * after both were enqueued: nothing may wait for it before. */
static void user_event(struct dev *d, size_t n)
{
    cl_int err;
    cl_event ue = clCreateUserEvent(d->ctx, &err);
    if (!ue)
        DIE("clCreateUserEvent: %d", err);
    cl_mem x = buffer(d, n * 4), y = buffer(d, n * 4);
    uint32_t *hx = xmalloc(n * 4), *got = xmalloc(n * 4), *want = xmalloc(n * 4);
    fill(hx, n * 4, 9);
    const uint32_t zero = 0, three = 3;
    CL(clEnqueueFillBuffer(d->ooo, y, &zero, sizeof(zero), 0, n * 4, 0, NULL, NULL));
    CL(clFinish(d->ooo));
    cl_event w, k, r;
    CL(clEnqueueWriteBuffer(d->ooo, x, CL_FALSE, 0, n * 4, hx, 1, &ue, &w));
    CL(clSetKernelArg(d->axpy, 0, sizeof(y), &y));
    CL(clSetKernelArg(d->axpy, 1, sizeof(x), &x));
    CL(clSetKernelArg(d->axpy, 2, sizeof(three), &three));
    launch(d->ooo, d->axpy, n, 1, &w, &k);
    CL(clEnqueueReadBuffer(d->ooo, y, CL_FALSE, 0, n * 4, got, 1, &k, &r));
    cl_int status = 0;
    CL(clGetEventInfo(w, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status, NULL));
    printf("user event: the write waits for it: %s\n", status > CL_COMPLETE ? "yes" : "NO");
    failures += status <= CL_COMPLETE;
    CL(clSetUserEventStatus(ue, CL_COMPLETE));
    CL(clWaitForEvents(1, &r));
    for (size_t i = 0; i < n; i++)
        want[i] = 3 * hx[i];
    char what[96];
    snprintf(what, sizeof(what), "user event set after the write: %zu bytes", n * 4);
    report(what, got, n * 4, !memcmp(got, want, n * 4));
    clReleaseEvent(w), clReleaseEvent(k), clReleaseEvent(r), clReleaseEvent(ue);
    clReleaseMemObject(x), clReleaseMemObject(y);
    free(hx), free(got), free(want);
}

/* A non-blocking read held by a user event while the program synchronises
 * with other work on another queue of the same device: natively the
 * gated read holds nothing else up, so it must not here either. */
static void user_event_other_queue(struct dev *d, size_t n)
{
    cl_int err;
    cl_event ue = clCreateUserEvent(d->ctx, &err);
    if (!ue)
        DIE("clCreateUserEvent: %d", err);
    cl_mem y = buffer(d, n * 4), x = buffer(d, n * 4);
    uint32_t *hy = xmalloc(n * 4), *got = xmalloc(n * 4), *hx = xmalloc(n * 4);
    uint32_t *gotx = xmalloc(n * 4);
    fill(hy, n * 4, 11);
    fill(hx, n * 4, 12);
    CL(clEnqueueWriteBuffer(d->ooo, y, CL_TRUE, 0, n * 4, hy, 0, NULL, NULL));
    cl_event r, w;
    CL(clEnqueueReadBuffer(d->ooo, y, CL_FALSE, 0, n * 4, got, 1, &ue, &r));
    /* Meanwhile, on the in-order queue: each kind of synchronisation. */
    CL(clEnqueueWriteBuffer(d->q, x, CL_FALSE, 0, n * 4, hx, 0, NULL, &w));
    CL(clWaitForEvents(1, &w));
    printf("gated read pending: clWaitForEvents on another queue returned\n");
    CL(clFinish(d->q));
    printf("gated read pending: clFinish of another queue returned\n");
    CL(clEnqueueReadBuffer(d->q, x, CL_TRUE, 0, n * 4, gotx, 0, NULL, NULL));
    report("gated read pending: blocking read on another queue", gotx, n * 4,
           !memcmp(gotx, hx, n * 4));
    CL(clSetUserEventStatus(ue, CL_COMPLETE));
    CL(clWaitForEvents(1, &r));
    report("gated read, once its user event is set", got, n * 4, !memcmp(got, hy, n * 4));
    clReleaseEvent(r), clReleaseEvent(w), clReleaseEvent(ue);
    clReleaseMemObject(x), clReleaseMemObject(y);
    free(hy), free(got), free(hx), free(gotx);
}

/* Both devices busy at once: writes, kernels and reads on each, no
 * synchronisation until both clFinish; then data read from one device
 * (waited by event) written to the other. */
static void two_devices(struct dev *d0, struct dev *d1, size_t n)
{
    struct dev *dv[2] = {d0, d1};
    cl_mem x[2], y[2];
    uint32_t *hx[2], *got[2], *want[2];
    for (int j = 0; j < 2; j++) {
        x[j] = buffer(dv[j], n * 4);
        y[j] = buffer(dv[j], n * 4);
        hx[j] = xmalloc(n * 4);
        got[j] = xmalloc(n * 4);
        want[j] = xmalloc(n * 4);
        fill(hx[j], n * 4, 20 + j);
    }
    const uint32_t zero = 0;
    for (int j = 0; j < 2; j++)
        CL(clEnqueueFillBuffer(dv[j]->q, y[j], &zero, sizeof(zero), 0, n * 4, 0, NULL, NULL));
    for (int j = 0; j < 2; j++)
        CL(clEnqueueWriteBuffer(dv[j]->q, x[j], CL_FALSE, 0, n * 4, hx[j], 0, NULL, NULL));
    for (int j = 0; j < 2; j++) {
        uint32_t a = 5 + (uint32_t)j;
        CL(clSetKernelArg(dv[j]->axpy, 0, sizeof(y[j]), &y[j]));
        CL(clSetKernelArg(dv[j]->axpy, 1, sizeof(x[j]), &x[j]));
        CL(clSetKernelArg(dv[j]->axpy, 2, sizeof(a), &a));
        launch(dv[j]->q, dv[j]->axpy, n, 0, NULL, NULL);
        for (size_t i = 0; i < n; i++)
            want[j][i] = a * hx[j][i];
    }
    for (int j = 0; j < 2; j++)
        CL(clEnqueueReadBuffer(dv[j]->q, y[j], CL_FALSE, 0, n * 4, got[j], 0, NULL, NULL));
    CL(clFinish(d1->q));
    CL(clFinish(d0->q));
    for (int j = 0; j < 2; j++) {
        char what[96];
        snprintf(what, sizeof(what), "two devices: device %d, %zu bytes", j, n * 4);
        report(what, got[j], n * 4, !memcmp(got[j], want[j], n * 4));
    }

    /* Device 0's y, read by event, then written to device 1's x. */
    cl_event r, w;
    uint32_t *via = xmalloc(n * 4);
    CL(clEnqueueReadBuffer(d0->q, y[0], CL_FALSE, 0, n * 4, via, 0, NULL, &r));
    CL(clWaitForEvents(1, &r));
    CL(clEnqueueWriteBuffer(d1->q, x[1], CL_FALSE, 0, n * 4, via, 0, NULL, &w));
    CL(clEnqueueReadBuffer(d1->q, x[1], CL_TRUE, 0, n * 4, got[1], 1, &w, NULL));
    report("two devices: device 0 -> host -> device 1", got[1], n * 4,
           !memcmp(got[1], want[0], n * 4));
    clReleaseEvent(r), clReleaseEvent(w);
    free(via);
    for (int j = 0; j < 2; j++) {
        clReleaseMemObject(x[j]), clReleaseMemObject(y[j]);
        free(hx[j]), free(got[j]), free(want[j]);
    }
}

/* The memory a non-blocking read fills, sent on by a non-blocking write
 * that waits for the read: by its event on another queue (a buffer write,
 * then a rect one), and by the order of one in-order queue.  The write must
 * send what the read brought, not what was there when it was enqueued. */
static void relayed_by_host(struct dev *d, size_t n)
{
    cl_mem a = buffer(d, n * 4), b = buffer(d, n * 4), c = buffer(d, n * 4);
    uint32_t *ha = xmalloc(n * 4), *via = xmalloc(n * 4), *got = xmalloc(n * 4);
    fill(ha, n * 4, 31);
    CL(clEnqueueWriteBuffer(d->q, a, CL_TRUE, 0, n * 4, ha, 0, NULL, NULL));
    const size_t zero[3] = {0, 0, 0}, region[3] = {n * 4, 1, 1};
    char what[96];
    for (int how = 0; how < 3; how++) {
        cl_event r, w;
        memset(via, 0, n * 4);
        memset(got, 0, n * 4);
        cl_mem to = how == 2 ? c : b;
        cl_command_queue wq = how == 2 ? d->q : d->ooo;
        CL(clEnqueueReadBuffer(d->q, a, CL_FALSE, 0, n * 4, via, 0, NULL, &r));
        cl_uint nwl = how == 2 ? 0 : 1;
        const cl_event *wl = nwl ? &r : NULL;
        if (how == 1)
            CL(clEnqueueWriteBufferRect(wq, to, CL_FALSE, zero, zero, region, 0, 0, 0, 0, via, nwl,
                                        &r, &w));
        else
            CL(clEnqueueWriteBuffer(wq, to, CL_FALSE, 0, n * 4, via, nwl, wl, &w));
        CL(clEnqueueReadBuffer(wq, to, CL_TRUE, 0, n * 4, got, 1, &w, NULL));
        snprintf(what, sizeof(what), "relayed by the host: %s, %zu bytes",
                 how == 0   ? "write after a read's event"
                 : how == 1 ? "rect write after it"
                            : "write after a read, in order",
                 n * 4);
        report(what, got, n * 4, !memcmp(got, ha, n * 4));
        clReleaseEvent(r), clReleaseEvent(w);
    }
    clReleaseMemObject(a), clReleaseMemObject(b), clReleaseMemObject(c);
    free(ha), free(via), free(got);
}

/* CL_MEM_COPY_HOST_PTR buffers larger than a chunk; the host memory changed
 * after the create must not matter.  Then a device copy of an odd span. */
static void copy_host_ptr(struct dev *d)
{
    const size_t sz[] = {INLINE_MAX + 1, chunk + 1, 2 * chunk + 7};
    for (unsigned i = 0; i < 3; i++) {
        size_t n = sz[i];
        cl_int err;
        unsigned char *h = xmalloc(n), *want = xmalloc(n), *got = xmalloc(n);
        fill(h, n, 40 + i);
        memcpy(want, h, n);
        cl_mem m = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, n, h, &err);
        if (!m)
            DIE("clCreateBuffer(COPY_HOST_PTR, %zu): %d", n, err);
        memset(h, 0, n);
        cl_mem c = buffer(d, n);
        CL(clEnqueueCopyBuffer(d->q, m, c, 1, 0, n - 1, 0, NULL, NULL));
        CL(clEnqueueReadBuffer(d->q, m, CL_FALSE, 0, n, got, 0, NULL, NULL));
        CL(clFinish(d->q));
        char what[96];
        snprintf(what, sizeof(what), "CL_MEM_COPY_HOST_PTR: %zu bytes", n);
        report(what, got, n, !memcmp(got, want, n));
        CL(clEnqueueReadBuffer(d->q, c, CL_TRUE, 0, n - 1, got, 0, NULL, NULL));
        snprintf(what, sizeof(what), "  copied from offset 1: %zu bytes", n - 1);
        report(what, got, n - 1, !memcmp(got, want + 1, n - 1));
        clReleaseMemObject(m), clReleaseMemObject(c);
        free(h), free(want), free(got);
    }
}

/* Short blocking reads of what a kernel wrote: just after a long kernel (the
 * proxy's poll runs out: the usual read answers), on an idle queue, at odd
 * offsets and lengths, with an event asked for, after a kernel on the
 * out-of-order queue through a wait list, and over the inline limit. */
static void short_reads(struct dev *d)
{
    const cl_uint seed = 7, n = (cl_uint)(chunk / 4 + 1021);
    cl_mem x = buffer(d, (size_t)n * 4);
    CL(clSetKernelArg(d->gen, 0, sizeof(x), &x));
    CL(clSetKernelArg(d->gen, 1, sizeof(seed), &seed));
    launch(d->q, d->gen, n, 0, NULL, NULL);
    const size_t words[] = {n - 1, 0, 1, 12345 % n, n / 2};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        cl_uint got = 0, want = (cl_uint)words[i] * 2654435761u + seed;
        CL(clEnqueueReadBuffer(d->q, x, CL_TRUE, words[i] * 4, 4, &got, 0, NULL, NULL));
        char what[96];
        snprintf(what, sizeof(what), "short read: word %zu%s", words[i], i ? "" : ", kernel ahead");
        report(what, &got, 4, got == want);
    }
    const size_t spans[][2] = {{1, 1}, {3, 5}, {4093, 4099}, {0, INLINE_MAX}, {8, INLINE_MAX + 1}};
    for (size_t i = 0; i < sizeof(spans) / sizeof(spans[0]); i++) {
        size_t off = spans[i][0], len = spans[i][1];
        cl_uint *all = xmalloc(off + len + 8);
        unsigned char *got = xmalloc(len);
        for (size_t w = 0; w < (off + len + 3) / 4; w++)
            all[w] = (cl_uint)w * 2654435761u + seed;
        cl_event e = NULL;
        CL(clEnqueueReadBuffer(d->q, x, CL_TRUE, off, len, got, 0, NULL, i == 2 ? &e : NULL));
        if (e) {
            cl_int st = 1;
            CL(clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL));
            if (st != CL_COMPLETE)
                DIE("blocking read's event: status %d", st);
            clReleaseEvent(e);
        }
        char what[96];
        snprintf(what, sizeof(what), "short read: %zu bytes at %zu%s", len, off,
                 i == 2 ? ", with its event" : "");
        report(what, got, len, !memcmp(got, (unsigned char *)all + off, len));
        free(all), free(got);
    }
    cl_event k;
    const cl_uint seed2 = 99;
    CL(clSetKernelArg(d->gen, 1, sizeof(seed2), &seed2));
    launch(d->ooo, d->gen, n, 0, NULL, &k);
    cl_uint got = 0, want = (n - 2) * 2654435761u + seed2;
    CL(clEnqueueReadBuffer(d->ooo, x, CL_TRUE, (size_t)(n - 2) * 4, 4, &got, 1, &k, NULL));
    report("short read: out-of-order queue, after its kernel", &got, 4, got == want);
    clReleaseEvent(k);
    clReleaseMemObject(x);
}

/* A hang (a transfer that never lands) ends the run with a message. */
static void on_alarm(int sig)
{
    static const char msg[] = "transfers: still running after its alarm: hangs in: ";
    (void)sig;
    for (int fd = STDOUT_FILENO; fd <= STDERR_FILENO; fd++)
        if (write(fd, msg, sizeof(msg) - 1) < 0 || write(fd, step, strlen(step)) < 0 ||
            write(fd, "\n", 1) < 0)
            break;
    _exit(3);
}

int main(void)
{
    /* Line by line: a run killed halfway shows how far it got. */
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGALRM, on_alarm);
    /* Sanitizer builds run slower: the tests' environment says how much. */
    const char *ts = getenv("VOCL_TEST_TIME_SCALE");
    unsigned scale = ts && atoi(ts) > 0 ? (unsigned)atoi(ts) : 1;
    alarm(30 * scale);
    const char *ps = getenv("VOCL_POOL_SIZE");
    if (ps && *ps)
        chunk = parse_size(ps);
    if (chunk < 4096)
        DIE("VOCL_POOL_SIZE %s: too small", ps);
    pick_sizes();

    cl_platform_id plat;
    cl_uint ndev = 0;
    CL(clGetPlatformIDs(1, &plat, NULL));
    CL(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 0, NULL, &ndev));
    cl_device_id devs[2];
    if (ndev < 2)
        DIE("needs 2 devices, has %u", ndev);
    CL(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 2, devs, NULL));
    struct dev d0, d1;
    dev_open(&d0, devs[0]);
    dev_open(&d1, devs[1]);
    step = "window";
    window(&d0, 0);
    window(&d0, 4093);
    step = "reads_by_event";
    reads_by_event(&d0);
    step = "writes_and_kernels";
    writes_and_kernels(&d0, INLINE_MAX / 4 + 3, "");
    writes_and_kernels(&d0, chunk / 4 + 5, "");
    writes_and_kernels(&d1, (2 * chunk) / 4 + 1, ", device 1");
    step = "out_of_order";
    out_of_order(&d0, (3 * chunk) / 8 + 1);
    step = "user_event";
    user_event(&d0, chunk / 2 + 17);
    step = "user_event_other_queue";
    user_event_other_queue(&d0, chunk / 2 + 17);
    step = "two_devices";
    two_devices(&d0, &d1, chunk / 4 + 33);
    step = "relayed_by_host";
    relayed_by_host(&d0, 61);
    relayed_by_host(&d1, chunk / 4 + 9);
    step = "copy_host_ptr";
    copy_host_ptr(&d1);
    step = "short_reads";
    short_reads(&d0);
    step = "teardown";

    dev_close(&d0);
    dev_close(&d1);
    printf("%s\n", failures ? "SOME RESULTS WRONG" : "all results right");
    return failures ? 1 : 0;
}
