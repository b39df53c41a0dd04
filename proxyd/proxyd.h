/*
 * proxyd.h - the proxy executor: sessions, request decoding helpers, and the
 * native OpenCL calls.  The same executor runs inside voclproxyd (for remote
 * clients, over MPI) and inside libvocl (for local passthrough devices, called
 * in-process), so a call means the same thing wherever its device lives.
 */
#ifndef PROXYD_H
#define PROXYD_H

#define VOCL_PROXYD_INTERNAL 1

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "map.h"
#include "native.h"
#include "protocol.h"
#include "vocl_api.h"
#include "wire.h"

/* Largest info value a proxy allocates for one query. */
#define PROXYD_INFO_MAX (VOCL_MSG_MAX / 2)
/* Bounds on the chunk size a client may ask for. */
#define PROXYD_CHUNK_MIN (4u << 10)
#define PROXYD_CHUNK_MAX (64u << 20)

/* The native devices this proxy serves. */
struct proxyd_node {
    const struct vocl_native_api *cl;
    cl_platform_id platform;
    cl_uint ndev;
    cl_device_id *devs;
    cl_device_type *types;
};

/* One object a session created (or a root device), by client id. */
struct proxyd_obj {
    enum vocl_type type;
    uint32_t refs; /* references the client holds: released when it goes */
    void *native;
};

struct proxyd_session;

/* How bulk data moves between the client and this session. */
struct proxyd_data_ops {
    /* Receive exactly n bytes of the next chunk; 0 or -1. */
    int (*recv)(struct proxyd_session *s, void *buf, size_t n);
    /* Send n bytes as the next chunk; 0 or -1. */
    int (*send)(struct proxyd_session *s, const void *buf, size_t n);
    /* Send a finished reply now (before the chunks of a read); 0 or -1. */
    int (*reply)(struct proxyd_session *s, struct vocl_wr *w);
};

struct proxyd_session {
    struct proxyd_node *node;
    struct vocl_map objs; /* id -> struct proxyd_obj */
    const struct proxyd_data_ops *data;
    int peer;        /* the client's rank, for logs and the data channel */
    void *transport; /* the transport's own state (an MPI communicator) */
    bool in_process; /* local passthrough: may pass host pointers */
    bool hello;
    bool broken; /* a protocol violation ended the session */
};

/* One request being decoded and executed. */
struct proxyd_req {
    struct proxyd_session *s;
    const struct vocl_native_api *cl;
    struct vocl_rd *r;
    struct vocl_wr *w;
    unsigned op;
    cl_int err;       /* first OpenCL error met while decoding (a bad handle) */
    const char *fail; /* a protocol violation: the request is rejected */
    void *tmp[8];     /* scratch blocks, freed when the request ends */
    unsigned ntmp;
};

/* Node and sessions. */
int proxyd_node_open(struct proxyd_node *node, const struct vocl_native_api *cl,
                     cl_device_type type_filter, const void *skip_dispatch);
void proxyd_node_close(struct proxyd_node *node);
void proxyd_session_init(struct proxyd_session *s, struct proxyd_node *node, int peer);
/* Releases everything the session's client still held. */
void proxyd_session_end(struct proxyd_session *s);

/*
 * Executes one request message.  Writes the reply (if the request wants one)
 * into *reply and returns 1; returns 0 when no reply is due; -1 when the
 * message was so broken the session must end.
 */
int proxyd_execute(struct proxyd_session *s, const void *msg, size_t len, struct vocl_wr *reply);

/* Decoding helpers for handlers: each records failures in q and returns a
 * harmless value, so a handler decodes everything, then checks once. */
void *proxyd_rd_h(struct proxyd_req *q, enum vocl_type t, int nullable);
const void *proxyd_rd_ha(struct proxyd_req *q, enum vocl_type t, cl_uint *count);
const void *proxyd_rd_va(struct proxyd_req *q, size_t elem, size_t count);
const char *proxyd_rd_str(struct proxyd_req *q);
const void *proxyd_rd_bytes(struct proxyd_req *q, size_t *len);
const void *proxyd_rd_props(struct proxyd_req *q);
uint64_t proxyd_rd_newid(struct proxyd_req *q);
/* The same, for a create that must name its new object. */
uint64_t proxyd_rd_newobj(struct proxyd_req *q);
const uint64_t *proxyd_rd_newids(struct proxyd_req *q, uint32_t *count, uint32_t max);
void *proxyd_tmp(struct proxyd_req *q, size_t n);
void proxyd_fail(struct proxyd_req *q, const char *why);
/* After decoding: 1 to go on; 0 when an error reply was written instead. */
int proxyd_req_begin(struct proxyd_req *q);
/* Records a new object; releases it natively if the id cannot be used. */
void proxyd_put_new(struct proxyd_req *q, uint64_t id, enum vocl_type t, void *native);
/* Records the object a create made (if it did) and writes the status. */
void proxyd_reply_made(struct proxyd_req *q, uint64_t id, enum vocl_type t, void *made,
                       cl_int err);
/* Records the event a command returned, when it succeeded and one was asked for. */
void proxyd_put_event(struct proxyd_req *q, cl_int rc, uint64_t ev_id, cl_event ev);
void proxyd_put_info(struct proxyd_req *q, cl_int rc, const void *value, size_t size,
                     size_t size_ret);
struct proxyd_obj *proxyd_lookup(struct proxyd_session *s, uint64_t id, enum vocl_type t);
cl_int proxyd_release_native(const struct vocl_native_api *cl, enum vocl_type t, void *native);

/* Protocol-only handlers. */
void proxyd_op_program_binaries(struct proxyd_req *q);

/* Generated: API opcodes. */
int proxyd_dispatch_api(struct proxyd_req *q, unsigned op);

/* Logging (log.c in libvocl). */
#include "log.h"

#endif
