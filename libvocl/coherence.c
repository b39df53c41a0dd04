/*
 * coherence.c - the memory objects of a context spanning proxies (replica.c)
 * kept coherent between their replicas.
 *
 * The root buffer (or image) of each memory object records which replicas
 * hold the latest data (valid, a bit per replica).  A command on proxy P
 * that uses an object P does not hold first moves the data there from a
 * proxy that does, directly between the two proxies (MIGRATE_OUT /
 * MIGRATE_IN, executor/ops_migrate.c), and waits for it to land; a command
 * that may write the object leaves P the only holder.  The migration reads
 * the source once the events the command waits for (and that live on the
 * source) have completed, and after the writes of every queue that wrote
 * the object there since it became the only holder (two devices of one
 * proxy may each have written a part): the event of a queue's last write
 * where the application asked for one and still holds it, and the queue is
 * in order; else a marker behind all the queue has.  Natively a copy waits
 * for its wait list alone: a marker would also wait for every command
 * enqueued after the write (a busy device's backlog).
 * Writers on several proxies with no order between them need not wait for
 * each other: they keep twins and merge diffs (see "Multiple writers").
 */
#include "vocl.h"

#include <stdlib.h>
#include <string.h>

static pthread_mutex_t coherence_lock = PTHREAD_MUTEX_INITIALIZER;

static void arrival_drop(struct vocl_arrival *a)
{
    if (!a || atomic_fetch_sub(&a->refs, 1) != 1)
        return;
    if (!a->px->dead)
        vocl_release_id(a->px, a->id);
    free(a);
}

void vocl_call_drop_arrivals(struct vocl_call *c)
{
    for (cl_uint i = 0; i < c->nheld; i++)
        arrival_drop(c->held[i]);
    free(c->held);
    c->held = NULL;
    c->nheld = c->capheld = 0;
}

/* c waits for a, and holds it until c has been sent. */
static void wait_arrival(struct vocl_call *c, struct vocl_arrival *a)
{
    if (c->nheld == c->capheld) {
        cl_uint cap = c->capheld ? 2 * c->capheld : 4;
        struct vocl_arrival **h = realloc(c->held, cap * sizeof(*h));
        if (!h) {
            vocl_call_error(c, CL_OUT_OF_HOST_MEMORY);
            return;
        }
        c->held = h;
        c->capheld = cap;
    }
    vocl_call_add_wait(c, a->id);
    if (c->err)
        return;
    atomic_fetch_add(&a->refs, 1);
    c->held[c->nheld++] = a;
}

/* r's writes are merged elsewhere, or overwritten. */
static void forget_writers(struct vocl_rep *r)
{
    for (cl_uint i = 0; i < r->nwriters; i++) {
        vocl_obj_drop(r->writers[i].queue);
        if (r->writers[i].event)
            vocl_obj_drop(r->writers[i].event);
    }
    free(r->writers);
    r->writers = NULL;
    r->nwriters = r->capwriters = 0;
    r->since = 0;
}

/* c notes that it wrote r at tick now: its event, once it has one, is
 * what a move out of r waits for (vocl_writes_done).  Beyond four, the
 * move waits for the queue. */
static void note_wrote(struct vocl_call *c, struct vocl_rep *r, uint64_t now)
{
    if (c->nwrote < sizeof(c->wrote) / sizeof(c->wrote[0])) {
        c->wrote[c->nwrote] = r;
        c->wrote_at[c->nwrote++] = now;
    }
}

/* Records a write of c's queue on r (the queue held once); -1 when out of
 * memory.  Until the write's event is known, its writer entry has none. */
static int add_writer(struct vocl_call *c, struct vocl_rep *r)
{
    struct vocl_obj *q = c->queue;
    uint64_t now = vocl_tick();
    if (!r->since)
        r->since = now;
    note_wrote(c, r, now);
    for (cl_uint i = 0; i < r->nwriters; i++)
        if (r->writers[i].queue == q) {
            r->writers[i].last = now;
            if (r->writers[i].event)
                vocl_obj_drop(r->writers[i].event);
            r->writers[i].event = NULL;
            return 0;
        }
    if (r->nwriters == r->capwriters) {
        cl_uint cap = r->capwriters ? 2 * r->capwriters : 4;
        struct vocl_writer *w = realloc(r->writers, cap * sizeof(*w));
        if (!w)
            return -1;
        r->writers = w;
        r->capwriters = cap;
    }
    vocl_obj_hold(q);
    r->writers[r->nwriters++] = (struct vocl_writer){q, now, now, NULL};
    return 0;
}

/* Whether q runs its commands in order (asked once, then known). */
static bool in_order(struct vocl_obj *q)
{
    struct vocl_queue *vq = vocl_as_queue(q);
    int order = atomic_load(&vq->order);
    if (!order) {
        cl_command_queue_properties props = 0;
        if (clGetCommandQueueInfo((cl_command_queue)q, CL_QUEUE_PROPERTIES, sizeof(props), &props,
                                  NULL) != CL_SUCCESS)
            return false;
        order = props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE ? 2 : 1;
        atomic_store(&vq->order, order);
    }
    return order == 1;
}

void vocl_writes_done(struct vocl_call *c, struct vocl_obj *ev, struct vocl_obj *queue)
{
    /* (in_order may ask the proxy: nothing may be held.) */
    if (!c->nwrote || c->coherent || c->locked || !ev || !in_order(queue))
        return;
    pthread_mutex_lock(&coherence_lock);
    for (cl_uint k = 0; k < c->nwrote; k++) {
        struct vocl_rep *r = c->wrote[k];
        for (cl_uint i = 0; i < r->nwriters; i++) {
            struct vocl_writer *w = &r->writers[i];
            /* Only if no later write of the queue came first. */
            if (w->queue == queue && w->last == c->wrote_at[k] && !w->event) {
                vocl_obj_hold(ev);
                w->event = ev;
            }
        }
    }
    pthread_mutex_unlock(&coherence_lock);
    c->nwrote = 0;
}

/* The first of r's writes that may not have ended: those before a clFinish
 * of their queue have (0: all have). */
static uint64_t unfinished_since(const struct vocl_rep *r)
{
    uint64_t since = 0;
    for (cl_uint i = 0; i < r->nwriters; i++) {
        const struct vocl_writer *w = &r->writers[i];
        uint64_t done = atomic_load(&vocl_as_queue(w->queue)->finished_at);
        uint64_t first = w->first > done ? w->first : done + 1;
        if (w->last > done && (!since || first < since))
            since = first;
    }
    return since;
}

void vocl_rep_clear(struct vocl_rep *r)
{
    forget_writers(r);
    if (r->twin && !r->px->dead)
        vocl_release_id(r->px, r->twin);
    arrival_drop(r->twin_made);
    /* The last migration's event into it, which nothing else holds (kept
     * until now: commands on its sub-buffers wait for it too). */
    arrival_drop(r->arrive);
}

/* --- decisions, and the moves they post ----------------------------------------------------- */

static struct vocl_obj *mem_root(struct vocl_obj *m)
{
    while (m->parent && m->parent->type == VOCL_T_MEM)
        m = m->parent;
    return m;
}

/*
 * A command's coherence decisions and its request are one step for every
 * other thread: the command holds coherence_lock from its first decision
 * (vocl_mem_use) until its request has its place among its proxy's
 * (vocl_coherence_posted, from vocl_call_post).  So a move that another
 * thread decides next is ordered after the command at every proxy: a
 * migration or a diff out of a replica reads after the command's write,
 * and a DIFF_IN's read-modify-write does not write around it.  Nothing in
 * between waits: the command waits for events of other proxies
 * (vocl_call_route) before it takes the lock.
 *
 * Requests that a decision posts go out at once, in the decision's order,
 * but no thread waits under the lock for one to leave (a send to a dead
 * proxy waits out the liveness timeout): each gets a buffer of its own,
 * and the command waits for them (vocl_coherence_sent) once it has let
 * the lock go.
 */
struct vocl_outgoing {
    struct vocl_outgoing *next;
    struct vocl_call c;
    struct vocl_wr w;
};

static _Thread_local struct vocl_outgoing **outbox; /* set while coherence_lock is held */

static void coherence_take(struct vocl_call *c)
{
    if (c->coherent)
        return;
    pthread_mutex_lock(&coherence_lock);
    c->coherent = true;
    outbox = &c->outgoing;
}

void vocl_coherence_posted(struct vocl_call *c)
{
    if (!c->coherent)
        return;
    c->coherent = false;
    outbox = NULL;
    pthread_mutex_unlock(&coherence_lock);
}

void vocl_coherence_sent(struct vocl_call *c)
{
    struct vocl_outgoing *list = c->outgoing;
    c->outgoing = NULL;
    while (list) {
        struct vocl_outgoing *o = list;
        list = o->next;
        vocl_call_end(&o->c);
        vocl_wr_free(&o->w);
        free(o);
    }
}

/* Sends a request of no reply that the writer fill has filled to px. */
cl_int vocl_post_async(struct vocl_proxy *px, unsigned op,
                       void (*fill)(struct vocl_call *, const void *), const void *arg)
{
    struct vocl_outgoing *o = outbox ? calloc(1, sizeof(*o)) : NULL;
    if (outbox && !o)
        return CL_OUT_OF_HOST_MEMORY;
    struct vocl_call now, *c = o ? &o->c : &now;
    vocl_call_init(c);
    if (o) {
        vocl_wr_init(&o->w);
        c->w = &o->w;
    }
    c->px = px;
    c->async = true;
    if (vocl_call_start(c, op) == 0) {
        fill(c, arg);
        if (o)
            vocl_call_post_only(c);
        else
            vocl_call_send(c);
    }
    cl_int err = c->err;
    if (o) {
        o->next = *outbox;
        *outbox = o;
    } else {
        vocl_call_end(c);
    }
    return err;
}

/*
 * A move of root's data between two replicas, directly between their
 * proxies.  Whole (MIGRATE_OUT / MIGRATE_IN): all of `from` replaces `to`,
 * and either side may keep a twin of the bytes sent.  Diff (DIFF_OUT /
 * DIFF_IN): what `from` changed since its twin is patched into `to`.
 */
struct migration {
    const struct vocl_rep *from, *to;
    int tag;
    size_t chunk;
    uint64_t size;               /* whole: the bytes sent (for a relay) */
    uint32_t peer_in, peer_out;  /* each side's peer: the other's rank, or VOCL_PEER_CLIENT */
    uint64_t ev_id;              /* the arrival into `to` */
    uint64_t twin_from, ev_from; /* whole: a new twin of `from` and its copy (0: none) */
    uint64_t twin_to;            /* whole: a new twin of `to` (0: none) */
    bool diff;
    bool base;                   /* whole: send `from`'s twin, not its data (join) */
    bool after_writers;          /* the read of `from` comes after its writers */
    const struct vocl_call *cmd; /* whose wait list the read waits for (NULL: none) */
};

/* What a read of r (of its twin: base) waits for: the queues that wrote r
 * (their ids in *queues, to be freed), and the events. */
static void after(struct vocl_call *c, const struct vocl_rep *r, bool writers, bool base,
                  const struct vocl_call *cmd, struct vocl_ids *queues, struct vocl_ids *events)
{
    cl_uint nw = writers ? r->nwriters : 0, nq = 0;
    uint64_t *ids = nw ? malloc(nw * sizeof(*ids)) : NULL;
    if (nw && !ids)
        vocl_call_error(c, CL_OUT_OF_HOST_MEMORY);
    for (cl_uint i = 0; ids && i < nw; i++) {
        /* A writer whose last write has an event the application still
         * holds: that event (its release cannot overtake the move: move),
         * not a marker that would wait for all enqueued on the queue since. */
        struct vocl_obj *ev = r->writers[i].event;
        if (ev && atomic_load(&ev->app_refs) > 0) {
            vocl_call_add_wait(c, ev->id);
        } else {
            ids[nq++] = r->writers[i].queue->id;
        }
    }
    *queues = (struct vocl_ids){.n = nq, .v = ids};
    /* The command's events that live here, and r's own arrival. */
    if (cmd) {
        c->wl_n = cmd->wl_n;
        c->wl = cmd->wl;
    }
    const struct vocl_arrival *made = base ? r->twin_made : r->arrive;
    if (made)
        vocl_call_add_wait(c, made->id);
    *events = vocl_call_wl_ids(c, c->wl_n, c->wl);
}

static void fill_in(struct vocl_call *c, const void *arg)
{
    const struct migration *m = arg;
    uint64_t mem = m->to->id, chunk = m->chunk;
    uint32_t peer = m->peer_in, tag = (uint32_t)m->tag;
    if (!m->diff) {
        vocl_enc_MIGRATE_IN_req(c->w, &(struct vocl_msg_MIGRATE_IN_req){.mem = mem,
                                                                        .peer = peer,
                                                                        .tag = tag,
                                                                        .chunk = chunk,
                                                                        .event = m->ev_id,
                                                                        .twin = m->twin_to});
        return;
    }
    struct vocl_msg_DIFF_IN_req d = {
        .mem = mem, .peer = peer, .tag = tag, .chunk = chunk, .event = m->ev_id};
    after(c, m->to, true, false, NULL, &d.queues, &d.events);
    vocl_enc_DIFF_IN_req(c->w, &d);
    free((void *)d.queues.v);
}

static void fill_out(struct vocl_call *c, const void *arg)
{
    const struct migration *m = arg;
    struct vocl_ids queues, events;
    after(c, m->from, m->after_writers, m->base, m->cmd, &queues, &events);
    uint64_t mem = m->base ? m->from->twin : m->from->id, chunk = m->chunk;
    uint32_t peer = m->peer_out, tag = (uint32_t)m->tag;
    if (m->diff)
        vocl_enc_DIFF_OUT_req(c->w, &(struct vocl_msg_DIFF_OUT_req){.mem = mem,
                                                                    .peer = peer,
                                                                    .tag = tag,
                                                                    .chunk = chunk,
                                                                    .twin = m->from->twin,
                                                                    .queues = queues,
                                                                    .events = events});
    else
        vocl_enc_MIGRATE_OUT_req(c->w, &(struct vocl_msg_MIGRATE_OUT_req){.mem = mem,
                                                                          .peer = peer,
                                                                          .tag = tag,
                                                                          .chunk = chunk,
                                                                          .twin = m->twin_from,
                                                                          .twin_event = m->ev_from,
                                                                          .queues = queues,
                                                                          .events = events});
    free((void *)queues.v);
}

static void fill_release(struct vocl_call *c, const void *arg)
{
    vocl_enc_RELEASE_req(c->w,
                         &(struct vocl_msg_RELEASE_req){.id = *(const uint64_t *)arg, .last = 1});
}

/* Releases id on px (an object the application never saw), without waiting. */
void vocl_release_id(struct vocl_proxy *px, uint64_t id)
{
    vocl_post_async(px, VOCL_OP_RELEASE, fill_release, &id);
}

/* id, an event on r's proxy, is what the next commands on r wait for. */
static void arrive(struct vocl_rep *r, struct vocl_arrival *a, uint64_t id)
{
    *a = (struct vocl_arrival){.px = r->px, .id = id, .refs = 1};
    arrival_drop(r->arrive); /* released once no unsent command names it */
    r->arrive = a;
}

/* Posts m's two requests; the commands on `to` (and on `from`, when it
 * gets a twin) then wait for what they make. */
static cl_int move(struct migration *m, struct vocl_rep *from, struct vocl_rep *to)
{
    if (from->px->local || to->px->local)
        return CL_INVALID_OPERATION; /* refused when the context was made */
    struct vocl_arrival *into = malloc(sizeof(*into));
    struct vocl_arrival *back = m->twin_from ? malloc(sizeof(*back)) : NULL;
    if (!into || (m->twin_from && !back)) {
        free(into);
        free(back);
        return CL_OUT_OF_HOST_MEMORY;
    }
    m->from = from;
    m->to = to;
    m->tag = vocl_peer_tag();
    m->chunk = from->px->chunk < to->px->chunk ? from->px->chunk : to->px->chunk;
    m->ev_id = atomic_fetch_add(&to->px->next_id, 1);
    bool relayed = vocl_peer_route(from->px, to->px, &m->peer_out, &m->peer_in);
    /* The events the move names stay until it has its place (after). */
    vocl_refs_lock();
    cl_int err =
        vocl_post_async(to->px, m->diff ? VOCL_OP_DIFF_IN : VOCL_OP_MIGRATE_IN, fill_in, m);
    if (err == CL_SUCCESS)
        err = vocl_post_async(from->px, m->diff ? VOCL_OP_DIFF_OUT : VOCL_OP_MIGRATE_OUT, fill_out,
                              m);
    vocl_refs_unlock();
    if (err == CL_SUCCESS && relayed)
        err = vocl_relay(from->px, to->px, m->tag, m->diff ? VOCL_RELAY_DIFF : VOCL_RELAY_WHOLE,
                         m->size, m->chunk);
    if (err != CL_SUCCESS) {
        free(into);
        free(back);
        return err;
    }
    arrive(to, into, m->ev_id);
    if (back)
        arrive(from, back, m->ev_from);
    return CL_SUCCESS;
}

cl_int vocl_copy_across(struct vocl_proxy *from, uint64_t from_id, struct vocl_proxy *to,
                        uint64_t to_id, uint64_t *event)
{
    if (from->local || to->local || !vocl_px_same_job(from, to))
        return CL_INVALID_OPERATION;
    const struct vocl_rep src = {.px = from, .id = from_id}, dst = {.px = to, .id = to_id};
    struct migration m = {
        .from = &src,
        .to = &dst,
        .tag = vocl_peer_tag(),
        .chunk = from->chunk < to->chunk ? from->chunk : to->chunk,
        .ev_id = atomic_fetch_add(&to->next_id, 1),
    };
    vocl_peer_route(from, to, &m.peer_out, &m.peer_in); /* (one communicator: each other's ranks) */
    cl_int err = vocl_post_async(to, VOCL_OP_MIGRATE_IN, fill_in, &m);
    if (err == CL_SUCCESS)
        err = vocl_post_async(from, VOCL_OP_MIGRATE_OUT, fill_out, &m);
    *event = m.ev_id;
    return err;
}

/* Moves all of root's data from replica `from` to replica `to`, after what
 * was written there and what cmd waits for. */
static cl_int migrate(struct vocl_obj *root, cl_uint from, cl_uint to, const struct vocl_call *cmd)
{
    struct migration m = {
        .cmd = cmd, .after_writers = true, .size = vocl_mem_bytes(vocl_as_mem(root))};
    return move(&m, &root->reps[from], &root->reps[to]);
}

/*
 * Multiple writers.  Commands on different proxies may write one buffer
 * with no order between them (each its own part, or natively it is a
 * race).  Then the second need not wait for the first: it gets the data as
 * it is now, without waiting for the writes in flight, and both sides keep
 * a twin, a copy of those same bytes.  The next use that needs all of the
 * data merges: each replica's bytes that differ from its twin are patched
 * into one replica (DIFF_OUT / DIFF_IN), which is then the only holder, as
 * software DSMs merge the diffs of their writers.  A diff holds only bytes
 * that changed, so it never undoes another replica's writes.  A buffer
 * written on one proxy at a time keeps no twin and moves nothing more.
 */
static bool twinned(const struct vocl_obj *root, cl_uint i)
{
    return (vocl_as_mem(root)->twinned >> i) & 1;
}

/*
 * Whether c's command, a write on replica `to`, may go without the writes
 * of the other replicas that `to` lacks, as it could natively: it waits for
 * none of them on the device (no wait list, and its queue waited for
 * nothing since they were enqueued: the clock, vocl_call_start), and the
 * host cannot have seen those kept apart by twins end (no call that could
 * tell it has begun since).  Writes in flight at a twin's making are not in
 * it; any that had ended are.
 */
static bool unordered(const struct vocl_call *c, const struct vocl_obj *root, cl_uint to)
{
    if (!c->queue || c->wl_n || vocl_as_mem(root)->mem_type) /* (set for images only) */
        return false;
    uint64_t waited = atomic_load(&vocl_as_queue(c->queue)->ordered_at),
             seen = atomic_load(&vocl.synced_at);
    for (cl_uint i = 0; i < root->nreps; i++) {
        if (i == to)
            continue;
        /* Without a twin, what has ended will be in the data moved. */
        bool twin = twinned(root, i);
        uint64_t since = twin ? root->reps[i].since : unfinished_since(&root->reps[i]);
        if (since && (since <= waited || (twin && since <= seen)))
            return false;
    }
    return true;
}

static void drop_twins(struct vocl_obj *root)
{
    for (cl_uint i = 0; i < root->nreps; i++) {
        struct vocl_rep *r = &root->reps[i];
        if (r->twin)
            vocl_release_id(r->px, r->twin); /* after the requests that read it */
        r->twin = 0;
        arrival_drop(r->twin_made);
        r->twin_made = NULL;
    }
    vocl_as_mem(root)->twinned = 0;
}

/* Replica `to` starts writing from `from`'s data as it is now: twins on both. */
static cl_int join(struct vocl_obj *root, cl_uint from, cl_uint to, const struct vocl_call *cmd)
{
    struct vocl_rep *src = &root->reps[from], *dst = &root->reps[to];
    /* Every twin holds the same bytes, the base the diffs are taken from.
     * A source that has one already may have written since: it sends its
     * twin, not its data, so that a byte it wrote and later wrote back to
     * the base value (no longer in its diff) is not left in dst at the
     * value between. */
    struct migration m = {.cmd = cmd,
                          .twin_to = atomic_fetch_add(&dst->px->next_id, 1),
                          .base = src->twin && src->twin_made,
                          .size = vocl_mem_bytes(vocl_as_mem(root))};
    if (!src->twin) {
        m.twin_from = atomic_fetch_add(&src->px->next_id, 1);
        m.ev_from = atomic_fetch_add(&src->px->next_id, 1);
    }
    cl_int err = move(&m, src, dst);
    if (err != CL_SUCCESS)
        return err;
    if (m.twin_from) { /* what had ended is in the twins */
        src->twin = m.twin_from;
        src->since = unfinished_since(src);
        src->twin_made = src->arrive; /* (move's: the twin's copy) */
        atomic_fetch_add(&src->twin_made->refs, 1);
    }
    dst->twin = m.twin_to;
    arrival_drop(dst->twin_made);
    dst->twin_made = dst->arrive; /* (move's: the write, then the twin's copy) */
    atomic_fetch_add(&dst->twin_made->refs, 1);
    struct vocl_mem *rmem = vocl_as_mem(root);
    rmem->twinned |= (uint64_t)1 << from | (uint64_t)1 << to;
    rmem->valid = 0; /* no replica holds all of it */
    return CL_SUCCESS;
}

/* Merges the writes of every twinned replica into one: `to` if it is one,
 * else the first; that one is then the only holder. */
static cl_int merge(struct vocl_obj *root, cl_uint to)
{
    cl_uint t = to;
    if (!twinned(root, t)) {
        t = 0;
        while (!twinned(root, t))
            t++;
    }
    for (cl_uint i = 0; i < root->nreps; i++) {
        if (i == t || !twinned(root, i))
            continue;
        struct migration m = {.diff = true, .after_writers = true};
        cl_int err = move(&m, &root->reps[i], &root->reps[t]);
        if (err != CL_SUCCESS)
            return err; /* (a diff sent twice patches the same bytes) */
        forget_writers(&root->reps[i]);
    }
    drop_twins(root);
    vocl_as_mem(root)->valid = (uint64_t)1 << t;
    return CL_SUCCESS;
}

/* Appends id to the growing array *v of *n (room for *cap); false: no memory. */
bool vocl_ids_push(uint64_t **v, cl_uint *n, cl_uint *cap, uint64_t id)
{
    if (*n == *cap) {
        cl_uint more = *cap ? 2 * *cap : 4;
        uint64_t *nv = realloc(*v, more * sizeof(*nv));
        if (!nv)
            return false;
        *v = nv;
        *cap = more;
    }
    (*v)[(*n)++] = id;
    return true;
}

void vocl_call_add_wait(struct vocl_call *c, uint64_t id)
{
    if (!vocl_ids_push(&c->xw, &c->nxw, &c->capxw, id))
        vocl_call_error(c, CL_OUT_OF_HOST_MEMORY);
}

void vocl_mem_use(struct vocl_call *c, struct vocl_obj *m, enum vocl_use use)
{
    if (c->err || !m)
        return;
    struct vocl_obj *root = mem_root(m);
    struct vocl_mem *rmem = vocl_as_mem(root);
    if (!root->reps || !c->px)
        return;
    cl_uint to = vocl_rep_index(root, c->px);
    if (to == root->nreps) {
        vocl_call_error(c, CL_INVALID_CONTEXT);
        return;
    }
    uint64_t bit = (uint64_t)1 << to;
    bool writes = use != VOCL_USE_R;
    cl_int err = CL_SUCCESS;
    if (vocl_call_route(c))
        return;
    coherence_take(c);
    if (rmem->twinned && use == VOCL_USE_W)
        drop_twins(root); /* all of it is overwritten */
    else if (rmem->twinned && !(writes && unordered(c, root, to)))
        err = merge(root, to);
    if (err == CL_SUCCESS && !((rmem->valid | rmem->twinned) & bit) && use != VOCL_USE_W) {
        cl_uint from = 0;
        uint64_t has = rmem->valid ? rmem->valid : rmem->twinned;
        while (from < root->nreps && !(has & ((uint64_t)1 << from)))
            from++;
        /* Twins only to overlap writes that may be running: if they have
         * ended, moving the data whole costs no wait. */
        bool twin = from < root->nreps && writes && unordered(c, root, to) &&
                    (rmem->twinned || unfinished_since(&root->reps[from]));
        if (from < root->nreps)
            err = twin ? join(root, from, to, c) : migrate(root, from, to, c);
    }
    if (err != CL_SUCCESS)
        vocl_call_error(c, err);
    /* A writer leaves `to` the only holder, but among twins: what the
     * others' writers did has reached it (or is overwritten), and the next
     * migration out of `to` reads after every queue that wrote it since. */
    if (!c->err && writes) {
        for (cl_uint i = 0; i < root->nreps && !rmem->twinned; i++)
            if (i != to)
                forget_writers(&root->reps[i]);
        if (c->queue && add_writer(c, &root->reps[to]))
            vocl_call_error(c, CL_OUT_OF_HOST_MEMORY);
    }
    if (!c->err) {
        if (!rmem->twinned)
            rmem->valid = use == VOCL_USE_R ? rmem->valid | bit : bit;
        if (root->reps[to].arrive)
            wait_arrival(c, root->reps[to].arrive);
    }
}

/* The same, without moving data: the content is undefined or is about to be. */
static void mem_discard(struct vocl_call *c, struct vocl_obj *m)
{
    struct vocl_obj *root = mem_root(m);
    if (!root->reps || vocl_call_route(c))
        return;
    cl_uint i = vocl_rep_index(root, c->px);
    coherence_take(c);
    if (i < root->nreps) {
        drop_twins(root);
        vocl_as_mem(root)->valid = (uint64_t)1 << i;
    }
}

/* The errors the spec asks of a fill that the client can tell (the command
 * itself does not wait: the rest are deferred). */
void vocl_pre_clEnqueueFillBuffer(struct vocl_call *c, cl_command_queue command_queue,
                                  cl_mem buffer, const void *pattern, size_t pattern_size,
                                  size_t offset, size_t size, cl_uint num_events_in_wait_list,
                                  const cl_event *event_wait_list, cl_event *event)
{
    (void)command_queue, (void)num_events_in_wait_list, (void)event_wait_list, (void)event;
    struct vocl_obj *m = vocl_lookup(buffer, VOCL_T_MEM);
    if (c->err || !m)
        return;
    if (!pattern || !pattern_size || pattern_size > 128 || (pattern_size & (pattern_size - 1)) ||
        offset % pattern_size || size % pattern_size || offset > vocl_as_mem(m)->mem_size ||
        size > vocl_as_mem(m)->mem_size - offset)
        vocl_call_error(c, CL_INVALID_VALUE);
}

void vocl_pre_clEnqueueFillImage(struct vocl_call *c, cl_command_queue command_queue, cl_mem image,
                                 const void *fill_color, const size_t *origin, const size_t *region,
                                 cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                                 cl_event *event)
{
    (void)command_queue, (void)num_events_in_wait_list, (void)event_wait_list, (void)event;
    struct vocl_obj *m = vocl_lookup(image, VOCL_T_MEM);
    if (c->err || !m)
        return;
    if (!fill_color || !origin || !region) {
        vocl_call_error(c, CL_INVALID_VALUE);
        return;
    }
    const size_t *dims = vocl_as_mem(m)->dims;
    for (int i = 0; i < 3 && dims[0]; i++)
        if (!region[i] || origin[i] > dims[i] || region[i] > dims[i] - origin[i])
            vocl_call_error(c, CL_INVALID_VALUE);
}

/* clEnqueueMigrateMemObjects: the data moves to the queue's proxy now, or
 * nowhere (to the host: the host shadow is made by maps; content undefined). */
void vocl_pre_clEnqueueMigrateMemObjects(struct vocl_call *c, cl_command_queue command_queue,
                                         cl_uint num_mem_objects, const cl_mem *mem_objects,
                                         cl_mem_migration_flags flags,
                                         cl_uint num_events_in_wait_list,
                                         const cl_event *event_wait_list, cl_event *event)
{
    (void)command_queue, (void)num_events_in_wait_list, (void)event_wait_list, (void)event;
    if (!c->err && (!num_mem_objects || !mem_objects ||
                    (flags & ~(cl_mem_migration_flags)(CL_MIGRATE_MEM_OBJECT_HOST |
                                                       CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED))))
        vocl_call_error(c, CL_INVALID_VALUE);
    for (cl_uint i = 0; !c->err && i < num_mem_objects; i++) {
        struct vocl_obj *m = vocl_lookup(mem_objects[i], VOCL_T_MEM);
        if (m && c->queue && m->context != c->queue->context)
            vocl_call_error(c, CL_INVALID_CONTEXT);
    }
    for (cl_uint i = 0; !c->err && mem_objects && i < num_mem_objects; i++) {
        struct vocl_obj *m = vocl_lookup(mem_objects[i], VOCL_T_MEM);
        if (!m || (flags & CL_MIGRATE_MEM_OBJECT_HOST))
            continue;
        if (flags & CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED)
            mem_discard(c, m);
        else
            vocl_mem_use(c, m, VOCL_USE_R);
    }
}
