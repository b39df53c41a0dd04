/*
 * test_allpairs.c: unit tests of apcore.c, the parts of the all-pairs
 * runtime without OpenCL: the quadtree split, the deque, the steal order,
 * the slot tables (LRU, states, references) and the point of contact.
 */
#include "apcore.h"

#include <setjmp.h> /* cmocka needs these first */
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

/* Splitting down to leaves covers every pair i < j of n exactly once. */
static void check_cover(uint32_t n)
{
    uint8_t *seen = calloc((size_t)n * n, 1);
    struct ap_deque q;
    assert_int_equal(ap_deque_init(&q, 4), 0);
    struct ap_task root = {0, n, 0, n};
    assert_int_equal(ap_task_pairs(&root), (uint64_t)n * (n - 1) / 2);
    assert_int_equal(ap_deque_push(&q, &root), 0);
    struct ap_task t;
    uint64_t leaves = 0;
    while (ap_deque_pop_newest(&q, &t)) {
        assert_true(ap_task_pairs(&t) > 0);
        if (ap_task_is_leaf(&t)) {
            assert_true(t.r0 < t.c0);
            seen[(size_t)t.r0 * n + t.c0]++;
            leaves++;
            continue;
        }
        struct ap_task parts[4];
        unsigned k = ap_task_split(&t, parts);
        assert_true(k >= 1 && k <= 4);
        uint64_t sum = 0;
        for (unsigned m = 0; m < k; m++) {
            sum += ap_task_pairs(&parts[m]);
            assert_int_equal(ap_deque_push(&q, &parts[m]), 0);
        }
        assert_int_equal(sum, ap_task_pairs(&t)); /* nothing lost, nothing twice */
    }
    assert_int_equal(leaves, (uint64_t)n * (n - 1) / 2);
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < n; j++)
            assert_int_equal(seen[(size_t)i * n + j], i < j ? 1 : 0);
    ap_deque_free(&q);
    free(seen);
}

static void test_quadtree_cover(void **state)
{
    (void)state;
    for (uint32_t n = 2; n <= 37; n++)
        check_cover(n);
    check_cover(100);
}

static void test_quadtree_split(void **state)
{
    (void)state;
    /* The 8 x 8 upper triangle of Rocket's figure 5: the lower left
     * quadrant holds no pair and is left out. */
    struct ap_task root = {0, 8, 0, 8}, parts[4];
    assert_int_equal(ap_task_split(&root, parts), 3);
    assert_int_equal(parts[0].r0, 0);
    assert_int_equal(parts[0].r1, 4);
    assert_int_equal(parts[0].c0, 0);
    assert_int_equal(parts[0].c1, 4);
    assert_int_equal(parts[1].c0, 4); /* top right: 16 pairs */
    assert_int_equal(ap_task_pairs(&parts[1]), 16);
    assert_int_equal(parts[2].r0, 4); /* bottom right */
    assert_int_equal(parts[2].c0, 4);
    assert_int_equal(ap_task_pairs(&parts[0]), 6);
    /* A diagonal 2 x 2 block holds one pair, (0, 1). */
    struct ap_task two = {0, 2, 0, 2};
    assert_int_equal(ap_task_split(&two, parts), 1);
    assert_true(ap_task_is_leaf(&parts[0]));
    assert_int_equal(parts[0].r0, 0);
    assert_int_equal(parts[0].c0, 1);
}

static void test_deque_order(void **state)
{
    (void)state;
    struct ap_deque q;
    assert_int_equal(ap_deque_init(&q, 2), 0);
    for (uint32_t k = 0; k < 10; k++) {
        struct ap_task t = {k, k + 1, 0, 0};
        assert_int_equal(ap_deque_push(&q, &t), 0);
    }
    struct ap_task t;
    assert_true(ap_deque_pop_oldest(&q, &t)); /* a thief: the oldest */
    assert_int_equal(t.r0, 0);
    assert_true(ap_deque_pop_newest(&q, &t)); /* the owner: the newest */
    assert_int_equal(t.r0, 9);
    assert_true(ap_deque_pop_oldest(&q, &t));
    assert_int_equal(t.r0, 1);
    assert_int_equal(ap_deque_size(&q), 7);
    /* Pushing after thefts reuses the space at the front. */
    for (uint32_t k = 0; k < 20; k++) {
        struct ap_task u = {100 + k, 0, 0, 0};
        assert_int_equal(ap_deque_push(&q, &u), 0);
    }
    assert_int_equal(ap_deque_size(&q), 27);
    assert_true(ap_deque_pop_oldest(&q, &t));
    assert_int_equal(t.r0, 2);
    while (ap_deque_pop_newest(&q, &t))
        ;
    assert_false(ap_deque_pop_oldest(&q, &t));
    ap_deque_free(&q);
}

/* The largest task is what a thief gets: after the owner splits the root
 * and goes depth first, the oldest entry is a whole quadrant. */
static void test_steal_largest(void **state)
{
    (void)state;
    struct ap_deque q;
    assert_int_equal(ap_deque_init(&q, 8), 0);
    struct ap_task root = {0, 64, 0, 64}, parts[4], t;
    unsigned k = ap_task_split(&root, parts);
    for (unsigned m = k; m-- > 0;)
        ap_deque_push(&q, &parts[m]);
    assert_true(ap_deque_pop_newest(&q, &t)); /* the owner: top left */
    assert_int_equal(t.c1, 32);
    k = ap_task_split(&t, parts);
    for (unsigned m = k; m-- > 0;)
        ap_deque_push(&q, &parts[m]);
    assert_true(ap_deque_pop_oldest(&q, &t));
    /* A whole quadrant of the root (the bottom right, pushed first), not
     * one of the owner's smaller ones. */
    assert_int_equal(t.r1 - t.r0, 32);
    assert_int_equal(t.c1 - t.c0, 32);
    assert_int_equal(t.r0, 32);
    assert_int_equal(ap_task_pairs(&t), 32 * 31 / 2);
    ap_deque_free(&q);
}

/* Device d's node for groups of k consecutive devices (--group K). */
static void nodes_of_groups(uint32_t *node, uint32_t p, uint32_t k)
{
    for (uint32_t d = 0; d < p; d++)
        node[d] = d / k;
}

static void test_steal_order(void **state)
{
    (void)state;
    uint64_t rng = 42;
    uint32_t out[8], node[8];
    /* Nodes of 2 of 8 devices: device 5's peer 4 first, then the rest. */
    nodes_of_groups(node, 8, 2);
    for (int round = 0; round < 50; round++) {
        ap_steal_order(5, 8, node, &rng, out);
        assert_int_equal(out[0], 4);
        uint32_t seen = 0;
        for (int k = 0; k < 7; k++) {
            assert_true(out[k] < 8 && out[k] != 5);
            seen |= 1u << out[k];
        }
        assert_int_equal(seen, 0xffu & ~(1u << 5));
    }
    /* Nodes of 4: the first three are 4, 6, 7 in some order, and every
     * order turns up over many rounds. */
    nodes_of_groups(node, 8, 4);
    int firsts[8] = {0};
    for (int round = 0; round < 300; round++) {
        ap_steal_order(5, 8, node, &rng, out);
        for (int k = 0; k < 3; k++)
            assert_true(out[k] == 4 || out[k] == 6 || out[k] == 7);
        firsts[out[0]]++;
        for (int k = 3; k < 7; k++)
            assert_true(out[k] < 4);
    }
    assert_true(firsts[4] > 0 && firsts[6] > 0 && firsts[7] > 0);
    /* One node: all others. */
    nodes_of_groups(node, 3, 3);
    ap_steal_order(0, 3, node, &rng, out);
    assert_true((out[0] == 1 && out[1] == 2) || (out[0] == 2 && out[1] == 1));
    /* A node per device: no local peer, every other device in some order. */
    nodes_of_groups(node, 4, 1);
    ap_steal_order(2, 4, node, &rng, out);
    assert_int_equal((1u << out[0]) | (1u << out[1]) | (1u << out[2]), 0xbu);
}

/* Nodes whose devices are not consecutive: proxies placed on two hosts in
 * turn (devices 0, 1, 4, 5 on one, 2, 3, 6, 7 on the other), and nodes of
 * different sizes, numbered in no particular order. */
static void test_steal_order_scattered(void **state)
{
    (void)state;
    uint64_t rng = 7;
    uint32_t out[8];
    uint32_t turns[8] = {0, 0, 1, 1, 0, 0, 1, 1};
    for (uint32_t self = 0; self < 8; self++) {
        for (int round = 0; round < 50; round++) {
            ap_steal_order(self, 8, turns, &rng, out);
            uint32_t seen = 0;
            for (int k = 0; k < 7; k++) {
                assert_true(out[k] < 8 && out[k] != self);
                /* three peers of its node, then the four of the other */
                assert_int_equal(turns[out[k]] == turns[self], k < 3);
                seen |= 1u << out[k];
            }
            assert_int_equal(seen, 0xffu & ~(1u << self));
        }
    }
    /* Node 9 holds devices 1 and 5, node 2 devices 0, 3, 4, node 4 the
     * rest: device 5 tries 1 alone first, device 3 tries 0 and 4 first,
     * both of them turning up first. */
    uint32_t uneven[7] = {2, 9, 4, 2, 2, 9, 4};
    int firsts[7] = {0};
    for (int round = 0; round < 200; round++) {
        ap_steal_order(5, 7, uneven, &rng, out);
        assert_int_equal(out[0], 1);
        for (int k = 1; k < 6; k++)
            assert_true(out[k] != 1 && out[k] != 5 && out[k] < 7);
        ap_steal_order(3, 7, uneven, &rng, out);
        assert_true((out[0] == 0 && out[1] == 4) || (out[0] == 4 && out[1] == 0));
        firsts[out[0]]++;
        for (int k = 2; k < 6; k++)
            assert_true(uneven[out[k]] != 2);
    }
    assert_true(firsts[0] > 0 && firsts[4] > 0);
    /* The only device of its node: every other, all of them. */
    uint32_t alone[3] = {1, 0, 0};
    ap_steal_order(0, 3, alone, &rng, out);
    assert_true((out[0] == 1 && out[1] == 2) || (out[0] == 2 && out[1] == 1));
}

static void test_cache_lru(void **state)
{
    (void)state;
    struct ap_cache c;
    bool hit;
    assert_int_equal(ap_cache_init(&c, 3, 10), 0);
    int32_t a = ap_cache_acquire(&c, 1, &hit);
    assert_false(hit);
    assert_int_equal(c.slots[a].state, AP_SLOT_PENDING);
    int32_t b = ap_cache_acquire(&c, 2, &hit);
    int32_t d = ap_cache_acquire(&c, 3, &hit);
    assert_true(a != b && b != d && a != d);
    /* Held and not yet readable: nothing can be evicted. */
    assert_int_equal(ap_cache_acquire(&c, 4, &hit), -1);
    for (int32_t s = 0; s < 3; s++) {
        c.slots[s].state = AP_SLOT_READABLE;
        ap_cache_release(&c, s);
    }
    /* Item 1 used again: 2 is now the least recently used. */
    assert_int_equal(ap_cache_acquire(&c, 1, &hit), a);
    assert_true(hit);
    ap_cache_release(&c, a);
    int32_t e = ap_cache_acquire(&c, 4, &hit);
    assert_false(hit);
    assert_int_equal(e, b);
    assert_int_equal(ap_cache_find(&c, 2), -1);
    assert_int_equal(ap_cache_find(&c, 4), b);
    ap_cache_free(&c);
}

static void test_cache_states(void **state)
{
    (void)state;
    struct ap_cache c;
    bool hit;
    assert_int_equal(ap_cache_init(&c, 2, 10), 0);
    int32_t a = ap_cache_acquire(&c, 7, &hit); /* reader 1, being filled */
    int32_t again = ap_cache_acquire(&c, 7, &hit);
    assert_int_equal(again, a); /* a second job waits for the same fill */
    assert_true(hit);
    assert_int_equal(c.slots[a].refs, 2);
    ap_cache_release(&c, a);
    ap_cache_release(&c, a);
    /* Unreferenced but still PENDING / WRITING: never evicted. */
    int32_t b = ap_cache_acquire(&c, 8, &hit);
    assert_true(b != a);
    c.slots[b].state = AP_SLOT_WRITING;
    ap_cache_release(&c, b);
    c.slots[a].state = AP_SLOT_WRITING;
    assert_int_equal(ap_cache_acquire(&c, 9, &hit), -1);
    /* Readable with a reader: not evicted either. */
    c.slots[a].state = AP_SLOT_READABLE;
    ap_cache_ref(&c, a);
    assert_int_equal(ap_cache_acquire(&c, 9, &hit), -1);
    ap_cache_release(&c, a);
    assert_int_equal(ap_cache_acquire(&c, 9, &hit), a);
    assert_int_equal(ap_cache_find(&c, 7), -1);
    ap_cache_free(&c);
}

static void test_contacts(void **state)
{
    (void)state;
    struct ap_contacts c;
    uint32_t out[4];
    assert_int_equal(ap_contacts_init(&c, 10, 4, 2), 0);
    assert_int_equal(ap_contact_of(&c, 7), 3);
    assert_int_equal(ap_contacts_ask(&c, 7, 1, out), 0); /* nobody yet */
    assert_int_equal(ap_contacts_ask(&c, 7, 2, out), 1);
    assert_int_equal(out[0], 1);
    assert_int_equal(ap_contacts_ask(&c, 7, 3, out), 2);
    assert_int_equal(out[0], 2); /* the most recent first */
    assert_int_equal(out[1], 1);
    assert_int_equal(ap_contacts_ask(&c, 7, 0, out), 2);
    assert_int_equal(out[0], 3); /* h = 2: device 1 has been dropped */
    assert_int_equal(out[1], 2);
    /* Asking again does not name the asker itself. */
    assert_int_equal(ap_contacts_ask(&c, 7, 0, out), 1);
    assert_int_equal(out[0], 3);
    ap_contacts_free(&c);
    /* h = 0: the third level is off. */
    assert_int_equal(ap_contacts_init(&c, 10, 4, 0), 0);
    assert_int_equal(ap_contacts_ask(&c, 7, 0, out), 0);
    ap_contacts_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_quadtree_cover), cmocka_unit_test(test_quadtree_split),
        cmocka_unit_test(test_deque_order),    cmocka_unit_test(test_steal_largest),
        cmocka_unit_test(test_steal_order),    cmocka_unit_test(test_steal_order_scattered),
        cmocka_unit_test(test_cache_lru),      cmocka_unit_test(test_cache_states),
        cmocka_unit_test(test_contacts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
