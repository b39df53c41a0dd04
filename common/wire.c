/*
 * wire.c - field-by-field little-endian encoding for VOCL messages.
 */
#include "wire.h"

#include "backoff.h"
#include "vocl_api.h" /* enum vocl_launch_arg */

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VOCL_STR_NULL UINT64_MAX

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

void vocl_wr_init(struct vocl_wr *w)
{
    memset(w, 0, sizeof(*w));
}

void vocl_wr_reset(struct vocl_wr *w)
{
    w->len = 0;
    w->fail = false;
}

void vocl_wr_free(struct vocl_wr *w)
{
    free(w->buf);
    vocl_wr_init(w);
}

void *vocl_wr_reserve(struct vocl_wr *w, size_t n)
{
    if (w->fail)
        return NULL;
    if (n > VOCL_MSG_MAX || w->len + n > VOCL_MSG_MAX) {
        w->fail = true;
        return NULL;
    }
    if (w->len + n > w->cap) {
        size_t cap = w->cap ? w->cap : 256;
        while (cap < w->len + n)
            cap *= 2;
        uint8_t *nb = realloc(w->buf, cap);
        if (!nb) {
            w->fail = true;
            return NULL;
        }
        w->buf = nb;
        w->cap = cap;
    }
    void *p = w->buf + w->len;
    w->len += n;
    return p;
}

static void wr_le(struct vocl_wr *w, uint64_t v, unsigned n)
{
    uint8_t *p = vocl_wr_reserve(w, n);
    if (p)
        put_le(p, v, n);
}

void vocl_wr_u8(struct vocl_wr *w, uint8_t v)
{
    wr_le(w, v, 1);
}

void vocl_wr_u32(struct vocl_wr *w, uint32_t v)
{
    wr_le(w, v, 4);
}

void vocl_wr_u64(struct vocl_wr *w, uint64_t v)
{
    wr_le(w, v, 8);
}

void vocl_wr_u32_at(struct vocl_wr *w, size_t at, uint32_t v)
{
    if (!w->fail && at + 4 <= w->len)
        put_le(w->buf + at, v, 4);
}

void vocl_wr_i32(struct vocl_wr *w, int32_t v)
{
    wr_le(w, (uint32_t)v, 4);
}

void vocl_wr_bytes(struct vocl_wr *w, const void *p, size_t n)
{
    vocl_wr_u64(w, n);
    if (n == 0)
        return;
    uint8_t *d = vocl_wr_reserve(w, n);
    if (d)
        memcpy(d, p, n);
}

void vocl_wr_str(struct vocl_wr *w, const char *s)
{
    if (!s) {
        vocl_wr_u64(w, VOCL_STR_NULL);
        return;
    }
    vocl_wr_bytes(w, s, strlen(s));
}

void vocl_wr_begin(struct vocl_wr *w, uint16_t opcode, uint32_t flags, uint32_t seq)
{
    vocl_wr_reset(w);
    uint8_t *h = vocl_wr_reserve(w, VOCL_HDR_SIZE);
    if (!h)
        return;
    struct vocl_msg_hdr hdr = {VOCL_WIRE_MAGIC, opcode, flags, 0, seq};
    vocl_hdr_put(h, &hdr);
}

void vocl_wr_finish(struct vocl_wr *w)
{
    if (w->fail || w->len < VOCL_HDR_SIZE)
        return;
    put_le(w->buf + 8, w->len - VOCL_HDR_SIZE, 4);
}

void vocl_hdr_put(uint8_t out[VOCL_HDR_SIZE], const struct vocl_msg_hdr *h)
{
    put_le(out + 0, h->magic, 2);
    put_le(out + 2, h->opcode, 2);
    put_le(out + 4, h->flags, 4);
    put_le(out + 8, h->length, 4);
    put_le(out + 12, h->seq, 4);
}

bool vocl_hdr_get(const uint8_t *in, size_t n, struct vocl_msg_hdr *h)
{
    if (n < VOCL_HDR_SIZE)
        return false;
    h->magic = (uint16_t)get_le(in + 0, 2);
    h->opcode = (uint16_t)get_le(in + 2, 2);
    h->flags = (uint32_t)get_le(in + 4, 4);
    h->length = (uint32_t)get_le(in + 8, 4);
    h->seq = (uint32_t)get_le(in + 12, 4);
    return h->magic == VOCL_WIRE_MAGIC && h->length == n - VOCL_HDR_SIZE;
}

void vocl_batch_add(struct vocl_wr *batch, const struct vocl_wr *msg)
{
    if (batch->len == 0)
        vocl_wr_begin(batch, VOCL_OP_BATCH, 0, 0);
    uint8_t *d = vocl_wr_reserve(batch, msg->len);
    if (d)
        memcpy(d, msg->buf, msg->len);
}

bool vocl_batch_next(const uint8_t **p, const uint8_t *end, struct vocl_msg_hdr *h,
                     const uint8_t **msg)
{
    size_t left = (size_t)(end - *p);
    if (left < VOCL_HDR_SIZE)
        return false;
    uint64_t len = get_le(*p + 8, 4);
    if (len > left - VOCL_HDR_SIZE || !vocl_hdr_get(*p, VOCL_HDR_SIZE + len, h))
        return false;
    *msg = *p;
    *p += VOCL_HDR_SIZE + len;
    return true;
}

void vocl_rd_init(struct vocl_rd *r, const void *p, size_t n)
{
    r->p = p;
    r->end = p ? r->p + n : r->p; /* (an empty list a decoder left NULL) */
    r->fail = false;
}

static const uint8_t *rd_take(struct vocl_rd *r, size_t n)
{
    if (r->fail || (size_t)(r->end - r->p) < n) {
        r->fail = true;
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += n;
    return p;
}

static uint64_t rd_le(struct vocl_rd *r, unsigned n)
{
    const uint8_t *p = rd_take(r, n);
    return p ? get_le(p, n) : 0;
}

uint8_t vocl_rd_u8(struct vocl_rd *r)
{
    return (uint8_t)rd_le(r, 1);
}

uint32_t vocl_rd_u32(struct vocl_rd *r)
{
    return (uint32_t)rd_le(r, 4);
}

uint64_t vocl_rd_u64(struct vocl_rd *r)
{
    return rd_le(r, 8);
}

int32_t vocl_rd_i32(struct vocl_rd *r)
{
    return (int32_t)(uint32_t)rd_le(r, 4);
}

const void *vocl_rd_bytes(struct vocl_rd *r, size_t *n)
{
    uint64_t len = vocl_rd_u64(r);
    *n = 0;
    if (r->fail || len > (uint64_t)(r->end - r->p)) {
        r->fail = true;
        return NULL;
    }
    *n = (size_t)len;
    return rd_take(r, (size_t)len);
}

const char *vocl_rd_str(struct vocl_rd *r, size_t *n, bool *is_null)
{
    uint64_t len = vocl_rd_u64(r);
    *n = 0;
    *is_null = false;
    if (r->fail)
        return NULL;
    if (len == VOCL_STR_NULL) {
        *is_null = true;
        return NULL;
    }
    if (len > (uint64_t)(r->end - r->p)) {
        r->fail = true;
        return NULL;
    }
    *n = (size_t)len;
    return (const char *)rd_take(r, (size_t)len);
}

bool vocl_rd_done(const struct vocl_rd *r)
{
    return !r->fail && r->p == r->end;
}

/* First tag and count of data tags: [VOCL_TAG_DATA_MIN, VOCL_TAG_DATA_MAX],
 * or past the peer tags when MPI_TAG_UB is large (MPICH: 2^28 - 1). */
static int data_tag_first = VOCL_TAG_DATA_MIN;
static uint32_t data_tag_span = VOCL_TAG_DATA_MAX - VOCL_TAG_DATA_MIN + 1;

void vocl_data_tag_ub(int tag_ub)
{
    if (tag_ub >= VOCL_TAG_PEER_MAX + (1 << 20)) {
        data_tag_first = VOCL_TAG_PEER_MAX + 1;
        data_tag_span = (uint32_t)(tag_ub - VOCL_TAG_PEER_MAX);
        if (data_tag_span > (1u << 30))
            data_tag_span = 1u << 30;
    }
}

int vocl_data_tag(uint32_t seq)
{
    return data_tag_first + (int)(seq % data_tag_span);
}

/* --- compound fields of the generated messages (vocl_msg.h) --------------------------------- */

void vocl_wr_ids(struct vocl_wr *w, const struct vocl_ids *a)
{
    vocl_wr_u32(w, a->n);
    for (uint32_t i = 0; i < a->n; i++)
        vocl_wr_u64(w, vocl_ids_at(a, i));
}

/* A u32 count, then count elements of elem bytes: *n and the elements
 * (NULL when none).  A count the message cannot hold gives too_long, and
 * *n = 0 whatever went wrong. */
static const char *rd_counted(struct vocl_rd *r, uint32_t *n, size_t elem, const uint8_t **p,
                              const char *too_long)
{
    *n = vocl_rd_u32(r);
    *p = NULL;
    if (r->fail || *n == 0) {
        *n = 0;
        return NULL;
    }
    if ((uint64_t)*n * elem > (uint64_t)(r->end - r->p)) {
        *n = 0;
        return too_long;
    }
    *p = rd_take(r, (size_t)*n * elem);
    return NULL;
}

const char *vocl_rd_ids(struct vocl_rd *r, struct vocl_ids *a, const char *too_long)
{
    a->v = NULL;
    return rd_counted(r, &a->n, 8, &a->raw, too_long);
}

void vocl_wr_va3(struct vocl_wr *w, const struct vocl_va3 *a)
{
    vocl_wr_u8(w, a->present);
    if (!a->present)
        return;
    for (int i = 0; i < 3; i++)
        vocl_wr_u64(w, a->v[i]);
}

void vocl_rd_va3(struct vocl_rd *r, struct vocl_va3 *a)
{
    a->present = vocl_rd_u8(r);
    for (int i = 0; i < 3; i++)
        a->v[i] = a->present ? vocl_rd_u64(r) : 0;
}

void vocl_wr_data(struct vocl_wr *w, const struct vocl_data *d, bool out)
{
    vocl_wr_u8(w, d->mode);
    switch (d->mode) {
    case VOCL_DATA_INLINE:
        if (out)
            vocl_wr_bytes(w, d->p, (size_t)d->len);
        break;
    case VOCL_DATA_CHUNKED:
        vocl_wr_u64(w, d->arg);
        vocl_wr_u8(w, d->depth);
        break;
    case VOCL_DATA_HOSTPTR:
        vocl_wr_u64(w, d->arg);
        break;
    default:
        break;
    }
}

const char *vocl_rd_data(struct vocl_rd *r, struct vocl_data *d, bool out)
{
    memset(d, 0, sizeof(*d));
    d->mode = vocl_rd_u8(r);
    if (r->fail)
        return NULL;
    switch (d->mode) {
    case VOCL_DATA_NONE:
        return NULL;
    case VOCL_DATA_INLINE:
        if (out) {
            size_t n = 0;
            d->p = vocl_rd_bytes(r, &n);
            d->len = n;
        }
        return NULL;
    case VOCL_DATA_CHUNKED:
        d->arg = vocl_rd_u64(r);
        d->depth = vocl_rd_u8(r);
        return NULL;
    case VOCL_DATA_HOSTPTR:
        d->arg = vocl_rd_u64(r);
        return NULL;
    default:
        return "unknown data mode";
    }
}

void vocl_wr_sstr(struct vocl_wr *w, const struct vocl_str *s)
{
    if (s->null)
        vocl_wr_str(w, NULL);
    else
        vocl_wr_bytes(w, s->p, (size_t)s->len);
}

void vocl_rd_sstr(struct vocl_rd *r, struct vocl_str *s)
{
    size_t n;
    bool is_null;
    s->p = vocl_rd_str(r, &n, &is_null);
    s->len = n;
    s->null = is_null;
}

/* Writes raw bytes of a decoded list again (they are its wire form). */
static void wr_raw(struct vocl_wr *w, const uint8_t *raw, size_t n)
{
    void *p = n ? vocl_wr_reserve(w, n) : NULL;
    if (p)
        memcpy(p, raw, n);
}

void vocl_wr_sbytes(struct vocl_wr *w, const struct vocl_bytes *b)
{
    vocl_wr_bytes(w, b->p, b->len);
}

void vocl_rd_sbytes(struct vocl_rd *r, struct vocl_bytes *b)
{
    b->p = vocl_rd_bytes(r, &b->len);
}

void vocl_wr_rest(struct vocl_wr *w, const struct vocl_bytes *b)
{
    wr_raw(w, b->p, b->len);
}

void vocl_rd_rest(struct vocl_rd *r, struct vocl_bytes *b)
{
    b->len = r->fail ? 0 : (size_t)(r->end - r->p);
    b->p = b->len ? rd_take(r, b->len) : r->p;
}

void vocl_wr_blist(struct vocl_wr *w, const struct vocl_blist *b)
{
    vocl_wr_u32(w, b->n);
    if (!b->p) {
        wr_raw(w, b->raw, b->raw_len);
        return;
    }
    for (uint32_t i = 0; i < b->n; i++)
        vocl_wr_bytes(w, b->p[i], b->len[i]);
}

void vocl_rd_blist(struct vocl_rd *r, struct vocl_blist *b)
{
    memset(b, 0, sizeof(*b));
    b->n = vocl_rd_u32(r);
    b->raw = r->p;
    /* Each item at least its length: a count the message cannot hold fails
     * within as many steps as the message has bytes. */
    for (uint32_t i = 0; i < b->n && !r->fail; i++) {
        size_t n;
        vocl_rd_bytes(r, &n);
    }
    if (r->fail) {
        b->n = 0;
        b->raw = NULL;
        return;
    }
    b->raw_len = (size_t)(r->p - b->raw);
}

void vocl_wr_strs(struct vocl_wr *w, const struct vocl_strs *s, uint32_t n)
{
    if (!s->s) {
        wr_raw(w, s->raw, s->raw_len);
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        vocl_wr_str(w, s->s[i]);
}

void vocl_rd_strs(struct vocl_rd *r, struct vocl_strs *s, uint32_t n)
{
    memset(s, 0, sizeof(*s));
    s->raw = r->p;
    for (uint32_t i = 0; i < n && !r->fail; i++) {
        size_t len;
        bool is_null;
        vocl_rd_str(r, &len, &is_null);
    }
    if (r->fail) {
        s->raw = NULL;
        return;
    }
    s->raw_len = (size_t)(r->p - s->raw);
}

void vocl_wr_van(struct vocl_wr *w, const struct vocl_va3 *a, uint32_t n)
{
    vocl_wr_u8(w, a->present);
    for (uint32_t i = 0; a->present && i < n && i < 3; i++)
        vocl_wr_u64(w, a->v[i]);
}

const char *vocl_rd_van(struct vocl_rd *r, struct vocl_va3 *a, uint32_t n)
{
    memset(a, 0, sizeof(*a));
    if (n > 3)
        return "work_dim above 3";
    a->present = vocl_rd_u8(r);
    for (uint32_t i = 0; a->present && i < n; i++)
        a->v[i] = vocl_rd_u64(r);
    return NULL;
}

void vocl_wr_kargs(struct vocl_wr *w, const struct vocl_launch_args *k)
{
    vocl_wr_u32(w, k->n);
    if (!k->a) {
        wr_raw(w, k->raw, k->raw_len);
        return;
    }
    for (uint32_t i = 0; i < k->n; i++) {
        const struct vocl_karg_wire *a = &k->a[i];
        vocl_wr_u32(w, a->index);
        vocl_wr_u8(w, a->kind);
        if (a->kind == VOCL_LARG_BYTES)
            vocl_wr_bytes(w, a->p, (size_t)a->len);
        else
            vocl_wr_u64(w, a->v);
    }
}

bool vocl_kargs_next(struct vocl_rd *it, struct vocl_karg_wire *a)
{
    memset(a, 0, sizeof(*a));
    if (it->p == it->end || it->fail)
        return false;
    a->index = vocl_rd_u32(it);
    a->kind = vocl_rd_u8(it);
    if (a->kind == VOCL_LARG_BYTES) {
        size_t n;
        a->p = vocl_rd_bytes(it, &n);
        a->len = n;
    } else {
        a->v = vocl_rd_u64(it);
    }
    return !it->fail;
}

const char *vocl_rd_kargs(struct vocl_rd *r, struct vocl_launch_args *k)
{
    memset(k, 0, sizeof(*k));
    k->n = vocl_rd_u32(r);
    k->raw = r->p;
    for (uint32_t i = 0; i < k->n && !r->fail; i++) {
        vocl_rd_u32(r);
        uint8_t kind = vocl_rd_u8(r);
        if (kind == VOCL_LARG_BYTES) {
            size_t n;
            vocl_rd_bytes(r, &n);
        } else if (kind == VOCL_LARG_MEM || kind == VOCL_LARG_SAMPLER || kind == VOCL_LARG_LOCAL) {
            vocl_rd_u64(r);
        } else if (!r->fail) {
            k->n = 0;
            k->raw = NULL;
            return "unknown kernel argument kind";
        }
    }
    if (r->fail) {
        k->n = 0;
        k->raw = NULL;
        return NULL;
    }
    k->raw_len = (size_t)(r->p - k->raw);
    return NULL;
}

void vocl_wr_u8s(struct vocl_wr *w, const struct vocl_u8s *a)
{
    vocl_wr_u32(w, a->n);
    for (uint32_t i = 0; i < a->n; i++)
        vocl_wr_u8(w, a->v[i]);
}

const char *vocl_rd_u8s(struct vocl_rd *r, struct vocl_u8s *a)
{
    return rd_counted(r, &a->n, 1, &a->v, "byte array longer than the message");
}

void vocl_wr_i32s(struct vocl_wr *w, const struct vocl_i32s *a)
{
    vocl_wr_u32(w, a->n);
    for (uint32_t i = 0; i < a->n; i++)
        vocl_wr_i32(w, vocl_i32s_at(a, i));
}

const char *vocl_rd_i32s(struct vocl_rd *r, struct vocl_i32s *a)
{
    a->v = NULL;
    return rd_counted(r, &a->n, 4, &a->raw, "status array longer than the message");
}
