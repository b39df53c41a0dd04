/*
 * shm.c - buffers shared with a client of this node (common/shm.h).
 *
 * A buffer's memory is a memfd mapped here and given to the driver as
 * CL_MEM_USE_HOST_PTR; the client maps the same memfd (found through
 * /proc/<pid>/fd, SHM_MAP) and copies straight into or out of it.  That is
 * only right where the device works on that memory in place, which the
 * specification does not promise: so each device is first probed once, in
 * the context of its first candidate buffer (a device write must show in
 * the memory without a map, and a write to the memory in the next device
 * read).  A device that fails the probe gets ordinary buffers.
 *
 * A client of another user cannot open /proc/<pid>/fd of this process
 * (ptrace's rules): it gets the descriptor over a Unix socket instead
 * (SCM_RIGHTS, fd_server), which gives a buffer only to the uid of the
 * session that made it (SO_PEERCRED: the kernel's word, not the client's).
 */
#include "internal.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "bell.h"
#include "log.h"
#include "shm.h"
#include "thread.h"

struct shared {
    struct shared *next;
    cl_mem mem;
    void *ptr;
    size_t size;
    int fd;
    uint64_t token;
    long uid; /* the uid of the session that made it (-1: not known) */
};

static void serve_fds_for(const struct exec_session *s);

struct probed {
    struct probed *next;
    cl_device_id dev;
    bool in_place;
};

static struct {
    pthread_mutex_t lock;
    struct shared *list;
    unsigned count, limit; /* of the list; each holds a descriptor */
    struct probed *probed;
    uint64_t next_token;
    bool serving;        /* fd_server runs */
    long bell_uids[64];  /* the uids given the bell, for fd_server */
    unsigned nbell_uids;
} shm = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Each shared buffer holds a descriptor: at most half of the proxy's
 * limit, so that MPI and the driver always have the rest. */
static unsigned descriptors_for_buffers(void)
{
    struct rlimit r;
    if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur == RLIM_INFINITY)
        return 512;
    return (unsigned)(r.rlim_cur / 2);
}

/* A memfd of size bytes, mapped; its fd, or -1. */
static int map_new(size_t size, uint64_t token, void **ptr)
{
    char name[64];
    vocl_shm_name(name, sizeof(name), token);
    int fd = memfd_create(name, MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    void *p = ftruncate(fd, (off_t)size) == 0
                  ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
                  : MAP_FAILED;
    if (p == MAP_FAILED) {
        close(fd);
        return -1;
    }
    *ptr = p;
    return fd;
}

/* Whether dev, in ctx, works on USE_HOST_PTR memory in place. */
static bool probe(const struct vocl_native_api *cl, cl_context ctx, cl_device_id dev)
{
    enum { N = 4096 };
    void *p = NULL;
    int fd = map_new(N, 0, &p);
    if (fd < 0)
        return false;
    close(fd);
    cl_int err;
    cl_command_queue q = cl->clCreateCommandQueue(ctx, dev, 0, &err);
    cl_mem m = q ? cl->clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, N, p, &err)
                 : NULL;
    bool ok = false;
    if (m) {
        unsigned char fill = 0x5a, back[N];
        memset(p, 0, N);
        ok = cl->clEnqueueFillBuffer(q, m, &fill, 1, 0, N, 0, NULL, NULL) == CL_SUCCESS &&
             cl->clFinish(q) == CL_SUCCESS && ((unsigned char *)p)[N - 1] == fill;
        memset(p, 0xa5, N);
        ok = ok &&
             cl->clEnqueueReadBuffer(q, m, CL_TRUE, 0, N, back, 0, NULL, NULL) == CL_SUCCESS &&
             back[0] == 0xa5 && back[N - 1] == 0xa5;
        cl->clReleaseMemObject(m);
    }
    if (q) {
        cl->clFinish(q);
        cl->clReleaseCommandQueue(q);
    }
    munmap(p, N);
    return ok;
}

/* The device of a one-device context that works in place, or NULL. */
static cl_device_id in_place_device(const struct vocl_native_api *cl, cl_context ctx)
{
    cl_uint n = 0;
    cl_device_id dev = NULL;
    if (cl->clGetContextInfo(ctx, CL_CONTEXT_NUM_DEVICES, sizeof(n), &n, NULL) != CL_SUCCESS ||
        n != 1 ||
        cl->clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof(dev), &dev, NULL) != CL_SUCCESS)
        return NULL;
    pthread_mutex_lock(&shm.lock);
    struct probed *p = shm.probed;
    while (p && p->dev != dev)
        p = p->next;
    bool known = p != NULL, ok = p && p->in_place;
    pthread_mutex_unlock(&shm.lock);
    if (!known) {
        /* Two first buffers at once may both probe: the same answer. */
        ok = probe(cl, ctx, dev);
        struct probed *np = calloc(1, sizeof(*np));
        if (np) {
            *np = (struct probed){.dev = dev, .in_place = ok};
            pthread_mutex_lock(&shm.lock);
            np->next = shm.probed;
            shm.probed = np;
            pthread_mutex_unlock(&shm.lock);
        }
        char name[128] = "?";
        cl->clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof(name) - 1, name, NULL);
        vocl_info("device %s %s: %s", name,
                  ok ? "works on host memory in place" : "copies host memory",
                  ok ? "its large buffers are shared with clients of this node" : "none shared");
    }
    return ok ? dev : NULL;
}

/* The driver freed the buffer: its memory goes. */
static void CL_CALLBACK on_freed(cl_mem mem, void *data)
{
    (void)mem;
    struct shared *sh = data;
    pthread_mutex_lock(&shm.lock);
    for (struct shared **p = &shm.list; *p; p = &(*p)->next)
        if (*p == sh) {
            *p = sh->next;
            shm.count--;
            break;
        }
    pthread_mutex_unlock(&shm.lock);
    munmap(sh->ptr, sh->size);
    close(sh->fd);
    free(sh);
}

cl_mem exec_shm_buffer(struct exec_req *q, cl_context ctx, cl_mem_flags flags, size_t size,
                       cl_int *err)
{
    const cl_mem_flags host = CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR | CL_MEM_ALLOC_HOST_PTR;
    if (!q->s->shm || size < VOCL_SHM_MIN || (flags & host) || !in_place_device(q->cl, ctx))
        return NULL;
    pthread_mutex_lock(&shm.lock);
    if (!shm.limit)
        shm.limit = descriptors_for_buffers();
    bool room = shm.count < shm.limit;
    if (room)
        shm.count++; /* taken now; given back below if it is not made */
    uint64_t token = ((uint64_t)getpid() << 32) ^ ++shm.next_token;
    pthread_mutex_unlock(&shm.lock);
    struct shared *sh = room ? calloc(1, sizeof(*sh)) : NULL;
    if (!sh)
        goto none;
    sh->token = token;
    sh->size = size;
    sh->uid = q->s->uid;
    sh->fd = map_new(size, sh->token, &sh->ptr);
    if (sh->fd < 0)
        goto none; /* an ordinary buffer, then */
    sh->mem = q->cl->clCreateBuffer(ctx, flags | CL_MEM_USE_HOST_PTR, size, sh->ptr, err);
    if (!sh->mem || q->cl->clSetMemObjectDestructorCallback(sh->mem, on_freed, sh) != CL_SUCCESS) {
        if (sh->mem)
            q->cl->clReleaseMemObject(sh->mem);
        munmap(sh->ptr, size);
        close(sh->fd);
        *err = CL_SUCCESS;
        goto none;
    }
    pthread_mutex_lock(&shm.lock);
    sh->next = shm.list;
    shm.list = sh;
    pthread_mutex_unlock(&shm.lock);
    serve_fds_for(q->s);
    return sh->mem;
none:
    free(sh);
    if (room) {
        pthread_mutex_lock(&shm.lock);
        shm.count--;
        pthread_mutex_unlock(&shm.lock);
    }
    return NULL;
}

void exec_op_shm_map(struct exec_req *q)
{
    struct vocl_msg_SHM_MAP_req m;
    vocl_dec_SHM_MAP_req(q->r, &m); /* (fixed fields: truncation is all that fails) */
    cl_mem mem = exec_h(q, m.mem, VOCL_T_MEM, 0);
    if (!exec_req_begin(q))
        return;
    pthread_mutex_lock(&shm.lock);
    struct shared *sh = q->s->shm ? shm.list : NULL;
    while (sh && sh->mem != mem)
        sh = sh->next;
    vocl_wr_i32(q->w, CL_SUCCESS);
    vocl_enc_SHM_MAP_rep(q->w, &(struct vocl_msg_SHM_MAP_rep){
                                   .pid = (uint64_t)getpid(),
                                   .fd = sh ? (uint32_t)sh->fd : UINT32_MAX,
                                   .size = sh ? sh->size : 0,
                                   .token = sh ? sh->token : 0});
    pthread_mutex_unlock(&shm.lock);
}

/* --- the proxy's bell (common/bell.h) ----------------------------------------------------------
 */

static struct {
    pthread_mutex_t lock;
    struct vocl_bell *_Atomic b;
    int fd;
} bell = {PTHREAD_MUTEX_INITIALIZER, NULL, -1};

/* --- descriptors for clients of other users (SCM_RIGHTS) ------------------------------------- */

/* A dup of the memfd of token, if uid may have it (under shm.lock); -1. */
static int fd_for_locked(uint64_t token, long uid)
{
    for (struct shared *sh = shm.list; sh; sh = sh->next)
        if (sh->token == token)
            return sh->uid == uid ? fcntl(sh->fd, F_DUPFD_CLOEXEC, 0) : -1;
    if (token != ((uint64_t)getpid() << 32) || bell.fd < 0)
        return -1;
    for (unsigned i = 0; i < shm.nbell_uids; i++)
        if (shm.bell_uids[i] == uid)
            return fcntl(bell.fd, F_DUPFD_CLOEXEC, 0);
    return -1;
}

/* One client's question: an 8-byte token; the answer one byte, with the
 * descriptor attached where it may have it. */
static void answer_fd(int c)
{
    uint64_t token = 0;
    struct ucred cred;
    socklen_t len = sizeof(cred);
    int fd = -1;
    if (recv(c, &token, sizeof(token), MSG_WAITALL) == (ssize_t)sizeof(token) &&
        getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
        pthread_mutex_lock(&shm.lock);
        fd = fd_for_locked(token, (long)cred.uid);
        pthread_mutex_unlock(&shm.lock);
    }
    char byte = fd >= 0;
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct iovec iov = {.iov_base = &byte, .iov_len = 1};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        memset(&ctl, 0, sizeof(ctl));
        msg.msg_control = ctl.buf;
        msg.msg_controllen = sizeof(ctl.buf);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    }
    sendmsg(c, &msg, MSG_NOSIGNAL);
    if (fd >= 0)
        close(fd);
}

/* Answers on the abstract socket vocl_shm_fd_socket names, for the life of
 * the process: a thread that waits for nothing but its socket. */
static void *fd_server(void *arg)
{
    int s = (int)(intptr_t)arg;
    for (;;) {
        int c = accept4(s, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        /* (A client that says nothing holds it a second at most.) */
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){1, 0}, sizeof(struct timeval));
        setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &(struct timeval){1, 0}, sizeof(struct timeval));
        answer_fd(c);
        close(c);
    }
    return NULL;
}

/* Starts fd_server once a session of another user (whose uid the node
 * knows) shares memory here. */
static void serve_fds_for(const struct exec_session *s)
{
    if (s->uid < 0 || s->uid == (long)geteuid())
        return; /* (its own user's: /proc/<pid>/fd) */
    pthread_mutex_lock(&shm.lock);
    bool start = !shm.serving;
    shm.serving = true;
    pthread_mutex_unlock(&shm.lock);
    if (!start)
        return;
    struct sockaddr_un a;
    socklen_t len = vocl_shm_fd_socket(&a, getpid());
    int sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0 || bind(sock, (struct sockaddr *)&a, len) || listen(sock, 64) ||
        vocl_thread_detached(fd_server, (void *)(intptr_t)sock)) {
        vocl_warn("no socket for clients of other users to map shared buffers: their "
                  "transfers go through this process");
        if (sock >= 0)
            close(sock);
    }
}

/* The bell's memfd's token: no buffer's (theirs add a count from 1). */
static uint64_t bell_token(void)
{
    return (uint64_t)getpid() << 32;
}

/* The bell, made the first time a client asks for it (NULL: it cannot be). */
static struct vocl_bell *bell_make(void)
{
    pthread_mutex_lock(&bell.lock);
    if (!atomic_load(&bell.b)) {
        void *p = NULL;
        bell.fd = map_new(VOCL_BELL_SIZE, bell_token(), &p);
        if (bell.fd >= 0)
            atomic_store(&bell.b, p);
    }
    pthread_mutex_unlock(&bell.lock);
    return atomic_load(&bell.b);
}

struct vocl_bell *exec_bell(void)
{
    return atomic_load(&bell.b);
}

void exec_bell_ring(void)
{
    struct vocl_bell *b = atomic_load(&bell.b);
    if (b)
        vocl_bell_ring(b);
}

void exec_op_bell(struct exec_req *q)
{
    struct vocl_msg_BELL_req m;
    vocl_dec_BELL_req(q->r, &m); /* (empty: trailing bytes are all that fails) */
    if (!exec_req_begin(q))
        return;
    struct vocl_bell *b = q->s->shm && vocl_bell_allowed() ? bell_make() : NULL;
    if (b) {
        pthread_mutex_lock(&shm.lock);
        if (shm.nbell_uids < 64)
            shm.bell_uids[shm.nbell_uids++] = q->s->uid;
        pthread_mutex_unlock(&shm.lock);
        serve_fds_for(q->s);
    }
    vocl_wr_i32(q->w, CL_SUCCESS);
    vocl_enc_BELL_rep(q->w, &(struct vocl_msg_BELL_rep){.pid = (uint64_t)getpid(),
                                                        .fd = b ? (uint32_t)bell.fd : UINT32_MAX,
                                                        .token = bell_token()});
}
