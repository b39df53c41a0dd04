/*
 * output.c - what kernels print.
 *
 * Kernel printf writes to this process's stdout.  It is a pipe, read by a
 * thread into a buffer (so a kernel never blocks on a full pipe), and the
 * bytes go to the client, in an OUTPUT message just before its next reply:
 * the application prints them by the time clFinish or clWaitForEvents
 * returns.  With several clients, the one whose reply comes next gets them.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "daemon.h"
#include "protocol.h"
#include "thread.h"
#include "vocl_msg.h"
#include "wire.h"

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

int proxyd_stdout = STDOUT_FILENO;

void proxyd_output_capture(void)
{
    int fds[2];
    fflush(stdout);
    int own = dup(STDOUT_FILENO);
    if (own >= 0)
        proxyd_stdout = own;
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

int proxyd_output_post(struct exec_session *s, struct vocl_wr *msg, struct vocl_req *req)
{
    int rc = 0;
    *req = VOCL_REQ_NULL;
    if (out.fd < 0)
        return 0;
    fflush(stdout);
    pthread_mutex_lock(&out.lock);
    output_take();
    if (out.buf.len) {
        vocl_wr_begin(msg, VOCL_OP_OUTPUT, 0, 0);
        vocl_enc_OUTPUT_req(msg, &(struct vocl_msg_OUTPUT_req){.text = {out.buf.buf, out.buf.len}});
        vocl_wr_finish(msg);
        rc = msg->fail ? -1 : proxyd_chan_post(s, VOCL_TAG_REP, msg->buf, msg->len, req);
        vocl_wr_reset(&out.buf);
    }
    pthread_mutex_unlock(&out.lock);
    return rc;
}
