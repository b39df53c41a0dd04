/*
 * notify.c - context notifications (clCreateContext's pfn_notify) for the
 * client that made the context.
 *
 * Two sources: the native driver's own calls of the notify function the
 * proxy gives every context it creates, and the proxy itself, when a request
 * sent without waiting for a reply fails (a deferred error, exec.c): that is
 * just what the spec's pfn_notify is for, an error the application could not
 * be told of where it happened.
 *
 * A driver may call at any time, on any thread, even after the session has
 * ended, so its user_data holds no pointer: it is the session's serial
 * number and the context's id packed into one word.  Notes wait in one list
 * and go to the client in NOTIFY messages just before its next reply, as
 * kernel output does (proxyd/replies.c), or sooner: the serving loop sends
 * them as they come (exec_notify_posted says when), since a client waits
 * for no reply while its application thread is elsewhere.  libvocl then
 * calls the application's function on a thread of its own.
 */
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define SERIAL_BITS  16
#define ID_BITS      48
#define MAX_PENDING  256u   /* notes a client has not collected: more are dropped */
#define MAX_INFO     4096u  /* bytes of errinfo, and of private_info, kept */

struct note {
    struct note *next;
    uint32_t serial;
    uint64_t ctx;
    char *errinfo;
    void *priv;
    size_t cb;
};

static struct {
    pthread_mutex_t lock;
    struct note *head, **tail;
    unsigned n;
    bool warned;
} notes = {PTHREAD_MUTEX_INITIALIZER, NULL, &notes.head, 0, false};

static atomic_uint next_serial = 1;
static atomic_uint_fast64_t posted; /* notes posted so far */

uint32_t exec_notify_serial(void)
{
    uint32_t s;
    do
        s = atomic_fetch_add(&next_serial, 1) & ((1u << SERIAL_BITS) - 1);
    while (s == 0);
    return s;
}

static void post(uint32_t serial, uint64_t ctx, const char *errinfo, const void *priv, size_t cb)
{
    size_t len = errinfo ? strnlen(errinfo, MAX_INFO) : 0;
    if (cb > MAX_INFO || !priv)
        cb = 0;
    struct note *n = calloc(1, sizeof(*n));
    char *e = malloc(len + 1);
    void *p = cb ? malloc(cb) : NULL;
    if (!n || !e || (cb && !p)) {
        free(n);
        free(e);
        free(p);
        return;
    }
    memcpy(e, errinfo ? errinfo : "", len);
    e[len] = '\0';
    if (cb)
        memcpy(p, priv, cb);
    *n = (struct note){NULL, serial, ctx, e, p, cb};

    pthread_mutex_lock(&notes.lock);
    if (notes.n >= MAX_PENDING) {
        if (!notes.warned)
            vocl_warn("%u context notifications not yet collected by their clients: "
                      "dropping further ones", notes.n);
        notes.warned = true;
        pthread_mutex_unlock(&notes.lock);
        free(e);
        free(p);
        free(n);
        return;
    }
    *notes.tail = n;
    notes.tail = &n->next;
    notes.n++;
    pthread_mutex_unlock(&notes.lock);
    atomic_fetch_add(&posted, 1);
}

uint64_t exec_notify_posted(void)
{
    return atomic_load(&posted);
}

void *exec_notify_tag(const struct exec_session *s, uint64_t ctx)
{
    if (ctx >> ID_BITS)
        return NULL;
    return (void *)(uintptr_t)(((uint64_t)s->serial << ID_BITS) | ctx);
}

void CL_CALLBACK exec_notify_native(const char *errinfo, const void *priv, size_t cb, void *tag)
{
    uint64_t t = (uint64_t)(uintptr_t)tag;
    post((uint32_t)(t >> ID_BITS), t & ((UINT64_C(1) << ID_BITS) - 1), errinfo, priv, cb);
}

void exec_notify_post(const struct exec_session *s, uint64_t ctx, const char *errinfo)
{
    post(s->serial, ctx, errinfo, NULL, 0);
}

/* Unlinks the session's notes into a list of their own, in order. */
static struct note *take(uint32_t serial)
{
    struct note *mine = NULL, **mt = &mine;
    pthread_mutex_lock(&notes.lock);
    struct note **pp = &notes.head;
    while (*pp) {
        struct note *n = *pp;
        if (n->serial != serial) {
            pp = &n->next;
            continue;
        }
        *pp = n->next;
        n->next = NULL;
        *mt = n;
        mt = &n->next;
        notes.n--;
    }
    notes.tail = pp; /* the last note's next, or head */
    if (notes.n < MAX_PENDING / 2)
        notes.warned = false;
    pthread_mutex_unlock(&notes.lock);
    return mine;
}

static void note_free(struct note *n)
{
    free(n->errinfo);
    free(n->priv);
    free(n);
}

bool exec_notify_take(const struct exec_session *s, struct vocl_wr *msg)
{
    struct note *list = take(s->serial);
    if (!list)
        return false;
    uint32_t count = 0;
    for (struct note *n = list; n; n = n->next)
        count++;
    struct vocl_rec_notification *recs = malloc(count * sizeof(*recs));
    count = 0;
    for (struct note *n = list; recs && n; n = n->next)
        recs[count++] = (struct vocl_rec_notification){
            .context = n->ctx,
            .errinfo = vocl_str_of(n->errinfo),
            .private_info = {n->priv, n->cb},
        };
    if (recs) {
        vocl_wr_begin(msg, VOCL_OP_NOTIFY, 0, 0);
        vocl_enc_NOTIFY_req(msg, &(struct vocl_msg_NOTIFY_req){.notes = {.n = count, .v = recs}});
        vocl_wr_finish(msg);
    }
    for (struct note *n = list, *next; n; n = next) {
        next = n->next;
        note_free(n);
    }
    free(recs);
    return recs && !msg->fail;
}

void exec_notify_drop(const struct exec_session *s)
{
    for (struct note *n = take(s->serial), *next; n; n = next) {
        next = n->next;
        note_free(n);
    }
}
