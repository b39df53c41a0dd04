/*
 * test_map.c - the hash map behind libvocl's handle table and the proxy's
 * per-session object table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "map.h"

static void put_get_del(void **state)
{
    struct vocl_map m;
    int a, b;
    (void)state;
    vocl_map_init(&m);
    assert_null(vocl_map_get(&m, 42));
    assert_int_equal(vocl_map_put(&m, 42, &a), 0);
    assert_ptr_equal(vocl_map_get(&m, 42), &a);
    assert_int_equal(vocl_map_put(&m, 42, &b), 0); /* replaces */
    assert_ptr_equal(vocl_map_get(&m, 42), &b);
    assert_int_equal(m.count, 1);
    assert_ptr_equal(vocl_map_del(&m, 42), &b);
    assert_null(vocl_map_get(&m, 42));
    assert_null(vocl_map_del(&m, 42));
    assert_int_equal(m.count, 0);
    vocl_map_free(&m);
}

static void reserved_keys_refused(void **state)
{
    struct vocl_map m;
    int a;
    (void)state;
    vocl_map_init(&m);
    assert_int_equal(vocl_map_put(&m, 0, &a), -1);
    assert_int_equal(vocl_map_put(&m, VOCL_MAP_TOMB, &a), -1);
    assert_null(vocl_map_get(&m, 0));
    assert_null(vocl_map_get(&m, VOCL_MAP_TOMB));
    vocl_map_free(&m);
}

/* Many keys, many deletions: lookups stay right through growth and tombstones. */
static void churn(void **state)
{
    struct vocl_map m;
    (void)state;
    vocl_map_init(&m);
    enum { N = 20000 };
    for (uintptr_t k = 1; k <= N; k++)
        assert_int_equal(vocl_map_put(&m, k * 0x10000, (void *)k), 0);
    for (uintptr_t k = 1; k <= N; k += 2)
        assert_ptr_equal(vocl_map_del(&m, k * 0x10000), (void *)k);
    for (int round = 0; round < 5; round++)
        for (uintptr_t k = 1; k <= N; k += 2) {
            assert_int_equal(vocl_map_put(&m, k * 0x10000 + 1, (void *)k), 0);
            assert_ptr_equal(vocl_map_del(&m, k * 0x10000 + 1), (void *)k);
        }
    for (uintptr_t k = 1; k <= N; k++)
        assert_ptr_equal(vocl_map_get(&m, k * 0x10000), k % 2 ? NULL : (void *)k);
    assert_int_equal(m.count, N / 2);
    /* Tombstones are reclaimed: the table did not grow without bound. */
    assert_true(m.cap <= 4 * 65536);
    vocl_map_free(&m);
}

static void iterate_all(void **state)
{
    struct vocl_map m;
    (void)state;
    vocl_map_init(&m);
    uint64_t sum = 0, seen = 0;
    for (uintptr_t k = 1; k <= 100; k++) {
        vocl_map_put(&m, k, (void *)k);
        sum += k;
    }
    vocl_map_del(&m, 50);
    size_t pos = 0;
    uint64_t key;
    void *val;
    int n = 0;
    while (vocl_map_next(&m, &pos, &key, &val)) {
        assert_true(key == (uintptr_t)val);
        seen += key;
        n++;
    }
    assert_int_equal(n, 99);
    assert_true(seen == sum - 50);
    vocl_map_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(put_get_del),
        cmocka_unit_test(reserved_keys_refused),
        cmocka_unit_test(churn),
        cmocka_unit_test(iterate_all),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
