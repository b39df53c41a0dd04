/*
 * exec.c - the executor core: requests decoded defensively and run on the
 * native OpenCL library, each in its client's session (session.c).
 *
 * Nothing a client sends is trusted.  Decoders read every field through the
 * sticky-failure reader, look every id up in the session's own table (so ids
 * of other clients do not exist here), check every size against the message,
 * and only then call the native library.  A bad request gets an error reply;
 * the session goes on.
 */
#include "internal.h"

#include <pwd.h>
#include "shm.h"

#include "backoff.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- decoding helpers ---------------------------------------------------------------------- */

void exec_fail(struct exec_req *q, const char *why)
{
    if (!q->fail)
        q->fail = why;
}

static void set_err(struct exec_req *q, cl_int err)
{
    if (q->err == CL_SUCCESS)
        q->err = err;
}

/* A scratch block: a copy of a string or an array of the request.  There
 * may be many (a compile's header names), but never much more than the
 * message itself: each one costs the block's header on top of its size. */
struct exec_tmp {
    struct exec_tmp *next;
    max_align_t data[];
};

void *exec_tmp(struct exec_req *q, size_t n)
{
    size_t cost = sizeof(struct exec_tmp) + (n ? n : 1);
    if (n > VOCL_MSG_MAX || q->tmp_bytes + cost > 2 * (size_t)VOCL_MSG_MAX) {
        exec_fail(q, "scratch space exhausted");
        return NULL;
    }
    struct exec_tmp *t = calloc(1, cost);
    if (!t) {
        set_err(q, CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    t->next = q->tmp;
    q->tmp = t;
    q->tmp_bytes += cost;
    return t->data;
}

/* (A decoder leaves the fields after a truncation 0: no lookup for them.) */
void *exec_h(struct exec_req *q, uint64_t id, enum vocl_type t, int nullable)
{
    if (id == 0) {
        if (!nullable)
            set_err(q, vocl_type_invalid_err(t));
        return NULL;
    }
    struct exec_obj *o = exec_lookup(q->s, id, t);
    if (!o) {
        vocl_debug("rank %d: %s: no %s with id %#llx in this session", q->s->peer,
                   vocl_op_name(q->op), vocl_type_name(t), (unsigned long long)id);
        set_err(q, vocl_type_invalid_err(t));
        return NULL;
    }
    if (!q->queue && (t == VOCL_T_QUEUE || t == VOCL_T_CONTEXT)) {
        q->queue = o->native;
        q->queue_type = t;
        q->queue_obj = t == VOCL_T_QUEUE ? o : NULL;
    }
    return o->native;
}

void *exec_rd_h(struct exec_req *q, enum vocl_type t, int nullable)
{
    uint64_t id = vocl_rd_u64(q->r);
    if (q->r->fail)
        return NULL;
    return exec_h(q, id, t, nullable);
}

const void *exec_ha(struct exec_req *q, enum vocl_type t, const struct vocl_ids *ids,
                    cl_uint *count)
{
    uint32_t n = ids->n;
    *count = 0;
    if (n == 0)
        return NULL;
    void **arr = exec_tmp(q, n * sizeof(void *));
    if (!arr)
        return NULL;
    for (uint32_t i = 0; i < n; i++) {
        struct exec_obj *o = exec_lookup(q->s, vocl_ids_at(ids, i), t);
        arr[i] = o ? o->native : NULL;
        if (!o)
            set_err(q, t == VOCL_T_EVENT ? CL_INVALID_EVENT_WAIT_LIST : vocl_type_invalid_err(t));
    }
    *count = n;
    return arr;
}

const size_t *exec_va3(struct exec_req *q, const struct vocl_va3 *a)
{
    if (!a->present)
        return NULL;
    size_t *arr = exec_tmp(q, 3 * sizeof(size_t));
    for (int i = 0; arr && i < 3; i++)
        arr[i] = (size_t)a->v[i];
    return arr;
}

/* A string, returned NUL-terminated in scratch space; NULL stays NULL. */
const char *exec_str(struct exec_req *q, const struct vocl_str *s)
{
    if (s->null || !s->p)
        return NULL;
    char *copy = exec_tmp(q, s->len + 1);
    if (!copy)
        return NULL;
    memcpy(copy, s->p, s->len);
    copy[s->len] = '\0';
    return copy;
}

/*
 * A property list: u32 count of 64-bit values (0: NULL), the last one 0.
 * Two more zeros follow it in memory: a driver walks a list by (name,
 * value) pairs (or a partition's counts, then its 0), and must stop inside
 * it even where the client's 0 is a value, or the request is cut short.
 */
const void *exec_props(struct exec_req *q, const struct vocl_ids *list)
{
    uint32_t n = list->n;
    if (n == 0)
        return NULL;
    if (n > 256) {
        exec_fail(q, "property list too long");
        return NULL;
    }
    uint64_t *p = exec_tmp(q, (n + 2) * sizeof(uint64_t));
    if (!p)
        return NULL;
    for (uint32_t i = 0; i < n; i++)
        p[i] = vocl_ids_at(list, i);
    if (p[n - 1] != 0)
        exec_fail(q, "property list not terminated");
    return p;
}

/* An id for an object the request creates: 0 (none) or unused and in range. */
uint64_t exec_newid(struct exec_req *q, uint64_t id)
{
    if (id == 0)
        return 0;
    if (id < VOCL_ID_CLIENT_MIN || id == VOCL_MAP_TOMB || vocl_map_get(&q->s->objs, id)) {
        exec_fail(q, "new object id out of range or in use");
        return 0;
    }
    return id;
}

uint64_t exec_newobj(struct exec_req *q, uint64_t id)
{
    id = exec_newid(q, id);
    if (!id)
        exec_fail(q, "a create without an id for the new object");
    return id;
}

/* Ids (at most max) for objects the call may make. */
const uint64_t *exec_newids(struct exec_req *q, const struct vocl_ids *list, uint32_t *count,
                            uint32_t max)
{
    uint32_t n = list->n;
    *count = 0;
    if (n == 0)
        return NULL;
    if (n > max) {
        exec_fail(q, "too many new objects in one request");
        return NULL;
    }
    uint64_t *ids = exec_tmp(q, n * sizeof(*ids));
    /* Each unused, and none twice: the object table would keep only one. */
    struct vocl_map seen;
    vocl_map_init(&seen);
    for (uint32_t i = 0; ids && i < n; i++) {
        ids[i] = exec_newid(q, vocl_ids_at(list, i));
        if (ids[i] && (vocl_map_get(&seen, ids[i]) || vocl_map_put(&seen, ids[i], &ids[i])))
            exec_fail(q, "a new object id given twice");
    }
    vocl_map_free(&seen);
    *count = ids ? n : 0;
    return ids;
}

/*
 * A batch's commands start together.  A driver starts a command on an idle
 * queue as it is enqueued: a batch of a write, a launch and a read would
 * wake the device's threads three times, and on a CPU device each wake-up
 * takes this thread's core, so that the next command finds the queue idle
 * again.  So, while more commands of the batch follow, the first command
 * the batch enqueues on an in-order queue goes behind a barrier on a user
 * event that is set once the batch has run (exec_gates_open), or before a
 * flush or a request that wants a reply (which may look at its commands
 * here: complete.c).  Nothing else on this thread waits for a command but
 * a read chunk with no memory to queue it, which opens the gates first
 * (stream.c): a gate cannot hold up its own opener.  Where a gate cannot
 * be made, the commands run as they come.
 */
/* Whether op is a command a queue runs (clEnqueue...). */
static bool is_command(unsigned op)
{
    return strncmp(vocl_op_name(op), "clEnqueue", 9) == 0;
}

static void gate_queue(struct exec_req *q)
{
    struct exec_session *s = q->s;
    if (!s->gating || q->queue_type != VOCL_T_QUEUE || !q->queue || !is_command(q->op) ||
        s->ngates == sizeof(s->gates) / sizeof(s->gates[0]))
        return;
    for (unsigned i = 0; i < s->ngates; i++)
        if (s->gates[i].queue == q->queue)
            return;
    /* (On an out-of-order queue the barrier would also hold the batch's
     * commands behind every earlier one: those run as they come.) */
    cl_command_queue_properties props;
    cl_context ctx;
    if (q->cl->clGetCommandQueueInfo(q->queue, CL_QUEUE_PROPERTIES, sizeof(props), &props, NULL) ||
        props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE ||
        q->cl->clGetCommandQueueInfo(q->queue, CL_QUEUE_CONTEXT, sizeof(ctx), &ctx, NULL))
        return;
    cl_event gate = q->cl->clCreateUserEvent(ctx, NULL);
    if (!gate)
        return;
    if (q->cl->clEnqueueBarrierWithWaitList(q->queue, 1, &gate, NULL) != CL_SUCCESS) {
        q->cl->clReleaseEvent(gate);
        return;
    }
    s->gates[s->ngates].queue = q->queue;
    s->gates[s->ngates++].ev = gate;
}

/* Whether the batch's next request, at p, is a command that starts later. */
static bool command_follows(const uint8_t *p, const uint8_t *end)
{
    struct vocl_msg_hdr next;
    const uint8_t *msg;
    return vocl_batch_next(&p, end, &next, &msg) && is_command(next.opcode) &&
           !(next.flags & VOCL_F_REPLY);
}

void exec_gates_open(struct exec_session *s)
{
    const struct vocl_native_api *cl = s->node->cl;
    for (unsigned i = 0; i < s->ngates; i++) {
        cl->clSetUserEventStatus(s->gates[i].ev, CL_COMPLETE);
        cl->clReleaseEvent(s->gates[i].ev);
    }
    s->ngates = 0;
}

int exec_req_begin(struct exec_req *q)
{
    if (q->r->fail)
        exec_fail(q, "truncated request");
    else if (q->r->p != q->r->end)
        exec_fail(q, "trailing bytes in request");
    if (q->fail) {
        vocl_warn("client %d: rejected %s: %s", q->s->who, vocl_op_name(q->op), q->fail);
        vocl_wr_i32(q->w, CL_INVALID_VALUE);
        return 0;
    }
    if (q->err != CL_SUCCESS) {
        vocl_wr_i32(q->w, q->err);
        return 0;
    }
    gate_queue(q);
    return 1;
}

cl_int exec_put_new(struct exec_req *q, uint64_t id, enum vocl_type t, void *native)
{
    cl_int rc = exec_add_obj(q->s, id, t, native, 1);
    if (rc != CL_SUCCESS)
        exec_release_native(q->cl, t, native); /* the client treats the id as failed */
    return rc;
}

void exec_reply_made(struct exec_req *q, uint64_t id, enum vocl_type t, void *made, cl_int err)
{
    vocl_wr_i32(q->w, made ? exec_put_new(q, id, t, made) : err);
}

void exec_put_event(struct exec_req *q, cl_int rc, uint64_t ev_id, cl_event ev)
{
    if (rc == CL_SUCCESS && ev_id)
        exec_put_new(q, ev_id, VOCL_T_EVENT, ev);
}

void exec_put_info(struct exec_req *q, cl_int rc, const void *value, size_t size, size_t size_ret)
{
    if (rc != CL_SUCCESS)
        return;
    vocl_wr_u64(q->w, size_ret);
    vocl_wr_bytes(q->w, value, value ? (size_ret < size ? size_ret : size) : 0);
}

/* --- protocol messages ------------------------------------------------------------------------- */

/* The user and host a HELLO names, into s (for logs and vocl-smi), where
 * the name is one (token.h). */
static void note_user(struct exec_session *s, const struct vocl_msg_HELLO_req *m)
{
    if (!(m->flags & VOCL_HELLO_USER) || !vocl_user_name_ok(m->user.p, m->user.len))
        return;
    snprintf(s->user, sizeof(s->user), "%.*s", (int)m->user.len, m->user.p);
    size_t n = m->host.len < sizeof(s->host) ? m->host.len : sizeof(s->host) - 1;
    for (size_t i = 0; i < n; i++) /* (printable only) */
        s->host[i] = isgraph((unsigned char)m->host.p[i]) ? m->host.p[i] : '?';
    s->host[n] = 0;
}

void exec_session_who(const struct exec_session *s, char *out, size_t n)
{
    int k = snprintf(out, n, "user %s", *s->user ? s->user : "(none)");
    if (s->uid >= 0 && k > 0 && (size_t)k < n)
        k += snprintf(out + k, n - (size_t)k, ", uid %ld", s->uid);
    if (k > 0 && (size_t)k < n)
        snprintf(out + k, n - (size_t)k, ", host %s, process %ld", *s->host ? s->host : "?",
                 s->pid);
}

/* Why a HELLO is refused (NULL: it is not), and under which count (*kind):
 * in daemon mode its token must be the proxy's, or with --users that of
 * the user it names (note_user). */
static const char *refusal(const struct exec_session *s, const struct vocl_msg_HELLO_req *m,
                           enum exec_refusal *kind)
{
    const struct exec_node *node = s->node;
    *kind = EXEC_REFUSED_DRAINED;
    if (atomic_load(&node->drained))
        return "the proxy is drained";
    *kind = EXEC_REFUSED_USER;
    /* Where the node knows who the client really is, it is who it says. */
    if (s->uid >= 0 && *s->user) {
        struct passwd pw, *found = NULL;
        char buf[1024];
        if (getpwuid_r((uid_t)s->uid, &pw, buf, sizeof(buf), &found) || !found ||
            strcmp(found->pw_name, s->user))
            return "a user name not its own";
    }
    *kind = EXEC_REFUSED_TOKEN;
    const uint8_t *token = m->flags & VOCL_HELLO_TOKEN ? m->token.p : NULL;
    size_t len = token ? m->token.len : 0;
    if (node->users) {
        struct vocl_token mine;
        char why[128];
        if (!*s->user)
            return "no user name";
        if (vocl_token_of_user(&mine, node->users, s->user, strlen(s->user), why, sizeof(why))) {
            vocl_warn("client %d: user %s: token file %s: %s", s->who, s->user, mine.path, why);
            return "no token for its user";
        }
        return vocl_token_equal(&mine, token, len) ? NULL : token ? "a wrong token" : "no token";
    }
    if (node->token && !vocl_token_equal(node->token, token, len))
        return token ? "a wrong token" : "no token";
    return NULL;
}

static void op_hello(struct exec_req *q)
{
    struct vocl_msg_HELLO_req m;
    vocl_dec_HELLO_req(q->r, &m); /* (no counts: truncation is all that fails) */
    if (!exec_req_begin(q))
        return;
    struct exec_node *node = q->s->node;
    if (m.version != VOCL_WIRE_VERSION || q->s->hello) {
        if (!q->s->hello)
            atomic_fetch_add(&node->refused[EXEC_REFUSED_VERSION], 1);
        vocl_wr_i32(q->w, CL_INVALID_OPERATION);
        return;
    }
    note_user(q->s, &m);
    enum exec_refusal kind;
    const char *refused = refusal(q->s, &m, &kind);
    char who[160];
    exec_session_who(q->s, who, sizeof(who));
    if (refused) {
        /* One try a connection: the session ends with this reply. */
        vocl_note("client %d refused: %s (%s)", q->s->who, refused, who);
        atomic_fetch_add(&node->refused[kind], 1);
        atomic_store(&q->s->broken, true);
        vocl_wr_i32(q->w, atomic_load(&node->drained) ? CL_DEVICE_NOT_AVAILABLE
                                                      : CL_INVALID_OPERATION);
        return;
    }
    if (node->token || node->users) /* (a daemon's: each client is logged) */
        vocl_note("client %d served (%s)", q->s->who, who);
    struct vocl_rec_hello_device *devs = exec_tmp(q, node->ndev * sizeof(*devs));
    for (cl_uint i = 0; devs && i < node->ndev; i++)
        devs[i] = (struct vocl_rec_hello_device){node->types[i], node->max_alloc[i]};
    for (cl_uint i = 0; i < node->ndev; i++)
        if (!devs || exec_add_obj(q->s, i + 1, VOCL_T_DEVICE, node->devs[i], 0)) {
            vocl_wr_i32(q->w, CL_OUT_OF_HOST_MEMORY);
            return;
        }
    q->s->hello = true;
    atomic_fetch_add(&node->hellos, 1);
    if ((m.flags & VOCL_HELLO_TRACE) && !q->s->trace)
        q->s->trace = exec_trace_new();
    q->s->shm = m.node_key && !q->s->in_process && m.node_key == vocl_node_key(true) &&
                vocl_shm_allowed();
    vocl_wr_i32(q->w, CL_SUCCESS);
    vocl_enc_HELLO_rep(q->w, &(struct vocl_msg_HELLO_rep){
                                 .version = VOCL_WIRE_VERSION,
                                 .features = (q->s->shm ? VOCL_FEAT_SHM : VOCL_FEAT_NONE) |
                                             (node->limits.mem || node->limits.objects
                                                  ? VOCL_FEAT_LIMITS
                                                  : VOCL_FEAT_NONE),
                                 .mem_limit = node->limits.mem,
                                 .obj_limit = node->limits.objects,
                                 .chunk = node->xfer.pool_size,
                                 .node = {node->node_name, strlen(node->node_name), 0},
                                 .devices = {.n = node->ndev, .v = devs}});
}

/* STATE: what the proxy holds, its open sessions and its devices (vocl-smi). */
static void op_state(struct exec_req *q)
{
    struct vocl_msg_STATE_req m;
    vocl_dec_STATE_req(q->r, &m); /* (empty: trailing bytes are all that fails) */
    if (!exec_req_begin(q))
        return;
    struct exec_node *node = q->s->node;
    enum { MAX = 4096 };
    struct exec_session_state *open = exec_tmp(q, MAX * sizeof(*open));
    size_t n = open && node->sessions ? node->sessions(node->sessions_ctx, open, MAX) : 0;
    n = n < MAX ? n : MAX;
    struct vocl_rec_session_state *ss = exec_tmp(q, (n ? n : 1) * sizeof(*ss));
    struct vocl_rec_device_state *ds = exec_tmp(q, (node->ndev ? node->ndev : 1) * sizeof(*ds));
    char(*names)[128] = exec_tmp(q, (node->ndev ? node->ndev : 1) * sizeof(*names));
    if (!ss || !ds || !names) {
        vocl_wr_i32(q->w, CL_OUT_OF_HOST_MEMORY);
        return;
    }
    uint64_t now = vocl_now_ns();
    uint64_t objects = atomic_load(&node->nobjs), bytes = atomic_load(&node->bytes);
    for (size_t i = 0; i < n; i++) {
        const struct exec_session_state *o = &open[i];
        const char *host = o->s ? o->s->host : o->host;
        ss[i] = (struct vocl_rec_session_state){
            .id = (uint32_t)o->id,
            .user = {o->user, strlen(o->user), 0},
            .host = {host, strlen(host), 0},
            .pid = (uint64_t)o->pid,
            .seconds = now > o->since_ns ? (now - o->since_ns) / 1000000000u : 0,
            .objects = o->s ? o->s->nobjs : o->objects,
            .bytes = o->s ? o->s->bytes : o->bytes,
            .host_mem = o->s ? exec_host_held(o->s) : o->host_mem};
        if (!o->s) { /* (another process's: its figures add to this one's) */
            objects += o->objects;
            bytes += o->bytes;
        }
    }
    /* Each device's busy share: this process's, and where sessions are
     * served by processes of their own, theirs added (at most all: time
     * two of them overlap counts twice). */
    unsigned *busy = exec_tmp(q, (node->ndev ? node->ndev : 1) * sizeof(*busy));
    if (!busy) {
        vocl_wr_i32(q->w, CL_OUT_OF_HOST_MEMORY);
        return;
    }
    for (cl_uint d = 0; d < node->ndev; d++) {
        busy[d] = exec_busy_permille(node, d);
        for (size_t i = 0; i < n && d < EXEC_BUSY_DEVS && busy[d] != EXEC_BUSY_UNKNOWN; i++)
            busy[d] += open[i].s ? 0 : open[i].busy[d];
        busy[d] = busy[d] > 1000 && busy[d] != EXEC_BUSY_UNKNOWN ? 1000 : busy[d];
    }
    for (cl_uint d = 0; d < node->ndev; d++) {
        cl_ulong mem = 0;
        names[d][0] = 0;
        node->cl->clGetDeviceInfo(node->devs[d], CL_DEVICE_NAME, sizeof(names[d]), names[d], NULL);
        names[d][sizeof(names[d]) - 1] = 0;
        node->cl->clGetDeviceInfo(node->devs[d], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(mem), &mem,
                                  NULL);
        ds[d] = (struct vocl_rec_device_state){{names[d], strlen(names[d]), 0}, mem, busy[d]};
    }
    vocl_wr_i32(q->w, CL_SUCCESS);
    vocl_enc_STATE_rep(q->w, &(struct vocl_msg_STATE_rep){.objects = objects,
                                                          .bytes = bytes,
                                                          .sessions = {.n = (uint32_t)n, .v = ss},
                                                          .devices = {.n = node->ndev, .v = ds}});
}

static void op_refcount(struct exec_req *q, bool retain)
{
    uint64_t id;
    uint8_t last = 0;
    if (retain) {
        struct vocl_msg_RETAIN_req m;
        vocl_dec_RETAIN_req(q->r, &m); /* (fixed fields: truncation is all that fails) */
        id = m.id;
    } else {
        struct vocl_msg_RELEASE_req m;
        vocl_dec_RELEASE_req(q->r, &m);
        id = m.id;
        last = m.last;
    }
    struct exec_obj *o = vocl_map_get(&q->s->objs, id);
    if (!exec_req_begin(q))
        return;
    if (!o && last) {
        /* Never made here (its create failed, and that error is deferred): done. */
        vocl_wr_i32(q->w, CL_SUCCESS);
        return;
    }
    if (!o || o->type == VOCL_T_PLATFORM) {
        vocl_wr_i32(q->w, CL_INVALID_VALUE);
        return;
    }
    /* Root devices are not reference counted: nothing to do, nothing to undo. */
    bool root = o->type == VOCL_T_DEVICE && id < VOCL_ID_CLIENT_MIN;
    /* A release the client says is not its last must leave the id a
     * reference, or the id would name a released object. */
    if (!retain && !root && !last && o->refs < 2) {
        vocl_wr_i32(q->w, CL_INVALID_VALUE);
        return;
    }
    if (retain) {
        cl_int rc = root ? CL_SUCCESS : exec_retain_native(q->cl, o->type, o->native);
        if (rc == CL_SUCCESS && !root)
            o->refs++;
        vocl_wr_i32(q->w, rc);
        return;
    }
    cl_int rc = CL_SUCCESS;
    if (!root && o->refs) {
        rc = exec_release_native(q->cl, o->type, o->native);
        if (rc == CL_SUCCESS)
            o->refs--;
    }
    /* The client's last reference: the id is dead, whatever natives still hold. */
    if (last && !root) {
        for (; o->refs; o->refs--)
            exec_release_native(q->cl, o->type, o->native);
        exec_forget_obj(q->s, vocl_map_del(&q->s->objs, id));
    }
    vocl_wr_i32(q->w, rc);
}

/* --- deferred errors -------------------------------------------------------------------------- */

/* The status every reply starts with. */
static cl_int reply_status(const struct vocl_wr *reply)
{
    struct vocl_rd r;
    vocl_rd_init(&r, reply->buf + VOCL_HDR_SIZE, reply->len - VOCL_HDR_SIZE);
    cl_int err = vocl_rd_i32(&r);
    return r.fail ? CL_SUCCESS : err;
}

/* The id of the context a request's queue (or context) belongs to; 0: none. */
static uint64_t request_context(const struct exec_req *q)
{
    cl_context ctx = q->queue;
    if (q->queue_type == VOCL_T_QUEUE &&
        q->cl->clGetCommandQueueInfo(q->queue, CL_QUEUE_CONTEXT, sizeof(ctx), &ctx, NULL))
        return 0;
    size_t pos = 0;
    uint64_t id;
    void *v;
    while (ctx && vocl_map_next(&q->s->objs, &pos, &id, &v)) {
        const struct exec_obj *o = v;
        if (o->type == VOCL_T_CONTEXT && o->native == ctx)
            return id;
    }
    return 0;
}

/* The application hears of a deferred error as it happens too: from its
 * context's pfn_notify, as a driver reports an asynchronous error. */
static void notify_deferred(const struct exec_req *q, cl_int err)
{
    uint64_t ctx = request_context(q);
    if (!ctx)
        return;
    char info[256];
    snprintf(info, sizeof(info),
             "VOCL: %s failed with %s on the proxy; it was sent without waiting for a reply, "
             "so the next clFinish, clWaitForEvents or blocking transfer returns the error",
             vocl_op_name(q->op), vocl_err_name(err));
    exec_notify_post(q->s, ctx, info);
}

/* A request without a reply keeps its first error (err) for the session; a
 * synchronising reply that would say success reports it instead, once. */
static void settle_deferred(const struct exec_req *q, bool wants_reply, struct vocl_wr *reply,
                            cl_int err)
{
    struct exec_session *s = q->s;
    unsigned op = q->op;
    if (!wants_reply) {
        if (err != CL_SUCCESS)
            notify_deferred(q, err);
        if (err != CL_SUCCESS && s->deferred == CL_SUCCESS) {
            s->deferred = err;
            s->deferred_op = op;
        }
        return;
    }
    if (err != CL_SUCCESS || s->deferred == CL_SUCCESS || !vocl_op_syncs(op))
        return;
    uint8_t *p = reply->buf + VOCL_HDR_SIZE;
    uint32_t v = (uint32_t)exec_take_deferred(q);
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

cl_int exec_take_deferred(const struct exec_req *q)
{
    struct exec_session *s = q->s;
    cl_int err = s->deferred;
    if (err != CL_SUCCESS)
        vocl_warn("client %d: an earlier %s failed with %s: reported by %s", s->who,
                  vocl_op_name(s->deferred_op), vocl_err_name(err), vocl_op_name(q->op));
    s->deferred = CL_SUCCESS;
    return err;
}

/* --- entry point ---------------------------------------------------------------------------------- */

static int execute_one(struct exec_session *s, const struct vocl_msg_hdr *hp, const void *msg,
                       struct vocl_wr *reply);

/* A BATCH: its requests in order, as if each had come alone (protocol.h).
 * The reply is the last one's; any other that wants one, or a request
 * that must come alone, ends the session, as a malformed message does. */
static int execute_batch(struct exec_session *s, const struct vocl_msg_hdr *h, const void *msg,
                         struct vocl_wr *reply)
{
    const uint8_t *p = (const uint8_t *)msg + VOCL_HDR_SIZE, *end = p + h->length;
    struct vocl_msg_hdr in;
    const uint8_t *one;
    int rc = 0;
    unsigned n = 0;
    bool replied = false;
    while (vocl_batch_next(&p, end, &in, &one)) {
        const char *why = in.opcode == VOCL_OP_BATCH || in.opcode == VOCL_OP_HELLO ||
                                  in.opcode == VOCL_OP_BYE
                              ? "a request that must come alone"
                          : replied ? "a request after one that wants a reply"
                                    : NULL;
        if (why) {
            vocl_warn("client %d: batch: %s: session ended", s->who, why);
            rc = -1;
            break;
        }
        if (in.flags & VOCL_F_REPLY || in.opcode == VOCL_OP_clFlush)
            exec_gates_open(s);
        s->gating = s->node->gate_batches && command_follows(p, end);
        rc = execute_one(s, &in, one, reply);
        if (rc < 0)
            break;
        if (exec_session_parked(s) && p != end) {
            /* A chunked write comes last (its chunks follow the message). */
            vocl_warn("client %d: batch: a request after a chunked write: session ended",
                      s->who);
            rc = -1;
            break;
        }
        replied = in.flags & VOCL_F_REPLY;
        n++;
    }
    s->gating = false;
    exec_gates_open(s);
    if (rc < 0)
        return rc;
    if (p != end || n == 0) {
        vocl_warn("client %d: batch: %s: session ended", s->who,
                  n ? "a malformed request in it" : "empty");
        return -1;
    }
    return rc;
}

int exec_request(struct exec_session *s, const void *msg, size_t len, struct vocl_wr *reply)
{
    struct vocl_msg_hdr h;

    exec_after_reply(s); /* (where the transport did not) */
    exec_peer_starts();  /* (links that wait for a thread; in process, no loop starts them) */
    exec_record(msg, len);
    if (!vocl_hdr_get(msg, len, &h)) {
        vocl_warn("client %d: malformed message header (%zu bytes): session ended", s->who, len);
        return -1;
    }
    if (h.opcode == VOCL_OP_BATCH)
        return execute_batch(s, &h, msg, reply);
    return execute_one(s, &h, msg, reply);
}

/* One request, its header read (hp). */
static int execute_one(struct exec_session *s, const struct vocl_msg_hdr *hp, const void *msg,
                       struct vocl_wr *reply)
{
    const struct vocl_msg_hdr h = *hp;
    struct vocl_rd r;

    vocl_rd_init(&r, (const uint8_t *)msg + VOCL_HDR_SIZE, h.length);
    bool wants_reply = h.flags & VOCL_F_REPLY;
    uint64_t start = s->trace ? vocl_now_ns() : 0;
    struct exec_req q = {.s = s,
                         .cl = s->node->cl,
                         .r = &r,
                         .w = reply,
                         .op = h.opcode,
                         .seq = h.seq,
                         .async = !wants_reply};
    s->msg = msg;
    s->msg_len = VOCL_HDR_SIZE + h.length;
    s->data_tag = vocl_data_tag(h.seq);

    vocl_wr_begin(reply, h.opcode, 0, h.seq);
    if (h.opcode == VOCL_OP_BYE) {
        if (s->deferred != CL_SUCCESS)
            vocl_warn("client %d: %s failed with %s, and no later call reported it", s->who,
                      vocl_op_name(s->deferred_op), vocl_err_name(s->deferred));
        s->hello = false;
        /* A peer of the job died: its byte says so (an empty BYE, or any
         * other content, is ignored: the session ends anyway). */
        struct vocl_msg_BYE_req bye;
        vocl_dec_BYE_req(&r, &bye);
        if (vocl_rd_done(&r) && bye.peer_died == 1)
            s->peer_died = true;
        if (!wants_reply)
            return 0;
        /* The reply's byte says whether a peer died here: the client then
         * leaves without MPI_Finalize, which would wait for the dead. */
        if (s->data && s->data->peer_died && s->data->peer_died())
            s->peer_died = true;
        vocl_wr_i32(reply, CL_SUCCESS);
        vocl_enc_BYE_rep(reply, &(struct vocl_msg_BYE_rep){.peer_died = s->peer_died});
        vocl_wr_finish(reply);
        return 1;
    }
    if (!s->hello && h.opcode != VOCL_OP_HELLO) {
        vocl_warn("client %d: %s before HELLO", s->who, vocl_op_name(h.opcode));
        vocl_wr_i32(reply, CL_INVALID_OPERATION);
    } else if (h.opcode == VOCL_OP_HELLO) {
        op_hello(&q);
    } else if (h.opcode == VOCL_OP_RETAIN || h.opcode == VOCL_OP_RELEASE) {
        op_refcount(&q, h.opcode == VOCL_OP_RETAIN);
    } else if (h.opcode == VOCL_OP_PROGRAM_BINARIES) {
        exec_op_program_binaries(&q);
    } else if (h.opcode == VOCL_OP_SHM_MAP) {
        exec_op_shm_map(&q);
    } else if (h.opcode == VOCL_OP_BELL) {
        exec_op_bell(&q);
    } else if (h.opcode == VOCL_OP_TRACE) {
        exec_op_trace(&q);
    } else if (h.opcode == VOCL_OP_STATE) {
        op_state(&q);
    } else if (h.opcode == VOCL_OP_MIGRATE_OUT) {
        exec_op_migrate_out(&q);
    } else if (h.opcode == VOCL_OP_MIGRATE_IN) {
        exec_op_migrate_in(&q);
    } else if (h.opcode == VOCL_OP_DIFF_OUT) {
        exec_op_diff_out(&q);
    } else if (h.opcode == VOCL_OP_DIFF_IN) {
        exec_op_diff_in(&q);
    } else if (h.opcode == VOCL_OP_EVENT_OUT) {
        exec_op_event_out(&q);
    } else if (h.opcode == VOCL_OP_EVENT_IN) {
        exec_op_event_in(&q);
    } else if (h.opcode == VOCL_OP_clFinish) {
        /* A gen entry on the client; here it must not wait (complete.c). */
        exec_op_finish(&q);
    } else if (exec_dispatch_api(&q, h.opcode) != 0) {
        vocl_warn("client %d: unknown opcode %u", s->who, h.opcode);
        vocl_wr_i32(reply, CL_INVALID_OPERATION);
    } else if (s->node->busy && q.queue_obj && is_command(h.opcode)) {
        exec_busy_command(s->node, q.queue_obj); /* (a command: its device is busy) */
    }
    return exec_req_end(&q, start);
}

int exec_request_again(struct exec_session *s, const void *msg, size_t len, struct vocl_wr *reply)
{
    struct vocl_msg_hdr h;
    return vocl_hdr_get(msg, len, &h) ? execute_one(s, &h, msg, reply) : -1;
}

int exec_req_end(struct exec_req *q, uint64_t start)
{
    struct exec_session *s = q->s;
    struct vocl_wr *reply = q->w;
    bool wants_reply = !q->async;
    for (struct exec_tmp *t = q->tmp, *next; t; t = next) {
        next = t->next;
        free(t);
    }
    q->tmp = NULL;
    if (q->later || exec_session_parked(s)) {
        /* Answered when its commands complete (complete.c), or its chunks
         * have come (inbound.c). */
        if (!q->later)
            exec_inbound_keep_reply(s, reply);
        vocl_wr_reset(reply);
        if (s->trace && start)
            exec_trace_add(s->trace, q->op, 0, start, 0);
        return 0;
    }
    vocl_wr_finish(reply);
    if (reply->fail) {
        /* The reply could not be built (too large, out of memory). */
        vocl_wr_begin(reply, (uint16_t)q->op, 0, q->seq);
        vocl_wr_i32(reply, CL_OUT_OF_HOST_MEMORY);
        vocl_wr_finish(reply);
    }
    cl_int status = reply_status(reply);
    /* User events not set yet: see may_block in ops_transfer.c. */
    if (q->op == VOCL_OP_clCreateUserEvent && status == CL_SUCCESS)
        s->user_events++;
    else if (q->op == VOCL_OP_clSetUserEventStatus && status == CL_SUCCESS && s->user_events)
        s->user_events--;
    settle_deferred(q, wants_reply, reply, status);
    if (s->trace && start && q->op != VOCL_OP_TRACE) /* HELLO turns it on: not itself */
        exec_trace_add(s->trace, q->op, 0, start, 0);
    return wants_reply ? 1 : 0;
}
