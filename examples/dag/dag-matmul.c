/*
 * dag-matmul: C = A B (n x n floats) on every device of the DAG runtime:
 * A and C split by rows (a scatter and a gather), B replicated (a
 * broadcast).
 */
#include "dag.h"
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: dag-matmul [-n N] [--seed S] [-r REPEATS] [-d DEVICES] [--query DQL]\n"
                 "C = A B for N x N matrices (default 256), rows split over the devices;\n"
                 "see dag-apps(1).\n");
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 256, .steps = 1, .seed = 1, .repeats = 1};
    dagapp_parse("dag-matmul", argc, argv, &o, 8192, usage);
    size_t n = o.size, bytes = n * n * sizeof(float);
    float *a = app_malloc(bytes), *b = app_malloc(bytes), *c = app_calloc(n * n, sizeof(float));
    matrix_input(o.seed, n, a);
    matrix_input(o.seed + 1, n, b);
    int p = dagapp_init(&o);
    app_require_units(n, (cl_uint)p, "rows");

    dag_kernel **k = dagapp_kernels(p, matmul_source, "matmul");
    double start = app_seconds();
    for (uint64_t r = 0; r < o.repeats; r++) {
        for (int d = 0; d < p; d++) {
            dag_device *dev = dag_get_device(d);
            size_t first, rows;
            app_split(n, (cl_uint)p, (cl_uint)d, &first, &rows);
            dag_buffer *ba = dag_create_buffer(dev, rows * n * 4, CL_MEM_READ_ONLY);
            dag_buffer *bb = dag_create_buffer(dev, bytes, CL_MEM_READ_ONLY);
            dag_buffer *bc = dag_create_buffer(dev, rows * n * 4, CL_MEM_WRITE_ONLY);
            dag_event *in[2], *all, *ran, *out;
            dag_write(ba, 0, rows * n * 4, a + first * n, NULL, &in[0]);
            dag_write(bb, 0, bytes, b, NULL, &in[1]);
            all = dag_merge(2, in);
            size_t global[2] = {n, rows};
            int size = (int)n;
            dag_run(k[d], 2, NULL, global, NULL, all, &ran, 4, DAG_BUF(ba), DAG_BUF(bb),
                    DAG_BUF(bc), DAG_VAL(size));
            dag_read(bc, 0, rows * n * 4, c + first * n, ran, &out);
            dag_release_buffer(ba, out);
            dag_release_buffer(bb, out);
            dag_release_buffer(bc, out);
            dag_event *events[] = {in[0], in[1], all, ran, out};
            for (int i = 0; i < 5; i++)
                dag_release_event(events[i]);
        }
        dagapp_check(dag_finish(), "running");
    }
    double seconds = app_seconds() - start;
    for (int d = 0; d < p; d++)
        dag_release_kernel(k[d], NULL);

    double *want = app_malloc(n * n * sizeof(double));
    matmul_cpu(n, a, b, want);
    bool ok = matrix_check(n, want, c);
    dagapp_check(dag_shutdown(), "shutting down");
    char sum[32];
    snprintf(sum, sizeof(sum), "checksum=%016" PRIx64, dagapp_checksum(c, bytes));
    dagapp_result("dag-matmul", n, p, seconds, sum, ok);
    free(k), free(a), free(b), free(c), free(want);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
