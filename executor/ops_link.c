/*
 * ops_link.c - EVENT_OUT / EVENT_IN: a command on one proxy waits for an
 * event of another (libvocl/mirror.c, vocl_event_mirror).
 */
#include "internal.h"

#include <stdlib.h>

/*
 * A command here (IN) waits for an event of the peer
 * (OUT).  IN makes a user event for it; a thread receives the event's final
 * status from the peer and sets it.  OUT has a thread wait for the event and
 * send that status.  No request thread waits; the client only relays the
 * status between two daemons.  Where no thread can be had, the work waits
 * for one (exec_peer_start), never runs on the serving thread.
 */
struct event_link {
    struct exec_peer_link l;
    cl_event ev;
};

static void link_free(struct event_link *l)
{
    exec_peer_drop(&l->l);
    free(l);
}

static void *event_out_thread(void *arg)
{
    struct event_link *l = arg;
    cl_int st = CL_INVALID_EVENT;
    if (l->ev) {
        l->l.cl->clWaitForEvents(1, &l->ev);
        if (l->l.cl->clGetEventInfo(l->ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st,
                                    NULL) != CL_SUCCESS)
            st = CL_INVALID_EVENT;
        l->l.cl->clReleaseEvent(l->ev);
    }
    int32_t wire = st;
    exec_peer_send(&l->l, &wire, sizeof(wire));
    link_free(l);
    return NULL;
}

static void *event_in_thread(void *arg)
{
    struct event_link *l = arg;
    int32_t st = -1;
    size_t got = 0;
    if (exec_peer_recv(&l->l, &st, sizeof(st), &got) || got != sizeof(st))
        st = -1;
    l->l.cl->clSetUserEventStatus(l->ev, st < 0 ? st : CL_COMPLETE);
    l->l.cl->clReleaseEvent(l->ev);
    link_free(l);
    return NULL;
}

static struct event_link *new_link(struct exec_req *q, uint32_t peer, uint32_t tag)
{
    struct event_link *l = calloc(1, sizeof(*l));
    if (!l) {
        exec_fail(q, "out of memory");
        return NULL;
    }
    exec_peer_set(q, &l->l, peer, tag, true);
    return l;
}

void exec_op_event_out(struct exec_req *q)
{
    struct vocl_msg_EVENT_OUT_req m;
    vocl_dec_EVENT_OUT_req(q->r, &m); /* (fixed fields: truncation is all that fails) */
    cl_event ev = q->r->fail ? NULL : exec_h(q, m.event, VOCL_T_EVENT, 0);
    struct event_link *l = new_link(q, m.peer, m.tag);
    if (!l)
        return;
    if (exec_req_begin(q) && q->cl->clRetainEvent(ev) == CL_SUCCESS)
        l->ev = ev;
    cl_int rc = l->ev ? CL_SUCCESS : CL_INVALID_EVENT; /* l is the thread's from here */
    /* Without the event, the thread tells the peer of a failure at once
     * (even that send may wait for a relaying client that is slow). */
    if (!l->l.sane)
        link_free(l);
    else
        exec_peer_start(&l->l, event_out_thread, l);
    if (!q->fail)
        vocl_wr_i32(q->w, rc);
}

void exec_op_event_in(struct exec_req *q)
{
    struct vocl_msg_EVENT_IN_req m;
    vocl_dec_EVENT_IN_req(q->r, &m); /* (fixed fields: truncation is all that fails) */
    cl_context ctx = q->r->fail ? NULL : exec_h(q, m.context, VOCL_T_CONTEXT, 0);
    struct event_link *l = new_link(q, m.peer, m.tag);
    uint64_t ev_id = q->r->fail ? 0 : exec_newid(q, m.event);
    cl_int rc = CL_OUT_OF_RESOURCES;
    if (!l)
        return;
    if (!ev_id)
        exec_fail(q, "event link without an event");
    if (!exec_req_begin(q)) {
        link_free(l);
        return;
    }
    l->ev = q->cl->clCreateUserEvent(ctx, &rc);
    if (l->ev) {
        q->cl->clRetainEvent(l->ev); /* one for the session, one for the thread */
        exec_put_new(q, ev_id, VOCL_T_EVENT, l->ev);
        exec_peer_start(&l->l, event_in_thread, l);
    } else {
        link_free(l);
    }
    vocl_wr_i32(q->w, rc);
}
