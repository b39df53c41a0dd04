/*
 * dag-perlin: an n x n image of Perlin gradient noise (4 octaves) on every
 * device of the DAG runtime, split by rows: no input, one gather.
 */
#include "dag.h"
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: dag-perlin [-n N] [--seed S] [-r REPEATS] [-d DEVICES] [--query DQL]\n"
                 "An N x N noise image (default 1024), rows split over the devices;\n"
                 "see dag-apps(1).\n");
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 1024, .steps = 1, .seed = 1, .repeats = 1};
    dagapp_parse("dag-perlin", argc, argv, &o, 1 << 14, usage);
    size_t n = o.size;
    float *image = app_calloc(n * n, sizeof(float));
    int p = dagapp_init(&o);
    app_require_units(n, (cl_uint)p, "rows");

    dag_kernel **k = dagapp_kernels(p, perlin_source, "perlin");
    double start = app_seconds();
    for (uint64_t r = 0; r < o.repeats; r++) {
        for (int d = 0; d < p; d++) {
            size_t first, rows;
            app_split(n, (cl_uint)p, (cl_uint)d, &first, &rows);
            dag_buffer *b = dag_create_buffer(dag_get_device(d), rows * n * 4, CL_MEM_WRITE_ONLY);
            dag_event *ran, *out;
            size_t global[2] = {n, rows};
            int size = (int)n, from = (int)first;
            cl_uint seed = (cl_uint)o.seed;
            dag_run(k[d], 2, NULL, global, NULL, NULL, &ran, 4, DAG_BUF(b), DAG_VAL(size),
                    DAG_VAL(from), DAG_VAL(seed));
            dag_read(b, 0, rows * n * 4, image + first * n, ran, &out);
            dag_release_buffer(b, out);
            dag_release_event(ran);
            dag_release_event(out);
        }
        dagapp_check(dag_finish(), "running");
    }
    double seconds = app_seconds() - start;
    for (int d = 0; d < p; d++)
        dag_release_kernel(k[d], NULL);

    bool ok = perlin_check(n, o.seed, image);
    dagapp_check(dag_shutdown(), "shutting down");
    char sum[32];
    snprintf(sum, sizeof(sum), "checksum=%016" PRIx64, dagapp_checksum(image, n * n * 4));
    dagapp_result("dag-perlin", n, p, seconds, sum, ok);
    free(k), free(image);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
