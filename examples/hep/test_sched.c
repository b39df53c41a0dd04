/*
 * test_sched.c: unit tests of the pure parts of the HEP runtime: Philox
 * against the known answers of Random123, the random-word numbering and
 * binning shared with the devices (hep_dev.h), dependency levels, weights,
 * orders, and the DS/DP checkpoint policy (sched.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "hep_dev.h"
#include "hep_sched.h"

#define BIT(i) ((uint64_t)1 << (i))

/* Random123's kat_vectors for philox4x32 with 10 rounds (Salmon et al.,
 * SC'11): counter, key, expected output. */
static void philox_known_answers(void **state)
{
    static const uint32_t kat[3][10] = {
        {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
        {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0x408f276d,
         0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
        {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0, 0xd16cfe09,
         0x94fdcceb, 0x5001e420, 0x24126ea1},
    };
    (void)state;
    for (int t = 0; t < 3; t++) {
        uint32_t out[4];
        hep_philox4x32(kat[t], kat[t] + 4, out);
        for (int j = 0; j < 4; j++)
            assert_int_equal(out[j], kat[t][6 + j]);
    }
}

static void random_words(void **state)
{
    (void)state;
    /* Word `use` is word use % 4 of block use / 4 of (event id, seed). */
    uint32_t ctr[4] = {7, 1, 2, 0x48455031u}, key[2] = {5, 0}, out[4];
    hep_philox4x32(ctr, key, out);
    uint64_t id = ((uint64_t)1 << 32) | 7;
    for (int j = 0; j < 4; j++)
        assert_int_equal(hep_random_word(5, id, 8 + j), out[j]);
    /* Different events, uses and seeds give different words. */
    assert_int_not_equal(hep_random_word(5, id, 0), hep_random_word(5, id + 1, 0));
    assert_int_not_equal(hep_random_word(5, id, 0), hep_random_word(5, id, 4));
    assert_int_not_equal(hep_random_word(5, id, 0), hep_random_word(6, id, 0));
    assert_true(hep_unit(0xffffffffu) < 1.0);
    assert_true(hep_unit(0) == 0.0);
}

static void bins(void **state)
{
    (void)state;
    double scale = 10 / (10.0 - 0.0);
    assert_int_equal(hep_bin(-0.5, 0.0, scale, 10), 0);
    assert_int_equal(hep_bin(0.0, 0.0, scale, 10), 1);
    assert_int_equal(hep_bin(9.99, 0.0, scale, 10), 10);
    assert_int_equal(hep_bin(10.0, 0.0, scale, 10), 11);
    assert_int_equal(hep_bin(0.0 / 0.0, 0.0, scale, 10), 0);
}

static void levels(void **state)
{
    (void)state;
    /* 0 <- 1 <- 2, 3 free, 4 <- {0, 3} */
    uint64_t deps[5] = {0, BIT(0), BIT(1), 0, BIT(0) | BIT(3)};
    unsigned lv[5];
    assert_int_equal(hep_levels(5, deps, lv), 3);
    assert_int_equal(lv[0], 0);
    assert_int_equal(lv[1], 1);
    assert_int_equal(lv[2], 2);
    assert_int_equal(lv[3], 0);
    assert_int_equal(lv[4], 1);
    uint64_t cycle[3] = {BIT(2), BIT(0), BIT(1)};
    assert_int_equal(hep_levels(3, cycle, lv), -1);
    uint64_t self[1] = {BIT(0)};
    assert_int_equal(hep_levels(1, self, lv), -1);
    assert_int_equal(hep_levels(0, deps, lv), 0);
}

static void weights(void **state)
{
    (void)state;
    struct hep_sample s[4] = {
        {1000, 100, 1.0, 0},  /* drops 90 %, 1 ms per event: the slowest */
        {1000, 900, 0.01, 0}, /* drops 10 %, fast */
        {100, 50, 0.05, 0},   /* drops 50 %, 0.5 ms per event */
        {0, 0, 0.0, 0},       /* never ran */
    };
    double w[4];
    hep_weights(4, s, 0.3, w);
    assert_true(w[0] > 0.7 * 0.1 + 0.3 * 1.0 - 1e-12 && w[0] < 0.7 * 0.1 + 0.3 + 1e-12);
    assert_true(w[1] > 0.7 * 0.9 + 0.3 * 0.01 - 1e-12 && w[1] < 0.7 * 0.9 + 0.3 * 0.01 + 1e-12);
    assert_true(w[2] > 0.7 * 0.5 + 0.3 * 0.5 - 1e-12 && w[2] < 0.7 * 0.5 + 0.3 * 0.5 + 1e-12);
    assert_true(w[3] == 1.0);
    /* The launch overhead (the least time per launch, 1 ms here) is left
     * out: b sees 10 events per 100 launches and costs nothing more, a does
     * real work. */
    struct hep_sample o[2] = {{1000, 500, 0.2, 100}, {10, 5, 0.1, 100}};
    double wo[2];
    hep_weights(2, o, 0.3, wo);
    assert_true(wo[0] > 0.65 - 1e-9 && wo[0] < 0.65 + 1e-9);
    assert_true(wo[1] > 0.35 - 1e-9 && wo[1] < 0.35 + 1e-9);
    /* Time alone (time_weight 1) puts the fast one lightest. */
    hep_weights(4, s, 1.0, w);
    assert_true(w[1] < w[2] && w[2] < w[0]);
}

static void orders(void **state)
{
    (void)state;
    uint64_t deps[5] = {0, BIT(0), BIT(1), 0, BIT(0) | BIT(3)};
    unsigned cur[5] = {0, 1, 2, 3, 4}, next[5];
    /* 2 is the lightest but must wait for 0 and 1. */
    double w[5] = {0.5, 0.4, 0.1, 0.9, 0.2};
    assert_int_equal(hep_order(5, deps, w, cur, next), 0);
    assert_true(hep_order_valid(5, deps, next));
    unsigned want[5] = {0, 1, 2, 3, 4};
    assert_memory_equal(next, want, sizeof(want));
    /* Without dependencies, the lightest first. */
    uint64_t none[5] = {0};
    assert_int_equal(hep_order(5, none, w, cur, next), 0);
    unsigned want2[5] = {2, 4, 1, 0, 3};
    assert_memory_equal(next, want2, sizeof(want2));
    /* Ties keep the current order. */
    double flat[5] = {0.5, 0.5, 0.5, 0.5, 0.5};
    unsigned cur2[5] = {4, 3, 2, 1, 0};
    assert_int_equal(hep_order(5, none, flat, cur2, next), 0);
    assert_memory_equal(next, cur2, sizeof(cur2));
    /* A heavy level-0 proposition may run after a light level-1 one. */
    uint64_t d2[3] = {0, BIT(0), 0};
    double w2[3] = {0.1, 0.2, 0.9};
    unsigned c3[3] = {2, 0, 1}, n3[3], want3[3] = {0, 1, 2};
    assert_int_equal(hep_order(3, d2, w2, c3, n3), 0);
    assert_memory_equal(n3, want3, sizeof(want3));
    /* Invalid orders are told apart. */
    unsigned bad[5] = {1, 0, 2, 3, 4}, dup[5] = {0, 0, 2, 3, 4};
    assert_false(hep_order_valid(5, deps, bad));
    assert_false(hep_order_valid(5, deps, dup));
    uint64_t cycle[2] = {BIT(1), BIT(0)};
    assert_int_equal(hep_order(2, cycle, w, cur, next), -1);
}

static void balance(void **state)
{
    (void)state;
    struct hep_balance b;
    hep_balance_init(&b, 8, 4);
    assert_int_equal(b.ds, 4);
    /* DP takes 3x longer per batch: 8 * 1 / (1 + 3) = 2 DS threads. */
    assert_int_equal(hep_balance_step(&b, 1.0, 3.0), -2);
    assert_int_equal(b.ds, 2);
    assert_int_equal(b.interval, 4);
    /* A second shift in a row halves the interval. */
    assert_int_equal(hep_balance_step(&b, 1.0, 15.0), -1);
    assert_int_equal(b.ds, 1);
    assert_int_equal(b.interval, 2);
    /* Never below one DS thread, nor above total - 1. */
    assert_int_equal(hep_balance_step(&b, 1.0, 1000.0), 0);
    assert_int_equal(b.ds, 1);
    /* Balanced (within 10 %): no shift; two in a row double the interval. */
    hep_balance_init(&b, 8, 4);
    assert_int_equal(hep_balance_step(&b, 1.0, 1.05), 0);
    assert_int_equal(b.interval, 4);
    assert_int_equal(hep_balance_step(&b, 1.0, 1.0), 0);
    assert_int_equal(b.interval, 8);
    /* DS slower: more DS threads, at most 7. */
    assert_int_equal(hep_balance_step(&b, 100.0, 1.0), 3);
    assert_int_equal(b.ds, 7);
    /* DP threads beyond the device slots count for nothing: with 2 slots,
     * 8 threads and DP 3x slower per batch, 6 go to DS (the 2 DP threads
     * still fill both slots). */
    hep_balance_init(&b, 8, 4);
    b.dp_cap = 2;
    assert_int_equal(hep_balance_step(&b, 1.0, 3.0), 2);
    assert_int_equal(b.ds, 6);
    /* ... and a cap that binds nothing changes nothing. */
    hep_balance_init(&b, 8, 4);
    b.dp_cap = 7;
    assert_int_equal(hep_balance_step(&b, 1.0, 3.0), -2);
    /* The interval stays within bounds. */
    hep_balance_init(&b, 4, 64);
    hep_balance_step(&b, 1.0, 1.0);
    hep_balance_step(&b, 1.0, 1.0);
    assert_int_equal(b.interval, 64);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(philox_known_answers), cmocka_unit_test(random_words),
        cmocka_unit_test(bins),                 cmocka_unit_test(levels),
        cmocka_unit_test(weights),              cmocka_unit_test(orders),
        cmocka_unit_test(balance),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
