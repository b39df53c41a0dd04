/*
 * mirror.c - events of another proxy in a wait list.
 *
 * A command on proxy B that waits for an event of proxy A waits, on B, for
 * a user event that B sets when A tells it the event's final status
 * (EVENT_IN / EVENT_OUT, executor/ops_link.c).  Neither the application's
 * thread nor the proxies' request threads wait for it: the event on A may
 * wait for a user event the application sets later.
 */
#include "vocl.h"

#include <stdlib.h>

struct link {
    uint64_t ev, ctx, mirror;
    uint32_t peer_out, peer_in; /* vocl_peer_route() */
    int tag;
};

static void fill_event_in(struct vocl_call *c, const void *arg)
{
    const struct link *l = arg;
    vocl_enc_EVENT_IN_req(c->w, &(struct vocl_msg_EVENT_IN_req){.context = l->ctx,
                                                                .peer = l->peer_in,
                                                                .tag = (uint32_t)l->tag,
                                                                .event = l->mirror});
}

static void fill_event_out(struct vocl_call *c, const void *arg)
{
    const struct link *l = arg;
    vocl_enc_EVENT_OUT_req(c->w, &(struct vocl_msg_EVENT_OUT_req){
                                     .event = l->ev, .peer = l->peer_out, .tag = (uint32_t)l->tag});
}

int vocl_event_mirror(struct vocl_call *c, cl_event event)
{
    struct vocl_obj *e = vocl_lookup(event, VOCL_T_EVENT);
    struct vocl_obj *ctx = c->queue ? c->queue->context : NULL;
    if (!e || !ctx || e->context != ctx || e->px->local || c->px->local ||
        vocl_event_data_pending(e))
        return -1; /* the caller waits for it */
    struct link l = {
        .ev = e->id,
        .ctx = vocl_id_on(ctx, c->px),
        .mirror = atomic_fetch_add(&c->px->next_id, 1),
        .tag = vocl_peer_tag(),
    };
    bool relayed = vocl_peer_route(e->px, c->px, &l.peer_out, &l.peer_in);
    if (vocl_post_async(c->px, VOCL_OP_EVENT_IN, fill_event_in, &l) != CL_SUCCESS)
        return -1;
    if (vocl_post_async(e->px, VOCL_OP_EVENT_OUT, fill_event_out, &l) != CL_SUCCESS ||
        (relayed && vocl_relay(e->px, c->px, l.tag, VOCL_RELAY_EVENT, 0, 0) != CL_SUCCESS))
        return -1; /* B's user event fails when A is gone: so does the command */
    vocl_call_add_wait(c, l.mirror);
    /* Released once the command is sent; with no room to say so, here. */
    if (!vocl_ids_push(&c->mirrors, &c->nmirrors, &c->capmirrors, l.mirror))
        vocl_release_id(c->px, l.mirror);
    return 0;
}

void vocl_call_release_mirrors(struct vocl_call *c)
{
    for (cl_uint i = 0; i < c->nmirrors; i++)
        vocl_release_id(c->px, c->mirrors[i]);
    free(c->mirrors);
    c->mirrors = NULL;
    c->nmirrors = c->capmirrors = 0;
}
