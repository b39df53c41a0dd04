/*
 * peer.c - exchanges between two proxies on this client's behalf (moves of
 * memory, coherence.c; event links, mirror.c): the tag of each, and who
 * relays it.
 */
#include "vocl.h"

#include <stdatomic.h>

/* The tag of the next exchange between two proxies on this client's
 * behalf.  The range is shared out between the job's application ranks, so
 * that two clients moving data between the same two proxies at once never
 * use one tag: the proxies could pair their messages the wrong way round. */
int vocl_peer_tag(void)
{
    static atomic_uint next_tag;
    unsigned span = VOCL_TAG_PEER_MAX - VOCL_TAG_PEER_MIN;
    unsigned apps = vocl.app_ranks > 1 ? (unsigned)vocl.app_ranks : 1;
    unsigned share = span / apps ? span / apps : 1;
    unsigned first = (unsigned)vocl.app_rank % apps * share;
    return VOCL_TAG_PEER_MIN + (int)((first + atomic_fetch_add(&next_tag, 1) % share) % span);
}

/* The peers each side of an exchange from `from` to `to` names: each
 * other's ranks where they share a communicator (job mode), else this
 * process, which relays between the two daemons (relay.c): true then. */
bool vocl_peer_route(const struct vocl_proxy *from, const struct vocl_proxy *to, uint32_t *peer_out,
                     uint32_t *peer_in)
{
    bool relayed = !vocl_px_same_job(from, to);
    *peer_out = relayed ? VOCL_PEER_CLIENT : (uint32_t)to->rank;
    *peer_in = relayed ? VOCL_PEER_CLIENT : (uint32_t)from->rank;
    return relayed;
}
