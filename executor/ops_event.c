/*
 * ops_event.c - proxy handlers for waiting on events: answered when the
 * events complete, never waited for on the request thread (complete.c).
 */
#include "proxyd.h"

void proxyd_op_clWaitForEvents(struct proxyd_req *q)
{
    struct vocl_msg_clWaitForEvents_req m;
    const char *why = vocl_dec_clWaitForEvents_req(q->r, &m);
    if (why)
        proxyd_fail(q, why);
    cl_uint n;
    const cl_event *evs = proxyd_ha(q, VOCL_T_EVENT, &m.events, &n);
    if (!proxyd_req_begin(q))
        return;
    cl_int rc = CL_INVALID_VALUE;
    if (n && proxyd_reply_after(q, n, evs, NULL, 0, &rc))
        return;
    vocl_wr_i32(q->w, rc);
}

void proxyd_op_finish(struct proxyd_req *q)
{
    cl_command_queue queue = proxyd_rd_h(q, VOCL_T_QUEUE, 0);
    if (!proxyd_req_begin(q))
        return;
    /* A marker without a wait list completes after every command before it. */
    cl_event m = NULL;
    cl_int rc = q->cl->clEnqueueMarkerWithWaitList(queue, 0, NULL, &m);
    if (rc == CL_SUCCESS)
        rc = q->cl->clFlush(queue);
    if (rc != CL_SUCCESS || !m) {
        if (m)
            q->cl->clReleaseEvent(m);
        vocl_wr_i32(q->w, rc == CL_SUCCESS ? q->cl->clFinish(queue) : rc);
        return;
    }
    bool later = proxyd_reply_after(q, 1, &m, NULL, 0, &rc);
    q->cl->clReleaseEvent(m);
    if (!later)
        vocl_wr_i32(q->w, rc);
}
