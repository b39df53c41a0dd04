/*
 * test_pool.c - the staging pools of contexts (executor/pool.c): each of the
 * first contexts gets its own, the others share the node's; a released
 * context's pool is freed once no buffer of it is in use, and with it the
 * references it held on the context; a GPU's context gets its pool as soon
 * as its reply has gone; a buffer taken while held passes to its taker
 * when its holder gives it up.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "harness.h"

#define NCTX (EXEC_CTX_POOLS + 2)

static cl_context ctxs[NCTX];
static cl_command_queue queues[NCTX];

static cl_uint refcount(cl_context ctx)
{
    cl_uint n = 0;
    assert_int_equal(cl->clGetContextInfo(ctx, CL_CONTEXT_REFERENCE_COUNT, sizeof(n), &n, NULL),
                     CL_SUCCESS);
    return n;
}

/* The context's count once it has come down to want, or after 5 s: PoCL
 * drops the references of a finished command on its own threads, a little
 * after clFinish returns. */
static cl_uint settled_refcount(cl_context ctx, cl_uint want)
{
    cl_uint n = refcount(ctx);
    for (int i = 0; i < 500 && n != want; i++) {
        nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
        n = refcount(ctx);
    }
    return n;
}

static void open_contexts(void)
{
    for (int i = 0; i < NCTX; i++) {
        cl_int rc;
        ctxs[i] = cl->clCreateContext(NULL, 1, &node.devs[0], NULL, NULL, &rc);
        assert_int_equal(rc, CL_SUCCESS);
        queues[i] = cl->clCreateCommandQueue(ctxs[i], node.devs[0], 0, &rc);
        assert_int_equal(rc, CL_SUCCESS);
    }
}

/* Drops every context's pool, frees them, and releases the contexts. */
static void close_contexts(void)
{
    for (int i = 0; i < NCTX; i++)
        exec_ctx_pool_drop(&node, ctxs[i]);
    exec_reap(&node, true);
    for (int i = 0; i < NCTX; i++) {
        cl->clReleaseCommandQueue(queues[i]);
        assert_int_equal(settled_refcount(ctxs[i], 1), 1);
        cl->clReleaseContext(ctxs[i]);
    }
}

static void first_contexts_get_their_own(void **state)
{
    (void)state;
    open_contexts();
    cl_uint before = refcount(ctxs[0]);
    struct exec_pool *shared = exec_node_pool(&node), *own[NCTX];
    for (int i = 0; i < NCTX; i++) {
        own[i] = exec_queue_pool(&node, queues[i]);
        assert_non_null(own[i]);
        assert_ptr_equal(exec_queue_pool(&node, queues[i]), own[i]); /* the same, asked again */
    }
    for (int i = 0; i < EXEC_CTX_POOLS; i++) {
        assert_ptr_not_equal(own[i], shared);
        for (int j = 0; j < i; j++)
            assert_ptr_not_equal(own[i], own[j]);
    }
    for (int i = EXEC_CTX_POOLS; i < NCTX; i++)
        assert_ptr_equal(own[i], shared);
    /* The pool's buffer and queue hold the context. */
    assert_true(refcount(ctxs[0]) > before);

    /* Released and idle: freed at the next reap, and the context with it. */
    exec_ctx_pool_drop(&node, ctxs[0]);
    exec_reap(&node, false);
    assert_int_equal(settled_refcount(ctxs[0], before), before);
    /* Its entry serves the next context that asks. */
    struct exec_pool *p = exec_queue_pool(&node, queues[EXEC_CTX_POOLS]);
    assert_ptr_not_equal(p, shared);
    close_contexts();
}

/* A buffer still held by the stream keeps the pool of a released context. */
static void busy_pool_outlives_its_context(void **state)
{
    (void)state;
    open_contexts();
    cl_uint before = refcount(ctxs[1]);
    struct exec_pool *p = exec_queue_pool(&node, queues[1]);
    assert_ptr_not_equal(p, exec_node_pool(&node));
    unsigned slot;
    uint8_t *mem = exec_pool_try(p, &slot);
    assert_non_null(mem);
    memset(mem, 0x5a, node.xfer.pool_size); /* the driver's memory, mapped for writing */

    exec_ctx_pool_drop(&node, ctxs[1]);
    exec_reap(&node, false);
    assert_true(refcount(ctxs[1]) > before); /* still held: not freed */
    assert_int_equal(mem[node.xfer.pool_size - 1], 0x5a);
    exec_pool_give(p, slot); /* the stream sent it */
    exec_reap(&node, false);
    assert_int_equal(settled_refcount(ctxs[1], before), before);
    close_contexts();
}

static cl_int status_of(cl_event e)
{
    cl_int st = CL_QUEUED;
    assert_int_equal(
        cl->clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL),
        CL_SUCCESS);
    return st;
}

/* e's status once it is no longer want_not, or after 5 s (a watch's
 * callback comes from the driver's thread). */
static cl_int settled_status(cl_event e, cl_int want_not)
{
    cl_int st = status_of(e);
    for (int i = 0; i < 500 && st == want_not; i++) {
        nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
        st = status_of(e);
    }
    return st;
}

/* Buffers taken whatever their state: each passes to its heir when its
 * holder gives it up (the heir's gate completes), after the device copy
 * its holder leaves running; an heir of memory lost meanwhile fails. */
static void heirs_take_in_turn(void **state)
{
    (void)state;
    open_contexts();
    /* (The node's pool: a context's would keep its context for good once
     * a part of its buffer is lost.) */
    struct exec_pool *p = exec_node_pool(&node);
    unsigned n = exec_pool_n(&node), slot, first = 0;
    assert_true(n >= 3);
    for (unsigned i = 0; i < n; i++) {
        assert_non_null(exec_pool_try(p, &slot));
        if (i == 0)
            first = slot;
    }
    assert_null(exec_pool_try(p, &slot)); /* all held */

    cl_int rc;
    cl_event gate[3], wait[3];
    unsigned got[3];
    uint8_t *mem[3];
    for (int i = 0; i < 3; i++) {
        gate[i] = cl->clCreateUserEvent(ctxs[2], &rc);
        assert_int_equal(rc, CL_SUCCESS);
        assert_non_null(mem[i] = exec_pool_take_after(p, &got[i], gate[i], &wait[i]));
        assert_ptr_equal(wait[i], gate[i]); /* held: its heir waits for the gate */
        assert_int_equal(got[i], (first + (unsigned)i) % n);
        assert_int_equal(status_of(gate[i]), CL_SUBMITTED);
    }
    /* Given up: the heir's at once. */
    exec_pool_give(p, got[0]);
    assert_int_equal(status_of(gate[0]), CL_COMPLETE);
    /* Lost (a receive into it never ended): its heir's command fails. */
    exec_pool_lose(p, got[1]);
    assert_true(status_of(gate[1]) < 0);
    free(mem[1]); /* (a proxy never frees it: MPI may still write into it; here nothing does) */
    /* Filled, its device copy running: the heir's once the copy is done. */
    cl_event copy = cl->clCreateUserEvent(ctxs[2], &rc);
    assert_int_equal(rc, CL_SUCCESS);
    exec_pool_busy(p, got[2], copy);
    assert_int_equal(status_of(gate[2]), CL_SUBMITTED);
    cl->clSetUserEventStatus(copy, CL_COMPLETE);
    assert_int_equal(settled_status(gate[2], CL_SUBMITTED), CL_COMPLETE);
    cl->clReleaseEvent(copy);

    /* The heirs and the other holders give theirs back: all free again. */
    for (unsigned i = 0; i < n; i++)
        exec_pool_give(p, i);
    for (unsigned i = 0; i < n; i++)
        assert_non_null(exec_pool_try(p, &slot));
    for (unsigned i = 0; i < n; i++)
        exec_pool_give(p, i);
    for (int i = 0; i < 3; i++) {
        cl->clReleaseEvent(wait[i]);
        cl->clReleaseEvent(gate[i]);
    }
    close_contexts();
}

/* --no-driver-staging: every context shares the node's pool. */
static void driver_staging_off(void **state)
{
    (void)state;
    open_contexts();
    node.xfer.driver_staging = false;
    for (int i = 0; i < NCTX; i++)
        assert_ptr_equal(exec_queue_pool(&node, queues[i]), exec_node_pool(&node));
    node.xfer.driver_staging = true;
    close_contexts();
}

/* Releasing a client's context through a request drops its pool. */
static void release_request_drops_the_pool(void **state)
{
    (void)state;
    struct exec_session s;
    session_open(&s, 1);
    uint64_t id = create_context(&s, 1 << 20);
    struct exec_obj *o = exec_lookup(&s, id, VOCL_T_CONTEXT);
    assert_non_null(o);
    cl_context ctx = o->native;
    cl_int rc;
    cl_command_queue q = cl->clCreateCommandQueue(ctx, node.devs[0], 0, &rc);
    assert_int_equal(rc, CL_SUCCESS);
    assert_ptr_not_equal(exec_queue_pool(&node, q), exec_node_pool(&node));
    cl->clRetainContext(ctx); /* to look at it after the client's release */
    cl_uint held = refcount(ctx);

    struct vocl_wr w;
    struct reply rep;
    vocl_wr_init(&w);
    begin(&w, VOCL_OP_RELEASE);
    vocl_enc_RELEASE_req(&w, &(struct vocl_msg_RELEASE_req){.id = id, .last = 1});
    assert_int_equal(run(&s, &w, &rep), CL_SUCCESS);
    vocl_wr_free(&rep.w);
    vocl_wr_free(&w);
    for (unsigned i = 0; i < EXEC_CTX_POOLS; i++)
        assert_ptr_not_equal(node.ctx_pools[i].ctx, ctx);
    exec_reap(&node, false);
    /* Down by the client's reference and the pool's buffer's and queue's:
     * ours and q's are left. */
    assert_int_equal(settled_refcount(ctx, 2), 2);
    assert_true(held > 2);
    cl->clReleaseCommandQueue(q);
    assert_int_equal(settled_refcount(ctx, 1), 1);
    cl->clReleaseContext(ctx);
    exec_session_end(&s);
}

static bool has_pool(cl_context ctx)
{
    for (unsigned i = 0; i < EXEC_CTX_POOLS; i++)
        if (node.ctx_pools[i].ctx == ctx)
            return node.ctx_pools[i].pool != NULL;
    return false;
}

/* A client's context on a GPU gets its pool once the reply has gone, not
 * at the first transfer; on a CPU device it waits for a transfer; and none
 * is made for a session that closes first. */
static void gpu_context_gets_its_pool_early(void **state)
{
    (void)state;
    const cl_device_type real = node.types[0]; /* (the device of create_context) */
    struct exec_session s;
    session_open(&s, 1);
    for (int gpu = 0; gpu < 2; gpu++) {
        node.types[0] = gpu ? CL_DEVICE_TYPE_GPU : real;
        uint64_t id = create_context(&s, (1 << 20) + (uint64_t)gpu);
        cl_context ctx = exec_lookup(&s, id, VOCL_T_CONTEXT)->native;
        assert_false(has_pool(ctx)); /* (not in the request's way) */
        exec_after_reply(&s);
        assert_int_equal(has_pool(ctx), gpu);
    }
    uint64_t id = create_context(&s, 1 << 21); /* (still as a GPU) */
    cl_context ctx = exec_lookup(&s, id, VOCL_T_CONTEXT)->native;
    exec_session_close(&s);
    assert_false(has_pool(ctx));
    node.types[0] = real;
    exec_session_end(&s);
    exec_reap(&node, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(first_contexts_get_their_own),
        cmocka_unit_test(busy_pool_outlives_its_context),
        cmocka_unit_test(heirs_take_in_turn),
        cmocka_unit_test(driver_staging_off),
        cmocka_unit_test(release_request_drops_the_pool),
        cmocka_unit_test(gpu_context_gets_its_pool_early),
    };
    return cmocka_run_group_tests(tests, harness_setup, harness_teardown);
}
