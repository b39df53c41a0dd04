/*
 * ops_event.c - proxy handlers for waiting on events: answered when the
 * events complete, never waited for on the request thread (complete.c).
 */
#include "internal.h"

void exec_op_clWaitForEvents(struct exec_req *q)
{
    struct vocl_msg_clWaitForEvents_req m;
    const char *why = vocl_dec_clWaitForEvents_req(q->r, &m);
    if (why)
        exec_fail(q, why);
    cl_uint n;
    const cl_event *evs = exec_ha(q, VOCL_T_EVENT, &m.events, &n);
    if (!exec_req_begin(q))
        return;
    cl_int rc = CL_INVALID_VALUE;
    if (n && exec_reply_after(q, n, evs, NULL, 0, &rc))
        return;
    vocl_wr_i32(q->w, rc);
}

void exec_op_finish(struct exec_req *q)
{
    cl_command_queue queue = exec_rd_h(q, VOCL_T_QUEUE, 0);
    if (!exec_req_begin(q))
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
    bool later = exec_reply_after(q, 1, &m, NULL, 0, &rc);
    q->cl->clReleaseEvent(m);
    if (!later)
        vocl_wr_i32(q->w, rc);
}
