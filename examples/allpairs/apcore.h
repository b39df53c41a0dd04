/*
 * apcore.h: the parts of the all-pairs runtime without OpenCL or threads,
 * kept apart so that unit tests can drive them: the quadtree of tasks, the
 * work-stealing deque and steal order, the slot tables of the caches (LRU,
 * states, reference counts) and the point-of-contact bookkeeping.
 * None of them locks: the runtime calls them under its lock.
 */
#ifndef ALLPAIRS_APCORE_H
#define ALLPAIRS_APCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- tasks: blocks of the pair matrix ---- */

/* The pairs (i, j) with i < j, r0 <= i < r1 and c0 <= j < c1. */
struct ap_task {
    uint32_t r0, r1, c0, c1;
};

uint64_t ap_task_pairs(const struct ap_task *t);
/* A task of exactly one pair. */
bool ap_task_is_leaf(const struct ap_task *t);
/* Splits t (not a leaf, not empty) into its quadrants that hold pairs, in
 * an order that keeps neighbours together (top left, top right, bottom
 * left, bottom right); returns how many (1 to 4). */
unsigned ap_task_split(const struct ap_task *t, struct ap_task out[4]);

/* ---- the deque of a worker ---- */

/* The owner takes the newest task (the smallest: depth first, for
 * locality); thieves take the oldest (the largest). */
struct ap_deque {
    struct ap_task *tasks;
    size_t head, tail, cap; /* tasks[head .. tail) */
};

int ap_deque_init(struct ap_deque *q, size_t cap);
void ap_deque_free(struct ap_deque *q);
size_t ap_deque_size(const struct ap_deque *q);
int ap_deque_push(struct ap_deque *q, const struct ap_task *t);
bool ap_deque_pop_newest(struct ap_deque *q, struct ap_task *t);
bool ap_deque_pop_oldest(struct ap_deque *q, struct ap_task *t);

/* splitmix64 */
uint64_t ap_random(uint64_t *state);

/* The peers worker `self` of p tries, in order, into out[p - 1]: those on
 * its own node (node[d] == node[self]) in random order, then the others in
 * random order.  node[] holds any numbers: a node's devices need not be
 * consecutive (proxies placed on hosts in turn). */
void ap_steal_order(uint32_t self, uint32_t p, const uint32_t *node, uint64_t *rng,
                    uint32_t *out);

/* ---- slot tables (the device caches and the host cache) ---- */

enum ap_slot_state {
    AP_SLOT_EMPTY,
    AP_SLOT_PENDING,  /* assigned to an item, its fill not yet enqueued */
    AP_SLOT_WRITING,  /* its fill enqueued, not complete */
    AP_SLOT_READABLE, /* holds the item */
};

struct ap_slot {
    int64_t item; /* -1: none */
    enum ap_slot_state state;
    uint32_t refs;     /* readers, and the writer while it fills */
    uint64_t last_use; /* LRU stamp */
};

struct ap_cache {
    struct ap_slot *slots;
    uint32_t count;
    int32_t *where; /* item -> slot, or -1 */
    uint32_t items;
    uint64_t clock;
};

int ap_cache_init(struct ap_cache *c, uint32_t slots, uint32_t items);
void ap_cache_free(struct ap_cache *c);
/* The slot holding (or being filled with) item, or -1; touches nothing. */
int32_t ap_cache_find(const struct ap_cache *c, uint32_t item);
/* Takes a reference on item's slot and marks it used.  On a miss, the
 * least recently used slot that nobody references and that is empty or
 * readable is given to item, PENDING; *hit says which.  Returns -1 (and
 * takes nothing) when every slot is referenced or being filled. */
int32_t ap_cache_acquire(struct ap_cache *c, uint32_t item, bool *hit);
void ap_cache_ref(struct ap_cache *c, int32_t slot);
void ap_cache_release(struct ap_cache *c, int32_t slot);

/* ---- point of contact ---- */

/* Item i's point of contact is device i mod p, which keeps the h devices
 * that asked for it last, most recent first. */
struct ap_contacts {
    uint32_t items, p, h;
    int32_t *cand; /* items x h, -1 for none */
};

int ap_contacts_init(struct ap_contacts *c, uint32_t items, uint32_t p, uint32_t h);
void ap_contacts_free(struct ap_contacts *c);
static inline uint32_t ap_contact_of(const struct ap_contacts *c, uint32_t item)
{
    return item % c->p;
}
/* Device `asker` asks for item: copies the current candidates, other than
 * asker, into out[h] and returns how many; then asker becomes the first. */
uint32_t ap_contacts_ask(struct ap_contacts *c, uint32_t item, uint32_t asker, uint32_t *out);

#endif
