/*
 * test_link.c - how libvocl cuts a transfer into chunks and how many it
 * keeps in flight, from what it measured of the link (libvocl/linkmeter.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include <cmocka.h>

#include "linkmeter.h"

#define KiB (1ull << 10)
#define MiB (1ull << 20)

static struct vocl_chunking cut(uint64_t rtt_ns, uint64_t bps, size_t n, size_t max_chunk)
{
    struct vocl_link l;
    atomic_init(&l.rtt_ns, rtt_ns);
    atomic_init(&l.bps, bps);
    return vocl_link_chunking(&l, n, max_chunk);
}

/* Not measured yet: the staging buffer size, two in flight. */
static void unmeasured(void **state)
{
    (void)state;
    const size_t n[] = {100 * KiB, 1 * MiB, 16 * MiB, 64 * MiB};
    for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++) {
        struct vocl_chunking c = cut(0, 0, n[i], 4 * MiB);
        assert_int_equal(c.chunk, 4 * MiB);
        assert_int_equal(c.depth, 2);
    }
    /* Only one of the two known is as good as neither. */
    assert_int_equal(cut(30000, 0, 1 * MiB, 4 * MiB).chunk, 4 * MiB);
    assert_int_equal(cut(0, 3000000000u, 1 * MiB, 4 * MiB).chunk, 4 * MiB);
    assert_int_equal(cut(0, 0, 64 * MiB, 16 * KiB).chunk, 16 * KiB);
}

/* The harness's 25 Gbit/s link: 30 us, 2.5 GB/s, 75 KB in flight; a
 * chunk must be 16 times that (1.2 MB), rounded up: 2 MiB. */
static void fast_link(void **state)
{
    (void)state;
    const size_t n[] = {100 * KiB, 1 * MiB, 4 * MiB, 8 * MiB, 16 * MiB, 64 * MiB};
    const size_t chunk[] = {2 * MiB, 2 * MiB, 2 * MiB, 2 * MiB, 4 * MiB, 4 * MiB};
    for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++) {
        struct vocl_chunking c = cut(30000, 2500000000u, n[i], 4 * MiB);
        assert_int_equal(c.chunk, chunk[i]);
        assert_int_equal(c.depth, 2);
    }
}

/* A slow link, 1 Gbit/s and 100 us (12.5 KB in flight): 256 KiB chunks at least. */
static void slow_link(void **state)
{
    (void)state;
    const size_t n[] = {100 * KiB, 1 * MiB, 3 * MiB, 16 * MiB};
    const size_t chunk[] = {256 * KiB, 256 * KiB, 512 * KiB, 4 * MiB};
    for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++) {
        struct vocl_chunking c = cut(100000, 125000000u, n[i], 4 * MiB);
        assert_int_equal(c.chunk, chunk[i]);
        assert_int_equal(c.depth, 2);
    }
    /* A very short, slow link: never below 64 KiB. */
    assert_int_equal(cut(1000, 125000000u, 200 * KiB, 4 * MiB).chunk, 64 * KiB);
}

/* A long, fast link: 1 ms at 3 GB/s holds 3 MB. */
static void long_link(void **state)
{
    (void)state;
    struct vocl_chunking c = cut(1000000, 3000000000u, 1 * MiB, 4 * MiB);
    assert_int_equal(c.chunk, 4 * MiB); /* the largest, though above the transfer */
    assert_int_equal(c.depth, 2);
    /* With 1 MiB staging buffers, four chunks in flight cover the 3 MB. */
    c = cut(1000000, 3000000000u, 64 * MiB, 1 * MiB);
    assert_int_equal(c.chunk, 1 * MiB);
    assert_int_equal(c.depth, 4);
    assert_true(c.chunk * (c.depth - 1) >= 3000000);
    /* And never more in flight than the proxy takes. */
    c = cut(10000000, 10000000000u, 64 * MiB, 4 * MiB);
    assert_int_equal(c.depth, VOCL_LINK_DEPTH_MAX);
}

/* The round trip is the shortest seen; the bandwidth an average of large transfers. */
static void measuring(void **state)
{
    (void)state;
    struct vocl_link l;
    atomic_init(&l.rtt_ns, 0);
    atomic_init(&l.bps, 0);
    vocl_link_round_trip(&l, 50000);
    vocl_link_round_trip(&l, 30000);
    vocl_link_round_trip(&l, 40000);
    vocl_link_round_trip(&l, 0);
    assert_int_equal(atomic_load(&l.rtt_ns), 30000);
    vocl_link_transfer(&l, 512 * KiB, 1000); /* too small to say */
    assert_int_equal(atomic_load(&l.bps), 0);
    vocl_link_transfer(&l, 2000000, 1000000); /* 2 GB/s */
    assert_int_equal(atomic_load(&l.bps), 2000000000u);
    vocl_link_transfer(&l, 4000000, 1000000); /* 4 GB/s: a quarter of the way */
    assert_int_equal(atomic_load(&l.bps), 2500000000u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(unmeasured), cmocka_unit_test(fast_link), cmocka_unit_test(slow_link),
        cmocka_unit_test(long_link),  cmocka_unit_test(measuring),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
