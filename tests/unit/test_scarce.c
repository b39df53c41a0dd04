/*
 * test_scarce.c - where a thread or memory cannot be had, the serving
 * thread still waits for nothing (issue 35):
 *   - the work of an event link or a migration, which waits for the peer,
 *     waits for a thread (exec_peer_start) instead of running on the
 *     serving thread;
 *   - a reply that waits for commands, with no memory to note it, fails
 *     now with CL_OUT_OF_HOST_MEMORY instead of waiting for them, and what
 *     the command writes into stays allocated until it is done.
 * Threads and memory are taken away by the linker: vocl_thread_detached
 * and calloc are wrapped (-Wl,--wrap) for the executor's code.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "harness.h"

/* --- what the linker wraps ---------------------------------------------------------------------
 */

static atomic_bool no_threads;
static atomic_int failing_callocs; /* the next ones fail */

int __real_vocl_thread_detached(void *(*fn)(void *), void *arg);
int __wrap_vocl_thread_detached(void *(*fn)(void *), void *arg);
int __wrap_vocl_thread_detached(void *(*fn)(void *), void *arg)
{
    return atomic_load(&no_threads) ? 11 /* EAGAIN */ : __real_vocl_thread_detached(fn, arg);
}

void *__real_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size)
{
    int left = atomic_load(&failing_callocs);
    while (left > 0 && !atomic_compare_exchange_weak(&failing_callocs, &left, left - 1))
        ;
    return left > 0 ? NULL : __real_calloc(n, size);
}

/* --- a peer proxy that answers at once, and says on which thread -------------------------------
 */

static pthread_t serving; /* the test's own thread: the serving thread */
static struct {
    atomic_int sends, recvs, on_serving, tag;
    atomic_size_t sent;
    atomic_int status; /* what was sent, when 4 bytes */
} peer;

static bool peer_ok(int rank)
{
    return rank == 5;
}

static int peer_send(int rank, int tag, const void *buf, size_t n)
{
    (void)rank;
    if (pthread_equal(pthread_self(), serving))
        atomic_fetch_add(&peer.on_serving, 1);
    int32_t st = -1;
    if (n == sizeof(st))
        memcpy(&st, buf, n);
    atomic_store(&peer.status, st);
    atomic_store(&peer.sent, n);
    atomic_store(&peer.tag, tag);
    atomic_fetch_add(&peer.sends, 1);
    return 0;
}

/* The peer's event completed (an event link's 4 bytes). */
static int peer_recv(int rank, int tag, void *buf, size_t n, size_t *got)
{
    (void)rank;
    if (pthread_equal(pthread_self(), serving))
        atomic_fetch_add(&peer.on_serving, 1);
    atomic_store(&peer.tag, tag);
    int32_t st = CL_COMPLETE;
    *got = n < sizeof(st) ? n : sizeof(st);
    memcpy(buf, &st, *got);
    atomic_fetch_add(&peer.recvs, 1);
    return 0;
}

static struct exec_data_ops peer_data;

/* Waits up to 5 s, in 1 ms steps, for *counter to reach want. */
static int wait_for(atomic_int *counter, int want)
{
    for (int i = 0; i < 5000 && atomic_load(counter) < want; i++)
        nanosleep(&(struct timespec){0, 1000000L}, NULL);
    return atomic_load(counter);
}

static cl_int status_of(struct exec_session *s, uint64_t id)
{
    struct exec_obj *o = exec_lookup(s, id, VOCL_T_EVENT);
    assert_non_null(o);
    cl_int st = 1;
    assert_int_equal(
        cl->clGetEventInfo(o->native, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL),
        CL_SUCCESS);
    return st;
}

static void open_with_peer(struct exec_session *s)
{
    serving = pthread_self();
    memset(&peer, 0, sizeof(peer));
    session_open_peer(s, &peer_data, peer_ok, peer_send, peer_recv);
}

/* Runs the request in w while no thread can be had; its error code. */
static cl_int run_threadless(struct exec_session *s, struct vocl_wr *w)
{
    struct reply rep;
    atomic_store(&no_threads, true);
    cl_int rc = run(s, w, &rep);
    vocl_wr_free(&rep.w);
    return rc;
}

/* The one piece of work that waits for a thread still waits while none
 * can be had, and starts once one can. */
static void threads_come_back(void)
{
    assert_int_equal(exec_peer_starts(), 1);
    atomic_store(&no_threads, false);
    assert_int_equal(exec_peer_starts(), 0);
}

/* An event link in each direction and a migration's failure, with no
 * thread to be had: nothing of the peer's on the serving thread; the work
 * waits for a thread and is done once one can be had. */
static void links_wait_for_a_thread(void **state)
{
    (void)state;
    struct exec_session s;
    struct vocl_wr w;
    open_with_peer(&s);
    uint64_t ctx = create_context(&s, VOCL_ID_CLIENT_MIN), ev = VOCL_ID_CLIENT_MIN + 1;
    vocl_wr_init(&w);

    /* IN: the user event is made and answered; the peer is not waited for. */
    begin(&w, VOCL_OP_EVENT_IN);
    vocl_enc_EVENT_IN_req(&w,
                          &(struct vocl_msg_EVENT_IN_req){
                              .context = ctx, .peer = 5, .tag = VOCL_TAG_PEER_MIN, .event = ev});
    assert_int_equal(run_threadless(&s, &w), CL_SUCCESS);
    assert_int_equal(atomic_load(&peer.on_serving), 0);
    assert_int_equal(atomic_load(&peer.recvs), 0);
    assert_int_equal(status_of(&s, ev), CL_SUBMITTED);
    threads_come_back();
    assert_int_equal(wait_for(&peer.recvs, 1), 1);
    for (int i = 0; i < 5000 && status_of(&s, ev) != CL_COMPLETE; i++)
        nanosleep(&(struct timespec){0, 1000000L}, NULL);
    assert_int_equal(status_of(&s, ev), CL_COMPLETE);

    /* OUT, of that (complete) event: its status goes from a thread. */
    begin(&w, VOCL_OP_EVENT_OUT);
    vocl_enc_EVENT_OUT_req(
        &w, &(struct vocl_msg_EVENT_OUT_req){.event = ev, .peer = 5, .tag = VOCL_TAG_PEER_MIN + 1});
    assert_int_equal(run_threadless(&s, &w), CL_SUCCESS);
    assert_int_equal(atomic_load(&peer.sends), 0);
    threads_come_back();
    assert_int_equal(wait_for(&peer.sends, 1), 1);
    assert_int_equal(atomic_load(&peer.status), CL_COMPLETE);
    assert_int_equal(atomic_load(&peer.tag), VOCL_TAG_PEER_MIN + 1);

    /* A migration out of an object that is not there: the peer is told
     * of the failure (an empty message), from a thread too. */
    begin(&w, VOCL_OP_MIGRATE_OUT);
    vocl_enc_MIGRATE_OUT_req(&w, &(struct vocl_msg_MIGRATE_OUT_req){.mem = VOCL_ID_CLIENT_MIN + 2,
                                                                    .peer = 5,
                                                                    .tag = VOCL_TAG_PEER_MIN + 2,
                                                                    .chunk = EXEC_CHUNK_MIN});
    assert_int_not_equal(run_threadless(&s, &w), CL_SUCCESS);
    assert_int_equal(atomic_load(&peer.sends), 1);
    threads_come_back();
    assert_int_equal(wait_for(&peer.sends, 2), 2);
    assert_int_equal(atomic_load(&peer.sent), 0);
    assert_int_equal(atomic_load(&peer.tag), VOCL_TAG_PEER_MIN + 2);

    assert_int_equal(atomic_load(&peer.on_serving), 0);
    vocl_wr_free(&w);
    exec_session_end(&s);
}

/* The replies a session's transport was handed. */
static atomic_int replies;

static int take_reply(struct exec_session *s, struct vocl_wr *w)
{
    (void)s, (void)w;
    atomic_fetch_add(&replies, 1);
    return 0;
}

/* Sets the gate after 10 s unless the test is over by then: code that
 * waits for the read (the old fallback) then fails the test, not hangs it. */
static atomic_bool over;
static void *watchdog(void *gate)
{
    for (int i = 0; i < 10000 && !atomic_load(&over); i++)
        nanosleep(&(struct timespec){0, 1000000L}, NULL);
    if (!atomic_load(&over))
        cl->clSetUserEventStatus(gate, CL_COMPLETE);
    return NULL;
}

/* A blocking read whose reply cannot be noted (no memory): answered now
 * with the error while its command still waits, its landing place kept
 * until the command is done. */
static void unnoted_reply_fails_now(void **state)
{
    (void)state;
    struct exec_session s;
    session_open(&s, 1);
    s.reply = take_reply;
    cl_int rc;
    cl_context ctx = cl->clCreateContext(NULL, 1, &node.devs[0], NULL, NULL, &rc);
    assert_int_equal(rc, CL_SUCCESS);
    cl_command_queue queue = cl->clCreateCommandQueue(ctx, node.devs[0], 0, &rc);
    cl_mem buf = cl->clCreateBuffer(ctx, CL_MEM_READ_WRITE, 4096, NULL, &rc);
    cl_event gate = cl->clCreateUserEvent(ctx, &rc);
    assert_int_equal(rc, CL_SUCCESS);
    void *out = exec_host_alloc(&s, 4096);
    assert_non_null(out);
    cl_event e = NULL;
    assert_int_equal(cl->clEnqueueReadBuffer(queue, buf, CL_FALSE, 0, 4096, out, 1, &gate, &e),
                     CL_SUCCESS);
    cl->clFlush(queue);

    struct exec_req q = {.s = &s, .cl = cl, .op = VOCL_OP_clEnqueueReadBuffer, .seq = 9};
    cl_int status = CL_SUCCESS;
    pthread_t dog;
    atomic_store(&over, false);
    assert_int_equal(pthread_create(&dog, NULL, watchdog, gate), 0);
    atomic_store(&failing_callocs, 1);
    bool later = exec_reply_after(&q, 1, &e, &out, 4096, &status);
    atomic_store(&failing_callocs, 0);
    cl_int then = CL_QUEUED;
    cl->clGetEventInfo(gate, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(then), &then, NULL);
    atomic_store(&over, true);
    pthread_join(dog, NULL);
    assert_int_equal(then, CL_SUBMITTED); /* it returned before the read could run */
    assert_false(later);
    assert_int_equal(status, CL_OUT_OF_HOST_MEMORY);
    assert_null(out); /* taken: the read still writes it */
    assert_int_equal(exec_host_held(&s), 4096);
    assert_int_equal(atomic_load(&replies), 0);

    /* The read completes: its memory is freed. */
    assert_int_equal(cl->clSetUserEventStatus(gate, CL_COMPLETE), CL_SUCCESS);
    assert_int_equal(cl->clWaitForEvents(1, &e), CL_SUCCESS);
    for (int i = 0; i < 5000 && exec_host_held(&s); i++) {
        exec_reap(&node, false);
        nanosleep(&(struct timespec){0, 1000000L}, NULL);
    }
    assert_int_equal(exec_host_held(&s), 0);

    cl->clReleaseEvent(e);
    cl->clReleaseEvent(gate);
    cl->clReleaseMemObject(buf);
    cl->clReleaseCommandQueue(queue);
    cl->clReleaseContext(ctx);
    exec_session_end(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(links_wait_for_a_thread),
        cmocka_unit_test(unnoted_reply_fails_now),
    };
    return cmocka_run_group_tests(tests, harness_setup, harness_teardown);
}
