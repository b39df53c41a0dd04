/*
 * ctl-ask.h - the client side of the control sockets (common/ctlsock.h):
 * what vocl-ctl, the migration tests and vocl-bench-migrate send.
 */
#ifndef VOCL_CTL_ASK_H
#define VOCL_CTL_ASK_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* The directory of the sockets: given, else VOCL_CTL_DIR, else
 * $TMPDIR/vocl-ctl-UID. */
static inline const char *vocl_ctl_dir_of(const char *given, char *buf, size_t n)
{
    if (given)
        return given;
    const char *d = getenv("VOCL_CTL_DIR");
    if (d && *d)
        return d;
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, n, "%s/vocl-ctl-%u", tmp && *tmp ? tmp : "/tmp", (unsigned)geteuid());
    return buf;
}

/* Sends req to <dir>/<who>.sock; its answer in out.  0 ok, 1 it said
 * error, 2 not reached (quiet: a process that just ended is no error). */
static inline int vocl_ctl_ask(const char *dir, const char *who, const char *req, char *out, size_t n)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    out[0] = '\0';
    if (snprintf(a.sun_path, sizeof(a.sun_path), "%s/%s.sock", dir, who) >=
        (int)sizeof(a.sun_path)) {
        snprintf(out, n, "%s: too long a path", dir);
        return 2;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) ||
        write(fd, req, strlen(req)) != (ssize_t)strlen(req) || write(fd, "\n", 1) != 1) {
        snprintf(out, n, "%s: %s", a.sun_path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return 2;
    }
    size_t got = 0;
    ssize_t r;
    while (got < n - 1 && (r = read(fd, out + got, n - 1 - got)) > 0)
        got += (size_t)r;
    out[got] = '\0';
    close(fd);
    if (got < 2) {
        snprintf(out, n, "%s: no answer", a.sun_path);
        return 2;
    }
    return strncmp(out, "ok", 2) == 0 ? 0 : 1;
}

#endif
