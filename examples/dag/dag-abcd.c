/*
 * dag-abcd: the matrix chain (AB)(CD) of n x n floats on every device of the
 * DAG runtime.  Each device computes its rows of AB and of CD and reads
 * them to the host; then its rows of (AB)(CD) need its own rows of AB and
 * all of CD, which the program writes back from the host.  DHDCR turns
 * those writes into device-to-device copies: no intermediate product goes
 * from the host to a device (the reads stay, so the host still gets AB and
 * CD).
 */
#include "dag.h"
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: dag-abcd [-n N] [--seed S] [-r REPEATS] [-d DEVICES] [--query DQL]\n"
                 "(AB)(CD) for N x N matrices (default 192), rows split over the devices;\n"
                 "see dag-apps(1).\n");
}

/* Rows [first, first+rows) of X Y on device d, from those rows of X and all
 * of Y, written from the host after `wait`; read back into the same rows of
 * out.  Returns the read's event. */
static dag_event *product(int d, dag_kernel *k, size_t n, size_t first, size_t rows,
                          const float *x, const float *y, float *out, dag_event *wait)
{
    dag_device *dev = dag_get_device(d);
    size_t slice = rows * n * 4;
    dag_buffer *bx = dag_create_buffer(dev, slice, CL_MEM_READ_ONLY);
    dag_buffer *by = dag_create_buffer(dev, n * n * 4, CL_MEM_READ_ONLY);
    dag_buffer *bz = dag_create_buffer(dev, slice, CL_MEM_READ_WRITE);
    dag_event *in[2], *all, *ran, *done;
    dag_write(bx, 0, slice, x + first * n, wait, &in[0]);
    dag_write(by, 0, n * n * 4, y, wait, &in[1]);
    all = dag_merge(2, in);
    size_t global[2] = {n, rows};
    int size = (int)n;
    dag_run(k, 2, NULL, global, NULL, all, &ran, 4, DAG_BUF(bx), DAG_BUF(by), DAG_BUF(bz),
            DAG_VAL(size));
    dag_read(bz, 0, slice, out + first * n, ran, &done);
    dag_release_buffer(bx, done);
    dag_release_buffer(by, done);
    dag_release_buffer(bz, done);
    dag_release_event(in[0]);
    dag_release_event(in[1]);
    dag_release_event(all);
    dag_release_event(ran);
    return done;
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 192, .steps = 1, .seed = 1, .repeats = 1};
    dagapp_parse("dag-abcd", argc, argv, &o, 4096, usage);
    size_t n = o.size, bytes = n * n * sizeof(float);
    float *m[4], *ab = app_calloc(n * n, 4), *cd = app_calloc(n * n, 4), *x = app_calloc(n * n, 4);
    for (int i = 0; i < 4; i++) {
        m[i] = app_malloc(bytes);
        matrix_input(o.seed + (uint64_t)i, n, m[i]);
    }
    int p = dagapp_init(&o);
    app_require_units(n, (cl_uint)p, "rows");

    dag_kernel **k = dagapp_kernels(p, matmul_source, "matmul");
    dag_event **ab_done = app_calloc((size_t)p, sizeof(*ab_done));
    dag_event **cd_done = app_calloc((size_t)p, sizeof(*cd_done));
    double start = app_seconds();
    for (uint64_t r = 0; r < o.repeats; r++) {
        for (int d = 0; d < p; d++) {
            size_t first, rows;
            app_split(n, (cl_uint)p, (cl_uint)d, &first, &rows);
            ab_done[d] = product(d, k[d], n, first, rows, m[0], m[1], ab, NULL);
            cd_done[d] = product(d, k[d], n, first, rows, m[2], m[3], cd, NULL);
        }
        /* (AB)(CD): a device's rows of AB, and all of CD. */
        dag_event *all_cd = dag_merge((unsigned)p, cd_done);
        for (int d = 0; d < p; d++) {
            size_t first, rows;
            app_split(n, (cl_uint)p, (cl_uint)d, &first, &rows);
            dag_event *inputs[2] = {ab_done[d], all_cd};
            dag_event *wait = dag_merge(2, inputs);
            dag_release_event(product(d, k[d], n, first, rows, ab, cd, x, wait));
            dag_release_event(wait);
        }
        dag_release_event(all_cd);
        for (int d = 0; d < p; d++) {
            dag_release_event(ab_done[d]);
            dag_release_event(cd_done[d]);
        }
        dagapp_check(dag_finish(), "running");
    }
    double seconds = app_seconds() - start;
    for (int d = 0; d < p; d++)
        dag_release_kernel(k[d], NULL);

    double *t = app_malloc(n * n * sizeof(double));
    float *abf = app_malloc(bytes), *cdf = app_malloc(bytes);
    matmul_cpu(n, m[0], m[1], t);
    for (size_t i = 0; i < n * n; i++)
        abf[i] = (float)t[i];
    matmul_cpu(n, m[2], m[3], t);
    for (size_t i = 0; i < n * n; i++)
        cdf[i] = (float)t[i];
    /* The host copies of AB and CD must be there too. */
    bool ok = matrix_check(n, t, cd);
    matmul_cpu(n, abf, cdf, t);
    ok = matrix_check(n, t, x) && ok;
    dagapp_check(dag_shutdown(), "shutting down");
    char sum[32];
    snprintf(sum, sizeof(sum), "checksum=%016" PRIx64, dagapp_checksum(x, bytes));
    dagapp_result("dag-abcd", n, p, seconds, sum, ok);
    for (int i = 0; i < 4; i++)
        free(m[i]);
    free(k), free(ab_done), free(cd_done), free(ab), free(cd), free(x), free(t), free(abf),
        free(cdf);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
