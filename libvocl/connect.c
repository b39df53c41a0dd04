/*
 * connect.c - connect mode: the application reaches long-lived proxies
 * (voclproxyd --listen) that it did not start.
 *
 * Where the proxies are, first found wins:
 *   VOCL_CONNECT=PORT           one proxy, by its MPI port name
 *   VOCL_PROXIES=LIST           names, separated by commas or blanks
 *   VOCL_PROXIES_FILE, ~/.vocl/proxies, /etc/vocl/proxies
 *                               one name a line; '#' starts a comment;
 *                               "name-server URI" names the name service
 * A name is looked up as "vocl.NAME" in the MPI's name service (each
 * proxy publishes itself under its --name, by default its host name); a
 * name with a '/' is a port file (voclproxyd --port-file); "port:PORT" is
 * a port name itself.  The name service is VOCL_NAME_SERVER, else the
 * file's name-server line (mpi_start.h).
 *
 * Each proxy is connected to in turn, with a deadline: MPI_Comm_connect to
 * a proxy that died (its name still published) never returns, so it runs
 * on a thread of its own and, past VOCL_CONNECT_TIMEOUT seconds (default
 * 5), the proxy is left out with a message.
 *
 * Open MPI 4.1 cannot take two MPI_Comm_connect to one port at once: with
 * two clients connecting together, one connected to nothing and the
 * proxy's MPI_Comm_accept never returned again (a bare accept loop and
 * its clients do the same here, 36 of 40 clients lost).  So the processes
 * of a node connect one at a time, under a lock file (CONNECT_LOCK) every
 * user may lock; clients on different nodes can still meet (README).  A connected proxy and this
 * process then link their intercommunicator to the liveness thread
 * (liveness.h): either side notices the other's death.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "backoff.h"
#include "liveness.h"
#include "log.h"
#include "mpi_start.h"
#include "token.h"
#include "vocl.h"

#define DEFAULT_TIMEOUT_S 5.0
#define CONNECT_LOCK "/tmp/.vocl-connect.lock"
#define NAMES_MAX 1024

/* The proxies' names (owned), and the name service a file named. */
struct names {
    char *v[NAMES_MAX];
    int n;
    char *name_server;
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
        char *p = line + strspn(line, " \t");
        if (!strncmp(p, "name-server", 11) && (p[11] == ' ' || p[11] == '\t')) {
            p += 11 + strspn(p + 11, " \t");
            p[strcspn(p, " \t")] = 0;
            free(nm->name_server);
            nm->name_server = *p ? strdup(p) : NULL;
            continue;
        }
        names_split(nm, p);
    }
    fclose(f);
    return true;
}

/* Where the proxies are; false when nothing says (not connect mode). */
static bool names_find(struct names *nm)
{
    const char *v = getenv("VOCL_CONNECT");
    if (v && *v) {
        nm->from = "VOCL_CONNECT";
        size_t n = strlen(v) + 6;
        char *c = malloc(n);
        if (c) {
            snprintf(c, n, "port:%s", v);
            nm->v[nm->n++] = c;
        }
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
    free(nm->name_server);
}

/* name's port into port; 0, or -1 with a message. */
static int resolve(const char *name, char *port)
{
    char err[MPI_MAX_ERROR_STRING];
    if (!strncmp(name, "port:", 5)) {
        snprintf(port, MPI_MAX_PORT_NAME, "%s", name + 5);
        return 0;
    }
    if (strchr(name, '/')) {
        FILE *f = fopen(name, "r");
        bool ok = f && fgets(port, MPI_MAX_PORT_NAME, f);
        if (f)
            fclose(f);
        port[strcspn(port, "\n")] = 0;
        if (!ok || !*port) {
            vocl_error("proxy %s: cannot read its port file (%s)", name,
                       f ? "empty" : strerror(errno));
            return -1;
        }
        return 0;
    }
    char service[256];
    snprintf(service, sizeof(service), "vocl.%.200s", name);
    int rc = MPI_Lookup_name(service, MPI_INFO_NULL, port);
    if (rc != MPI_SUCCESS) {
        vocl_error("proxy %s: %s is not in the name service (%s): is voclproxyd --listen "
                   "running there, with the same name server (VOCL_NAME_SERVER)?",
                   name, service, vocl_mpi_why(rc, err));
        return -1;
    }
    return 0;
}

/* One MPI_Comm_connect, on a thread of its own (see above). */
struct dial {
    char port[MPI_MAX_PORT_NAME];
    MPI_Comm inter;
    int rc;
    atomic_int state; /* DIALING, then DIALED (the thread) or ABANDONED (the waiter) */
};

enum { DIALING, DIALED, ABANDONED };

static void *dial_thread(void *arg)
{
    struct dial *d = arg;
    d->rc = MPI_Comm_connect(d->port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &d->inter);
    int was = DIALING;
    if (!atomic_compare_exchange_strong(&d->state, &was, DIALED)) {
        /* The waiter left: what it would have freed is ours to free. */
        if (d->rc == MPI_SUCCESS)
            MPI_Comm_free(&d->inter);
        free(d);
    }
    return NULL;
}

/* Connects to port within timeout_ns: the intercommunicator, or
 * MPI_COMM_NULL with a message. */
static MPI_Comm dial(const char *name, const char *port, uint64_t timeout_ns)
{
    char err[MPI_MAX_ERROR_STRING];
    struct dial *d = calloc(1, sizeof(*d));
    if (!d)
        return MPI_COMM_NULL;
    snprintf(d->port, sizeof(d->port), "%s", port);
    atomic_init(&d->state, DIALING);
    pthread_t t;
    if (pthread_create(&t, NULL, dial_thread, d)) {
        free(d);
        vocl_error("proxy %s: no thread to connect on", name);
        return MPI_COMM_NULL;
    }
    pthread_detach(t);
    uint64_t start = vocl_now_ns();
    while (atomic_load(&d->state) == DIALING && vocl_now_ns() - start < timeout_ns)
        vocl_backoff(start, 1000000);
    int was = DIALING;
    if (atomic_compare_exchange_strong(&d->state, &was, ABANDONED)) {
        /* The thread stays in MPI_Comm_connect: MPI_Finalize would wait for it. */
        vocl.peer_died = true;
        vocl_error("proxy %s: no answer in %.1f s (VOCL_CONNECT_TIMEOUT): is it still running?",
                   name, timeout_ns / 1e9);
        return MPI_COMM_NULL;
    }
    MPI_Comm inter = d->inter;
    int rc = d->rc;
    free(d);
    if (rc != MPI_SUCCESS) {
        vocl_error("proxy %s: cannot connect (%s); this MPI may have no dynamic processes: "
                   "use job mode, vocl-run -n PROXIES -- APP",
                   name, vocl_mpi_why(rc, err));
        return MPI_COMM_NULL;
    }
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    return inter;
}

/* The node's connect lock (see above) within timeout_ns: its descriptor,
 * or -1 (no lock file, or held too long: connecting goes on without). */
static int lock_node(uint64_t timeout_ns)
{
    int fd = open(CONNECT_LOCK, O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    fchmod(fd, 0644); /* (every user's, whatever the umask of who made it; flock needs no write) */
    uint64_t start = vocl_now_ns();
    while (flock(fd, LOCK_EX | LOCK_NB)) {
        if (errno != EWOULDBLOCK || vocl_now_ns() - start > timeout_ns) {
            vocl_warn("%s: not locked (%s): connecting anyway", CONNECT_LOCK,
                      errno == EWOULDBLOCK ? "held too long" : strerror(errno));
            close(fd);
            return -1;
        }
        vocl_backoff(start, 1000000);
    }
    return fd;
}

/* Connects to port and links the connection: its peer number, or -1
 * with a message; *inter: the intercommunicator.  A proxy that hands the
 * client on to a worker of its own (voclproxyd --isolate) gives its port:
 * VOCL_LIVE_MOVED, and the port in port. */
static int connect_link(const char *name, char *port, uint64_t timeout_ns, MPI_Comm *inter,
                        int *tag_base)
{
    int lock = lock_node(timeout_ns);
    *inter = dial(name, port, timeout_ns);
    if (lock >= 0)
        close(lock); /* (the lock goes with it) */
    if (*inter == MPI_COMM_NULL)
        return -1;
    return vocl_live_link(*inter, 0, NULL, tag_base, port);
}

/* One proxy, by name: connected, linked and greeted, or left out. */
static void join(const char *name, uint64_t timeout_ns, bool spare)
{
    char port[MPI_MAX_PORT_NAME];
    if (resolve(name, port))
        return;
    MPI_Comm inter;
    int tag_base = 0;
    int live = connect_link(name, port, timeout_ns, &inter, &tag_base);
    if (live == VOCL_LIVE_MOVED) {
        /* (It sent nothing more on the first connection, nor will this side.) */
        MPI_Comm_free(&inter);
        vocl_debug("proxy %s: served by a worker of its own, at %s", name, port);
        live = connect_link(name, port, timeout_ns, &inter, &tag_base);
        if (live == VOCL_LIVE_MOVED) {
            vocl_error("proxy %s: handed on twice: a proxy of another version?", name);
            live = -1;
        }
    }
    if (inter == MPI_COMM_NULL)
        return;
    if (live >= 0 && !vocl_tag_base_ok(tag_base, vocl_mpi_tag_ub())) {
        vocl_error("proxy %s: gave an unusable tag base (%d): a proxy of another version?", name,
                   tag_base);
        vocl_live_unlink(live);
        live = -1;
    } else if (live < 0) {
        vocl_error("proxy %s: connected, then said nothing", name);
    }
    if (live < 0) {
        MPI_Comm_free(&inter);
        return;
    }
    /* A connected proxy speaks on the intercommunicator, as rank 0 of the far group. */
    struct vocl_proxy *px = vocl_proxy_new(0, false);
    if (!px) {
        vocl_live_unlink(live);
        MPI_Comm_free(&inter);
        return;
    }
    px->comm = inter;
    px->live = live;
    px->tag_base = tag_base;
    px->name = strdup(name);
    px->spare = spare;
    if (vocl_greet(px))
        px->dead = true;
}

bool vocl_connect_mode(void)
{
    struct names nm = {.from = ""};
    if (!names_find(&nm)) {
        names_free(&nm);
        return false;
    }
    if (nm.n == 0) {
        vocl.init_error = "connect mode: no proxy named";
        vocl_error("%s names no proxy", nm.from);
        names_free(&nm);
        return true;
    }
    /* The proxy's secret first: without it, connecting is no use. */
    static struct vocl_token token;
    char why[256];
    if (vocl_token_path(&token, NULL)) {
        vocl.init_error = "connect mode: no token file (set VOCL_TOKEN_FILE, or HOME)";
        names_free(&nm);
        return true;
    }
    if (vocl_token_read(&token, why, sizeof(why))) {
        vocl_error("connect mode: token file %s: %s", token.path, why);
        vocl.init_error = "connect mode needs the proxy's token file (VOCL_TOKEN_FILE)";
        names_free(&nm);
        return true;
    }
    vocl.token = &token;
    static char user[65];
    vocl.user = vocl_user_name(user, sizeof(user));
    const char *ns = getenv("VOCL_NAME_SERVER");
    vocl_mpi_name_server(ns && *ns ? ns : nm.name_server);
    if (vocl_open_mpi()) {
        names_free(&nm);
        return true;
    }
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    const char *t = getenv("VOCL_CONNECT_TIMEOUT");
    double secs = t && *t ? atof(t) : DEFAULT_TIMEOUT_S;
    if (secs <= 0)
        secs = DEFAULT_TIMEOUT_S;
    vocl_live_start(MPI_COMM_NULL); /* proxies are linked as they connect */
    for (int i = 0; i < nm.n; i++)
        join(nm.v[i], (uint64_t)(secs * 1e9), i >= nm.n - vocl.spares);
    if (vocl.ndevices == 0 && !vocl.init_error)
        vocl.init_error = "connect mode: no proxy could be reached";
    names_free(&nm);
    return true;
}

void vocl_connect_close(void)
{
    for (int i = 0; i < vocl.nproxies; i++) {
        struct vocl_proxy *px = vocl.proxies[i];
        if (px->local || px->comm == vocl.comm || px->comm == MPI_COMM_NULL)
            continue;
        vocl_live_unlink(px->live);
        /* Freed, not disconnected: a proxy that died would hold
         * MPI_Comm_disconnect forever. */
        MPI_Comm_free(&px->comm);
    }
}
