/*
 * replies.c - a session's replies, each after the kernel output and the
 * context notifications before it.
 *
 * A reply the transport cannot hand over at once (one past the eager size, to a
 * client that is stopped, or slow to read) is kept with its buffer until
 * the client takes it: the thread replying goes on to other sessions.
 * A client that leaves UNSENT_MAX bytes untaken has its next requests
 * wait (the serving loop asks proxyd_chan_flowing); one that leaves a
 * reply untaken for EXEC_CLIENT_TIMEOUT_NS has its session ended, as before.
 */
#include <pthread.h>
#include <stdlib.h>

#include "backoff.h"
#include "daemon.h"
#include "executor.h"
#include "protocol.h"
#include "vocl_msg.h"
#include "wire.h"

#define UNSENT_MAX (64u << 20)

struct unsent {
    struct unsent *next;
    struct vocl_req req;
    uint8_t *buf;
    size_t len;
    uint64_t posted_ns;
};

/* Keeps req, a send of w's message, until it completes: w's buffer goes
 * with it (w is left empty, and usable).  -1 when it cannot be kept. */
static int keep_unsent(struct proxyd_chan *c, struct vocl_req req, struct vocl_wr *w)
{
    struct unsent *u = malloc(sizeof(*u));
    if (!u)
        return -1;
    *u = (struct unsent){.req = req, .buf = w->buf, .len = w->len, .posted_ns = vocl_now_ns()};
    vocl_wr_init(w);
    pthread_mutex_lock(&c->lock);
    u->next = c->unsent;
    c->unsent = u;
    atomic_fetch_add(&c->unsent_bytes, u->len);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

bool proxyd_chan_flowing(struct proxyd_chan *c, bool *stuck)
{
    *stuck = false;
    if (atomic_load(&c->unsent_bytes) == 0)
        return true;
    pthread_mutex_lock(&c->lock);
    /* Read under the lock: a reply kept by another thread meanwhile has a
     * posted_ns after a now read before it (then now - posted_ns wrapped,
     * and a reply kept a moment ago looked 30 s old). */
    uint64_t now = vocl_now_ns();
    for (struct unsent **pu = &c->unsent, *u; (u = *pu);) {
        if (vocl_test(&u->req, NULL) != 0) {
            *pu = u->next;
            atomic_fetch_sub(&c->unsent_bytes, u->len);
            free(u->buf);
            free(u);
            continue;
        }
        *stuck |= now > u->posted_ns + EXEC_CLIENT_TIMEOUT_NS;
        pu = &u->next;
    }
    bool flowing = atomic_load(&c->unsent_bytes) < UNSENT_MAX;
    pthread_mutex_unlock(&c->lock);
    return flowing;
}

void proxyd_chan_drop(struct proxyd_chan *c)
{
    pthread_mutex_lock(&c->lock);
    while (c->unsent) {
        struct unsent *u = c->unsent;
        c->unsent = u->next;
        vocl_req_cancel(&u->req);
        free(u->buf);
        free(u);
    }
    atomic_store(&c->unsent_bytes, 0);
    pthread_mutex_unlock(&c->lock);
}

/* Any thread may reply: the OUTPUT is posted under output.c's lock, so
 * that output leaves in the order it was printed; nothing waits under it,
 * nor after it: what the client does not take at once is kept (above). */
int proxyd_reply(struct exec_session *s, struct vocl_wr *w)
{
    struct vocl_wr output, note;
    struct vocl_req req[3] = {VOCL_REQ_NULL, VOCL_REQ_NULL, VOCL_REQ_NULL};
    struct vocl_wr *msg[3] = {&output, &note, w};
    vocl_wr_init(&output);
    vocl_wr_init(&note);
    proxyd_output_post(s, &output, &req[0]);
    if (exec_notify_take(s, &note))
        proxyd_chan_post(s, VOCL_TAG_REP, note.buf, note.len, &req[1]);
    int rc = proxyd_chan_post(s, VOCL_TAG_REP, w->buf, w->len, &req[2]);
    for (int i = 0; i < 3; i++) {
        int done;
        if (vocl_req_null(&req[i]))
            continue;
        if (atomic_load(&s->lost)) /* (found by an earlier one): nothing takes it */
            vocl_req_free(&req[i]);
        else if ((done = vocl_test(&req[i], NULL)) < 0)
            rc = -1;
        else if (!done && keep_unsent(s->transport, req[i], msg[i]) && proxyd_chan_sent(s, &req[i]))
            rc = -1; /* (no memory to keep it: waited for, as it was) */
    }
    if (atomic_load(&s->lost))
        rc = -1;
    vocl_wr_free(&output);
    vocl_wr_free(&note);
    return rc;
}

/* Sends msg, a message of its own (no reply follows it), without waiting
 * for the client to take it; msg is left usable. */
static void push(struct exec_session *s, struct vocl_wr *msg)
{
    struct vocl_req req = VOCL_REQ_NULL;
    if (!msg->fail && proxyd_chan_post(s, VOCL_TAG_REP, msg->buf, msg->len, &req) == 0 &&
        vocl_test(&req, NULL) == 0 &&
        keep_unsent(s->transport, req, msg))
        proxyd_chan_sent(s, &req); /* (no memory to keep it: waited for, as a reply) */
}

void proxyd_notes_push(struct exec_session *s)
{
    struct vocl_wr note;
    vocl_wr_init(&note);
    if (exec_notify_take(s, &note))
        push(s, &note);
    vocl_wr_free(&note);
}

void proxyd_tell_closed(struct exec_session *s, const char *why)
{
    struct vocl_wr msg;
    vocl_wr_init(&msg);
    vocl_wr_begin(&msg, VOCL_OP_CLOSED, 0, 0);
    vocl_enc_CLOSED_req(&msg, &(struct vocl_msg_CLOSED_req){.why = vocl_str_of(why)});
    vocl_wr_finish(&msg);
    push(s, &msg);
    vocl_wr_free(&msg);
}
