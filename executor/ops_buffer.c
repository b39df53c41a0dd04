/*
 * ops_buffer.c - proxy handlers that create buffers and sub-buffers (a new
 * buffer's data travels as any transfer's: ops_transfer.c).
 */
#include "internal.h"
#include "xfer.h"

/* A temporary queue on the context's first device, to fill a new buffer. */
static cl_command_queue context_queue(struct exec_req *q, cl_context ctx)
{
    cl_device_id devs[64];
    size_t sz = 0;
    cl_int err;
    if (q->cl->clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof(devs), devs, &sz) != CL_SUCCESS ||
        sz < sizeof(cl_device_id))
        return NULL;
    return q->cl->clCreateCommandQueue(ctx, devs[0], 0, &err);
}

void exec_op_clCreateBuffer(struct exec_req *q)
{
    struct vocl_msg_clCreateBuffer_req m;
    const char *why = vocl_dec_clCreateBuffer_req(q->r, &m);
    if (why)
        exec_fail(q, why);
    cl_context ctx = exec_h(q, m.context, VOCL_T_CONTEXT, 0);
    const cl_mem_properties *props = exec_props(q, &m.properties);
    cl_mem_flags flags = m.flags;
    size_t size = (size_t)m.size;
    struct exec_xfer x;
    exec_xfer_use(q, &x, &m.data, size, true);
    uint64_t id = exec_newobj(q, m.new_id);
    cl_int err = CL_SUCCESS;
    cl_mem mem = NULL;

    if (!exec_req_begin(q)) {
        exec_xfer_drain(q, &x);
        return;
    }
    void *host = x.mode == VOCL_DATA_INLINE    ? (void *)x.inline_data
                 : x.mode == VOCL_DATA_HOSTPTR ? x.host
                                               : NULL;
    if (x.mode == VOCL_DATA_INLINE || x.mode == VOCL_DATA_CHUNKED)
        flags = (flags & ~(cl_mem_flags)CL_MEM_USE_HOST_PTR) |
                (x.mode == VOCL_DATA_INLINE ? CL_MEM_COPY_HOST_PTR : 0);
    if (x.mode == VOCL_DATA_CHUNKED)
        flags &= ~(cl_mem_flags)CL_MEM_COPY_HOST_PTR;
    if (props)
        mem = q->cl->clCreateBufferWithProperties(ctx, props, flags, size, host, &err);
    else if (x.mode == VOCL_DATA_NONE)
        mem = exec_shm_buffer(q, ctx, flags, size, &err);
    if (!mem && !props && err == CL_SUCCESS)
        mem = q->cl->clCreateBuffer(ctx, flags, size, host, &err);
    if (x.mode == VOCL_DATA_CHUNKED) {
        cl_command_queue tq = mem ? context_queue(q, ctx) : NULL;
        if (mem && !tq)
            err = CL_OUT_OF_RESOURCES;
        /* A new buffer on a queue of its own: nothing can hold its data up.
         * Recorded and answered once the data is in (inbound.c). */
        if (tq && (err = exec_inbound_create(q, tq, mem, &x, id)) == CL_SUCCESS)
            return;
        if (tq)
            q->cl->clReleaseCommandQueue(tq);
        exec_xfer_drain(q, &x);
        if (mem) {
            q->cl->clReleaseMemObject(mem);
            mem = NULL;
        }
    }
    exec_reply_made(q, id, VOCL_T_MEM, mem, err);
}

void exec_op_clCreateSubBuffer(struct exec_req *q)
{
    struct vocl_msg_clCreateSubBuffer_req m;
    vocl_dec_clCreateSubBuffer_req(q->r, &m); /* (fixed fields: truncation is all that fails) */
    cl_mem buf = exec_h(q, m.buffer, VOCL_T_MEM, 0);
    cl_mem_flags flags = m.flags;
    cl_buffer_create_type type = (cl_buffer_create_type)m.create_type;
    cl_buffer_region region = {(size_t)m.origin, (size_t)m.size};
    uint64_t id = exec_newobj(q, m.new_id);
    cl_int err = CL_SUCCESS;
    if (!exec_req_begin(q))
        return;
    cl_mem mem = q->cl->clCreateSubBuffer(buf, flags, type, &region, &err);
    exec_reply_made(q, id, VOCL_T_MEM, mem, err);
}
