/*
 * protocol.h - what libvocl and voclproxyd agree on besides the API table:
 * object types, id ranges, and the protocol's own messages.
 *
 * The protocol's own messages: their fields, in wire order, are their msg
 * lines in cl_api.def (struct vocl_msg_NAME_req/_rep, encoders and decoders
 * in the generated vocl_msg.h); what the fields mean:
 *
 *   HELLO   req: the client's wire version, its features (VOCL_FEAT_SHM: it
 *           offers shared buffers, node_key says which node it is on, shm.h)
 *           and flags (VOCL_HELLO_TRACE: record a timeline; VOCL_HELLO_TOKEN:
 *           the shared secret, connect mode: token.h; VOCL_HELLO_USER: the
 *           client's user name, whose token it is with voclproxyd --users,
 *           and its host name)
 *           rep: the proxy's version, the features it took (VOCL_FEAT_SHM: the
 *           same node, buffers shared), its chunk size, the name of its
 *           node (cl_vocl_device_location: VOCL_NODE_NAME, else its host
 *           name), and per root device its cl_device_type and max mem
 *           alloc size
 *   SHM_MAP req: mem  rep: proxy pid, fd (UINT32_MAX: the buffer is not
 *           shared), size, token: the memfd whose name vocl_shm_name(token)
 *           gives holds the buffer (shm.h)
 *   BELL    rep: proxy pid, fd (UINT32_MAX: none, or the client is not on
 *           its node), token: the memfd of the proxy's bell, named as a
 *           shared buffer's (bell.h); a proxy that does not know BELL
 *           answers CL_INVALID_OPERATION, and the client rings none
 *   BYE     req: peer_died 1 when a proxy of the job died (so this proxy
 *           ends the job rather than wait in MPI_Finalize for the dead one);
 *           an empty BYE counts as 0 - the proxy releases the session's
 *           objects; a reply only when asked for (peer_died: a peer died
 *           here), after which nothing more comes
 *   RETAIN  req: id                            rep: (status)
 *   RELEASE req: id, last (client holds no more references to the id)
 *           rep: (status)
 *   TRACE   rep: the session's timeline (thread 0 requests, 1 stream), when
 *           HELLO asked for one (VOCL_HELLO_TRACE)
 *   STATE   rep: what the proxy holds (objects, bytes of memory objects),
 *           each open session (its number, user, host, process (0: another
 *           node), seconds since it connected, objects, bytes, host bytes
 *           held for it) and each device (name, global memory): vocl-smi
 *   BATCH   req: whole requests (header and body each), one after the
 *           other (vocl_batch_add): the proxy runs them in order, as if each
 *           had come alone.  Every one but the last has no reply; none is a
 *           HELLO, BYE or BATCH; the reply, if any, is the last one's, by its
 *           seq.  The batch's own header has flags 0 and seq 0.  libvocl
 *           gathers a proxy's asynchronous requests in one (libvocl(7),
 *           VOCL_BATCH)
 *   MIGRATE_OUT  req: mem, peer rank, tag, chunk, twin: a new twin (0: none)
 *           and twin_event its copy, queues (those that wrote mem here; a
 *           queue already released is skipped), events: no reply.  Reads
 *           all of mem after the queues' commands, once the events complete, and
 *           sends it to the peer proxy in chunks on the tag (one empty
 *           message if the read failed).  With a twin (buffers only), it
 *           first copies mem into the new buffer twin, sends the twin's
 *           bytes, and twin_event is the copy
 *   DIFF_OUT  req: mem, peer rank, tag, chunk, twin, then the queues and
 *           events as MIGRATE_OUT: no reply.  Sends the bytes of mem that
 *           differ from its twin (executor/diff.c: u64 size, then runs of u64
 *           offset, u64 length, bytes, in chunks)
 *   DIFF_IN   req: mem, peer rank, tag, chunk, new event, then the queues
 *           and events as MIGRATE_OUT: no reply.  Reads mem after them,
 *           patches in the runs the peer sends and writes it back; the new
 *           event is that write (fails if the runs did not come or are
 *           malformed)
 *   EVENT_OUT  req: event, peer rank, tag: no reply.  Sends the event's
 *           final status (i32) to the peer proxy on the tag once it is reached
 *   EVENT_IN   req: context, peer rank, tag, new event: no reply.  The new
 *           event is a user event set to the status the peer sends (an error
 *           status if none comes)
 *   OUTPUT  proxy -> client on the reply tag, before a reply: the bytes kernels
 *           wrote to the proxy's stdout (printf) since the last one
 *   CLOSED  proxy -> client on the reply tag: the proxy ended the session,
 *           and why (a protocol error, a reply not taken); nothing follows,
 *           and nothing the client sends after it is read
 *   NOTIFY  proxy -> client on the reply tag, before a reply: the context
 *           notifications (pfn_notify) for the client's contexts since the
 *           last one, from the native driver or the proxy (executor/notify.c)
 *   MIGRATE_IN   req: mem, peer rank, tag, chunk, new event, new twin (0:
 *           none): no reply.  Writes what the peer sends into all of mem; the
 *           new event completes when it is there (fails if the data did not
 *           come).  With a twin (buffers only), mem is then copied into the
 *           new buffer twin, and the event is that copy
 *   PROGRAM_BINARIES  req: program  rep: its binaries
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
 * The peer of a migration or an event link (MIGRATE_*, DIFF_*, EVENT_*) that
 * is the client itself: two daemons share no communicator, so the client
 * relays what one sends to the other (libvocl/relay.c).  The messages
 * travel on the session's channel, on vocl_relay_tag(tag) (wire.h),
 * and are those that go proxy to proxy in job mode, one for one.
 */
#define VOCL_PEER_CLIENT UINT32_MAX

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

/* Features negotiated in HELLO and its flags (VOCL_FEAT_, VOCL_HELLO_):
 * enum lines of cl_api.def (vocl_api.h), as HELLO's msg line uses them. */

/* Object-type helpers shared by both sides. */
const char *vocl_type_name(enum vocl_type t);
int vocl_type_invalid_err(enum vocl_type t); /* CL_INVALID_CONTEXT for a context, ... */
const char *vocl_err_name(int err);
/* A node's name, as HELLO gives it (cl_vocl_device_location): 1 to 255
 * printable characters, no space. */
#define VOCL_NODE_NAME_MAX 255u
bool vocl_node_name_ok(const char *p, size_t n);
#include <stddef.h>
struct _cl_image_format;
struct _cl_image_desc;
size_t vocl_image_pixel_size(unsigned order, unsigned type);
size_t vocl_image_host_size(const struct _cl_image_format *f, const struct _cl_image_desc *d);

#endif
