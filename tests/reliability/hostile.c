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
 *   - deferred errors, also in one batch of requests, and last a broken
 *     header, which ends its session.
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
 *
 * Daemon mode (tests/daemon): one process, the hostile client alone,
 *
 *   hostile --connect HOST:PORT
 *
 * connects to the daemon there (over UCX) as libvocl does, while an
 * ordinary application of the test's uses it.  First
 * with a wrong token: refused, and its connection ends.  Then with the
 * token (VOCL_TOKEN_FILE), everything above, and what only strangers on a
 * shared daemon try: requests to other proxies (migrations, event links),
 * which a daemon refuses, and a rectangular read whose host rows are 60 GiB
 * apart, which would make the proxy stage 60 GiB (refused by the daemon's
 * --max-session-host, which the test sets to 1G).
 *
 *   hostile --silent HOST:PORT SECONDS
 *
 * connects (and goes to its worker) and never says HELLO: exits 0 once the
 * daemon has dropped it, 1 if it has not within SECONDS.
 *
 *   hostile --away HOST:PORT
 *
 * connects, is handed to a worker, and never goes there: exits 0 (the
 * test then sees that worker end), 1 if the daemon handed it to none.
 */
#include <CL/cl.h>
#include <mpi.h>

#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <inttypes.h>
#include <unistd.h>
#include <sys/file.h>

#include "chan.h"
#include "liveness.h"
#include "mpi_start.h"
#include "protocol.h"
#include "token.h"
#include "ucx.h"
#include "vocl_api.h"
#include "vocl_msg.h"
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
static struct vocl_conn *conn; /* daemon mode: the connection (common/ucx.h) */
static int proxy;          /* the proxy's rank */
static double reply_wait;  /* seconds a reply may take */
static int checks, failures;
static struct vocl_wr w;
static uint8_t *rep;       /* the last reply */
static int rep_len;
static uint32_t seq;
static bool daemon_mode;        /* hostile --connect: the token, then the checks of a daemon */
static bool handed_on;          /* the daemon handed this client to a worker of its own */
static struct vocl_token token; /* daemon mode: the one the daemon takes */
static uint64_t chunk;          /* the proxy's chunk size (HELLO's reply) */

static void begin(unsigned op, bool want_reply)
{
    vocl_wr_begin(&w, (uint16_t)op, want_reply ? VOCL_F_REPLY : 0, ++seq);
}

/* The proxy's channel (common/chan.h): its rank, or the connection. */
static struct vocl_chan peer(void)
{
    return conn ? VOCL_CHAN_UCX(conn) : VOCL_CHAN_MPI(comm, proxy);
}

/* Sends n bytes of p on tag, and waits until they are gone (or the
 * connection failed). */
static void send_on(int tag, const void *p, size_t n)
{
    struct vocl_req r;
    if (vocl_isend(peer(), tag, p, n, &r) == 0)
        while (vocl_test(&r, NULL) == 0)
            usleep(50);
}

static void send_raw(const void *p, size_t n)
{
    send_on(VOCL_TAG_REQ, p, n);
}

/* The next message from the proxy on tag before until, taken off the
 * queue (*m); false when none came. */
static bool arrived(int tag, double until, struct vocl_probed *m)
{
    for (;;) {
        int flag = vocl_improbe(peer(), tag, m);
        if (flag > 0)
            return true;
        if (flag < 0 || now() > until)
            return false;
        usleep(200);
    }
}

/* The next message on the reply tag, before until, into rep; false when
 * none came or its header is malformed. */
static bool next_reply(double until, struct vocl_msg_hdr *h)
{
    struct vocl_probed m;
    if (!arrived(VOCL_TAG_REP, until, &m))
        return false;
    rep_len = (int)m.len;
    free(rep);
    rep = malloc(m.len + 1);
    vocl_mrecv(&m, rep, m.len);
    return vocl_hdr_get(rep, (size_t)rep_len, h);
}

/* The reply to the last request sent (seq): replies come in any order (a
 * wait is answered when its events complete), so what kernels printed,
 * notifications and late replies to earlier requests are passed over;
 * -1 when none comes in time. */
static int await_reply(double secs)
{
    double until = now() + secs;
    struct vocl_msg_hdr h;
    while (next_reply(until, &h))
        if (h.opcode != VOCL_OP_OUTPUT && h.opcode != VOCL_OP_NOTIFY && h.seq == seq)
            return 0;
    return -1;
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

/* A HELLO request in w, with t's token if not NULL. */
static void put_hello(bool want_reply, const struct vocl_token *t)
{
    begin(VOCL_OP_HELLO, want_reply);
    vocl_wr_u32(&w, VOCL_WIRE_VERSION);
    vocl_wr_u32(&w, VOCL_FEAT_NONE);
    vocl_wr_u32(&w, t ? VOCL_HELLO_TOKEN : 0);
    if (t)
        vocl_wr_bytes(&w, t->bytes, t->len);
}

/* HELLO, with t's token if not NULL; its status. */
static cl_int hello(const struct vocl_token *t, const char *what)
{
    put_hello(true, t);
    cl_int got = call(what);
    if (got == CL_SUCCESS) {
        struct vocl_rd r;
        vocl_rd_init(&r, rep + VOCL_HDR_SIZE, (size_t)rep_len - VOCL_HDR_SIZE);
        vocl_rd_i32(&r);
        vocl_rd_u32(&r); /* version */
        vocl_rd_u32(&r); /* features */
        chunk = vocl_rd_u64(&r);
    }
    return got;
}

static void refcount(bool retain, uint64_t id, uint8_t last)
{
    begin(retain ? VOCL_OP_RETAIN : VOCL_OP_RELEASE, true);
    vocl_wr_u64(&w, id);
    if (!retain)
        vocl_wr_u8(&w, last);
}

/* A request without a reply that must be refused: the next clFinish of
 * queue reports it (a deferred error), the one after succeeds. */
static void refused_quietly(uint64_t queue, const char *what)
{
    vocl_wr_finish(&w);
    send_raw(w.buf, w.len);
    begin(VOCL_OP_clFinish, true);
    vocl_wr_u64(&w, queue);
    expect_fail(what);
    begin(VOCL_OP_clFinish, true);
    vocl_wr_u64(&w, queue);
    expect(CL_SUCCESS, "the finish after it");
}

/* The status in the last reply, to clGetEventInfo's
 * CL_EVENT_COMMAND_EXECUTION_STATUS; 1 when it has none. */
static cl_int event_status(void)
{
    struct vocl_rd r;
    struct vocl_msg_clGetEventInfo_rep m;
    cl_int st = 1;
    vocl_rd_init(&r, rep + VOCL_HDR_SIZE, (size_t)rep_len - VOCL_HDR_SIZE);
    vocl_rd_i32(&r);
    vocl_dec_clGetEventInfo_rep(&r, &m);
    if (!r.fail && m.value.len == sizeof(st))
        memcpy(&st, m.value.p, sizeof(st));
    return st;
}

/* The daemon's bound on relays under way in a session (EXEC_RELAYS_MAX),
 * and the ids of the event links that fill it. */
#define RELAYS_MAX   256
#define RELAY_EVENTS (VOCL_ID_CLIENT_MIN + 0x8000)

/* Daemon mode: what a stranger on a shared daemon might try. */
static void strangers(uint64_t ctx, uint64_t queue)
{
    uint64_t mem = ctx + 10;
    int data[64] = {0};
    create_buffer(ctx, mem, data, sizeof(data));
    expect(CL_SUCCESS, "a buffer for the stranger's requests");

    /* Another proxy's traffic: a daemon has no peers, and takes no tag. */
    begin(VOCL_OP_MIGRATE_OUT, false);
    vocl_wr_u64(&w, mem);
    vocl_wr_u32(&w, 1);    /* peer */
    vocl_wr_u32(&w, 2000); /* tag */
    vocl_wr_u64(&w, 1u << 20);
    vocl_wr_u64(&w, 0);    /* no twin */
    vocl_wr_u32(&w, 0);    /* queues */
    vocl_wr_u32(&w, 0);    /* events */
    refused_quietly(queue, "a migration to another proxy");
    begin(VOCL_OP_EVENT_OUT, false);
    vocl_wr_u64(&w, VOCL_ID_CLIENT_MIN + 3);
    vocl_wr_u32(&w, 1);
    vocl_wr_u32(&w, 2001);
    refused_quietly(queue, "an event link to another proxy");

    /* Event links the client relays (between two daemons): each has a
     * thread on the daemon until its status comes; RELAYS_MAX at most. */
    for (int i = 0; i <= RELAYS_MAX; i++) {
        begin(VOCL_OP_EVENT_IN, false);
        vocl_wr_u64(&w, ctx);
        vocl_wr_u32(&w, VOCL_PEER_CLIENT);
        vocl_wr_u32(&w, (uint32_t)(VOCL_TAG_PEER_MIN + i));
        vocl_wr_u64(&w, RELAY_EVENTS + (uint64_t)i);
        if (i < RELAYS_MAX) {
            vocl_wr_finish(&w);
            send_raw(w.buf, w.len);
        }
    }
    refused_quietly(queue, "an event link past the session's limit");
    /* The sending side refused too: its peer is still told, so that what
     * waits for it fails rather than wait for ever. */
    const int out_tag = VOCL_TAG_PEER_MIN + RELAYS_MAX + 1;
    begin(VOCL_OP_EVENT_OUT, false);
    vocl_wr_u64(&w, RELAY_EVENTS);
    vocl_wr_u32(&w, VOCL_PEER_CLIENT);
    vocl_wr_u32(&w, (uint32_t)out_tag);
    refused_quietly(queue, "the sending end of an event link past the limit");
    int32_t told = CL_COMPLETE;
    struct vocl_probed rm;
    bool came = arrived(vocl_relay_tag(out_tag), now() + reply_wait, &rm);
    if (came)
        vocl_mrecv(&rm, &told, sizeof(told));
    check(came && told < 0, "a refused event link's peer told of a failure", told);
    /* Their statuses: the threads end, and there is room again. */
    int32_t complete = CL_COMPLETE;
    for (int i = 0; i < RELAYS_MAX; i++)
        send_on(vocl_relay_tag(VOCL_TAG_PEER_MIN + i), &complete, sizeof(complete));
    double by = now() + reply_wait;
    cl_int st = 1;
    while (st != CL_COMPLETE && now() < by) { /* (the last one set is complete) */
        info(VOCL_OP_clGetEventInfo, RELAY_EVENTS + RELAYS_MAX - 1,
             CL_EVENT_COMMAND_EXECUTION_STATUS);
        if (call("an event's status") == CL_SUCCESS)
            st = event_status();
        usleep(1000);
    }
    check(st == CL_COMPLETE, "a relayed event link's status came", st);
    begin(VOCL_OP_EVENT_IN, true);
    vocl_wr_u64(&w, ctx);
    vocl_wr_u32(&w, VOCL_PEER_CLIENT);
    vocl_wr_u32(&w, VOCL_TAG_PEER_MIN);
    vocl_wr_u64(&w, RELAY_EVENTS + RELAYS_MAX + 1);
    expect(CL_SUCCESS, "an event link once the others are through");
    send_on(vocl_relay_tag(VOCL_TAG_PEER_MIN), &complete, sizeof(complete));

    /* Two rows 60 GiB apart: the proxy would stage a span of 60 GiB. */
    const uint64_t pitch = 60ull << 30, span = pitch + 16;
    begin(VOCL_OP_clEnqueueReadBufferRect, true);
    vocl_wr_u64(&w, queue);
    vocl_wr_u64(&w, mem);
    vocl_wr_u8(&w, 1);
    vocl_wr_va3(&w, &(struct vocl_va3){1, {0, 0, 0}});
    vocl_wr_va3(&w, &(struct vocl_va3){1, {0, 0, 0}});
    vocl_wr_va3(&w, &(struct vocl_va3){1, {16, 2, 1}});
    vocl_wr_u64(&w, 16);
    vocl_wr_u64(&w, 0);
    vocl_wr_u64(&w, pitch);
    vocl_wr_u64(&w, 0);
    vocl_wr_u32(&w, 0); /* no wait list */
    vocl_wr_u64(&w, 0); /* no event */
    vocl_wr_u64(&w, span);
    vocl_wr_data(&w, &(struct vocl_data){.mode = VOCL_DATA_CHUNKED, .depth = 1, .arg = chunk},
                 false);
    int tag = vocl_data_tag(seq);
    expect(CL_OUT_OF_HOST_MEMORY, "a 60 GiB span over the session's host memory");
    /* As many empty chunks as the read would have had. */
    uint64_t want = (span + chunk - 1) / chunk, got = 0;
    double until = now() + reply_wait;
    struct vocl_probed cm;
    while (got < want && arrived(tag, until, &cm)) {
        got += cm.len == 0;
        vocl_mrecv(&cm, NULL, 0);
    }
    check(got == want, "the refused read's empty chunks", (cl_int)got);
    refcount(false, mem, 1);
    expect(CL_SUCCESS, "the release of the stranger's buffer");
}

/* The proxy ended the session: it says so (CLOSED) in time, and why;
 * whatever came before it is passed over. */
static void told_closed(const char *why, double secs)
{
    double until = now() + secs;
    struct vocl_msg_CLOSED_req m = {0};
    struct vocl_msg_hdr h;
    while (next_reply(until, &h)) {
        if (h.opcode != VOCL_OP_CLOSED)
            continue;
        struct vocl_rd r;
        vocl_rd_init(&r, rep + VOCL_HDR_SIZE, h.length);
        vocl_dec_CLOSED_req(&r, &m);
        break;
    }
    bool ok = m.why.p && m.why.len == strlen(why) && !memcmp(m.why.p, why, m.why.len);
    check(ok, "the proxy says why it ended the session", (cl_int)m.why.len);
    if (!ok)
        fprintf(stderr, "hostile: wanted CLOSED \"%s\", got \"%.*s\"\n", why, (int)m.why.len,
                m.why.p ? m.why.p : "");
}

/* The session has ended: a HELLO gets no reply. */
static void no_more_replies(void)
{
    if (handed_on) { /* (its worker ends with the session: nothing to send to) */
        printf("hostile: the session's worker has ended with it: nothing sent after\n");
        return;
    }
    put_hello(true, NULL);
    vocl_wr_finish(&w);
    send_raw(w.buf, w.len);
    check(await_reply(2.0) != 0, "no reply once the session has ended", 0);
}

static void hostile(void)
{
    vocl_wr_init(&w);

    /* Before HELLO, nothing is served. */
    info(VOCL_OP_clGetDeviceInfo, 1, CL_DEVICE_TYPE);
    expect(CL_INVALID_OPERATION, "a request before HELLO");

    cl_int got = hello(daemon_mode ? &token : NULL, "HELLO");
    check(got == CL_SUCCESS && chunk >= 4096, "HELLO", got);

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
    got = call("a read of our own buffer");
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

    /* A batch runs its requests in order: a bad flush, then a finish that
     * reports it, in one message. */
    struct vocl_wr batch;
    vocl_wr_init(&batch);
    begin(VOCL_OP_clFlush, false);
    vocl_wr_u64(&w, VOCL_ID_CLIENT_MIN + 99);
    vocl_wr_finish(&w);
    vocl_batch_add(&batch, &w);
    begin(VOCL_OP_clFinish, true);
    vocl_wr_u64(&w, queue);
    vocl_wr_finish(&w);
    vocl_batch_add(&batch, &w);
    vocl_wr_free(&w);
    w = batch; /* (call sends w) */
    expect(CL_INVALID_COMMAND_QUEUE, "a batch of a bad flush and a finish");

    if (daemon_mode)
        strangers(ctx, queue);

    /* Last, a broken header: the proxy ends this session (everything in it
     * released), answers nothing more, and serves rank 0 on. */
    begin(VOCL_OP_clFinish, true);
    vocl_wr_u64(&w, queue);
    vocl_wr_finish(&w);
    w.buf[0] ^= 0xff;
    send_raw(w.buf, w.len);
    told_closed("a protocol error", reply_wait);
    no_more_replies();

    vocl_wr_free(&w);
    free(rep);
    printf("hostile: %d checks, %d failed\n", checks, failures);
}

/* Connects to host:port and links the connection as libvocl does (its
 * number in liveness.h in *live; VOCL_LIVE_MOVED with "PORT KEY" of the
 * worker in moved); 0 or -1. */
static int dial(const char *host, int port, uint64_t key, int *live, char *moved)
{
    char err[160];
    conn = vocl_conn_dial(host, port, 5000000000u, 0, err, sizeof(err));
    if (!conn) {
        fprintf(stderr, "hostile: cannot connect to %s:%d: %s\n", host, port, err);
        return -1;
    }
    *live = vocl_live_link(conn, (int64_t)key, NULL, NULL, moved);
    return 0;
}

/* Connects to the daemon at HOST:PORT as libvocl does, and to the worker
 * it hands this client to where it isolates its clients (its number in
 * liveness.h in *live); 0 or -1. */
static int connect_to(const char *where, int *live)
{
    char host[256], moved[VOCL_LIVE_MOVED_MAX];
    int port = 0;
    uint64_t key = 0;
    if (sscanf(where, "%255[^:]:%d", host, &port) != 2) {
        fprintf(stderr, "hostile: %s: not HOST:PORT\n", where);
        return -1;
    }
    if (dial(host, port, 0, live, moved))
        return -1;
    handed_on = *live == VOCL_LIVE_MOVED;
    if (handed_on) {
        vocl_conn_close(conn);
        if (sscanf(moved, "%d %" SCNu64, &port, &key) != 2 || dial(host, port, key, live, moved))
            return -1;
    }
    return *live < 0 ? -1 : 0;
}

/* Leaves the daemon as libvocl does: no more pings, the connection closed. */
static void leave(int live)
{
    vocl_live_unlink(live);
    vocl_conn_close(conn);
}

static int daemon_main(const char *name)
{
    char why[128];
    if (vocl_token_path(&token, NULL) || vocl_token_read(&token, why, sizeof(why))) {
        fprintf(stderr, "hostile: no token (VOCL_TOKEN_FILE)\n");
        return 2;
    }
    reply_wait = 30.0;
    proxy = 0;
    daemon_mode = true;
    vocl_live_start(MPI_COMM_NULL);
    vocl_wr_init(&w);

    /* A wrong token (the right one with its last byte changed): refused,
     * and the connection is of no more use. */
    int live, old_live;
    if (connect_to(name, &live))
        return 1;
    struct vocl_token wrong = token;
    wrong.bytes[wrong.len - 1] ^= 1;
    cl_int got = hello(&wrong, "a HELLO with a wrong token");
    check(got == CL_INVALID_OPERATION, "a HELLO with a wrong token", got);
    no_more_replies();
    /* Once the daemon has let the connection go, requests on it: a HELLO
     * with the right token, releases, a finish: the next client's session
     * (the application's beside, or ours below) must not take them.  (A
     * worker ends with its session: then no process is there to take them,
     * and no other session shares its process.) */
    usleep(500000);
    if (!handed_on) {
        put_hello(false, &token);
        vocl_wr_finish(&w);
        send_raw(w.buf, w.len);
        for (uint64_t id = VOCL_ID_CLIENT_MIN; id < VOCL_ID_CLIENT_MIN + 16; id++) {
            refcount(false, id, 1);
            vocl_wr_finish(&w);
            send_raw(w.buf, w.len);
        }
    }
    vocl_wr_free(&w);
    struct vocl_conn *old = conn;
    old_live = live;

    if (connect_to(name, &live))
        return 1;
    hostile();
    leave(live);
    conn = old;
    leave(old_live);
    vocl_live_stop();
    return failures != 0;
}

/* A client that connects (and is handed to its worker) but never says
 * HELLO: the daemon must drop it within VOCL_CONNECT_TIMEOUT.  0 when it
 * was dropped in time (its connection failed), 1 when not within SECONDS. */
static int silent_main(const char *where, double seconds)
{
    int live;
    vocl_live_start(MPI_COMM_NULL);
    if (connect_to(where, &live))
        return 2;
    double start = now();
    while (now() - start < seconds && !vocl_conn_dead(conn)) {
        vocl_conn_progress(conn);
        usleep(10000);
    }
    bool dropped = vocl_conn_dead(conn);
    printf("hostile: a client that never said HELLO: %s after %.1f s%s\n",
           dropped ? "dropped" : "still connected", now() - start, handed_on ? " (by its worker)" : "");
    leave(live);
    vocl_live_stop();
    return dropped ? 0 : 1;
}

/* A client handed to a worker that never goes to it. */
static int away_main(const char *where)
{
    char host[256], moved[VOCL_LIVE_MOVED_MAX];
    int port = 0, live;
    if (sscanf(where, "%255[^:]:%d", host, &port) != 2) {
        fprintf(stderr, "hostile: %s: not HOST:PORT\n", where);
        return 2;
    }
    vocl_live_start(MPI_COMM_NULL);
    if (dial(host, port, 0, &live, moved))
        return 2;
    bool handed = live == VOCL_LIVE_MOVED;
    if (handed)
        vocl_conn_close(conn);
    else
        leave(live);
    vocl_live_stop();
    printf("hostile: %s\n", handed ? "handed to a worker, never gone to" : "not handed to a worker");
    return handed ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--away"))
        return away_main(argv[2]);
    if (argc == 3 && !strcmp(argv[1], "--connect"))
        return daemon_main(argv[2]);
    if (argc == 4 && !strcmp(argv[1], "--silent"))
        return silent_main(argv[2], atof(argv[3]));
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
