/*
 * dag-knn: the nearest of R reference points for each of Q query points
 * (2-D) on every device of the DAG runtime: the references are replicated
 * (a broadcast), the queries and answers split (a scatter and a gather).
 */
#include "dag.h"
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: dag-knn [-n QUERIES] [-s REFS] [--seed S] [-r REPEATS] [-d DEVICES]\n"
                 "               [--query DQL]\n"
                 "The nearest of REFS points (default 4096) for QUERIES points (default\n"
                 "16384), split over the devices; see dag-apps(1).\n");
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 16384, .steps = 4096, .seed = 1, .repeats = 1};
    dagapp_parse("dag-knn", argc, argv, &o, 1 << 24, usage);
    size_t nq = o.size, nr = o.steps;
    float *q = app_malloc(nq * 8), *ref = app_malloc(nr * 8);
    int *nearest = app_calloc(nq, sizeof(int));
    knn_input(o.seed, nq, nr, q, ref);
    int p = dagapp_init(&o);
    app_require_units(nq, (cl_uint)p, "queries");

    dag_kernel **k = dagapp_kernels(p, knn_source, "knn");
    double start = app_seconds();
    for (uint64_t r = 0; r < o.repeats; r++) {
        for (int d = 0; d < p; d++) {
            dag_device *dev = dag_get_device(d);
            size_t first, count;
            app_split(nq, (cl_uint)p, (cl_uint)d, &first, &count);
            dag_buffer *bq = dag_create_buffer(dev, count * 8, CL_MEM_READ_ONLY);
            dag_buffer *br = dag_create_buffer(dev, nr * 8, CL_MEM_READ_ONLY);
            dag_buffer *bn = dag_create_buffer(dev, count * 4, CL_MEM_WRITE_ONLY);
            dag_event *in[2], *all, *ran, *out;
            dag_write(bq, 0, count * 8, q + 2 * first, NULL, &in[0]);
            dag_write(br, 0, nr * 8, ref, NULL, &in[1]);
            all = dag_merge(2, in);
            int refs = (int)nr;
            dag_run(k[d], 1, NULL, &count, NULL, all, &ran, 4, DAG_BUF(bq), DAG_BUF(br),
                    DAG_BUF(bn), DAG_VAL(refs));
            dag_read(bn, 0, count * 4, nearest + first, ran, &out);
            dag_release_buffer(bq, out);
            dag_release_buffer(br, out);
            dag_release_buffer(bn, out);
            dag_event *events[] = {in[0], in[1], all, ran, out};
            for (int i = 0; i < 5; i++)
                dag_release_event(events[i]);
        }
        dagapp_check(dag_finish(), "running");
    }
    double seconds = app_seconds() - start;
    for (int d = 0; d < p; d++)
        dag_release_kernel(k[d], NULL);

    bool ok = knn_check(nq, nr, q, ref, nearest);
    dagapp_check(dag_shutdown(), "shutting down");
    char sum[32];
    snprintf(sum, sizeof(sum), "checksum=%016" PRIx64, dagapp_checksum(nearest, nq * 4));
    dagapp_result("dag-knn", nq, p, seconds, sum, ok);
    free(k), free(q), free(ref), free(nearest);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
