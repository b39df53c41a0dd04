/*
 * ucx.c - daemon mode's connections over UCX's client-server API (ucx.h).
 */
#include "ucx.h"

#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <ucp/api/ucp.h>

#include "backoff.h"
#include "log.h"

struct vocl_conn {
    ucp_worker_h worker;
    ucp_ep_h ep;
    atomic_bool dead;
    atomic_bool closing; /* the endpoint is being closed by force (vocl_conn_fail) */
    char why[128];       /* written once, before dead is set */
    char peer[INET6_ADDRSTRLEN + 8];
    struct sockaddr_storage peer_addr; /* (accepted connections: the client's, */
    struct sockaddr_storage own_addr;  /*  and this side's) */
};

/* A connection asked for that the listener has not accepted yet. */
#define BACKLOG 256

struct vocl_listener {
    ucp_worker_h worker;
    ucp_listener_h listener;
    pthread_mutex_t lock; /* the queue (UCX calls conn_asked while progressing) */
    ucp_conn_request_h asked[BACKLOG];
    int nasked;
    int port;
};

/* --- the context, once a process ----------------------------------------------------------- */

static ucp_context_h context;
static char context_error[128];

static void context_init(void)
{
    ucp_config_t *cfg;
    ucs_status_t st = ucp_config_read("VOCL", NULL, &cfg);
    if (st != UCS_OK) {
        snprintf(context_error, sizeof(context_error), "UCX's settings: %s",
                 ucs_status_string(st));
        return;
    }
    /* Shared memory between two users' processes fails in UCX (and a
     * same-node client's buffers travel in a memfd anyway): left out
     * unless the user names the transports. */
    if (!getenv("UCX_TLS") && !getenv("VOCL_UCX_TLS"))
        ucp_config_modify(cfg, "TLS", "^sm");
    /* Several threads progress one connection's worker (a daemon's request
     * loop, its stream of reads' chunks, its liveness thread).  UCX guards
     * a worker with a spinlock by default: a thread that finds it taken
     * spins out its time slice while the holder waits for a core.  A mutex
     * sleeps: reads of 16 and 64 MiB over the harness's 10 Gbit/s link went
     * from 0.84-0.96 of raw UCX to 0.99-1.01 (docs/report/daemon). */
    if (!getenv("UCX_USE_MT_MUTEX") && !getenv("VOCL_UCX_USE_MT_MUTEX"))
        ucp_config_modify(cfg, "USE_MT_MUTEX", "y");
    /* (Workers shared: each connection's worker is made and progressed by
     * threads of their own, the accept thread and the greeting ones.) */
    ucp_params_t p = {.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED,
                      .features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP,
                      .mt_workers_shared = 1};
    st = ucp_init(&p, cfg, &context);
    ucp_config_release(cfg);
    if (st != UCS_OK) {
        context = NULL;
        snprintf(context_error, sizeof(context_error), "UCX: %s", ucs_status_string(st));
    }
}

static bool have_context(char *err, size_t errlen)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, context_init);
    if (!context)
        snprintf(err, errlen, "%s", context_error);
    return context != NULL;
}

/* A worker that any thread may use. */
static ucp_worker_h new_worker(char *err, size_t errlen)
{
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_MULTI};
    ucp_worker_h w;
    ucs_status_t st = ucp_worker_create(context, &wp, &w);
    if (st != UCS_OK) {
        snprintf(err, errlen, "no UCX worker: %s", ucs_status_string(st));
        return NULL;
    }
    return w;
}

/* Sleeps at most ns on worker w's descriptor, woken by what comes for it;
 * returns at once when w has something to progress (arm: UCS_ERR_BUSY). */
static void nap_on(ucp_worker_h w, uint64_t ns)
{
    int fd;
    if (ucp_worker_get_efd(w, &fd) != UCS_OK || ucp_worker_arm(w) != UCS_OK)
        return;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    struct timespec t = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    ppoll(&p, 1, &t, NULL);
}

/* --- connections ---------------------------------------------------------------------------- */

static void conn_failed(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    struct vocl_conn *c = arg;
    if (atomic_load(&c->dead))
        return;
    if (!atomic_load(&c->closing))
        snprintf(c->why, sizeof(c->why), "%s", ucs_status_string(status));
    atomic_store(&c->dead, true);
}

static const char *addr_text(const struct sockaddr *sa, char *out, size_t n)
{
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const void *)sa;
        inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
        port = ntohs(in->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const void *)sa;
        inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
        port = ntohs(in6->sin6_port);
    }
    snprintf(out, n, "%s:%d", host, port);
    return out;
}

static struct vocl_conn *conn_new(char *err, size_t errlen)
{
    struct vocl_conn *c = calloc(1, sizeof(*c));
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    if (!(c->worker = new_worker(err, errlen))) {
        free(c);
        return NULL;
    }
    return c;
}

static void conn_free(struct vocl_conn *c)
{
    ucp_worker_destroy(c->worker);
    free(c);
}

static long socket_uid(const struct sockaddr_storage *from, const struct sockaddr_storage *to,
                       long uid);

/* A connection's steps (UCX's handshake, a link's hello, a close) wait
 * for answers that each take a moment: a fixed nap of 1 ms a poll made a
 * daemon client's start (two connections, to the daemon and its worker)
 * 40-42 ms, medians of 11 CTS sub-tests on loopback, twice, on the idle
 * 2-core machine; woken by the answer, 28-29 ms. */
void vocl_conn_backoff(struct vocl_conn *c, uint64_t start)
{
    long ns = vocl_backoff_step(start, 1000000);
    if (ns)
        nap_on(c->worker, (uint64_t)ns);
}

/* Waits for request req of c (NULL: done) at most timeout_ns: UCS_OK, its
 * error, or UCS_ERR_TIMED_OUT (req is freed all the same).  With to, a
 * connection being made there: busy_ns in all once this user has a TCP
 * connection to it (the kernel's table of sockets says so: the host and
 * its port are up, the daemon busy, not gone). */
static ucs_status_t wait_req(struct vocl_conn *c, void *req, uint64_t timeout_ns,
                             const struct sockaddr_storage *to, uint64_t busy_ns)
{
    if (req == NULL)
        return UCS_OK;
    if (UCS_PTR_IS_ERR(req))
        return UCS_PTR_STATUS(req);
    uint64_t start = vocl_now_ns();
    ucs_status_t st;
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS) {
        if (vocl_now_ns() - start > timeout_ns) {
            if (to && busy_ns > timeout_ns && socket_uid(NULL, to, (long)geteuid()) >= 0) {
                timeout_ns = busy_ns;
                continue;
            }
            st = UCS_ERR_TIMED_OUT;
            break;
        }
        if (!ucp_worker_progress(c->worker))
            vocl_conn_backoff(c, start);
    }
    ucp_request_free(req);
    return st;
}

struct vocl_conn *vocl_conn_dial(const char *host, int port, uint64_t timeout_ns,
                                 uint64_t busy_ns, char *err, size_t errlen)
{
    if (!have_context(err, errlen))
        return NULL;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    int rc = getaddrinfo(host, service, &hints, &ai);
    if (rc) {
        snprintf(err, errlen, "%s: %s", host, gai_strerror(rc));
        return NULL;
    }
    struct vocl_conn *c = conn_new(err, errlen);
    if (!c) {
        freeaddrinfo(ai);
        return NULL;
    }
    addr_text(ai->ai_addr, c->peer, sizeof(c->peer));
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
        .flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER,
        .sockaddr = {.addr = ai->ai_addr, .addrlen = ai->ai_addrlen},
        .err_mode = UCP_ERR_HANDLING_MODE_PEER,
        .err_handler = {.cb = conn_failed, .arg = c}};
    ucs_status_t st = ucp_ep_create(c->worker, &ep, &c->ep);
    struct sockaddr_storage to = {0};
    memcpy(&to, ai->ai_addr, ai->ai_addrlen < sizeof(to) ? ai->ai_addrlen : sizeof(to));
    freeaddrinfo(ai);
    if (st != UCS_OK) {
        snprintf(err, errlen, "%s", ucs_status_string(st));
        conn_free(c);
        return NULL;
    }
    /* A flush ends once the connection is made (or fails). */
    ucp_request_param_t rp = {.op_attr_mask = 0};
    st = wait_req(c, ucp_ep_flush_nbx(c->ep, &rp), timeout_ns, &to, busy_ns);
    if (st == UCS_OK && atomic_load(&c->dead))
        st = UCS_ERR_UNREACHABLE;
    if (st != UCS_OK) {
        /* (What UCX says of a port nothing listens on: not connected.) */
        bool refused = !strcmp(c->why, ucs_status_string(UCS_ERR_NOT_CONNECTED)) ||
                       !strcmp(c->why, ucs_status_string(UCS_ERR_UNREACHABLE));
        snprintf(err, errlen, "%s",
                 st == UCS_ERR_TIMED_OUT ? "no answer"
                 : refused               ? "refused: nothing listens there"
                 : c->why[0]             ? c->why
                                         : ucs_status_string(st));
        atomic_store(&c->dead, true);
        vocl_conn_close(c);
        return NULL;
    }
    return c;
}

void vocl_conn_close(struct vocl_conn *c)
{
    if (!c)
        return;
    if (c->ep) {
        /* Flushed when the peer is there (what was sent arrives), at most
         * a second; by force when it is not.  (An endpoint is closed once:
         * a second close is UCX's error; the worker's end ends the rest.) */
        bool force = atomic_load(&c->dead) || atomic_load(&c->closing);
        ucp_request_param_t rp = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                  .flags = force ? UCP_EP_CLOSE_FLAG_FORCE : 0};
        wait_req(c, ucp_ep_close_nbx(c->ep, &rp), 1000000000u, NULL, 0);
    }
    conn_free(c);
}

void vocl_conn_close_after_peer(struct vocl_conn *c, uint64_t timeout_ns)
{
    uint64_t start = vocl_now_ns();
    while (c && !atomic_load(&c->dead) && vocl_now_ns() - start < timeout_ns)
        if (!ucp_worker_progress(c->worker))
            vocl_conn_backoff(c, start);
    vocl_conn_close(c);
}

void vocl_conn_fail(struct vocl_conn *c, const char *why)
{
    if (atomic_exchange(&c->closing, true))
        return;
    if (!atomic_load(&c->dead))
        snprintf(c->why, sizeof(c->why), "%s", why);
    atomic_store(&c->dead, true);
}

/* At most this many passes a call: what has arrived is taken (a large
 * transfer's next segments on TCP, a pass each) without starving others. */
#define PROGRESS_PASSES 64

bool vocl_conn_progress(struct vocl_conn *c)
{
    int passes = 0;
    while (passes < PROGRESS_PASSES && ucp_worker_progress(c->worker))
        passes++;
    return passes > 0;
}

bool vocl_conn_dead(struct vocl_conn *c)
{
    return atomic_load(&c->dead);
}

const char *vocl_conn_why(struct vocl_conn *c)
{
    return atomic_load(&c->dead) ? c->why : "";
}

const char *vocl_conn_peer(struct vocl_conn *c)
{
    return c->peer;
}

int vocl_conn_fd(struct vocl_conn *c)
{
    int fd;
    return ucp_worker_get_efd(c->worker, &fd) == UCS_OK ? fd : -1;
}

bool vocl_conn_arm(struct vocl_conn *c)
{
    return ucp_worker_arm(c->worker) == UCS_OK;
}

/* addr as /proc/net/tcp or tcp6 prints it (each address word in host
 * order), into out; false for a family other than IPv4 and IPv6. */
static bool proc_addr(const struct sockaddr_storage *a, char *out, size_t n)
{
    if (a->ss_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const void *)a;
        uint32_t w[4];
        memcpy(w, &in6->sin6_addr, sizeof(w));
        snprintf(out, n, "%08X%08X%08X%08X:%04X", w[0], w[1], w[2], w[3], ntohs(in6->sin6_port));
        return true;
    }
    if (a->ss_family == AF_INET) {
        const struct sockaddr_in *in = (const void *)a;
        snprintf(out, n, "%08X:%04X", in->sin_addr.s_addr, ntohs(in->sin_port));
        return true;
    }
    return false;
}

/*
 * The uid of an established TCP socket of this node connected from address
 * from (NULL: any) to address to, and owned by uid (-1: any), from the
 * kernel's table of sockets (/proc/net/tcp, tcp6); -1: none.  Both ends
 * are matched: Linux gives one local port to several connections when their
 * far ends differ.
 */
static long socket_uid(const struct sockaddr_storage *from, const struct sockaddr_storage *to,
                       long uid)
{
    char want_local[64], want_remote[64];
    if ((from && from->ss_family != to->ss_family) ||
        (from && !proc_addr(from, want_local, sizeof(want_local))) ||
        !proc_addr(to, want_remote, sizeof(want_remote)))
        return -1;
    FILE *f = fopen(to->ss_family == AF_INET6 ? "/proc/net/tcp6" : "/proc/net/tcp", "r");
    char line[512], local[64], remote[64];
    long found = -1, u;
    unsigned st;
    while (f && found < 0 && fgets(line, sizeof(line), f))
        if (sscanf(line, " %*d: %63s %63s %x %*s %*s %*s %ld", local, remote, &st, &u) == 4 &&
            st == 1 /* (ESTABLISHED) */ && (!from || !strcmp(local, want_local)) &&
            !strcmp(remote, want_remote) && (uid < 0 || u == uid))
            found = u;
    if (f)
        fclose(f);
    return found;
}

long vocl_conn_peer_uid(struct vocl_conn *c)
{
    return socket_uid(&c->peer_addr, &c->own_addr, -1);
}

void *vocl_conn_worker(struct vocl_conn *c)
{
    return c->worker;
}

void *vocl_conn_ep(struct vocl_conn *c)
{
    return c->ep;
}

/* --- listening ------------------------------------------------------------------------------ */

static void conn_asked(ucp_conn_request_h req, void *arg)
{
    struct vocl_listener *l = arg;
    pthread_mutex_lock(&l->lock);
    bool room = l->nasked < BACKLOG;
    if (room)
        l->asked[l->nasked++] = req;
    pthread_mutex_unlock(&l->lock);
    if (!room)
        ucp_listener_reject(l->listener, req); /* (too many at once: that client retries) */
}

struct vocl_listener *vocl_listen(const char *addr, int port, bool *in_use, char *err,
                                  size_t errlen)
{
    *in_use = false;
    if (!have_context(err, errlen))
        return NULL;
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE}, *ai;
    char service[16];
    snprintf(service, sizeof(service), "%d", port);
    int rc = getaddrinfo(addr, service, &hints, &ai);
    if (rc) {
        snprintf(err, errlen, "%s: %s", addr ? addr : "*", gai_strerror(rc));
        return NULL;
    }
    struct vocl_listener *l = calloc(1, sizeof(*l));
    if (!l || !(l->worker = new_worker(err, errlen))) {
        free(l);
        freeaddrinfo(ai);
        return NULL;
    }
    pthread_mutex_init(&l->lock, NULL);
    ucp_listener_params_t lp = {
        .field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER,
        .sockaddr = {.addr = ai->ai_addr, .addrlen = ai->ai_addrlen},
        .conn_handler = {.cb = conn_asked, .arg = l}};
    ucs_status_t st = ucp_listener_create(l->worker, &lp, &l->listener);
    freeaddrinfo(ai);
    if (st != UCS_OK) {
        *in_use = st == UCS_ERR_BUSY;
        snprintf(err, errlen, "%s", st == UCS_ERR_BUSY ? "the port is in use" : ucs_status_string(st));
        ucp_worker_destroy(l->worker);
        free(l);
        return NULL;
    }
    ucp_listener_attr_t la = {.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR};
    if (ucp_listener_query(l->listener, &la) == UCS_OK) {
        const struct sockaddr *sa = (const void *)&la.sockaddr;
        l->port = sa->sa_family == AF_INET6 ? ntohs(((const struct sockaddr_in6 *)sa)->sin6_port)
                                            : ntohs(((const struct sockaddr_in *)sa)->sin_port);
    }
    return l;
}

int vocl_listener_port(struct vocl_listener *l)
{
    return l->port;
}

static ucp_conn_request_h next_asked(struct vocl_listener *l)
{
    pthread_mutex_lock(&l->lock);
    ucp_conn_request_h r = NULL;
    if (l->nasked) {
        r = l->asked[0];
        memmove(l->asked, l->asked + 1, (size_t)--l->nasked * sizeof(*l->asked));
    }
    pthread_mutex_unlock(&l->lock);
    return r;
}

struct vocl_conn *vocl_accept(struct vocl_listener *l, uint64_t timeout_ns)
{
    uint64_t start = vocl_now_ns();
    ucp_conn_request_h req;
    for (;;) {
        while (ucp_worker_progress(l->worker))
            ;
        if ((req = next_asked(l)))
            break;
        uint64_t spent = vocl_now_ns() - start;
        if (spent >= timeout_ns)
            return NULL;
        /* Idle: sleep on the worker's descriptor until a client asks. */
        uint64_t left = timeout_ns - spent;
        nap_on(l->worker, left > 100000000u ? 100000000u : left);
    }
    char err[128];
    struct vocl_conn *c = conn_new(err, sizeof(err));
    if (!c) {
        vocl_warn("a connection refused: %s", err);
        ucp_listener_reject(l->listener, req);
        return NULL;
    }
    ucp_conn_request_attr_t ra = {.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR};
    if (ucp_conn_request_query(req, &ra) == UCS_OK) {
        c->peer_addr = ra.client_address;
        addr_text((const struct sockaddr *)&ra.client_address, c->peer, sizeof(c->peer));
    } else
        snprintf(c->peer, sizeof(c->peer), "?");
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST | UCP_EP_PARAM_FIELD_ERR_HANDLER |
                      UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE,
        .conn_request = req,
        .err_mode = UCP_ERR_HANDLING_MODE_PEER,
        .err_handler = {.cb = conn_failed, .arg = c}};
    ucs_status_t st = ucp_ep_create(c->worker, &ep, &c->ep);
    if (st != UCS_OK) {
        vocl_warn("a connection from %s refused: %s", c->peer, ucs_status_string(st));
        conn_free(c);
        return NULL;
    }
    ucp_ep_attr_t ea = {.field_mask = UCP_EP_ATTR_FIELD_LOCAL_SOCKADDR};
    if (ucp_ep_query(c->ep, &ea) == UCS_OK)
        c->own_addr = ea.local_sockaddr; /* (else unknown: no uid is found) */
    return c;
}

void vocl_listener_close(struct vocl_listener *l)
{
    if (!l)
        return;
    ucp_conn_request_h r;
    while ((r = next_asked(l)))
        ucp_listener_reject(l->listener, r);
    ucp_listener_destroy(l->listener);
    ucp_worker_destroy(l->worker);
    pthread_mutex_destroy(&l->lock);
    free(l);
}
