/*
 * control.c - where vocl-ctl(1) reaches a running application: a Unix
 * socket, <dir>/<pid>.sock, in a directory of the user's alone (mode 0700;
 * VOCL_CTL_DIR, else $TMPDIR/vocl-ctl-UID), served by a thread that
 * blocks in accept() and costs nothing until a request comes.
 *
 * A request is one line; the answer is lines, the first "ok ..." or
 * "error ...", until the socket closes:
 *   proxies           one line per proxy: its number, name, node, devices,
 *                     the objects the application has there, spare or gone
 *   migrate FROM TO   everything on proxy FROM moves to proxy TO (migrate.c)
 * Only the user who runs the application (or root) is answered.
 */
#include "vocl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "thread.h"

static struct {
    pthread_mutex_t busy; /* held while a request is served, and at the leave */
    int fd;
    bool stopped;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
} ctl = {PTHREAD_MUTEX_INITIALIZER, -1, false, ""};

/* The directory of the sockets: made 0700 if it is not there; NULL (with a
 * warning) when it is not the user's alone. */
static const char *ctl_dir(char *buf, size_t n)
{
    const char *d = getenv("VOCL_CTL_DIR");
    if (!d || !*d) {
        const char *tmp = getenv("TMPDIR");
        snprintf(buf, n, "%s/vocl-ctl-%u", tmp && *tmp ? tmp : "/tmp", (unsigned)geteuid());
        d = buf;
    }
    struct stat st;
    if (mkdir(d, 0700) && errno != EEXIST)
        return NULL;
    if (lstat(d, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
        (st.st_mode & 077)) {
        vocl_warn("%s is not a directory of this user's alone (mode 0700): no vocl-ctl", d);
        return NULL;
    }
    return d;
}

static void say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(int fd, const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n > 0)
        (void)!write(fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* A proxy's number as the request gives it; NULL: none such. */
static struct vocl_proxy *proxy_arg(const char *s)
{
    char *end;
    long i = strtol(s, &end, 10);
    if (end == s || *end || i < 0 || i >= vocl.nproxies)
        return NULL;
    return vocl.proxies[i];
}

static void list_proxies(int fd)
{
    say(fd, "ok %d proxies\n", vocl.nproxies);
    for (int i = 0; i < vocl.nproxies; i++) {
        struct vocl_proxy *px = vocl.proxies[i];
        size_t n = 0, objs = 0;
        struct vocl_obj **o = vocl_objs_on(px, &n);
        for (size_t k = 0; k < n; k++) {
            objs += o[k]->type != VOCL_T_DEVICE;
            vocl_obj_drop(o[k]);
        }
        free(o);
        char name[64];
        if (px->local)
            snprintf(name, sizeof(name), "local");
        else if (px->name)
            snprintf(name, sizeof(name), "%.63s", px->name);
        else
            snprintf(name, sizeof(name), "rank%d", px->rank);
        say(fd, "proxy %d name=%s node=%s devices=%u objects=%zu%s%s\n", i, name,
            px->node[0] ? px->node : "-", px->ndev, objs,
            i >= vocl.nproxies - vocl.spares ? " spare" : "",
            atomic_load(&px->dead) ? " gone" : "");
    }
}

static void serve(int fd)
{
    char req[256];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof(req) - 1 && (r = read(fd, req + n, sizeof(req) - 1 - n)) > 0) {
        n += (size_t)r;
        if (memchr(req, '\n', n))
            break;
    }
    req[n] = '\0';
    req[strcspn(req, "\r\n")] = '\0';
    char a[32] = "", b[32] = "";
    if (strcmp(req, "proxies") == 0) {
        list_proxies(fd);
    } else if (sscanf(req, "migrate %31s %31s", a, b) == 2) {
        struct vocl_proxy *from = proxy_arg(a), *to = proxy_arg(b);
        struct vocl_migration st;
        char why[512];
        if (!from || !to)
            say(fd, "error no proxy %s here (there are %d: 0 to %d)\n", from ? b : a,
                vocl.nproxies, vocl.nproxies - 1);
        else if (vocl_migrate(from, to, &st, why, sizeof(why)))
            say(fd, "error %s; everything stays on proxy %d\n", why, from->index);
        else
            say(fd, "ok objects=%zu bytes=%llu seconds=%.6f pause=%.6f copy=%.6f\n",
                st.objects, (unsigned long long)st.bytes, (double)st.total_ns / 1e9,
                (double)st.pause_ns / 1e9, (double)st.copy_ns / 1e9);
    } else {
        say(fd, "error unknown request \"%.64s\" (proxies, migrate FROM TO)\n", req);
    }
}

/* Whether the peer is this user (or root). */
static bool peer_ok(int fd)
{
    struct ucred cr;
    socklen_t len = sizeof(cr);
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 &&
           (cr.uid == geteuid() || cr.uid == 0);
}

static void *control_thread(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept4(ctl.fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
            continue;
        if (fd < 0)
            return NULL; /* the leave shut it */
        /* A client that sends nothing holds no migration up for long. */
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){5, 0}, sizeof(struct timeval));
        pthread_mutex_lock(&ctl.busy);
        if (!ctl.stopped && peer_ok(fd))
            serve(fd);
        pthread_mutex_unlock(&ctl.busy);
        close(fd);
    }
}

void vocl_control_start(void)
{
    char buf[256];
    const char *v = getenv("VOCL_CTL");
    if ((v && strcmp(v, "0") == 0) || vocl.nproxies < 2)
        return; /* nowhere to move to */
    const char *dir = ctl_dir(buf, sizeof(buf));
    if (!dir)
        return;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (snprintf(a.sun_path, sizeof(a.sun_path), "%s/%ld.sock", dir, (long)getpid()) >=
        (int)sizeof(a.sun_path)) {
        vocl_warn("%s: too long a path for a socket: no vocl-ctl", dir);
        return;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    unlink(a.sun_path); /* a process of this pid that died */
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 4)) {
        vocl_warn("%s: %s: no vocl-ctl", a.sun_path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    ctl.fd = fd;
    memcpy(ctl.path, a.sun_path, sizeof(ctl.path));
    if (vocl_thread_detached(control_thread, NULL)) {
        vocl_control_stop();
        return;
    }
    vocl_info("vocl-ctl reaches this process at %s", ctl.path);
}

void vocl_control_stop(void)
{
    if (ctl.fd < 0)
        return;
    pthread_mutex_lock(&ctl.busy); /* a migration under way ends first */
    ctl.stopped = true;
    unlink(ctl.path);
    shutdown(ctl.fd, SHUT_RDWR);
    pthread_mutex_unlock(&ctl.busy);
}
