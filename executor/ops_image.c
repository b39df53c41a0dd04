/*
 * ops_image.c - proxy handlers that create, read and write images (their
 * host rows travel as spans: ops_transfer.c).
 */
#include "internal.h"
#include "xfer.h"

#include <stdlib.h>

static void image_rw(struct exec_req *q, bool write)
{
    /* The two messages have the same fields (their data's direction aside). */
    struct vocl_msg_clEnqueueWriteImage_req m;
    const char *why;
    if (write) {
        why = vocl_dec_clEnqueueWriteImage_req(q->r, &m);
    } else {
        struct vocl_msg_clEnqueueReadImage_req rm;
        why = vocl_dec_clEnqueueReadImage_req(q->r, &rm);
        m = (struct vocl_msg_clEnqueueWriteImage_req){
            .queue = rm.queue, .image = rm.image, .blocking = rm.blocking, .origin = rm.origin,
            .region = rm.region, .row_pitch = rm.row_pitch, .slice_pitch = rm.slice_pitch,
            .wait_list = rm.wait_list, .event = rm.event, .span = rm.span, .data = rm.data};
    }
    if (why)
        exec_fail(q, why);
    cl_command_queue queue = exec_h(q, m.queue, VOCL_T_QUEUE, 0);
    cl_mem img = exec_h(q, m.image, VOCL_T_MEM, 0);
    cl_bool blocking = m.blocking;
    const size_t *origin = exec_va3(q, &m.origin);
    const size_t *region = exec_va3(q, &m.region);
    size_t row = (size_t)m.row_pitch, slice = (size_t)m.slice_pitch;
    cl_uint nwl;
    const cl_event *wl = exec_ha(q, VOCL_T_EVENT, &m.wait_list, &nwl);
    uint64_t ev_id = exec_newid(q, m.event);
    size_t span = (size_t)m.span;
    struct exec_xfer x;
    exec_xfer_use(q, &x, &m.data, span, write);
    cl_event ev = NULL;

    if (!origin || !region)
        exec_fail(q, "image transfer without origin or region");
    /* The native call checks the pitches against the image; the span must
     * cover them, which the element size and the type (asked of the image)
     * tell: a 1D array's images are host rows slice_pitch apart. */
    size_t elem = 0;
    cl_mem_object_type type = 0;
    if (img && !q->fail) {
        q->cl->clGetImageInfo(img, CL_IMAGE_ELEMENT_SIZE, sizeof(elem), &elem, NULL);
        q->cl->clGetMemObjectInfo(img, CL_MEM_TYPE, sizeof(type), &type, NULL);
    }
    if (x.mode != VOCL_DATA_HOSTPTR && region && elem) {
        const size_t zero[3] = {0, 0, 0};
        const size_t rows[3] = {region[0], 1, region[1]};
        exec_span_check(q, span, zero, type == CL_MEM_OBJECT_IMAGE1D_ARRAY ? rows : region, row,
                        slice, elem);
    }
    if (!exec_req_begin(q)) {
        exec_xfer_reject(q, &x, write);
        return;
    }
    bool owned;
    void *data = exec_span_begin(q, &x, write, &owned);
    cl_event e = NULL;
    cl_int rc = !data ? CL_OUT_OF_HOST_MEMORY
                : write ? q->cl->clEnqueueWriteImage(queue, img, CL_FALSE, origin, region, row,
                                                     slice, data, nwl, wl, &e)
                        : q->cl->clEnqueueReadImage(queue, img, CL_FALSE, origin, region, row,
                                                    slice, data, nwl, wl, &e);
    rc = exec_span_end(q, &x, write, rc, e, data, owned, blocking, ev_id ? &ev : NULL);
    exec_put_event(q, rc, ev_id, ev);
}

void exec_op_clEnqueueReadImage(struct exec_req *q)
{
    image_rw(q, false);
}

void exec_op_clEnqueueWriteImage(struct exec_req *q)
{
    image_rw(q, true);
}

void exec_op_clCreateImage(struct exec_req *q)
{
    struct vocl_msg_clCreateImage_req m;
    const char *why = vocl_dec_clCreateImage_req(q->r, &m);
    if (why)
        exec_fail(q, why);
    cl_context ctx = exec_h(q, m.context, VOCL_T_CONTEXT, 0);
    const cl_mem_properties *props = exec_props(q, &m.properties);
    cl_mem_flags flags = m.flags;
    cl_image_format fmt = {m.channel_order, m.channel_data_type};
    cl_image_desc desc = {0};
    desc.image_type = (cl_mem_object_type)m.image_type;
    desc.image_width = (size_t)m.width;
    desc.image_height = (size_t)m.height;
    desc.image_depth = (size_t)m.depth;
    desc.image_array_size = (size_t)m.array_size;
    desc.image_row_pitch = (size_t)m.row_pitch;
    desc.image_slice_pitch = (size_t)m.slice_pitch;
    desc.num_mip_levels = m.num_mip_levels;
    desc.num_samples = m.num_samples;
    desc.mem_object = exec_h(q, m.buffer, VOCL_T_MEM, 1);
    size_t span = (size_t)m.span;
    struct exec_xfer x;
    exec_xfer_use(q, &x, &m.data, span, true);
    uint64_t id = exec_newobj(q, m.new_id);
    cl_int err = CL_SUCCESS;
    bool owned = false;

    /* The native library reads as much as the descriptor says: never more
     * than the client sent. */
    if (x.mode != VOCL_DATA_NONE && x.mode != VOCL_DATA_HOSTPTR &&
        span < vocl_image_host_size(&fmt, &desc))
        exec_fail(q, "image data shorter than its descriptor");
    if (!exec_req_begin(q)) {
        exec_xfer_drain(q, &x);
        return;
    }
    void *host = NULL;
    if (x.mode != VOCL_DATA_NONE) {
        host = exec_span_begin(q, &x, true, &owned);
        if (!host) {
            vocl_wr_i32(q->w, CL_OUT_OF_HOST_MEMORY);
            return;
        }
        if (x.mode != VOCL_DATA_HOSTPTR)
            flags = (flags & ~(cl_mem_flags)CL_MEM_USE_HOST_PTR) | CL_MEM_COPY_HOST_PTR;
    }
    cl_mem img =
        props ? q->cl->clCreateImageWithProperties(ctx, props, flags, &fmt, &desc, host, &err)
              : q->cl->clCreateImage(ctx, flags, &fmt, &desc, host, &err);
    if (owned)
        exec_host_free(host);
    exec_reply_made(q, id, VOCL_T_MEM, img, err);
}
