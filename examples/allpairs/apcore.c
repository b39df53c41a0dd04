/* apcore.c: see apcore.h. */
#include "apcore.h"

#include <stdlib.h>
#include <string.h>

/* ---- tasks ---- */

uint64_t ap_task_pairs(const struct ap_task *t)
{
    uint64_t pairs = 0;
    for (uint32_t i = t->r0; i < t->r1; i++) {
        uint32_t j0 = i + 1 > t->c0 ? i + 1 : t->c0;
        if (j0 < t->c1)
            pairs += t->c1 - j0;
    }
    return pairs;
}

bool ap_task_is_leaf(const struct ap_task *t)
{
    return t->r1 - t->r0 == 1 && t->c1 - t->c0 == 1;
}

/* Whether a block holds a pair: its smallest row below its largest column. */
static bool has_pairs(const struct ap_task *t)
{
    return t->r0 < t->r1 && t->c0 < t->c1 && t->r0 + 1 < t->c1;
}

unsigned ap_task_split(const struct ap_task *t, struct ap_task out[4])
{
    uint32_t rm = t->r0 + (t->r1 - t->r0 + 1) / 2, cm = t->c0 + (t->c1 - t->c0 + 1) / 2;
    struct ap_task q[4] = {
        {t->r0, rm, t->c0, cm},
        {t->r0, rm, cm, t->c1},
        {rm, t->r1, t->c0, cm},
        {rm, t->r1, cm, t->c1},
    };
    unsigned n = 0;
    for (unsigned k = 0; k < 4; k++)
        if (has_pairs(&q[k]))
            out[n++] = q[k];
    return n;
}

/* ---- deque ---- */

int ap_deque_init(struct ap_deque *q, size_t cap)
{
    *q = (struct ap_deque){.cap = cap ? cap : 16};
    q->tasks = malloc(q->cap * sizeof(*q->tasks));
    return q->tasks ? 0 : -1;
}

void ap_deque_free(struct ap_deque *q)
{
    free(q->tasks);
    q->tasks = NULL;
}

size_t ap_deque_size(const struct ap_deque *q)
{
    return q->tail - q->head;
}

int ap_deque_push(struct ap_deque *q, const struct ap_task *t)
{
    if (q->tail == q->cap) {
        if (q->head > 0) { /* slide down what the thieves left */
            memmove(q->tasks, q->tasks + q->head, (q->tail - q->head) * sizeof(*q->tasks));
            q->tail -= q->head;
            q->head = 0;
        }
        if (q->tail == q->cap) {
            struct ap_task *more = realloc(q->tasks, 2 * q->cap * sizeof(*more));
            if (!more)
                return -1;
            q->tasks = more;
            q->cap *= 2;
        }
    }
    q->tasks[q->tail++] = *t;
    return 0;
}

bool ap_deque_pop_newest(struct ap_deque *q, struct ap_task *t)
{
    if (q->tail == q->head)
        return false;
    *t = q->tasks[--q->tail];
    if (q->tail == q->head)
        q->head = q->tail = 0;
    return true;
}

bool ap_deque_pop_oldest(struct ap_deque *q, struct ap_task *t)
{
    if (q->tail == q->head)
        return false;
    *t = q->tasks[q->head++];
    if (q->tail == q->head)
        q->head = q->tail = 0;
    return true;
}

uint64_t ap_random(uint64_t *state)
{
    uint64_t x = *state += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static void shuffle(uint32_t *a, uint32_t n, uint64_t *rng)
{
    for (uint32_t k = n; k > 1; k--) {
        uint32_t r = (uint32_t)(ap_random(rng) % k);
        uint32_t t = a[k - 1];
        a[k - 1] = a[r];
        a[r] = t;
    }
}

void ap_steal_order(uint32_t self, uint32_t p, const uint32_t *node, uint64_t *rng,
                    uint32_t *out)
{
    uint32_t n = 0;
    for (uint32_t d = 0; d < p; d++)
        if (d != self && node[d] == node[self])
            out[n++] = d;
    uint32_t local = n;
    for (uint32_t d = 0; d < p; d++)
        if (node[d] != node[self])
            out[n++] = d;
    shuffle(out, local, rng);
    shuffle(out + local, n - local, rng);
}

/* ---- slot tables ---- */

int ap_cache_init(struct ap_cache *c, uint32_t slots, uint32_t items)
{
    *c = (struct ap_cache){.count = slots, .items = items};
    c->slots = calloc(slots ? slots : 1, sizeof(*c->slots));
    c->where = malloc((items ? items : 1) * sizeof(*c->where));
    if (!c->slots || !c->where) {
        ap_cache_free(c);
        return -1;
    }
    for (uint32_t s = 0; s < slots; s++)
        c->slots[s].item = -1;
    for (uint32_t i = 0; i < items; i++)
        c->where[i] = -1;
    return 0;
}

void ap_cache_free(struct ap_cache *c)
{
    free(c->slots);
    free(c->where);
    c->slots = NULL;
    c->where = NULL;
}

int32_t ap_cache_find(const struct ap_cache *c, uint32_t item)
{
    return item < c->items ? c->where[item] : -1;
}

int32_t ap_cache_acquire(struct ap_cache *c, uint32_t item, bool *hit)
{
    int32_t s = ap_cache_find(c, item);
    *hit = s >= 0;
    if (s < 0) {
        /* The least recently used slot that nobody holds. */
        for (uint32_t k = 0; k < c->count; k++) {
            const struct ap_slot *x = &c->slots[k];
            if (x->refs == 0 && (x->state == AP_SLOT_EMPTY || x->state == AP_SLOT_READABLE) &&
                (s < 0 || x->last_use < c->slots[s].last_use))
                s = (int32_t)k;
        }
        if (s < 0)
            return -1;
        struct ap_slot *x = &c->slots[s];
        if (x->item >= 0)
            c->where[x->item] = -1;
        x->item = item;
        x->state = AP_SLOT_PENDING;
        c->where[item] = s;
    }
    c->slots[s].refs++;
    c->slots[s].last_use = ++c->clock;
    return s;
}

void ap_cache_ref(struct ap_cache *c, int32_t slot)
{
    c->slots[slot].refs++;
}

void ap_cache_release(struct ap_cache *c, int32_t slot)
{
    if (c->slots[slot].refs > 0)
        c->slots[slot].refs--;
}

/* ---- point of contact ---- */

int ap_contacts_init(struct ap_contacts *c, uint32_t items, uint32_t p, uint32_t h)
{
    *c = (struct ap_contacts){.items = items, .p = p ? p : 1, .h = h};
    size_t n = (size_t)items * h;
    c->cand = malloc((n ? n : 1) * sizeof(*c->cand));
    if (!c->cand)
        return -1;
    for (size_t k = 0; k < n; k++)
        c->cand[k] = -1;
    return 0;
}

void ap_contacts_free(struct ap_contacts *c)
{
    free(c->cand);
    c->cand = NULL;
}

uint32_t ap_contacts_ask(struct ap_contacts *c, uint32_t item, uint32_t asker, uint32_t *out)
{
    if (c->h == 0 || item >= c->items)
        return 0;
    int32_t *list = c->cand + (size_t)item * c->h;
    uint32_t n = 0;
    for (uint32_t k = 0; k < c->h && list[k] >= 0; k++)
        if ((uint32_t)list[k] != asker)
            out[n++] = (uint32_t)list[k];
    /* asker first, then the others as they were, the oldest dropped. */
    list[0] = (int32_t)asker;
    for (uint32_t k = 0; k + 1 < c->h; k++)
        list[k + 1] = k < n ? (int32_t)out[k] : -1;
    return n;
}
