/*
 * hostmem.c - host memory the proxy holds for a session: the staging of
 * rectangular and image transfers (a span the client declares), the copies
 * that non-blocking writes read from, and reads waiting for their reply.
 *
 * Every such block is counted against the session's limit (voclproxyd
 * --max-session-host) from its allocation to its free.  The free may come
 * after the session has ended (a write still queued, a reply still due), so
 * the count lives in an account of its own: each block names it in a header
 * before the bytes, and the account goes with its last block.
 */
#include "internal.h"

#include "log.h"

#include <inttypes.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdlib.h>

struct exec_account {
    atomic_size_t used; /* bytes of blocks not yet freed */
    atomic_uint refs;   /* the session's, and one per block */
};

/* Before each block: its account and size, aligned as malloc aligns. */
union head {
    struct {
        struct exec_account *a;
        size_t n;
    } h;
    max_align_t align;
};

static void account_put(struct exec_account *a)
{
    if (a && atomic_fetch_sub(&a->refs, 1) == 1)
        free(a);
}

void exec_account_open(struct exec_session *s)
{
    s->account = calloc(1, sizeof(*s->account));
    if (s->account)
        atomic_init(&s->account->refs, 1);
}

void exec_account_close(struct exec_session *s)
{
    account_put(s->account);
    s->account = NULL;
}

size_t exec_host_held(const struct exec_session *s)
{
    return s->account ? atomic_load(&s->account->used) : 0;
}

void *exec_host_alloc(struct exec_session *s, size_t n)
{
    struct exec_account *a = s->account;
    uint64_t limit = s->node->limits.host;
    if (!a || n > SIZE_MAX - sizeof(union head))
        return NULL;
    size_t before = atomic_fetch_add(&a->used, n);
    if (limit && (n > limit || before > limit - n)) {
        atomic_fetch_sub(&a->used, n);
        vocl_warn("client %d: refused %zu bytes of host memory: the session holds %zu"
                  " (limit %" PRIu64 ", --max-session-host)",
                  s->who, n, before, limit);
        return NULL;
    }
    union head *h = malloc(sizeof(*h) + (n ? n : 1));
    if (!h) {
        atomic_fetch_sub(&a->used, n);
        return NULL;
    }
    atomic_fetch_add(&a->refs, 1);
    h->h.a = a;
    h->h.n = n;
    return h + 1;
}

void exec_host_free(void *p)
{
    if (!p)
        return;
    union head *h = (union head *)p - 1;
    atomic_fetch_sub(&h->h.a->used, h->h.n);
    account_put(h->h.a);
    free(h);
}
