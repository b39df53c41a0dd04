/*
 * test_wire.c - the wire format: every field type round-trips, and a
 * truncated, oversized or malformed message is refused without reading past
 * its end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "vocl_api.h"
#include "wire.h"

static void round_trip_fields(void **state)
{
    struct vocl_wr w;
    struct vocl_rd r;
    struct vocl_msg_hdr h;
    (void)state;

    vocl_wr_init(&w);
    vocl_wr_begin(&w, 1234, VOCL_F_REPLY, 77);
    vocl_wr_u8(&w, 0xab);
    vocl_wr_u32(&w, 0xdeadbeef);
    vocl_wr_u64(&w, 0x0123456789abcdefull);
    vocl_wr_i32(&w, -5);
    vocl_wr_bytes(&w, "xyz", 3);
    vocl_wr_bytes(&w, NULL, 0);
    vocl_wr_str(&w, "hello");
    vocl_wr_str(&w, NULL);
    vocl_wr_str(&w, "");
    vocl_wr_finish(&w);
    assert_false(w.fail);

    assert_true(vocl_hdr_get(w.buf, w.len, &h));
    assert_int_equal(h.opcode, 1234);
    assert_int_equal(h.flags, VOCL_F_REPLY);
    assert_int_equal(h.seq, 77);
    assert_int_equal(h.length, w.len - VOCL_HDR_SIZE);

    vocl_rd_init(&r, w.buf + VOCL_HDR_SIZE, h.length);
    assert_int_equal(vocl_rd_u8(&r), 0xab);
    assert_int_equal(vocl_rd_u32(&r), 0xdeadbeef);
    assert_true(vocl_rd_u64(&r) == 0x0123456789abcdefull);
    assert_int_equal(vocl_rd_i32(&r), -5);
    size_t n;
    const char *b = vocl_rd_bytes(&r, &n);
    assert_int_equal(n, 3);
    assert_memory_equal(b, "xyz", 3);
    vocl_rd_bytes(&r, &n);
    assert_int_equal(n, 0);
    bool is_null;
    const char *s = vocl_rd_str(&r, &n, &is_null);
    assert_false(is_null);
    assert_int_equal(n, 5);
    assert_memory_equal(s, "hello", 5);
    vocl_rd_str(&r, &n, &is_null);
    assert_true(is_null);
    vocl_rd_str(&r, &n, &is_null);
    assert_false(is_null);
    assert_int_equal(n, 0);
    assert_true(vocl_rd_done(&r));
    vocl_wr_free(&w);
}

/* Little-endian, field by field, whatever the host. */
static void byte_order_is_fixed(void **state)
{
    struct vocl_wr w;
    (void)state;
    vocl_wr_init(&w);
    vocl_wr_u32(&w, 0x01020304);
    vocl_wr_u64(&w, 0x1122334455667788ull);
    const uint8_t want[] = {4, 3, 2, 1, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11};
    assert_int_equal(w.len, sizeof(want));
    assert_memory_equal(w.buf, want, sizeof(want));
    vocl_wr_free(&w);
}

/* A count patched in later lands where it was reserved, and only there. */
static void patched_count(void **state)
{
    struct vocl_wr w;
    (void)state;
    vocl_wr_init(&w);
    vocl_wr_u8(&w, 9);
    size_t at = w.len;
    vocl_wr_u32(&w, 0);
    vocl_wr_u64(&w, 7);
    vocl_wr_u32_at(&w, at, 0x0a0b0c0d);
    vocl_wr_u32_at(&w, w.len - 2, 0xffffffff); /* past the end: ignored */
    struct vocl_rd r;
    vocl_rd_init(&r, w.buf, w.len);
    assert_int_equal(vocl_rd_u8(&r), 9);
    assert_int_equal(vocl_rd_u32(&r), 0x0a0b0c0d);
    assert_int_equal(vocl_rd_u64(&r), 7);
    assert_false(r.fail);
    vocl_wr_free(&w);
}

/* Every prefix of a message fails cleanly and reads nothing beyond it. */
static void truncation_is_sticky(void **state)
{
    struct vocl_wr w;
    (void)state;
    vocl_wr_init(&w);
    vocl_wr_u32(&w, 7);
    vocl_wr_bytes(&w, "abcdefgh", 8);
    vocl_wr_u64(&w, 9);
    for (size_t cut = 0; cut < w.len; cut++) {
        uint8_t *copy = malloc(cut ? cut : 1); /* exact size: ASan sees any over-read */
        memcpy(copy, w.buf, cut);
        struct vocl_rd r;
        size_t n;
        vocl_rd_init(&r, copy, cut);
        vocl_rd_u32(&r);
        vocl_rd_bytes(&r, &n);
        uint64_t last = vocl_rd_u64(&r);
        assert_true(r.fail);
        assert_false(vocl_rd_done(&r));
        assert_true(last == 0 || cut == w.len);
        free(copy);
    }
    vocl_wr_free(&w);
}

/* A length field larger than what is left never becomes a read. */
static void oversized_lengths_fail(void **state)
{
    struct vocl_wr w;
    struct vocl_rd r;
    size_t n;
    bool is_null;
    (void)state;
    vocl_wr_init(&w);
    vocl_wr_u64(&w, 1000); /* claims 1000 bytes, has 2 */
    vocl_wr_u8(&w, 1);
    vocl_wr_u8(&w, 2);
    vocl_rd_init(&r, w.buf, w.len);
    assert_null(vocl_rd_bytes(&r, &n));
    assert_true(r.fail);
    vocl_rd_init(&r, w.buf, w.len);
    assert_null(vocl_rd_str(&r, &n, &is_null));
    assert_true(r.fail);
    /* The largest lengths, which would overflow pointer arithmetic. */
    vocl_wr_reset(&w);
    vocl_wr_u64(&w, UINT64_MAX - 1);
    vocl_rd_init(&r, w.buf, w.len);
    assert_null(vocl_rd_bytes(&r, &n));
    assert_true(r.fail);
    vocl_wr_free(&w);
}

static void headers_are_checked(void **state)
{
    struct vocl_wr w;
    struct vocl_msg_hdr h;
    (void)state;
    vocl_wr_init(&w);
    vocl_wr_begin(&w, 5, 0, 1);
    vocl_wr_u32(&w, 1);
    vocl_wr_finish(&w);
    assert_true(vocl_hdr_get(w.buf, w.len, &h));
    assert_false(vocl_hdr_get(w.buf, w.len - 1, &h)); /* length disagrees */
    assert_false(vocl_hdr_get(w.buf, 3, &h));         /* shorter than a header */
    w.buf[0] ^= 0xff;                                 /* bad magic */
    assert_false(vocl_hdr_get(w.buf, w.len, &h));
    vocl_wr_free(&w);
}

static void writer_refuses_huge_messages(void **state)
{
    struct vocl_wr w;
    (void)state;
    vocl_wr_init(&w);
    assert_null(vocl_wr_reserve(&w, (size_t)VOCL_MSG_MAX + 1));
    assert_true(w.fail);
    vocl_wr_u32(&w, 1); /* sticky: nothing more is written */
    assert_int_equal(w.len, 0);
    vocl_wr_free(&w);
}

/* A BATCH's requests come back out as they went in; what is left that is
 * not a whole request stops the walk where it starts. */
static void batches_walk_whole_requests(void **state)
{
    struct vocl_wr one, batch;
    struct vocl_msg_hdr h, in;
    (void)state;
    vocl_wr_init(&one);
    vocl_wr_init(&batch);
    for (uint32_t i = 1; i <= 3; i++) {
        vocl_wr_begin(&one, (uint16_t)(100 + i), i == 3 ? VOCL_F_REPLY : 0, i);
        for (uint32_t k = 0; k < i; k++)
            vocl_wr_u32(&one, k);
        vocl_wr_finish(&one);
        vocl_batch_add(&batch, &one);
    }
    vocl_wr_finish(&batch);
    assert_true(vocl_hdr_get(batch.buf, batch.len, &h));
    assert_int_equal(h.opcode, VOCL_OP_BATCH);
    const uint8_t *p = batch.buf + VOCL_HDR_SIZE, *end = batch.buf + batch.len, *msg;
    for (uint32_t i = 1; i <= 3; i++) {
        assert_true(vocl_batch_next(&p, end, &in, &msg));
        assert_int_equal(in.opcode, 100 + i);
        assert_int_equal(in.seq, i);
        assert_int_equal(in.length, 4 * i);
        assert_int_equal(in.flags, i == 3 ? VOCL_F_REPLY : 0);
    }
    assert_false(vocl_batch_next(&p, end, &in, &msg));
    assert_ptr_equal(p, end);
    /* Cut short, or its length past the end: no request. */
    p = batch.buf + VOCL_HDR_SIZE;
    assert_false(vocl_batch_next(&p, batch.buf + VOCL_HDR_SIZE + VOCL_HDR_SIZE + 3, &in, &msg));
    assert_ptr_equal(p, batch.buf + VOCL_HDR_SIZE);
    batch.buf[VOCL_HDR_SIZE + 8] = 0xff; /* the first one's length */
    assert_false(vocl_batch_next(&p, end, &in, &msg));
    vocl_wr_free(&one);
    vocl_wr_free(&batch);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip_fields),     cmocka_unit_test(byte_order_is_fixed),
        cmocka_unit_test(truncation_is_sticky),  cmocka_unit_test(oversized_lengths_fail),
        cmocka_unit_test(headers_are_checked),   cmocka_unit_test(writer_refuses_huge_messages),
        cmocka_unit_test(patched_count),         cmocka_unit_test(batches_walk_whole_requests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
