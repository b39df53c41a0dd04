/*
 * test_migrate.c - a buffer of several chunks moves between proxies as a
 * stream (executor/ops_migrate.c): MIGRATE_OUT sends every chunk, in
 * order, as its read completes; MIGRATE_IN writes each chunk as it comes
 * and completes its event once all are in; a chunk that comes short (the
 * sender failed) fails the event and ends the receiving.  The peer proxy
 * is played by this test: what is sent is kept, what is received is made
 * from a pattern.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "harness.h"

#define CHUNK    EXEC_CHUNK_MIN
#define SIZE     (10 * CHUNK + 1000) /* 11 chunks, the last one short */
#define MESSAGES 16

static uint8_t pattern(size_t i)
{
    return (uint8_t)(i * 7 + i / 4096);
}

/* The peer: the messages sent to it, and what it sends. */
static struct {
    pthread_mutex_t lock;
    uint8_t data[SIZE];        /* what was sent, in order */
    size_t at, sizes[MESSAGES]; /* bytes sent so far; each message's */
    int sends, recvs;
    int short_at; /* the receive that comes empty (the sender failed); -1: none */
} peer = {.lock = PTHREAD_MUTEX_INITIALIZER};

static bool peer_ok(int rank)
{
    return rank == 5;
}

static int peer_send(int rank, int tag, const void *buf, size_t n)
{
    (void)rank, (void)tag;
    pthread_mutex_lock(&peer.lock);
    if (peer.sends < MESSAGES)
        peer.sizes[peer.sends] = n;
    if (n <= SIZE - peer.at) {
        memcpy(peer.data + peer.at, buf, n);
        peer.at += n;
    }
    peer.sends++;
    pthread_mutex_unlock(&peer.lock);
    return 0;
}

/* Each receive takes the next n bytes of the pattern. */
static int peer_recv(int rank, int tag, void *buf, size_t n, size_t *got)
{
    (void)rank, (void)tag;
    pthread_mutex_lock(&peer.lock);
    *got = peer.recvs == peer.short_at ? 0 : n;
    for (size_t i = 0; i < *got && buf; i++)
        ((uint8_t *)buf)[i] = pattern(peer.at + i);
    peer.at += *got;
    peer.recvs++;
    pthread_mutex_unlock(&peer.lock);
    return 0;
}

static int peer_count(const int *counter)
{
    pthread_mutex_lock(&peer.lock);
    int n = *counter;
    pthread_mutex_unlock(&peer.lock);
    return n;
}

static struct exec_data_ops peer_data;

static const uint64_t ctx = VOCL_ID_CLIENT_MIN, buf = ctx + 1, ev = ctx + 2;

/* A session with the peer, and a buffer of SIZE bytes: its native handle. */
static cl_mem open_with_buffer(struct exec_session *s)
{
    pthread_mutex_lock(&peer.lock);
    peer.at = 0;
    peer.sends = peer.recvs = 0;
    peer.short_at = -1;
    memset(peer.data, 0, sizeof(peer.data));
    pthread_mutex_unlock(&peer.lock);
    session_open_peer(s, &peer_data, peer_ok, peer_send, peer_recv);
    create_context(s, ctx);
    struct vocl_wr w;
    struct reply rep;
    vocl_wr_init(&w);
    begin(&w, VOCL_OP_clCreateBuffer);
    vocl_enc_clCreateBuffer_req(&w, &(struct vocl_msg_clCreateBuffer_req){
                                        .context = ctx, .flags = CL_MEM_READ_WRITE, .size = SIZE,
                                        .data = {.mode = VOCL_DATA_NONE}, .new_id = buf});
    assert_int_equal(run(s, &w, &rep), CL_SUCCESS);
    vocl_wr_free(&rep.w);
    vocl_wr_free(&w);
    struct exec_obj *o = exec_lookup(s, buf, VOCL_T_MEM);
    assert_non_null(o);
    return o->native;
}

/* A blocking read or write of all of mem, natively. */
static void whole(cl_mem mem, bool write, uint8_t *bytes)
{
    cl_context c;
    cl_int rc = cl->clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof(c), &c, NULL);
    assert_int_equal(rc, CL_SUCCESS);
    cl_command_queue q = cl->clCreateCommandQueue(c, node.devs[0], 0, &rc);
    assert_int_equal(rc, CL_SUCCESS);
    rc = write ? cl->clEnqueueWriteBuffer(q, mem, CL_TRUE, 0, SIZE, bytes, 0, NULL, NULL)
               : cl->clEnqueueReadBuffer(q, mem, CL_TRUE, 0, SIZE, bytes, 0, NULL, NULL);
    assert_int_equal(rc, CL_SUCCESS);
    cl->clReleaseCommandQueue(q);
}

/* Waits up to 5 s for the event's status to leave CL_QUEUED/SUBMITTED/RUNNING. */
static cl_int settled(struct exec_session *s)
{
    struct exec_obj *o = exec_lookup(s, ev, VOCL_T_EVENT);
    assert_non_null(o);
    cl_int st = CL_QUEUED;
    for (int i = 0; i < 5000; i++) {
        cl->clGetEventInfo(o->native, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL);
        if (st <= CL_COMPLETE)
            break;
        nanosleep(&(struct timespec){0, 1000000L}, NULL);
    }
    return st;
}

static void migrate_in(struct exec_session *s)
{
    struct vocl_wr w;
    struct reply rep;
    vocl_wr_init(&w);
    begin(&w, VOCL_OP_MIGRATE_IN);
    vocl_enc_MIGRATE_IN_req(&w, &(struct vocl_msg_MIGRATE_IN_req){.mem = buf,
                                                                  .peer = 5,
                                                                  .tag = VOCL_TAG_PEER_MIN,
                                                                  .chunk = CHUNK,
                                                                  .event = ev});
    assert_int_equal(run(s, &w, &rep), CL_SUCCESS);
    vocl_wr_free(&rep.w);
    vocl_wr_free(&w);
}

static void out_sends_every_chunk_in_order(void **state)
{
    (void)state;
    struct exec_session s;
    cl_mem mem = open_with_buffer(&s);
    static uint8_t bytes[SIZE];
    for (size_t i = 0; i < SIZE; i++)
        bytes[i] = pattern(i);
    whole(mem, true, bytes);

    struct vocl_wr w;
    struct reply rep;
    vocl_wr_init(&w);
    begin(&w, VOCL_OP_MIGRATE_OUT);
    vocl_enc_MIGRATE_OUT_req(&w, &(struct vocl_msg_MIGRATE_OUT_req){
                                     .mem = buf, .peer = 5, .tag = VOCL_TAG_PEER_MIN, .chunk = CHUNK});
    assert_int_equal(run(&s, &w, &rep), CL_SUCCESS);
    vocl_wr_free(&rep.w);
    vocl_wr_free(&w);
    for (int i = 0; i < 5000 && peer_count(&peer.sends) < 11; i++)
        nanosleep(&(struct timespec){0, 1000000L}, NULL);
    nanosleep(&(struct timespec){0, 50000000L}, NULL); /* (nothing more may come) */

    /* (Checked out of the lock: a failed check does not return.) */
    static uint8_t sent[SIZE];
    size_t sizes[MESSAGES], at;
    pthread_mutex_lock(&peer.lock);
    int sends = peer.sends;
    memcpy(sizes, peer.sizes, sizeof(sizes));
    memcpy(sent, peer.data, SIZE);
    at = peer.at;
    pthread_mutex_unlock(&peer.lock);
    assert_int_equal(sends, 11);
    for (int k = 0; k < 10; k++)
        assert_int_equal(sizes[k], CHUNK);
    assert_int_equal(sizes[10], 1000);
    assert_int_equal(at, SIZE);
    assert_memory_equal(sent, bytes, SIZE);
    exec_session_end(&s);
}

static void in_writes_every_chunk(void **state)
{
    (void)state;
    struct exec_session s;
    cl_mem mem = open_with_buffer(&s);
    migrate_in(&s);
    assert_int_equal(settled(&s), CL_COMPLETE);
    assert_int_equal(peer_count(&peer.recvs), 11);
    static uint8_t bytes[SIZE];
    whole(mem, false, bytes);
    for (size_t i = 0; i < SIZE; i++)
        if (bytes[i] != pattern(i))
            fail_msg("byte %zu is %u, the sender's was %u", i, bytes[i], pattern(i));
    exec_session_end(&s);
}

/* The sender's failure after 3 chunks: the event fails, and nothing more is
 * received (a sender that failed sends nothing after its empty message). */
static void in_fails_on_a_short_chunk(void **state)
{
    (void)state;
    struct exec_session s;
    open_with_buffer(&s);
    pthread_mutex_lock(&peer.lock);
    peer.short_at = 3;
    pthread_mutex_unlock(&peer.lock);
    migrate_in(&s);
    assert_true(settled(&s) < 0);
    assert_int_equal(peer_count(&peer.recvs), 4);
    exec_session_end(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(out_sends_every_chunk_in_order),
        cmocka_unit_test(in_writes_every_chunk),
        cmocka_unit_test(in_fails_on_a_short_chunk),
    };
    return cmocka_run_group_tests(tests, harness_setup, harness_teardown);
}
