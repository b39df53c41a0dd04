/*
 * memory.c - buffers, images and the transfers between them and the host.
 *
 * Transfer modes (protocol.h): local passthrough passes the host pointer to
 * the in-process executor, which calls the native library with it; remote
 * transfers up to VOCL_INLINE_MAX travel inside the message; larger ones
 * are sent from (and received into) the application's memory in chunks,
 * with no copy on the client.  Non-blocking reads and writes do not wait:
 * their chunks stay posted until the next synchronisation, which is when
 * the spec lets the application touch the memory again.
 */
#include "vocl.h"
#include "profile.h"
#include "shm.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* The data field of a chunked transfer of n bytes, cut as the link to the proxy says. */
static struct vocl_data chunked(struct vocl_call *c, size_t n)
{
    c->cut = vocl_link_chunking(&c->px->link, n, c->px->chunk);
    return (struct vocl_data){
        .mode = VOCL_DATA_CHUNKED, .arg = c->cut.chunk, .depth = (uint8_t)c->cut.depth};
}

/* The data field of a transfer of n bytes from p (host to device); none when p is NULL. */
struct vocl_data vocl_xfer_out(struct vocl_call *c, const void *p, size_t n)
{
    if (!p)
        return (struct vocl_data){.mode = VOCL_DATA_NONE};
    vocl_prof_bytes(n);
    if (c->px->local)
        return (struct vocl_data){.mode = VOCL_DATA_HOSTPTR, .arg = (uint64_t)(uintptr_t)p};
    if (n <= VOCL_INLINE_MAX)
        return (struct vocl_data){.mode = VOCL_DATA_INLINE, .p = p, .len = n};
    return chunked(c, n);
}

/* Sends the request and the chunks from the caller's memory, then waits
 * for the reply unless the call is async (the chunks stay pending). */
int vocl_xfer_send(struct vocl_call *c, const void *p, size_t n)
{
    if (vocl_call_post(c))
        return -1;
    if (p && !c->px->local && n > VOCL_INLINE_MAX && vocl_xport_send_data(c, p, n)) {
        vocl_call_error(c, CL_DEVICE_NOT_AVAILABLE);
        return -1;
    }
    return vocl_call_wait(c);
}

/* Where the data of a read of n bytes to p goes (device to host).
 * Only a read with a reply can bring its data inside the reply. */
struct vocl_data vocl_xfer_in(struct vocl_call *c, void *p, size_t n)
{
    vocl_prof_bytes(n);
    if (c->px->local)
        return (struct vocl_data){.mode = VOCL_DATA_HOSTPTR, .arg = (uint64_t)(uintptr_t)p};
    if (n <= VOCL_INLINE_MAX && !c->async)
        return (struct vocl_data){.mode = VOCL_DATA_INLINE};
    return chunked(c, n);
}

/* Sends a read request and lands its n bytes at p: the receives are posted
 * first, straight into p; an async read leaves them pending. */
int vocl_xfer_recv(struct vocl_call *c, void *p, size_t n)
{
    bool chunked = !c->px->local && (c->async || n > VOCL_INLINE_MAX);
    if (chunked && !c->err && vocl_xport_recv_data(c, p, n)) {
        vocl_call_error(c, CL_DEVICE_NOT_AVAILABLE);
        return -1;
    }
    if (vocl_call_send(c))
        return -1;
    if (c->px->local || chunked)
        return 0;
    size_t got;
    const void *bytes = vocl_rd_bytes(&c->r, &got);
    if (c->r.fail || got != n) {
        vocl_call_error(c, CL_OUT_OF_RESOURCES);
        return -1;
    }
    memcpy(p, bytes, n);
    return 0;
}

/* --- buffers ------------------------------------------------------------------------------------ */

/* The access flags: known bits, at most one device access, one host access. */
static bool mem_flags_ok(cl_mem_flags f)
{
    const cl_mem_flags known = CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY |
                               CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR |
                               CL_MEM_COPY_HOST_PTR | CL_MEM_HOST_WRITE_ONLY |
                               CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS;
    cl_mem_flags dev = f & (CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY);
    cl_mem_flags host = f & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS);
    return !(f & ~known) && !(dev & (dev - 1)) && !(host & (host - 1));
}

static cl_mem create_buffer(cl_context context, const cl_mem_properties *properties,
                            cl_mem_flags flags, size_t size, void *host_ptr, cl_int *errcode_ret)
{
    struct vocl_call c;
    struct vocl_obj *mem = NULL;
    const cl_mem_flags host_flags = CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR;
    vocl_call_init(&c);
    struct vocl_obj *ctx = vocl_call_h(&c, context, VOCL_T_CONTEXT, 0);
    if (!c.err && size == 0)
        vocl_call_error(&c, CL_INVALID_BUFFER_SIZE);
    if (!c.err && (!host_ptr) != !(flags & host_flags))
        vocl_call_error(&c, CL_INVALID_HOST_PTR);
    if (!c.err && (flags & CL_MEM_USE_HOST_PTR) && (flags & (CL_MEM_COPY_HOST_PTR |
                                                             CL_MEM_ALLOC_HOST_PTR)))
        vocl_call_error(&c, CL_INVALID_VALUE);
    if (!c.err && !mem_flags_ok(flags))
        vocl_call_error(&c, CL_INVALID_VALUE);
    const struct vocl_context *cx = vocl_as_context(ctx);
    for (cl_uint i = 0; !c.err && i < cx->ndevs; i++) {
        cl_ulong max_alloc = vocl_as_device(cx->devs[i])->max_alloc;
        if (max_alloc && size > max_alloc)
            vocl_call_error(&c, CL_INVALID_BUFFER_SIZE);
    }
    /* Checked all the spec asks that the client can know: without host data
     * to copy, what is left to fail is the allocation, which drivers may
     * report late anyway.  So the creation does not wait, but for a large
     * buffer on a daemon that limits its sessions' memory: a refusal there
     * is the application's to see at this call, as a driver's would be. */
    struct vocl_proxy *refused_by = NULL;
    for (cl_uint rep = 0; vocl_call_each(&c, ctx, rep); rep++) {
        /* Host data goes to the context's first proxy; others get it when
         * they need it (coherence.c). */
        void *data = rep == 0 ? host_ptr : NULL;
        bool limited = c.px->mem_limit && size >= VOCL_LIMITED_CREATE_MIN;
        c.async = !data && !properties && !limited;
        if (limited)
            refused_by = c.px;
        if (vocl_call_start(&c, VOCL_OP_clCreateBuffer))
            break;
        cl_mem_flags sent = data ? flags : flags & ~host_flags;
        uint64_t props[VOCL_PROPS_MAX];
        /*
         * Remotely, USE_HOST_PTR means a copy at creation: the device's memory
         * is on another node.  Maps and reads show the data, as the spec asks.
         */
        struct vocl_msg_clCreateBuffer_req m = {
            .context = vocl_id_on(ctx, c.px),
            .properties = vocl_props_ids(properties, props),
            .flags = c.px->local ? sent : sent & ~(cl_mem_flags)VOCL_HOST_ACCESS,
            .size = size,
            .data = vocl_xfer_out(&c, data, size),
            .new_id = vocl_call_new_id(&c)};
        vocl_enc_clCreateBuffer_req(c.w, &m);
        vocl_mem_create_sent(&c, &mem, rep, ctx, NULL, data, size, host_ptr != NULL, m.new_id);
    }
    vocl_call_end(&c);
    if (c.err == CL_MEM_OBJECT_ALLOCATION_FAILURE && refused_by)
        vocl_error("proxy %s: a buffer of %zu MiB refused: it would take this program's "
                   "session past the daemon's limit of %" PRIu64 " MiB of memory objects "
                   "(voclproxyd --max-session-mem)",
                   refused_by->name ? refused_by->name : "?", size >> 20,
                   refused_by->mem_limit >> 20);
    if (c.err && mem) {
        clReleaseMemObject((cl_mem)mem);
        mem = NULL;
    }
    if (mem) {
        struct vocl_mem *mm = vocl_as_mem(mem);
        mm->mem_flags = flags;
        mm->mem_size = size;
        mm->host_ptr = (flags & CL_MEM_USE_HOST_PTR) ? host_ptr : NULL;
    }
    if (errcode_ret)
        *errcode_ret = c.err;
    return (cl_mem)mem;
}

void vocl_mem_create_sent(struct vocl_call *c, struct vocl_obj **m, cl_uint rep,
                          struct vocl_obj *ctx, struct vocl_obj *parent, const void *data,
                          size_t size, bool host_data, uint64_t id)
{
    if (vocl_xfer_send(c, data, size) == 0 &&
        vocl_call_made(c, m, rep, vocl_nreps(ctx), VOCL_T_MEM, id, ctx, parent) && host_data &&
        (*m)->reps)
        vocl_as_mem(*m)->valid = 1;
}

cl_mem CL_API_CALL vocl_hand_clCreateBuffer(cl_context context, cl_mem_flags flags, size_t size,
                                               void *host_ptr, cl_int *errcode_ret)
{
    return create_buffer(context, NULL, flags, size, host_ptr, errcode_ret);
}

cl_mem CL_API_CALL vocl_hand_clCreateBufferWithProperties(cl_context context,
                                                             const cl_mem_properties *properties,
                                                             cl_mem_flags flags, size_t size,
                                                             void *host_ptr, cl_int *errcode_ret)
{
    return create_buffer(context, properties, flags, size, host_ptr, errcode_ret);
}

/* A sub-buffer's flags (clCreateSubBuffer): access and host access as
 * given, else the parent's, and the parent's host pointer flags; the
 * proxy is not sent the host access flags (it transfers on libvocl's
 * behalf), so their conflicts with the parent's are refused here. */
static cl_int sub_buffer_flags(cl_mem_flags parent, cl_mem_flags flags, cl_mem_flags *out)
{
    const cl_mem_flags access = CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY | CL_MEM_READ_ONLY;
    const cl_mem_flags ptr = CL_MEM_USE_HOST_PTR | CL_MEM_ALLOC_HOST_PTR | CL_MEM_COPY_HOST_PTR;
    if ((flags & ptr) ||
        ((parent & CL_MEM_WRITE_ONLY) && (flags & (CL_MEM_READ_WRITE | CL_MEM_READ_ONLY))) ||
        ((parent & CL_MEM_READ_ONLY) && (flags & (CL_MEM_READ_WRITE | CL_MEM_WRITE_ONLY))) ||
        ((parent & CL_MEM_HOST_WRITE_ONLY) && (flags & CL_MEM_HOST_READ_ONLY)) ||
        ((parent & CL_MEM_HOST_READ_ONLY) && (flags & CL_MEM_HOST_WRITE_ONLY)) ||
        ((parent & CL_MEM_HOST_NO_ACCESS) &&
         (flags & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_WRITE_ONLY))))
        return CL_INVALID_VALUE;
    *out = flags | (parent & ptr) | (flags & access ? 0 : parent & access) |
           (flags & VOCL_HOST_ACCESS ? 0 : parent & VOCL_HOST_ACCESS);
    return CL_SUCCESS;
}

cl_mem CL_API_CALL vocl_hand_clCreateSubBuffer(cl_mem buffer, cl_mem_flags flags,
                                                  cl_buffer_create_type buffer_create_type,
                                                  const void *buffer_create_info,
                                                  cl_int *errcode_ret)
{
    struct vocl_call c;
    struct vocl_obj *mem = NULL;
    const cl_buffer_region *region = buffer_create_info;
    vocl_call_init(&c);
    struct vocl_obj *parent = vocl_call_h(&c, buffer, VOCL_T_MEM, 0);
    if (!c.err && (!region || buffer_create_type != CL_BUFFER_CREATE_TYPE_REGION))
        vocl_call_error(&c, CL_INVALID_VALUE);
    cl_mem_flags effective = 0;
    if (!c.err)
        vocl_call_error(&c, sub_buffer_flags(vocl_as_mem(parent)->mem_flags, flags, &effective));
    for (cl_uint rep = 0; vocl_call_each(&c, parent, rep); rep++) {
        if (vocl_call_start(&c, VOCL_OP_clCreateSubBuffer))
            break;
        uint64_t id = vocl_call_new_id(&c);
        vocl_enc_clCreateSubBuffer_req(
            c.w, &(struct vocl_msg_clCreateSubBuffer_req){
                     .buffer = vocl_id_on(parent, c.px),
                     .flags = c.px->local ? flags : flags & ~(cl_mem_flags)VOCL_HOST_ACCESS,
                     .create_type = buffer_create_type,
                     .origin = region->origin,
                     .size = region->size,
                     .new_id = id});
        if (vocl_call_send(&c) == 0)
            vocl_call_made(&c, &mem, rep, vocl_nreps(parent), VOCL_T_MEM, id, parent->context,
                           parent);
    }
    vocl_call_end(&c);
    if (c.err && mem) {
        clReleaseMemObject((cl_mem)mem);
        mem = NULL;
    }
    if (mem) {
        struct vocl_mem *mm = vocl_as_mem(mem), *pm = vocl_as_mem(parent);
        mm->mem_flags = effective;
        mm->mem_size = region->size;
        mm->host_ptr = pm->host_ptr ? (char *)pm->host_ptr + region->origin : NULL;
    }
    if (errcode_ret)
        *errcode_ret = c.err;
    return (cl_mem)mem;
}

bool vocl_host_forbids(const struct vocl_obj *m, bool read, bool write)
{
    if (!m)
        return false;
    cl_mem_flags f = 0;
    for (const struct vocl_obj *o = m; o && !f; o = o->parent) /* a sub-buffer's, or its parent's */
        f = vocl_as_mem(o)->mem_flags & VOCL_HOST_ACCESS;
    return (read && (f & (CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS))) ||
           (write && (f & (CL_MEM_HOST_READ_ONLY | CL_MEM_HOST_NO_ACCESS)));
}

/* The checks the spec asks of every buffer read and write, done here. */
static void check_xfer(struct vocl_call *c, const struct vocl_obj *q, const struct vocl_obj *m,
                       size_t offset, size_t size, const void *ptr)
{
    if (c->err)
        return;
    if (m->context != q->context)
        vocl_call_error(c, CL_INVALID_CONTEXT);
    else if (!ptr || size == 0 || offset > vocl_as_mem(m)->mem_size ||
             size > vocl_as_mem(m)->mem_size - offset)
        vocl_call_error(c, CL_INVALID_VALUE);
}

/*
 * The part a buffer read and a buffer write share: the checks, the request
 * and its first fields.  Returns the queue, or NULL with c->err set; *ev_id
 * is the id of the event the command returns (0: none).  A non-blocking one
 * wants no reply: ptr is the application's again after the next
 * synchronisation.  host: the application's own transfer, which its host
 * access flags govern (not libvocl's shadows of maps).
 */
static struct vocl_obj *start_buffer_xfer(struct vocl_call *c, unsigned op, bool host,
                                          cl_command_queue command_queue, cl_mem buffer,
                                          cl_bool blocking, size_t offset, size_t size,
                                          const void *ptr, cl_uint nwl, const cl_event *wl,
                                          const cl_event *event,
                                          struct vocl_msg_clEnqueueWriteBuffer_req *head)
{
    struct vocl_obj *q = vocl_call_h(c, command_queue, VOCL_T_QUEUE, 0);
    struct vocl_obj *m = vocl_call_h(c, buffer, VOCL_T_MEM, 0);
    vocl_call_wl(c, nwl, wl);
    check_xfer(c, q, m, offset, size, ptr);
    if (!c->err && host &&
        vocl_host_forbids(m, op == VOCL_OP_clEnqueueReadBuffer, op == VOCL_OP_clEnqueueWriteBuffer))
        vocl_call_error(c, CL_INVALID_OPERATION);
    /* A write of all of a buffer needs none of its old data. */
    bool whole = m && !m->parent && offset == 0 && size == vocl_as_mem(m)->mem_size;
    vocl_mem_use(c, m, op == VOCL_OP_clEnqueueReadBuffer ? VOCL_USE_R
                       : whole                           ? VOCL_USE_W
                                                         : VOCL_USE_RW);
    c->async = !blocking;
    c->sync = blocking;
    if (op == VOCL_OP_clEnqueueWriteBuffer)
        vocl_call_reads_host(c, ptr, size);
    if (vocl_call_start(c, op))
        return NULL;
    *head = (struct vocl_msg_clEnqueueWriteBuffer_req){
        .queue = q->id,
        .buffer = vocl_id_on(m, c->px),
        .blocking = blocking ? 1 : 0,
        .offset = offset,
        .size = size,
        .wait_list = vocl_call_wl_ids(c, nwl, wl),
        .event = event ? vocl_call_new_id(c) : 0};
    return q;
}

/* --- buffers a proxy of this node shares (shm.h) ----------------------------------------------- */

/* Whether /proc/PID/fd/FD (or our own fd f, for PID 0) is the memfd named
 * for token. */
static bool is_shared_file(long pid, unsigned fd, uint64_t token)
{
    char path[64], link[128], name[48], want[64];
    if (pid)
        snprintf(path, sizeof(path), "/proc/%ld/fd/%u", pid, fd);
    else
        snprintf(path, sizeof(path), "/proc/self/fd/%u", fd);
    vocl_shm_name(name, sizeof(name), token);
    int n = snprintf(want, sizeof(want), "/memfd:%s", name); /* then " (deleted)" */
    ssize_t len = readlink(path, link, sizeof(link) - 1);
    return len >= n && memcmp(link, want, (size_t)n) == 0 && (len == n || link[n] == ' ');
}

void *vocl_map_memfd(long pid, unsigned fd, uint64_t size, uint64_t token)
{
    char path[64], link[8];
    snprintf(path, sizeof(path), "/proc/%ld/fd/%u", pid, fd);
    int f = -1;
    if (is_shared_file(pid, fd, token))
        f = open(path, O_RDWR | O_CLOEXEC);
    else if (readlink(path, link, sizeof(link)) < 0 && errno == EACCES)
        f = vocl_shm_fd_fetch((pid_t)pid, token); /* (another user's: it hands it over) */
    if (f < 0)
        return NULL;
    struct stat st;
    void *p = MAP_FAILED;
    /* Checked again on our own descriptor: the proxy's may have been
     * reused in between. */
    if (is_shared_file(0, (unsigned)f, token) && fstat(f, &st) == 0 &&
        (uint64_t)st.st_size == size)
        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, f, 0);
    close(f);
    return p == MAP_FAILED ? NULL : p;
}

/* m's memory, shared by its proxy, mapped the first time; NULL when it is
 * not shared (or while another thread asks). */
static void *shared_memory(struct vocl_mem *m)
{
    int state = atomic_load(&m->shm_state);
    if (state == 2)
        return m->shm;
    if (state != 0 || !atomic_compare_exchange_strong(&m->shm_state, &state, 1))
        return NULL;
    struct vocl_call c;
    vocl_call_init(&c);
    vocl_call_h(&c, &m->obj, VOCL_T_MEM, 0);
    void *p = NULL;
    if (vocl_call_start(&c, VOCL_OP_SHM_MAP) == 0) {
        vocl_enc_SHM_MAP_req(c.w, &(struct vocl_msg_SHM_MAP_req){.mem = vocl_id_on(&m->obj, c.px)});
        if (vocl_call_send(&c) == 0) {
            struct vocl_msg_SHM_MAP_rep rep;
            vocl_dec_SHM_MAP_rep(&c.r, &rep);
            long pid = (long)rep.pid;
            uint32_t fd = rep.fd;
            uint64_t size = rep.size, token = rep.token;
            if (!c.r.fail && fd != UINT32_MAX && size == m->mem_size) {
                p = vocl_map_memfd(pid, fd, size, token);
                if (p)
                    atomic_store(&c.px->shm_pid, pid);
                if (!p)
                    vocl_warn("proxy %d shares a buffer that cannot be mapped here "
                              "(/proc/%ld/fd/%u): transfers go through the proxy",
                              c.px->rank, pid, fd);
            }
        }
    }
    vocl_call_end(&c);
    m->shm = p;
    atomic_store(&m->shm_state, 2);
    return p;
}

/* An event says the command the application asked for, whatever ran for
 * it: a marker after a transfer or a map in shared memory, on the proxy a
 * large read (which is a map and an unmap there), a map's read into its
 * shadow, an unmap's write back from it. */
void vocl_event_says(struct vocl_obj *event, cl_command_type t)
{
    if (event)
        vocl_info_know(event, VOCL_OP_clGetEventInfo, CL_EVENT_COMMAND_TYPE, &t, sizeof(t));
}

static void transfer_event(struct vocl_obj *event, bool write)
{
    vocl_event_says(event, write ? CL_COMMAND_WRITE_BUFFER : CL_COMMAND_READ_BUFFER);
}

/* Whether a command of q on m may use the memory m's proxy shares: a
 * whole buffer of one proxy, in q's context (the proxy may not share it). */
static bool may_share(const struct vocl_queue *q, const struct vocl_mem *m)
{
    return m->obj.px->shm && !m->obj.parent && !m->obj.reps && !m->mem_type &&
           m->obj.context == q->obj.context;
}

/* m's shared memory, NULL where it has none or its proxy died.  The
 * memory outlives a proxy that dies: its transfers must fail, and it is
 * failed here.  (A proxy of another user: EPERM, alive.) */
static void *shared_live(struct vocl_mem *m)
{
    void *shared = shared_memory(m);
    if (!shared || atomic_load(&m->obj.px->dead))
        return NULL;
    if (kill((pid_t)atomic_load(&m->obj.px->shm_pid), 0) != 0 && errno == ESRCH) {
        vocl_xport_fail(m->obj.px, "its process is gone: it died");
        return NULL;
    }
    return shared;
}

/* m's shared memory where a command of q may use it now, or NULL: it must
 * come after the queue's commands, so a non-blocking one goes only where
 * the queue is drained (*drained), and a blocking one waits (shared_wait). */
static void *shared_begin(struct vocl_queue *q, struct vocl_mem *m, cl_bool blocking,
                          bool *drained)
{
    *drained = vocl_queue_finished_since_used(q) || !atomic_load(&q->enqueued_at);
    return *drained || blocking ? shared_live(m) : NULL;
}

/* Waits for the wait list, and for the queue unless it was drained: false
 * with the error in *err. */
static bool shared_wait(cl_command_queue queue, cl_uint nwl, const cl_event *wl, bool drained,
                        cl_int *err)
{
    *err = nwl ? clWaitForEvents(nwl, wl) : CL_SUCCESS;
    if (*err == CL_SUCCESS && !drained)
        *err = clFinish(queue);
    return *err == CL_SUCCESS;
}

/* The event of a command done in shared memory, if asked for: a marker
 * after it, saying it is a command of type t, complete. */
static cl_int shared_done(cl_command_queue queue, cl_event *event, cl_command_type t)
{
    if (!event)
        return CL_SUCCESS;
    cl_int err = clEnqueueMarkerWithWaitList(queue, 0, NULL, event);
    if (err == CL_SUCCESS) {
        struct vocl_obj *e = vocl_lookup(*event, VOCL_T_EVENT);
        vocl_event_says(e, t);
        vocl_event_known_complete(e); /* done, whatever the marker */
    }
    return err;
}

/*
 * A transfer of a buffer that a proxy of this node shares: one memcpy, once
 * the commands before it on the queue have ended.  That is so when nothing
 * was enqueued since the queue's last clFinish; otherwise a blocking one
 * finishes the queue first (and waits for its wait list: a blocking call
 * may), and a non-blocking one is left to the general path (which keeps it
 * asynchronous).  Doing a non-blocking transfer at once, in its place in
 * the queue's order, is one of the ways it may run.  Its event, if asked
 * for, is a marker enqueued after it, which says it is the transfer's
 * command (PyOpenCL asks for an event on every transfer).  Returns false
 * when this does not apply: the general path runs, and reports any error.
 */
static bool shared_xfer(bool write, cl_command_queue command_queue, cl_mem buffer,
                        cl_bool blocking, size_t offset, size_t size, void *ptr, cl_uint nwl,
                        const cl_event *wl, cl_event *event, cl_int *err)
{
    struct vocl_queue *q = vocl_as_queue(vocl_lookup(command_queue, VOCL_T_QUEUE));
    struct vocl_mem *m = vocl_as_mem(vocl_lookup(buffer, VOCL_T_MEM));
    if ((nwl && !blocking) || !q || !m || !may_share(q, m) || m->maps || !ptr || size == 0 ||
        offset > m->mem_size || size > m->mem_size - offset ||
        vocl_host_forbids(&m->obj, !write, write) || (nwl && vocl_wl_check(&q->obj, nwl, wl)))
        return false;
    bool drained;
    void *shared = shared_begin(q, m, blocking, &drained);
    if (!shared)
        return false;
    if (!shared_wait(command_queue, nwl, wl, drained, err))
        return true;
    if (write)
        memcpy((char *)shared + offset, ptr, size);
    else
        memcpy(ptr, (char *)shared + offset, size);
    vocl_prof_shared(size);
    *err = shared_done(command_queue, event,
                       write ? CL_COMMAND_WRITE_BUFFER : CL_COMMAND_READ_BUFFER);
    return true;
}

static cl_int write_buffer(bool host, cl_command_queue command_queue, cl_mem buffer,
                           cl_bool blocking_write, size_t offset, size_t size, const void *ptr,
                           cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                           cl_event *event)
{
    struct vocl_call c;
    struct vocl_msg_clEnqueueWriteBuffer_req m;
    cl_int shared_err;
    if (host && shared_xfer(true, command_queue, buffer, blocking_write, offset, size, (void *)ptr,
                            num_events_in_wait_list, event_wait_list, event, &shared_err))
        return shared_err;
    vocl_call_init(&c);
    if (!blocking_write) {
        /* Its memory is still to be filled by a read: it may not wait for
         * that here (hostreads.c).  Checked first as below. */
        struct vocl_obj *dq = vocl_call_h(&c, command_queue, VOCL_T_QUEUE, 0);
        struct vocl_obj *dm = vocl_call_h(&c, buffer, VOCL_T_MEM, 0);
        check_xfer(&c, dq, dm, offset, size, ptr);
        if (!c.err && host && vocl_host_forbids(dm, false, true))
            vocl_call_error(&c, CL_INVALID_OPERATION);
        cl_int err = c.err;
        const struct vocl_deferred_write w = {
            .type = CL_COMMAND_WRITE_BUFFER, .dst = buffer, .origin = {offset},
            .rows = {.p = ptr, .row_bytes = size, .rows = 1, .slices = 1}};
        if (!err && !dq->px->local &&
            vocl_write_deferred(dq, &w, num_events_in_wait_list, event_wait_list, event, &err))
            return err;
        if (err)
            return err;
        vocl_call_init(&c);
    }
    struct vocl_obj *q = start_buffer_xfer(&c, VOCL_OP_clEnqueueWriteBuffer, host, command_queue,
                                           buffer, blocking_write, offset, size, ptr,
                                           num_events_in_wait_list, event_wait_list, event, &m);
    if (q) {
        m.data = vocl_xfer_out(&c, ptr, size);
        vocl_enc_clEnqueueWriteBuffer_req(c.w, &m);
        if (vocl_xfer_send(&c, ptr, size) == 0 && event) {
            struct vocl_obj *e = vocl_call_new_event(&c, m.event, q);
            if (host)
                transfer_event(e, true);
            if (e && blocking_write)
                vocl_event_known_complete(e);
            *event = (cl_event)e;
        }
    }
    vocl_call_end(&c);
    return c.err;
}

static cl_int read_buffer(bool host, cl_command_queue command_queue, cl_mem buffer,
                          cl_bool blocking_read, size_t offset, size_t size, void *ptr,
                          cl_uint num_events_in_wait_list, const cl_event *event_wait_list,
                          cl_event *event)
{
    struct vocl_call c;
    struct vocl_msg_clEnqueueWriteBuffer_req m;
    cl_int shared_err;
    if (host && shared_xfer(false, command_queue, buffer, blocking_read, offset, size, ptr,
                            num_events_in_wait_list, event_wait_list, event, &shared_err))
        return shared_err;
    vocl_call_init(&c);
    struct vocl_obj *q = start_buffer_xfer(&c, VOCL_OP_clEnqueueReadBuffer, host, command_queue,
                                           buffer, blocking_read, offset, size, ptr,
                                           num_events_in_wait_list, event_wait_list, event, &m);
    if (q) {
        /* A read's message: the same fields, its data the other way. */
        vocl_enc_clEnqueueReadBuffer_req(
            c.w, &(struct vocl_msg_clEnqueueReadBuffer_req){
                     .queue = m.queue, .buffer = m.buffer, .blocking = m.blocking,
                     .offset = m.offset, .size = m.size, .wait_list = m.wait_list,
                     .event = m.event, .data = vocl_xfer_in(&c, ptr, size)});
        if (vocl_xfer_recv(&c, ptr, size) == 0) {
            /* Its events (and those of later commands of the queue) complete
             * once its data is here, too. */
            if (c.async && !c.px->local) {
                vocl_raise(&vocl_as_queue(q)->data_ticket, c.posted);
                vocl_host_read_posted(c.px, q, c.posted, ptr, size);
            }
            if (event) {
                struct vocl_obj *e = vocl_call_new_event(&c, m.event, q);
                if (host)
                    transfer_event(e, false);
                if (e && blocking_read)
                    vocl_event_known_complete(e);
                if (e && c.async && !c.px->local)
                    vocl_event_lands(e);
                *event = (cl_event)e;
            }
        }
    }
    vocl_call_end(&c);
    return c.err;
}

cl_int CL_API_CALL vocl_hand_clEnqueueWriteBuffer(cl_command_queue command_queue, cl_mem buffer,
                                                     cl_bool blocking_write, size_t offset,
                                                     size_t size, const void *ptr,
                                                     cl_uint num_events_in_wait_list,
                                                     const cl_event *event_wait_list,
                                                     cl_event *event)
{
    return write_buffer(true, command_queue, buffer, blocking_write, offset, size, ptr,
                        num_events_in_wait_list, event_wait_list, event);
}

cl_int CL_API_CALL vocl_hand_clEnqueueReadBuffer(cl_command_queue command_queue, cl_mem buffer,
                                                    cl_bool blocking_read, size_t offset,
                                                    size_t size, void *ptr,
                                                    cl_uint num_events_in_wait_list,
                                                    const cl_event *event_wait_list,
                                                    cl_event *event)
{
    return read_buffer(true, command_queue, buffer, blocking_read, offset, size, ptr,
                       num_events_in_wait_list, event_wait_list, event);
}

/* --- maps: in-process natively; remotely a host shadow ------------------------------------------- */

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;

void vocl_mapping_add(struct vocl_mem *m, struct vocl_mapping *mp)
{
    pthread_mutex_lock(&maps_lock);
    mp->next = m->maps;
    m->maps = mp;
    pthread_mutex_unlock(&maps_lock);
}

void vocl_mapping_pending(struct vocl_mapping *mp, cl_bool blocking, cl_command_queue queue)
{
    struct vocl_obj *q = vocl_lookup(queue, VOCL_T_QUEUE);
    if (blocking || !q || q->px->local)
        return;
    mp->ticket = atomic_load(&vocl_as_queue(q)->data_ticket);
    mp->queue = q;
    mp->px = q->px;
}

static struct vocl_mapping *mapping_take(struct vocl_mem *m, void *ptr)
{
    pthread_mutex_lock(&maps_lock);
    struct vocl_mapping **pp = &m->maps, *mp;
    while ((mp = *pp) && mp->ptr != ptr)
        pp = &mp->next;
    if (mp)
        *pp = mp->next;
    pthread_mutex_unlock(&maps_lock);
    return mp;
}

static void mapping_free(struct vocl_mapping *mp)
{
    if (mp->owned)
        free(mp->ptr);
    if (mp->alias)
        munmap(mp->alias, mp->offset + mp->size);
    free(mp);
}

/*
 * A map of a buffer a proxy of this node shares, where the device works in
 * that memory: a pointer into it, no copy (as a CPU driver maps natively),
 * once the commands before it have ended (as shared_xfer).  The pointer is
 * a view of its own (mremap of the shared pages), so that it outlives a
 * move of the buffer to another proxy; a write map of a buffer that moved
 * while mapped is written back at unmap.  False: the shadow path runs.
 */
static bool shared_map(cl_command_queue command_queue, struct vocl_mem *m, cl_bool blocking,
                       cl_map_flags flags, size_t offset, size_t size, cl_uint nwl,
                       const cl_event *wl, cl_event *event, struct vocl_mapping *mp, cl_int *err)
{
    struct vocl_queue *q = vocl_as_queue(vocl_lookup(command_queue, VOCL_T_QUEUE));
    if ((nwl && !blocking) || !q || !may_share(q, m) || m->host_ptr || size == 0 ||
        (nwl && vocl_wl_check(&q->obj, nwl, wl)))
        return false;
    bool drained;
    void *shared = shared_begin(q, m, blocking, &drained);
    if (!shared)
        return false;
    if (!shared_wait(command_queue, nwl, wl, drained, err))
        return true;
    void *alias = mremap(shared, 0, offset + size, MREMAP_MAYMOVE);
    if (alias == MAP_FAILED)
        return false; /* (the shadow path, its waits done) */
    if ((*err = shared_done(command_queue, event, CL_COMMAND_MAP_BUFFER)) != CL_SUCCESS) {
        munmap(alias, offset + size);
        return true;
    }
    vocl_prof_shared(size);
    *mp = (struct vocl_mapping){.ptr = (char *)alias + offset, .alias = alias, .shared = shared,
                                .offset = offset, .size = size, .flags = flags};
    return true;
}

void * CL_API_CALL vocl_hand_clEnqueueMapBuffer(cl_command_queue command_queue, cl_mem buffer,
                                                  cl_bool blocking_map, cl_map_flags map_flags,
                                                  size_t offset, size_t size,
                                                  cl_uint num_events_in_wait_list,
                                                  const cl_event *event_wait_list,
                                                  cl_event *event, cl_int *errcode_ret)
{
    struct vocl_call c;
    void *ptr = NULL;
    vocl_call_init(&c);
    struct vocl_obj *q = vocl_call_h(&c, command_queue, VOCL_T_QUEUE, 0);
    struct vocl_obj *m = vocl_call_h(&c, buffer, VOCL_T_MEM, 0);
    vocl_call_wl(&c, num_events_in_wait_list, event_wait_list);
    check_xfer(&c, q, m, offset, size, (void *)1);
    if (!c.err && vocl_host_forbids(m, map_flags & CL_MAP_READ,
                                    map_flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION)))
        vocl_call_error(&c, CL_INVALID_OPERATION);
    if (!c.err && !c.px->local) {
        /* Remote: in the memory a proxy of this node shares, else read into a
         * shadow (unless the map discards the contents). */
        struct vocl_mem *mm = vocl_as_mem(m);
        struct vocl_mapping *mp = calloc(1, sizeof(*mp));
        cl_int err;
        if (mp && shared_map(command_queue, mm, blocking_map, map_flags, offset, size,
                             num_events_in_wait_list, event_wait_list, event, mp, &err)) {
            vocl_call_end(&c);
            if (errcode_ret)
                *errcode_ret = err;
            if (err != CL_SUCCESS) {
                free(mp);
                return NULL;
            }
            vocl_mapping_add(mm, mp);
            return mp->ptr;
        }
        ptr = mm->host_ptr ? (char *)mm->host_ptr + offset : malloc(size);
        if (!mp || !ptr) {
            free(mp);
            if (!mm->host_ptr)
                free(ptr);
            vocl_call_end(&c);
            if (errcode_ret)
                *errcode_ret = CL_OUT_OF_HOST_MEMORY;
            return NULL;
        }
        if (map_flags & CL_MAP_WRITE_INVALIDATE_REGION)
            err = clEnqueueMarkerWithWaitList(command_queue, num_events_in_wait_list,
                                              event_wait_list, event);
        else /* (non-blocking: its wait list may hold a user event this thread sets later) */
            err = read_buffer(false, command_queue, buffer, blocking_map, offset, size, ptr,
                              num_events_in_wait_list, event_wait_list, event);
        if (err != CL_SUCCESS) {
            free(mp);
            if (!mm->host_ptr)
                free(ptr);
            if (errcode_ret)
                *errcode_ret = err;
            return NULL;
        }
        if (event)
            vocl_event_says(vocl_lookup(*event, VOCL_T_EVENT), CL_COMMAND_MAP_BUFFER);
        mp->ptr = ptr;
        mp->owned = !mm->host_ptr;
        mp->offset = offset;
        mp->size = size;
        mp->flags = map_flags;
        if (!(map_flags & CL_MAP_WRITE_INVALIDATE_REGION))
            vocl_mapping_pending(mp, blocking_map, command_queue);
        vocl_mapping_add(mm, mp);
        if (errcode_ret)
            *errcode_ret = CL_SUCCESS;
        return ptr;
    }
    if (vocl_call_start(&c, VOCL_OP_clEnqueueMapBuffer) == 0) {
        uint64_t ev_id = event ? vocl_call_new_id(&c) : 0;
        vocl_enc_clEnqueueMapBuffer_req(
            c.w, &(struct vocl_msg_clEnqueueMapBuffer_req){
                     .queue = q->id, .buffer = m->id, .blocking = blocking_map ? 1 : 0,
                     .map_flags = map_flags, .offset = offset, .size = size,
                     .wait_list = vocl_call_wl_ids(&c, num_events_in_wait_list, event_wait_list),
                     .event = ev_id});
        if (vocl_call_send(&c) == 0) {
            struct vocl_msg_clEnqueueMapBuffer_rep rep;
            vocl_dec_clEnqueueMapBuffer_rep(&c.r, &rep);
            ptr = (void *)(uintptr_t)rep.ptr;
            if (event)
                *event = (cl_event)vocl_call_new_event(&c, ev_id, q);
        }
    }
    vocl_call_end(&c);
    if (errcode_ret)
        *errcode_ret = c.err;
    return c.err ? NULL : ptr;
}

cl_int CL_API_CALL vocl_hand_clEnqueueUnmapMemObject(cl_command_queue command_queue,
                                                        cl_mem memobj, void *mapped_ptr,
                                                        cl_uint num_events_in_wait_list,
                                                        const cl_event *event_wait_list,
                                                        cl_event *event)
{
    struct vocl_call c;
    vocl_call_init(&c);
    struct vocl_obj *q = vocl_call_h(&c, command_queue, VOCL_T_QUEUE, 0);
    struct vocl_obj *m = vocl_call_h(&c, memobj, VOCL_T_MEM, 0);
    vocl_call_wl(&c, num_events_in_wait_list, event_wait_list);
    /* A host shadow (remote buffers, and images anywhere): write back if mapped
     * for writing.  Otherwise a native mapping of a local buffer. */
    struct vocl_mapping *mp = c.err ? NULL : mapping_take(vocl_as_mem(m), mapped_ptr);
    if (mp || (!c.err && !c.px->local)) {
        vocl_call_end(&c);
        if (!mp)
            return CL_INVALID_VALUE;
        cl_int err = CL_SUCCESS;
        bool write = mp->flags & (CL_MAP_WRITE | CL_MAP_WRITE_INVALIDATE_REGION);
        /* A map in the shared memory wrote in place, unless the buffer moved since. */
        if (mp->alias && mp->shared == vocl_as_mem(m)->shm)
            write = false;
        /* What goes back is the shadow: the map's read is in it first. */
        if (write && mp->ticket)
            err = vocl_xport_land(mp->px, mp->queue, mp->ticket, mp->ticket);
        if (err == CL_SUCCESS && write && mp->image)
            err = vocl_image_rw(true, false, command_queue, memobj, CL_TRUE, mp->origin,
                                mp->region, mp->row_pitch, mp->slice_pitch, mp->ptr,
                                num_events_in_wait_list, event_wait_list, event);
        else if (err == CL_SUCCESS && write)
            err = write_buffer(false, command_queue, memobj, CL_TRUE, mp->offset, mp->size,
                               mp->ptr, num_events_in_wait_list, event_wait_list, event);
        else if (err == CL_SUCCESS)
            err = clEnqueueMarkerWithWaitList(command_queue, num_events_in_wait_list,
                                              event_wait_list, event);
        if (err == CL_SUCCESS && event)
            vocl_event_says(vocl_lookup(*event, VOCL_T_EVENT), CL_COMMAND_UNMAP_MEM_OBJECT);
        mapping_free(mp);
        return err;
    }
    if (vocl_call_start(&c, VOCL_OP_clEnqueueUnmapMemObject) == 0) {
        uint64_t ev_id = event ? vocl_call_new_id(&c) : 0;
        vocl_enc_clEnqueueUnmapMemObject_req(
            c.w, &(struct vocl_msg_clEnqueueUnmapMemObject_req){
                     .queue = q->id, .memobj = m->id, .mapped_ptr = (uint64_t)(uintptr_t)mapped_ptr,
                     .wait_list = vocl_call_wl_ids(&c, num_events_in_wait_list, event_wait_list),
                     .event = ev_id});
        if (vocl_call_send(&c) == 0 && event)
            *event = (cl_event)vocl_call_new_event(&c, ev_id, q);
    }
    vocl_call_end(&c);
    return c.err;
}

void vocl_mappings_free(struct vocl_mem *m)
{
    for (struct vocl_mapping *mp = m->maps, *next; mp; mp = next) {
        next = mp->next;
        mapping_free(mp);
    }
    m->maps = NULL;
}

int vocl_hook_clGetMemObjectInfo(cl_mem memobj, cl_mem_info param_name, size_t param_value_size,
                                 void *param_value, size_t *param_value_size_ret, cl_int *ret)
{
    struct vocl_mem *m = vocl_as_mem(vocl_lookup(memobj, VOCL_T_MEM));
    const void *v;
    if (!m)
        return 0;
    switch (param_name) {
    case CL_MEM_CONTEXT: v = m->obj.context; break;
    case CL_MEM_ASSOCIATED_MEMOBJECT: v = m->obj.parent; break;
    case CL_MEM_HOST_PTR: v = m->host_ptr; break;
    case CL_MEM_TYPE: {
        if (!m->mem_type && !m->mem_size)
            return 0; /* a pipe: its type and size are the proxy's */
        cl_mem_object_type t = m->mem_type ? m->mem_type : CL_MEM_OBJECT_BUFFER;
        *ret = vocl_info_answer(&t, sizeof(t), param_value_size, param_value,
                                param_value_size_ret);
        return 1;
    }
    case CL_MEM_SIZE:
        if (m->mem_type || !m->mem_size) /* a buffer's only */
            return 0;
        *ret = vocl_info_answer(&m->mem_size, sizeof(m->mem_size), param_value_size, param_value,
                                param_value_size_ret);
        return 1;
    case CL_MEM_FLAGS:
        /* As the application gave them (a proxy got a copy of USE_HOST_PTR data). */
        if (!m->mem_flags && m->obj.parent)
            return 0;
        *ret = vocl_info_answer(&m->mem_flags, sizeof(m->mem_flags), param_value_size,
                                param_value, param_value_size_ret);
        return 1;
    default: return 0;
    }
    *ret = vocl_info_answer(&v, sizeof(v), param_value_size, param_value, param_value_size_ret);
    return 1;
}

/* What an image's creation said, answered here (the CTS's images/clGetInfo
 * asks it 23,232 times in its 1D sub-test, a round trip each); its pitches,
 * which the driver chooses, are asked of the proxy. */
int vocl_hook_clGetImageInfo(cl_mem image, cl_image_info param_name, size_t param_value_size,
                             void *param_value, size_t *param_value_size_ret, cl_int *ret)
{
    struct vocl_obj *o = vocl_lookup(image, VOCL_T_MEM);
    struct vocl_mem *m = vocl_as_mem(o);
    if (!m)
        return 0;
    if (param_name == CL_IMAGE_BUFFER) {
        const void *v = o->parent;
        *ret = vocl_info_answer(&v, sizeof(v), param_value_size, param_value, param_value_size_ret);
        return 1;
    }
    const cl_image_desc *d = &m->desc;
    cl_mem_object_type t = m->mem_type;
    if (!t || d->image_type != t || !m->elem_size)
        return 0; /* (not an image made by clCreateImage*) */
    bool has_height = t == CL_MEM_OBJECT_IMAGE2D || t == CL_MEM_OBJECT_IMAGE2D_ARRAY ||
                      t == CL_MEM_OBJECT_IMAGE3D;
    bool is_array = t == CL_MEM_OBJECT_IMAGE1D_ARRAY || t == CL_MEM_OBJECT_IMAGE2D_ARRAY;
    size_t n;
    cl_uint u;
    switch (param_name) {
    case CL_IMAGE_FORMAT:
        *ret = vocl_info_answer(&m->format, sizeof(m->format), param_value_size, param_value,
                                param_value_size_ret);
        return 1;
    case CL_IMAGE_ELEMENT_SIZE: n = m->elem_size; break;
    case CL_IMAGE_WIDTH: n = d->image_width; break;
    case CL_IMAGE_HEIGHT: n = has_height ? d->image_height : 0; break;
    case CL_IMAGE_DEPTH: n = t == CL_MEM_OBJECT_IMAGE3D ? d->image_depth : 0; break;
    case CL_IMAGE_ARRAY_SIZE: n = is_array ? d->image_array_size : 0; break;
    case CL_IMAGE_NUM_MIP_LEVELS:
    case CL_IMAGE_NUM_SAMPLES:
        u = param_name == CL_IMAGE_NUM_MIP_LEVELS ? d->num_mip_levels : d->num_samples;
        *ret = vocl_info_answer(&u, sizeof(u), param_value_size, param_value,
                                param_value_size_ret);
        return 1;
    default: return 0;
    }
    *ret = vocl_info_answer(&n, sizeof(n), param_value_size, param_value, param_value_size_ret);
    return 1;
}

cl_int CL_API_CALL vocl_hand_clGetSupportedImageFormats(cl_context context, cl_mem_flags flags,
                                                           cl_mem_object_type image_type,
                                                           cl_uint num_entries,
                                                           cl_image_format *image_formats,
                                                           cl_uint *num_image_formats)
{
    struct vocl_call c;
    vocl_call_init(&c);
    struct vocl_obj *ctx = vocl_call_h(&c, context, VOCL_T_CONTEXT, 0);
    if (!c.err && num_entries == 0 && image_formats)
        vocl_call_error(&c, CL_INVALID_VALUE);
    if (vocl_call_start(&c, VOCL_OP_clGetSupportedImageFormats) == 0) {
        vocl_enc_clGetSupportedImageFormats_req(
            c.w, &(struct vocl_msg_clGetSupportedImageFormats_req){
                     .context = vocl_id_on(ctx, c.px), .flags = flags, .image_type = image_type,
                     .num_entries = image_formats ? num_entries : 0});
        struct vocl_msg_clGetSupportedImageFormats_rep rep;
        if (vocl_call_send(&c) == 0 &&
            (vocl_dec_clGetSupportedImageFormats_rep(&c.r, &rep) || c.r.fail))
            vocl_call_error(&c, CL_OUT_OF_RESOURCES); /* a malformed reply */
        if (c.err == CL_SUCCESS) {
            struct vocl_rd it;
            struct vocl_rec_image_format f;
            vocl_rd_init(&it, rep.formats.raw, rep.formats.raw_len);
            for (cl_uint i = 0; i < num_entries && image_formats && vocl_next_image_format(&it, &f);
                 i++) {
                image_formats[i].image_channel_order = f.channel_order;
                image_formats[i].image_channel_data_type = f.channel_data_type;
            }
            if (num_image_formats)
                *num_image_formats = rep.num_image_formats;
        }
    }
    vocl_call_end(&c);
    return c.err;
}

/* --- shared virtual memory: not across the network -------------------------------------------- */

void * CL_API_CALL vocl_hand_clSVMAlloc(cl_context context, cl_svm_mem_flags flags, size_t size,
                                          cl_uint alignment)
{
    (void)context, (void)flags, (void)size, (void)alignment;
    vocl_warn_once_unsupported("clSVMAlloc");
    return NULL;
}

void CL_API_CALL vocl_hand_clSVMFree(cl_context context, void *svm_pointer)
{
    (void)context, (void)svm_pointer;
}
