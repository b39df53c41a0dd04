/*
 * protocol.h - what libvocl and voclproxyd agree on besides the API table:
 * object types, id ranges, and the protocol's own messages.
 *
 * Message payloads (all fields little-endian, see wire.h):
 *
 *   HELLO   req: u32 wire version, u32 features, u32 flags, and when flags
 *           has VOCL_HELLO_TOKEN, bytes token (connect mode: token.h), and
 *           when features has VOCL_FEAT_SHM, u64 node key (shm.h)
 *           rep: i32 err, u32 version, u32 features (VOCL_FEAT_SHM: the same
 *                node, buffers shared), u64 chunk size, u32 ndev,
 *                ndev x (u64 cl_device_type, u64 max mem alloc size)
 *   SHM_MAP req: u64 mem  rep: i32 err, u64 proxy pid, u32 fd (UINT32_MAX:
 *           the buffer is not shared), u64 size, u64 token: the memfd whose
 *           name vocl_shm_name(token) gives holds the buffer (shm.h)
 *   BYE     req: (empty), or u8 1 when a proxy of the job died (so this proxy
 *           ends the job rather than wait in MPI_Finalize for the dead one) -
 *           the proxy releases the session's objects; a reply
 *           (status) only when asked for, after which nothing more comes
 *   RETAIN  req: u64 id                        rep: i32 err
 *   RELEASE req: u64 id, u8 last (client holds no more references to the id)
 *           rep: i32 err
 *   TRACE   req: (empty)  rep: i32 err, u32 n, n x (u32 opcode, u32 thread
 *           (0 requests, 1 stream), u64 start ns, u64 duration ns, u64 bytes):
 *           the session's timeline, when HELLO asked for one (VOCL_HELLO_TRACE)
 *   MIGRATE_OUT  req: u64 mem, u32 peer rank, u32 tag, u64 chunk, u64 new
 *           twin (0: none), and when there is one u64 new event, then u32
 *           nq, nq x u64 queue (those that wrote mem here; a queue already
 *           released is skipped), u32 n, n x u64 event: no reply.  Reads
 *           all of mem after the queues' commands, once the events complete, and
 *           sends it to the peer proxy in chunks on the tag (one empty
 *           message if the read failed).  With a twin (buffers only), it
 *           first copies mem into the new buffer twin, sends the twin's
 *           bytes, and the new event is the copy
 *   DIFF_OUT  req: u64 mem, u32 peer rank, u32 tag, u64 chunk, u64 twin,
 *           then the queues and events as MIGRATE_OUT: no reply.  Sends the
 *           bytes of mem that differ from its twin (ops_migrate.c: u64 size,
 *           then runs of u64 offset, u64 length, bytes, in chunks)
 *   DIFF_IN   req: u64 mem, u32 peer rank, u32 tag, u64 chunk, u64 new
 *           event, then the queues and events as MIGRATE_OUT: no reply.
 *           Reads mem after them, patches in the runs the peer sends and
 *           writes it back; the new event is that write (fails if the runs
 *           did not come or are malformed)
 *   EVENT_OUT  req: u64 event, u32 peer rank, u32 tag: no reply.  Sends the
 *           event's final status (i32) to the peer proxy on the tag once it
 *           is reached
 *   EVENT_IN   req: u64 context, u32 peer rank, u32 tag, u64 new event: no
 *           reply.  The new event is a user event set to the status the peer
 *           sends (an error status if none comes)
 *   OUTPUT  proxy -> client on the reply tag, before a reply: the bytes kernels
 *           wrote to the proxy's stdout (printf) since the last one
 *   NOTIFY  proxy -> client on the reply tag, before a reply: u32 n, n x (u64
 *           context, string errinfo, bytes private_info): the context
 *           notifications (pfn_notify) for the client's contexts since the
 *           last one, from the native driver or the proxy (executor/notify.c)
 *   MIGRATE_IN   req: u64 mem, u32 peer rank, u32 tag, u64 chunk, u64 new
 *           event, u64 new twin (0: none): no reply.  Writes what the peer
 *           sends into all of mem; the new event completes when it is there
 *           (fails if the data did not come).  With a twin (buffers only),
 *           mem is then copied into the new buffer twin, and the event is
 *           that copy
 *
 * The fields of RETAIN, RELEASE, SHM_MAP and PROGRAM_BINARIES come from
 * their msg lines in cl_api.def (vocl_msg.h); those of the others are still
 * written where they are sent and read where they are handled.
 *
 * API entries: see the annotations in cl_api.def; every reply starts with an
 * i32 OpenCL error code.  A request without VOCL_F_REPLY gets no reply: the
 * proxy keeps its first error and reports it in the reply of the next
 * synchronising request (clFinish, clWaitForEvents, a blocking transfer).
 */
#ifndef VOCL_PROTOCOL_H
#define VOCL_PROTOCOL_H

#include <stdint.h>

#include "vocl_api.h"
#include "wire.h"

enum vocl_type {
    VOCL_T_NONE = 0,
    VOCL_T_PLATFORM,
    VOCL_T_DEVICE,
    VOCL_T_CONTEXT,
    VOCL_T_QUEUE,
    VOCL_T_MEM,
    VOCL_T_SAMPLER,
    VOCL_T_PROGRAM,
    VOCL_T_KERNEL,
    VOCL_T_EVENT,
    VOCL_T_COUNT
};

/* Opcodes, the protocol's own (enum vocl_proto_op) and the API's, come from
 * cl_api.def (the generated vocl_api.h). */

/*
 * Ids: a proxy numbers its root devices 1..ndev; every object a client
 * creates gets an id the client chose, at or above VOCL_ID_CLIENT_MIN.
 */
#define VOCL_ID_CLIENT_MIN 0x10000u

/* How the bytes of a transfer travel: enum vocl_data_mode, wire.h. */

/*
 * What a kernel argument is declared as: one byte per argument, after the
 * argument count, in the replies of clCreateKernel and
 * clCreateKernelsInProgram.  The proxy reads it from the native argument
 * info; UNKNOWN where the native library keeps none (PoCL without
 * -cl-kernel-arg-info).  Buffers and images are told apart because only a
 * buffer argument may be given a NULL arg_value.
 */
enum vocl_arg_kind {
    VOCL_ARG_UNKNOWN = 0,
    VOCL_ARG_BUFFER = 1,  /* __global or __constant pointer: a cl_mem, or NULL */
    VOCL_ARG_IMAGE = 2,   /* image or pipe: a cl_mem */
    VOCL_ARG_SAMPLER = 3, /* sampler_t: a cl_sampler */
    VOCL_ARG_LOCAL = 4,   /* __local pointer: only a size */
    VOCL_ARG_VALUE = 5,   /* anything else, by value */
};

/* Features negotiated in HELLO. */
#define VOCL_FEAT_NONE 0u
#define VOCL_FEAT_SHM 0x1u /* shared buffers (shm.h) */
/* HELLO flags. */
#define VOCL_HELLO_TRACE 0x1u /* record a timeline of the session (VOCL_TRACE) */
#define VOCL_HELLO_TOKEN 0x2u /* the shared secret follows (connect mode) */

/* Object-type helpers shared by both sides. */
const char *vocl_type_name(enum vocl_type t);
int vocl_type_invalid_err(enum vocl_type t); /* CL_INVALID_CONTEXT for a context, ... */
const char *vocl_err_name(int err);
#include <stddef.h>
struct _cl_image_format;
struct _cl_image_desc;
size_t vocl_image_pixel_size(unsigned order, unsigned type);
size_t vocl_image_host_size(const struct _cl_image_format *f, const struct _cl_image_desc *d);

#endif
