/*
 * test_args.c - the runtime sets a kernel argument only when it changed
 * (dag.c, set_kernel_arg): launches that change one argument, then
 * another, then none, and one on a buffer created after another was
 * released (its OpenCL handle may be the old one's), must each write
 * where and what they were given.  On the first device of DQL's
 * SELECT ALL; exit status 0 when every check holds.
 */
#include "dag.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 64

static const char *source =
    "kernel void fill(global int *x, int v, local int *scratch, int w) {\n"
    "    size_t i = get_global_id(0);\n"
    "    scratch[get_local_id(0)] = v;\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    x[i] = scratch[get_local_id(0)] * 1000 + w;\n"
    "}\n";

static int failures;

static void run(dag_kernel *k, dag_buffer *b, int v, size_t local_bytes, int w)
{
    size_t global = N, local = 16;
    if (dag_run(k, 1, NULL, &global, &local, NULL, NULL, 4, DAG_BUF(b), DAG_VAL(v),
                DAG_LOCAL(local_bytes), DAG_VAL(w)) != 0) {
        fprintf(stderr, "test_args: dag_run failed\n");
        exit(1);
    }
}

static void expect(dag_buffer *b, int value, const char *what)
{
    int got[N];
    if (dag_read(b, 0, sizeof(got), got, NULL, NULL) != 0) {
        fprintf(stderr, "test_args: dag_read failed\n");
        exit(1);
    }
    for (int i = 0; i < N; i++) {
        if (got[i] != value) {
            fprintf(stderr, "test_args: %s: element %d is %d, not %d\n", what, i, got[i], value);
            failures++;
            return;
        }
    }
    printf("ok: %s\n", what);
}

int main(void)
{
    if (dag_init("SELECT TOP 1") < 1) {
        fprintf(stderr, "test_args: no device\n");
        return 1;
    }
    dag_device *d = dag_get_device(0);
    dag_kernel *k = dag_create_kernel(d, source, "fill", "");
    dag_buffer *a = dag_create_buffer(d, N * sizeof(int), CL_MEM_READ_WRITE);
    dag_buffer *b = dag_create_buffer(d, N * sizeof(int), CL_MEM_READ_WRITE);

    /* Each launch, then what its buffer must hold: v * 1000 + w. */
    const struct {
        bool on_b;
        int v, local_ints, w;
        const char *what;
    } steps[] = {
        {false, 1, 16, 7, "first launch"},
        {true, 1, 16, 7, "another buffer, the same values"},
        {true, 2, 16, 7, "one value changed"},
        {true, 2, 16, 8, "the last value changed"},
        {false, 3, 32, 8, "buffer, value and local size changed"},
        {false, 3, 32, 8, "nothing changed"},
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        dag_buffer *to = steps[i].on_b ? b : a;
        run(k, to, steps[i].v, (size_t)steps[i].local_ints * sizeof(int), steps[i].w);
        expect(to, steps[i].v * 1000 + steps[i].w, steps[i].what);
    }
    expect(b, 2008, "the other buffer untouched");

    /* A buffer created after one is released may get its handle. */
    for (int round = 0; round < 4; round++) {
        dag_release_buffer(b, NULL);
        b = dag_create_buffer(d, N * sizeof(int), CL_MEM_READ_WRITE);
        run(k, b, 4 + round, 32 * sizeof(int), 8);
        char what[64];
        snprintf(what, sizeof(what), "a new buffer after a release (%d)", round);
        expect(b, (4 + round) * 1000 + 8, what);
    }

    dag_release_buffer(a, NULL);
    dag_release_buffer(b, NULL);
    dag_release_kernel(k, NULL);
    if (dag_shutdown() != 0) {
        fprintf(stderr, "test_args: dag_shutdown failed\n");
        return 1;
    }
    return failures ? 1 : 0;
}
