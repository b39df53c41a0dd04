/*
 * harness.h - what the executor's unit tests share: the native devices, and
 * requests run through exec_request in-process, as a proxy would.
 */
#ifndef VOCL_TEST_HARNESS_H
#define VOCL_TEST_HARNESS_H

#include "internal.h"

extern struct exec_node node;
extern const struct vocl_native_api *cl;
/* A data channel that fails: the tests send no chunks. */
extern const struct exec_data_ops no_data;

/* cmocka group fixtures: open and close the node (fails without a device). */
int harness_setup(void **state);
int harness_teardown(void **state);

struct reply {
    struct vocl_wr w;
    struct vocl_rd r;
    int rc; /* exec_request's: 1 a reply, 0 none, -1 the session must end */
};

/* Runs one request; returns the reply's error code (1 when there is none). */
cl_int run(struct exec_session *s, struct vocl_wr *req, struct reply *rep);
/* Starts a request that wants a reply in w (already initialised). */
void begin(struct vocl_wr *w, unsigned op);
/* A session that has said HELLO, with no data channel. */
void session_open(struct exec_session *s, int peer);
/* A context on device 1, with client id id. */
uint64_t create_context(struct exec_session *s, uint64_t id);
/* session_open's session (peer 1) whose other proxies are played by the
 * test: *ops is no_data with these peer functions. */
void session_open_peer(struct exec_session *s, struct exec_data_ops *ops, bool (*ok)(int rank),
                       int (*send)(int rank, int tag, const void *buf, size_t n),
                       int (*recv)(int rank, int tag, void *buf, size_t n, size_t *got));

#endif
