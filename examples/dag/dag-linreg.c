/*
 * dag-linreg: the mean squared error of M candidate lines over N points, on
 * every device of the DAG runtime.  The points are replicated (each device
 * gets all of them: DCR makes the N writes one broadcast), the candidates
 * and their errors are split (a scatter and a gather).
 */
#include "dag.h"
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: dag-linreg [-n MODELS] [-s POINTS] [--seed S] [-r REPEATS] [-d DEVICES]\n"
                 "                  [--query DQL]\n"
                 "Mean squared error of MODELS candidate lines (default 8192) over POINTS\n"
                 "points (default 2048), split over the devices; see dag-apps(1).\n");
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 8192, .steps = 2048, .seed = 1, .repeats = 1};
    dagapp_parse("dag-linreg", argc, argv, &o, 1 << 24, usage);
    size_t m = o.size, n = o.steps;
    float *x = app_malloc(n * 4), *y = app_malloc(n * 4), *a = app_malloc(m * 4);
    float *b = app_malloc(m * 4), *err = app_calloc(m, 4);
    linreg_input(o.seed, m, n, x, y, a, b);
    int p = dagapp_init(&o);
    app_require_units(m, (cl_uint)p, "models");

    /* The multi-device host program. */
    dag_kernel **k = dagapp_kernels(p, linreg_source, "linreg");
    double start = app_seconds();
    for (uint64_t r = 0; r < o.repeats; r++) {
        for (int d = 0; d < p; d++) {
            dag_device *dev = dag_get_device(d);
            size_t first, count;
            app_split(m, (cl_uint)p, (cl_uint)d, &first, &count);
            dag_buffer *bx = dag_create_buffer(dev, n * 4, CL_MEM_READ_ONLY);
            dag_buffer *by = dag_create_buffer(dev, n * 4, CL_MEM_READ_ONLY);
            dag_buffer *ba = dag_create_buffer(dev, count * 4, CL_MEM_READ_ONLY);
            dag_buffer *bb = dag_create_buffer(dev, count * 4, CL_MEM_READ_ONLY);
            dag_buffer *be = dag_create_buffer(dev, count * 4, CL_MEM_WRITE_ONLY);
            dag_event *in[4], *ran, *out;
            dag_write(bx, 0, n * 4, x, NULL, &in[0]);
            dag_write(by, 0, n * 4, y, NULL, &in[1]);
            dag_write(ba, 0, count * 4, a + first, NULL, &in[2]);
            dag_write(bb, 0, count * 4, b + first, NULL, &in[3]);
            dag_event *all = dag_merge(4, in);
            int points = (int)n;
            dag_run(k[d], 1, NULL, &count, NULL, all, &ran, 6, DAG_BUF(bx), DAG_BUF(by),
                    DAG_BUF(ba), DAG_BUF(bb), DAG_BUF(be), DAG_VAL(points));
            dag_read(be, 0, count * 4, err + first, ran, &out);
            dag_buffer *bufs[] = {bx, by, ba, bb, be};
            for (int i = 0; i < 5; i++)
                dag_release_buffer(bufs[i], out);
            dag_event *events[] = {in[0], in[1], in[2], in[3], all, ran, out};
            for (int i = 0; i < 7; i++)
                dag_release_event(events[i]);
        }
        dagapp_check(dag_finish(), "running");
    }
    double seconds = app_seconds() - start;
    for (int d = 0; d < p; d++)
        dag_release_kernel(k[d], NULL);

    bool ok = linreg_check(m, n, x, y, a, b, err);
    dagapp_check(dag_shutdown(), "shutting down");
    char sum[32];
    snprintf(sum, sizeof(sum), "checksum=%016" PRIx64, dagapp_checksum(err, m * 4));
    dagapp_result("dag-linreg", m, p, seconds, sum, ok);
    free(k);
    free(x), free(y), free(a), free(b), free(err);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
