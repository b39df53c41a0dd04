/*
 * build.c - program builds on a thread of their own.
 *
 * A build can take seconds, and the thread that reads requests serves every
 * session: it must not wait for one.  So clBuildProgram, clCompileProgram
 * and clLinkProgram run on the build thread, one after another, while the
 * serving thread goes on.  (One thread, not one per build: the compiler's
 * deep stacks stayed resident, and a soak saw the proxy grow by megabytes.)
 * Nothing else waits for a build: the client thread that asked waits for
 * its reply, and the client's other threads may go on with other objects,
 * as a driver lets them (a kernel created from the program meanwhile fails
 * as it would natively: not built yet).  The reply is written by the
 * serving thread (exec_builds_answer), the only one that touches
 * sessions: a session that ended meanwhile gets none, and a program a link
 * made is released.
 *
 * The build thread holds a reference to every object it uses, so an ending
 * session cannot free them under it.  In process (local devices) the build
 * runs on the application's thread, as a driver's does, out of the lock
 * that serialises the executor (s->leave), so that the application's other
 * threads go on meanwhile.
 */
#include "internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "thread.h"

struct job {
    struct job *next;
    struct exec_session *s;
    uint32_t seq;
    struct exec_build b; /* its arrays and strings owned, its objects retained */
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct job *todo, **todo_tail; /* for the build thread, in order */
    struct job *built;             /* to be answered (any order) */
    bool thread;                   /* the build thread is there */
    atomic_uint running;           /* jobs queued or being built */
} jobs = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, &jobs.todo, NULL, false, 0};

/* The native call; its status in b->err (a link's program in b->made). */
static void run(const struct vocl_native_api *cl, struct exec_build *b)
{
    switch (b->op) {
    case VOCL_OP_clBuildProgram:
        b->err = cl->clBuildProgram(b->prog, b->ndev, b->devs, b->options, NULL, NULL);
        break;
    case VOCL_OP_clCompileProgram:
        b->err = cl->clCompileProgram(b->prog, b->ndev, b->devs, b->options, b->nin, b->in,
                                      b->names, NULL, NULL);
        break;
    default: /* link */
        b->made = cl->clLinkProgram(b->ctx, b->ndev, b->devs, b->options, b->nin, b->in, NULL,
                                    NULL, &b->err);
        break;
    }
}

/* The reply's body: the status; a link also says whether it made a program
 * (a failed link may make one, to read its log from), recorded under b->id. */
static void answer(struct exec_req *q, const struct exec_build *b)
{
    if (b->op != VOCL_OP_clLinkProgram) {
        vocl_wr_i32(q->w, b->err);
        return;
    }
    cl_int err = b->err;
    bool made = b->made != NULL;
    if (made && (err = exec_put_new(q, b->id, VOCL_T_PROGRAM, b->made)) != CL_SUCCESS)
        made = false; /* released by exec_put_new */
    vocl_wr_i32(q->w, err == CL_SUCCESS ? b->err : err);
    vocl_enc_clLinkProgram_rep(q->w, &(struct vocl_msg_clLinkProgram_rep){.made = made});
}

/* Retains (+1) or releases (-1) what b names. */
static void hold(const struct vocl_native_api *cl, const struct exec_build *b, int d)
{
    if (b->prog)
        (d > 0 ? cl->clRetainProgram : cl->clReleaseProgram)(b->prog);
    if (b->ctx)
        (d > 0 ? cl->clRetainContext : cl->clReleaseContext)(b->ctx);
    for (cl_uint i = 0; i < b->ndev; i++)
        (d > 0 ? cl->clRetainDevice : cl->clReleaseDevice)(b->devs[i]);
    for (cl_uint i = 0; i < b->nin; i++)
        (d > 0 ? cl->clRetainProgram : cl->clReleaseProgram)(b->in[i]);
}

static void job_free(const struct vocl_native_api *cl, struct job *j)
{
    hold(cl, &j->b, -1);
    for (cl_uint i = 0; j->b.names && i < j->b.nin; i++)
        free((char *)j->b.names[i]);
    free((void *)j->b.names);
    free((void *)j->b.devs);
    free((void *)j->b.in);
    free((char *)j->b.options);
    atomic_fetch_sub(&j->s->held, 1);
    free(j);
}

static void *dup_mem(const void *p, size_t n, bool *ok)
{
    if (!p || !n)
        return NULL;
    void *d = malloc(n);
    if (d)
        memcpy(d, p, n);
    else
        *ok = false;
    return d;
}

/* A copy of b that outlives the request's message, holding its objects. */
static struct job *job_new(const struct exec_req *q, const struct exec_build *b)
{
    struct job *j = calloc(1, sizeof(*j));
    if (!j)
        return NULL;
    bool ok = true;
    j->s = q->s;
    atomic_fetch_add(&q->s->held, 1); /* until job_free */
    j->seq = q->seq;
    j->b = (struct exec_build){.op = b->op, .prog = b->prog, .ctx = b->ctx, .id = b->id};
    j->b.devs = dup_mem(b->devs, b->ndev * sizeof(*b->devs), &ok);
    j->b.ndev = j->b.devs ? b->ndev : 0;
    j->b.in = dup_mem(b->in, b->nin * sizeof(*b->in), &ok);
    j->b.nin = j->b.in ? b->nin : 0;
    j->b.options = b->options ? dup_mem(b->options, strlen(b->options) + 1, &ok) : NULL;
    if (b->names && j->b.nin) {
        const char **names = calloc(j->b.nin, sizeof(*names));
        for (cl_uint i = 0; names && i < j->b.nin; i++)
            names[i] = dup_mem(b->names[i], strlen(b->names[i]) + 1, &ok);
        ok = ok && names;
        j->b.names = names;
    }
    hold(q->cl, &j->b, 1);
    if (!ok) {
        job_free(q->cl, j);
        return NULL;
    }
    return j;
}

static void *build_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&jobs.lock);
    for (;;) {
        while (!jobs.todo)
            pthread_cond_wait(&jobs.wake, &jobs.lock);
        struct job *j = jobs.todo;
        if (!(jobs.todo = j->next))
            jobs.todo_tail = &jobs.todo;
        pthread_mutex_unlock(&jobs.lock);
        run(j->s->node->cl, &j->b);
        pthread_mutex_lock(&jobs.lock);
        j->next = jobs.built;
        jobs.built = j;
        exec_bell_ring(); /* (its reply is the serving thread's) */
    }
    return NULL;
}

bool exec_builds_start(void)
{
    pthread_mutex_lock(&jobs.lock);
    if (!jobs.thread)
        jobs.thread = vocl_thread_detached(build_thread, NULL) == 0;
    bool ok = jobs.thread;
    pthread_mutex_unlock(&jobs.lock);
    return ok;
}

/* Queues j for the build thread (started on first use); false where it
 * cannot start. */
static bool queue_job(struct job *j)
{
    if (!exec_builds_start())
        return false;
    pthread_mutex_lock(&jobs.lock);
    j->next = NULL;
    *jobs.todo_tail = j;
    jobs.todo_tail = &j->next;
    atomic_fetch_add(&jobs.running, 1);
    pthread_cond_signal(&jobs.wake);
    pthread_mutex_unlock(&jobs.lock);
    return true;
}

void exec_build(struct exec_req *q, const struct exec_build *b)
{
    /* In process the caller's thread builds, as a driver's clBuildProgram does. */
    struct job *j = !q->s->in_process && q->s->reply ? job_new(q, b) : NULL;
    if (j && queue_job(j)) {
        q->later = true;
        return;
    }
    if (j)
        job_free(q->cl, j);
    if (q->s->in_process && q->s->leave && (j = job_new(q, b))) {
        q->s->leave(q->s);
        run(q->cl, &j->b);
        q->s->enter(q->s);
        answer(q, &j->b);
        job_free(q->cl, j);
        return;
    }
    /* No thread to build on, and no lock to leave: here, holding it. */
    struct exec_build now = *b;
    run(q->cl, &now);
    answer(q, &now);
}

unsigned exec_builds_answer(struct vocl_wr *w)
{
    if (!atomic_load(&jobs.running))
        return 0;
    pthread_mutex_lock(&jobs.lock);
    struct job *list = jobs.built;
    jobs.built = NULL;
    pthread_mutex_unlock(&jobs.lock);
    unsigned n = 0;
    for (struct job *j = list, *next; j; j = next, n++) {
        next = j->next;
        struct exec_session *s = j->s;
        const struct vocl_native_api *cl = s->node->cl;
        if (atomic_load(&s->closed)) {
            if (j->b.made)
                cl->clReleaseProgram(j->b.made);
        } else {
            struct exec_req q = {.s = s, .cl = cl, .w = w, .op = j->b.op, .seq = j->seq};
            vocl_wr_begin(w, (uint16_t)j->b.op, 0, j->seq);
            answer(&q, &j->b);
            vocl_wr_finish(w);
            if (w->fail || s->reply(s, w))
                vocl_warn("client %d: the reply to %s could not be sent", s->who,
                          vocl_op_name(j->b.op));
        }
        job_free(cl, j);
        atomic_fetch_sub(&jobs.running, 1);
    }
    return n;
}

unsigned exec_builds_running(void)
{
    return atomic_load(&jobs.running);
}
