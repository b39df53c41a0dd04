/*
 * ctlsock.h - a control socket: a Unix socket in a directory of the
 * user's alone, where vocl-ctl(1) reaches a running application
 * (libvocl/control.c) or daemon (proxyd/serve.c).  A thread of its own
 * waits in accept() and hands each request line, from this user or root
 * only, to the owner's handler, which writes its answer to the socket.
 */
#ifndef VOCL_CTLSOCK_H
#define VOCL_CTLSOCK_H

#include <stddef.h>

/* The directory: VOCL_CTL_DIR, else $TMPDIR/vocl-ctl-UID (made 0700 if it
 * is not there); NULL, with a warning, when it is not the user's alone. */
const char *vocl_ctl_dir(char *buf, size_t n);

/* Serves <dir>/<name>.sock: handler(fd, request, arg) for each request
 * line, one at a time.  0, or -1 with a warning (nothing started). */
int vocl_ctl_listen(const char *name, void (*handler)(int fd, const char *req, void *arg),
                    void *arg);
/* Ends it: the socket goes, and a request being served is finished first. */
void vocl_ctl_close(void);

/* A line on fd, printf-style. */
void vocl_ctl_say(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
