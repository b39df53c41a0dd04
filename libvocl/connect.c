/*
 * connect.c - daemon mode: the application reaches long-lived proxies
 * (voclproxyd --listen) that it did not start, over UCX (common/ucx.h).
 *
 * Where the proxies are, first found wins:
 *   VOCL_CONNECT=HOST[:PORT]    one proxy
 *   VOCL_PROXIES=LIST           HOST[:PORT] each, separated by commas or blanks
 *   VOCL_PROXIES_FILE, ~/.vocl/proxies, /etc/vocl/proxies
 *                               one HOST[:PORT] a line; '#' starts a comment
 * The port is VOCL_DEFAULT_PORT (7010) unless given; a name with a '/' is
 * a port file, which voclproxyd --port-file wrote HOST:PORT into.  No
 * name server: a daemon that is down is one entry skipped, with a message.
 * NAME@DEVICES lists only those of the daemon's devices (native order from
 * 0: "gpu1@0-3+6"), as a Slurm job is given them (vocl-slurm(8)).
 *
 * The proxies are connected to at once (a thread each), within
 * VOCL_CONNECT_TIMEOUT seconds (default 5), then greeted in the order
 * named.  A daemon that serves each client in a process of its own
 * (--isolate, the default) answers with that process's port and a key,
 * and the client connects there.  The connection is then linked to
 * the liveness thread (liveness.h): either side notices the other's death.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backoff.h"
#include "liveness.h"
#include "log.h"
#include "token.h"
#include "ucx.h"
#include "vocl.h"

#define DEFAULT_TIMEOUT_S 5.0
#define NAMES_MAX 1024

/* The proxies' names (owned). */
struct names {
    char *v[NAMES_MAX];
    int n;
    const char *from; /* where they came from, for messages */
};

static void names_add(struct names *nm, const char *s, size_t len)
{
    if (len == 0)
        return;
    if (nm->n == NAMES_MAX) {
        vocl_warn("more than %d proxies named in %s: the rest are left out", NAMES_MAX, nm->from);
        return;
    }
    char *c = strndup(s, len);
    if (c)
        nm->v[nm->n++] = c;
}

/* Names separated by commas or blanks. */
static void names_split(struct names *nm, const char *list)
{
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ", \t\n");
        names_add(nm, p, len);
        p += len;
        p += strspn(p, ", \t\n");
    }
}

/* A proxies file: whether it was there. */
static bool names_read(struct names *nm, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    nm->from = path;
    char line[1024];
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "#\n")] = 0;
        names_split(nm, line);
    }
    fclose(f);
    return true;
}

/* Where the proxies are; false when nothing says (not daemon mode). */
static bool names_find(struct names *nm)
{
    const char *v = getenv("VOCL_CONNECT");
    if (v && *v) {
        nm->from = "VOCL_CONNECT";
        names_add(nm, v, strlen(v));
        return true;
    }
    if ((v = getenv("VOCL_PROXIES")) && *v) {
        nm->from = "VOCL_PROXIES";
        names_split(nm, v);
        return true;
    }
    if ((v = getenv("VOCL_PROXIES_FILE")) && *v) {
        if (names_read(nm, v))
            return true;
        vocl_warn("VOCL_PROXIES_FILE=%s: %s", v, strerror(errno));
    }
    static char home_file[4096];
    const char *home = getenv("HOME");
    if (home && *home) {
        snprintf(home_file, sizeof(home_file), "%s/.vocl/proxies", home);
        if (names_read(nm, home_file))
            return true;
    }
    return names_read(nm, "/etc/vocl/proxies");
}

static void names_free(struct names *nm)
{
    for (int i = 0; i < nm->n; i++)
        free(nm->v[i]);
}

/* HOST[:PORT] (or [V6]:PORT) into host (256 bytes) and *port; a name with
 * a '/' is a port file holding that.  0, or -1 with a message. */
static int resolve(const char *name, char *host, int *port)
{
    char text[300];
    if (strchr(name, '/')) {
        FILE *f = fopen(name, "r");
        bool ok = f && fgets(text, sizeof(text), f);
        if (f)
            fclose(f);
        if (ok)
            text[strcspn(text, "\n")] = 0;
        if (!ok || !*text) {
            vocl_error("proxy %s: cannot read its port file (%s)", name,
                       f ? "empty" : strerror(errno));
            return -1;
        }
    } else {
        snprintf(text, sizeof(text), "%s", name);
    }
    *port = VOCL_DEFAULT_PORT;
    char *colon = strrchr(text, ':');
    if (text[0] == '[') { /* [V6]:PORT */
        char *close = strchr(text, ']');
        colon = close && close[1] == ':' ? close + 1 : NULL;
        if (close)
            *close = 0;
        memmove(text, text + 1, strlen(text));
        if (colon)
            colon--;
    } else if (colon && strchr(text, ':') != colon) {
        colon = NULL; /* (a bare IPv6 address) */
    }
    if (colon) {
        char *end;
        long p = strtol(colon + 1, &end, 10);
        if (*end || p <= 0 || p > 65535) {
            vocl_error("proxy %s: '%s' is not a port (HOST:PORT)", name, colon + 1);
            return -1;
        }
        *port = (int)p;
        *colon = 0;
    }
    if (!*text || strlen(text) > 255) {
        vocl_error("proxy %s: no host name", name);
        return -1;
    }
    snprintf(host, 256, "%s", text);
    return 0;
}

/* Connects to host:port and links the connection (key: what a worker
 * that the daemon handed this client to expects, 0 for a daemon): its
 * peer number, or -1 with a message; *conn: the connection.  A daemon that
 * hands the client on answers VOCL_LIVE_MOVED, and "PORT KEY" in moved. */
static int connect_link(const char *name, const char *host, int port, uint64_t key,
                        uint64_t timeout_ns, struct vocl_conn **conn, char *moved,
                        enum vocl_log_level says)
{
    char err[160];
    *conn = vocl_conn_dial(host, port, timeout_ns, vocl_live_answer_ns(), err, sizeof(err));
    if (!*conn) {
        vocl_log(says, "proxy %s: cannot connect to %s:%d (%s): is voclproxyd --listen running "
                 "there? (left out)", name, host, port, err);
        return -1;
    }
    int64_t word = (int64_t)key;
    int live = vocl_live_link(*conn, word, NULL, NULL, moved);
    if (live == -1)
        vocl_log(says, "proxy %s: connected to %s:%d, then %s (left out)", name, host, port,
                 vocl_conn_dead(*conn) ? vocl_conn_why(*conn) : "it said nothing");
    return live;
}

/* What a proxy is called in messages, vocl-smi and vocl-ctl: as named,
 * or for a port file the file's name less ".port" (the daemon's --name,
 * where the administrator named the file after it). */
static void short_name(const char *name, char *out, size_t n)
{
    const char *slash = strrchr(name, '/');
    if (!slash) {
        snprintf(out, n, "%s", name);
        return;
    }
    size_t len = strlen(slash + 1);
    if (len > 5 && !strcmp(slash + 1 + len - 5, ".port"))
        len -= 5;
    snprintf(out, n, "%.*s", (int)len, slash + 1);
}

/* DEVICES of NAME@DEVICES: numbers and ranges joined by '+' ("0-3+6"),
 * into *only (calloc'd, only[i]: device i listed) and *n (one past the
 * highest).  0, or -1 with a message. */
static int device_list(const char *name, const char *spec, bool **only, uint32_t *n)
{
    enum { MAX_DEV = 4096 }; /* (what HELLO accepts of a proxy) */
    bool *set = calloc(MAX_DEV, sizeof(*set));
    if (!set)
        return -1;
    uint32_t top = 0;
    const char *p = spec;
    do {
        char *end;
        errno = 0;
        long a = *p >= '0' && *p <= '9' ? strtol(p, &end, 10) : -1, b = a;
        if (a >= 0 && *end == '-') {
            p = end + 1;
            b = *p >= '0' && *p <= '9' ? strtol(p, &end, 10) : -1;
        }
        if (a < 0 || b < a || b >= MAX_DEV || errno || (*end && *end != '+')) {
            vocl_error("proxy %s: '%s' is not a device list (NAME@0-3+6: device numbers from "
                       "0, ranges A-B, joined by '+'; below %d) (left out)", name, spec, MAX_DEV);
            free(set);
            return -1;
        }
        for (long i = a; i <= b; i++)
            set[i] = true;
        if ((uint32_t)b + 1 > top)
            top = (uint32_t)b + 1;
        p = end + (*end == '+');
    } while (*p);
    *only = set;
    *n = top;
    return 0;
}

/* One proxy on its way in: reached (connected and linked: live >= 0) by
 * a thread of its own, then greeted in the order named. */
struct joining {
    const char *given; /* (less @DEVICES) */
    bool *only;        /* @DEVICES: those listed (NULL: all), the proxy's once made */
    uint32_t only_n;
    uint64_t timeout_ns;
    enum vocl_log_level says; /* (of a connection that fails: an error, or a failover's debug) */
    char host[256], name[256];
    int port, live;
    uint64_t key; /* its worker's, or 0 */
    struct vocl_conn *conn;
};

static void *reach(void *arg)
{
    struct joining *j = arg;
    char moved[VOCL_LIVE_MOVED_MAX];
    j->live = -1;
    if (resolve(j->given, j->host, &j->port))
        return NULL;
    short_name(j->given, j->name, sizeof(j->name));
    int live = connect_link(j->name, j->host, j->port, 0, j->timeout_ns, &j->conn, moved, j->says);
    if (live == VOCL_LIVE_MOVED) {
        /* A worker of its own, on the same host: the daemon gave its port
         * and the key it expects. */
        vocl_conn_close(j->conn);
        j->conn = NULL;
        int wport = 0;
        if (sscanf(moved, "%d %" SCNu64, &wport, &j->key) != 2 || wport <= 0 || wport > 65535) {
            vocl_error("proxy %s: handed on to \"%.40s\": a proxy of another version?", j->name,
                       moved);
            return NULL;
        }
        vocl_debug("proxy %s: served by a worker of its own, at port %d", j->name, wport);
        live = connect_link(j->name, j->host, wport, j->key, j->timeout_ns, &j->conn, moved,
                            j->says);
        if (live == VOCL_LIVE_MOVED) {
            vocl_error("proxy %s: handed on twice: a proxy of another version?", j->name);
            live = -1;
        }
    }
    if (live < 0) {
        vocl_conn_close(j->conn);
        j->conn = NULL;
    }
    j->live = live;
    return NULL;
}

/* Proxy j, reached: made a proxy (listed: one of the application's) and
 * greeted; NULL where it could not be made. */
static struct vocl_proxy *join(struct joining *j, bool spare, bool listed)
{
    struct vocl_proxy *px = listed ? vocl_proxy_new(0, false) : vocl_proxy_alloc(0, false);
    if (!px) {
        vocl_live_unlink(j->live);
        vocl_conn_close(j->conn);
        return NULL;
    }
    px->comm = MPI_COMM_NULL;
    px->conn = j->conn;
    px->live = j->live;
    px->name = strdup(j->name);
    px->spare = spare;
    px->only = j->only;
    px->only_n = j->only_n;
    j->only = NULL;
    px->worker_key = j->key;
    px->daemon_host = strdup(j->host);
    px->daemon_port = j->port;
    if (vocl_greet(px))
        px->dead = true;
    else if (listed) /* (a failover's new daemon goes on with the log it came for) */
        vocl_failover_watch(px);
    return px;
}

struct vocl_proxy *vocl_connect_again(const char *host, int port, const char *name)
{
    char given[300];
    snprintf(given, sizeof(given), strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    struct joining j = {.given = given, .timeout_ns = 2000000000u, .says = VOCL_LOG_DEBUG};
    reach(&j);
    snprintf(j.name, sizeof(j.name), "%s", name); /* (as before: the user's name for it) */
    if (j.live < 0)
        return NULL;
    struct vocl_proxy *px = join(&j, true, false);
    return px && !px->dead ? px : NULL;
}

/* Proxies reached at once, at most this many at a time (a thread each):
 * a daemon that is down costs VOCL_CONNECT_TIMEOUT once, not once each. */
#define REACH_AT_ONCE 64

/* Reaches the n proxies of js at once. */
static void reach_all(struct joining *js, int n)
{
    for (int first = 0; first < n; first += REACH_AT_ONCE) {
        int k = n - first < REACH_AT_ONCE ? n - first : REACH_AT_ONCE;
        pthread_t t[REACH_AT_ONCE];
        bool started[REACH_AT_ONCE];
        for (int i = 0; i < k; i++) /* (one alone, or without a thread: here) */
            started[i] = k > 1 && pthread_create(&t[i], NULL, reach, &js[first + i]) == 0;
        for (int i = 0; i < k; i++)
            if (!started[i])
                reach(&js[first + i]);
        for (int i = 0; i < k; i++)
            if (started[i])
                pthread_join(t[i], NULL);
    }
}

bool vocl_connect_mode(void)
{
    struct names nm = {.from = ""};
    if (!names_find(&nm)) {
        names_free(&nm);
        return false;
    }
    if (nm.n == 0) {
        vocl.init_error = "daemon mode: no proxy named";
        vocl_error("%s names no proxy", nm.from);
        names_free(&nm);
        return true;
    }
    /* The proxy's secret first: without it, connecting is no use. */
    static struct vocl_token token;
    char why[256];
    if (vocl_token_path(&token, NULL)) {
        vocl.init_error = "daemon mode: no token file (set VOCL_TOKEN_FILE, or HOME)";
        names_free(&nm);
        return true;
    }
    if (vocl_token_read(&token, why, sizeof(why))) {
        vocl_error("daemon mode: token file %s: %s", token.path, why);
        vocl.init_error = "daemon mode needs the proxy's token file (VOCL_TOKEN_FILE)";
        names_free(&nm);
        return true;
    }
    vocl.token = &token;
    static char user[65];
    vocl.user = vocl_user_name(user, sizeof(user));
#ifdef VOCL_TEST_HOOKS
    /* (A client that claims another user's name: what a daemon must see through.) */
    const char *claimed = getenv("VOCL_TEST_USER");
    if (claimed && *claimed)
        vocl.user = claimed;
#endif
    const char *t = getenv("VOCL_CONNECT_TIMEOUT");
    double secs = t && *t ? atof(t) : DEFAULT_TIMEOUT_S;
    if (secs <= 0)
        secs = DEFAULT_TIMEOUT_S;
    vocl_live_start(MPI_COMM_NULL); /* proxies are linked as they connect */
    struct joining *js = calloc((size_t)nm.n, sizeof(*js));
    if (!js) {
        vocl.init_error = "daemon mode: out of memory";
        names_free(&nm);
        return true;
    }
    int n = 0;
    for (int i = 0; i < nm.n; i++) {
        /* NAME@DEVICES (an '@' after the last '/': a port file's path may hold one). */
        char *slash = strrchr(nm.v[i], '/'), *at = strrchr(slash ? slash : nm.v[i], '@');
        if (at)
            *at = 0;
        js[n] = (struct joining){.given = nm.v[i], .timeout_ns = (uint64_t)(secs * 1e9),
                                 .says = VOCL_LOG_ERROR};
        if (!at || device_list(nm.v[i], at + 1, &js[n].only, &js[n].only_n) == 0)
            n++;
    }
    reach_all(js, n);
    for (int i = 0; i < n; i++) {
        if (js[i].live >= 0)
            join(&js[i], i >= n - vocl.spares, true);
        free(js[i].only); /* (a proxy not made) */
    }
    free(js);
    if (vocl.ndevices == 0 && !vocl.init_error)
        vocl.init_error = "daemon mode: no proxy could be reached";
    names_free(&nm);
    return true;
}

bool vocl_worker_fate(struct vocl_proxy *px, char *how, size_t n)
{
    if (!px->worker_key || !px->daemon_host || atomic_exchange(&px->fate_asked, true))
        return false;
    char err[160], text[VOCL_LIVE_MOVED_MAX] = "";
    struct vocl_conn *c = vocl_conn_dial(px->daemon_host, px->daemon_port, 2000000000u, 0, err,
                                         sizeof(err));
    if (!c)
        return false;
    int got = vocl_live_link(c, VOCL_LIVE_WHY | (int64_t)px->worker_key, NULL, NULL, text);
    vocl_conn_close(c);
    if (got != VOCL_LIVE_MOVED || !strcmp(text, "unknown"))
        return false;
    snprintf(how, n, "%s", text);
    for (char *p = how; *p; p++)
        if (*p < ' ' || *p > '~')
            *p = '?'; /* (the daemon's words, on the user's terminal) */
    return true;
}

static struct {
    pthread_mutex_t lock;
    struct vocl_conn **c;
    size_t n;
} retired = {.lock = PTHREAD_MUTEX_INITIALIZER};

void vocl_connect_retire(struct vocl_conn *c)
{
    pthread_mutex_lock(&retired.lock);
    struct vocl_conn **more = realloc(retired.c, (retired.n + 1) * sizeof(*more));
    if (more) /* (else it stays open: a dead peer's, until the process ends) */
        (retired.c = more)[retired.n++] = c;
    pthread_mutex_unlock(&retired.lock);
}

void vocl_connect_close(void)
{
    pthread_mutex_lock(&retired.lock);
    struct vocl_conn **old = retired.c;
    size_t nold = retired.n;
    retired.c = NULL;
    retired.n = 0;
    pthread_mutex_unlock(&retired.lock);
    for (size_t i = 0; i < nold; i++)
        vocl_conn_close(old[i]);
    free(old);
    for (int i = 0; i < vocl.nproxies; i++) {
        struct vocl_proxy *px = vocl.proxies[i];
        if (px->local || !px->conn)
            continue;
        struct vocl_conn *conn = px->conn;
        vocl_live_unlink(px->live);
        for (int j = i; j < vocl.nproxies; j++) /* (a spare it moved to shares it) */
            if (vocl.proxies[j]->conn == conn)
                vocl.proxies[j]->conn = NULL;
        vocl_conn_close(conn);
    }
}
