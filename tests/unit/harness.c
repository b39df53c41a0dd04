/*
 * harness.c - see harness.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "harness.h"

struct exec_node node;
const struct vocl_native_api *cl;

static int no_recv(struct exec_session *s, int tag, void *b, size_t n)
{
    (void)s, (void)tag, (void)b, (void)n;
    return -1;
}
static int no_send(struct exec_session *s, int tag, const void *b, size_t n)
{
    (void)s, (void)tag, (void)b, (void)n;
    return -1;
}
const struct exec_data_ops no_data = {.recv = no_recv, .send = no_send};

int harness_setup(void **state)
{
    (void)state;
    vocl_log_level = VOCL_LOG_ERROR; /* the rejections the tests provoke are expected */
    cl = vocl_native_get();
    if (!cl || exec_node_open(&node, cl, CL_DEVICE_TYPE_ALL, NULL) || node.ndev == 0) {
        fprintf(stderr, "no native OpenCL device: install pocl-opencl-icd\n");
        return -1;
    }
    return 0;
}

int harness_teardown(void **state)
{
    (void)state;
    exec_node_close(&node);
    return 0;
}

cl_int run(struct exec_session *s, struct vocl_wr *req, struct reply *rep)
{
    vocl_wr_finish(req);
    vocl_wr_init(&rep->w);
    rep->rc = exec_request(s, req->buf, req->len, &rep->w);
    /* A chunked write parks the session until its chunks are in (inbound.c). */
    for (int k = 0; k < 1000 && rep->rc >= 0 && exec_session_parked(s); k++) {
        bool moved = false;
        rep->rc = exec_inbound_step(s, &rep->w, &moved);
    }
    if (rep->rc <= 0)
        return 1; /* no reply: treated as "not success" by callers */
    struct vocl_msg_hdr h;
    assert_true(vocl_hdr_get(rep->w.buf, rep->w.len, &h));
    vocl_rd_init(&rep->r, rep->w.buf + VOCL_HDR_SIZE, h.length);
    return vocl_rd_i32(&rep->r);
}

void begin(struct vocl_wr *w, unsigned op)
{
    vocl_wr_begin(w, (uint16_t)op, VOCL_F_REPLY, 1);
}

void session_open(struct exec_session *s, int peer)
{
    struct vocl_wr w;
    struct reply rep;
    exec_session_init(s, &node, peer);
    s->data = &no_data;
    vocl_wr_init(&w);
    begin(&w, VOCL_OP_HELLO);
    vocl_enc_HELLO_req(&w, &(struct vocl_msg_HELLO_req){.version = VOCL_WIRE_VERSION});
    assert_int_equal(run(s, &w, &rep), CL_SUCCESS);
    struct vocl_msg_HELLO_rep hello;
    assert_null(vocl_dec_HELLO_rep(&rep.r, &hello));
    assert_true(vocl_rd_done(&rep.r));
    assert_int_equal(hello.chunk, node.xfer.pool_size);
    assert_int_equal(hello.devices.n, node.ndev);
    vocl_wr_free(&w);
    vocl_wr_free(&rep.w);
}

uint64_t create_context(struct exec_session *s, uint64_t id)
{
    struct vocl_wr w;
    struct reply rep;
    vocl_wr_init(&w);
    begin(&w, VOCL_OP_clCreateContext);
    vocl_wr_u32(&w, 0); /* no properties */
    vocl_wr_u32(&w, 1);
    vocl_wr_u64(&w, 1); /* device 1 */
    vocl_wr_u64(&w, id);
    assert_int_equal(run(s, &w, &rep), CL_SUCCESS);
    vocl_wr_free(&w);
    vocl_wr_free(&rep.w);
    return id;
}

void session_open_peer(struct exec_session *s, struct exec_data_ops *ops, bool (*ok)(int rank),
                       int (*send)(int rank, int tag, const void *buf, size_t n),
                       int (*recv)(int rank, int tag, void *buf, size_t n, size_t *got))
{
    session_open(s, 1);
    *ops = no_data;
    ops->peer_ok = ok;
    ops->peer_send = send;
    ops->peer_recv = recv;
    s->data = ops;
}
