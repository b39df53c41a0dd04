/*
 * dag-floyd: all-pairs shortest paths (Floyd-Warshall) of a random graph on
 * every device of the DAG runtime, rows split over the devices.  In round
 * k every device needs row k, which only its owner has: the owner copies it
 * on the device; for the others the program reads it to the host and
 * writes it to each, and DCR and DHDCR turn those writes into a broadcast
 * of copies from the owner.
 */
#include "dag.h"
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: dag-floyd [-n VERTICES] [--seed S] [-d DEVICES] [--query DQL]\n"
                 "Shortest paths between all pairs of VERTICES vertices (default 256),\n"
                 "rows split over the devices; see dag-apps(1).\n");
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 256, .steps = 1, .seed = 1, .repeats = 1};
    dagapp_parse("dag-floyd", argc, argv, &o, 4096, usage);
    size_t n = o.size, row = n * sizeof(int);
    int *d0 = app_malloc(n * row), *rows = app_malloc(n * row), *result = app_calloc(n, row);
    floyd_input(o.seed, n, d0);
    int p = dagapp_init(&o);
    app_require_units(n, (cl_uint)p, "vertices");

    dag_kernel **k = dagapp_kernels(p, floyd_source, "floyd");
    dag_buffer **dist = app_calloc((size_t)p, sizeof(*dist));
    dag_buffer **rowk = app_calloc((size_t)p, sizeof(*rowk));
    size_t *first = app_calloc((size_t)p, sizeof(*first)), *count = app_calloc((size_t)p, 8);
    double start = app_seconds();
    int owner = 0;
    for (int d = 0; d < p; d++) {
        app_split(n, (cl_uint)p, (cl_uint)d, &first[d], &count[d]);
        dist[d] = dag_create_buffer(dag_get_device(d), count[d] * row, CL_MEM_READ_WRITE);
        rowk[d] = dag_create_buffer(dag_get_device(d), row, CL_MEM_READ_ONLY);
        dag_event *written;
        dag_write(dist[d], 0, count[d] * row, d0 + first[d] * n, NULL, &written);
        dag_release_event(written);
    }
    for (size_t kk = 0; kk < n; kk++) {
        while (kk >= first[owner] + count[owner])
            owner++;
        size_t at = (kk - first[owner]) * row;
        dag_event *got = NULL;
        if (p > 1)
            dag_read(dist[owner], at, row, rows + kk * n, NULL, &got);
        for (int d = 0; d < p; d++) {
            dag_event *in, *ran;
            if (d == owner)
                dag_copy(rowk[d], 0, dist[d], at, row, NULL, &in);
            else
                dag_write(rowk[d], 0, row, rows + kk * n, got, &in);
            size_t global[2] = {n, count[d]};
            int size = (int)n, via = (int)kk;
            dag_run(k[d], 2, NULL, global, NULL, in, &ran, 4, DAG_BUF(dist[d]), DAG_BUF(rowk[d]),
                    DAG_VAL(size), DAG_VAL(via));
            dag_release_event(in);
            dag_release_event(ran);
        }
        dag_release_event(got);
    }
    dag_event **done = app_calloc((size_t)p, sizeof(*done));
    for (int d = 0; d < p; d++)
        dag_read(dist[d], 0, count[d] * row, result + first[d] * n, NULL, &done[d]);
    dag_event *all = dag_merge((unsigned)p, done);
    dagapp_check(dag_wait(all), "running");
    double seconds = app_seconds() - start;
    dag_release_event(all);
    for (int d = 0; d < p; d++)
        dag_release_event(done[d]);
    free(done);
    for (int d = 0; d < p; d++) {
        dag_release_buffer(dist[d], NULL);
        dag_release_buffer(rowk[d], NULL);
        dag_release_kernel(k[d], NULL);
    }

    bool ok = floyd_check(n, d0, result);
    dagapp_check(dag_shutdown(), "shutting down");
    char sum[32];
    snprintf(sum, sizeof(sum), "checksum=%016" PRIx64, dagapp_checksum(result, n * row));
    dagapp_result("dag-floyd", n, p, seconds, sum, ok);
    free(k), free(dist), free(rowk), free(first), free(count), free(d0), free(rows), free(result);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
