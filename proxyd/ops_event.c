/*
 * ops_event.c - proxy handlers for waiting on events.
 */
#include "proxyd.h"

void proxyd_op_clWaitForEvents(struct proxyd_req *q)
{
    cl_uint n;
    const cl_event *evs = proxyd_rd_ha(q, VOCL_T_EVENT, &n);
    if (!proxyd_req_begin(q))
        return;
    vocl_wr_i32(q->w, n ? q->cl->clWaitForEvents(n, evs) : CL_INVALID_VALUE);
}
