/*
 * peer_link.c - the other end of a migration or an event link: another
 * proxy of the job, or the client, which relays between two daemons
 * (VOCL_PEER_CLIENT, libvocl/relay.c).  Checked once, as the request
 * comes; a relay counts against the session's EXEC_RELAYS_MAX.
 */
#include "internal.h"

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
