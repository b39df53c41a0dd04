/*
 * internal.h - the executor's internals, private to executor/: request
 * decoding helpers, the handlers, pool, stream, builds and notifications.
 * The same executor runs inside voclproxyd (for remote clients, over MPI)
 * and inside libvocl (for local passthrough devices, called in-process), so
 * a call means the same thing wherever its device lives; what those two use
 * of it is include/executor.h.
 */
#ifndef VOCL_EXECUTOR_INTERNAL_H
#define VOCL_EXECUTOR_INTERNAL_H

#define VOCL_PROXYD_INTERNAL 1

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "executor.h"
#include "map.h"
#include "native.h"
#include "protocol.h"
#include "token.h"
#include "vocl_api.h"
#include "vocl_msg.h"
#include "wire.h"

/* Largest info value a proxy allocates for one query. */
#define EXEC_INFO_MAX (VOCL_MSG_MAX / 2)

/* Staging buffers for chunked transfers (pool.c). */
struct exec_pool;

/* Host memory a device command still reads: freed when its event completes. */
struct exec_kept {
    cl_event ev;
    void *mem;
};

/* One object a session created (or a root device), by client id. */
struct exec_obj {
    enum vocl_type type;
    uint32_t refs; /* references the client holds: released when it goes */
    void *native;
    uint64_t bytes; /* a memory object's own storage (not a sub-buffer's) */
    struct busy_queue *busy; /* a queue that took commands (busy.c) */
};

/* One request being decoded and executed. */
struct exec_req {
    struct exec_session *s;
    const struct vocl_native_api *cl;
    struct vocl_rd *r;
    struct vocl_wr *w;
    unsigned op;
    uint32_t seq;              /* the request's, echoed in its reply */
    bool async;                /* the client waits for no reply (a non-blocking command) */
    bool later;                /* the reply goes when commands complete (complete.c) */
    cl_int err;                /* first OpenCL error met while decoding (a bad handle) */
    const char *fail;          /* a protocol violation: the request is rejected */
    void *queue;               /* the first queue or context it names, and its type: */
    enum vocl_type queue_type; /* whose context a deferred error is told to */
    struct exec_obj *queue_obj; /* the first queue it names (busy.c) */
    struct exec_tmp *tmp;      /* scratch blocks, freed when the request ends */
    size_t tmp_bytes;          /* their sizes, bounded (exec_tmp) */
};

/* Sets the user events that hold the commands of the batch being run
 * (exec.c, gate_queue): before anything on its thread waits for one. */
void exec_gates_open(struct exec_session *s);

/* VOCL_RECORD_REQUESTS=DIR: writes msg to DIR/<pid>-<n>.bin (record.c). */
void exec_record(const void *msg, size_t len);

/* Helpers for handlers, on the fields a generated decoder has read
 * (vocl_msg.h): ids to native handles, new ids checked, a property list
 * copied and checked.  Each records failures in q and returns a harmless
 * value, so a handler decodes everything, then checks once.  exec_rd_h
 * reads the handle itself, for the few hand-read fields left. */
void *exec_rd_h(struct exec_req *q, enum vocl_type t, int nullable);
const uint64_t *exec_newids(struct exec_req *q, const struct vocl_ids *list, uint32_t *count,
                            uint32_t max);
const char *exec_str(struct exec_req *q, const struct vocl_str *s);
void *exec_h(struct exec_req *q, uint64_t id, enum vocl_type t, int nullable);
const void *exec_ha(struct exec_req *q, enum vocl_type t, const struct vocl_ids *ids,
                    cl_uint *count);
const void *exec_props(struct exec_req *q, const struct vocl_ids *list);
const size_t *exec_va3(struct exec_req *q, const struct vocl_va3 *a);
uint64_t exec_newid(struct exec_req *q, uint64_t id);
uint64_t exec_newobj(struct exec_req *q, uint64_t id);
void *exec_tmp(struct exec_req *q, size_t n);
void exec_fail(struct exec_req *q, const char *why);
/* After decoding: 1 to go on; 0 when an error reply was written instead. */
int exec_req_begin(struct exec_req *q);
/* The end of request q, its handler done: its reply finished in q->w, with
 * an error deferred or reported as exec_request does; 1 when a reply is
 * due now, else 0.  start: when it began, for the trace (0: none). */
int exec_req_end(struct exec_req *q, uint64_t start);
/* Runs one request (not a batch) once more: one whose chunks came whole
 * while its session was parked (inbound.c).  As exec_request. */
int exec_request_again(struct exec_session *s, const void *msg, size_t len, struct vocl_wr *reply);
/* The session's chunked write (inbound.c): let go (the session closed; but
 * kept while exec_inbound_busy: a chunk is still being written into its
 * memory), or the reply its handler made, kept to send once its chunks
 * are drained. */
void exec_inbound_drop(struct exec_session *s);
bool exec_inbound_busy(struct exec_session *s);
void exec_inbound_keep_reply(struct exec_session *s, const struct vocl_wr *w);
/* Records a new object; releases it natively if the id cannot be used, or
 * it would take the session over its limits: then the error. */
cl_int exec_put_new(struct exec_req *q, uint64_t id, enum vocl_type t, void *native);
/* Records the object a create made (if it did) and writes the status. */
void exec_reply_made(struct exec_req *q, uint64_t id, enum vocl_type t, void *made, cl_int err);
/* Records the event a command returned, when it succeeded and one was asked for. */
void exec_put_event(struct exec_req *q, cl_int rc, uint64_t ev_id, cl_event ev);
void exec_put_info(struct exec_req *q, cl_int rc, const void *value, size_t size, size_t size_ret);
struct exec_obj *exec_lookup(struct exec_session *s, uint64_t id, enum vocl_type t);
cl_int exec_release_native(const struct vocl_native_api *cl, enum vocl_type t, void *native);
cl_int exec_retain_native(const struct vocl_native_api *cl, enum vocl_type t, void *native);
/* The session's table of objects (session.c): records an object, with refs
 * references of the client; CL_SUCCESS, or why it cannot (a limit). */
cl_int exec_add_obj(struct exec_session *s, uint64_t id, enum vocl_type t, void *native,
                    uint32_t refs);
/* Forgets o, taken out of the table (its native references are gone). */
void exec_forget_obj(struct exec_session *s, struct exec_obj *o);

/* The network stage of reads (stream.c): one chunk to send. */
struct exec_stream;
struct exec_stream_chunk {
    struct exec_session *s;
    cl_event ready; /* sent once this completes (then released); NULL: now */
    const void *data;
    size_t n;
    bool ok;          /* false, or ready failed: sent empty (the read failed) */
    struct exec_pool *pool; /* with slot: a pool buffer, given back once sent */
    unsigned slot;
    int tag;          /* the transfer's (set by exec_stream_send) */
    unsigned depth;   /* the transfer's chunks in flight at most (0: 1) */
    cl_event gate;    /* a user event completed once sent (then released) */
    void *free_after; /* exec_host_alloc'd, freed once sent */
};
/* Queues a chunk, sent once ready after the earlier chunks of its transfer
 * (node without a stream: sends it now). */
void exec_stream_send(struct exec_node *node, const struct exec_stream_chunk *c);
/* Waits until every queued chunk of session s is sent. */
void exec_stream_flush(struct exec_node *node, const struct exec_session *s);
/* Whether the stream still has s's chunks (a read may wait for its device). */
bool exec_stream_busy(struct exec_node *node, const struct exec_session *s);

/* Event watches (watch.c): fn(ev, status, arg) once ev's command is over
 * (status CL_COMPLETE, or the command's error), from the driver's callback
 * or from a thread that looks at the event (with look soon and often, else
 * every 100 ms: a net for a callback that never comes), whichever is first;
 * it may run before exec_watch returns.  Where the driver takes no
 * callback, the thread alone tells, looking soon and often.  CL_SUCCESS,
 * or (no memory, no thread and no callback) an error: then fn is never
 * called. */
typedef void exec_watch_fn(cl_event ev, cl_int status, void *arg);
cl_int exec_watch(const struct vocl_native_api *cl, cl_event ev, bool look, exec_watch_fn *fn,
                  void *arg);

/* Busy shares (busy.c): queue took a command; queue is released; the
 * node closes. */
void exec_busy_command(struct exec_node *node, struct exec_obj *queue);
void exec_busy_forget(struct exec_node *node, struct exec_obj *queue);
void exec_busy_free(struct exec_node *node);

/* Staging pool (pool.c). */
struct exec_pool *exec_pool_new(const struct vocl_native_api *cl, unsigned n, size_t size);
void exec_pool_free(struct exec_pool *p);
/* A pool of the context's own driver-allocated memory (NULL: none). */
struct exec_pool *exec_pool_new_driver(const struct vocl_native_api *cl, cl_context ctx,
                                       cl_device_id dev, unsigned n, size_t size);
/* Buffers of a pool: one when the stages are not pipelined. */
static inline unsigned exec_pool_n(const struct exec_node *node)
{
    return node->xfer.pipeline ? node->xfer.pool_n : 1;
}
/* The node's pool, made on first use; NULL when out of memory. */
struct exec_pool *exec_node_pool(struct exec_node *node);
/* The pool for transfers through queue: its context's, made on first use
 * (--no-driver-staging, or where it cannot be made: the node's). */
struct exec_pool *exec_queue_pool(struct exec_node *node, cl_command_queue queue);
/* ctx was just made on dev: where dev is not a CPU, its pool is made once
 * the reply has gone (exec_ctx_pool_due, from exec_after_reply). */
void exec_ctx_pool_early(struct exec_session *s, cl_context ctx, cl_device_id dev);
void exec_ctx_pool_due(struct exec_session *s);
/* The client released ctx: its pool is freed once no buffer is in use. */
void exec_ctx_pool_drop(struct exec_node *node, cl_context ctx);
/* The next buffer in turn, taken if it is free (its last device copy
 * done, not held); NULL: not free yet. */
uint8_t *exec_pool_try(struct exec_pool *p, unsigned *slot);
/* The next buffer in turn, taken whatever its state: a device command
 * that fills it must wait for *wait (the caller's to release): gate, a
 * user event completed once the buffer's holder gives it up (failed if
 * the memory was lost meanwhile), or its last device copy, or NULL.  NULL:
 * no memory to note the wait in, or the buffer is lost for good. */
uint8_t *exec_pool_take_after(struct exec_pool *p, unsigned *slot, cl_event gate, cl_event *wait);
/* A taken buffer, filled: in use until ev completes (NULL: free now). */
void exec_pool_busy(struct exec_pool *p, unsigned slot, cl_event ev);
/* A taken buffer, given back (sent, or unused). */
void exec_pool_give(struct exec_pool *p, unsigned slot);
/* A taken buffer that something may still write into for good (a receive
 * never finished): left alone, and the slot given new memory. */
void exec_pool_lose(struct exec_pool *p, unsigned slot);
/* Frees mem (exec_host_alloc'd) once ev completes; -1 when it cannot be tracked (mem is not taken).
 */
int exec_keep(struct exec_node *node, cl_event ev, void *mem);
/* Host memory (exec_host_alloc'd) a command reads or writes: freed once e
 * completes (now where rc failed), never waited for (ops_transfer.c). */
void exec_keep_until_done(struct exec_session *s, cl_int rc, cl_event e, void *mem);

/*
 * Host memory held for a session (hostmem.c), counted against its limit
 * (--max-session-host) until freed, which may be after the session ended.
 * exec_host_alloc: NULL when out of memory or over the limit (logged).
 */
void exec_account_open(struct exec_session *s);
void exec_account_close(struct exec_session *s);
void *exec_host_alloc(struct exec_session *s, size_t n);
void exec_host_free(void *p);

/* A session's timeline (trace.c); thread 0: requests, 1: the stream. */
struct exec_trace;
struct exec_trace *exec_trace_new(void);
void exec_trace_free(struct exec_trace *t);
void exec_trace_add(struct exec_trace *t, unsigned op, unsigned thread, uint64_t start,
                    uint64_t bytes);

/* Context notifications for the clients (notify.c).  exec_notify_native
 * is the pfn_notify of every native context, with exec_notify_tag as its
 * user_data (NULL: none); exec_notify_take is in executor.h. */
uint32_t exec_notify_serial(void);
void *exec_notify_tag(const struct exec_session *s, uint64_t ctx);
void CL_CALLBACK exec_notify_native(const char *errinfo, const void *priv, size_t cb, void *tag);
void exec_notify_post(const struct exec_session *s, uint64_t ctx, const char *errinfo);
void exec_notify_drop(const struct exec_session *s);

/* Whether a handler may poll the commands its reply waits for: the node
 * polls (poll_ns), the client has no user event unset, which they may wait
 * for, and the session is not in process (complete.c). */
bool exec_may_poll(const struct exec_req *q);
/* Polls until evs all complete, for up to the node's poll_ns; true when they
 * did (*failed: CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST when one ended
 * in error), false when they did not in time or no poll is allowed. */
bool exec_poll_events(struct exec_req *q, cl_uint n, const cl_event *evs, cl_int *failed);

/*
 * A reply that waits for the n events (complete.c): false when it is to be
 * answered now: the events are all complete already (then *status is
 * CL_SUCCESS or CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST), or there is
 * no memory to answer later with (CL_OUT_OF_HOST_MEMORY).  True when the
 * reply (that status, then the payload's npayload bytes if it is
 * CL_SUCCESS) will be sent once they complete: the handler writes nothing.
 * payload (may be NULL; *payload exec_host_alloc'd, with n == 1: what the
 * command writes) is taken, set to NULL, where the reply or the kept
 * memory frees it; else it is still the caller's.
 */
bool exec_reply_after(struct exec_req *q, cl_uint n, const cl_event *evs, void **payload,
                      size_t npayload, cl_int *status);
/* A build, compile or link, as decoded (pointers into the request). */
struct exec_build {
    unsigned op;
    cl_program prog; /* built or compiled */
    cl_context ctx;  /* link */
    cl_uint ndev, nin;
    const cl_device_id *devs;
    const cl_program *in; /* compile: headers; link: inputs */
    const char **names;   /* compile: the headers' include names */
    const char *options;
    uint64_t id;     /* link: the new program's */
    cl_int err;      /* the outcome */
    cl_program made; /* a link's */
};
/* Runs b on a thread of its own, answered by exec_builds_answer
 * (build.c); in process, or where no thread starts, runs it now and writes
 * the reply. */
void exec_build(struct exec_req *q, const struct exec_build *b);

/* The error a request without a reply deferred (CL_SUCCESS: none), for the
 * synchronising request q to report: logged, and the session's is cleared. */
cl_int exec_take_deferred(const struct exec_req *q);
/* clFinish: a marker, answered when it completes. */
void exec_op_finish(struct exec_req *q);

/* A buffer of size bytes in memory shared with the client (shm.c), or NULL
 * where it cannot or need not be: then an ordinary one is made. */
cl_mem exec_shm_buffer(struct exec_req *q, cl_context ctx, cl_mem_flags flags, size_t size,
                       cl_int *err);

/* Protocol-only handlers. */
void exec_op_program_binaries(struct exec_req *q);
void exec_op_shm_map(struct exec_req *q);
void exec_op_bell(struct exec_req *q);
void exec_op_trace(struct exec_req *q);
void exec_op_migrate_out(struct exec_req *q);
void exec_op_migrate_in(struct exec_req *q);
void exec_op_diff_out(struct exec_req *q);
/* Diffs (diff.c): writes the runs where now differs from was to out
 * (NULL: only counts) and returns their size; *changed counts the bytes. */
size_t exec_diff_encode(const uint8_t *now, const uint8_t *was, size_t size, uint8_t *out,
                        size_t *changed);
/* The most the runs of a buffer of size bytes can take. */
uint64_t exec_diff_max(size_t size);
/* Patches runs (n bytes, from the wire) into buf; -1 when they are malformed. */
int exec_diff_apply(uint8_t *buf, size_t size, const uint8_t *d, size_t n);
void exec_op_diff_in(struct exec_req *q);
void exec_op_event_out(struct exec_req *q);
void exec_op_event_in(struct exec_req *q);

/* Generated: API opcodes. */
int exec_dispatch_api(struct exec_req *q, unsigned op);

/* Logging (common/log.c). */
#include "log.h"

/* --- the other end of a migration or an event link (peer_link.c) -------------------------------
 */
/* The other proxy of a request, and the tag its messages travel on; or
 * the client, which relays them (relay: its session). */
struct exec_peer_link {
    const struct vocl_native_api *cl;
    const struct exec_data_ops *data;
    int peer, tag;
    struct exec_session *relay;
    bool sane; /* peer and tag are: the receiver can be told of a failure */
    bool
        counted; /* one of the session's EXEC_RELAYS_MAX (and a hold on it), until exec_peer_drop */
    /* While its thread could not start yet (exec_peer_start): */
    void *(*fn)(void *);
    void *arg;
    struct exec_peer_link *next;
};
/* Checks the peer (a rank, or VOCL_PEER_CLIENT) and the tag of q, a
 * migration's or (event) an event link's request; fails q if they are not
 * sane or the session has its EXEC_RELAYS_MAX relays under way. */
void exec_peer_set(struct exec_req *q, struct exec_peer_link *l, uint32_t peer, uint32_t tag,
                   bool event);
/* l is done with: a relay's count and hold are given back. */
void exec_peer_drop(struct exec_peer_link *l);
/* The peer, for messages: "rank N", or "the client" (a relay). */
const char *exec_peer_who(const struct exec_peer_link *l, char who[24]);
/* Runs fn(arg), the work of l (it waits for the peer), on a thread of its
 * own: now, or where no thread can be had (ulimit -u, no memory), as soon
 * as exec_peer_starts (executor.h) can start one.  Never on the caller's thread. */
void exec_peer_start(struct exec_peer_link *l, void *(*fn)(void *), void *arg);
int exec_peer_send(const struct exec_peer_link *l, const void *buf, size_t n);
int exec_peer_recv(const struct exec_peer_link *l, void *buf, size_t n, size_t *got);
/* Little-endian u64s of the migrations' own messages (a diff's length, its runs). */
static inline void exec_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint64_t exec_get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

#endif
