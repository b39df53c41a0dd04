/*
 * main.c - voclproxyd: serves this node's OpenCL devices to VOCL clients.
 *
 * Job mode (default): the proxy is a rank of the application's MPI job; the
 * first VOCL_APP_RANKS ranks are clients, each with its own session.  The
 * proxy exits when every client has said BYE.
 *
 * Connect mode (--listen): the proxy opens an MPI port and accepts clients
 * on an accept thread.  That needs an MPI with dynamic processes; MPICH's
 * ch4:ucx (Debian 12) has none, and the proxy says so and exits at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "backoff.h"
#include "executor.h"
#include "liveness.h"
#include "log.h"
#include "native.h"
#include "protocol.h"
#include "thread.h"
#include "token.h"
#include "wire.h"

#define VOCLPROXYD_VERSION "0.1.0"

struct options {
    cl_device_type type;
    bool listen;
    const char *port_file;
    const char *token_file;
    struct proxyd_xfer_cfg xfer;
    struct proxyd_limits limits;
};

/* A session's channel: job mode shares one communicator (peer = the client's
 * rank); connect mode has one intercommunicator per client (peer = 0). */
static MPI_Comm session_comm(struct proxyd_session *s)
{
    return *(MPI_Comm *)s->transport;
}

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: voclproxyd [OPTIONS]\n"
            "Serve this node's OpenCL devices to applications running under VOCL.\n"
            "Normally started by vocl-run as ranks of the application's MPI job.\n\n"
            "  -t, --device-type TYPE  devices to serve: all (default), gpu, cpu,\n"
            "                          accelerator, custom, default\n"
            "  -l, --listen            connect mode: open an MPI port for clients\n"
            "                          (needs an MPI with dynamic processes)\n"
            "  -p, --port-file FILE    connect mode: write the port name to FILE\n"
            "  -k, --token-file FILE   connect mode: the secret clients must present\n"
            "                          (default $VOCL_TOKEN_FILE, else ~/.vocl/token;\n"
            "                          made, mode 0600, if missing)\n"
            "  -b, --pool-buffers N    staging buffers for transfers (default %u)\n"
            "  -s, --pool-size BYTES   bytes per staging buffer, also the chunk size of\n"
            "                          transfers; K and M suffixes (default %uM)\n"
            "      --no-pipeline       one staging buffer, stages one after the other\n"
            "      --no-direct         always stage, even where device memory is host memory\n"
            "      --max-session-mem BYTES      memory objects one client may hold, in\n"
            "                          bytes with K, M or G (default: no limit)\n"
            "      --max-session-objects N      OpenCL objects one client may hold\n"
            "                          (default: no limit)\n"
            "  -v, --verbose           more messages on stderr (repeat for more)\n"
            "  -q, --quiet             errors only\n"
            "  -h, --help              this help\n"
            "  -V, --version           the version\n\n"
            "Environment: VOCL_APP_RANKS (set by vocl-run): ranks below it are clients;\n"
            "VOCL_NATIVE_LIB: the native OpenCL library (default libOpenCL.so.1);\n"
            "VOCL_PIPELINE=0 and VOCL_DIRECT=0: as --no-pipeline and --no-direct;\n"
            "VOCL_POOL_BUFFERS and VOCL_POOL_SIZE: defaults of -b and -s;\n"
            "VOCL_MAX_SESSION_MEM and VOCL_MAX_SESSION_OBJECTS: defaults of the limits;\n"
            "VOCL_PEER_TIMEOUT: seconds a silent client or proxy has to answer a ping\n"
            "before it counts as dead (default 3);\n"
            "VOCL_PROXY_RUSAGE=FILE: append this proxy's peak memory to FILE at exit.\n"
            "See voclproxyd(8).\n",
            PROXYD_POOL_N, PROXYD_POOL_SIZE >> 20);
}

static int parse_type(const char *s, cl_device_type *t)
{
    static const struct {
        const char *name;
        cl_device_type type;
    } types[] = {{"all", CL_DEVICE_TYPE_ALL},       {"gpu", CL_DEVICE_TYPE_GPU},
                 {"cpu", CL_DEVICE_TYPE_CPU},       {"accelerator", CL_DEVICE_TYPE_ACCELERATOR},
                 {"custom", CL_DEVICE_TYPE_CUSTOM}, {"default", CL_DEVICE_TYPE_DEFAULT}};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (!strcmp(s, types[i].name)) {
            *t = types[i].type;
            return 0;
        }
    return -1;
}

/* A byte count with an optional K or M suffix; 0 when malformed. */
static size_t parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s)
        return 0;
    if (*end == 'K' || *end == 'k')
        v <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
        v <<= 20, end++;
    else if (*end == 'G' || *end == 'g')
        v <<= 30, end++;
    return *end || v > SIZE_MAX ? 0 : (size_t)v;
}

static int set_pool_n(struct options *o, const char *arg)
{
    char *end;
    long n = strtol(arg, &end, 10);
    if (*end || n < 1 || n > 64) {
        fprintf(stderr, "voclproxyd: pool buffers must be 1..64, not '%s'\n", arg);
        return -1;
    }
    o->xfer.pool_n = (unsigned)n;
    return 0;
}

static int set_pool_size(struct options *o, const char *arg)
{
    size_t sz = parse_size(arg);
    if (sz < PROXYD_CHUNK_MIN || sz > PROXYD_CHUNK_MAX) {
        fprintf(stderr, "voclproxyd: pool buffer size must be 4K..64M, not '%s'\n", arg);
        return -1;
    }
    o->xfer.pool_size = sz;
    return 0;
}

static int set_limit(uint64_t *limit, const char *what, const char *arg, bool size)
{
    char *end;
    uint64_t v = size ? parse_size(arg) : strtoull(arg, &end, 10);
    if (v == 0 || (!size && *end)) {
        fprintf(stderr, "voclproxyd: %s must be a positive %s, not '%s'\n", what,
                size ? "size (K, M, G)" : "count", arg);
        return -1;
    }
    *limit = v;
    return 0;
}

static bool env_off(const char *name)
{
    const char *v = getenv(name);
    return v && !strcmp(v, "0");
}

static int parse_args(int argc, char **argv, struct options *o)
{
    enum { OPT_NO_PIPELINE = 256, OPT_NO_DIRECT, OPT_MAX_MEM, OPT_MAX_OBJS };
    static const struct option longopts[] = {
        {"device-type", required_argument, NULL, 't'},
        {"listen", no_argument, NULL, 'l'},
        {"port-file", required_argument, NULL, 'p'},
        {"token-file", required_argument, NULL, 'k'},
        {"pool-buffers", required_argument, NULL, 'b'},
        {"pool-size", required_argument, NULL, 's'},
        {"no-pipeline", no_argument, NULL, OPT_NO_PIPELINE},
        {"no-direct", no_argument, NULL, OPT_NO_DIRECT},
        {"max-session-mem", required_argument, NULL, OPT_MAX_MEM},
        {"max-session-objects", required_argument, NULL, OPT_MAX_OBJS},
        {"verbose", no_argument, NULL, 'v'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    int c;
    o->type = CL_DEVICE_TYPE_ALL;
    o->xfer = (struct proxyd_xfer_cfg){.pool_n = PROXYD_POOL_N,
                                       .pool_size = PROXYD_POOL_SIZE,
                                       .pipeline = !env_off("VOCL_PIPELINE"),
                                       .direct = !env_off("VOCL_DIRECT")};
    /* The environment gives defaults (vocl-run passes it to every rank). */
    const char *n = getenv("VOCL_POOL_BUFFERS"), *sz = getenv("VOCL_POOL_SIZE");
    if (n && *n && set_pool_n(o, n))
        return 2;
    if (sz && *sz && set_pool_size(o, sz))
        return 2;
    const char *mm = getenv("VOCL_MAX_SESSION_MEM"), *mo = getenv("VOCL_MAX_SESSION_OBJECTS");
    if (mm && *mm && set_limit(&o->limits.mem, "VOCL_MAX_SESSION_MEM", mm, true))
        return 2;
    if (mo && *mo && set_limit(&o->limits.objects, "VOCL_MAX_SESSION_OBJECTS", mo, false))
        return 2;
    while ((c = getopt_long(argc, argv, "t:lp:k:b:s:vqhV", longopts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (parse_type(optarg, &o->type)) {
                fprintf(stderr, "voclproxyd: unknown device type '%s'\n", optarg);
                return 2;
            }
            break;
        case 'l': o->listen = true; break;
        case 'p': o->port_file = optarg; break;
        case 'k': o->token_file = optarg; break;
        case 'b':
            if (set_pool_n(o, optarg))
                return 2;
            break;
        case 's':
            if (set_pool_size(o, optarg))
                return 2;
            break;
        case OPT_NO_PIPELINE: o->xfer.pipeline = false; break;
        case OPT_NO_DIRECT: o->xfer.direct = false; break;
        case OPT_MAX_MEM:
            if (set_limit(&o->limits.mem, "--max-session-mem", optarg, true))
                return 2;
            break;
        case OPT_MAX_OBJS:
            if (set_limit(&o->limits.objects, "--max-session-objects", optarg, false))
                return 2;
            break;
        case 'v': vocl_log_level++; break;
        case 'q': vocl_log_level = VOCL_LOG_ERROR; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("voclproxyd " VOCLPROXYD_VERSION "\n"); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "voclproxyd: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    return -1;
}

/* --- the MPI data channel ---------------------------------------------------------------------- */

/* A chunk the client promised: wait for it, but not forever. */
#define DATA_TIMEOUT_NS (30ull * 1000000000u)

/* A peer (client or proxy) stopped answering pings (liveness.h): MPI_Finalize
 * would wait for it forever, so this proxy will exit without it. */
static atomic_bool peer_died;

/* Clients that said BYE, told that a peer died (they leave without
 * MPI_Finalize) or not (they wait in it): how the job ends (main). */
static int left_told, left_untold;

static int client_died(struct proxyd_session *s)
{
    atomic_store(&peer_died, true);
    atomic_store(&s->lost, true);
    return -1;
}

static bool mpi_peer_died(void)
{
    return atomic_load(&peer_died);
}

static int mpi_recv(struct proxyd_session *s, int tag, void *buf, size_t n)
{
    MPI_Message msg;
    MPI_Status st;
    int flag = 0, count = 0;
    uint64_t start = vocl_now_ns();
    struct vocl_live lw;
    vocl_live_begin(&lw, s->peer);
    while (!flag) {
        if (MPI_Improbe(s->peer, tag, session_comm(s), &flag, &msg, &st) != MPI_SUCCESS)
            return -1;
        if (!flag && !vocl_live_ok(&lw))
            return client_died(s);
        if (!flag && vocl_now_ns() - start > DATA_TIMEOUT_NS) {
            vocl_warn("rank %d: data chunk did not arrive in 30 s", s->peer);
            return -1;
        }
        if (!flag)
            vocl_backoff(start, 100000);
    }
    MPI_Get_count(&st, MPI_BYTE, &count);
    if ((size_t)count != n) {
        /* Out of step: take the message off the queue and give up on the session. */
        char dummy;
        MPI_Mrecv(&dummy, 0, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
        vocl_warn("rank %d: data chunk of %d bytes where %zu were due", s->peer, count, n);
        return -1;
    }
    return MPI_Mrecv(buf, count, MPI_BYTE, &msg, MPI_STATUS_IGNORE) == MPI_SUCCESS ? 0 : -1;
}

/* Waits for a send to s's client to complete: not forever, and not past
 * the client's death. */
static int sent(struct proxyd_session *s, MPI_Request *req)
{
    uint64_t start = vocl_now_ns();
    struct vocl_live lw;
    vocl_live_begin(&lw, s->peer);
    for (;;) {
        int done = 0;
        if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return -1;
        if (done)
            return 0;
        if (!vocl_live_ok(&lw)) {
            MPI_Request_free(req);
            return client_died(s);
        }
        if (vocl_now_ns() - start > DATA_TIMEOUT_NS) {
            vocl_warn("rank %d: a message was not taken in 30 s", s->peer);
            MPI_Cancel(req);
            MPI_Request_free(req);
            return -1;
        }
        vocl_backoff(start, 100000);
    }
}

/* Posts a send to s's client; *req stays MPI_REQUEST_NULL when it fails. */
static int post(struct proxyd_session *s, int tag, const void *buf, size_t n, MPI_Request *req)
{
    if (MPI_Isend(buf, (int)n, MPI_BYTE, s->peer, tag, session_comm(s), req) == MPI_SUCCESS)
        return 0;
    *req = MPI_REQUEST_NULL;
    return -1;
}

/* A chunk of a read: sent once the client takes it. */
static int mpi_send(struct proxyd_session *s, int tag, const void *buf, size_t n)
{
    MPI_Request req;
    return post(s, tag, buf, n, &req) ? -1 : sent(s, &req);
}

/* --- what kernels print ------------------------------------------------------------------------
 *
 * Kernel printf writes to this process's stdout.  It is a pipe, read by a
 * thread into a buffer (so a kernel never blocks on a full pipe), and the
 * bytes go to the client, in an OUTPUT message just before its next reply:
 * the application prints them by the time clFinish or clWaitForEvents
 * returns.  With several clients, the one whose reply comes next gets them.
 */
static struct {
    pthread_mutex_t lock;
    int fd; /* read end; -1: stdout is not captured */
    struct vocl_wr buf;
} out = {PTHREAD_MUTEX_INITIALIZER, -1, {0}};

static void wr_raw(struct vocl_wr *w, const void *p, size_t n)
{
    void *d = vocl_wr_reserve(w, n);
    if (d)
        memcpy(d, p, n);
}

/* Moves what the pipe holds into out.buf (under out.lock). */
static void output_take(void)
{
    char tmp[4096];
    ssize_t n;
    while ((n = read(out.fd, tmp, sizeof(tmp))) > 0)
        wr_raw(&out.buf, tmp, (size_t)n);
}

static void *output_thread(void *arg)
{
    (void)arg;
    for (;;) {
        struct pollfd p = {.fd = out.fd, .events = POLLIN};
        if (poll(&p, 1, -1) < 0 && errno != EINTR)
            return NULL;
        if (p.revents & (POLLHUP | POLLERR | POLLNVAL))
            return NULL;
        pthread_mutex_lock(&out.lock);
        output_take();
        pthread_mutex_unlock(&out.lock);
    }
}

static void output_capture(void)
{
    int fds[2];
    fflush(stdout);
    if (pipe(fds))
        return;
    fcntl(fds[0], F_SETFL, O_NONBLOCK);
    if (dup2(fds[1], STDOUT_FILENO) < 0) {
        close(fds[0]);
        close(fds[1]);
        return;
    }
    close(fds[1]);
    setvbuf(stdout, NULL, _IOLBF, 0);
    vocl_wr_init(&out.buf);
    out.fd = fds[0];
    vocl_thread_detached(output_thread, NULL);
}

/* A reply, after the kernel output and context notifications before it.
 * Any thread may reply: the OUTPUT is posted under the lock, so that
 * output leaves in the order it was printed; nothing waits under it. */
static int mpi_reply(struct proxyd_session *s, struct vocl_wr *w)
{
    struct vocl_wr output, note;
    MPI_Request req[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    vocl_wr_init(&output);
    vocl_wr_init(&note);
    if (out.fd >= 0) {
        fflush(stdout);
        pthread_mutex_lock(&out.lock);
        output_take();
        if (out.buf.len) {
            vocl_wr_begin(&output, VOCL_OP_OUTPUT, 0, 0);
            wr_raw(&output, out.buf.buf, out.buf.len);
            vocl_wr_finish(&output);
            if (!output.fail)
                post(s, VOCL_TAG_REP, output.buf, output.len, &req[0]);
            vocl_wr_reset(&out.buf);
        }
        pthread_mutex_unlock(&out.lock);
    }
    if (proxyd_notify_take(s, &note))
        post(s, VOCL_TAG_REP, note.buf, note.len, &req[1]);
    int rc = post(s, VOCL_TAG_REP, w->buf, w->len, &req[2]);
    for (int i = 0; i < 3; i++) {
        if (req[i] == MPI_REQUEST_NULL)
            continue;
        if (atomic_load(&s->lost)) /* (found by an earlier one): nothing takes it */
            MPI_Request_free(&req[i]);
        else if (sent(s, &req[i]))
            rc = -1;
    }
    if (atomic_load(&s->lost))
        rc = -1;
    vocl_wr_free(&output);
    vocl_wr_free(&note);
    return rc;
}

/* Migrations go between the proxies of one job (MPI_COMM_NULL in connect mode). */
static MPI_Comm peer_comm = MPI_COMM_NULL;
static int peer_self, peer_size;

static bool mpi_peer_ok(int rank)
{
    return peer_comm != MPI_COMM_NULL && rank >= 0 && rank < peer_size && rank != peer_self;
}

static int mpi_peer_send(int rank, int tag, const void *buf, size_t n)
{
    return MPI_Send(buf, (int)n, MPI_BYTE, rank, tag, peer_comm) == MPI_SUCCESS ? 0 : -1;
}

static int mpi_peer_recv(int rank, int tag, void *buf, size_t n, size_t *got)
{
    MPI_Message msg;
    MPI_Status st;
    int count = 0, flag = 0;
    uint64_t start = vocl_now_ns();
    struct vocl_live lw;
    vocl_live_begin(&lw, rank);
    for (;;) {
        if (MPI_Improbe(rank, tag, peer_comm, &flag, &msg, &st) != MPI_SUCCESS)
            return -1;
        if (flag)
            break;
        if (!vocl_live_ok(&lw)) {
            vocl_warn("proxy rank %d: %s: it died", rank, vocl_live_why(rank));
            atomic_store(&peer_died, true);
            return -1;
        }
        vocl_backoff(start, 100000);
    }
    MPI_Get_count(&st, MPI_BYTE, &count);
    *got = (size_t)count;
    if ((size_t)count <= n)
        return MPI_Mrecv(buf, count, MPI_BYTE, &msg, MPI_STATUS_IGNORE) == MPI_SUCCESS ? 0 : -1;
    void *drop = malloc((size_t)count);
    int rc = drop && MPI_Mrecv(drop, count, MPI_BYTE, &msg, MPI_STATUS_IGNORE) == MPI_SUCCESS;
    free(drop);
    return rc ? 0 : -1;
}

static const struct proxyd_data_ops mpi_data = {.recv = mpi_recv,
                                                .send = mpi_send,
                                                .peer_ok = mpi_peer_ok,
                                                .peer_send = mpi_peer_send,
                                                .peer_recv = mpi_peer_recv,
                                                .peer_died = mpi_peer_died};

/* --- serving sessions ------------------------------------------------------------------------ */

struct client {
    struct proxyd_session s;
    MPI_Comm comm;
    bool own_comm;       /* connect mode: disconnect it at the end */
    bool gone;
    struct vocl_live lw; /* waiting for its next request: is it still there? */
};

struct server {
    struct proxyd_node *node;
    struct client **clients;
    int nclients, live;
    bool job_mode;
    pthread_mutex_t lock; /* connect mode: the accept thread adds clients */
    struct vocl_wr reply;
    uint8_t *buf;
    size_t cap;
};

static int add_client(struct server *sv, MPI_Comm c, bool own, int peer)
{
    struct client *cl = calloc(1, sizeof(*cl));
    if (!cl)
        return -1;
    cl->comm = c;
    cl->own_comm = own;
    proxyd_session_init(&cl->s, sv->node, peer);
    cl->s.data = &mpi_data;
    cl->s.reply = mpi_reply;
    cl->s.transport = &cl->comm;
    vocl_live_begin(&cl->lw, peer);
    /* The serving thread reads the array under the lock (connect mode). */
    pthread_mutex_lock(&sv->lock);
    struct client **nc = realloc(sv->clients, (sv->nclients + 1) * sizeof(*nc));
    if (!nc) {
        pthread_mutex_unlock(&sv->lock);
        free(cl);
        return -1;
    }
    sv->clients = nc;
    sv->clients[sv->nclients++] = cl;
    sv->live++;
    pthread_mutex_unlock(&sv->lock);
    return 0;
}

/* Ends cl's session, releasing everything it held; why: NULL after its BYE. */
static void close_client(struct server *sv, struct client *cl, const char *why)
{
    proxyd_session_end(&cl->s);
    if (cl->own_comm)
        MPI_Comm_disconnect(&cl->comm);
    cl->gone = true;
    pthread_mutex_lock(&sv->lock);
    int left = --sv->live;
    pthread_mutex_unlock(&sv->lock);
    if (why)
        vocl_warn("client %d: session closed after %s: everything it held is released "
                  "(%d clients left)", cl->s.peer, why, left);
    else
        vocl_info("client %d: session closed (%d left)", cl->s.peer, left);
}

/* Idle: a client that stopped answering pings died; its objects go. */
static void check_clients(struct server *sv)
{
    for (int i = 0; i < sv->nclients; i++) {
        struct client *cl = sv->clients[i];
        if (!cl->gone && !vocl_live_ok(&cl->lw)) {
            atomic_store(&peer_died, true);
            atomic_store(&cl->s.lost, true);
            char why[96];
            snprintf(why, sizeof(why), "it died (%s)", vocl_live_why(cl->s.peer));
            close_client(sv, cl, why);
        }
    }
}

/* A request refused whole (too large, or no memory for it): answered with
 * err, by its seq, if its sender waits for a reply.  Its header is read
 * from a copy of it (MPI fills nothing of a message cut short); a message
 * too large even for that ends the session, since it cannot be answered. */
static void refuse(struct server *sv, struct client *cl, MPI_Message *msg, int count, cl_int err)
{
    uint8_t *copy = count >= (int)VOCL_HDR_SIZE && (size_t)count <= 4 * (size_t)VOCL_MSG_MAX
                        ? malloc((size_t)count)
                        : NULL;
    struct vocl_msg_hdr h = {0};
    if (copy)
        MPI_Mrecv(copy, count, MPI_BYTE, msg, MPI_STATUS_IGNORE);
    else
        MPI_Mrecv(&h, 0, MPI_BYTE, msg, MPI_STATUS_IGNORE);
    if (copy)
        vocl_hdr_get(copy, VOCL_HDR_SIZE, &h); /* only the length disagrees */
    free(copy);
    vocl_warn("client %d: refused a message of %d bytes (%s)", cl->s.peer, count,
              err == CL_OUT_OF_HOST_MEMORY ? "out of memory" : "over the limit");
    if (h.magic != VOCL_WIRE_MAGIC) {
        atomic_store(&cl->s.broken, true); /* unanswerable: the session ends */
        return;
    }
    if (!(h.flags & VOCL_F_REPLY))
        return;
    vocl_wr_begin(&sv->reply, h.opcode, 0, h.seq);
    vocl_wr_i32(&sv->reply, err);
    vocl_wr_finish(&sv->reply);
    mpi_reply(&cl->s, &sv->reply);
}

/* Receives and executes one request of client cl; msg was probed. */
static void handle(struct server *sv, struct client *cl, MPI_Message *msg, MPI_Status *st)
{
    int count = 0;
    MPI_Get_count(st, MPI_BYTE, &count);
    if (count < 0 || (size_t)count > VOCL_MSG_MAX) {
        refuse(sv, cl, msg, count, CL_OUT_OF_RESOURCES);
        if (cl->s.broken)
            close_client(sv, cl, "an unreadable message");
        return;
    }
    if ((size_t)count > sv->cap) {
        uint8_t *nb = realloc(sv->buf, (size_t)count);
        if (!nb) {
            refuse(sv, cl, msg, count, CL_OUT_OF_HOST_MEMORY);
            if (cl->s.broken)
                close_client(sv, cl, "a message it had no memory for");
            return;
        }
        sv->buf = nb;
        sv->cap = (size_t)count;
    }
    MPI_Mrecv(sv->buf, count, MPI_BYTE, msg, MPI_STATUS_IGNORE);
    int rc = proxyd_execute(&cl->s, sv->buf, (size_t)count, &sv->reply);
    if (rc > 0)
        mpi_reply(&cl->s, &sv->reply);
    vocl_live_begin(&cl->lw, cl->s.peer); /* it spoke: no ping due for a while */
    struct vocl_msg_hdr h;
    bool bye = vocl_hdr_get(sv->buf, (size_t)count, &h) && h.opcode == VOCL_OP_BYE;
    if (bye) {
        if (cl->s.peer_died) {
            atomic_store(&peer_died, true);
            left_told++;
        } else {
            left_untold++;
        }
        close_client(sv, cl, NULL);
    } else if (atomic_load(&cl->s.lost))
        close_client(sv, cl, "it died");
    else if (rc < 0 || cl->s.broken)
        close_client(sv, cl, "a protocol error");
}

/* One pass over the clients; true when a request was handled. */
static bool poll_once(struct server *sv)
{
    MPI_Message msg;
    MPI_Status st;
    int flag = 0;
    if (sv->job_mode) {
        /* One communicator for all: probe any source, find its session. */
        MPI_Comm c = sv->clients[0]->comm;
        MPI_Improbe(MPI_ANY_SOURCE, VOCL_TAG_REQ, c, &flag, &msg, &st);
        if (!flag)
            return false;
        int src = st.MPI_SOURCE;
        if (src >= sv->nclients || sv->clients[src]->gone) {
            char dummy;
            MPI_Mrecv(&dummy, 0, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
            vocl_warn("rank %d: dropped a message (not a client, or closed)", src);
            return true;
        }
        handle(sv, sv->clients[src], &msg, &st);
        return true;
    }
    pthread_mutex_lock(&sv->lock);
    int n = sv->nclients;
    pthread_mutex_unlock(&sv->lock);
    bool any = false;
    for (int i = 0; i < n; i++) {
        pthread_mutex_lock(&sv->lock);
        struct client *cl = sv->clients[i];
        pthread_mutex_unlock(&sv->lock);
        if (cl->gone)
            continue;
        MPI_Improbe(0, VOCL_TAG_REQ, cl->comm, &flag, &msg, &st);
        if (flag) {
            handle(sv, cl, &msg, &st);
            any = true;
        }
    }
    return any;
}

/* SIGUSR1: one line on stderr with what the proxy holds (voclproxyd(8)). */
static volatile sig_atomic_t state_wanted;
static int self_rank;

static void want_state(int sig)
{
    (void)sig;
    state_wanted = 1;
}

static void report_state(struct server *sv)
{
    state_wanted = 0;
    malloc_trim(0); /* freed memory goes back, so that the figure is what is held */
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f || fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = 0;
    if (f)
        fclose(f);
    pthread_mutex_lock(&sv->lock);
    int live = sv->live;
    pthread_mutex_unlock(&sv->lock);
    fprintf(stderr,
            "voclproxyd[%d]: state: %d sessions, %" PRIu64 " objects, %" PRIu64
            " bytes of memory objects, resident %ld KiB\n",
            self_rank, live, (uint64_t)atomic_load(&sv->node->nobjs),
            (uint64_t)atomic_load(&sv->node->bytes), resident * (sysconf(_SC_PAGESIZE) / 1024));
}

/* Serves until every client is gone (job mode) or forever (connect mode). */
static void serve(struct server *sv)
{
    uint64_t idle_since = vocl_now_ns();
    while (!sv->job_mode || sv->live > 0 || proxyd_builds_running()) {
        if (state_wanted)
            report_state(sv);
        if (sv->node->nkept)
            proxyd_reap(sv->node, false);
        bool built = proxyd_builds_answer(&sv->reply) > 0;
        if (poll_once(sv) || built) {
            idle_since = vocl_now_ns();
            continue;
        }
        if (sv->job_mode)
            check_clients(sv);
        vocl_backoff(idle_since, 100000); /* idle: poll, yield, then sleep */
    }
}

/*
 * After a peer died, MPI_Finalize would wait for the dead one forever
 * (MPICH/UCX), so the job ends with MPI_Abort.  Clients told so at BYE
 * leave without MPI_Finalize; an MPI_Abort before they exit would lose
 * their exit status (vocl-guard writes it down as they end), so the proxy
 * first waits until each of them is gone: on this node, its process; on
 * another, silence for the VOCL_PEER_TIMEOUT.  (Where mpiexec ends the job
 * as the first of them exits unfinalized, that comes first.)
 */
static void await_exits(struct server *sv)
{
    vocl_info("a client or a proxy died: waiting for the clients to exit");
    for (int i = 0; i < sv->nclients; i++) {
        struct client *cl = sv->clients[i];
        while (!atomic_load(&cl->s.lost) && vocl_live_ok(&cl->lw))
            nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
}

static void server_free(struct server *sv)
{
    for (int i = 0; i < sv->nclients; i++)
        free(sv->clients[i]);
    free(sv->clients);
    free(sv->buf);
    vocl_wr_free(&sv->reply);
}

static int job_mode(struct proxyd_node *node, int nclients)
{
    struct server sv = {.node = node, .job_mode = true, .lock = PTHREAD_MUTEX_INITIALIZER};
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    peer_comm = comm; /* its own tags: VOCL_TAG_PEER_MIN and above */
    MPI_Comm_rank(peer_comm, &peer_self);
    MPI_Comm_size(peer_comm, &peer_size);
    vocl_wr_init(&sv.reply);
    int *tag_ub, flag = 0;
    MPI_Comm_get_attr(comm, MPI_TAG_UB, &tag_ub, &flag);
    if (flag)
        vocl_data_tag_ub(*tag_ub); /* as libvocl does, on the same communicator */
    vocl_live_start(comm); /* answer pings; notice clients and peers that die */
    for (int r = 0; r < nclients; r++)
        if (add_client(&sv, comm, false, r)) {
            vocl_error("out of memory");
            return 1;
        }
    serve(&sv);
    if (atomic_load(&peer_died) && left_told && !left_untold)
        await_exits(&sv);
    vocl_live_stop();
    server_free(&sv);
    peer_comm = MPI_COMM_NULL;
    MPI_Comm_free(&comm);
    return 0;
}

/* --- connect mode ---------------------------------------------------------------------------------- */

struct acceptor {
    struct server *sv;
    char port[MPI_MAX_PORT_NAME];
};

static void *accept_thread(void *arg)
{
    struct acceptor *a = arg;
    for (int n = 0;; n++) {
        MPI_Comm client;
        if (MPI_Comm_accept(a->port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &client) != MPI_SUCCESS) {
            vocl_error("MPI_Comm_accept failed: no more clients");
            return NULL;
        }
        MPI_Comm_set_errhandler(client, MPI_ERRORS_RETURN);
        if (add_client(a->sv, client, true, n)) {
            MPI_Comm_disconnect(&client);
            continue;
        }
        vocl_info("client %d connected", n);
    }
}

static int listen_mode(struct proxyd_node *node, const struct options *o)
{
    struct server sv = {.node = node, .lock = PTHREAD_MUTEX_INITIALIZER};
    struct acceptor a = {.sv = &sv};
    /* A listening proxy serves only clients that present its token. */
    static struct vocl_token token;
    char why[256];
    if (vocl_token_path(&token, o->token_file)) {
        vocl_error("--listen: no token file (--token-file, VOCL_TOKEN_FILE or HOME)");
        return 1;
    }
    bool fresh;
    if (vocl_token_create(&token, &fresh, why, sizeof(why))) {
        vocl_error("--listen: token file %s: %s", token.path, why);
        return 1;
    }
    if (fresh)
        vocl_warn("made a new token in %s: clients need the same file (VOCL_TOKEN_FILE)",
                  token.path);
    node->token = &token;
    int rc = MPI_Open_port(MPI_INFO_NULL, a.port);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        char *last = strrchr(msg, '\n');
        vocl_error("--listen: this MPI does not support dynamic processes (MPI_Open_port: %s). "
                   "Use job mode instead: vocl-run -n PROXIES -- APP",
                   last ? last + 1 : msg);
        return 1;
    }
    if (o->port_file) {
        FILE *f = fopen(o->port_file, "w");
        if (!f || fprintf(f, "%s\n", a.port) < 0 || fclose(f)) {
            vocl_error("cannot write %s", o->port_file);
            MPI_Close_port(a.port);
            return 1;
        }
    }
    printf("%s\n", a.port);
    fflush(stdout);
    vocl_info("listening on %s", a.port);
    vocl_wr_init(&sv.reply);
    pthread_t t;
    if (pthread_create(&t, NULL, accept_thread, &a)) {
        vocl_error("cannot start the accept thread");
        MPI_Close_port(a.port);
        return 1;
    }
    serve(&sv); /* a shared proxy serves until it is stopped */
    return 0;
}

/* VOCL_PROXY_RUSAGE=FILE: one line with this proxy's peak resident memory. */
static void report_rusage(int rank)
{
    const char *path = getenv("VOCL_PROXY_RUSAGE");
    struct rusage ru;
    if (!path || !*path || getrusage(RUSAGE_SELF, &ru))
        return;
    FILE *f = fopen(path, "a");
    if (!f) {
        vocl_warn("cannot write %s", path);
        return;
    }
    fprintf(f, "voclproxyd rank %d maxrss_kb %ld\n", rank, ru.ru_maxrss);
    fclose(f);
}

int main(int argc, char **argv)
{
    struct options o = {0};
    vocl_log_set_prefix("voclproxyd");
    const char *v = getenv("VOCL_VERBOSE");
    if (v && *v)
        vocl_log_level = atoi(v);
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;

    int provided;
    setenv("HWLOC_COMPONENTS", "-opencl", 0);
    /* If libvocl is registered as an ICD, the native loader loads it here too:
     * tell it that it is inside a proxy, where it must stay out of the way. */
    setenv("VOCL_IN_PROXY", "1", 1);
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        vocl_error("MPI_Init_thread failed");
        return 1;
    }
    /* No MPI error ends the proxy.  A message it drops is received cut
     * short (MPI_Mrecv into a small buffer), which MPICH reports on
     * MPI_COMM_WORLD's handler, not on the communicator's. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "voclproxyd[%d]", rank);
    vocl_log_set_prefix(prefix);
    self_rank = rank;
    if (!getenv("VOCL_PROXY_STDOUT"))
        output_capture();

    const struct vocl_native_api *cl = vocl_native_get();
    struct proxyd_node node;
    if (!cl || proxyd_node_open(&node, cl, o.type, NULL)) {
        vocl_error("no native OpenCL library");
        MPI_Finalize();
        return 1;
    }
    if (node.ndev == 0)
        vocl_warn("no OpenCL device of the requested type on this node");
    node.xfer = o.xfer;
    node.limits = o.limits;
    /* Even serial (one staging buffer) reads are sent by the stream thread,
     * which may wait for a device: this thread never must. */
    if (!(node.stream = proxyd_stream_start(cl)))
        vocl_warn("no stream thread: reads will not overlap the network and the device");
    vocl_info("serving %u devices; staging %u x %zu KiB%s%s", node.ndev,
              o.xfer.pipeline ? o.xfer.pool_n : 1, o.xfer.pool_size >> 10,
              o.xfer.pipeline ? ", pipelined" : ", not pipelined",
              o.xfer.direct ? ", direct where possible" : "");

    /* After the native library is loaded: PoCL's LLVM puts its own handler there. */
    sigaction(SIGUSR1, &(struct sigaction){.sa_handler = want_state, .sa_flags = SA_RESTART},
              NULL);
    if (o.listen) {
        rc = listen_mode(&node, &o);
    } else {
        const char *apps = getenv("VOCL_APP_RANKS");
        int nclients = apps ? atoi(apps) : 0;
        if (nclients <= 0 || nclients >= size || rank < nclients) {
            vocl_error("job mode needs VOCL_APP_RANKS (1..%d) with this rank above it: "
                       "start proxies with vocl-run",
                       size - 1);
            rc = 1;
        } else {
            rc = job_mode(&node, nclients);
        }
    }
    proxyd_stream_stop(node.stream);
    proxyd_node_close(&node);
    report_rusage(rank);
    if (atomic_load(&peer_died)) {
        /* (await_exits says why.)  A client that left before the death
         * waits in MPI_Finalize: only MPI_Abort ends it.  The others get a
         * second to end by themselves first. */
        vocl_warn("a client or a proxy died, and MPI_Finalize would wait for it: ending "
                  "the job with MPI_Abort");
        if (left_told || left_untold)
            nanosleep(&(struct timespec){1, 0}, NULL);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Finalize();
    return rc;
}
