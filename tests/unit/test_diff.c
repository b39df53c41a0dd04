/*
 * test_diff.c - the diffs that merge a buffer's writers on several proxies
 * (executor/diff.c): what one replica changed since its twin, patched
 * into another replica, must carry every change and nothing else, and a
 * malformed diff from the wire must be refused.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

static uint32_t seed = 12345;

static uint8_t rnd(void)
{
    seed = seed * 1103515245u + 12345u;
    return (uint8_t)(seed >> 16);
}

/* The runs of now against was, in a new block of *n bytes. */
static uint8_t *encode(const uint8_t *now, const uint8_t *was, size_t size, size_t *n,
                       size_t *changed)
{
    *n = exec_diff_encode(now, was, size, NULL, changed);
    uint8_t *d = malloc(*n ? *n : 1);
    assert_non_null(d);
    size_t again = 0;
    assert_int_equal(exec_diff_encode(now, was, size, d, &again), *n);
    assert_int_equal(again, *changed);
    assert_true(*n <= exec_diff_max(size));
    return d;
}

/* Two replicas of one base write disjoint parts (some bytes with the value
 * already there, some far apart, some adjacent to the other's); each one's
 * diff patched into the other gives the same merged buffer. */
static void disjoint_writers_merge(void **state)
{
    (void)state;
    for (size_t size = 1; size < 5000; size = size * 3 + 7) {
        uint8_t *base = malloc(size), *a = malloc(size), *b = malloc(size), *want = malloc(size);
        assert_true(base && a && b && want);
        for (size_t i = 0; i < size; i++)
            base[i] = rnd() & 3; /* small values: writes often leave a byte as it was */
        memcpy(a, base, size);
        memcpy(b, base, size);
        memcpy(want, base, size);
        size_t expect = 0;
        for (size_t i = 0; i < size; i++) {
            uint8_t r = rnd();
            if (r < 40) { /* a writes it */
                a[i] = want[i] = rnd() & 3;
                expect += a[i] != base[i];
            } else if (r < 80) { /* b writes it */
                b[i] = want[i] = rnd() & 3;
            }
        }
        size_t n, changed;
        uint8_t *d = encode(a, base, size, &n, &changed);
        assert_int_equal(changed, expect);
        assert_int_equal(exec_diff_apply(b, size, d, n), 0);
        assert_memory_equal(b, want, size);
        free(d);
        free(base), free(a), free(b), free(want);
    }
}

static void nothing_changed_is_empty(void **state)
{
    (void)state;
    uint8_t x[300], y[300];
    for (size_t i = 0; i < sizeof(x); i++)
        x[i] = y[i] = rnd();
    size_t changed = 1;
    assert_int_equal(exec_diff_encode(x, x, sizeof(x), NULL, &changed), 0);
    assert_int_equal(changed, 0);
    assert_int_equal(exec_diff_apply(y, sizeof(y), NULL, 0), 0);
    assert_memory_equal(x, y, sizeof(x));
}

/* The worst case for size: every other byte changed. */
static void worst_case_within_bound(void **state)
{
    (void)state;
    enum { SIZE = 4099 };
    static uint8_t was[SIZE], now[SIZE], out[SIZE];
    for (size_t i = 0; i < SIZE; i++)
        now[i] = (uint8_t)(was[i] + (i % 2 ? 0 : 1));
    size_t n, changed;
    uint8_t *d = encode(now, was, SIZE, &n, &changed);
    assert_int_equal(changed, (SIZE + 1) / 2);
    assert_true(n < SIZE); /* one run, a mask bit per byte */
    memcpy(out, was, SIZE);
    assert_int_equal(exec_diff_apply(out, SIZE, d, n), 0);
    assert_memory_equal(out, now, SIZE);
    free(d);
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* A run header, its mask and data: off, len, mask byte m, then k data bytes. */
static size_t run(uint8_t *p, uint64_t off, uint64_t len, uint8_t m, size_t k)
{
    put_u64(p, off);
    put_u64(p + 8, len);
    p[16] = m;
    memset(p + 17, 0xAB, k);
    return 17 + k;
}

static void malformed_runs_refused(void **state)
{
    (void)state;
    uint8_t buf[64] = {0}, d[64];
    size_t n = run(d, 10, 3, 0x5, 2); /* a good one: bytes 10 and 12 */
    assert_int_equal(exec_diff_apply(buf, sizeof(buf), d, n), 0);
    assert_int_equal(buf[10], 0xAB);
    assert_int_equal(buf[11], 0);
    assert_int_equal(buf[12], 0xAB);
    assert_int_equal(exec_diff_apply(buf, sizeof(buf), d, 15), -1);    /* short header */
    assert_int_equal(exec_diff_apply(buf, sizeof(buf), d, 16), -1);    /* no mask */
    assert_int_equal(exec_diff_apply(buf, sizeof(buf), d, n - 1), -1); /* data short */
    n = run(d, 10, 0, 0, 0);
    assert_int_equal(exec_diff_apply(buf, sizeof(buf), d, 16), -1); /* empty run */
    n = run(d, 62, 3, 0x7, 3);
    assert_int_equal(exec_diff_apply(buf, sizeof(buf), d, n), -1); /* past the end */
    n = run(d, UINT64_MAX - 1, 3, 0x7, 3);
    assert_int_equal(exec_diff_apply(buf, sizeof(buf), d, n), -1); /* wraps around */
    n = run(d, 0, UINT64_MAX, 0x7, 3);
    assert_int_equal(exec_diff_apply(buf, sizeof(buf), d, n), -1); /* huge length */
    n = run(d, 0, 8, 0xFF, 3);
    assert_int_equal(exec_diff_apply(buf, sizeof(buf), d, n), -1); /* mask wants 8 bytes */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(disjoint_writers_merge),
        cmocka_unit_test(nothing_changed_is_empty),
        cmocka_unit_test(worst_case_within_bound),
        cmocka_unit_test(malformed_runs_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
