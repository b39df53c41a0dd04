/*
 * ctlsock.c - the control socket of an application or a daemon (ctlsock.h).
 */
#include "ctlsock.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "thread.h"

static struct {
    pthread_mutex_t busy; /* held while a request is served, and at the close */
    int fd;
    bool closed;
    void (*handler)(int, const char *, void *);
    void *arg;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
} ctl = {PTHREAD_MUTEX_INITIALIZER, -1, false, NULL, NULL, ""};

const char *vocl_ctl_dir(char *buf, size_t n)
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
    if (lstat(d, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
        vocl_warn("%s is not a directory of this user's alone (mode 0700): no vocl-ctl", d);
        return NULL;
    }
    return d;
}

void vocl_ctl_say(int fd, const char *fmt, ...)
{
    char line[1200];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (n > 0)
        (void)!write(fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

/* Whether the peer is this user (or root). */
static bool peer_ok(int fd)
{
    struct ucred cr;
    socklen_t len = sizeof(cr);
    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 &&
           (cr.uid == geteuid() || cr.uid == 0);
}

/* One request line from fd (a client that sends nothing has 5 s). */
static void serve(int fd)
{
    char req[256];
    size_t n = 0;
    ssize_t r;
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){5, 0}, sizeof(struct timeval));
    while (n < sizeof(req) - 1 && (r = read(fd, req + n, sizeof(req) - 1 - n)) > 0) {
        n += (size_t)r;
        if (memchr(req, '\n', n))
            break;
    }
    req[n] = '\0';
    req[strcspn(req, "\r\n")] = '\0';
    ctl.handler(fd, req, ctl.arg);
}

static void *ctl_thread(void *arg)
{
    (void)arg;
    for (;;) {
        int fd = accept4(ctl.fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0 && (errno == EINTR || errno == ECONNABORTED))
            continue;
        if (fd < 0)
            return NULL; /* closed */
        pthread_mutex_lock(&ctl.busy);
        if (!ctl.closed && peer_ok(fd))
            serve(fd);
        pthread_mutex_unlock(&ctl.busy);
        close(fd);
    }
}

int vocl_ctl_listen(const char *name, void (*handler)(int, const char *, void *), void *arg)
{
    char buf[256];
    const char *dir = vocl_ctl_dir(buf, sizeof(buf));
    if (!dir)
        return -1;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (snprintf(a.sun_path, sizeof(a.sun_path), "%s/%s.sock", dir, name) >=
        (int)sizeof(a.sun_path)) {
        vocl_warn("%s: too long a path for a socket: no vocl-ctl", dir);
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    unlink(a.sun_path); /* (left by a process of this name that died) */
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 4)) {
        vocl_warn("%s: %s: no vocl-ctl", a.sun_path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    ctl.fd = fd;
    ctl.handler = handler;
    ctl.arg = arg;
    memcpy(ctl.path, a.sun_path, sizeof(ctl.path));
    if (vocl_thread_detached(ctl_thread, NULL)) {
        vocl_ctl_close();
        return -1;
    }
    vocl_info("vocl-ctl reaches this process at %s", ctl.path);
    return 0;
}

void vocl_ctl_close(void)
{
    if (ctl.fd < 0)
        return;
    pthread_mutex_lock(&ctl.busy);
    ctl.closed = true;
    unlink(ctl.path);
    shutdown(ctl.fd, SHUT_RDWR);
    pthread_mutex_unlock(&ctl.busy);
}
