/*
 * test_exec.c - the proxy executor against hostile and broken requests,
 * run in-process on the real native OpenCL (PoCL here): every opcode gets
 * empty, truncated and random payloads and must answer with an error, never
 * crash, and keep serving; ids of another session and released ids are
 * unknown; a real sequence of requests computes the right answer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "harness.h"

/* A request that must work on any healthy session: the first device's name. */
static void assert_alive(struct exec_session *s)
{
    struct vocl_wr w;
    struct reply rep;
    char name[256] = "";
    vocl_wr_init(&w);
    begin(&w, VOCL_OP_clGetDeviceInfo);
    vocl_wr_u64(&w, 1);
    vocl_wr_u64(&w, CL_DEVICE_NAME);
    vocl_wr_u64(&w, sizeof(name));
    vocl_wr_u8(&w, 1);
    assert_int_equal(run(s, &w, &rep), CL_SUCCESS);
    uint64_t n = vocl_rd_u64(&rep.r);
    size_t got;
    const void *b = vocl_rd_bytes(&rep.r, &got);
    assert_true(n > 1 && got == n && !rep.r.fail);
    memcpy(name, b, got < sizeof(name) ? got : sizeof(name) - 1);
    char want[256] = "";
    cl->clGetDeviceInfo(node.devs[0], CL_DEVICE_NAME, sizeof(want), want, NULL);
    assert_string_equal(name, want);
    vocl_wr_free(&w);
    vocl_wr_free(&rep.w);
}

/* Every opcode the executor knows. */
static int known_ops(unsigned *ops, int max)
{
    int n = 0;
    for (unsigned op = 1; op < 1024 && n < max; op++)
        if (strcmp(vocl_op_name(op), "unknown") != 0 && op != VOCL_OP_BYE)
            ops[n++] = op;
    return n;
}

static void every_op_rejects_empty_and_garbage(void **state)
{
    struct exec_session s;
    unsigned ops[256];
    int nops = known_ops(ops, 256);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    (void)state;
    assert_true(nops > 60); /* the whole table, not a handful */
    session_open(&s, 0);
    for (int i = 0; i < nops; i++) {
        struct vocl_wr w;
        struct reply rep;
        vocl_wr_init(&w);
        if (ops[i] == VOCL_OP_HELLO)
            continue;
        /* Empty payload: an error reply (TRACE's, STATE's and BELL's
         * requests are empty). */
        begin(&w, ops[i]);
        cl_int err = run(&s, &w, &rep);
        if (ops[i] == VOCL_OP_TRACE || ops[i] == VOCL_OP_STATE || ops[i] == VOCL_OP_BELL)
            assert_int_equal(err, CL_SUCCESS);
        else
            assert_int_not_equal(err, CL_SUCCESS);
        vocl_wr_free(&rep.w);
        /* Random payloads of random lengths. */
        for (int k = 0; k < 40; k++) {
            begin(&w, ops[i]);
            size_t len = (size_t)(seed % 200);
            for (size_t j = 0; j < len; j++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                /* Mostly small numbers, so some fields look plausible. */
                vocl_wr_u8(&w, (uint8_t)((seed >> 33) % 4 ? (seed >> 40) % 3 : seed >> 56));
            }
            run(&s, &w, &rep);
            vocl_wr_free(&rep.w);
            s.broken = false; /* a broken data channel ends a session; go on testing */
        }
        vocl_wr_free(&w);
    }
    assert_alive(&s);
    exec_session_end(&s);
}

static void unknown_opcode_and_bad_header(void **state)
{
    struct exec_session s;
    struct vocl_wr w;
    struct reply rep;
    (void)state;
    session_open(&s, 0);
    vocl_wr_init(&w);
    begin(&w, 999);
    assert_int_equal(run(&s, &w, &rep), CL_INVALID_OPERATION);
    vocl_wr_free(&rep.w);
    /* A header whose length disagrees with the message: the session ends. */
    begin(&w, VOCL_OP_clFinish);
    vocl_wr_u64(&w, 1);
    vocl_wr_finish(&w);
    vocl_wr_init(&rep.w);
    assert_int_equal(exec_request(&s, w.buf, w.len - 3, &rep.w), -1);
    vocl_wr_free(&rep.w);
    vocl_wr_free(&w);
    exec_session_end(&s);
}

/* A queue with properties props on the first device of context ctx. */
static void create_queue_with(struct exec_session *s, uint64_t ctx, uint64_t q, uint64_t props)
{
    struct vocl_wr w;
    struct reply rep;
    vocl_wr_init(&w);
    begin(&w, VOCL_OP_clCreateCommandQueue);
    vocl_wr_u64(&w, ctx);
    vocl_wr_u64(&w, 1);
    vocl_wr_u64(&w, props);
    vocl_wr_u64(&w, q);
    assert_int_equal(run(s, &w, &rep), CL_SUCCESS);
    vocl_wr_free(&rep.w);
    vocl_wr_free(&w);
}

static void create_queue(struct exec_session *s, uint64_t ctx, uint64_t q)
{
    create_queue_with(s, ctx, q, 0);
}

/*
 * A chunked read past the end of its buffer would be answered by one empty
 * chunk per chunk asked for (2^24 at most): one small request, millions of
 * messages.  libvocl never sends one; the proxy ends the session, sending
 * nothing.
 */
static int chunks_sent;

static int count_send(struct exec_session *s, int tag, const void *buf, size_t n)
{
    (void)s, (void)tag, (void)buf, (void)n;
    chunks_sent++;
    return 0;
}

static void chunked_read_past_the_end(void **state)
{
    struct exec_session s;
    struct vocl_wr w;
    struct reply rep;
    uint64_t ctx = VOCL_ID_CLIENT_MIN, q = ctx + 1, buf = ctx + 2;
    (void)state;
    session_open(&s, 0);
    struct exec_data_ops counting = no_data;
    counting.send = count_send;
    s.data = &counting;
    create_context(&s, ctx);
    create_queue(&s, ctx, q);
    vocl_wr_init(&w);
    begin(&w, VOCL_OP_clCreateBuffer);
    vocl_enc_clCreateBuffer_req(&w, &(struct vocl_msg_clCreateBuffer_req){
                                        .context = ctx, .flags = CL_MEM_READ_WRITE, .size = 4096,
                                        .data = {.mode = VOCL_DATA_NONE}, .new_id = buf});
    assert_int_equal(run(&s, &w, &rep), CL_SUCCESS);
    vocl_wr_free(&rep.w);
    uint64_t ranges[][2] = {{0, 1ull << 36}, {4096, 4096}, {1ull << 63, 4096}};
    for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
        begin(&w, VOCL_OP_clEnqueueReadBuffer);
        vocl_enc_clEnqueueReadBuffer_req(
            &w, &(struct vocl_msg_clEnqueueReadBuffer_req){
                    .queue = q, .buffer = buf, .blocking = 1, .offset = ranges[i][0],
                    .size = ranges[i][1],
                    .data = {.mode = VOCL_DATA_CHUNKED, .arg = node.xfer.pool_size}});
        atomic_store(&s.broken, false);
        chunks_sent = 0;
        assert_int_equal(run(&s, &w, &rep), CL_INVALID_VALUE);
        assert_true(atomic_load(&s.broken));
        assert_int_equal(chunks_sent, 0);
        vocl_wr_free(&rep.w);
    }
    vocl_wr_free(&w);
    exec_session_end(&s);
}

static cl_int context_refcount(struct exec_session *s, uint64_t id)
{
    struct vocl_wr w;
    struct reply rep;
    cl_uint refs = 0;
    vocl_wr_init(&w);
    begin(&w, VOCL_OP_clGetContextInfo);
    vocl_wr_u64(&w, id);
    vocl_wr_u64(&w, CL_CONTEXT_REFERENCE_COUNT);
    vocl_wr_u64(&w, sizeof(refs));
    vocl_wr_u8(&w, 1);
    cl_int err = run(s, &w, &rep);
    vocl_wr_free(&w);
    vocl_wr_free(&rep.w);
    return err;
}

/* Session B cannot name session A's objects, and released ids are gone. */
static void foreign_and_released_ids(void **state)
{
    struct exec_session a, b;
    struct vocl_wr w;
    struct reply rep;
    (void)state;
    session_open(&a, 0);
    session_open(&b, 1);
    uint64_t ctx = create_context(&a, VOCL_ID_CLIENT_MIN + 5);
    assert_int_equal(context_refcount(&a, ctx), CL_SUCCESS);
    assert_int_equal(context_refcount(&b, ctx), CL_INVALID_CONTEXT);
    /* An id in use cannot be created again. */
    vocl_wr_init(&w);
    const uint64_t dev1 = 1;
    begin(&w, VOCL_OP_clCreateContext);
    vocl_enc_clCreateContext_req(&w, &(struct vocl_msg_clCreateContext_req){
                                         .devices = {.n = 1, .v = &dev1}, .new_id = ctx});
    assert_int_equal(run(&a, &w, &rep), CL_INVALID_VALUE);
    vocl_wr_free(&rep.w);
    /* Ids below the client range are the proxy's own. */
    begin(&w, VOCL_OP_clCreateContext);
    vocl_enc_clCreateContext_req(&w, &(struct vocl_msg_clCreateContext_req){
                                         .devices = {.n = 1, .v = &dev1}, .new_id = 3});
    assert_int_equal(run(&a, &w, &rep), CL_INVALID_VALUE);
    vocl_wr_free(&rep.w);
    /* Release (the client's last reference), then use: unknown. */
    begin(&w, VOCL_OP_RELEASE);
    vocl_enc_RELEASE_req(&w, &(struct vocl_msg_RELEASE_req){.id = ctx, .last = 1});
    assert_int_equal(run(&a, &w, &rep), CL_SUCCESS);
    vocl_wr_free(&rep.w);
    assert_int_equal(context_refcount(&a, ctx), CL_INVALID_CONTEXT);
    vocl_wr_free(&w);
    assert_alive(&a);
    assert_alive(&b);
    exec_session_end(&a);
    exec_session_end(&b);
}

/* Requests before HELLO are refused; host pointers only in-process. */
static void hello_first_and_no_host_pointers(void **state)
{
    struct exec_session s;
    struct vocl_wr w;
    struct reply rep;
    (void)state;
    exec_session_init(&s, &node, 3);
    s.data = &no_data;
    vocl_wr_init(&w);
    begin(&w, VOCL_OP_clGetDeviceInfo);
    vocl_wr_u64(&w, 1);
    vocl_wr_u64(&w, CL_DEVICE_NAME);
    vocl_wr_u64(&w, 0);
    vocl_wr_u8(&w, 0);
    assert_int_equal(run(&s, &w, &rep), CL_INVALID_OPERATION);
    vocl_wr_free(&rep.w);
    exec_session_end(&s);

    session_open(&s, 3);
    uint64_t ctx = create_context(&s, VOCL_ID_CLIENT_MIN);
    char data[64] = "x";
    begin(&w, VOCL_OP_clCreateBuffer);
    vocl_enc_clCreateBuffer_req(
        &w, &(struct vocl_msg_clCreateBuffer_req){
                .context = ctx, .flags = CL_MEM_USE_HOST_PTR, .size = sizeof(data),
                .data = {.mode = VOCL_DATA_HOSTPTR, .arg = (uint64_t)(uintptr_t)data},
                .new_id = VOCL_ID_CLIENT_MIN + 1});
    assert_int_equal(run(&s, &w, &rep), CL_INVALID_VALUE);
    vocl_wr_free(&rep.w);
    vocl_wr_free(&w);
    exec_session_end(&s);
}

/* HELLO with this token (NULL: none); the reply's error code, and whether
 * the session was ended. */
static cl_int hello_with(const char *token, bool *ended)
{
    struct exec_session s;
    struct vocl_wr w;
    struct reply rep;
    exec_session_init(&s, &node, 4);
    s.data = &no_data;
    vocl_wr_init(&w);
    begin(&w, VOCL_OP_HELLO);
    vocl_enc_HELLO_req(&w, &(struct vocl_msg_HELLO_req){
                               .version = VOCL_WIRE_VERSION,
                               .flags = token ? VOCL_HELLO_TOKEN : 0,
                               .token = {token, token ? strlen(token) : 0}});
    cl_int err = run(&s, &w, &rep);
    *ended = atomic_load(&s.broken);
    vocl_wr_free(&rep.w);
    if (!*ended && err == CL_SUCCESS) {
        /* Served: a request after HELLO works. */
        begin(&w, VOCL_OP_clGetDeviceInfo);
        vocl_wr_u64(&w, 1);
        vocl_wr_u64(&w, CL_DEVICE_NAME);
        vocl_wr_u64(&w, 0);
        vocl_wr_u8(&w, 0);
        assert_int_equal(run(&s, &w, &rep), CL_SUCCESS);
        vocl_wr_free(&rep.w);
    }
    vocl_wr_free(&w);
    exec_session_end(&s);
    return err;
}

/* Connect mode: a HELLO without the proxy's token, or with another, is
 * refused and ends the session; the right one is served. */
static void hello_needs_the_token(void **state)
{
    (void)state;
    static struct vocl_token token = {.bytes = "0123456789abcdef0123", .len = 20};
    bool ended;
    node.token = &token;
    assert_int_equal(hello_with(NULL, &ended), CL_INVALID_OPERATION);
    assert_true(ended);
    assert_int_equal(hello_with("0123456789abcdef0124", &ended), CL_INVALID_OPERATION);
    assert_true(ended);
    assert_int_equal(hello_with("0123456789abcdef012", &ended), CL_INVALID_OPERATION);
    assert_true(ended);
    assert_int_equal(hello_with("0123456789abcdef0123", &ended), CL_SUCCESS);
    assert_false(ended);
    node.token = NULL;
    /* Job mode needs none, and a token sent anyway does no harm. */
    assert_int_equal(hello_with(NULL, &ended), CL_SUCCESS);
    assert_int_equal(hello_with("anything at all, really", &ended), CL_SUCCESS);
    assert_false(ended);
}

/*
 * A request without VOCL_F_REPLY gets no reply; its error is kept and
 * reported once, by the next synchronising request (clFinish here), and a
 * request that does not synchronise (an info query) does not take it.
 */
static void deferred_errors(void **state)
{
    struct exec_session s;
    struct vocl_wr w;
    struct reply rep;
    const uint64_t ctx = VOCL_ID_CLIENT_MIN, q = ctx + 1;
    (void)state;
    session_open(&s, 0);
    create_context(&s, ctx);
    vocl_wr_init(&w);
    create_queue(&s, ctx, q);

    /* A flush of a queue that does not exist, not waited for: no reply. */
    vocl_wr_begin(&w, VOCL_OP_clFlush, 0, 2);
    vocl_wr_u64(&w, q + 100);
    vocl_wr_finish(&w);
    vocl_wr_init(&rep.w);
    assert_int_equal(exec_request(&s, w.buf, w.len, &rep.w), 0);
    vocl_wr_free(&rep.w);
    /* A second failure is not the one reported. */
    vocl_wr_begin(&w, VOCL_OP_clFlush, 0, 3);
    vocl_wr_u64(&w, 0);
    vocl_wr_finish(&w);
    vocl_wr_init(&rep.w);
    assert_int_equal(exec_request(&s, w.buf, w.len, &rep.w), 0);
    vocl_wr_free(&rep.w);

    assert_alive(&s); /* an info query: not a synchronisation */
    begin(&w, VOCL_OP_clFinish);
    vocl_wr_u64(&w, q);
    assert_int_equal(run(&s, &w, &rep), CL_INVALID_COMMAND_QUEUE);
    vocl_wr_free(&rep.w);
    begin(&w, VOCL_OP_clFinish); /* reported once */
    vocl_wr_u64(&w, q);
    assert_int_equal(run(&s, &w, &rep), CL_SUCCESS);
    vocl_wr_free(&rep.w);
    vocl_wr_free(&w);
    exec_session_end(&s);
}

/* A request of no reply (flags 0) that fails: a flush of queue id. */
static void bad_flush(struct vocl_wr *w, uint64_t id, uint32_t seq)
{
    vocl_wr_begin(w, VOCL_OP_clFlush, 0, seq);
    vocl_wr_u64(w, id);
    vocl_wr_finish(w);
}

/* BATCH (protocol.h): its requests run in order, the reply is the last
 * one's; one that breaks the rules ends the session (-1), as a malformed
 * message does, and runs nothing after it. */
static void batches(void **state)
{
    struct exec_session s;
    struct vocl_wr w, one, batch;
    struct reply rep;
    const uint64_t ctx = VOCL_ID_CLIENT_MIN, q = ctx + 1;
    (void)state;
    session_open(&s, 0);
    create_context(&s, ctx);
    create_queue(&s, ctx, q);
    vocl_wr_init(&w);
    vocl_wr_init(&one);
    vocl_wr_init(&batch);

    /* Two failing flushes, then a finish: the first failure is its reply. */
    bad_flush(&one, q + 100, 10);
    vocl_batch_add(&batch, &one);
    bad_flush(&one, 0, 11);
    vocl_batch_add(&batch, &one);
    begin(&one, VOCL_OP_clFinish);
    vocl_wr_u64(&one, q);
    vocl_wr_finish(&one);
    vocl_batch_add(&batch, &one);
    assert_int_equal(run(&s, &batch, &rep), CL_INVALID_COMMAND_QUEUE);
    vocl_wr_free(&rep.w);
    begin(&w, VOCL_OP_clFinish); /* reported once */
    vocl_wr_u64(&w, q);
    assert_int_equal(run(&s, &w, &rep), CL_SUCCESS);
    vocl_wr_free(&rep.w);

    /* Without a reply at its end: none. */
    vocl_wr_reset(&batch);
    bad_flush(&one, q, 12);
    vocl_batch_add(&batch, &one);
    vocl_wr_finish(&batch);
    vocl_wr_init(&rep.w);
    assert_int_equal(exec_request(&s, batch.buf, batch.len, &rep.w), 0);
    vocl_wr_free(&rep.w);

    /* What ends the session: an empty batch; a HELLO, BYE or BATCH in one;
     * a request after one that wants a reply; a request cut short; bytes
     * after the last request. */
    for (int k = 0; k < 7; k++) {
        vocl_wr_reset(&batch);
        bad_flush(&one, q + 200, 20); /* (it would be the next finish's error) */
        if (k > 0)
            vocl_batch_add(&batch, &one);
        if (k == 0)
            vocl_wr_begin(&batch, VOCL_OP_BATCH, 0, 0);
        else if (k <= 3) {
            unsigned op = k == 1 ? VOCL_OP_HELLO : k == 2 ? VOCL_OP_BYE : VOCL_OP_BATCH;
            vocl_wr_begin(&w, (uint16_t)op, 0, 21);
            vocl_wr_finish(&w);
            vocl_batch_add(&batch, &w);
        } else if (k == 4) {
            begin(&w, VOCL_OP_clFinish);
            vocl_wr_u64(&w, q);
            vocl_wr_finish(&w);
            vocl_batch_add(&batch, &w);
            vocl_batch_add(&batch, &one);
        } else if (k == 5) {
            batch.len -= 3; /* the flush's last bytes */
        } else {
            vocl_wr_u8(&batch, 0);
        }
        vocl_wr_finish(&batch);
        vocl_wr_init(&rep.w);
        assert_int_equal(exec_request(&s, batch.buf, batch.len, &rep.w), -1);
        vocl_wr_free(&rep.w);
    }
    assert_alive(&s);

    vocl_wr_free(&w);
    vocl_wr_free(&one);
    vocl_wr_free(&batch);
    exec_session_end(&s);
}

/*
 * A batch's commands start together, once it has run (exec.c, gate_queue):
 * a write followed by more commands of its batch has not started when the
 * driver's clEnqueueWriteBuffer returns, however long the batch takes;
 * with --no-batch-gate, or on an out-of-order queue, it has.  A request that wants a reply opens
 * the gates first (here a blocking read, which the in-process harness answers by waiting for it: a
 * gate left shut would hang it).
 */
static struct vocl_native_api spy_cl;
static int writes_started; /* writes complete within 300 ms of their enqueue */

static cl_int CL_API_CALL spy_write(cl_command_queue queue, cl_mem buf, cl_bool blocking,
                                    size_t offset, size_t size, const void *ptr, cl_uint nwl,
                                    const cl_event *wl, cl_event *ev)
{
    cl_int rc = cl->clEnqueueWriteBuffer(queue, buf, blocking, offset, size, ptr, nwl, wl, ev);
    cl_int st = CL_QUEUED;
    for (int ms = 0; rc == CL_SUCCESS && ev && ms < 300 && st != CL_COMPLETE; ms++) {
        nanosleep(&(struct timespec){0, 1000000L}, NULL);
        cl->clGetEventInfo(*ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL);
    }
    writes_started += st == CL_COMPLETE;
    return rc;
}

/* A non-blocking write of one int, its data inline, into the batch. */
static void batch_write(struct vocl_wr *batch, uint64_t q, uint64_t buf, int index,
                        const int *value)
{
    struct vocl_wr w;
    vocl_wr_init(&w);
    vocl_wr_begin(&w, VOCL_OP_clEnqueueWriteBuffer, 0, 30);
    vocl_enc_clEnqueueWriteBuffer_req(
        &w, &(struct vocl_msg_clEnqueueWriteBuffer_req){
                .queue = q,
                .buffer = buf,
                .offset = index * sizeof(int),
                .size = sizeof(int),
                .data = {.mode = VOCL_DATA_INLINE, .p = value, .len = sizeof(int)}});
    vocl_wr_finish(&w);
    vocl_batch_add(batch, &w);
    vocl_wr_free(&w);
}

static void batch_commands_start_together(void **state)
{
    struct exec_session s;
    struct vocl_wr w, batch;
    struct reply rep;
    const uint64_t ctx = VOCL_ID_CLIENT_MIN, q = ctx + 1, buf = ctx + 2, ooo = ctx + 3;
    const int values[3] = {7, 9, 11};
    int got[3];
    (void)state;
    session_open(&s, 0);
    create_context(&s, ctx);
    create_queue(&s, ctx, q);
    create_queue_with(&s, ctx, ooo, CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE);
    vocl_wr_init(&w);
    vocl_wr_init(&batch);
    begin(&w, VOCL_OP_clCreateBuffer);
    vocl_enc_clCreateBuffer_req(&w, &(struct vocl_msg_clCreateBuffer_req){
                                        .context = ctx, .size = sizeof(got), .new_id = buf});
    assert_int_equal(run(&s, &w, &rep), CL_SUCCESS);
    vocl_wr_free(&rep.w);

    spy_cl = *cl;
    spy_cl.clEnqueueWriteBuffer = spy_write;
    node.cl = &spy_cl;
    for (int pass = 0; pass < 3; pass++) {
        bool gate = pass != 1, in_order = pass != 2;
        node.gate_batches = gate;
        writes_started = 0;
        /* Two writes, nothing waited for: no reply. */
        vocl_wr_reset(&batch);
        batch_write(&batch, in_order ? q : ooo, buf, 0, &values[0]);
        batch_write(&batch, in_order ? q : ooo, buf, 1, &values[1]);
        vocl_wr_finish(&batch);
        vocl_wr_init(&rep.w);
        assert_int_equal(exec_request(&s, batch.buf, batch.len, &rep.w), 0);
        vocl_wr_free(&rep.w);
        /* Gated, neither starts before the batch has run (the second
         * is behind the first's gate); else both do. */
        assert_int_equal(writes_started, gate && in_order ? 0 : 2);
        if (!in_order)
            continue;

        /* A write, then a blocking read: the read sees the write. */
        vocl_wr_reset(&batch);
        batch_write(&batch, q, buf, 2, &values[2]);
        begin(&w, VOCL_OP_clEnqueueReadBuffer);
        vocl_enc_clEnqueueReadBuffer_req(
            &w, &(struct vocl_msg_clEnqueueReadBuffer_req){.queue = q,
                                                           .buffer = buf,
                                                           .blocking = 1,
                                                           .size = sizeof(got),
                                                           .data = {.mode = VOCL_DATA_INLINE}});
        vocl_wr_finish(&w);
        vocl_batch_add(&batch, &w);
        assert_int_equal(run(&s, &batch, &rep), CL_SUCCESS);
        size_t n;
        const void *bytes = vocl_rd_bytes(&rep.r, &n);
        assert_int_equal(n, sizeof(got));
        memcpy(got, bytes, n);
        vocl_wr_free(&rep.w);
        for (int i = 0; i < 3; i++)
            assert_int_equal(got[i], values[i]);
        memset(got, 0, sizeof(got));
    }
    node.cl = cl;
    node.gate_batches = true;

    vocl_wr_free(&w);
    vocl_wr_free(&batch);
    exec_session_end(&s);
}

/* A real sequence, as libvocl would send it: c = a + b on the device. */
/* A blocking read of size bytes of buf through queue q, its data inline. */
static void read_whole(struct exec_session *s, uint64_t q, uint64_t buf, void *out, size_t size)
{
    struct vocl_wr w;
    struct reply rep;
    vocl_wr_init(&w);
    begin(&w, VOCL_OP_clEnqueueReadBuffer);
    vocl_enc_clEnqueueReadBuffer_req(&w, &(struct vocl_msg_clEnqueueReadBuffer_req){
                                             .queue = q, .buffer = buf, .blocking = 1,
                                             .size = size, .data = {.mode = VOCL_DATA_INLINE}});
    assert_int_equal(run(s, &w, &rep), CL_SUCCESS);
    size_t got;
    const void *bytes = vocl_rd_bytes(&rep.r, &got);
    assert_int_equal(got, size);
    memcpy(out, bytes, size);
    vocl_wr_free(&rep.w);
    vocl_wr_free(&w);
}

static void compute_through_requests(void **state)
{
    struct exec_session s;
    struct vocl_wr w;
    struct reply rep;
    const uint64_t ctx = VOCL_ID_CLIENT_MIN, q = ctx + 1, prog = ctx + 2, kern = ctx + 3;
    const uint64_t bufs[3] = {ctx + 4, ctx + 5, ctx + 6};
    enum { N = 1000 };
    int a[N], b[N], c[N];
    const char *src = "kernel void add(global const int *a, global const int *b, global int *c)"
                      "{ size_t i = get_global_id(0); c[i] = a[i] + b[i]; }";
    (void)state;
    for (int i = 0; i < N; i++) {
        a[i] = i;
        b[i] = 3 * i;
    }
    session_open(&s, 0);
    create_context(&s, ctx);
    vocl_wr_init(&w);

    create_queue(&s, ctx, q);

    for (int i = 0; i < 3; i++) {
        begin(&w, VOCL_OP_clCreateBuffer);
        vocl_enc_clCreateBuffer_req(
            &w, &(struct vocl_msg_clCreateBuffer_req){
                    .context = ctx, .flags = i < 2 ? CL_MEM_COPY_HOST_PTR : 0, .size = sizeof(a),
                    .data = {.mode = i < 2 ? VOCL_DATA_INLINE : VOCL_DATA_NONE,
                             .p = i ? b : a, .len = i < 2 ? sizeof(a) : 0},
                    .new_id = bufs[i]});
        assert_int_equal(run(&s, &w, &rep), CL_SUCCESS);
        vocl_wr_free(&rep.w);
    }

    const void *srcs[1] = {src};
    const size_t src_len[1] = {strlen(src)};
    begin(&w, VOCL_OP_clCreateProgramWithSource);
    vocl_enc_clCreateProgramWithSource_req(
        &w, &(struct vocl_msg_clCreateProgramWithSource_req){
                .context = ctx, .strings = {.n = 1, .p = srcs, .len = src_len}, .new_id = prog});
    assert_int_equal(run(&s, &w, &rep), CL_SUCCESS);
    vocl_wr_free(&rep.w);

    begin(&w, VOCL_OP_clBuildProgram);
    vocl_enc_clBuildProgram_req(&w, &(struct vocl_msg_clBuildProgram_req){
                                        .program = prog, .options = vocl_str_of(NULL)});
    assert_int_equal(run(&s, &w, &rep), CL_SUCCESS);
    vocl_wr_free(&rep.w);

    begin(&w, VOCL_OP_clCreateKernel);
    vocl_enc_clCreateKernel_req(&w, &(struct vocl_msg_clCreateKernel_req){
                                        .program = prog, .kernel_name = vocl_str_of("add"),
                                        .new_id = kern});
    assert_int_equal(run(&s, &w, &rep), CL_SUCCESS);
    assert_int_equal(vocl_rd_u32(&rep.r), 3); /* argument count comes back */
    vocl_wr_free(&rep.w);

    /* A launch carrying its arguments (kind 1: a memory object id). */
    struct vocl_karg_wire args[3];
    for (uint32_t i = 0; i < 3; i++)
        args[i] = (struct vocl_karg_wire){.index = i, .kind = VOCL_LARG_MEM, .v = bufs[i]};
    begin(&w, VOCL_OP_clEnqueueNDRangeKernel);
    vocl_enc_clEnqueueNDRangeKernel_req(&w, &(struct vocl_msg_clEnqueueNDRangeKernel_req){
                                                .queue = q, .kernel = kern, .work_dim = 1,
                                                .global_work_size = {.present = 1, .v = {N}},
                                                .args = {.n = 3, .a = args}});
    assert_int_equal(run(&s, &w, &rep), CL_SUCCESS);
    vocl_wr_free(&rep.w);

    read_whole(&s, q, bufs[2], c, sizeof(c));
    for (int i = 0; i < N; i++)
        assert_int_equal(c[i], 4 * i);

    /* A launch whose arguments swap a and c but which ends in a stray byte
     * is rejected whole: the next launch, which sends no arguments, still
     * runs c = a + b, and a is untouched. */
    for (int bad = 1; bad >= 0; bad--) {
        const struct vocl_karg_wire swap[2] = {
            {.index = 0, .kind = VOCL_LARG_MEM, .v = bufs[2]},
            {.index = 2, .kind = VOCL_LARG_MEM, .v = bufs[0]}};
        begin(&w, VOCL_OP_clEnqueueNDRangeKernel);
        vocl_enc_clEnqueueNDRangeKernel_req(&w, &(struct vocl_msg_clEnqueueNDRangeKernel_req){
                                                    .queue = q, .kernel = kern, .work_dim = 1,
                                                    .global_work_size = {.present = 1, .v = {N}},
                                                    .args = {.n = bad ? 2 : 0, .a = swap}});
        if (bad)
            vocl_wr_u8(&w, 0);
        assert_int_equal(run(&s, &w, &rep), bad ? CL_INVALID_VALUE : CL_SUCCESS);
        vocl_wr_free(&rep.w);
    }
    read_whole(&s, q, bufs[0], c, sizeof(c));
    for (int i = 0; i < N; i++)
        assert_int_equal(c[i], a[i]);

    /* A read past the buffer's end: the native error, not a crash. */
    begin(&w, VOCL_OP_clEnqueueReadBuffer);
    vocl_enc_clEnqueueReadBuffer_req(&w, &(struct vocl_msg_clEnqueueReadBuffer_req){
                                             .queue = q, .buffer = bufs[2], .blocking = 1,
                                             .offset = sizeof(c) - 4, .size = 64,
                                             .data = {.mode = VOCL_DATA_INLINE}});
    assert_int_equal(run(&s, &w, &rep), CL_INVALID_VALUE);
    vocl_wr_free(&rep.w);

    /* Every truncation of a valid request is refused, the session goes on. */
    begin(&w, VOCL_OP_clEnqueueNDRangeKernel);
    vocl_enc_clEnqueueNDRangeKernel_req(&w, &(struct vocl_msg_clEnqueueNDRangeKernel_req){
                                                .queue = q, .kernel = kern, .work_dim = 1,
                                                .global_work_size = {.present = 1, .v = {N}}});
    vocl_wr_finish(&w);
    size_t full = w.len;
    for (size_t cut = VOCL_HDR_SIZE; cut < full; cut++) {
        struct vocl_wr t;
        vocl_wr_init(&t);
        vocl_wr_begin(&t, VOCL_OP_clEnqueueNDRangeKernel, VOCL_F_REPLY, 1);
        memcpy(vocl_wr_reserve(&t, cut - VOCL_HDR_SIZE), w.buf + VOCL_HDR_SIZE,
               cut - VOCL_HDR_SIZE);
        assert_int_not_equal(run(&s, &t, &rep), CL_SUCCESS);
        vocl_wr_free(&rep.w);
        vocl_wr_free(&t);
    }
    vocl_wr_free(&w);
    assert_alive(&s);
    /* The session ends with objects still held: all are released. */
    exec_session_end(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_op_rejects_empty_and_garbage),
        cmocka_unit_test(unknown_opcode_and_bad_header),
        cmocka_unit_test(foreign_and_released_ids),
        cmocka_unit_test(hello_first_and_no_host_pointers),
        cmocka_unit_test(hello_needs_the_token),
        cmocka_unit_test(chunked_read_past_the_end),
        cmocka_unit_test(deferred_errors),
        cmocka_unit_test(batches),
        cmocka_unit_test(batch_commands_start_together),
        cmocka_unit_test(compute_through_requests),
    };
    return cmocka_run_group_tests(tests, harness_setup, harness_teardown);
}
