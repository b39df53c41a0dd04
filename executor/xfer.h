/*
 * xfer.h - how one request's bulk data travels (ops_transfer.c), shared by
 * the handlers that create buffers (ops_buffer.c) and images (ops_image.c).
 * Private to those three files.
 */
#ifndef VOCL_EXECUTOR_XFER_H
#define VOCL_EXECUTOR_XFER_H

#include "proxyd.h"

/* Where the bytes of one transfer are, once its header is decoded. */
struct proxyd_xfer {
    uint8_t mode;
    size_t size;
    const void *inline_data; /* INLINE */
    size_t chunk;            /* CHUNKED */
    unsigned depth;          /* CHUNKED: chunks in flight, 1..PROXYD_DEPTH_MAX */
    void *host;              /* HOSTPTR */
};

/* Checks the data fields a generated decoder read (d) for a transfer of size bytes. */
void proxyd_xfer_use(struct proxyd_req *q, struct proxyd_xfer *x, const struct vocl_data *d,
                     size_t size, bool data_in);
/* A rejected chunked write: its chunks drained, to keep the channel in step. */
void proxyd_xfer_drain(struct proxyd_req *q, const struct proxyd_xfer *x);
/* A rejected request's data: drained (a write's) or answered empty (a read's). */
void proxyd_xfer_reject(struct proxyd_req *q, const struct proxyd_xfer *x, bool write);
/* Writes x's bytes into [offset, offset+size) of buf through queue. */
cl_int proxyd_xfer_write_chunks(struct proxyd_req *q, cl_command_queue queue, cl_mem buf,
                                size_t offset, const struct proxyd_xfer *x, cl_uint nwl,
                                const cl_event *wl, cl_bool blocking, cl_event *ev);

/* Spans: the host rows of rectangular transfers and images.  Where the
 * bytes are for the native call (*owned: to free), what follows it, and
 * whether the span holds the region. */
void *proxyd_span_begin(struct proxyd_req *q, const struct proxyd_xfer *x, bool write,
                        bool *owned);
cl_int proxyd_span_end(struct proxyd_req *q, const struct proxyd_xfer *x, bool write, cl_int rc,
                       cl_event e, void *buf, bool owned, cl_bool blocking, cl_event *ev);
void proxyd_span_check(struct proxyd_req *q, size_t span, const size_t *origin,
                       const size_t *region, size_t row, size_t slice, size_t elem);

#endif
