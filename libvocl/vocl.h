/*
 * vocl.h - libvocl's internal interface: objects, proxies, and the call
 * helpers the generated and hand-written entry points are built from.
 */
#ifndef VOCL_H
#define VOCL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <mpi.h>

#include "log.h"
#include "map.h"
#include "chan.h"
#include "linkmeter.h"
#include "native.h"
#include "protocol.h"
#include "vocl_api.h"
#include "wire.h"
#include "vocl_msg.h"

struct vocl_live; /* liveness.h */

#define VOCL_OBJ_MAGIC 0x766f636cu /* "vocl" */

struct exec_session;
struct exec_node;
struct kp_program;
struct vocl_proxy;

/*
 * A context whose devices live in several proxies has a native context in
 * each, and so has every object made in it (memory objects, samplers,
 * programs, kernels, user events): one replica per proxy, in the context's
 * order of proxies (replica.c).
 */
/* The event on a proxy that the last migration into a replica completes.
 * Commands on the replica wait for it; it is released on the proxy once
 * no replica or unsent command holds it (a newer migration may replace it
 * while a command that named it is still being written). */
struct vocl_arrival {
    struct vocl_proxy *px;
    uint64_t id;
    atomic_uint refs;
};

/* A queue that wrote a replica, and when its first and last writes of it
 * were enqueued (vocl_tick). */
struct vocl_writer {
    struct vocl_obj *queue; /* held */
    uint64_t first, last;
    /* Held: the event of its last write, where the application asked for
     * one and the queue is in order (NULL: not known, or not yet).  While
     * the application holds it too, a move out of the replica waits for
     * that write, not for every command enqueued on the queue since
     * (coherence.c, after). */
    struct vocl_obj *event;
};

struct vocl_rep {
    struct vocl_proxy *px;
    uint64_t id;     /* 0: none there (a kernel of a program not built there) */
    struct vocl_arrival *arrive; /* memory: the last migration into it (held) */
    /* memory: the queues on px that wrote it since it became the only
     * holder of its data (held): a migration out reads after all of them */
    struct vocl_writer *writers;
    cl_uint nwriters, capwriters;
    uint64_t since; /* memory: the first of those writes the others' twins may lack (0: none) */
    uint64_t twin;  /* memory: its twin there (unmerged writes: coherence.c), or 0 */
    struct vocl_arrival *twin_made; /* memory: the twin's making, held while it lives */
};

/* Chunks of transfers posted and not yet completed (transport.c). */
struct vocl_chunk {
    uint64_t ticket;   /* the order posted, from 1 (0: a failover's, waited for by none) */
    const void *queue; /* the queue of its command (NULL: none) */
    int expect;        /* bytes a receive must get; -1 for sends */
    void *scratch;     /* a failover's receive of bytes that had landed: freed when done */
    bool replay;       /* a failover's send (vocl_pending.replays) */
};
struct vocl_pending {
    struct vocl_req *reqs;
    struct vocl_chunk *meta;
    size_t n, cap;
    uint64_t posted; /* tickets given so far */
    size_t replays;  /* a failover's sends not yet done (failover.c paces them) */
    cl_int failed;   /* a read that failed, reported by a synchronisation */
};

/* A thread waiting for the reply to request seq (transport.c). */
struct vocl_waiter {
    struct vocl_waiter *next;
    uint32_t seq;
    bool done;           /* the reply is in *buf */
    struct vocl_wr *buf; /* the caller's: the reply takes its place */
};

/* A proxy: a voclproxyd rank, or the in-process executor for local devices. */
struct vocl_proxy {
    int index;
    int rank;   /* MPI rank on comm; -1 in-process; 0 for a daemon */
    MPI_Comm comm; /* job mode: vocl.comm; daemon mode: MPI_COMM_NULL */
    struct vocl_conn *conn; /* daemon mode: its UCX connection (ucx.h); NULL: none */
    /* Daemon mode, served by a worker of the daemon: the worker's key and
     * the daemon's address, to ask how the worker ended (connect.c). */
    uint64_t worker_key;
    char *daemon_host;
    int daemon_port;
    atomic_bool fate_asked;
    atomic_int live; /* its number in liveness.h (job mode: its rank); moves with a failover */
    char *name;    /* daemon mode: how the user named it (VOCL_PROXIES) */
    char node[VOCL_NODE_NAME_MAX + 1]; /* its node's name, from HELLO (cl_vocl_device_location) */
    bool local; /* in-process executor (local passthrough) */
    bool spare; /* VOCL_SPARE: its devices are listed by none, a migration's target */
    /* Daemon mode, HOST@DEVICES in VOCL_PROXIES (a Slurm job's share of
     * the daemon, vocl-slurm(8)): only[i] says whether its device i is
     * listed (NULL: all are); the others exist, unlisted, as a spare's. */
    bool *only;
    uint32_t only_n;
    atomic_bool dead; /* the transport failed: every call fails fast */
    atomic_uint_fast64_t called_at; /* when the last call sent to it began (vocl_tick) */
    /* Posting a request (its seq, message and chunks), the waiters, the
     * pending chunks and one pass of progress; never held while waiting. */
    pthread_mutex_t lock;
    atomic_uint_fast64_t next_id;
    uint32_t seq;
    cl_uint ndev;
    size_t chunk;                   /* the largest chunk of a transfer (the proxy's staging buffers) */
    uint64_t mem_limit, obj_limit;  /* a daemon's limits of a session (0: none, or not said) */
    struct vocl_link link;          /* what was measured of the link to it (linkmeter.h) */
    bool shm;                       /* on this node: large buffers are shared (shm.h) */
    struct vocl_bell *bell;         /* on this node: rung after each request (bell.h) */
    atomic_long shm_pid;            /* its process, once a buffer was mapped (0: none) */
    struct vocl_pending pending;    /* under lock */
    struct vocl_waiter *waiters;    /* under lock */
    struct vocl_wr rx;              /* under lock: the message being received */
    struct vocl_req rx_req;         /* under lock: its receive, while rx_on */
    bool rx_on;
    struct vocl_wr batch;           /* under lock: requests that wait to go as one (BATCH) */
    unsigned nbatch;                /* how many */
    struct exec_session *session;   /* in-process only */
    /* Contexts on it with a pfn_notify: their notifications come unasked,
     * and the callbacks thread looks for them (event.c). */
    atomic_int notes_watch;
    /* VOCL_FAILOVER (failover.c): what was sent to it, to be sent again to
     * a spare should it die (NULL: not kept); under lock. */
    struct vocl_flog *flog;
    atomic_uint epoch;   /* how often it moved to a spare (once it has, replies nobody
                            waits for are the replay's) */
    bool replaying;      /* under lock: the spare is being sent the log; new requests join it */
    uint32_t replay_seq; /* under lock: the reply the replay waits for, and whether it came */
    bool replay_got;
    bool leaving; /* under lock: this process leaves (init.c): a death is final */
    atomic_bool used; /* a spare that got a request (a migration's target): not for failover */
};

/*
 * Every OpenCL handle libvocl gives out points to one of these: what every
 * object has.  The ICD dispatch pointer must come first: the ICD loader
 * calls through it.  Types with state of their own embed it as the first
 * member of a larger struct (below), so a handle is the address of both.
 */
struct vocl_obj {
    const struct _cl_icd_dispatch *dispatch;
    uint32_t magic;
    enum vocl_type type;
    atomic_int refs;     /* app references + references of dependent objects */
    atomic_int app_refs; /* references the application holds (retain/release) */
    struct vocl_proxy *px;
    uint64_t id;
    uint64_t serial; /* this process's objects, numbered: an address may be reused */
    struct vocl_obj *context; /* held: the owning context */
    struct vocl_obj *parent;  /* held: queue->device, kernel->program, event->queue,
                                 sub-buffer->buffer, sub-device->device */
    struct vocl_dtor *dtors;  /* destructor callbacks (contexts, memory), run when it goes */
    cl_uint nreps;            /* objects of a context spanning proxies: one replica */
    struct vocl_rep *reps;    /* per proxy of it (reps[0] is px, id); else NULL */
    struct vocl_info *info;   /* info.c: answers kept (under its lock) */
    uint32_t info_gen;        /* info.c: how often they were forgotten */
};

struct vocl_device {
    struct vocl_obj obj;
    cl_device_type dev_type;
    cl_ulong max_alloc; /* CL_DEVICE_MAX_MEM_ALLOC_SIZE (0: a sub-device, unknown) */
};

struct vocl_context {
    struct vocl_obj obj;
    cl_uint ndevs;                /* its devices (not held) */
    struct vocl_obj **devs;
    cl_context_properties *props; /* as the application gave them */
    size_t nprops;
    void (*ctx_notify)(const char *, const void *, size_t, void *);
    void *ctx_notify_data;
};

struct vocl_queue {
    struct vocl_obj obj;
    atomic_int order;                 /* 0: not asked yet, 1: in order, 2: out of order */
    atomic_uint_fast64_t data_ticket; /* the last chunk of its latest non-blocking read
                                         (threads may enqueue at once: only grows) */
    atomic_uint_fast64_t ordered_at;  /* when a command of it last had a wait list */
    atomic_uint_fast64_t finished_at; /* when the last clFinish of it that returned began */
    atomic_uint_fast64_t enqueued_at; /* when the last call naming it began */
};

/* A buffer, sub-buffer or image. */
struct vocl_mem {
    struct vocl_obj obj;
    cl_mem_object_type mem_type; /* an image's type (0: a buffer) */
    size_t elem_size;            /* image: bytes per pixel */
    size_t dims[3];              /* image: its extent as origin/region count it */
    cl_mem_flags mem_flags;
    size_t mem_size;
    void *host_ptr;
    struct vocl_mapping *maps; /* live host shadows of remote maps */
    void *shm;                 /* buffer: its memory, shared with its proxy (memory.c) */
    atomic_int shm_state;      /* buffer: 0 SHM_MAP not asked, 1 being asked, 2 answered */
    uint64_t valid;            /* the root buffer: replicas holding the latest data */
    uint64_t twinned;          /* the root buffer: replicas with a twin */
    cl_image_format format;    /* image: as made (a migration makes it again) */
    cl_image_desc desc;
};

struct vocl_program {
    struct vocl_obj obj;
    cl_uint ndevs;            /* its devices (not held); NULL devs: the context's */
    struct vocl_obj **devs;
    struct kp_program *kp;    /* from source: its kernel signatures, or NULL */
    bool kp_cond;             /* its source has #if (types may be -D defined) */
    bool built;               /* its last build or link made an executable */
    uint64_t build_tried;     /* the replicas a build or compile went to */
    cl_uint ninputs;          /* linked: its input programs (held), where */
    struct vocl_obj **inputs; /* its kernels' signatures are */
    char *source;             /* from source: all of it, ended by a NUL */
    char *options;            /* the options of its last build that made an executable */
};

struct vocl_kernel {
    struct vocl_obj obj;
    struct vocl_kargs *kargs; /* argument cache (kargs.h) */
};

struct vocl_event {
    struct vocl_obj obj;
    /* The queue's data_ticket when the event was made: waiting for it
     * covers the data of the queue's earlier reads. */
    atomic_uint_fast64_t data_ticket;
    /* Known CL_COMPLETE: a wait on it succeeded (event.c), or its command
     * was a blocking transfer, which has returned (memory.c, image.c). */
    atomic_bool complete;
    /* A non-blocking read's own event: the proxy sends the data once the
     * read has completed, so its data landing completes it too. */
    bool lands;
    /* Its proxy's driver said it completed (a clWaitForEvents it was asked),
     * where complete may have been known first (event.c, profiling). */
    atomic_bool driver_done;
};

/*
 * An object as its type's struct: NULL when o is NULL or of another type.
 * The callers know the type (a lookup checked it), so a mismatch is a bug,
 * and a NULL dereference shows it at once.  Like strchr, const in, not out.
 */
static inline struct vocl_device *vocl_as_device(const struct vocl_obj *o)
{
    return o && o->type == VOCL_T_DEVICE ? (struct vocl_device *)o : NULL;
}
static inline struct vocl_context *vocl_as_context(const struct vocl_obj *o)
{
    return o && o->type == VOCL_T_CONTEXT ? (struct vocl_context *)o : NULL;
}
static inline struct vocl_queue *vocl_as_queue(const struct vocl_obj *o)
{
    return o && o->type == VOCL_T_QUEUE ? (struct vocl_queue *)o : NULL;
}

/* Whether a clFinish of q returned after the last call that named q began
 * (nothing sent since can be pending on it). */
static inline bool vocl_queue_finished_since_used(struct vocl_queue *q)
{
    return atomic_load(&q->enqueued_at) < atomic_load(&q->finished_at);
}
static inline struct vocl_mem *vocl_as_mem(const struct vocl_obj *o)
{
    return o && o->type == VOCL_T_MEM ? (struct vocl_mem *)o : NULL;
}
/* All of m's bytes (an image's, as a read of all of it gives them). */
static inline size_t vocl_mem_bytes(const struct vocl_mem *m)
{
    return m->mem_type ? m->elem_size * m->dims[0] * m->dims[1] * m->dims[2] : m->mem_size;
}
static inline struct vocl_program *vocl_as_program(const struct vocl_obj *o)
{
    return o && o->type == VOCL_T_PROGRAM ? (struct vocl_program *)o : NULL;
}
static inline struct vocl_kernel *vocl_as_kernel(const struct vocl_obj *o)
{
    return o && o->type == VOCL_T_KERNEL ? (struct vocl_kernel *)o : NULL;
}
static inline struct vocl_event *vocl_as_event(const struct vocl_obj *o)
{
    return o && o->type == VOCL_T_EVENT ? (struct vocl_event *)o : NULL;
}

/* Global state, set up once by vocl_init(). */
struct vocl_state {
    int nproxies;
    struct vocl_proxy **proxies;
    cl_uint ndevices;
    struct vocl_obj **devices;
    struct vocl_obj *platform;
    MPI_Comm comm;
    bool mpi_used;    /* libvocl talks MPI (job or daemon mode) */
    bool mpi_ours;    /* libvocl initialised MPI and finalises it */
    bool job_mode;
    atomic_int proxies_lost; /* proxies that died (vocl_xport_fail) */
    bool peer_died; /* a proxy's reply to BYE said a peer of the job died */
    int app_ranks;
    int app_rank; /* job mode: this process's rank, 0 .. app_ranks - 1 */
    struct exec_node *local_node;
    struct vocl_token *token; /* daemon mode: presented in HELLO */
    const char *user;         /* daemon mode: named in HELLO, whose token it is */
    const char *init_error; /* why there are no devices, for the one line on stderr */
    atomic_uint_fast64_t clock;     /* orders enqueues: vocl_tick */
    atomic_uint_fast64_t synced_at; /* when the last call that could see commands end began */
    long post_delay_us; /* VOCL_TEST_POST_DELAY_US: tests widen a race window (call.c;
                           only in a build with the tests: VOCL_TEST_HOOKS) */
    unsigned batch_max; /* VOCL_BATCH: requests a batch holds at most (0: no batching) */
    long batch_us;      /* VOCL_BATCH_US: how long a batch may wait for more */
    long migrate_wait_ms; /* VOCL_MIGRATE_WAIT_MS: how long a migration waits for the
                             application's threads to leave libvocl */
    int spares;           /* VOCL_SPARE: the last proxies, whose devices are not listed */
    bool failover;        /* VOCL_FAILOVER=spare-proxy: a dead proxy's session goes on on a spare */
    size_t failover_max;  /* VOCL_FAILOVER_LOG_MAX: bytes a proxy's log may hold */
    size_t failover_every; /* VOCL_FAILOVER_CHECKPOINT_MB: its growth between checkpoints */
};
extern struct vocl_state vocl;

/* init.c, for connect.c: a proxy added to vocl.proxies (at the start
 * only: the list is read without a lock), or one listed nowhere (a
 * failover's new daemon, failover.c); HELLO to it (0, or -1 with the
 * reason on stderr); MPI started (0, or -1 with init_error). */
struct vocl_proxy *vocl_proxy_new(int rank, bool local);
struct vocl_proxy *vocl_proxy_alloc(int rank, bool local);
/* A buffer this large on a daemon that limits its sessions' memory is
 * created with a reply waited for (memory.c). */
#define VOCL_LIMITED_CREATE_MIN ((size_t)16 << 20)
/* Where px's messages go (chan.h). */
static inline struct vocl_chan vocl_px_chan(const struct vocl_proxy *px)
{
    return (struct vocl_chan){.comm = px->comm, .rank = px->rank, .conn = px->conn};
}
/* Whether a and b reach each other directly: ranks of one job (daemons
 * reach each other through the client: relay.c). */
static inline bool vocl_px_same_job(const struct vocl_proxy *a, const struct vocl_proxy *b)
{
    return !a->conn && !b->conn && a->comm == b->comm;
}
int vocl_greet(struct vocl_proxy *px);
int vocl_open_mpi(void);
/* connect.c: daemon mode, where VOCL_CONNECT, VOCL_PROXIES or a proxies
 * file says where proxies are (true: it ran); vocl_connect_close frees
 * the proxies' communicators at the leave. */
bool vocl_connect_mode(void);
/* px's worker ended (its connection failed): how, asked of its daemon,
 * into how (n bytes); false when px had no worker or nothing is known.
 * Asked once; no lock held (a connection, VOCL_CONNECT_TIMEOUT at most). */
bool vocl_worker_fate(struct vocl_proxy *px, char *how, size_t n);
void vocl_connect_close(void);
/* A new session on the daemon at host:port (named name): a proxy listed
 * nowhere, greeted as a spare (its devices listed by none), for failover.c
 * to move a session to; NULL (a message said why) if it cannot be had. */
struct vocl_proxy *vocl_connect_again(const char *host, int port, const char *name);
/* The connection a session left for a new daemon (failover.c): closed by
 * vocl_connect_close, not now.  A thread may still hold one of its
 * requests, which live in its worker, and the leave must not race its
 * close.  (A worker per failover, until the leave.) */
void vocl_connect_retire(struct vocl_conn *c);

/* The next value of the enqueue clock (from 1). */
static inline uint64_t vocl_tick(void)
{
    return atomic_fetch_add(&vocl.clock, 1) + 1;
}
extern const struct _cl_icd_dispatch vocl_dispatch;

/* Sets everything up on the first call; 0, or an OpenCL error. */
cl_int vocl_init(void);
/* True on the thread that is inside vocl_init (MPI_Init may call back). */
bool vocl_initialising(void);

/* --- objects and the handle table (objects.c) ------------------------------------------------ */
struct vocl_obj *vocl_obj_new(enum vocl_type t, struct vocl_proxy *px, uint64_t id,
                              struct vocl_obj *context, struct vocl_obj *parent);
/* A live handle of type t, or NULL. */
struct vocl_obj *vocl_lookup(const void *h, enum vocl_type t);
/* The live object of type t that is id on px, held (vocl_obj_drop); NULL: none.
 * A walk over every handle: for rare events only. */
/* Calls the pfn_notify of the contexts a NOTIFY message (protocol.h) names. */
void vocl_context_notes(struct vocl_proxy *px, const void *payload, size_t size);
struct vocl_obj *vocl_find_on(const struct vocl_proxy *px, uint64_t id, enum vocl_type t);
void vocl_obj_hold(struct vocl_obj *o);
/* For a migration: the live objects on px (NULL: all) and what they hold
 * there (a context, a parent), held, oldest first; NULL when out of memory. */
struct vocl_obj **vocl_objs_on(const struct vocl_proxy *px, size_t *n);
/* o's handle is no more, and o is dropped, with no word to its proxy. */
void vocl_obj_forget(struct vocl_obj *o);
/* Held, no retain or release of any object is posted: a request posted
 * meanwhile that names an object the application holds (app_refs > 0)
 * reaches its proxy before the object's last release.  Taken after the
 * coherence lock, before a proxy's. */
void vocl_refs_lock(void);
void vocl_refs_unlock(void);
void vocl_obj_drop(struct vocl_obj *o);
cl_int vocl_retain(const void *h, enum vocl_type t);
cl_int vocl_release(const void *h, enum vocl_type t);
struct vocl_obj *vocl_ctx_of(struct vocl_obj *o);
/* Runs when an object is freed (destructor callbacks). */
struct vocl_dtor {
    struct vocl_dtor *next;
    void (*fn)(void *handle, void *user_data);
    void *user_data;
};

/* --- one call to a proxy (call.c) ----------------------------------------------------------------- */
struct vocl_call {
    cl_int err;
    struct vocl_proxy *px;
    struct vocl_wr *w;
    struct vocl_rd r;
    bool locked;
    uint32_t seq; /* the request's: its reply and its data's tag say it */
    struct vocl_wr reply; /* the reply, once it came (c->r reads it) */
    struct vocl_waiter waiter;
    bool waiting;  /* the waiter is on px's list */
    bool sending;  /* sreq: the request is still leaving */
    struct vocl_req sreq;
    unsigned op;   /* its opcode */
    struct vocl_wr out; /* a batch it took from its proxy, leaving with it (transport.c) */
    bool bsending;      /* breq: that batch leaves in a message before the request's */
    bool batched;       /* the request waits in its proxy's batch */
    struct vocl_req breq;
    unsigned epoch;  /* its proxy's when it was posted (failover.c) */
    uint64_t ticket; /* the proxy's last chunk ticket before this call's */
    uint64_t posted; /* and after them, once it left (vocl_call_wait) */
    uint64_t finish_tick; /* clFinish: when it began (vocl_tick) */
    uint64_t t_post;      /* when a request awaiting its reply was posted (vocl_now_ns) */
    size_t data_n;        /* bytes of its chunked transfer, if it has one */
    struct vocl_chunking cut; /* how its chunked transfer is cut (vocl_xfer_out, vocl_xfer_in) */
    bool async; /* set before vocl_call_start: no reply; errors are deferred */
    bool sync;  /* a synchronisation: the proxy's transfers complete with the reply */
    cl_uint wl_n; /* the wait list, for put_wl */
    const cl_event *wl;
    struct vocl_proxy *wl_px; /* its first event's proxy, read once by vocl_call_wl */
    uint64_t *xw;  /* more events of c->px to wait for (migrations): put_wl adds them */
    uint64_t *wl_ids; /* the wait list's ids, for a generated encoder (vocl_call_wl_ids) */
    uint64_t *ha_ids; /* a handle array's ids, for a generated encoder (vocl_call_ha_ids) */
    cl_uint nxw, capxw;
    struct vocl_arrival **held; /* arrivals among them, held until the call ends */
    cl_uint nheld, capheld;
    struct vocl_obj *queue;     /* the command's queue, if it has one */
    uint64_t *mirrors;          /* user events standing for events of other proxies */
    cl_uint nmirrors, capmirrors;
    struct vocl_obj *spread[4]; /* handles of objects with replicas, checked at start */
    cl_uint nspread;
    bool routed;   /* vocl_call_route has run */
    bool coherent; /* holds the coherence lock, from its first vocl_mem_use until posted */
    struct vocl_outgoing *outgoing; /* what its coherence decisions posted (coherence.c) */
    /* Writers it recorded (coherence.c): which replica, and when (their
     * event is noted once the command has one: vocl_writes_done). */
    struct vocl_rep *wrote[4];
    uint64_t wrote_at[4];
    cl_uint nwrote;
};

void vocl_call_init(struct vocl_call *c);
/* Validation and routing: errors stick in c->err (first one wins). */
struct vocl_obj *vocl_call_h(struct vocl_call *c, const void *h, enum vocl_type t, int nullable);
void vocl_call_ha(struct vocl_call *c, cl_uint n, const void *const *list, enum vocl_type t);
void vocl_call_wl(struct vocl_call *c, cl_uint n, const cl_event *list);
/* Before vocl_call_start of a command that takes its data from the
 * application's memory [p, p + n) as it is enqueued (a write): the data of
 * the non-blocking reads still to fill that memory lands first, holding
 * nothing (hostreads.c). */
void vocl_call_reads_host(struct vocl_call *c, const void *p, size_t n);
/* A non-blocking read posted: its last chunk's ticket, on queue's chunks,
 * fills [p, p + n) when it lands. */
void vocl_host_read_posted(struct vocl_proxy *px, const void *queue, uint64_t ticket,
                           const void *p, size_t n);
/* Rows of host memory: slices of rows of row_bytes from p, pitches apart. */
struct vocl_host_rows {
    const void *p;
    size_t row_bytes, rows, slices, row_pitch, slice_pitch;
};
/* A non-blocking write: its command type (WRITE_BUFFER: origin[0] is the
 * offset; WRITE_BUFFER_RECT: region in bytes, the buffer's pitches;
 * WRITE_IMAGE), where it writes and the host rows it sends. */
struct vocl_deferred_write {
    cl_command_type type;
    cl_mem dst;
    size_t origin[3], region[3], row_pitch, slice_pitch;
    struct vocl_host_rows rows;
};
/* A non-blocking write w of memory that a read is still to fill: enqueued
 * without waiting, its data sent once the read lands (false: no such read;
 * nothing done).  *ret: the write's result. */
bool vocl_write_deferred(struct vocl_obj *q, const struct vocl_deferred_write *w, cl_uint nwl,
                         const cl_event *wl, cl_event *event, cl_int *ret);
/* Whether list can be the wait list of a command of queue (NULL: any). */
cl_int vocl_wl_check(const struct vocl_obj *queue, cl_uint n, const cl_event *list);
void vocl_call_error(struct vocl_call *c, cl_int err);
/* A device list of a call to every proxy of ctx (NULL: any device): checked
 * here, and each proxy gets the devices it has (in its message). */
void vocl_call_devs(struct vocl_call *c, const struct vocl_obj *ctx, cl_uint n,
                    const cl_device_id *list);
/* How many of the handles in list live on px. */
cl_uint vocl_count_on(const struct vocl_proxy *px, cl_uint n, const void *const *list);
/* Picks the call's proxy and waits for the events of other proxies that
 * it cannot wait for there (once; vocl_call_start does it if not done). */
int vocl_call_route(struct vocl_call *c);
/* Routes, takes the proxy and starts the message. */
int vocl_call_start(struct vocl_call *c, unsigned op);
/* The ids of a wait list on c's proxy, for a generated encoder (owned by c). */
struct vocl_ids vocl_call_wl_ids(struct vocl_call *c, cl_uint n, const cl_event *list);
/* The ids of a handle array on c's proxy, likewise. */
struct vocl_ids vocl_call_ha_ids(struct vocl_call *c, cl_uint n, const void *const *list);
/* n (at most 3) sizes at v, for a va3 field (NULL: none). */
static inline struct vocl_va3 vocl_va_of(const size_t *v, unsigned n)
{
    struct vocl_va3 a = {.present = v != NULL};
    for (unsigned i = 0; v && i < n && i < 3; i++)
        a.v[i] = v[i];
    return a;
}
/* Three sizes (origins, regions). */
static inline struct vocl_va3 vocl_va3_of(const size_t *v)
{
    return vocl_va_of(v, 3);
}
/* A property list as a props field carries it, in buf (VOCL_PROPS_MAX). */
#define VOCL_PROPS_MAX 257
struct vocl_ids vocl_props_ids(const void *props, uint64_t buf[VOCL_PROPS_MAX]);
uint64_t vocl_call_new_id(struct vocl_call *c);
/* Sends the request and waits for the reply; nonzero when c->err is set. */
int vocl_call_send(struct vocl_call *c);
/* The two halves, for calls that move bulk data in between. */
int vocl_call_post(struct vocl_call *c);
int vocl_call_wait(struct vocl_call *c);
/* Posts the request and lets the proxy go, once it has left: the reply is
 * awaited by polling vocl_call_ready, then taken with vocl_call_wait. */
int vocl_call_post_away(struct vocl_call *c);
/* The same without waiting for the request to leave: vocl_call_end waits
 * (the request's buffer must stay until then). */
int vocl_call_post_only(struct vocl_call *c);
/* Whether c's reply came (or its proxy is gone): vocl_call_wait then
 * returns at once.  Never waits; lw: c's proxy's liveness, begun at post. */
bool vocl_call_ready(struct vocl_call *c, struct vocl_live *lw);
void vocl_call_get_info(struct vocl_call *c, size_t size, void *value, size_t *size_ret);
/* The same, from a decoded reply: its size n and its value b. */
void vocl_call_info(struct vocl_call *c, size_t size, void *value, size_t *size_ret, uint64_t n,
                    const struct vocl_bytes *b);
/* vocl_call_get_info, and the answer kept with o as op's param (info.c), asked in generation gen. */
void vocl_call_get_info_kept(struct vocl_call *c, struct vocl_obj *o, unsigned op, uint64_t param,
                             uint32_t gen, size_t size, void *value, size_t *size_ret);
struct vocl_obj *vocl_call_new_obj(struct vocl_call *c, enum vocl_type t, uint64_t id,
                                   struct vocl_obj *context, struct vocl_obj *parent);
/* The event a command on queue returned. */
struct vocl_obj *vocl_call_new_event(struct vocl_call *c, uint64_t id, struct vocl_obj *queue);
void vocl_call_end(struct vocl_call *c);
/* Copies an info value the client knows into the caller's buffers. */
cl_int vocl_info_answer(const void *src, size_t n, size_t size, void *value, size_t *size_ret);

/* info.c: answers to questions about o that cannot change, kept with o.
 * vocl_info_cached answers one from there (true, *err set) or gives the
 * generation that the reply's vocl_info_keep must come with; key tells
 * apart the answers for another device or argument.  vocl_info_forget
 * drops o's answers (o changed: a build), and those on their way. */
bool vocl_info_cached(struct vocl_obj *o, unsigned op, uint64_t param, uint64_t key, size_t size,
                      void *value, size_t *size_ret, cl_int *err, uint32_t *gen);
void vocl_info_keep(struct vocl_obj *o, unsigned op, uint64_t param, uint64_t key, uint32_t gen,
                    uint64_t n, const struct vocl_bytes *v);
/* An answer known without asking (at o's creation): kept as if asked. */
void vocl_info_know(struct vocl_obj *o, unsigned op, uint64_t param, const void *v, size_t n);
/* e (NULL: none) says it is a command of type t, whatever ran for it. */
void vocl_event_says(struct vocl_obj *e, cl_command_type t);
void vocl_info_forget(struct vocl_obj *o);

/* --- replicas (replica.c), coherence (coherence.c), event mirrors (mirror.c) -------------------
 */
/* Whether o exists on px (an object of one proxy: px is its proxy). */
bool vocl_on(const struct vocl_obj *o, const struct vocl_proxy *px);
/* o's id on px (0: none). */
uint64_t vocl_id_on(const struct vocl_obj *o, const struct vocl_proxy *px);
/* How many proxies o lives in (1 for an object of one proxy), and the i-th. */
cl_uint vocl_nreps(const struct vocl_obj *o);
struct vocl_proxy *vocl_rep_px(const struct vocl_obj *o, cl_uint i);
/*
 * For calls that go to every proxy of an object (creates in a context,
 * builds, user-event status): true while there is a replica i to do, with
 * c->px set to its proxy (the previous one's exchange ended).
 */
bool vocl_call_each(struct vocl_call *c, const struct vocl_obj *o, cl_uint i);
/* Records that the object made by replica i of a broadcast call has id there:
 * the first makes *made, the others add to it.  Returns *made, or NULL. */
struct vocl_obj *vocl_call_made(struct vocl_call *c, struct vocl_obj **made, cl_uint i, cl_uint n,
                                enum vocl_type t, uint64_t id, struct vocl_obj *context,
                                struct vocl_obj *parent);
/* How a command uses a memory object, for coherence across proxies. */
enum vocl_use { VOCL_USE_R, VOCL_USE_RW, VOCL_USE_W /* overwrites all of it */ };
/*
 * Before a command on c->px that uses m: brings the latest data to c->px
 * (proxy to proxy) unless it is there or the command overwrites it all,
 * notes where the latest data will be, and adds the migration's event to
 * the command's wait list.  Call before vocl_call_start.
 */
void vocl_mem_use(struct vocl_call *c, struct vocl_obj *m, enum vocl_use use);
/* c's request has its place among its proxy's (or c failed): the coherence
 * decisions it made are others' to change again. */
void vocl_coherence_posted(struct vocl_call *c);
/* Waits until the requests c's decisions posted have left (no lock held). */
void vocl_coherence_sent(struct vocl_call *c);
/* c's command, which wrote replicas (vocl_mem_use), has the event ev on
 * queue: a move out of them may wait for ev instead of the whole queue.
 * Takes the coherence lock: call once c has been posted. */
void vocl_writes_done(struct vocl_call *c, struct vocl_obj *ev, struct vocl_obj *queue);
/* The host access flags (CL_MEM_HOST_*) are libvocl's to check: the
 * proxies' buffers and every image are made without them, since libvocl's
 * own shadows (maps) and migrations read and write them.  So a transfer or
 * map that m's flags forbid (read: the host reads it; write: writes it)
 * gets CL_INVALID_OPERATION at once, as from a driver.  The transfers of
 * libvocl's own map shadows are not checked (the map itself was). */
#define VOCL_HOST_ACCESS (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS)
bool vocl_host_forbids(const struct vocl_obj *m, bool read, bool write);
/* An image read or write (image.c); host: the application's own, which the
 * host access flags govern (false: a map's shadow). */
cl_int vocl_image_rw(bool write, bool host, cl_command_queue command_queue, cl_mem image,
                     cl_bool blocking, const size_t *origin, const size_t *region,
                     size_t row_pitch, size_t slice_pitch, void *ptr, cl_uint nwl,
                     const cl_event *wl, cl_event *event);
/* Records id on px as o's replica i of n (the table is made on the first). */
int vocl_obj_add_rep(struct vocl_obj *o, cl_uint i, cl_uint n, struct vocl_proxy *px, uint64_t id);
/* The index of o's replica on px (nreps when none; 0 for an object of one proxy). */
cl_uint vocl_rep_index(const struct vocl_obj *o, const struct vocl_proxy *px);
void vocl_reps_free(struct vocl_obj *o);
/* Whether o has a replica slot on px (an object of one proxy: px is its
 * proxy), even one where it was not made (id 0). */
bool vocl_names(const struct vocl_obj *o, const struct vocl_proxy *px);
/* For a migration: o's replica on from is id on to from now on, with no
 * history (its writers, arrival and twin were the source's); o's own
 * proxy and id too, for an object of one proxy or the first replica. */
void vocl_rep_move(struct vocl_obj *o, struct vocl_proxy *from, struct vocl_proxy *to,
                   uint64_t id);
/* For a migration: all of memory object from_id on from copied into to_id
 * on to, directly between the two proxies (MIGRATE_OUT / MIGRATE_IN), with
 * nothing to wait for first; *event: the event on to that the copy
 * completes (the caller releases it).  CL_INVALID_OPERATION where they
 * share no communicator (daemons). */
cl_int vocl_copy_across(struct vocl_proxy *from, uint64_t from_id, struct vocl_proxy *to,
                        uint64_t to_id, uint64_t *event);
/* For a command on c->px waiting for an event of another proxy: adds to
 * c's wait list a user event of c->px that a thread sets when the event
 * completes.  0, or -1 when the caller must wait for the event itself. */
int vocl_event_mirror(struct vocl_call *c, cl_event event);
/* Releases them (the command holds them now): vocl_call_end does. */
void vocl_call_release_mirrors(struct vocl_call *c);
/* Drops the arrivals the call held (vocl_call_end). */
void vocl_call_drop_arrivals(struct vocl_call *c);
/* Lets replica r's coherence state go (its writers, twin and arrivals):
 * it moves, or its object goes. */
void vocl_rep_clear(struct vocl_rep *r);
/* Posts to px a request of no reply that fill fills: at once, or, while
 * this thread's command holds the coherence lock, among what the command
 * waits to have left (vocl_coherence_sent). */
cl_int vocl_post_async(struct vocl_proxy *px, unsigned op,
                       void (*fill)(struct vocl_call *, const void *), const void *arg);
/* Releases id on px (an object the application never saw), without waiting. */
void vocl_release_id(struct vocl_proxy *px, uint64_t id);
/* c's command waits for the event id of its proxy too. */
void vocl_call_add_wait(struct vocl_call *c, uint64_t id);
/* Appends id to the growing array *v of *n (room for *cap); false: no memory. */
bool vocl_ids_push(uint64_t **v, cl_uint *n, cl_uint *cap, uint64_t id);

/* --- exchanges between two proxies (peer.c) ------------------------------------------------------
 */
/* The tag of the next exchange between two proxies on this client's behalf. */
int vocl_peer_tag(void);
/* The peers each side of an exchange from `from` to `to` names (VOCL_PEER_CLIENT:
 * this process, which relays between them: true then). */
bool vocl_peer_route(const struct vocl_proxy *from, const struct vocl_proxy *to, uint32_t *peer_out,
                     uint32_t *peer_in);

/* --- live migration (migrate.c, control.c) ------------------------------------------------------ */
struct vocl_migration {
    size_t objects;    /* moved */
    uint64_t bytes;    /* of buffers, copied */
    uint64_t total_ns; /* all of it */
    uint64_t pause_ns; /* the application's threads kept out */
    uint64_t copy_ns;  /* of the pause: the buffers' bytes */
};
/* Moves everything the application has on from to to, while it runs; 0,
 * or -1 with the reason in why (and nothing changed), or 1: from died
 * meanwhile and its session went on on to by failover (why says so). */
int vocl_migrate(struct vocl_proxy *from, struct vocl_proxy *to, struct vocl_migration *st,
                 char *why, size_t whylen);
/* Starts the thread that takes vocl-ctl's requests (VOCL_CTL, control.c),
 * and ends it (removes its socket) at the leave. */
void vocl_control_start(void);
void vocl_control_stop(void);

/* --- failover (failover.c)
 * ------------------------------------------------------------------------ */
/* Reads VOCL_FAILOVER and VOCL_FAILOVER_LOG_MAX (vocl_init). */
void vocl_failover_setup(void);
/* px is a proxy whose requests are kept: starts its log (after HELLO). */
void vocl_failover_watch(struct vocl_proxy *px);
/* Under px->lock: c's request, and the n bytes of its transfer at buf (out:
 * written, first chunk's ticket unused; in: read, landing at buf from
 * ticket), join px's log.  False: they are not in it (a request that must
 * be may not go while the replay runs). */
bool vocl_flog_request(struct vocl_proxy *px, const struct vocl_call *c);
bool vocl_flog_chunks(struct vocl_proxy *px, const struct vocl_call *c, void *buf, size_t n,
                      bool out, uint64_t ticket);
/* Under px->lock, px just found dead: true when its session goes on on a
 * spare (the replay began); false: it is lost. */
bool vocl_failover_locked(struct vocl_proxy *px, const char *what);
/* After a clFinish or blocking transfer on px, holding nothing: the log starts again from px's
 * state, if it grew enough since the last time and no other thread is in. */
void vocl_failover_checkpoint(struct vocl_proxy *px);
/* Waits, holding nothing, until px's replay (if any) has sent everything. */
void vocl_failover_settle(struct vocl_proxy *px);
/* Whether px's requests are kept (a migration from it then copies through
 * this process, so that they stay so). */
bool vocl_failover_kept(struct vocl_proxy *px);
/* A migration from px to `to` begins (gate shut, holding nothing): should
 * px die before it ends, its session goes on on `to`, if `to` is a spare
 * nobody used yet.  vocl_failover_migrated, at its end (moved: the objects
 * are on `to`): whether px died meanwhile and its session went on on `to`. */
void vocl_failover_migrating(struct vocl_proxy *px, struct vocl_proxy *to);
bool vocl_failover_migrated(struct vocl_proxy *px, struct vocl_proxy *to, bool moved);
/* Under px->lock: px died amid a migration from it, and this thread is the
 * migration's: its calls to px fail (those of others wait on). */
bool vocl_failover_refuses(const struct vocl_proxy *px);
/* Whether px's session is held (its daemon died: it waits for a new one,
 * or for a migration's end): what was sent and failed goes with its log.
 * holding_locked: under px->lock. */
bool vocl_failover_holding(struct vocl_proxy *px);
bool vocl_failover_holding_locked(const struct vocl_proxy *px);

/* --- transport (transport.c) ---------------------------------------------------------------------- */
/* Serves px in-process with session s. */
void vocl_xport_local(struct vocl_proxy *px, struct exec_session *s);
/* Posts c's request (and its waiter, unless async); under px->lock. */
int vocl_xport_post(struct vocl_call *c);
/* Waits, holding nothing, for c's request to leave and its reply to come
 * (into c->reply, read by c->r); -1 when the proxy is gone. */
int vocl_xport_wait_reply(struct vocl_call *c);
/* The first half: waits for the request to leave; -1 when the proxy is gone. */
int vocl_xport_sent(struct vocl_call *c);
/* Writes to stdout what kernels printed on the proxies since the last
 * time, holding nothing (clFinish, clWaitForEvents, exit). */
void vocl_output_write(void);
/* Sends px's batch of requests now, if it has one; holding nothing. */
void vocl_xport_flush(struct vocl_proxy *px);
/* Stops the thread that sends batches that waited, and sends what is left. */
void vocl_xport_stop(void);
/* One look, holding nothing: whether the reply came or the proxy is gone. */
bool vocl_xport_test_reply(struct vocl_call *c, struct vocl_live *lw);
/* One pass of progress on px (replies to their waiters, done chunks), from
 * a thread that holds nothing. */
void vocl_xport_progress(struct vocl_proxy *px);
/* Post the chunks of c's transfer (px->chunk each) on the pending list; under px->lock. */
int vocl_xport_send_data(struct vocl_call *c, const void *buf, size_t n);
int vocl_xport_recv_data(struct vocl_call *c, void *buf, size_t n);
/* Waits, holding nothing, for the chunks with tickets in (lo, hi] and those
 * of queue (if not NULL) up to hi; a failed read's error, or CL_SUCCESS. */
cl_int vocl_xport_land(struct vocl_proxy *px, const void *queue, uint64_t lo, uint64_t hi);
/* The context notifications px sent unasked (in-process: posted) since,
 * to their contexts' pfn_notify; holding nothing. */
void vocl_xport_notes(struct vocl_proxy *px);
/* The ticket of the last chunk posted. */
uint64_t vocl_xport_ticket(struct vocl_proxy *px);
/* Raises *t to v: threads may record tickets (or ticks) of one queue at once. */
static inline void vocl_raise(atomic_uint_fast64_t *t, uint64_t v)
{
    uint_fast64_t cur = atomic_load_explicit(t, memory_order_relaxed);
    while (cur < v && !atomic_compare_exchange_weak(t, &cur, v))
        ;
}
/* A non-blocking read's event: whether its data is still on the way (reaps). */
bool vocl_event_data_pending(struct vocl_obj *e);
/* ctx has a pfn_notify (delta 1), or has gone (-1): the callbacks thread
 * looks for the notifications its proxies send unasked (event.c). */
void vocl_notes_watch(const struct vocl_obj *ctx, int delta);
/* Waits for a non-blocking read's data to land. */
cl_int vocl_event_data_wait(struct vocl_obj *e);
/* Lands the data of queue's non-blocking reads up to ticket (0: none), if
 * any is still on the way; the batch is flushed only then. */
cl_int vocl_xport_landed(struct vocl_proxy *px, const void *queue, uint64_t ticket);
/* e's command is known to be complete: e says CL_COMPLETE from now on,
 * without asking its proxy (whose driver may say so a moment later). */
void vocl_event_known_complete(struct vocl_obj *e);
/* e is a non-blocking read's own event (struct vocl_event, lands). */
void vocl_event_lands(struct vocl_obj *e);
void vocl_xport_fail(struct vocl_proxy *px, const char *what);
/* Maps the memfd fd of process pid (a proxy of this node), if it is the one
 * named for token (vocl_shm_name) and has size bytes; NULL otherwise. */
void *vocl_map_memfd(long pid, unsigned fd, uint64_t size, uint64_t token);
/* Under px->lock: everything posted to px is given up, a reply cut short
 * too (reads not landed: their tickets, in *inflight, *n, malloc'd, when
 * inflight is not NULL). */
void vocl_xport_drop_pending(struct vocl_proxy *px, uint64_t **inflight, size_t *n);
/* Under px->lock, for a failover: n bytes sent to (or received from, into
 * dst, or into scratch when dst is NULL) px's rank on tag, pending with
 * ticket and queue; 0, or -1. */
int vocl_xport_isend(struct vocl_proxy *px, const void *buf, size_t n, int tag);
int vocl_xport_irecv(struct vocl_proxy *px, void *dst, size_t n, int tag, uint64_t ticket,
                     const void *queue);
/* Between polls of a wait on px (lw: vocl_live_begin with px->live): false
 * once the proxy is known dead. */
bool vocl_xport_alive(struct vocl_proxy *px, struct vocl_live *lw);

/* --- between two daemons, through this process (relay.c)
 * ------------------------------------------ */
/* What a relay carries, as the executor sends it (ops_migrate.c, ops_link.c): all of a memory
 * object (size bytes, in chunks), a diff (its length, then that many bytes in chunks), an event's
 * final status (one message). */
enum vocl_relay_kind { VOCL_RELAY_WHOLE, VOCL_RELAY_DIFF, VOCL_RELAY_EVENT };
/* Forwards what `from` sends on the peer tag to `to`, until it is through;
 * both requests name VOCL_PEER_CLIENT as their peer. */
cl_int vocl_relay(struct vocl_proxy *from, struct vocl_proxy *to, int tag,
                  enum vocl_relay_kind kind, uint64_t size, size_t chunk);
/* At exit: the thread ends, and what is under way is given up. */
void vocl_relay_stop(void);

/* --- bulk data of transfers (memory.c) ------------------------------------------------------------ */
/* The data field of a message (vocl_msg.h) for n bytes from p (out), or
 * to p (in). */
struct vocl_data vocl_xfer_out(struct vocl_call *c, const void *p, size_t n);
struct vocl_data vocl_xfer_in(struct vocl_call *c, void *p, size_t n);
int vocl_xfer_send(struct vocl_call *c, const void *p, size_t n);
/* The end of a buffer's or image's creation on replica rep of ctx
 * (memory.c), its request (data and new id included) encoded: sends it and
 * its size bytes of data (host data goes to the first replica only); then
 * the object is made there, and host data makes that replica the only
 * valid copy. */
void vocl_mem_create_sent(struct vocl_call *c, struct vocl_obj **m, cl_uint rep,
                          struct vocl_obj *ctx, struct vocl_obj *parent, const void *data,
                          size_t size, bool host_data, uint64_t id);
int vocl_xfer_recv(struct vocl_call *c, void *p, size_t n);

/* A host shadow of a mapped region (remote buffers; images everywhere). */
struct vocl_mapping {
    struct vocl_mapping *next;
    void *ptr;
    bool owned; /* the shadow was allocated for the map (not a USE_HOST_PTR pointer) */
    /* A map of memory a proxy of this node shares (no shadow): alias is the
     * map's own view of it (munmapped at unmap: the buffer may move, and
     * its memory go, while mapped), shared the buffer's view then. */
    void *alias, *shared;
    bool image;
    cl_map_flags flags;
    size_t offset, size;                  /* buffers */
    size_t origin[3], region[3];          /* images */
    size_t row_pitch, slice_pitch;
    /* A non-blocking map of a remote object: its read lands with the chunks
     * of queue (a key, not held) up to ticket, on px; 0: it has landed. */
    uint64_t ticket;
    const void *queue;
    struct vocl_proxy *px;
};
void vocl_mapping_add(struct vocl_mem *m, struct vocl_mapping *mp);
/* A non-blocking map's read (vocl_mapping): the ticket it lands with, or 0
 * where the map blocked or the queue is served in-process. */
void vocl_mapping_pending(struct vocl_mapping *mp, cl_bool blocking, cl_command_queue queue);

void vocl_warn_once_unsupported(const char *fn);
void vocl_kargs_free(struct vocl_kargs *k);
/* Kernel k's replica on px has none of its arguments: the next launch there
 * sends them all (launch.c; a failover's checkpoint drops the launches
 * that set them). */
void vocl_kargs_forget(struct vocl_obj *k, const struct vocl_proxy *px);
void vocl_mappings_free(struct vocl_mem *m);

#endif
