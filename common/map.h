/*
 * map.h - a small open-addressing hash map from 64-bit keys to pointers.
 *
 * One implementation serves both sides: libvocl's handle table (key: the
 * handle's address) and the proxy's per-session object table (key: the
 * client-assigned id).  Key 0 is reserved as "empty".  Not thread-safe: the
 * owner locks.
 */
#ifndef VOCL_MAP_H
#define VOCL_MAP_H

#include <stddef.h>
#include <stdint.h>

struct vocl_map_slot {
    uint64_t key; /* 0: empty, VOCL_MAP_TOMB: deleted */
    void *val;
};

struct vocl_map {
    struct vocl_map_slot *slots;
    size_t cap;   /* power of two, or 0 */
    size_t count; /* live entries */
    size_t used;  /* live + tombstones */
};

#define VOCL_MAP_TOMB UINT64_MAX

void vocl_map_init(struct vocl_map *m);
void vocl_map_free(struct vocl_map *m);
/* 0 on success, -1 on a reserved key or no memory; replaces an existing value. */
int vocl_map_put(struct vocl_map *m, uint64_t key, void *val);
void *vocl_map_get(const struct vocl_map *m, uint64_t key);
/* Returns the removed value, or NULL. */
void *vocl_map_del(struct vocl_map *m, uint64_t key);
/* Iterate: start with *pos = 0; returns false at the end. */
int vocl_map_next(const struct vocl_map *m, size_t *pos, uint64_t *key, void **val);

#endif
