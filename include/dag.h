/*
 * dag.h: a runtime of four concepts on the standard OpenCL API, after
 * libWater (Grasso et al.): device, buffer, kernel and event.
 *
 * A device stands for an OpenCL platform, context, device and in-order queue
 * at once; devices of one platform share one context.  Buffers and kernels
 * are bound to one device when they are created.  Every operation takes an
 * optional event to wait for (`wait`, NULL: none) and an optional event out
 * (`out`, NULL: the call blocks until the operation is complete).  Creating
 * and releasing buffers and kernels never blocks.
 *
 * Calls become commands of a DAG whose edges are events (and the order of
 * the commands of one device).  The runtime keeps them in a window until the
 * first blocking call (or dag_flush(), or a full window), rewrites the
 * window (DHDCR, then DCR; see dag(3)), and hands it to one scheduler thread
 * that dispatches ready commands to the device queues and sleeps on a
 * condition variable that native event callbacks signal.
 *
 * The API is meant to be called from one host thread.  Functions that return
 * int return 0 or an OpenCL error code (a negative number); the message of
 * the first error is dag_error().  An error of a command that ran
 * asynchronously is reported by the next blocking call.
 */
#ifndef DAG_H
#define DAG_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#include <CL/cl.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct dag_device dag_device;
typedef struct dag_buffer dag_buffer;
typedef struct dag_kernel dag_kernel;
typedef struct dag_event dag_event;

/* ---- devices ---- */

/* Initialises the devices that the DQL query selects (see dql(7) in
 * dag(3)), e.g. "SELECT ALL WHERE TYPE = GPU ORDER BY MAX_COMPUTE_UNITS
 * DESC".  Returns the number of devices, or a negative OpenCL error code
 * (CL_INVALID_VALUE for a query that does not parse or selects nothing; the
 * reason, with the position, is dag_error()). */
int dag_init(const char *query);

/* The number of initialised devices, and device i of them (NULL if out of
 * range). */
int dag_device_count(void);
dag_device *dag_get_device(int i);

/* The one device that a "SELECT POS i ..." query picks among the
 * initialised devices (libWater's wtr_get_device), or NULL. */
dag_device *dag_query_device(const char *query);

/* Its index, DQL node, and CL_DEVICE_NAME. */
int dag_device_index(const dag_device *device);
int dag_device_node(const dag_device *device);
const char *dag_device_name(const dag_device *device);

/* The host name of its node, as a driver with cl_vocl_device_location
 * reports it; this host's for a device of a driver without it. */
const char *dag_device_node_name(const dag_device *device);

/* Waits for every command, stops the scheduler, releases everything, and
 * writes the DAG_TRACE files.  Returns the first error, if any. */
int dag_shutdown(void);

/* ---- buffers ---- */

/* Non-blocking: the OpenCL buffer is created by the scheduler. */
dag_buffer *dag_create_buffer(dag_device *device, size_t size, cl_mem_flags flags);
/* Released once `wait` and the device's earlier commands are complete. */
void dag_release_buffer(dag_buffer *buffer, dag_event *wait);

/* host -> buffer and buffer -> host.  With `out`, the host memory must stay
 * untouched (write) or unread (read) until *out is complete. */
int dag_write(dag_buffer *buffer, size_t offset, size_t size, const void *host, dag_event *wait,
              dag_event **out);
int dag_read(dag_buffer *buffer, size_t offset, size_t size, void *host, dag_event *wait,
             dag_event **out);
/* buffer -> buffer, on any two devices (clEnqueueCopyBuffer). */
int dag_copy(dag_buffer *dst, size_t dst_offset, dag_buffer *src, size_t src_offset, size_t size,
             dag_event *wait, dag_event **out);

/* ---- kernels ---- */

/* Non-blocking: the scheduler builds `source` with `options` once per
 * context (for all of its devices) and creates the kernel `name`. */
dag_kernel *dag_create_kernel(dag_device *device, const char *source, const char *name,
                              const char *options);
void dag_release_kernel(dag_kernel *kernel, dag_event *wait);

/* One kernel argument, passed by value to dag_run(); the bytes of a value
 * are copied when dag_run() is called. */
struct dag_arg {
    dag_buffer *buffer; /* a buffer of the kernel's device, or NULL */
    const void *value;  /* else `size` bytes of value, or local memory if NULL */
    size_t size;
};
#define DAG_BUF(b) ((struct dag_arg){.buffer = (b)})
#define DAG_VAL(v) ((struct dag_arg){.value = &(v), .size = sizeof(v)})
#define DAG_LOCAL(bytes) ((struct dag_arg){.size = (bytes)})

/* Runs `kernel` over `dims` dimensions (offset and local may be NULL) with
 * `nargs` struct dag_arg arguments after it. */
int dag_run(dag_kernel *kernel, cl_uint dims, const size_t *offset, const size_t *global,
            const size_t *local, dag_event *wait, dag_event **out, unsigned nargs, ...);

/* ---- events ---- */

/* An event that completes when all `n` events have. */
dag_event *dag_merge(unsigned n, dag_event *const *events);
/* Blocks until the event is complete; returns the first error. */
int dag_wait(dag_event *event);
void dag_release_event(dag_event *event);
/* Hands the window to the scheduler without waiting. */
void dag_flush(void);
/* Blocks until every command so far is complete; returns the first error. */
int dag_finish(void);

/* The first error's message ("" if none). */
const char *dag_error(void);

/* ---- counters ---- */

struct dag_stats {
    uint64_t commands;          /* commands dispatched */
    uint64_t h2d_bytes, h2d_ops; /* host -> device */
    uint64_t d2h_bytes, d2h_ops; /* device -> host */
    uint64_t d2d_bytes, d2d_ops; /* device -> another device */
    uint64_t local_bytes;        /* copies within one device */
    uint64_t broadcasts, scatters, gathers; /* DCR collectives made */
    uint64_t dhdcr_copies;       /* host transfers DHDCR replaced */
    /* The rewrites as run, and whether dag_init decided them (DAG_DCR or
     * DAG_DHDCR unset or "auto") from a device-to-device copy timed
     * against a write and a read of the same size (copy_bytes; seconds, 0
     * where not measured). */
    bool dcr, dhdcr;
    bool dcr_auto, dhdcr_auto;
    size_t copy_bytes;
    double copy_seconds, write_seconds, read_seconds;
};
void dag_get_stats(struct dag_stats *stats);

#endif
