/*
 * test_kernelparse.c - unit tests for the kernel-signature parser: one case
 * per construct it must understand, the malformed inputs it must survive,
 * and a fixed-seed mutation loop over real kernels.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kernelparse.h"

/* Every parse goes through a heap copy of exactly len bytes with no NUL
 * after it, so the sanitizers catch any read past the end. */
static int parse_exact(const char *src, size_t len, struct kp_program **out, char *err,
                       size_t errlen)
{
    char *buf = malloc(len ? len : 1);
    assert_non_null(buf);
    memcpy(buf, src, len);
    int rc = kp_parse(buf, len, out, err, errlen);
    free(buf);
    return rc;
}

static struct kp_program *parse_ok_n(const char *src, size_t len)
{
    struct kp_program *prog = NULL;
    char err[256] = "";
    int rc = parse_exact(src, len, &prog, err, sizeof(err));
    if (rc != KP_OK)
        print_error("unexpected parse error %d: %s\n", rc, err);
    assert_int_equal(rc, KP_OK);
    assert_non_null(prog);
    return prog;
}

static struct kp_program *parse_ok(const char *src)
{
    return parse_ok_n(src, strlen(src));
}

/* Expects failure with code, a message starting "line <line>:" and
 * containing needle. */
static void parse_fail_n(const char *src, size_t len, int code, unsigned line, const char *needle)
{
    struct kp_program *prog = (struct kp_program *)&prog; /* must be reset to NULL */
    char err[256] = "";
    int rc = parse_exact(src, len, &prog, err, sizeof(err));
    if (rc != code || !strstr(err, needle))
        print_error("got %d '%s', wanted %d with '%s'\n", rc, err, code, needle);
    assert_int_equal(rc, code);
    assert_null(prog);
    char prefix[32];
    snprintf(prefix, sizeof(prefix), "line %u:", line);
    if (strncmp(err, prefix, strlen(prefix)) != 0)
        print_error("message '%s' does not start with '%s'\n", err, prefix);
    assert_true(strncmp(err, prefix, strlen(prefix)) == 0);
    assert_non_null(strstr(err, needle));
    assert_null(strchr(err, '\n'));
}

static void parse_fail(const char *src, int code, unsigned line, const char *needle)
{
    parse_fail_n(src, strlen(src), code, line, needle);
}

static const struct kp_kernel *kernel(const struct kp_program *prog, const char *name,
                                      unsigned nargs)
{
    const struct kp_kernel *k = kp_find_kernel(prog, name);
    if (!k)
        print_error("kernel '%s' not found\n", name);
    assert_non_null(k);
    assert_int_equal(k->nargs, nargs);
    return k;
}

static void check_arg(const struct kp_kernel *k, unsigned i, const char *name, const char *type,
                      enum kp_arg_kind kind, enum kp_access access)
{
    assert_true(i < k->nargs);
    const struct kp_arg *a = &k->args[i];
    assert_string_equal(a->name, name);
    assert_string_equal(a->type_name, type);
    assert_string_equal(kp_arg_kind_name(a->kind), kp_arg_kind_name(kind));
    assert_string_equal(kp_access_name(a->access), kp_access_name(access));
}

static void check_quals(const struct kp_kernel *k, unsigned i, int c, int r, int v)
{
    assert_true(i < k->nargs);
    assert_int_equal(k->args[i].is_const, c);
    assert_int_equal(k->args[i].is_restrict, r);
    assert_int_equal(k->args[i].is_volatile, v);
}

#define NONE KP_ACCESS_NONE
#define RO   KP_ACCESS_READ_ONLY
#define WO   KP_ACCESS_WRITE_ONLY
#define RW   KP_ACCESS_READ_WRITE

static void test_basic(void **state)
{
    (void)state;
    struct kp_program *prog =
        parse_ok("__kernel void vecadd(__global const float *a, __global const float *b,\n"
                 "                     __global float *c, const unsigned int n)\n"
                 "{\n"
                 "    size_t i = get_global_id(0);\n"
                 "    if (i < n) c[i] = a[i] + b[i];\n"
                 "}\n");
    assert_int_equal(prog->nkernels, 1);
    const struct kp_kernel *k = kernel(prog, "vecadd", 4);
    assert_ptr_equal(k, &prog->kernels[0]);
    check_arg(k, 0, "a", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 1, "b", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 2, "c", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 3, "n", "unsigned int", KP_ARG_VALUE, NONE);
    check_quals(k, 0, 1, 0, 0);
    check_quals(k, 2, 0, 0, 0);
    check_quals(k, 3, 1, 0, 0);
    kp_free(prog);
}

static void test_address_spaces(void **state)
{
    (void)state;
    struct kp_program *prog = parse_ok(
        "kernel void plain(global float *g, constant int *c, local float *l, private int *p,\n"
        "                  generic int *q)\n"
        "{ }\n"
        "__kernel void under(__global float *g, __constant int *c, __local float *l,\n"
        "                    __private int *p, __generic int *q) { }\n"
        "kernel void after(float global *g, int __constant *c, float local *l) { }\n");
    static const char *const names[] = {"plain", "under"};
    for (int i = 0; i < 2; i++) {
        const struct kp_kernel *k = kernel(prog, names[i], 5);
        check_arg(k, 0, "g", "float", KP_ARG_GLOBAL_PTR, NONE);
        check_arg(k, 1, "c", "int", KP_ARG_CONSTANT_PTR, NONE);
        check_arg(k, 2, "l", "float", KP_ARG_LOCAL_PTR, NONE);
        check_arg(k, 3, "p", "int", KP_ARG_PRIVATE_PTR, NONE);
        check_arg(k, 4, "q", "int", KP_ARG_PRIVATE_PTR, NONE);
    }
    const struct kp_kernel *k = kernel(prog, "after", 3);
    check_arg(k, 0, "g", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 1, "c", "int", KP_ARG_CONSTANT_PTR, NONE);
    check_arg(k, 2, "l", "float", KP_ARG_LOCAL_PTR, NONE);
    kp_free(prog);
}

static void test_pointers_without_space(void **state)
{
    (void)state;
    struct kp_program *prog =
        parse_ok("kernel void f(float *p, int **pp, void *v, uchar4 *u, int global_count,\n"
                 "              int generic) { }\n");
    const struct kp_kernel *k = kernel(prog, "f", 6);
    check_arg(k, 0, "p", "float", KP_ARG_PRIVATE_PTR, NONE);
    check_arg(k, 1, "pp", "int", KP_ARG_PRIVATE_PTR, NONE);
    check_arg(k, 2, "v", "void", KP_ARG_PRIVATE_PTR, NONE);
    check_arg(k, 3, "u", "uchar4", KP_ARG_PRIVATE_PTR, NONE);
    check_arg(k, 4, "global_count", "int", KP_ARG_VALUE, NONE);
    /* OpenCL C 1.x code may still call something "generic". */
    check_arg(k, 5, "generic", "int", KP_ARG_VALUE, NONE);
    kp_free(prog);
}

static void test_comments(void **state)
{
    (void)state;
    struct kp_program *prog = parse_ok("// kernel void line_comment(global int *x) {}\n"
                                       "/* kernel void block_comment(global int *x) {}\n"
                                       "   still a comment { { { */\n"
                                       "kernel /* here */ void /**/ f( // the buffer\n"
                                       "    global /* space */ float * /* ptr */ x, /* a ) , b */\n"
                                       "    int n // count )\n"
                                       ") /* { */ {\n"
                                       "    // }\n"
                                       "    /* } */\n"
                                       "}\n"
                                       "kernel void g(int/**/a){}//end");
    assert_int_equal(prog->nkernels, 2);
    const struct kp_kernel *k = kernel(prog, "f", 2);
    check_arg(k, 0, "x", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 1, "n", "int", KP_ARG_VALUE, NONE);
    check_arg(kernel(prog, "g", 1), 0, "a", "int", KP_ARG_VALUE, NONE);
    assert_null(kp_find_kernel(prog, "line_comment"));
    assert_null(kp_find_kernel(prog, "block_comment"));
    kp_free(prog);
}

static void test_line_continuations(void **state)
{
    (void)state;
    struct kp_program *prog = parse_ok("#define GPTR(x) \\\n"
                                       "    __global float *x\n"
                                       "#define LONGTYPE \\\n"
                                       "    float4\n"
                                       "ker\\\nnel void sp\\\nlit(glo\\\nbal float *a,\\\n"
                                       "    LONGTYPE v, int n\\\r\n) {}\n"
                                       "// a comment that goes on \\\n"
                                       "kernel void hidden(int x) {}\n"
                                       "kernel void after(int x) {}\n");
    const struct kp_kernel *k = kernel(prog, "split", 3);
    check_arg(k, 0, "a", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 1, "v", "float4", KP_ARG_VALUE, NONE);
    check_arg(k, 2, "n", "int", KP_ARG_VALUE, NONE);
    assert_null(kp_find_kernel(prog, "hidden"));
    kernel(prog, "after", 1);
    kp_free(prog);

    /* Line numbers stay right after continued lines. */
    parse_fail("#define A \\\n  1 \\\n  2\n"
               "kernel void f(int @) {}\n",
               KP_ERR_SYNTAX, 4, "'@'");
}

static void test_strings_and_chars(void **state)
{
    (void)state;
    struct kp_program *prog =
        parse_ok("constant char msg[] = \"kernel void fake(global int *x) {\";\n"
                 "kernel void f(global char *out)\n"
                 "{\n"
                 "    printf(\"}}} \\\" { kernel void g() {\");\n"
                 "    char c = '}'; char d = '\\''; char e = '\"'; char q = '{';\n"
                 "    printf(\"%s\\\\\", \"{\");\n"
                 "}\n"
                 "kernel void h(int x) { }\n");
    assert_int_equal(prog->nkernels, 2);
    kernel(prog, "f", 1);
    kernel(prog, "h", 1);
    assert_null(kp_find_kernel(prog, "fake"));
    assert_null(kp_find_kernel(prog, "g"));
    kp_free(prog);

    /* An unterminated literal ends at its line, as in an "#error don't". */
    prog = parse_ok("#error don't do { this\n"
                    "#if 0\nIt's prose { with an apostrophe\n#endif\n"
                    "kernel void f(int x) {}\n");
    kernel(prog, "f", 1);
    kp_free(prog);
}

static void test_defines(void **state)
{
    (void)state;
    struct kp_program *prog = parse_ok(
        "#define REAL float\n"
        "#define REAL4 float4\n"
        "#define GLOBAL __global\n"
        "#define GMEM(t) __global t\n"
        "#define KERNEL __kernel __attribute__((reqd_work_group_size(64, 1, 1)))\n"
        "#define RESTRICT restrict\n"
        "#define CONST_GLOBAL const GLOBAL\n"
        "#define INPUT CONST_GLOBAL REAL *RESTRICT\n"
        "#define EMPTY\n"
        "#  define SPACED __local\n"
        "KERNEL void axpy(GLOBAL REAL *y, INPUT x, REAL a, REAL4 v, SPACED REAL *tmp EMPTY)\n"
        "{ }\n");
    const struct kp_kernel *k = kernel(prog, "axpy", 5);
    check_arg(k, 0, "y", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 1, "x", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_quals(k, 1, 1, 1, 0);
    check_arg(k, 2, "a", "float", KP_ARG_VALUE, NONE);
    check_arg(k, 3, "v", "float4", KP_ARG_VALUE, NONE);
    check_arg(k, 4, "tmp", "float", KP_ARG_LOCAL_PTR, NONE);
    kp_free(prog);

    /* A macro that names the kernel, and one whose body is the whole
     * signature start. */
    prog = parse_ok("#define NAME scale\n"
                    "#define BEGIN kernel void NAME (\n"
                    "BEGIN global float *p) {}\n");
    check_arg(kernel(prog, "scale", 1), 0, "p", "float", KP_ARG_GLOBAL_PTR, NONE);
    kp_free(prog);
}

static void test_macro_edge_cases(void **state)
{
    (void)state;
    struct kp_program *prog = parse_ok("#define SELF SELF\n"
                                       "#define PING PONG\n"
                                       "#define PONG PING\n"
                                       "#define F(x) x\n"
                                       "#define T int\n"
                                       "#undef T\n"
                                       "#define U int\n"
                                       "#define U float\n"
                                       "#define OBJ (x)\n"
                                       "kernel void f(SELF a, PING b, T c, U d) {}\n");
    const struct kp_kernel *k = kernel(prog, "f", 4);
    check_arg(k, 0, "a", "SELF", KP_ARG_VALUE, NONE);
    check_arg(k, 1, "b", "PING", KP_ARG_VALUE, NONE);
    check_arg(k, 2, "c", "T", KP_ARG_VALUE, NONE);
    check_arg(k, 3, "d", "float", KP_ARG_VALUE, NONE);
    kp_free(prog);

    /* Function-like macros are not expanded, so their use in a signature
     * is reported rather than guessed at. */
    parse_fail("#define ARG(t, n) __global t *n\n"
               "kernel void f(ARG(float, x)) {}\n",
               KP_ERR_SYNTAX, 2, "argument 1");
}

static void test_preprocessor_ignored(void **state)
{
    (void)state;
    struct kp_program *prog = parse_ok("#include \"common.h\"\n"
                                       "#include <kernel void fake(int).h>\n"
                                       "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
                                       "#pragma unroll\n"
                                       "  #  if __OPENCL_VERSION__ >= 200 && defined(kernel)\n"
                                       "#line 100 \"file.cl\"\n"
                                       "#\n"
                                       "#error \"{\"\n"
                                       "#warning (\n"
                                       "#endif\n"
                                       "#if defined(USE_DOUBLE)\n"
                                       "#define REAL double\n"
                                       "#else\n"
                                       "#define REAL float\n"
                                       "#endif\n"
                                       "#ifdef A\n"
                                       "kernel void in_if(global REAL *x) {}\n"
                                       "#elif B\n"
                                       "kernel void in_elif(global REAL *x) {}\n"
                                       "#else\n"
                                       "kernel void in_else(global REAL *x) {}\n"
                                       "#endif\n"
                                       "int x; # not a directive, just a stray '#'\n"
                                       "kernel void last(int y) {}\n");
    assert_int_equal(prog->nkernels, 4);
    assert_string_equal(prog->kernels[0].name, "in_if");
    assert_string_equal(prog->kernels[1].name, "in_elif");
    assert_string_equal(prog->kernels[2].name, "in_else");
    assert_string_equal(prog->kernels[3].name, "last");
    /* Conditions are not evaluated: the last #define of REAL wins. */
    check_arg(&prog->kernels[0], 0, "x", "float", KP_ARG_GLOBAL_PTR, NONE);
    kp_free(prog);
}

static void test_conditional_braces(void **state)
{
    (void)state;
    /* Both branches open a brace: only one of them counts. */
    struct kp_program *prog =
        parse_ok("#ifdef USE_A\n"
                 "float pick(float x) {\n"
                 "#else\n"
                 "float pick(float x, float y) {\n"
                 "#endif\n"
                 "    return x;\n"
                 "}\n"
                 "kernel void after1(global float *p) {}\n"
                 "kernel void g(global float *p)\n"
                 "{\n"
                 "#ifdef CHECK\n"
                 "    if (p) {\n"
                 "#endif\n"
                 "        p[0] = 1;\n"
                 "#ifdef CHECK\n"
                 "    }\n"
                 "#endif\n"
                 "}\n"
                 "#if A\n#if B\n#else\n#endif\n#elif C\n#endif\n#endif\n#else\n"
                 "kernel void after2(int x) {}\n");
    assert_int_equal(prog->nkernels, 3);
    kernel(prog, "after1", 1);
    kernel(prog, "g", 1);
    kernel(prog, "after2", 1);
    kp_free(prog);

    /* The same kernel head in two branches, one body. */
    prog = parse_ok("#ifdef USE_DOUBLE\n"
                    "kernel void k(global double *x) {\n"
                    "#else\n"
                    "kernel void k(global float *x) {\n"
                    "#endif\n"
                    "}\n"
                    "kernel void next(int y) {}\n");
    assert_int_equal(prog->nkernels, 2);
    check_arg(kernel(prog, "k", 1), 0, "x", "double", KP_ARG_GLOBAL_PTR, NONE);
    kernel(prog, "next", 1);
    kp_free(prog);
}

static void test_dead_code(void **state)
{
    (void)state;
    /* "#if 0" and "#if 1" are the one kind of condition worth evaluating:
     * they are how old versions of a kernel are switched off. */
    struct kp_program *prog = parse_ok("#if 0\n"
                                       "kernel void foo(global float *a, int n) { /* old */\n"
                                       "    { { { unbalanced, and 'quotes\n"
                                       "#define REAL double\n"
                                       "#endif\n"
                                       "#define REAL float\n"
                                       "kernel void foo(global REAL *a, global REAL *b, int n) {}\n"
                                       "#if 1\n"
                                       "kernel void live(int x) {\n"
                                       "#elif X\n"
                                       "kernel void dead_elif(int x) {\n"
                                       "#else\n"
                                       "kernel void dead(int x) {\n"
                                       "#endif\n"
                                       "}\n"
                                       "#if 0\n"
                                       "kernel void dead2(int x) {}\n"
                                       "#elif defined(X)\n"
                                       "kernel void elif_branch(int x) {}\n"
                                       "#else\n"
                                       "kernel void else_branch(int x) {}\n"
                                       "#endif\n"
                                       "#if 0\n"
                                       "#if 1\n"
                                       "kernel void nested_dead(int x) {}\n"
                                       "#else\n"
                                       "kernel void nested_dead2(int x) {}\n"
                                       "#endif\n"
                                       "#else\n"
                                       "kernel void after_nested(int x) {}\n"
                                       "#endif\n"
                                       "#if 10\n"
                                       "kernel void not_literal(int x) {}\n"
                                       "#endif\n");
    assert_int_equal(prog->nkernels, 6);
    const struct kp_kernel *k = kernel(prog, "foo", 3);
    check_arg(k, 1, "b", "float", KP_ARG_GLOBAL_PTR, NONE);
    kernel(prog, "live", 1);
    kernel(prog, "elif_branch", 1);
    kernel(prog, "else_branch", 1);
    kernel(prog, "after_nested", 1);
    kernel(prog, "not_literal", 1);
    kp_free(prog);

    /* Comments are still comments in dead code, and the input may end in it. */
    parse_fail("#if 0\n/* never ends\n#endif\n", KP_ERR_SYNTAX, 2, "unterminated comment");
    prog = parse_ok("kernel void f(int x) {}\n#if 0\nkernel void g(");
    assert_int_equal(prog->nkernels, 1);
    kp_free(prog);
}

static void test_keyword_macros_ignored(void **state)
{
    (void)state;
    /* Host-compiler shims: obeying them would hide every buffer argument. */
    struct kp_program *prog = parse_ok("#ifndef __OPENCL_VERSION__\n"
                                       "#define __kernel\n"
                                       "#define kernel\n"
                                       "#define __global\n"
                                       "#define global\n"
                                       "#define __local\n"
                                       "#define read_only\n"
                                       "#define image2d_t int\n"
                                       "#define sampler_t int\n"
                                       "#define pipe\n"
                                       "#endif\n"
                                       "#undef __global\n"
                                       "__kernel void f(__global float *a, global int *b,\n"
                                       "                read_only image2d_t img, sampler_t s,\n"
                                       "                __local int *l, pipe int p) {}\n");
    const struct kp_kernel *k = kernel(prog, "f", 6);
    check_arg(k, 0, "a", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 1, "b", "int", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 2, "img", "image2d_t", KP_ARG_IMAGE, RO);
    check_arg(k, 3, "s", "sampler_t", KP_ARG_SAMPLER, NONE);
    check_arg(k, 4, "l", "int", KP_ARG_LOCAL_PTR, NONE);
    check_arg(k, 5, "p", "int", KP_ARG_PIPE, RO);
    kp_free(prog);
}

static void test_attributes(void **state)
{
    (void)state;
    struct kp_program *prog =
        parse_ok("__attribute__((reqd_work_group_size(16, 16, 1))) __kernel void a(int x) {}\n"
                 "__kernel __attribute__((reqd_work_group_size(16,16,1))) void b(int x) {}\n"
                 "__kernel void __attribute__((vec_type_hint(float4))) c(int x) {}\n"
                 "kernel __attribute__((work_group_size_hint(8, 8, 1)))\n"
                 "       __attribute__ ((vec_type_hint(int)))\n"
                 "void d(global float *p __attribute__((aligned(16))),\n"
                 "       __attribute__((nosvm)) global int *q, int n __attribute__((unused)))\n"
                 "       __attribute__((always_inline))\n"
                 "{ }\n"
                 "kernel void e(int x) __attribute((noinline));\n"
                 "kernel void e(int x) {}\n"
                 "__kernel_exec(64, float4) void f(global float4 *v) {}\n");
    assert_int_equal(prog->nkernels, 6);
    static const char *const one_int[] = {"a", "b", "c", "e"};
    for (size_t i = 0; i < 4; i++)
        check_arg(kernel(prog, one_int[i], 1), 0, "x", "int", KP_ARG_VALUE, NONE);
    const struct kp_kernel *k = kernel(prog, "d", 3);
    check_arg(k, 0, "p", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 1, "q", "int", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 2, "n", "int", KP_ARG_VALUE, NONE);
    check_arg(kernel(prog, "f", 1), 0, "v", "float4", KP_ARG_GLOBAL_PTR, NONE);
    kp_free(prog);
}

static void test_qualifiers(void **state)
{
    (void)state;
    struct kp_program *prog =
        parse_ok("kernel void q(global const float * restrict a, global float * __restrict b,\n"
                 "              global float *__restrict__ c, volatile global int *d,\n"
                 "              global int * volatile e, global float * const f,\n"
                 "              const global float *g, __const int h, const float4 i,\n"
                 "              global const volatile int * restrict j, constant float *k) {}\n");
    const struct kp_kernel *k = kernel(prog, "q", 11);
    check_quals(k, 0, 1, 1, 0);
    check_quals(k, 1, 0, 1, 0);
    check_quals(k, 2, 0, 1, 0);
    check_quals(k, 3, 0, 0, 1);
    check_quals(k, 4, 0, 0, 0); /* the pointer is volatile, not the data */
    check_quals(k, 5, 0, 0, 0); /* likewise const */
    check_quals(k, 6, 1, 0, 0);
    check_quals(k, 7, 1, 0, 0);
    check_quals(k, 8, 1, 0, 0);
    check_quals(k, 9, 1, 1, 1);
    check_quals(k, 10, 0, 0, 0);
    check_arg(k, 0, "a", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 7, "h", "int", KP_ARG_VALUE, NONE);
    check_arg(k, 8, "i", "float4", KP_ARG_VALUE, NONE);
    check_arg(k, 10, "k", "float", KP_ARG_CONSTANT_PTR, NONE);
    kp_free(prog);
}

static void test_access_qualifiers(void **state)
{
    (void)state;
    struct kp_program *prog =
        parse_ok("kernel void img(read_only image2d_t a, __read_only image2d_t b,\n"
                 "                write_only image2d_t c, __write_only image2d_t d,\n"
                 "                read_write image2d_t e, __read_write image2d_t f,\n"
                 "                image2d_t g, image2d_t read_only h) {}\n");
    const struct kp_kernel *k = kernel(prog, "img", 8);
    check_arg(k, 0, "a", "image2d_t", KP_ARG_IMAGE, RO);
    check_arg(k, 1, "b", "image2d_t", KP_ARG_IMAGE, RO);
    check_arg(k, 2, "c", "image2d_t", KP_ARG_IMAGE, WO);
    check_arg(k, 3, "d", "image2d_t", KP_ARG_IMAGE, WO);
    check_arg(k, 4, "e", "image2d_t", KP_ARG_IMAGE, RW);
    check_arg(k, 5, "f", "image2d_t", KP_ARG_IMAGE, RW);
    check_arg(k, 6, "g", "image2d_t", KP_ARG_IMAGE, RO); /* the default */
    check_arg(k, 7, "h", "image2d_t", KP_ARG_IMAGE, RO);
    kp_free(prog);

    parse_fail("kernel void f(read_only write_only image2d_t a) {}", KP_ERR_SYNTAX, 1,
               "conflicting access qualifier");
}

static void test_image_types(void **state)
{
    (void)state;
    static const char *const types[] = {
        "image1d_t",
        "image1d_buffer_t",
        "image1d_array_t",
        "image2d_t",
        "image2d_array_t",
        "image2d_depth_t",
        "image2d_array_depth_t",
        "image2d_msaa_t",
        "image2d_array_msaa_t",
        "image2d_msaa_depth_t",
        "image2d_array_msaa_depth_t",
        "image3d_t",
    };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        char src[256];
        snprintf(src, sizeof(src), "kernel void f(write_only %s img, %s plain) {}", types[i],
                 types[i]);
        struct kp_program *prog = parse_ok(src);
        const struct kp_kernel *k = kernel(prog, "f", 2);
        check_arg(k, 0, "img", types[i], KP_ARG_IMAGE, WO);
        check_arg(k, 1, "plain", types[i], KP_ARG_IMAGE, RO);
        kp_free(prog);
    }
    /* Look-alikes are plain values. */
    struct kp_program *prog = parse_ok("kernel void f(image2d imgx, image4d_t y) {}");
    const struct kp_kernel *k = kernel(prog, "f", 2);
    check_arg(k, 0, "imgx", "image2d", KP_ARG_VALUE, NONE);
    check_arg(k, 1, "y", "image4d_t", KP_ARG_VALUE, NONE);
    kp_free(prog);
}

static void test_sampler_and_queue(void **state)
{
    (void)state;
    struct kp_program *prog = parse_ok(
        "constant sampler_t smp = CLK_NORMALIZED_COORDS_FALSE | CLK_FILTER_NEAREST;\n"
        "kernel void f(read_only image2d_t src, sampler_t s, queue_t q, global int *out) {\n"
        "    out[0] = read_imagei(src, smp, (int2)(0, 0)).x;\n"
        "}\n");
    const struct kp_kernel *k = kernel(prog, "f", 4);
    check_arg(k, 0, "src", "image2d_t", KP_ARG_IMAGE, RO);
    check_arg(k, 1, "s", "sampler_t", KP_ARG_SAMPLER, NONE);
    check_arg(k, 2, "q", "queue_t", KP_ARG_QUEUE, NONE);
    check_arg(k, 3, "out", "int", KP_ARG_GLOBAL_PTR, NONE);
    kp_free(prog);
}

static void test_pipes(void **state)
{
    (void)state;
    struct kp_program *prog = parse_ok(
        "struct pkt { int a; };\n"
        "kernel void prod(pipe int p, write_only pipe float4 q, __write_only pipe struct pkt r,\n"
        "                 read_only pipe uint s, __read_only pipe mytype_t t) {}\n"
        "kernel void old(global float *pipe, int pipe2) {}\n");
    const struct kp_kernel *k = kernel(prog, "prod", 5);
    check_arg(k, 0, "p", "int", KP_ARG_PIPE, RO);
    check_arg(k, 1, "q", "float4", KP_ARG_PIPE, WO);
    check_arg(k, 2, "r", "struct pkt", KP_ARG_PIPE, WO);
    check_arg(k, 3, "s", "uint", KP_ARG_PIPE, RO);
    check_arg(k, 4, "t", "mytype_t", KP_ARG_PIPE, RO);
    /* Before OpenCL C 2.0 "pipe" was an ordinary name. */
    k = kernel(prog, "old", 2);
    check_arg(k, 0, "pipe", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 1, "pipe2", "int", KP_ARG_VALUE, NONE);
    kp_free(prog);
}

static void test_vectors_and_scalars(void **state)
{
    (void)state;
    struct kp_program *prog =
        parse_ok("kernel void v(float4 a, uchar16 b, double3 c, int2 d, global float4 *e,\n"
                 "              constant uchar16 *f, half h, bool b2, size_t s, uint u,\n"
                 "              unsigned u2, unsigned long long ull, signed char sc,\n"
                 "              long double ld, short int si, ptrdiff_t pd) {}\n");
    const struct kp_kernel *k = kernel(prog, "v", 16);
    check_arg(k, 0, "a", "float4", KP_ARG_VALUE, NONE);
    check_arg(k, 1, "b", "uchar16", KP_ARG_VALUE, NONE);
    check_arg(k, 2, "c", "double3", KP_ARG_VALUE, NONE);
    check_arg(k, 3, "d", "int2", KP_ARG_VALUE, NONE);
    check_arg(k, 4, "e", "float4", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 5, "f", "uchar16", KP_ARG_CONSTANT_PTR, NONE);
    check_arg(k, 6, "h", "half", KP_ARG_VALUE, NONE);
    check_arg(k, 7, "b2", "bool", KP_ARG_VALUE, NONE);
    check_arg(k, 8, "s", "size_t", KP_ARG_VALUE, NONE);
    check_arg(k, 9, "u", "uint", KP_ARG_VALUE, NONE);
    check_arg(k, 10, "u2", "unsigned", KP_ARG_VALUE, NONE);
    check_arg(k, 11, "ull", "unsigned long long", KP_ARG_VALUE, NONE);
    check_arg(k, 12, "sc", "signed char", KP_ARG_VALUE, NONE);
    check_arg(k, 13, "ld", "long double", KP_ARG_VALUE, NONE);
    check_arg(k, 14, "si", "short int", KP_ARG_VALUE, NONE);
    check_arg(k, 15, "pd", "ptrdiff_t", KP_ARG_VALUE, NONE);
    kp_free(prog);

    parse_fail("kernel void f(uint int x) {}", KP_ERR_SYNTAX, 1, "unexpected 'int'");
}

static void test_structs_unions_enums(void **state)
{
    (void)state;
    struct kp_program *prog =
        parse_ok("struct foo { float x; int kernel_like; };\n"
                 "union bar { int i; float f; };\n"
                 "enum mode { A, B };\n"
                 "kernel void s(struct foo s, union bar u, enum mode m, global struct foo *ps,\n"
                 "              const struct foo cs, local union bar *lu) {}\n");
    const struct kp_kernel *k = kernel(prog, "s", 6);
    check_arg(k, 0, "s", "struct foo", KP_ARG_VALUE, NONE);
    check_arg(k, 1, "u", "union bar", KP_ARG_VALUE, NONE);
    check_arg(k, 2, "m", "enum mode", KP_ARG_VALUE, NONE);
    check_arg(k, 3, "ps", "struct foo", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 4, "cs", "struct foo", KP_ARG_VALUE, NONE);
    check_quals(k, 4, 1, 0, 0);
    check_arg(k, 5, "lu", "union bar", KP_ARG_LOCAL_PTR, NONE);
    kp_free(prog);

    parse_fail("kernel void f(struct) {}", KP_ERR_SYNTAX, 1, "expected a tag");
}

static void test_typedefs(void **state)
{
    (void)state;
    struct kp_program *prog =
        parse_ok("typedef struct { float x, y; int kernel_id; } particle_t;\n"
                 "typedef struct node { struct node *next; } node_t, *node_ptr;\n"
                 "typedef float real;\n"
                 "typedef real real2;\n"
                 "typedef __global float *gptr;\n"
                 "typedef __local float lfloat;\n"
                 "typedef image2d_t img_t;\n"
                 "typedef void (*fn_t)(int);\n"
                 "typedef enum { RED, GREEN } color_t;\n"
                 "kernel void t(particle_t p, global particle_t *ps, real r, real2 r2, gptr g,\n"
                 "              lfloat *l, write_only img_t im, img_t im2, node_t n, node_ptr np,\n"
                 "              color_t c, fn_t f) {}\n");
    const struct kp_kernel *k = kernel(prog, "t", 12);
    check_arg(k, 0, "p", "particle_t", KP_ARG_VALUE, NONE);
    check_arg(k, 1, "ps", "particle_t", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 2, "r", "real", KP_ARG_VALUE, NONE);
    check_arg(k, 3, "r2", "real2", KP_ARG_VALUE, NONE);
    check_arg(k, 4, "g", "gptr", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 5, "l", "lfloat", KP_ARG_LOCAL_PTR, NONE);
    check_arg(k, 6, "im", "img_t", KP_ARG_IMAGE, WO);
    check_arg(k, 7, "im2", "img_t", KP_ARG_IMAGE, RO);
    check_arg(k, 8, "n", "node_t", KP_ARG_VALUE, NONE);
    /* Only the first declarator of a typedef is recorded. */
    check_arg(k, 9, "np", "node_ptr", KP_ARG_VALUE, NONE);
    check_arg(k, 10, "c", "color_t", KP_ARG_VALUE, NONE);
    check_arg(k, 11, "f", "fn_t", KP_ARG_VALUE, NONE);
    assert_int_equal(prog->nkernels, 1);
    kp_free(prog);

    /* A typedef inside a function is not at top level and changes nothing;
     * a typedef missing its ';' does not swallow the next kernel. */
    prog = parse_ok("void helper(void) { typedef global int *gi; }\n"
                    "typedef int broken\n"
                    "kernel void k(gi x, broken y) {}\n");
    const struct kp_kernel *k2 = kernel(prog, "k", 2);
    check_arg(k2, 0, "x", "gi", KP_ARG_VALUE, NONE);
    check_arg(k2, 1, "y", "broken", KP_ARG_VALUE, NONE);
    kp_free(prog);
}

static void test_arrays(void **state)
{
    (void)state;
    struct kp_program *prog = parse_ok("kernel void a(int x[4], global float y[], int z[2][3]) {}");
    const struct kp_kernel *k = kernel(prog, "a", 3);
    check_arg(k, 0, "x", "int", KP_ARG_PRIVATE_PTR, NONE);
    check_arg(k, 1, "y", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 2, "z", "int", KP_ARG_PRIVATE_PTR, NONE);
    kp_free(prog);
}

static void test_several_kernels_and_helpers(void **state)
{
    (void)state;
    struct kp_program *prog =
        parse_ok("float square(float x) { return x * x; }\n"
                 "static inline int helper(global int *p, local int *q) { return p[0] + q[0]; }\n"
                 "kernel void first(global float *a) { a[0] = square(a[0]); }\n"
                 "void not_a_kernel(global float *b);\n"
                 "__kernel void second(global int *b, local int *c) { b[0] = helper(b, c); }\n"
                 "int more(int kernel_arg) { return kernel_arg; }\n"
                 "kernel void third(int n) {\n"
                 "    struct { int kernel; } s;\n" /* not valid OpenCL C, but not top level */
                 "}\n");
    assert_int_equal(prog->nkernels, 3);
    assert_string_equal(prog->kernels[0].name, "first");
    assert_string_equal(prog->kernels[1].name, "second");
    assert_string_equal(prog->kernels[2].name, "third");
    check_arg(kernel(prog, "second", 2), 1, "c", "int", KP_ARG_LOCAL_PTR, NONE);
    assert_null(kp_find_kernel(prog, "square"));
    assert_null(kp_find_kernel(prog, "helper"));
    assert_null(kp_find_kernel(prog, "not_a_kernel"));
    kp_free(prog);
}

static void test_prototypes(void **state)
{
    (void)state;
    struct kp_program *prog = parse_ok("kernel void later(global float *, int);\n"
                                       "kernel void only_declared(global int *x);\n"
                                       "kernel void later(global float *, int);\n"
                                       "kernel void twice(int a) {}\n"
                                       "kernel void later(global float *data, int n) { }\n"
                                       "kernel void later(global float *ignored, int m);\n"
                                       "kernel void twice(int b) {}\n");
    assert_int_equal(prog->nkernels, 3);
    assert_string_equal(prog->kernels[0].name, "later");
    assert_string_equal(prog->kernels[1].name, "only_declared");
    assert_string_equal(prog->kernels[2].name, "twice");
    const struct kp_kernel *k = kernel(prog, "later", 2);
    check_arg(k, 0, "data", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 1, "n", "int", KP_ARG_VALUE, NONE);
    check_arg(kernel(prog, "only_declared", 1), 0, "x", "int", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(kernel(prog, "twice", 1), 0, "a", "int", KP_ARG_VALUE, NONE);
    kp_free(prog);

    /* A prototype alone keeps its unnamed arguments. */
    prog = parse_ok("kernel void p(global float *, constant int *c, local float *);");
    k = kernel(prog, "p", 3);
    check_arg(k, 0, "", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 1, "c", "int", KP_ARG_CONSTANT_PTR, NONE);
    check_arg(k, 2, "", "float", KP_ARG_LOCAL_PTR, NONE);
    kp_free(prog);
}

static void test_void_and_empty(void **state)
{
    (void)state;
    struct kp_program *prog = parse_ok("kernel void a(void) {}\n"
                                       "kernel void b() {}\n"
                                       "kernel void c( void ) {}\n"
                                       "kernel void d(void *p) {}\n");
    assert_int_equal(kernel(prog, "a", 0)->args == NULL, 1);
    kernel(prog, "b", 0);
    kernel(prog, "c", 0);
    check_arg(kernel(prog, "d", 1), 0, "p", "void", KP_ARG_PRIVATE_PTR, NONE);
    kp_free(prog);

    prog = parse_ok("");
    assert_int_equal(prog->nkernels, 0);
    kp_free(prog);
    prog = parse_ok("float f(void) { return 1.0f; }\n");
    assert_int_equal(prog->nkernels, 0);
    kp_free(prog);
}

static void test_spellings_and_layout(void **state)
{
    (void)state;
    struct kp_program *prog =
        parse_ok("__kernel\nvoid\nk1\n(\n__global\nfloat\n*\nx\n,\nint\nn\n)\n{\n}\n"
                 "kernel void k2(global float *x) {}\r\n"
                 "kernel void\r\n  k3(global float *x,\r\n     int n)\r\n{\r\n}\r\n"
                 "\tkernel\tvoid\tk4(\tglobal\tfloat*x){}");
    assert_int_equal(prog->nkernels, 4);
    check_arg(kernel(prog, "k1", 2), 1, "n", "int", KP_ARG_VALUE, NONE);
    check_arg(kernel(prog, "k2", 1), 0, "x", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(kernel(prog, "k3", 2), 1, "n", "int", KP_ARG_VALUE, NONE);
    check_arg(kernel(prog, "k4", 1), 0, "x", "float", KP_ARG_GLOBAL_PTR, NONE);
    kp_free(prog);
}

static void test_length_is_respected(void **state)
{
    (void)state;
    const char *src = "kernel void f(int a) {}\nkernel void g(int b) {}\n";
    size_t cut = strlen("kernel void f(int a) {}\n");
    struct kp_program *prog = parse_ok_n(src, cut);
    assert_int_equal(prog->nkernels, 1);
    kp_free(prog);

    /* Cut in the middle of an identifier, a comment, a string. */
    prog = parse_ok_n("kernel void f(int a) {} kernel_xyz", strlen("kernel void f(int a) {} kern"));
    assert_int_equal(prog->nkernels, 1);
    kp_free(prog);
    parse_fail_n("kernel void f(int a) {} /* x */", strlen("kernel void f(int a) {} /* x *"),
                 KP_ERR_SYNTAX, 1, "unterminated comment");
    parse_fail_n("kernel void f(int a) { \"abc\" }", strlen("kernel void f(int a) { \"ab"),
                 KP_ERR_SYNTAX, 1, "never closed");
}

static void test_nul_bytes_and_garbage(void **state)
{
    (void)state;
    static const char with_nul[] = "kernel void f(global float *a,\0 int\0b) {\0}\0\0";
    struct kp_program *prog = parse_ok_n(with_nul, sizeof(with_nul) - 1);
    const struct kp_kernel *k = kernel(prog, "f", 2);
    check_arg(k, 0, "a", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 1, "b", "int", KP_ARG_VALUE, NONE);
    kp_free(prog);

    /* Garbage outside signatures is skipped, inside one it is reported. */
    prog = parse_ok("\x01\x02\xff\xfe @@@ ` \x7f\n kernel void f(int a) {\x80\x81}\n");
    kernel(prog, "f", 1);
    kp_free(prog);
    parse_fail("kernel void f(int \x01 a) {}", KP_ERR_SYNTAX, 1, "byte 0x01");
    parse_fail("\n\nkernel void f(int @a) {}", KP_ERR_SYNTAX, 3, "'@'");
    parse_fail("kernel void f(\"str\" a) {}", KP_ERR_SYNTAX, 1, "string literal");

    /* A UTF-8 byte-order mark does not hide a first-line directive. */
    prog = parse_ok("\xef\xbb\xbf#define T float\nkernel void f(global T *a) {}\n");
    check_arg(kernel(prog, "f", 1), 0, "a", "float", KP_ARG_GLOBAL_PTR, NONE);
    kp_free(prog);
}

static void test_malformed_parens(void **state)
{
    (void)state;
    parse_fail("kernel void f(global float *a {\n}\n", KP_ERR_SYNTAX, 1, "unexpected '{'");
    parse_fail("kernel void f(int a)) {}\n", KP_ERR_SYNTAX, 1, "expected '{' or ';'");
    parse_fail("kernel void f(int a];\n", KP_ERR_SYNTAX, 1, "unbalanced ']'");
    parse_fail("kernel void f(int a[4) {}\n", KP_ERR_SYNTAX, 1, "unexpected '{'");
    parse_fail("kernel __attribute__((reqd_work_group_size(1,1,1)) void f(int a) {}", KP_ERR_SYNTAX,
               1, "in '__attribute__(...)'");
    parse_fail("kernel __attribute__ void f(int a) {}", KP_ERR_SYNTAX, 1, "expected '('");
    parse_fail("kernel void f(int a __attribute__) {}", KP_ERR_SYNTAX, 1, "expected '(' after");
    parse_fail("\nkernel void (int a) {}", KP_ERR_SYNTAX, 2, "expected a kernel name");
    parse_fail("kernel void f int a) {}", KP_ERR_SYNTAX, 1, "expected a kernel name and '('");
    parse_fail("kernel;", KP_ERR_SYNTAX, 1, "found ';'");
}

static void test_malformed_arguments(void **state)
{
    (void)state;
    parse_fail("kernel void f(int a,) {}", KP_ERR_SYNTAX, 1, "argument 2 is empty");
    parse_fail("kernel void f(, int a) {}", KP_ERR_SYNTAX, 1, "argument 1 is empty");
    parse_fail("kernel void f(int a, , int b) {}", KP_ERR_SYNTAX, 1, "argument 2 is empty");
    parse_fail("kernel void f(int a b) {}", KP_ERR_SYNTAX, 1, "argument 1: unexpected 'b'");
    parse_fail("kernel void f(int a, ...) {}", KP_ERR_SYNTAX, 1, "argument 2: unexpected '.'");
    parse_fail("kernel void f(global local float *a) {}", KP_ERR_SYNTAX, 1,
               "conflicting address space 'local'");
    parse_fail("kernel void f(const) {}", KP_ERR_SYNTAX, 1, "expected a type");
    parse_fail("kernel void f(*p) {}", KP_ERR_SYNTAX, 1, "unexpected '*'");
    parse_fail("kernel void f(int a *b) {}", KP_ERR_SYNTAX, 1, "unexpected '*'");
    parse_fail("kernel void f(int (*fp)(int)) {}", KP_ERR_SYNTAX, 1, "unexpected '('");
    parse_fail("kernel void f(kernel int a) {}", KP_ERR_SYNTAX, 1, "unexpected 'kernel'");
    parse_fail("kernel void f(int a; int b) {}", KP_ERR_SYNTAX, 1, "unexpected ';'");
    parse_fail("kernel void f(int a, void) {}", KP_ERR_SYNTAX, 1,
               "'void' must be the only argument");
}

static void test_malformed_structure(void **state)
{
    (void)state;
    parse_fail("kernel void f(global float *a", KP_ERR_SYNTAX, 1, "end of input");
    parse_fail("kernel void f", KP_ERR_SYNTAX, 1, "found end of input");
    parse_fail("kernel", KP_ERR_SYNTAX, 1, "end of input");
    parse_fail("kernel void f(int a)", KP_ERR_SYNTAX, 1, "found end of input");
    parse_fail("kernel void f(int a) {\n  if (a) {\n", KP_ERR_SYNTAX, 1, "never closed");
    parse_fail("int x;\n}\nkernel void f(int a) {}", KP_ERR_SYNTAX, 2, "'}' without");
    parse_fail("kernel void f(int a) {}\n/* never\nends", KP_ERR_SYNTAX, 2, "unterminated comment");
    parse_fail("#define X /* never\nends", KP_ERR_SYNTAX, 1, "unterminated comment");
    parse_fail("kernel void f(int a) /", KP_ERR_SYNTAX, 1, "found '/'");
}

static void test_limits(void **state)
{
    (void)state;
    size_t big = 200000;
    char *src = malloc(big + 256);
    assert_non_null(src);
    if (!src)
        return; /* (tells the compiler too) */

    /* An enormous kernel name, argument name and type name. */
    int n = sprintf(src, "kernel void ");
    memset(src + n, 'k', big);
    strcpy(src + n + big, "(int a) {}");
    parse_fail(src, KP_ERR_LIMIT, 1, "kernel name longer");
    n = sprintf(src, "kernel void f(int ");
    memset(src + n, 'a', big);
    strcpy(src + n + big, ") {}");
    parse_fail(src, KP_ERR_LIMIT, 1, "name too long");
    n = sprintf(src, "kernel void f(");
    memset(src + n, 't', big);
    strcpy(src + n + big, " a) {}");
    parse_fail(src, KP_ERR_LIMIT, 1, "type name too long");
    n = sprintf(src, "kernel void f(unsigned unsigned ");
    for (int i = 0; i < 300; i++)
        n += sprintf(src + n, "long ");
    strcpy(src + n, "a) {}");
    parse_fail(src, KP_ERR_LIMIT, 1, "type name too long");

    /* An enormous identifier where nothing is kept is fine. */
    n = sprintf(src, "kernel void f(int a) { int ");
    memset(src + n, 'x', big);
    strcpy(src + n + big, "; }");
    struct kp_program *prog = parse_ok(src);
    kernel(prog, "f", 1);
    kp_free(prog);

    /* Deep nesting of braces and parentheses. */
    memset(src, '{', 100000);
    src[100000] = '\0';
    parse_fail(src, KP_ERR_LIMIT, 1, "braces nested");
    n = sprintf(src, "kernel void f(int a[");
    memset(src + n, '(', 100000);
    src[n + 100000] = '\0';
    parse_fail(src, KP_ERR_LIMIT, 1, "parentheses nested");
    n = sprintf(src, "kernel __attribute__(");
    memset(src + n, '(', 100000);
    src[n + 100000] = '\0';
    parse_fail(src, KP_ERR_LIMIT, 1, "parentheses nested");
    free(src);

    /* Too many arguments. */
    size_t cap = 2000 * 16 + 64;
    src = malloc(cap);
    assert_non_null(src);
    n = sprintf(src, "kernel void f(");
    for (int i = 0; i < 2000; i++)
        n += sprintf(src + n, "%sint a%d", i ? "," : "", i);
    strcpy(src + n, ") {}");
    parse_fail(src, KP_ERR_LIMIT, 1, "more than 1024 arguments");
    free(src);

    /* Macros that would expand to 2^40 tokens, and a chain too deep. */
    src = malloc(8192);
    assert_non_null(src);
    n = sprintf(src, "#define M0 int\n");
    for (int i = 1; i <= 40; i++)
        n += sprintf(src + n, "#define M%d M%d M%d\n", i, i - 1, i - 1);
    strcpy(src + n, "kernel void f(M40 a) {}\n");
    parse_fail(src, KP_ERR_LIMIT, 42, "macro expansion too large");
    n = 0;
    for (int i = 0; i < 200; i++)
        n += sprintf(src + n, "#define C%d C%d\n", i, i + 1);
    strcpy(src + n, "kernel void f(C0 a) {}\n");
    parse_fail(src, KP_ERR_LIMIT, 201, "macros nested");
    free(src);
}

static void test_error_buffer(void **state)
{
    (void)state;
    const char *bad = "kernel void f(int a b) {}";
    struct kp_program *prog;
    assert_int_equal(kp_parse(bad, strlen(bad), &prog, NULL, 0), KP_ERR_SYNTAX);
    assert_null(prog);
    char err[8];
    memset(err, 'x', sizeof(err));
    assert_int_equal(kp_parse(bad, strlen(bad), &prog, err, 0), KP_ERR_SYNTAX);
    assert_int_equal(err[0], 'x');
    assert_int_equal(kp_parse(bad, strlen(bad), &prog, err, 5), KP_ERR_SYNTAX);
    assert_string_equal(err, "line");
    assert_int_equal(kp_parse(bad, strlen(bad), &prog, err, sizeof(err)), KP_ERR_SYNTAX);
    assert_string_equal(err, "line 1:");

    /* Success clears the message. */
    char big[64] = "stale";
    assert_int_equal(kp_parse("", 0, &prog, big, sizeof(big)), KP_OK);
    assert_string_equal(big, "");
    kp_free(prog);
}

static void test_invalid_arguments(void **state)
{
    (void)state;
    char err[128];
    struct kp_program *prog = (struct kp_program *)&prog;
    assert_int_equal(kp_parse(NULL, 5, &prog, err, sizeof(err)), KP_ERR_INVALID);
    assert_null(prog);
    assert_non_null(strstr(err, "line 0:"));
    assert_int_equal(kp_parse("x", 1, NULL, err, sizeof(err)), KP_ERR_INVALID);
    assert_int_equal(kp_parse(NULL, 0, &prog, err, sizeof(err)), KP_OK);
    assert_int_equal(prog->nkernels, 0);
    assert_null(kp_find_kernel(prog, "x"));
    kp_free(prog);
    kp_free(NULL);
    assert_null(kp_find_kernel(NULL, "x"));
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(kp_arg_kind_name(KP_ARG_VALUE), "value");
    assert_string_equal(kp_arg_kind_name(KP_ARG_GLOBAL_PTR), "global_ptr");
    assert_string_equal(kp_arg_kind_name(KP_ARG_CONSTANT_PTR), "constant_ptr");
    assert_string_equal(kp_arg_kind_name(KP_ARG_LOCAL_PTR), "local_ptr");
    assert_string_equal(kp_arg_kind_name(KP_ARG_PRIVATE_PTR), "private_ptr");
    assert_string_equal(kp_arg_kind_name(KP_ARG_IMAGE), "image");
    assert_string_equal(kp_arg_kind_name(KP_ARG_SAMPLER), "sampler");
    assert_string_equal(kp_arg_kind_name(KP_ARG_PIPE), "pipe");
    assert_string_equal(kp_arg_kind_name(KP_ARG_QUEUE), "queue");
    assert_string_equal(kp_arg_kind_name((enum kp_arg_kind)99), "unknown");
    assert_string_equal(kp_access_name(KP_ACCESS_NONE), "none");
    assert_string_equal(kp_access_name(KP_ACCESS_READ_ONLY), "read_only");
    assert_string_equal(kp_access_name(KP_ACCESS_WRITE_ONLY), "write_only");
    assert_string_equal(kp_access_name(KP_ACCESS_READ_WRITE), "read_write");
    assert_string_equal(kp_access_name((enum kp_access) - 1), "unknown");
}

static void test_many_kernels(void **state)
{
    (void)state;
    /* Big enough to exercise the name tables' growth. */
    size_t cap = 5000 * 96;
    char *src = malloc(cap);
    assert_non_null(src);
    size_t n = 0;
    for (int i = 0; i < 5000; i++) {
        n += (size_t)sprintf(src + n,
                             "#define T%d float\ntypedef int ty%d;\n"
                             "kernel void k%d(global T%d *a, ty%d b) { }\n",
                             i, i, i, i, i);
    }
    struct kp_program *prog = parse_ok_n(src, n);
    assert_int_equal(prog->nkernels, 5000);
    const struct kp_kernel *k = kernel(prog, "k4321", 2);
    check_arg(k, 0, "a", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 1, "b", "ty4321", KP_ARG_VALUE, NONE);
    kp_free(prog);
    free(src);
}

/* Real-looking programs: the cases below and the fuzz loop start from them. */
static const char *const corpus[] = {
    "#define TILE 16\n"
    "#define REAL float\n"
    "/* C = A * B with square tiles in local memory. */\n"
    "__kernel __attribute__((reqd_work_group_size(TILE, TILE, 1)))\n"
    "void matmul(const int M, const int N, const int K,\n"
    "            const __global REAL *restrict A,\n"
    "            const __global REAL *restrict B,\n"
    "            __global REAL *C, __local REAL *Asub, __local REAL *Bsub)\n"
    "{\n"
    "    const int row = get_local_id(0), col = get_local_id(1);\n"
    "    REAL acc = 0.0f;\n"
    "    for (int t = 0; t < K / TILE; t++) {\n"
    "        Asub[col * TILE + row] = A[(t * TILE + col) * M + row];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "        for (int k = 0; k < TILE; k++) { acc += Asub[k * TILE + row]; }\n"
    "    }\n"
    "    C[col * M + row] = acc; // done\n"
    "}\n",

    "typedef struct { float4 pos; float4 vel; } body_t;\n"
    "constant sampler_t smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_CLAMP_TO_EDGE;\n"
    "float lum(float4 c) { return dot(c.xyz, (float3)(0.299f, 0.587f, 0.114f)); }\n"
    "kernel void blur(read_only image2d_t src, write_only image2d_t dst, sampler_t s,\n"
    "                 constant float *weights, int radius)\n"
    "{\n"
    "    int2 p = (int2)(get_global_id(0), get_global_id(1));\n"
    "    float4 sum = (float4)(0);\n"
    "    for (int i = -radius; i <= radius; i++)\n"
    "        sum += read_imagef(src, s, p + (int2)(i, 0)) * weights[i + radius];\n"
    "    write_imagef(dst, p, sum);\n"
    "    printf(\"done %d {\\n\", p.x);\n"
    "}\n"
    "kernel void step(global body_t *bodies, float dt, uint n) {\n"
    "    char c = '{';\n"
    "}\n",

    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "#ifdef USE_DOUBLE\n#define REAL double\n#else\n#define REAL float\n#endif\n"
    "#define KERNEL __kernel\n"
    "#define GLOBAL __global\n"
    "kernel void reduce(GLOBAL const REAL *in, GLOBAL REAL *out, local REAL *scratch);\n"
    "KERNEL void reduce(GLOBAL const REAL *in, GLOBAL REAL *out, local REAL *scratch)\n"
    "{\n"
    "    size_t lid = get_local_id(0);\n"
    "    scratch[lid] = in[get_global_id(0)];\n"
    "    for (size_t s = get_local_size(0) / 2; s > 0; s >>= 1) {\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "        if (lid < s) scratch[lid] += scratch[lid + s];\n"
    "    }\n"
    "    if (!lid) out[get_group_id(0)] = scratch[0];\n"
    "}\n"
    "kernel void producer(write_only pipe int p, global int *src) {\n"
    "    write_pipe(p, &src[get_global_id(0)]);\n"
    "}\n"
    "kernel void consumer(read_only pipe int p, global int *dst, queue_t q) {}\n",

    "// A header-style program with continuations.\n"
    "#define DECLARE_BUF(name) \\\n"
    "    __global float *name\n"
    "#define SCALE 2.0f\n"
    "typedef union { int i; float f; } bits_t;\n"
    "__kernel void\n"
    "scale(__global float * restrict data,\n"
    "      const uint n,\n"
    "      bits_t mask)\n"
    "{\n"
    "    /* } still a comment */\n"
    "    for (uint i = 0; i < n; i++) data[i] *= SCALE;\n"
    "}\n"
    "__kernel void empty(void) { }\n"
    "__kernel void images(__read_only image3d_t vol, __write_only image2d_array_t out,\n"
    "                     image1d_buffer_t buf, read_write image2d_depth_t depth) { }\n",
};

static void test_corpus(void **state)
{
    (void)state;
    struct kp_program *prog = parse_ok(corpus[0]);
    const struct kp_kernel *k = kernel(prog, "matmul", 8);
    check_arg(k, 3, "A", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_quals(k, 3, 1, 1, 0);
    check_arg(k, 6, "Asub", "float", KP_ARG_LOCAL_PTR, NONE);
    kp_free(prog);

    prog = parse_ok(corpus[1]);
    assert_int_equal(prog->nkernels, 2);
    k = kernel(prog, "blur", 5);
    check_arg(k, 2, "s", "sampler_t", KP_ARG_SAMPLER, NONE);
    check_arg(k, 3, "weights", "float", KP_ARG_CONSTANT_PTR, NONE);
    check_arg(kernel(prog, "step", 3), 0, "bodies", "body_t", KP_ARG_GLOBAL_PTR, NONE);
    kp_free(prog);

    prog = parse_ok(corpus[2]);
    assert_int_equal(prog->nkernels, 3);
    k = kernel(prog, "reduce", 3);
    check_arg(k, 0, "in", "float", KP_ARG_GLOBAL_PTR, NONE);
    check_arg(k, 2, "scratch", "float", KP_ARG_LOCAL_PTR, NONE);
    check_arg(kernel(prog, "producer", 2), 0, "p", "int", KP_ARG_PIPE, WO);
    check_arg(kernel(prog, "consumer", 3), 2, "q", "queue_t", KP_ARG_QUEUE, NONE);
    kp_free(prog);

    prog = parse_ok(corpus[3]);
    assert_int_equal(prog->nkernels, 3);
    check_arg(kernel(prog, "scale", 3), 2, "mask", "bits_t", KP_ARG_VALUE, NONE);
    kernel(prog, "empty", 0);
    k = kernel(prog, "images", 4);
    check_arg(k, 0, "vol", "image3d_t", KP_ARG_IMAGE, RO);
    check_arg(k, 1, "out", "image2d_array_t", KP_ARG_IMAGE, WO);
    check_arg(k, 2, "buf", "image1d_buffer_t", KP_ARG_IMAGE, RO);
    check_arg(k, 3, "depth", "image2d_depth_t", KP_ARG_IMAGE, RW);
    kp_free(prog);
}

/* Checks what any parse result must satisfy, whatever the input. */
static void check_invariants(int rc, const struct kp_program *prog, const char *err)
{
    if (rc != KP_OK) {
        assert_true(rc == KP_ERR_SYNTAX || rc == KP_ERR_LIMIT);
        assert_null(prog);
        assert_true(strncmp(err, "line ", 5) == 0);
        assert_null(strchr(err, '\n'));
        return;
    }
    assert_non_null(prog);
    for (unsigned i = 0; i < prog->nkernels; i++) {
        const struct kp_kernel *k = &prog->kernels[i];
        assert_non_null(k->name);
        assert_true(k->name[0] != '\0');
        assert_ptr_equal(kp_find_kernel(prog, k->name), k); /* names are unique */
        assert_true(k->nargs == 0 || k->args != NULL);
        for (unsigned j = 0; j < k->nargs; j++) {
            assert_non_null(k->args[j].name);
            assert_non_null(k->args[j].type_name);
            assert_true(k->args[j].type_name[0] != '\0');
            assert_true(k->args[j].kind <= KP_ARG_QUEUE);
            assert_true(k->args[j].access <= KP_ACCESS_READ_WRITE);
        }
    }
}

static void test_every_prefix(void **state)
{
    (void)state;
    for (size_t c = 0; c < sizeof(corpus) / sizeof(corpus[0]); c++) {
        size_t len = strlen(corpus[c]);
        for (size_t cut = 0; cut <= len; cut++) {
            struct kp_program *prog = NULL;
            char err[200] = "";
            int rc = parse_exact(corpus[c], cut, &prog, err, sizeof(err));
            check_invariants(rc, prog, err);
            kp_free(prog);
        }
    }
}

static uint64_t rng_next(uint64_t *s)
{
    /* xorshift64*: fixed seed, so every run sees the same inputs. */
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static size_t rng_below(uint64_t *s, size_t n)
{
    return n ? (size_t)(rng_next(s) % n) : 0;
}

/* Pieces of syntax most likely to upset the parser when dropped anywhere. */
/* clang-format off */
static const char *const snippets[] = {
    "(", ")", "{", "}", "[", "]", ",", ";", "*", "/*", "*/", "//", "\"", "'", "\\\n", "\n#",
    "\n#define X ", "\n#define global\n", "\n#if 1\n", "\n#if 0\n", "\n#else\n", "\n#endif\n",
    "__attribute__((", "kernel ", "__kernel void k(", "global ", "local ", "pipe ", "typedef ",
    "image2d_t ", "read_only ", "struct ", "void", "\0", "\xff", "\r\n", "...",
};
/* clang-format on */

static size_t mutate(uint64_t *rng, char *buf, size_t len, size_t cap)
{
    if (len >= cap) /* also tells the compiler that len + 1 cannot wrap */
        return len;
    switch (rng_below(rng, 6)) {
    case 0: /* truncate */
        return rng_below(rng, len + 1);
    case 1: /* overwrite a few bytes */
        for (int i = 0, n = 1 + (int)rng_below(rng, 4); i < n && len; i++)
            buf[rng_below(rng, len)] = (char)rng_next(rng);
        return len;
    case 2: { /* insert a snippet */
        size_t which = rng_below(rng, sizeof(snippets) / sizeof(snippets[0]));
        const char *sn = snippets[which];
        size_t sl = sn[0] ? strlen(sn) : 1; /* the NUL snippet is one byte */
        if (len + sl > cap)
            return len;
        size_t at = rng_below(rng, len + 1);
        memmove(buf + at + sl, buf + at, len - at);
        memcpy(buf + at, sn, sl);
        return len + sl;
    }
    case 3: { /* delete a range */
        size_t at = rng_below(rng, len + 1), n = rng_below(rng, 64);
        if (n > len - at)
            n = len - at;
        memmove(buf + at, buf + at + n, len - at - n);
        return len - n;
    }
    case 4: { /* duplicate a range */
        size_t at = rng_below(rng, len + 1), n = rng_below(rng, 128);
        if (n > len - at)
            n = len - at;
        if (len + n > cap)
            return len;
        size_t to = rng_below(rng, len + 1);
        memmove(buf + to + n, buf + to, len - to);
        memmove(buf + to, buf + (at >= to ? at + n : at), n);
        return len + n;
    }
    default: { /* splice the tail of another program */
        const char *other = corpus[rng_below(rng, sizeof(corpus) / sizeof(corpus[0]))];
        size_t ol = strlen(other), from = rng_below(rng, ol + 1), at = rng_below(rng, len + 1);
        size_t n = ol - from;
        if (at + n > cap)
            n = cap - at;
        memcpy(buf + at, other + from, n);
        return at + n;
    }
    }
}

static void test_fuzz(void **state)
{
    (void)state;
    enum { ITERATIONS = 20000, CAP = 8192 };
    uint64_t rng = 0x9e3779b97f4a7c15ull;
    char *work = malloc(CAP);
    assert_non_null(work);
    unsigned ok = 0, failed = 0;

    for (int it = 0; it < ITERATIONS; it++) {
        const char *base = corpus[rng_below(&rng, sizeof(corpus) / sizeof(corpus[0]))];
        size_t len = strlen(base);
        memcpy(work, base, len);
        for (int m = 0, n = 1 + (int)rng_below(&rng, 4); m < n; m++)
            len = mutate(&rng, work, len, CAP);

        struct kp_program *prog = NULL;
        char err[200] = "";
        int rc = parse_exact(work, len, &prog, err, sizeof(err));
        check_invariants(rc, prog, err);
        if (rc == KP_OK)
            ok++;
        else
            failed++;
        kp_free(prog);
    }
    free(work);
    /* The mutations must leave both outcomes common, or the loop tests little. */
    assert_true(ok > ITERATIONS / 10);
    assert_true(failed > ITERATIONS / 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic),
        cmocka_unit_test(test_address_spaces),
        cmocka_unit_test(test_pointers_without_space),
        cmocka_unit_test(test_comments),
        cmocka_unit_test(test_line_continuations),
        cmocka_unit_test(test_strings_and_chars),
        cmocka_unit_test(test_defines),
        cmocka_unit_test(test_macro_edge_cases),
        cmocka_unit_test(test_preprocessor_ignored),
        cmocka_unit_test(test_conditional_braces),
        cmocka_unit_test(test_dead_code),
        cmocka_unit_test(test_keyword_macros_ignored),
        cmocka_unit_test(test_attributes),
        cmocka_unit_test(test_qualifiers),
        cmocka_unit_test(test_access_qualifiers),
        cmocka_unit_test(test_image_types),
        cmocka_unit_test(test_sampler_and_queue),
        cmocka_unit_test(test_pipes),
        cmocka_unit_test(test_vectors_and_scalars),
        cmocka_unit_test(test_structs_unions_enums),
        cmocka_unit_test(test_typedefs),
        cmocka_unit_test(test_arrays),
        cmocka_unit_test(test_several_kernels_and_helpers),
        cmocka_unit_test(test_prototypes),
        cmocka_unit_test(test_void_and_empty),
        cmocka_unit_test(test_spellings_and_layout),
        cmocka_unit_test(test_length_is_respected),
        cmocka_unit_test(test_nul_bytes_and_garbage),
        cmocka_unit_test(test_malformed_parens),
        cmocka_unit_test(test_malformed_arguments),
        cmocka_unit_test(test_malformed_structure),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_error_buffer),
        cmocka_unit_test(test_invalid_arguments),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_many_kernels),
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_every_prefix),
        cmocka_unit_test(test_fuzz),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
