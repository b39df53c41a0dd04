/*
 * image.c - images, and the rectangular transfers of buffers and images.
 *
 * A rectangular transfer touches rows spread over the host memory.  Remote,
 * the rows travel as one span (from the first byte of the first row to the
 * last byte of the last row, pitches as given); the proxy lands them in a
 * staging area of the same shape.  Reads are scattered row by row on the
 * client, so bytes between the rows are never written.
 */
#include "vocl.h"

#include <stdlib.h>
#include <string.h>

/* Receives a span of n bytes into a new buffer (remote reads). */
static void *recv_span(struct vocl_call *c, size_t n)
{
    void *buf = malloc(n ? n : 1);
    if (!buf) {
        vocl_call_error(c, CL_OUT_OF_HOST_MEMORY);
        return NULL;
    }
    if (vocl_xfer_recv(c, buf, n)) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* The host side of a rectangular transfer. */
struct rect {
    size_t row_bytes, rows, slices; /* what is copied */
    size_t row_pitch, slice_pitch;  /* host pitches, defaults applied */
    size_t offset;                  /* of the first byte, from the host pointer */
    size_t span;
};

static void rect_init(struct rect *r, const size_t origin_bytes[3], size_t row_bytes,
                      size_t rows, size_t slices, size_t row_pitch, size_t slice_pitch)
{
    r->row_bytes = row_bytes;
    r->rows = rows;
    r->slices = slices;
    r->row_pitch = row_pitch ? row_pitch : row_bytes;
    r->slice_pitch = slice_pitch ? slice_pitch : r->row_pitch * rows;
    r->offset = origin_bytes[2] * r->slice_pitch + origin_bytes[1] * r->row_pitch + origin_bytes[0];
    r->span = (slices - 1) * r->slice_pitch + (rows - 1) * r->row_pitch + row_bytes;
}

static void rect_scatter(const struct rect *r, char *dst, const char *span)
{
    for (size_t z = 0; z < r->slices; z++)
        for (size_t y = 0; y < r->rows; y++) {
            size_t off = z * r->slice_pitch + y * r->row_pitch;
            memcpy(dst + off, span + off, r->row_bytes);
        }
}

/*
 * Moves the span of rect r after the request's fields: a write sends it, a
 * read scatters it into place.  In-process, the executor gets local_ptr and
 * the native library walks the rows itself.
 */
static struct vocl_data span_data(struct vocl_call *c, bool write, void *local_ptr, char *host,
                                  const struct rect *r)
{
    return write ? vocl_xfer_out(c, c->px->local ? local_ptr : host, r->span)
                 : vocl_xfer_in(c, local_ptr, r->span);
}

static int move_span(struct vocl_call *c, bool write, bool blocking, char *host,
                     const struct rect *r)
{
    if (c->async) /* a non-blocking read into packed rows: in place, with its queue's chunks */
        return vocl_xfer_recv(c, host, r->span);
    /* A write is sent from the host memory itself: only a blocking one is a
     * synchronisation (a non-blocking one that waited for its queue's reads
     * hung behind a read its user event held: CTS events callbacks_simultaneous). */
    c->sync = !write || blocking; /* a read's span is staged here: landed before the scatter */
    if (write)
        return vocl_xfer_send(c, host, r->span);
    if (c->px->local)
        return vocl_call_send(c);
    char *span = recv_span(c, r->span);
    if (!span)
        return -1;
    rect_scatter(r, host, span);
    free(span);
    return 0;
}

/* A non-blocking write of the host rows r (from p) that a read is still to
 * fill: it may not wait for that here, so it is enqueued as a copy from a
 * buffer filled once the read has landed (hostreads.c).  False: no such
 * read (or a local proxy), nothing done; true: *err is the call's. */
static bool deferred(struct vocl_obj *q, cl_command_type type, cl_mem dst, const size_t *origin,
                     const size_t *region, size_t row_pitch, size_t slice_pitch, const void *p,
                     const struct rect *r, cl_uint nwl, const cl_event *wl, cl_event *event,
                     cl_int *err)
{
    if (q->px->local)
        return false;
    struct vocl_deferred_write w = {
        .type = type, .dst = dst, .row_pitch = row_pitch, .slice_pitch = slice_pitch,
        .rows = {p, r->row_bytes, r->rows, r->slices, r->row_pitch, r->slice_pitch}};
    memcpy(w.origin, origin, sizeof(w.origin));
    memcpy(w.region, region, sizeof(w.region));
    return vocl_write_deferred(q, &w, nwl, wl, event, err);
}

static bool region_ok(const size_t *region)
{
    return region && region[0] && region[1] && region[2];
}

/* --- rectangular buffer transfers ------------------------------------------------------------------- */

static cl_int buffer_rect(bool write, cl_command_queue command_queue, cl_mem buffer,
                          cl_bool blocking, const size_t *buffer_origin,
                          const size_t *host_origin, const size_t *region,
                          size_t buffer_row_pitch, size_t buffer_slice_pitch,
                          size_t host_row_pitch, size_t host_slice_pitch, void *ptr,
                          cl_uint nwl, const cl_event *wl, cl_event *event)
{
    struct vocl_call c;
    struct rect r;
    vocl_call_init(&c);
    struct vocl_obj *q = vocl_call_h(&c, command_queue, VOCL_T_QUEUE, 0);
    struct vocl_obj *m = vocl_call_h(&c, buffer, VOCL_T_MEM, 0);
    vocl_call_wl(&c, nwl, wl);
    if (!c.err && (!ptr || !buffer_origin || !host_origin || !region_ok(region)))
        vocl_call_error(&c, CL_INVALID_VALUE);
    if (!c.err && vocl_host_forbids(m, !write, write))
        vocl_call_error(&c, CL_INVALID_OPERATION);
    if (c.err) {
        vocl_call_end(&c);
        return c.err;
    }
    rect_init(&r, host_origin, region[0], region[1], region[2], host_row_pitch,
              host_slice_pitch);
    const size_t zero[3] = {0, 0, 0};
    char *host = (char *)ptr + r.offset;
    cl_int err;
    if (write && !blocking &&
        deferred(q, CL_COMMAND_WRITE_BUFFER_RECT, buffer, buffer_origin, region, buffer_row_pitch,
                 buffer_slice_pitch, host, &r, nwl, wl, event, &err)) {
        vocl_call_end(&c);
        return err;
    }
    vocl_mem_use(&c, m, write ? VOCL_USE_RW : VOCL_USE_R);
    if (write)
        vocl_call_reads_host(&c, host, r.span);
    if (vocl_call_start(&c, write ? VOCL_OP_clEnqueueWriteBufferRect
                                  : VOCL_OP_clEnqueueReadBufferRect) == 0) {
        uint64_t ev_id = event ? vocl_call_new_id(&c) : 0;
        /* (The read's message has the same fields, its data the other way.) */
        struct vocl_msg_clEnqueueWriteBufferRect_req mw = {
            .queue = q->id,
            .buffer = vocl_id_on(m, c.px),
            .blocking = blocking ? 1 : 0,
            .buffer_origin = vocl_va3_of(buffer_origin),
            /* Remote, the span starts at the first byte: the host origin is 0. */
            .host_origin = vocl_va3_of(c.px->local ? host_origin : zero),
            .region = vocl_va3_of(region),
            .buffer_row_pitch = buffer_row_pitch,
            .buffer_slice_pitch = buffer_slice_pitch,
            .host_row_pitch = r.row_pitch,
            .host_slice_pitch = r.slice_pitch,
            .wait_list = vocl_call_wl_ids(&c, nwl, wl),
            .event = ev_id,
            .span = r.span,
            .data = span_data(&c, write, ptr, host, &r)};
        if (write)
            vocl_enc_clEnqueueWriteBufferRect_req(c.w, &mw);
        else
            vocl_enc_clEnqueueReadBufferRect_req(
                c.w, &(struct vocl_msg_clEnqueueReadBufferRect_req){
                         .queue = mw.queue, .buffer = mw.buffer, .blocking = mw.blocking,
                         .buffer_origin = mw.buffer_origin, .host_origin = mw.host_origin,
                         .region = mw.region, .buffer_row_pitch = mw.buffer_row_pitch,
                         .buffer_slice_pitch = mw.buffer_slice_pitch,
                         .host_row_pitch = mw.host_row_pitch, .host_slice_pitch = mw.host_slice_pitch,
                         .wait_list = mw.wait_list, .event = mw.event, .span = mw.span,
                         .data = mw.data});
        if (move_span(&c, write, blocking, host, &r) == 0 && event)
            *event = (cl_event)vocl_call_new_event(&c, ev_id, q);
    }
    vocl_call_end(&c);
    return c.err;
}

cl_int CL_API_CALL vocl_hand_clEnqueueReadBufferRect(
    cl_command_queue command_queue, cl_mem buffer, cl_bool blocking_read,
    const size_t *buffer_origin, const size_t *host_origin, const size_t *region,
    size_t buffer_row_pitch, size_t buffer_slice_pitch, size_t host_row_pitch,
    size_t host_slice_pitch, void *ptr, cl_uint num_events_in_wait_list,
    const cl_event *event_wait_list, cl_event *event)
{
    return buffer_rect(false, command_queue, buffer, blocking_read, buffer_origin, host_origin,
                       region, buffer_row_pitch, buffer_slice_pitch, host_row_pitch,
                       host_slice_pitch, ptr, num_events_in_wait_list, event_wait_list, event);
}

cl_int CL_API_CALL vocl_hand_clEnqueueWriteBufferRect(
    cl_command_queue command_queue, cl_mem buffer, cl_bool blocking_write,
    const size_t *buffer_origin, const size_t *host_origin, const size_t *region,
    size_t buffer_row_pitch, size_t buffer_slice_pitch, size_t host_row_pitch,
    size_t host_slice_pitch, const void *ptr, cl_uint num_events_in_wait_list,
    const cl_event *event_wait_list, cl_event *event)
{
    return buffer_rect(true, command_queue, buffer, blocking_write, buffer_origin, host_origin,
                       region, buffer_row_pitch, buffer_slice_pitch, host_row_pitch,
                       host_slice_pitch, (void *)ptr, num_events_in_wait_list, event_wait_list,
                       event);
}

/* --- images ------------------------------------------------------------------------------------------------ */

/* Rows and slices of an image's host data, by image type. */
static void image_shape(cl_mem_object_type t, const size_t region[3], size_t *rows,
                        size_t *slices, bool *rows_are_slices)
{
    *rows_are_slices = false;
    *rows = region[1];
    *slices = region[2];
    if (t == CL_MEM_OBJECT_IMAGE1D_ARRAY) {
        /* A 1D array's "rows" are its slices: they step by the slice pitch. */
        *rows_are_slices = true;
        *rows = 1;
        *slices = region[1];
    }
}

static cl_mem create_image(cl_context context, const cl_mem_properties *properties,
                           cl_mem_flags flags, const cl_image_format *format,
                           const cl_image_desc *desc, void *host_ptr, cl_int *errcode_ret)
{
    struct vocl_call c;
    struct vocl_obj *img = NULL;
    vocl_call_init(&c);
    struct vocl_obj *ctx = vocl_call_h(&c, context, VOCL_T_CONTEXT, 0);
    struct vocl_obj *buf = NULL;
    if (!c.err && !format)
        vocl_call_error(&c, CL_INVALID_IMAGE_FORMAT_DESCRIPTOR);
    if (!c.err && !desc)
        vocl_call_error(&c, CL_INVALID_IMAGE_DESCRIPTOR);
    if (!c.err && desc->mem_object)
        buf = vocl_call_h(&c, desc->mem_object, VOCL_T_MEM, 0);
    if (!c.err && (!host_ptr) != !(flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR)))
        vocl_call_error(&c, CL_INVALID_HOST_PTR);
    size_t span = 0, elem = 0;
    if (!c.err) {
        elem = vocl_image_pixel_size(format->image_channel_order, format->image_channel_data_type);
        span = host_ptr ? vocl_image_host_size(format, desc) : 0;
    }
    for (cl_uint rep = 0; vocl_call_each(&c, ctx, rep); rep++) {
        /* Host data goes to the first proxy, as for buffers. */
        void *data = rep == 0 ? host_ptr : NULL;
        if (vocl_call_start(&c, VOCL_OP_clCreateImage))
            break;
        uint64_t props[VOCL_PROPS_MAX];
        struct vocl_msg_clCreateImage_req m = {
            .context = vocl_id_on(ctx, c.px),
            .properties = vocl_props_ids(properties, props),
            /* Never the host access flags: maps read and write every image. */
            .flags = (data ? flags : flags & ~(cl_mem_flags)(CL_MEM_USE_HOST_PTR |
                                                            CL_MEM_COPY_HOST_PTR)) &
                     ~(cl_mem_flags)VOCL_HOST_ACCESS,
            .channel_order = format->image_channel_order,
            .channel_data_type = format->image_channel_data_type,
            .image_type = desc->image_type,
            .width = desc->image_width,
            .height = desc->image_height,
            .depth = desc->image_depth,
            .array_size = desc->image_array_size,
            .row_pitch = desc->image_row_pitch,
            .slice_pitch = desc->image_slice_pitch,
            .num_mip_levels = desc->num_mip_levels,
            .num_samples = desc->num_samples,
            .buffer = vocl_id_on(buf, c.px),
            .span = data ? span : 0,
            .data = vocl_xfer_out(&c, data, span),
            .new_id = vocl_call_new_id(&c)};
        vocl_enc_clCreateImage_req(c.w, &m);
        vocl_mem_create_sent(&c, &img, rep, ctx, buf, data, span, host_ptr != NULL, m.new_id);
    }
    vocl_call_end(&c);
    if (c.err && img) {
        clReleaseMemObject((cl_mem)img);
        img = NULL;
    }
    if (img) {
        size_t w = desc->image_width, h = desc->image_height, d = desc->image_depth,
               arr = desc->image_array_size;
        switch (desc->image_type) {
        case CL_MEM_OBJECT_IMAGE1D_ARRAY: h = arr, d = 1; break;
        case CL_MEM_OBJECT_IMAGE2D_ARRAY: d = arr; break;
        case CL_MEM_OBJECT_IMAGE3D: break;
        case CL_MEM_OBJECT_IMAGE2D: d = 1; break;
        default: h = d = 1; break;
        }
        struct vocl_mem *im = vocl_as_mem(img);
        im->dims[0] = w, im->dims[1] = h ? h : 1, im->dims[2] = d ? d : 1;
        im->mem_type = desc->image_type;
        im->format = *format;
        im->desc = *desc;
        im->elem_size = elem;
        im->mem_flags = flags;
        im->host_ptr = (flags & CL_MEM_USE_HOST_PTR) ? host_ptr : NULL;
    }
    if (errcode_ret)
        *errcode_ret = c.err;
    return (cl_mem)img;
}

cl_mem CL_API_CALL vocl_hand_clCreateImage(cl_context context, cl_mem_flags flags,
                                              const cl_image_format *image_format,
                                              const cl_image_desc *image_desc, void *host_ptr,
                                              cl_int *errcode_ret)
{
    return create_image(context, NULL, flags, image_format, image_desc, host_ptr, errcode_ret);
}

cl_mem CL_API_CALL vocl_hand_clCreateImageWithProperties(
    cl_context context, const cl_mem_properties *properties, cl_mem_flags flags,
    const cl_image_format *image_format, const cl_image_desc *image_desc, void *host_ptr,
    cl_int *errcode_ret)
{
    return create_image(context, properties, flags, image_format, image_desc, host_ptr,
                        errcode_ret);
}

cl_mem CL_API_CALL vocl_hand_clCreateImage2D(cl_context context, cl_mem_flags flags,
                                                const cl_image_format *image_format,
                                                size_t image_width, size_t image_height,
                                                size_t image_row_pitch, void *host_ptr,
                                                cl_int *errcode_ret)
{
    cl_image_desc d = {.image_type = CL_MEM_OBJECT_IMAGE2D, .image_width = image_width,
                       .image_height = image_height, .image_row_pitch = image_row_pitch};
    return create_image(context, NULL, flags, image_format, &d, host_ptr, errcode_ret);
}

cl_mem CL_API_CALL vocl_hand_clCreateImage3D(cl_context context, cl_mem_flags flags,
                                                const cl_image_format *image_format,
                                                size_t image_width, size_t image_height,
                                                size_t image_depth, size_t image_row_pitch,
                                                size_t image_slice_pitch, void *host_ptr,
                                                cl_int *errcode_ret)
{
    cl_image_desc d = {.image_type = CL_MEM_OBJECT_IMAGE3D, .image_width = image_width,
                       .image_height = image_height, .image_depth = image_depth,
                       .image_row_pitch = image_row_pitch, .image_slice_pitch = image_slice_pitch};
    return create_image(context, NULL, flags, image_format, &d, host_ptr, errcode_ret);
}

cl_int vocl_image_rw(bool write, bool host, cl_command_queue command_queue, cl_mem image,
                     cl_bool blocking, const size_t *origin, const size_t *region,
                     size_t row_pitch, size_t slice_pitch, void *ptr, cl_uint nwl,
                     const cl_event *wl, cl_event *event)
{
    struct vocl_call c;
    vocl_call_init(&c);
    struct vocl_obj *q = vocl_call_h(&c, command_queue, VOCL_T_QUEUE, 0);
    struct vocl_obj *m = vocl_call_h(&c, image, VOCL_T_MEM, 0);
    vocl_call_wl(&c, nwl, wl);
    if (!c.err && (!ptr || !origin || !region_ok(region)))
        vocl_call_error(&c, CL_INVALID_VALUE);
    if (!c.err && host && vocl_host_forbids(m, !write, write))
        vocl_call_error(&c, CL_INVALID_OPERATION);
    const struct vocl_mem *im = vocl_as_mem(m);
    if (!c.err && !im->elem_size)
        vocl_call_error(&c, CL_INVALID_MEM_OBJECT);
    if (c.err) {
        vocl_call_end(&c);
        return c.err;
    }
    size_t rows, slices;
    bool rs;
    image_shape(im->mem_type, region, &rows, &slices, &rs);
    struct rect r;
    const size_t zero[3] = {0, 0, 0};
    size_t rp = row_pitch ? row_pitch : region[0] * im->elem_size;
    rect_init(&r, zero, region[0] * im->elem_size, rows, slices, rp,
              rs ? (slice_pitch ? slice_pitch : rp) : slice_pitch);
    cl_int err;
    if (write && !blocking &&
        deferred(q, CL_COMMAND_WRITE_IMAGE, image, origin, region, 0, 0, ptr, &r, nwl, wl, event,
                 &err)) {
        vocl_call_end(&c);
        return err;
    }
    vocl_mem_use(&c, m, write ? VOCL_USE_RW : VOCL_USE_R);
    /* A non-blocking read whose rows and slices are packed (a map's shadow)
     * needs no scatter: it does not wait, as a buffer's does not. */
    c.async = !write && !blocking && !c.err && !c.px->local && r.row_pitch == r.row_bytes &&
              (slices == 1 || r.slice_pitch == r.row_pitch * rows);
    if (write)
        vocl_call_reads_host(&c, ptr, r.span);
    if (vocl_call_start(&c, write ? VOCL_OP_clEnqueueWriteImage : VOCL_OP_clEnqueueReadImage) ==
        0) {
        uint64_t ev_id = event ? vocl_call_new_id(&c) : 0;
        /* (The read's message has the same fields, its data the other way.) */
        struct vocl_msg_clEnqueueWriteImage_req mw = {
            .queue = q->id,
            .image = vocl_id_on(m, c.px),
            .blocking = blocking ? 1 : 0,
            .origin = vocl_va3_of(origin),
            .region = vocl_va3_of(region),
            .row_pitch = row_pitch,
            .slice_pitch = slice_pitch,
            .wait_list = vocl_call_wl_ids(&c, nwl, wl),
            .event = ev_id,
            .span = r.span,
            .data = span_data(&c, write, ptr, ptr, &r)};
        if (write)
            vocl_enc_clEnqueueWriteImage_req(c.w, &mw);
        else
            vocl_enc_clEnqueueReadImage_req(
                c.w, &(struct vocl_msg_clEnqueueReadImage_req){
                         .queue = mw.queue, .image = mw.image, .blocking = mw.blocking,
                         .origin = mw.origin, .region = mw.region, .row_pitch = mw.row_pitch,
                         .slice_pitch = mw.slice_pitch, .wait_list = mw.wait_list,
                         .event = mw.event, .span = mw.span, .data = mw.data});
        int moved = move_span(&c, write, blocking, ptr, &r);
        if (moved == 0 && c.async) { /* (its events complete once its data is here: read_buffer) */
            vocl_raise(&vocl_as_queue(q)->data_ticket, c.posted);
            vocl_host_read_posted(c.px, q, c.posted, ptr, r.span);
        }
        if (moved == 0 && event) {
            struct vocl_obj *e = vocl_call_new_event(&c, ev_id, q);
            if (e && blocking)
                vocl_event_known_complete(e);
            if (e && c.async)
                vocl_event_lands(e);
            *event = (cl_event)e;
        }
    }
    vocl_call_end(&c);
    return c.err;
}

cl_int CL_API_CALL vocl_hand_clEnqueueReadImage(cl_command_queue command_queue, cl_mem image,
                                                   cl_bool blocking_read, const size_t *origin,
                                                   const size_t *region, size_t row_pitch,
                                                   size_t slice_pitch, void *ptr,
                                                   cl_uint num_events_in_wait_list,
                                                   const cl_event *event_wait_list,
                                                   cl_event *event)
{
    return vocl_image_rw(false, true, command_queue, image, blocking_read, origin, region,
                         row_pitch, slice_pitch, ptr, num_events_in_wait_list, event_wait_list,
                         event);
}

cl_int CL_API_CALL vocl_hand_clEnqueueWriteImage(cl_command_queue command_queue, cl_mem image,
                                                    cl_bool blocking_write, const size_t *origin,
                                                    const size_t *region, size_t input_row_pitch,
                                                    size_t input_slice_pitch, const void *ptr,
                                                    cl_uint num_events_in_wait_list,
                                                    const cl_event *event_wait_list,
                                                    cl_event *event)
{
    return vocl_image_rw(true, true, command_queue, image, blocking_write, origin, region,
                         input_row_pitch, input_slice_pitch, (void *)ptr,
                         num_events_in_wait_list, event_wait_list, event);
}

/*
 * Image maps: a host shadow with tightly packed rows, read on map (unless
 * the map discards the contents) and written back on unmap, for local and
 * remote images alike.
 */
void * CL_API_CALL vocl_hand_clEnqueueMapImage(
    cl_command_queue command_queue, cl_mem image, cl_bool blocking_map, cl_map_flags map_flags,
    const size_t *origin, const size_t *region, size_t *image_row_pitch,
    size_t *image_slice_pitch, cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
    cl_event *event, cl_int *errcode_ret)
{
    struct vocl_mem *m = vocl_as_mem(vocl_lookup(image, VOCL_T_MEM));
    struct vocl_mapping *mp = NULL;
    cl_int err = vocl_lookup(command_queue, VOCL_T_QUEUE) ? CL_SUCCESS : CL_INVALID_COMMAND_QUEUE;
    if (!err && (!m || !m->elem_size))
        err = CL_INVALID_MEM_OBJECT;
    if (!err && (!origin || !region_ok(region) || !image_row_pitch))
        err = CL_INVALID_VALUE;
    if (!err && vocl_host_forbids(&m->obj, map_flags & CL_MAP_READ,
                                  map_flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION)))
        err = CL_INVALID_OPERATION;
    if (!err) {
        size_t rows, slices;
        bool rs;
        image_shape(m->mem_type, region, &rows, &slices, &rs);
        size_t row = region[0] * m->elem_size;
        /* 1D arrays step by the slice pitch; 2D and 3D by rows, then slices.
         * A 1D or 2D image has no slice pitch: the native read and write
         * must be given 0 (NVIDIA refuses anything else). */
        bool flat = m->mem_type == CL_MEM_OBJECT_IMAGE2D || m->mem_type == CL_MEM_OBJECT_IMAGE1D ||
                    m->mem_type == CL_MEM_OBJECT_IMAGE1D_BUFFER;
        size_t slice = rs ? row : flat ? 0 : row * region[1];
        size_t size = rs ? row * region[1] : row * region[1] * region[2];
        void *at = NULL;
        if (m->host_ptr) {
            /* CL_MEM_USE_HOST_PTR: the spec maps to the application's own
             * memory, at the origin, with the pitches the image was made with. */
            row = m->desc.image_row_pitch ? m->desc.image_row_pitch
                                          : m->desc.image_width * m->elem_size;
            slice = flat ? 0
                    : m->desc.image_slice_pitch ? m->desc.image_slice_pitch
                    : rs                        ? row
                                                : row * m->desc.image_height;
            at = (char *)m->host_ptr + origin[0] * m->elem_size +
                 (rs ? origin[1] * slice : origin[1] * row + origin[2] * slice);
        }
        mp = calloc(1, sizeof(*mp));
        void *shadow = at ? at : malloc(size ? size : 1);
        if (!mp || !shadow) {
            free(mp);
            if (!at)
                free(shadow);
            mp = NULL;
            err = CL_OUT_OF_HOST_MEMORY;
        } else {
            *mp = (struct vocl_mapping){.ptr = shadow, .owned = !at, .image = true,
                                        .flags = map_flags, .row_pitch = row,
                                        .slice_pitch = slice};
            memcpy(mp->origin, origin, sizeof(mp->origin));
            memcpy(mp->region, region, sizeof(mp->region));
        }
    }
    if (!err) {
        if (map_flags & CL_MAP_WRITE_INVALIDATE_REGION)
            err = clEnqueueMarkerWithWaitList(command_queue, num_events_in_wait_list,
                                              event_wait_list, event);
        else /* (non-blocking: its wait list may hold a user event this thread sets later) */
            err = vocl_image_rw(false, false, command_queue, image, blocking_map, origin, region,
                                mp->row_pitch, mp->slice_pitch, mp->ptr,
                                num_events_in_wait_list, event_wait_list, event);
        if (!err && !(map_flags & CL_MAP_WRITE_INVALIDATE_REGION))
            vocl_mapping_pending(mp, blocking_map, command_queue);
        if (err) {
            if (mp->owned)
                free(mp->ptr);
            free(mp);
            mp = NULL;
        }
    }
    if (mp) {
        if (event)
            vocl_event_says(vocl_lookup(*event, VOCL_T_EVENT), CL_COMMAND_MAP_IMAGE);
        *image_row_pitch = mp->row_pitch;
        if (image_slice_pitch)
            *image_slice_pitch = mp->slice_pitch;
        vocl_mapping_add(m, mp);
    }
    if (errcode_ret)
        *errcode_ret = err;
    return mp ? mp->ptr : NULL;
}
