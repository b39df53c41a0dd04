/*
 * xfer.h - how one request's bulk data travels (ops_transfer.c), shared by
 * the handlers that create buffers (ops_buffer.c) and images (ops_image.c).
 * Private to those three files.
 */
#ifndef VOCL_EXECUTOR_XFER_H
#define VOCL_EXECUTOR_XFER_H

#include "internal.h"

/* Where the bytes of one transfer are, once its header is decoded. */
struct exec_xfer {
    uint8_t mode;
    size_t size;
    const void *inline_data; /* INLINE */
    size_t chunk;            /* CHUNKED */
    unsigned depth;          /* CHUNKED: chunks in flight, 1..EXEC_DEPTH_MAX */
    void *host;              /* HOSTPTR */
};

/* Checks the data fields a generated decoder read (d) for a transfer of size bytes. */
void exec_xfer_use(struct exec_req *q, struct exec_xfer *x, const struct vocl_data *d, size_t size,
                   bool data_in);
/* A rejected chunked write: its chunks drained, to keep the channel in
 * step, and the reply its handler makes sent after them (inbound.c). */
void exec_xfer_drain(struct exec_req *q, const struct exec_xfer *x);
/* A rejected request's data: drained (a write's) or answered empty (a read's). */
void exec_xfer_reject(struct exec_req *q, const struct exec_xfer *x, bool write);
/* A chunked write of x's bytes into [offset, +size) of buf through queue,
 * as clEnqueueWriteBuffer (ev_id: its event's, or 0), or into a new buffer
 * on a queue of its own (both released if it fails; id: the buffer's).
 * CL_SUCCESS: the session is parked, and answered once the chunks are in
 * (inbound.c); the handler writes nothing more.  Else nothing was taken. */
cl_int exec_inbound_write(struct exec_req *q, cl_command_queue queue, cl_mem buf, size_t offset,
                          const struct exec_xfer *x, cl_uint nwl, const cl_event *wl,
                          cl_bool blocking, uint64_t ev_id);
cl_int exec_inbound_create(struct exec_req *q, cl_command_queue queue, cl_mem buf,
                           const struct exec_xfer *x, uint64_t id);
/* Parks q's session to receive x's chunks into buf (x->size bytes,
 * exec_host_alloc'd, taken), then runs q's request again with buf as
 * s->preloaded.  Where it cannot park, the chunks are drained. */
void exec_inbound_whole(struct exec_req *q, const struct exec_xfer *x, uint8_t *buf);
/* Whether queue's device keeps buffers in host memory and the node lets
 * transfers use them in place (the direct path). */
bool exec_xfer_direct(struct exec_req *q, cl_command_queue queue);
/* The end of a command (status rc, event e, taken): a blocking one answered
 * once e completes (complete.c); its event handed over in *ev if asked. */
cl_int exec_finish_cmd(struct exec_req *q, cl_int rc, cl_event e, cl_bool blocking, cl_event *ev);

/* Spans: the host rows of rectangular transfers and images.  Where the
 * bytes are for the native call (*owned: to free), what follows it, and
 * whether the span holds the region. */
void *exec_span_begin(struct exec_req *q, const struct exec_xfer *x, bool write, bool *owned);
cl_int exec_span_end(struct exec_req *q, const struct exec_xfer *x, bool write, cl_int rc,
                     cl_event e, void *buf, bool owned, cl_bool blocking, cl_event *ev);
void exec_span_check(struct exec_req *q, size_t span, const size_t *origin, const size_t *region,
                     size_t row, size_t slice, size_t elem);

#endif
