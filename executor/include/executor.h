/*
 * executor.h - the executor's interface: what voclproxyd (proxyd/main.c) and
 * libvocl's local passthrough (libvocl/init.c, transport.c) use of it.
 *
 * The executor runs requests on the native OpenCL driver.  Whoever embeds it
 * opens a node (the native devices), gives each client a session, fills in
 * how its bulk data and late replies travel (struct exec_data_ops, the
 * session's callbacks), and passes each request message to exec_request.
 * The rest of the executor (decoding helpers, handlers, pool, stream,
 * builds) is private to executor/ (internal.h there).
 */
#ifndef VOCL_EXECUTOR_H
#define VOCL_EXECUTOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "map.h"
#include "vocl_cl.h"

struct vocl_native_api;
struct vocl_token;
struct vocl_wr;
/* The executor's own (internal.h). */
struct exec_pool;
struct exec_stream;
struct exec_kept;
struct exec_trace;
struct exec_inbound;

/* Bounds on the chunk size (the staging buffer size) of chunked transfers. */
#define EXEC_CHUNK_MIN (4u << 10)
#define EXEC_CHUNK_MAX (64u << 20)
/* Default staging pool: 4 buffers of 4 MiB (vocl-bench: larger buffers gain
 * nothing on loopback, fewer lose the overlap). */
#define EXEC_POOL_N    4u
#define EXEC_POOL_SIZE (4u << 20)
/* Default poll of a command a client waits for (exec_node.poll_ns): a
 * 4-byte transfer or a small kernel on a GPU completes well within it. */
#define EXEC_POLL_NS 20000u
/* How long a chunk or a reply that a client owes, or has not taken, is
 * waited for: then its session ends. */
#define EXEC_CLIENT_TIMEOUT_NS (30ull * 1000000000u)
/* At most this many migrations and event links a client relays (between
 * two daemons: each has a thread here) are under way in its session. */
#define EXEC_RELAYS_MAX 256u

/* How this proxy moves bulk data (voclproxyd options; defaults in session.c). */
struct exec_xfer_cfg {
    unsigned pool_n;    /* staging buffers */
    size_t pool_size;   /* bytes each: also the chunk size clients use */
    bool pipeline;      /* overlap the network and device stages */
    bool direct;        /* receive into mapped device memory where it is host memory */
    bool driver_staging; /* stage in each context's own driver-allocated memory */
};

/* Contexts that get a staging pool of their own at once (pool.c); those
 * beyond share the node's. */
#define EXEC_CTX_POOLS 4

struct exec_ctx_pool {
    cl_context ctx; /* NULL: a free entry */
    struct exec_pool *pool; /* NULL: the driver could not make one */
};

/* One open session, as the proxy's STATE reply lists it (vocl-smi). */
#define EXEC_BUSY_DEVS 32 /* devices whose busy shares a worker tells its siblings */
struct exec_session_state {
    int id;
    const char *user; /* "" when its HELLO named none */
    int64_t pid;      /* 0: on another node, or not known */
    uint64_t since_ns; /* vocl_now_ns() when it connected */
    const struct exec_session *s;
    /* A session of another process (s NULL: a worker of voclproxyd
     * --isolate): what it holds, as that process last said. */
    const char *host;
    uint64_t objects, bytes, host_mem;
    uint16_t busy[EXEC_BUSY_DEVS]; /* each device's busy share, in thousandths */
};

/* What one session may hold (voclproxyd --max-session-*); 0: no limit. */
struct exec_limits {
    uint64_t mem;     /* bytes of memory objects */
    uint64_t objects; /* objects of any kind */
    uint64_t host;    /* bytes of host memory held for it (hostmem.c) */
};

/* Why a HELLO was refused, as the node counts them. */
enum exec_refusal {
    EXEC_REFUSED_TOKEN,   /* a wrong or missing token (or none for its user) */
    EXEC_REFUSED_USER,    /* a user name not its own */
    EXEC_REFUSED_DRAINED, /* vocl-ctl drain */
    EXEC_REFUSED_VERSION, /* another wire version */
    EXEC_REFUSALS
};

/* The native devices this proxy serves. */
struct exec_node {
    const struct vocl_native_api *cl;
    cl_platform_id platform;
    cl_uint ndev;
    cl_device_id *devs;
    cl_device_type *types;
    cl_ulong *max_alloc;
    struct exec_xfer_cfg xfer;
    struct exec_limits limits;
    /* How long the thread that took a request polls the commands its reply
     * waits for, before the reply is left to the driver's callback
     * (complete.c); 0: never polls. */
    uint64_t poll_ns;
    /* Whether a batch's commands start together, once it has been run
     * (exec.c, gate_queue); --no-batch-gate turns it off. */
    bool gate_batches;
    /* Whether the commands' ends are also looked for, not only called back
     * (watch.c): where the node has a device that is not a CPU. */
    bool look_at_events;
    char node_name[256]; /* for clients (HELLO): VOCL_NODE_NAME, else the host's */
    const struct vocl_token *token; /* daemon mode: a HELLO must carry it */
    const char *users; /* daemon mode, --users DIR: each user's token in DIR/USER (token.h) */
    atomic_bool drained; /* daemon mode, vocl-ctl drain: a HELLO is refused */
    /* HELLOs accepted, and refused by why (voclproxyd --metrics-file). */
    atomic_uint_fast64_t hellos, refused[EXEC_REFUSALS];
    /* The open sessions, for STATE, into out (at most max); how many there
     * are.  On the serving thread.  NULL: STATE lists none. */
    size_t (*sessions)(void *ctx, struct exec_session_state *out, size_t max);
    void *sessions_ctx;
    /* What all sessions hold now: objects, and bytes of memory objects. */
    atomic_uint_fast64_t nobjs, bytes;
    struct exec_pool *pool; /* made on first use */
    struct exec_ctx_pool ctx_pools[EXEC_CTX_POOLS];
    struct exec_pool *retired;  /* pools of released contexts, freed once idle */
    struct exec_stream *stream; /* NULL: chunks are sent by the caller */
    struct exec_kept *kept;
    size_t nkept, capkept;
    bool busy_share;        /* voclproxyd --busy-share: busy.c measures */
    struct exec_busy *busy; /* busy.c: from the first exec_busy_tick */
};

struct exec_session;

/* Each device's busy share (busy.c), where node->busy_share:
 * exec_busy_tick, called by a serving loop as often as it likes, counts
 * commands from its first call on; exec_busy_permille is the share of
 * device dev in the last whole second, in thousandths (EXEC_BUSY_UNKNOWN:
 * not measured).  Both on the serving thread. */
#define EXEC_BUSY_UNKNOWN 0xffffffffu
void exec_busy_tick(struct exec_node *node);
unsigned exec_busy_permille(struct exec_node *node, cl_uint dev);

#define EXEC_DEPTH_MAX 16u /* chunks of a read in flight at most */

/* A send posted on a channel, tested later: the channel's own handle. */
struct exec_sending {
    _Alignas(8) unsigned char handle[32];
};

/* How bulk data moves between the client and this session. */
struct exec_data_ops {
    /* Receive exactly n bytes of the next chunk of the transfer the
     * current request starts (tag: vocl_data_tag of its seq); 0 or -1. */
    int (*recv)(struct exec_session *s, int tag, void *buf, size_t n);
    /* Optional: recv if the chunk has come (0), else 1 at once; -1: failed.
     * NULL: recv serves (it waits).  A chunk that has begun to come may
     * take longer (a sender stopped in the middle of it): 1 until it is
     * in, and buf must stay the same until then. */
    int (*recv_try)(struct exec_session *s, int tag, void *buf, size_t n);
    /* Optional, with recv_try: whether a chunk recv_try began is still
     * being written into its buffer (tested: it moves on); and, when it is,
     * that it will not be waited for (its buffer is left alone for good). */
    bool (*recv_busy)(struct exec_session *s);
    void (*recv_give_up)(struct exec_session *s);
    /* Send n bytes as the next chunk of the transfer on tag; 0 or -1.
     * Called from the stream thread (stream.c) while the request thread goes on. */
    int (*send)(struct exec_session *s, int tag, const void *buf, size_t n);
    /* Optional: send in two steps, so that the stream thread keeps several
     * chunks in flight and never waits for a client to take one: posted (0
     * or -1), then tested (1: taken, 0: not yet, -1: failed; give_up:
     * cancelled, -1).  NULL: send, one chunk at a time. */
    int (*send_post)(struct exec_session *s, int tag, const void *buf, size_t n,
                     struct exec_sending *h);
    int (*send_test)(struct exec_session *s, struct exec_sending *h, bool give_up);
    /* Between proxies of one job (migrations, event links: peer_link.c); NULL in-process.
     * peer_recv takes the next message from rank on tag: *got is its size,
     * its bytes land in buf when they fit (else they are dropped). */
    bool (*peer_ok)(int rank);
    int (*peer_send)(int rank, int tag, const void *buf, size_t n);
    int (*peer_recv)(int rank, int tag, void *buf, size_t n, size_t *got);
    /* The same with the client as the peer (VOCL_PEER_CLIENT: it relays
     * between two daemons), on the session's own channel; the receive
     * gives up once the session is closed.  NULL: the client cannot. */
    int (*relay_send)(struct exec_session *s, int tag, const void *buf, size_t n);
    int (*relay_recv)(struct exec_session *s, int tag, void *buf, size_t n, size_t *got);
    /* Whether a client or a proxy of the job died (the reply to a BYE says
     * so: MPI_Finalize would wait for it); NULL: none can. */
    bool (*peer_died)(void);
};

struct exec_session {
    struct exec_node *node;
    struct vocl_map objs; /* id -> struct exec_obj */
    const struct exec_data_ops *data;
    int peer;        /* the client's rank on its channel */
    int who;         /* the client's number in logs (its rank in job mode) */
    char user[65];   /* the user its HELLO named (daemon mode), or "" */
    char host[65];   /* and the host it runs on, or "" */
    long uid;        /* daemon mode, a client of this node: the uid it really runs as
                        (ucx.h: vocl_conn_peer_uid); -1: not known */
    long pid;        /* and its process, as it said (0: not known) */
    void *transport; /* the transport's own state (its channel) */
    bool in_process; /* local passthrough: may pass host pointers */
    bool hello;
    uint32_t serial; /* names the session in context notifications (notify.c) */
    atomic_bool broken; /* a protocol violation ended the session */
    atomic_bool closed; /* ended: replies still due are dropped */
    atomic_uint held;   /* replies and builds still due that name it (exec_session_held) */
    atomic_uint relays; /* migrations and event links its client relays, under way */
    /* Sends a reply that was not ready when its request was handled
     * (complete.c); from another thread than the request's.  NULL: none
     * can be (every reply is given at once). */
    int (*reply)(struct exec_session *s, struct vocl_wr *w);
    /* In process: let the application's other threads into the executor
     * while this one builds, and back (build.c).  NULL: not needed. */
    void (*leave)(struct exec_session *s);
    void (*enter)(struct exec_session *s);
    int data_tag; /* the tag of the current request's transfer */
    atomic_bool lost;   /* the client died (its transport noticed, on any thread) */
    bool peer_died;     /* at BYE: the client said, or was told, that a peer died */
    uint64_t nobjs, bytes;        /* what it holds (struct exec_limits) */
    struct exec_account *account; /* its host memory (hostmem.c) */
    /* The first error of a request that wanted no reply, reported by the
     * next synchronising request (vocl_op_syncs, from the table). */
    cl_int deferred;
    unsigned deferred_op;
    /* User events not yet set: a command may wait on the client, so the
     * proxy must never block on a queue for a non-blocking request. */
    unsigned user_events;
    struct exec_trace *trace; /* the client asked for a timeline (trace.c) */
    bool shm; /* the client is on this node: large buffers are shared (shm.c) */
    /* A region mapped to answer the last request: unmapped once its reply
     * has gone (exec_after_reply). */
    struct {
        void *queue, *mem, *ptr, *mapped; /* cl_command_queue, cl_mem, its map's cl_event */
    } unmap_due;
    /* A context made by the last request, whose staging pool is made once
     * its reply has gone (pool.c). */
    struct {
        void *ctx, *dev; /* cl_context, cl_device_id */
    } pool_due;
    /* A chunked write whose chunks are still coming (inbound.c): the
     * session's later requests wait until it has them all. */
    struct exec_inbound *inbound;
    /* The request being executed (one of a batch), and the data a parked
     * one received whole, for its second run (inbound.c). */
    const void *msg;
    size_t msg_len;
    void *preloaded;
    /* While a batch runs: the queues whose commands wait behind a barrier
     * on a user event until its end (exec.c, gate_queue). */
    bool gating;
    unsigned ngates;
    struct {
        void *queue, *ev; /* cl_command_queue, the user event (cl_event) */
    } gates[4];
};

/* Host memory the proxy holds for s (hostmem.c). */
size_t exec_host_held(const struct exec_session *s);

/* Node and sessions. */
int exec_node_open(struct exec_node *node, const struct vocl_native_api *cl,
                   cl_device_type type_filter, const void *skip_dispatch);
void exec_node_close(struct exec_node *node);
void exec_session_init(struct exec_session *s, struct exec_node *node, int peer);
/* Who s's client is, for a log line: "user U, uid N, host H, process P"
 * (the uid where the node knows it). */
void exec_session_who(const struct exec_session *s, char *out, size_t n);
/* Releases everything the session's client still held. */
void exec_session_end(struct exec_session *s);
/*
 * exec_session_end in two steps, for a thread that must not wait:
 * exec_session_close ends the session at once (what is due to the client
 * is dropped, its user events fail); exec_session_draining says whether
 * a read of its objects is still on its way out (it may wait for its
 * device: a long kernel), or a chunk of a write still coming in (its client
 * stopped in the middle of sending it); once it is not,
 * exec_session_end releases the rest without waiting.
 */
void exec_session_close(struct exec_session *s);
bool exec_session_draining(struct exec_session *s);
/* A closed session's client began to send a chunk and has not finished it
 * (it died in the middle, or stays stopped): the memory the chunk lands in
 * is left to the data channel for good, so that the rest can be released
 * (inbound.c). */
void exec_inbound_give_up(struct exec_session *s);
/* After exec_session_end: whether a reply or build still due names s (its
 * memory must stay until this is false). */
bool exec_session_held(struct exec_session *s);
/* What waits until a request's reply has been sent, so as not to delay it
 * (a short read's map is unmapped: ops_transfer.c).  The transport calls it
 * after each reply; exec_request and exec_session_end call it first. */
void exec_after_reply(struct exec_session *s);

/*
 * A session whose chunked write is still receiving (inbound.c) is parked:
 * its transport serves its next request only after exec_inbound_step
 * has returned non-zero, and calls that, between other sessions'
 * requests, until the session is no longer parked.  The step never
 * waits: it takes the chunks that have come (for about a millisecond at
 * most, *moved set when it took one), and leaves the rest (or a device
 * command that holds a staging buffer) for a later step.  Returns as
 * exec_request does once the write is done (1: its reply is in w to
 * send), 0 while it is not, -1 when the session broke (a chunk did not
 * come in time, or out of step).
 */
static inline bool exec_session_parked(const struct exec_session *s)
{
    return s->inbound != NULL;
}
int exec_inbound_step(struct exec_session *s, struct vocl_wr *w, bool *moved);

/*
 * Executes one request message.  Writes the reply (if the request wants one)
 * into *reply and returns 1; returns 0 when no reply is due; -1 when the
 * message was so broken the session must end.
 */
int exec_request(struct exec_session *s, const void *msg, size_t len, struct vocl_wr *reply);

/* Context notifications (notify.c): builds the NOTIFY message of the
 * session's pending notes into msg; false when there are none. */
bool exec_notify_take(const struct exec_session *s, struct vocl_wr *msg);
/* How many notes were posted so far: a transport that sees it grow sends
 * them without waiting for a reply. */
uint64_t exec_notify_posted(void);

/* The network stage of reads (stream.c), a thread voclproxyd starts for its
 * node (without one, chunks are sent by the request's thread). */
struct exec_stream *exec_stream_start(const struct vocl_native_api *cl);
void exec_stream_stop(struct exec_stream *st);
/* The threads that answer requests later (complete.c), build programs
 * (build.c) and watch events (watch.c), started now rather than at their
 * first use, where the fallbacks would run on the serving thread: false
 * where one cannot be started. */
bool exec_replies_start(void);
bool exec_builds_start(void);
bool exec_watch_start(void);

/* Host memory that device commands still read, and the pools of released
 * contexts (pool.c): frees what completed (wait: everything, waiting for it). */
void exec_reap(struct exec_node *node, bool wait);

/* The threads of migrations and event links (peer_link.c) that could not
 * start when their requests came (ulimit -u, no memory): started now,
 * while they start; how many still wait.  The serving loop calls it. */
unsigned exec_peer_starts(void);

/* Builds run on threads of their own (build.c).  From the serving thread:
 * answers the builds that ended (w: scratch); how many. */
unsigned exec_builds_answer(struct vocl_wr *w);
/* Builds still running: the proxy does not stop under them. */
unsigned exec_builds_running(void);

/* This process's bell (common/bell.h), once a client of this node asked
 * for it (BELL; NULL before, or with VOCL_BELL=0): the serving thread naps
 * on it, those clients ring it, and so does a build that ends (its reply
 * is the serving thread's to send). */
struct vocl_bell;
struct vocl_bell *exec_bell(void);
void exec_bell_ring(void);
/* Waits up to seconds for every reply that waits for device commands
 * (complete.c) to be sent, or dropped where its session closed, and freed:
 * until then its session must not be freed.  Whether they all were. */
bool exec_replies_settle(unsigned seconds);

#endif
