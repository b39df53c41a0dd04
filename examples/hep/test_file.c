/*
 * test_file.c: unit tests of the HEP events file (file.c): a round trip
 * across chunk boundaries with and without deflate, and every kind of bad
 * input failing with a message that names it, never a crash.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "hep.h"

#include <hdf5.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[] = "/tmp/hep-test-file-XXXXXX";
static char path[256];

static const struct hep_column cols[] = {
    {"a", HEP_F32, 3, false},
    {"b", HEP_I32, 1, false},
    {"d", HEP_F64, 1, true},
};

#define N 1000

static void write_file(const char *p, int deflate)
{
    char err[HEP_ERROR_SIZE];
    hep_file *f = hep_file_create(p, cols, 3, 64, deflate, err);
    assert_non_null(f);
    uint64_t ids[N];
    float a[N * 3];
    int32_t b[N];
    for (int i = 0; i < N; i++) {
        ids[i] = 5000 + (uint64_t)i * 7;
        b[i] = -i;
        for (int j = 0; j < 3; j++)
            a[i * 3 + j] = (float)i + 0.25f * (float)j;
    }
    void *data[2] = {a, b};
    /* Two appends, the first ending inside a chunk. */
    assert_int_equal(hep_file_append(f, 300, ids, data, err), 0);
    void *rest[2] = {a + 900, b + 300};
    assert_int_equal(hep_file_append(f, N - 300, ids + 300, rest, err), 0);
    assert_int_equal(hep_file_close(f, err), 0);
}

static void check_read(int deflate)
{
    char err[HEP_ERROR_SIZE];
    write_file(path, deflate);
    hep_file *f = hep_file_open(path, cols, 3, err);
    assert_non_null(f);
    assert_int_equal(hep_file_events(f), N);
    uint64_t ids[N];
    float a[N * 3];
    int32_t b[N];
    void *data[2] = {a, b};
    /* A range that starts and ends inside chunks. */
    assert_int_equal(hep_file_read(f, 37, 900, ids, data, err), 0);
    for (int i = 0; i < 900; i++) {
        assert_int_equal(ids[i], 5000 + (uint64_t)(i + 37) * 7);
        assert_int_equal(b[i], -(i + 37));
        assert_true(a[i * 3 + 2] == (float)(i + 37) + 0.5f);
    }
    assert_int_equal(hep_file_read(f, 990, 10, ids, data, err), 0);
    assert_int_equal(ids[9], 5000 + 999 * 7);
    assert_int_equal(hep_file_read(f, 995, 10, ids, data, err), -1);
    assert_non_null(strstr(err, "out of range"));
    assert_int_equal(hep_file_close(f, err), 0);
}

static void round_trip_deflate(void **state)
{
    (void)state;
    check_read(1);
}

static void round_trip_plain(void **state)
{
    (void)state;
    check_read(0);
}

static void expect_open_error(const char *p, const struct hep_column *c, size_t n,
                              const char *words)
{
    char err[HEP_ERROR_SIZE] = "";
    hep_file *f = hep_file_open(p, c, n, err);
    if (f)
        hep_file_close(f, NULL);
    assert_null(f);
    if (!strstr(err, words))
        fail_msg("error '%s' does not say '%s'", err, words);
}

static void missing_and_not_hdf5(void **state)
{
    (void)state;
    char p[300];
    snprintf(p, sizeof(p), "%s/none.h5", dir);
    expect_open_error(p, cols, 3, "cannot open");
    snprintf(p, sizeof(p), "%s/text.h5", dir);
    FILE *t = fopen(p, "w");
    fputs("not HDF5 at all\n", t);
    fclose(t);
    expect_open_error(p, cols, 3, "not an HDF5 file");
}

static void wrong_layout(void **state)
{
    (void)state;
    write_file(path, 1);
    const struct hep_column missing[] = {{"c", HEP_F32, 1, false}};
    expect_open_error(path, missing, 1, "no dataset /events/c");
    const struct hep_column width[] = {{"a", HEP_F32, 4, false}};
    expect_open_error(path, width, 1, "wrong shape");
    const struct hep_column type[] = {{"b", HEP_F32, 1, false}};
    expect_open_error(path, type, 1, "not float32");
    /* An HDF5 file without /events. */
    char p[300];
    snprintf(p, sizeof(p), "%s/empty.h5", dir);
    hid_t h = H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(h);
    expect_open_error(p, cols, 3, "no group /events");
}

static void truncated(void **state)
{
    (void)state;
    char err[HEP_ERROR_SIZE] = "";
    write_file(path, 1);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    assert_int_equal(truncate(path, size / 2), 0);
    hep_file *h = hep_file_open(path, cols, 3, err);
    if (h) {
        /* The header survived: reading the lost chunks must fail. */
        uint64_t ids[N];
        float a[N * 3];
        int32_t b[N];
        void *data[2] = {a, b};
        assert_int_equal(hep_file_read(h, 0, N, ids, data, err), -1);
        hep_file_close(h, NULL);
    }
    assert_true(strlen(err) > 0);
}

static void corrupt_chunk(void **state)
{
    (void)state;
    char err[HEP_ERROR_SIZE] = "";
    write_file(path, 1);
    /* Flip bytes in the middle of the file, where the chunks are. */
    FILE *f = fopen(path, "r+b");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    for (long at = size / 3; at < size - 64; at += 97) {
        fseek(f, at, SEEK_SET);
        fputc(0x5a, f);
    }
    fclose(f);
    hep_file *h = hep_file_open(path, cols, 3, err);
    if (h) {
        uint64_t ids[N];
        float a[N * 3];
        int32_t b[N];
        void *data[2] = {a, b};
        assert_int_equal(hep_file_read(h, 0, N, ids, data, err), -1);
        hep_file_close(h, NULL);
    }
    assert_true(strlen(err) > 0);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof(path), "%s/events.h5", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip_deflate), cmocka_unit_test(round_trip_plain),
        cmocka_unit_test(missing_and_not_hdf5), cmocka_unit_test(wrong_layout),
        cmocka_unit_test(truncated),          cmocka_unit_test(corrupt_chunk),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
