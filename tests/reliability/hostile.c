/*
 * hostile.c - one proxy, two clients: rank 0 is an ordinary OpenCL program
 * (through libvocl), rank 1 speaks the wire protocol by hand and breaks it in
 * every way a client can.  Rank 0 must not notice (the reliability suite).
 *
 *   vocl-run -a 2 -n 1 -d 1 -- hostile
 *
 * Rank 1 (hostile), on its own session of the proxy:
 *   - requests before HELLO, unknown opcodes, truncated and oversized
 *     payloads, a message over the proxy's size limit;
 *   - the ids rank 0's objects have in rank 0's session, for every type:
 *     info queries, retains, releases, transfers - all must fail;
 *   - its own objects made under those very ids, used after their release;
 *   - deferred errors, and last a broken header, which ends its session.
 * Each request's reply is checked; a reply that does not come within 30 s
 * (times VOCL_TEST_TIME_SCALE) fails the test.  Rank 0 runs verified kernel
 * rounds all the while, and checks at the end that a buffer it never wrote
 * again still holds what it put there, and that its calls of MPI_Finalize
 * reach libvocl's (in ICD mode too, where libvocl redirects them: init.c).
 *
 * Rank 1 joins the MPI_Comm_dup of MPI_COMM_WORLD that libvocl and the
 * proxies make, and answers the proxy's pings on it with libvocl's liveness
 * thread (common/liveness.c).  libvocl is preloaded in it too, and told to stay out of the
 * way (VOCL_IN_PROXY), or its MPI_Finalize would make a dup of its own.
 */
#include <CL/cl.h>
#include <mpi.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "liveness.h"
#include "protocol.h"
#include "vocl_api.h"
#include "wire.h"

#include "../integration/cl_check.h"

#define N 4096
#define KEEP 1024         /* ints in the buffer rank 0 never writes again */
#define ID_SPAN 512       /* ids of rank 0's session that rank 1 tries */
#define TAG_DONE 77       /* on MPI_COMM_WORLD: rank 1 -> rank 0, it is done */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* --- rank 0: an ordinary OpenCL program ---------------------------------------------------- */

/* Whether this program's MPI_Finalize is libvocl's, which must take its leave
 * before MPICH's begins. */
static int finalize_is_libvocl(void)
{
    int (*fn)(void) = MPI_Finalize;
    void *p;
    Dl_info where;
    memcpy(&p, &fn, sizeof(p));
    if (!dladdr(p, &where) || !where.dli_fname || !strstr(where.dli_fname, "libvocl")) {
        fprintf(stderr, "victim: MPI_Finalize is in %s, not libvocl\n",
                where.dli_fname ? where.dli_fname : "(unknown)");
        return 0;
    }
    return 1;
}

static int victim(void)
{
    struct inc t;
    cl_int rc;
    inc_open(&t, N);
    static int keep[KEEP], back[KEEP], in[N], out[N];
    for (int i = 0; i < KEEP; i++)
        keep[i] = 0x5eed0000 + i;
    cl_mem kept = clCreateBuffer(t.ctx, CL_MEM_COPY_HOST_PTR, sizeof(keep), keep, &rc);
    CHECK(rc);

    /* Rounds until rank 1 is done, and at least one. */
    int rounds = 0, done = 0;
    do {
        if (inc_round(&t, in, out, rounds, "victim"))
            return 1;
        rounds++;
        MPI_Iprobe(1, TAG_DONE, MPI_COMM_WORLD, &done, MPI_STATUS_IGNORE);
    } while (!done);
    int verdict;
    MPI_Recv(&verdict, 1, MPI_INT, 1, TAG_DONE, MPI_COMM_WORLD, MPI_STATUS_IGNORE);

    CHECK(clEnqueueReadBuffer(t.q, kept, CL_TRUE, 0, sizeof(back), back, 0, NULL, NULL));
    int bad = memcmp(back, keep, sizeof(keep)) != 0;
    CHECK(clReleaseMemObject(kept));
    inc_close(&t);
    printf("victim: %d rounds verified while rank 1 attacked; kept buffer %s\n", rounds,
           bad ? "CHANGED" : "intact");
    return bad || verdict || !finalize_is_libvocl();
}

/* --- rank 1: a hostile client ---------------------------------------------------------------- */

static MPI_Comm comm;
static int proxy;          /* the proxy's rank */
static double reply_wait;  /* seconds a reply may take */
static int checks, failures;
static struct vocl_wr w;
static uint8_t *rep;       /* the last reply */
static int rep_len;
static uint32_t seq;

static void begin(unsigned op, bool want_reply)
{
    vocl_wr_begin(&w, (uint16_t)op, want_reply ? VOCL_F_REPLY : 0, ++seq);
}

static void send_raw(const void *p, size_t n)
{
    MPI_Send(p, (int)n, MPI_BYTE, proxy, VOCL_TAG_REQ, comm);
}

/* The reply to the last request sent (seq): replies come in any order (a
 * wait is answered when its events complete), so what kernels printed,
 * notifications and late replies to earlier requests are passed over;
 * -1 when none comes in time. */
static int await_reply(double secs)
{
    double until = now() + secs;
    for (;;) {
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(proxy, VOCL_TAG_REP, comm, &flag, &st);
        if (flag) {
            MPI_Get_count(&st, MPI_BYTE, &rep_len);
            free(rep);
            rep = malloc((size_t)rep_len + 1);
            MPI_Recv(rep, rep_len, MPI_BYTE, proxy, VOCL_TAG_REP, comm, MPI_STATUS_IGNORE);
            struct vocl_msg_hdr h;
            if (!vocl_hdr_get(rep, (size_t)rep_len, &h))
                return -1;
            if (h.opcode == VOCL_OP_OUTPUT || h.opcode == VOCL_OP_NOTIFY || h.seq != seq)
                continue;
            return 0;
        }
        if (now() > until)
            return -1;
        usleep(200);
    }
}

/* The error code at the start of the last reply. */
static cl_int reply_err(void)
{
    struct vocl_rd r;
    vocl_rd_init(&r, rep + VOCL_HDR_SIZE, (size_t)rep_len - VOCL_HDR_SIZE);
    cl_int err = vocl_rd_i32(&r);
    return r.fail ? 1 : err;
}

static void check(bool ok, const char *what, cl_int got)
{
    checks++;
    if (!ok) {
        failures++;
        fprintf(stderr, "hostile: FAILED: %s (got %d)\n", what, got);
    }
}

/* Sends the message in w, waits for its reply; its error code. */
static cl_int call(const char *what)
{
    vocl_wr_finish(&w);
    send_raw(w.buf, w.len);
    if (await_reply(reply_wait)) {
        fprintf(stderr, "hostile: no reply to %s in %.0f s\n", what, reply_wait);
        failures++;
        return 1;
    }
    return reply_err();
}

static void expect(cl_int want, const char *what)
{
    cl_int got = call(what);
    check(got == want, what, got);
}

static void expect_fail(const char *what)
{
    cl_int got = call(what);
    check(got != CL_SUCCESS && got != 1, what, got);
}

/* An info query on id; the device's or ids of any type. */
static void info(unsigned op, uint64_t id, uint64_t param)
{
    begin(op, true);
    vocl_wr_u64(&w, id);
    vocl_wr_u64(&w, param);
    vocl_wr_u64(&w, 8);
    vocl_wr_u8(&w, 1);
}

static void create_context(uint64_t id)
{
    begin(VOCL_OP_clCreateContext, true);
    vocl_wr_u32(&w, 0); /* no properties */
    vocl_wr_u32(&w, 1);
    vocl_wr_u64(&w, 1); /* the proxy's first device */
    vocl_wr_u64(&w, id);
}

static void create_buffer(uint64_t ctx, uint64_t id, const void *data, size_t n)
{
    begin(VOCL_OP_clCreateBuffer, true);
    vocl_wr_u64(&w, ctx);
    vocl_wr_u32(&w, 0);
    vocl_wr_u64(&w, CL_MEM_READ_WRITE);
    vocl_wr_u64(&w, n);
    vocl_wr_u8(&w, VOCL_DATA_INLINE);
    vocl_wr_bytes(&w, data, n);
    vocl_wr_u64(&w, id);
}

static void read_buffer(uint64_t queue, uint64_t mem, size_t n)
{
    begin(VOCL_OP_clEnqueueReadBuffer, true);
    vocl_wr_u64(&w, queue);
    vocl_wr_u64(&w, mem);
    vocl_wr_u8(&w, 1);
    vocl_wr_u64(&w, 0);
    vocl_wr_u64(&w, n);
    vocl_wr_u32(&w, 0); /* no wait list */
    vocl_wr_u64(&w, 0); /* no event */
    vocl_wr_u8(&w, VOCL_DATA_INLINE);
}

static void refcount(bool retain, uint64_t id, uint8_t last)
{
    begin(retain ? VOCL_OP_RETAIN : VOCL_OP_RELEASE, true);
    vocl_wr_u64(&w, id);
    if (!retain)
        vocl_wr_u8(&w, last);
}

static void hostile(void)
{
    vocl_wr_init(&w);

    /* Before HELLO, nothing is served. */
    info(VOCL_OP_clGetDeviceInfo, 1, CL_DEVICE_TYPE);
    expect(CL_INVALID_OPERATION, "a request before HELLO");

    begin(VOCL_OP_HELLO, true);
    vocl_wr_u32(&w, VOCL_WIRE_VERSION);
    vocl_wr_u32(&w, VOCL_FEAT_NONE);
    vocl_wr_u32(&w, 0);
    expect(CL_SUCCESS, "HELLO");

    begin(4321, true);
    vocl_wr_u64(&w, 1);
    expect(CL_INVALID_OPERATION, "an unknown opcode");

    /* Truncated: a device list that promises more ids than it carries. */
    begin(VOCL_OP_clCreateContext, true);
    vocl_wr_u32(&w, 0);
    vocl_wr_u32(&w, 1000);
    vocl_wr_u64(&w, 1);
    expect(CL_INVALID_VALUE, "a truncated device list");

    /* Oversized lengths: inline data said to be 2^62 bytes. */
    begin(VOCL_OP_clCreateBuffer, true);
    vocl_wr_u64(&w, 0x10000);
    vocl_wr_u32(&w, 0);
    vocl_wr_u64(&w, CL_MEM_READ_WRITE);
    vocl_wr_u64(&w, 64);
    vocl_wr_u8(&w, VOCL_DATA_INLINE);
    vocl_wr_u64(&w, 1ull << 62);
    vocl_wr_u64(&w, 0x10001);
    expect(CL_INVALID_VALUE, "an oversized inline length");

    /* Trailing bytes after a well-formed request. */
    info(VOCL_OP_clGetDeviceInfo, 1, CL_DEVICE_TYPE);
    vocl_wr_u32(&w, 0xdeadbeef);
    expect(CL_INVALID_VALUE, "trailing bytes");

    /* A message over the proxy's limit is refused and answered. */
    size_t big = VOCL_MSG_MAX + 4096;
    uint8_t *huge = calloc(1, big);
    begin(VOCL_OP_clGetDeviceInfo, true);
    vocl_wr_finish(&w);
    memcpy(huge, w.buf, VOCL_HDR_SIZE);
    send_raw(huge, big);
    free(huge);
    int got_reply = await_reply(reply_wait);
    check(got_reply == 0 && reply_err() == CL_OUT_OF_RESOURCES, "a message over VOCL_MSG_MAX",
          got_reply == 0 ? reply_err() : got_reply);

    /* Rank 0's ids, of every type: its session's objects are not ours. */
    static const struct {
        unsigned op;
        uint64_t param;
        enum vocl_type type;
    } probes[] = {
        {VOCL_OP_clGetContextInfo, CL_CONTEXT_NUM_DEVICES, VOCL_T_CONTEXT},
        {VOCL_OP_clGetCommandQueueInfo, CL_QUEUE_REFERENCE_COUNT, VOCL_T_QUEUE},
        {VOCL_OP_clGetMemObjectInfo, CL_MEM_SIZE, VOCL_T_MEM},
        {VOCL_OP_clGetProgramInfo, CL_PROGRAM_NUM_DEVICES, VOCL_T_PROGRAM},
        {VOCL_OP_clGetKernelInfo, CL_KERNEL_NUM_ARGS, VOCL_T_KERNEL},
        {VOCL_OP_clGetEventInfo, CL_EVENT_COMMAND_EXECUTION_STATUS, VOCL_T_EVENT},
    };
    int seen = 0;
    for (uint64_t id = VOCL_ID_CLIENT_MIN; id < VOCL_ID_CLIENT_MIN + ID_SPAN; id++) {
        for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
            info(probes[i].op, id, probes[i].param);
            cl_int got = call("an info query on another session's id");
            seen += got == CL_SUCCESS;
            check(got == vocl_type_invalid_err(probes[i].type),
                  "an info query on another session's id", got);
        }
        refcount(true, id, 0);
        expect(CL_INVALID_VALUE, "a retain of another session's id");
        refcount(false, id, 0);
        expect(CL_INVALID_VALUE, "a release of another session's id");
        read_buffer(id, id + 1, 64);
        expect_fail("a read from another session's ids");
    }
    printf("hostile: %d ids of rank 0's session tried, %d of them seen\n", ID_SPAN, seen);

    /* Our own objects, under the ids rank 0 uses, and used after release. */
    uint64_t ctx = VOCL_ID_CLIENT_MIN, mem = ctx + 1, queue = ctx + 2;
    int data[64];
    for (int i = 0; i < 64; i++)
        data[i] = -i;
    create_context(ctx);
    expect(CL_SUCCESS, "a context of our own");
    create_context(ctx);
    expect(CL_INVALID_VALUE, "a second object under an id in use");
    create_buffer(ctx, mem, data, sizeof(data));
    expect(CL_SUCCESS, "a buffer of our own");
    begin(VOCL_OP_clCreateCommandQueue, true);
    vocl_wr_u64(&w, ctx);
    vocl_wr_u64(&w, 1);
    vocl_wr_u64(&w, 0);
    vocl_wr_u64(&w, queue);
    expect(CL_SUCCESS, "a queue of our own");
    read_buffer(queue, mem, sizeof(data));
    cl_int got = call("a read of our own buffer");
    struct vocl_rd r;
    vocl_rd_init(&r, rep + VOCL_HDR_SIZE, (size_t)rep_len - VOCL_HDR_SIZE);
    vocl_rd_i32(&r);
    size_t n = 0;
    const void *back = vocl_rd_bytes(&r, &n);
    check(got == CL_SUCCESS && n == sizeof(data) && !memcmp(back, data, n),
          "a read of our own buffer", got);
    refcount(false, mem, 1);
    expect(CL_SUCCESS, "the release of our buffer");
    read_buffer(queue, mem, sizeof(data));
    expect(CL_INVALID_MEM_OBJECT, "a read of a released buffer");
    info(VOCL_OP_clGetMemObjectInfo, mem, CL_MEM_SIZE);
    expect(CL_INVALID_MEM_OBJECT, "an info query on a released buffer");
    refcount(true, mem, 0);
    expect(CL_INVALID_VALUE, "a retain of a released buffer");

    /* Deferred errors stay in their session: 1000 bad commands without a
     * reply, then a synchronising call reports the first. */
    for (int i = 0; i < 1000; i++) {
        begin(VOCL_OP_clFlush, false);
        vocl_wr_u64(&w, VOCL_ID_CLIENT_MIN + 100 + (unsigned)i);
        vocl_wr_finish(&w);
        send_raw(w.buf, w.len);
    }
    begin(VOCL_OP_clFinish, true);
    vocl_wr_u64(&w, queue);
    expect(CL_INVALID_COMMAND_QUEUE, "a finish after 1000 bad flushes");
    begin(VOCL_OP_clFinish, true);
    vocl_wr_u64(&w, queue);
    expect(CL_SUCCESS, "the next finish");

    /* Last, a broken header: the proxy ends this session (everything in it
     * released), answers nothing more, and serves rank 0 on. */
    begin(VOCL_OP_clFinish, true);
    vocl_wr_u64(&w, queue);
    vocl_wr_finish(&w);
    w.buf[0] ^= 0xff;
    send_raw(w.buf, w.len);
    begin(VOCL_OP_HELLO, true);
    vocl_wr_u32(&w, VOCL_WIRE_VERSION);
    vocl_wr_u32(&w, VOCL_FEAT_NONE);
    vocl_wr_u32(&w, 0);
    vocl_wr_finish(&w);
    send_raw(w.buf, w.len);
    check(await_reply(2.0) != 0, "no reply once the session has ended", 0);

    vocl_wr_free(&w);
    free(rep);
    printf("hostile: %d checks, %d failed\n", checks, failures);
}

int main(void)
{
    int provided, rank, size;
    MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *apps = getenv("VOCL_APP_RANKS");
    if (!apps || atoi(apps) != 2 || size != 3) {
        if (rank == 0)
            fprintf(stderr, "usage: vocl-run -a 2 -n 1 -d 1 -- hostile\n");
        MPI_Finalize();
        return 2;
    }
    int rc = 0;
    if (rank == 0) {
        rc = victim();
    } else {
        const char *scale = getenv("VOCL_TEST_TIME_SCALE");
        reply_wait = 30.0 * (scale ? atof(scale) : 1.0);
        proxy = 2;
        setenv("VOCL_IN_PROXY", "1", 1);
        MPI_Comm_dup(MPI_COMM_WORLD, &comm); /* the one libvocl and the proxies make */
        vocl_live_start(comm); /* answer the proxy's pings, as libvocl does */
        hostile();
        vocl_live_stop();
        vocl_live_drain();
        int verdict = failures != 0;
        MPI_Send(&verdict, 1, MPI_INT, 0, TAG_DONE, MPI_COMM_WORLD);
        rc = verdict;
    }
    fflush(stdout);
    MPI_Finalize();
    return rc;
}
