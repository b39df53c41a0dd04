/*
 * map.c - open addressing with linear probing and tombstones.
 */
#include "map.h"

#include <stdlib.h>

static size_t hash(uint64_t k)
{
    /* splitmix64 finaliser: pointers and sequential ids both spread well. */
    k ^= k >> 30;
    k *= 0xbf58476d1ce4e5b9ull;
    k ^= k >> 27;
    k *= 0x94d049bb133111ebull;
    k ^= k >> 31;
    return (size_t)k;
}

void vocl_map_init(struct vocl_map *m)
{
    m->slots = NULL;
    m->cap = m->count = m->used = 0;
}

void vocl_map_free(struct vocl_map *m)
{
    free(m->slots);
    vocl_map_init(m);
}

static struct vocl_map_slot *find(const struct vocl_map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
        struct vocl_map_slot *s = &m->slots[i];
        if (s->key == key)
            return s;
        if (s->key == 0)
            return NULL;
    }
}

static int grow(struct vocl_map *m)
{
    size_t ncap = m->cap ? m->cap : 16;
    while (ncap / 2 < m->count + 1)
        ncap *= 2;
    struct vocl_map_slot *ns = calloc(ncap, sizeof(*ns));
    if (!ns)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        uint64_t k = m->slots[i].key;
        if (k == 0 || k == VOCL_MAP_TOMB)
            continue;
        size_t j = hash(k) & (ncap - 1);
        while (ns[j].key)
            j = (j + 1) & (ncap - 1);
        ns[j] = m->slots[i];
    }
    free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    m->used = m->count;
    return 0;
}

int vocl_map_put(struct vocl_map *m, uint64_t key, void *val)
{
    if (key == 0 || key == VOCL_MAP_TOMB)
        return -1;
    struct vocl_map_slot *s = find(m, key);
    if (s) {
        s->val = val;
        return 0;
    }
    /* Keep the table at most 3/4 full, tombstones included, so probes end. */
    if ((m->used + 1) * 4 > m->cap * 3 && grow(m))
        return -1;
    size_t mask = m->cap - 1;
    size_t i = hash(key) & mask;
    while (m->slots[i].key != 0 && m->slots[i].key != VOCL_MAP_TOMB)
        i = (i + 1) & mask;
    if (m->slots[i].key == 0)
        m->used++;
    m->slots[i].key = key;
    m->slots[i].val = val;
    m->count++;
    return 0;
}

void *vocl_map_get(const struct vocl_map *m, uint64_t key)
{
    if (key == 0 || key == VOCL_MAP_TOMB)
        return NULL;
    struct vocl_map_slot *s = find(m, key);
    return s ? s->val : NULL;
}

void *vocl_map_del(struct vocl_map *m, uint64_t key)
{
    if (key == 0 || key == VOCL_MAP_TOMB)
        return NULL;
    struct vocl_map_slot *s = find(m, key);
    if (!s)
        return NULL;
    void *v = s->val;
    s->key = VOCL_MAP_TOMB;
    s->val = NULL;
    m->count--;
    return v;
}

int vocl_map_next(const struct vocl_map *m, size_t *pos, uint64_t *key, void **val)
{
    while (*pos < m->cap) {
        struct vocl_map_slot *s = &m->slots[(*pos)++];
        if (s->key != 0 && s->key != VOCL_MAP_TOMB) {
            *key = s->key;
            *val = s->val;
            return 1;
        }
    }
    return 0;
}
