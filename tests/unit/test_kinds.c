/*
 * test_kinds.c - the argument kinds the proxy sends with a new kernel, run
 * in-process on the real native OpenCL (PoCL here): one enum vocl_arg_kind
 * byte per argument after the count, for clCreateKernel and (after each
 * kernel's name) clCreateKernelsInProgram, read from the native argument
 * info, or VOCL_ARG_UNKNOWN where the native library has none.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "harness.h"

static const char *src =
    "#define GBUF global float *\n"
    "typedef struct { int a; float b; } pair;\n"
    "kernel void sig(GBUF g, constant int *c, read_only image2d_t im, sampler_t s,\n"
    "                local float *l, float4 f, pair p) { g[0] = c[0] + l[0]; }\n"
    "kernel void two(global int *y, int v) { y[0] = v; }\n";

static const uint8_t sig_kinds[] = {VOCL_ARG_BUFFER,  VOCL_ARG_BUFFER, VOCL_ARG_IMAGE,
                                    VOCL_ARG_SAMPLER, VOCL_ARG_LOCAL,  VOCL_ARG_VALUE,
                                    VOCL_ARG_VALUE};
static const uint8_t two_kinds[] = {VOCL_ARG_BUFFER, VOCL_ARG_VALUE};

/* Runs the request in *w (then freed), which must get a reply; its error code. */
static cl_int run_req(struct exec_session *s, struct vocl_wr *w, struct reply *rep)
{
    cl_int err = run(s, w, rep);
    assert_int_equal(rep->rc, 1);
    vocl_wr_free(w);
    return err;
}

static void begin_new(struct vocl_wr *w, unsigned op)
{
    vocl_wr_init(w);
    begin(w, op);
}

static void expect_ok(struct exec_session *s, struct vocl_wr *w)
{
    struct reply rep;
    assert_int_equal(run_req(s, w, &rep), CL_SUCCESS);
    vocl_wr_free(&rep.w);
}

/* A session with a context (id ctx) and the program of src built with
 * options (id ctx + 1). */
static void open_with_program(struct exec_session *s, uint64_t ctx, const char *options)
{
    struct vocl_wr w;
    session_open(s, 0);
    create_context(s, ctx);

    begin_new(&w, VOCL_OP_clCreateProgramWithSource);
    vocl_wr_u64(&w, ctx);
    vocl_wr_u32(&w, 1);
    vocl_wr_bytes(&w, src, strlen(src));
    vocl_wr_u64(&w, ctx + 1);
    expect_ok(s, &w);

    begin_new(&w, VOCL_OP_clBuildProgram);
    vocl_wr_u64(&w, ctx + 1);
    vocl_wr_u32(&w, 0);
    vocl_wr_str(&w, options);
    expect_ok(s, &w);
}

/* Reads a count and the kinds after it: each the expected one, or UNKNOWN
 * when may_be_unknown. */
static void expect_kinds(struct vocl_rd *r, const uint8_t *want, uint32_t n, bool may_be_unknown)
{
    assert_int_equal(vocl_rd_u32(r), n);
    for (uint32_t i = 0; i < n; i++) {
        uint8_t kind = vocl_rd_u8(r);
        if (!(may_be_unknown && kind == VOCL_ARG_UNKNOWN))
            assert_int_equal(kind, want[i]);
    }
    assert_false(r->fail);
}

static void create_kernel(struct exec_session *s, uint64_t prog, const char *name, uint64_t id,
                          struct reply *rep)
{
    struct vocl_wr w;
    begin_new(&w, VOCL_OP_clCreateKernel);
    vocl_wr_u64(&w, prog);
    vocl_wr_str(&w, name);
    vocl_wr_u64(&w, id);
    assert_int_equal(run_req(s, &w, rep), CL_SUCCESS);
}

/* With -cl-kernel-arg-info every argument has its kind. */
static void kinds_with_arg_info(void **state)
{
    struct exec_session s;
    struct reply rep;
    const uint64_t ctx = VOCL_ID_CLIENT_MIN;
    (void)state;
    open_with_program(&s, ctx, "-cl-kernel-arg-info");
    create_kernel(&s, ctx + 1, "sig", ctx + 2, &rep);
    expect_kinds(&rep.r, sig_kinds, sizeof(sig_kinds), false);
    assert_true(vocl_rd_done(&rep.r));
    vocl_wr_free(&rep.w);
    exec_session_end(&s);
}

/* Without, a library may keep no argument info (PoCL does not): UNKNOWN. */
static void kinds_without_arg_info(void **state)
{
    struct exec_session s;
    struct reply rep;
    const uint64_t ctx = VOCL_ID_CLIENT_MIN;
    (void)state;
    open_with_program(&s, ctx, NULL);
    create_kernel(&s, ctx + 1, "sig", ctx + 2, &rep);
    expect_kinds(&rep.r, sig_kinds, sizeof(sig_kinds), true);
    assert_true(vocl_rd_done(&rep.r));
    vocl_wr_free(&rep.w);
    exec_session_end(&s);
}

/* A failed creation has no arguments. */
static void no_kinds_for_a_failed_kernel(void **state)
{
    struct exec_session s;
    struct vocl_wr w;
    struct reply rep;
    const uint64_t ctx = VOCL_ID_CLIENT_MIN;
    (void)state;
    open_with_program(&s, ctx, "-cl-kernel-arg-info");
    begin_new(&w, VOCL_OP_clCreateKernel);
    vocl_wr_u64(&w, ctx + 1);
    vocl_wr_str(&w, "nope");
    vocl_wr_u64(&w, ctx + 2);
    assert_int_equal(run_req(&s, &w, &rep), CL_INVALID_KERNEL_NAME);
    assert_int_equal(vocl_rd_u32(&rep.r), 0);
    assert_true(vocl_rd_done(&rep.r));
    vocl_wr_free(&rep.w);
    exec_session_end(&s);
}

/* clCreateKernelsInProgram: per kernel its name, then as clCreateKernel. */
static void kinds_of_all_kernels(void **state)
{
    struct exec_session s;
    struct vocl_wr w;
    struct reply rep;
    const uint64_t ctx = VOCL_ID_CLIENT_MIN;
    (void)state;
    open_with_program(&s, ctx, "-cl-kernel-arg-info");
    begin_new(&w, VOCL_OP_clCreateKernelsInProgram);
    vocl_wr_u64(&w, ctx + 1);
    vocl_wr_u32(&w, 2);
    vocl_wr_u64(&w, ctx + 2);
    vocl_wr_u64(&w, ctx + 3);
    assert_int_equal(run_req(&s, &w, &rep), CL_SUCCESS);
    assert_int_equal(vocl_rd_u32(&rep.r), 2);
    bool seen_sig = false, seen_two = false;
    for (int i = 0; i < 2; i++) {
        size_t len;
        bool is_null;
        const char *name = vocl_rd_str(&rep.r, &len, &is_null);
        assert_false(rep.r.fail);
        if (len == 3 && !memcmp(name, "sig", 3)) {
            expect_kinds(&rep.r, sig_kinds, sizeof(sig_kinds), false);
            seen_sig = true;
        } else {
            assert_true(len == 3 && !memcmp(name, "two", 3));
            expect_kinds(&rep.r, two_kinds, sizeof(two_kinds), false);
            seen_two = true;
        }
    }
    assert_true(seen_sig && seen_two);
    assert_true(vocl_rd_done(&rep.r));
    vocl_wr_free(&rep.w);
    exec_session_end(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kinds_with_arg_info),
        cmocka_unit_test(kinds_without_arg_info),
        cmocka_unit_test(no_kinds_for_a_failed_kernel),
        cmocka_unit_test(kinds_of_all_kernels),
    };
    return cmocka_run_group_tests(tests, harness_setup, harness_teardown);
}
