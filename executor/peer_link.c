/*
 * peer_link.c - the other end of a migration or an event link: another
 * proxy of the job, or the client, which relays between two daemons
 * (VOCL_PEER_CLIENT, libvocl/relay.c).  Checked once, as the request
 * comes; a relay counts against the session's EXEC_RELAYS_MAX.
 */
#include "internal.h"
#include "thread.h"

#include <pthread.h>
#include <stdio.h>

/* (The reasons are literals: exec_fail keeps the pointer.) */
void exec_peer_set(struct exec_req *q, struct exec_peer_link *l, uint32_t peer, uint32_t tag,
                   bool event)
{
    const struct exec_data_ops *d = q->s->data;
    bool relay = peer == VOCL_PEER_CLIENT;
    l->cl = q->cl;
    l->data = d;
    l->peer = relay ? -1 : (int)peer;
    l->tag = (int)tag;
    if (relay ? !d->relay_send || !d->relay_recv
              : !d->peer_send || !d->peer_ok || !d->peer_ok(l->peer))
        exec_fail(q, event ? "event peer is not another proxy of this job, nor the client"
                           : "migration peer is not another proxy of this job, nor the client");
    if (l->tag < VOCL_TAG_PEER_MIN || l->tag > VOCL_TAG_PEER_MAX)
        exec_fail(q, event ? "event tag out of range" : "migration tag out of range");
    l->sane = !q->fail;
    l->relay = relay ? q->s : NULL;
    if (!relay || !l->sane)
        return;
    /* Refused past the bound, the peer is still told (a failure): its
     * command fails rather than wait for what will not come. */
    if (atomic_fetch_add(&q->s->relays, 1) >= EXEC_RELAYS_MAX) {
        atomic_fetch_sub(&q->s->relays, 1);
        exec_fail(q, "too many migrations and event links under way in this session");
        return;
    }
    l->counted = true;
    atomic_fetch_add(&q->s->held, 1); /* (its threads use it) */
}

void exec_peer_drop(struct exec_peer_link *l)
{
    if (!l->counted)
        return;
    atomic_fetch_sub(&l->relay->relays, 1);
    atomic_fetch_sub(&l->relay->held, 1);
    l->counted = false;
}

const char *exec_peer_who(const struct exec_peer_link *l, char who[24])
{
    if (l->relay)
        return "the client";
    snprintf(who, 24, "rank %d", l->peer);
    return who;
}

/* The links whose threads could not start yet, oldest first. */
static struct {
    pthread_mutex_t lock;
    struct exec_peer_link *head, **tail;
    atomic_uint n;
} waiting = {PTHREAD_MUTEX_INITIALIZER, NULL, &waiting.head, 0};

void exec_peer_start(struct exec_peer_link *l, void *(*fn)(void *), void *arg)
{
    if (vocl_thread_detached(fn, arg) == 0)
        return;
    l->fn = fn;
    l->arg = arg;
    l->next = NULL;
    pthread_mutex_lock(&waiting.lock);
    bool first = !waiting.head;
    *waiting.tail = l;
    waiting.tail = &l->next;
    atomic_fetch_add(&waiting.n, 1);
    pthread_mutex_unlock(&waiting.lock);
    if (first)
        vocl_warn("no thread to be had for a migration or an event link (ulimit -u, or memory):"
                  " it starts once one can");
}

unsigned exec_peer_starts(void)
{
    if (!atomic_load_explicit(&waiting.n, memory_order_relaxed))
        return 0;
    for (;;) {
        /* Taken off the list to start it (the lock is not held meanwhile),
         * put back in front where it cannot start yet. */
        pthread_mutex_lock(&waiting.lock);
        struct exec_peer_link *l = waiting.head;
        if (l && !(waiting.head = l->next))
            waiting.tail = &waiting.head;
        pthread_mutex_unlock(&waiting.lock);
        if (!l)
            return 0;
        if (vocl_thread_detached(l->fn, l->arg) == 0) { /* (l may be freed already) */
            atomic_fetch_sub(&waiting.n, 1);
            continue;
        }
        pthread_mutex_lock(&waiting.lock);
        if (!(l->next = waiting.head))
            waiting.tail = &l->next;
        waiting.head = l;
        unsigned left = atomic_load(&waiting.n);
        pthread_mutex_unlock(&waiting.lock);
        return left;
    }
}

int exec_peer_send(const struct exec_peer_link *l, const void *buf, size_t n)
{
    return l->relay ? l->data->relay_send(l->relay, l->tag, buf, n)
                    : l->data->peer_send(l->peer, l->tag, buf, n);
}

int exec_peer_recv(const struct exec_peer_link *l, void *buf, size_t n, size_t *got)
{
    return l->relay ? l->data->relay_recv(l->relay, l->tag, buf, n, got)
                    : l->data->peer_recv(l->peer, l->tag, buf, n, got);
}
