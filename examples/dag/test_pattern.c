/*
 * test_pattern.c: unit tests of pattern.c, the pure parts of DCR and DHDCR:
 * which transfers form a broadcast, scatter or gather; the binomial tree;
 * and how reads cover a write.
 */
#include "pattern.h"

#include <setjmp.h> /* cmocka needs these first */
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdbool.h>
#include <string.h>

#define W(h, s) {DCR_WRITE, (h), (s)}
#define R(h, s) {DCR_READ, (h), (s)}

static void test_detect(void **state)
{
    (void)state;
    struct dcr_transfer bcast[] = {W(1000, 64), W(1000, 64), W(1000, 64)};
    assert_int_equal(dcr_detect(bcast, 3), DCR_BROADCAST);
    struct dcr_transfer scatter[] = {W(1000, 64), W(1064, 32), W(1096, 64)};
    assert_int_equal(dcr_detect(scatter, 3), DCR_SCATTER);
    struct dcr_transfer gather[] = {R(1000, 8), R(1008, 8)};
    assert_int_equal(dcr_detect(gather, 2), DCR_GATHER);
    assert_string_equal(dcr_pattern_name(DCR_GATHER), "gather");

    /* Not a collective. */
    assert_int_equal(dcr_detect(bcast, 1), DCR_NONE); /* one device */
    struct dcr_transfer mixed[] = {W(1000, 64), R(1064, 64)};
    assert_int_equal(dcr_detect(mixed, 2), DCR_NONE);
    struct dcr_transfer sizes[] = {W(1000, 64), W(1000, 32)};
    assert_int_equal(dcr_detect(sizes, 2), DCR_NONE);
    struct dcr_transfer gap[] = {W(1000, 64), W(1065, 64)};
    assert_int_equal(dcr_detect(gap, 2), DCR_NONE);
    struct dcr_transfer reversed[] = {W(1064, 64), W(1000, 64)};
    assert_int_equal(dcr_detect(reversed, 2), DCR_NONE); /* slices out of device order */
    struct dcr_transfer same_reads[] = {R(1000, 64), R(1000, 64)};
    assert_int_equal(dcr_detect(same_reads, 2), DCR_NONE); /* reads into one region race */
    struct dcr_transfer empty[] = {W(1000, 0), W(1000, 0)};
    assert_int_equal(dcr_detect(empty, 2), DCR_NONE);
    struct dcr_transfer overlap[] = {W(1000, 64), W(1032, 64)};
    assert_int_equal(dcr_detect(overlap, 2), DCR_NONE);
}

static size_t ceil_log2(size_t n)
{
    size_t d = 0;
    while (((size_t)1 << d) < n)
        d++;
    return d;
}

/* For every n up to 64: each rank but 0 receives exactly once, from a rank
 * that already has the data, its subtree lies inside its parent's, and no
 * rank is deeper than ceil(log2 n). */
static void test_tree(void **state)
{
    (void)state;
    size_t parent[64], child[64], span[64];
    assert_int_equal(dcr_tree(1, parent, child, span), 0);
    assert_int_equal(dcr_tree(2, parent, child, span), 1);
    assert_int_equal(parent[0], 0);
    assert_int_equal(child[0], 1);
    assert_int_equal(span[0], 1);
    for (size_t n = 1; n <= 64; n++) {
        size_t edges = dcr_tree(n, parent, child, span);
        assert_int_equal(edges, n - 1);
        bool has[64] = {true};
        size_t depth[64] = {0}, lo[64] = {0}, hi[64] = {n};
        for (size_t e = 0; e < edges; e++) {
            size_t p = parent[e], c = child[e];
            assert_true(c < n);
            assert_true(has[p]);
            assert_false(has[c]);
            has[c] = true;
            depth[c] = depth[p] + 1;
            lo[c] = c;
            hi[c] = c + span[e];
            assert_true(lo[c] > lo[p] && hi[c] <= hi[p]);
            assert_true(depth[c] <= ceil_log2(n));
        }
        for (size_t r = 0; r < n; r++)
            assert_true(has[r]);
    }
    /* The shape for 5: 0 sends ranks 3-4 to 3, then ranks 2 to 2 ... */
    dcr_tree(5, parent, child, span);
    size_t want[][3] = {{0, 3, 2}, {0, 2, 1}, {0, 1, 1}, {3, 4, 1}};
    for (size_t e = 0; e < 4; e++) {
        assert_int_equal(parent[e], want[e][0]);
        assert_int_equal(child[e], want[e][1]);
        assert_int_equal(span[e], want[e][2]);
    }
}

/* Checks a tree of dcr_node_tree's: n - 1 edges, each rank but 0 receives
 * once from one that already has the data, each node is entered by one
 * edge, the between-node edges come first, and span[] counts each
 * subtree's ranks (which, when *consecutive, are child .. child + span - 1
 * inside the parent's).  Returns how many edges cross between nodes. */
static size_t check_node_tree(size_t n, const int *node, bool *consecutive)
{
    size_t parent[64], child[64], span[64];
    size_t edges = dcr_node_tree(n, node, parent, child, span, consecutive);
    assert_int_equal(edges, n ? n - 1 : 0);
    bool has[64] = {true}, entered[64] = {false};
    size_t crossing = 0;
    entered[node[0]] = true;
    for (size_t e = 0; e < edges; e++) {
        size_t p = parent[e], c = child[e];
        assert_true(c < n && p < n);
        assert_true(has[p]);
        assert_false(has[c]);
        has[c] = true;
        if (node[p] != node[c]) {
            assert_int_equal(crossing, e); /* the crossings come first */
            assert_false(entered[node[c]]);
            entered[node[c]] = true;
            crossing++;
        }
    }
    for (size_t r = 0; r < n; r++)
        assert_true(has[r]);
    /* span[e]: child[e] and all ranks below it. */
    for (size_t e = 0; e < edges; e++) {
        bool below[64] = {false};
        below[child[e]] = true;
        size_t count = 1;
        for (size_t f = e + 1; f < edges; f++) {
            if (below[parent[f]]) {
                below[child[f]] = true;
                count++;
            }
        }
        assert_int_equal(span[e], count);
        if (*consecutive) {
            for (size_t r = 0; r < n; r++)
                assert_int_equal(below[r], r >= child[e] && r < child[e] + span[e]);
        }
    }
    return crossing;
}

/* The tree that enters each node once. */
static void test_node_tree(void **state)
{
    (void)state;
    size_t parent[64], child[64], span[64], p2[64], c2[64], s2[64];
    int node[64];
    bool consecutive;
    /* One node, or a rank per node: the binomial tree itself. */
    for (size_t n = 1; n <= 64; n++) {
        for (int each = 0; each < 2; each++) {
            for (size_t r = 0; r < n; r++)
                node[r] = each ? (int)r : 7;
            size_t edges = dcr_node_tree(n, node, parent, child, span, &consecutive);
            assert_true(consecutive);
            assert_int_equal(dcr_tree(n, p2, c2, s2), edges);
            for (size_t e = 0; e < edges; e++) {
                assert_int_equal(parent[e], p2[e]);
                assert_int_equal(child[e], c2[e]);
                assert_int_equal(span[e], s2[e]);
            }
        }
    }
    /* Three nodes of two: the binomial tree of 6 enters the third node
     * twice (3 -> 5, 3 -> 4), this one once. */
    int three[] = {0, 0, 1, 1, 2, 2};
    assert_int_equal(check_node_tree(6, three, &consecutive), 2);
    assert_true(consecutive);
    /* Nodes whose ranks are not consecutive (proxies placed on hosts in
     * turn): 0, 1, 4, 5 on one node, 2, 3, 6, 7 on another; one crossing,
     * where the binomial tree has two (0 -> 2, 4 -> 6). */
    int turns[] = {5, 5, 9, 9, 5, 5, 9, 9};
    assert_int_equal(check_node_tree(8, turns, &consecutive), 1);
    assert_false(consecutive);
    dcr_node_tree(8, turns, parent, child, span, &consecutive);
    assert_int_equal(parent[0], 0);
    assert_true(child[0] == 2);
    /* Every assignment of up to 5 ranks to up to 3 nodes. */
    for (size_t n = 1; n <= 5; n++) {
        size_t total = 1;
        for (size_t r = 0; r < n; r++)
            total *= 3;
        for (size_t code = 0; code < total; code++) {
            size_t x = code, distinct = 0;
            bool used[3] = {false};
            for (size_t r = 0; r < n; r++, x /= 3) {
                node[r] = (int)(x % 3);
                distinct += !used[node[r]];
                used[node[r]] = true;
            }
            assert_int_equal(check_node_tree(n, node, &consecutive), distinct - 1);
        }
    }
}

static void test_cover(void **state)
{
    (void)state;
    struct dhdcr_piece pieces[4];
    /* One read of exactly the write's range. */
    struct dhdcr_read one[] = {{1000, 100}};
    assert_int_equal(dhdcr_cover(1000, 100, one, 1, pieces), 1);
    assert_int_equal(pieces[0].read, 0);
    assert_int_equal(pieces[0].src, 0);
    assert_int_equal(pieces[0].dst, 0);
    assert_int_equal(pieces[0].size, 100);
    /* A write of part of a larger read. */
    assert_int_equal(dhdcr_cover(1040, 20, one, 1, pieces), 1);
    assert_int_equal(pieces[0].src, 40);
    assert_int_equal(pieces[0].size, 20);
    /* Three reads given out of order, the write from the middle of the
     * first to the middle of the last. */
    struct dhdcr_read three[] = {{1200, 100}, {1000, 100}, {1100, 100}};
    assert_int_equal(dhdcr_cover(1050, 200, three, 3, pieces), 3);
    size_t want[][4] = {{1, 50, 0, 50}, {2, 0, 50, 100}, {0, 0, 150, 50}};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pieces[i].read, want[i][0]);
        assert_int_equal(pieces[i].src, want[i][1]);
        assert_int_equal(pieces[i].dst, want[i][2]);
        assert_int_equal(pieces[i].size, want[i][3]);
    }
    /* A read outside the write's range is no obstacle. */
    struct dhdcr_read apart[] = {{1000, 100}, {5000, 10}};
    assert_int_equal(dhdcr_cover(1000, 100, apart, 2, pieces), 1);

    /* Bytes no read filled, or that two reads filled: leave the write. */
    struct dhdcr_read gap[] = {{1000, 50}, {1060, 40}};
    assert_int_equal(dhdcr_cover(1000, 100, gap, 2, pieces), -1);
    assert_int_equal(dhdcr_cover(990, 20, one, 1, pieces), -1);   /* starts before */
    assert_int_equal(dhdcr_cover(1090, 20, one, 1, pieces), -1);  /* ends after */
    struct dhdcr_read twice[] = {{1000, 60}, {1050, 50}};
    assert_int_equal(dhdcr_cover(1000, 100, twice, 2, pieces), -1);
    struct dhdcr_read same[] = {{1000, 100}, {1000, 100}};
    assert_int_equal(dhdcr_cover(1000, 100, same, 2, pieces), -1);
    assert_int_equal(dhdcr_cover(1000, 0, one, 1, pieces), -1);
    assert_int_equal(dhdcr_cover(1000, 100, one, 0, pieces), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detect),
        cmocka_unit_test(test_tree),
        cmocka_unit_test(test_node_tree),
        cmocka_unit_test(test_cover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
