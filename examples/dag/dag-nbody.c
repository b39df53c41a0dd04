/*
 * dag-nbody: an n-body simulation (softened gravity, leapfrog) on every
 * device of the DAG runtime.  Each step, every device updates its slice of
 * the bodies from all positions and reads its slice of the new positions to
 * the host (a gather); the next step writes all positions back to every
 * device (a broadcast, or with DHDCR direct copies from the devices that
 * computed them).
 */
#include "dag.h"
#include "dagapp.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *out)
{
    fprintf(out, "Usage: dag-nbody [-n BODIES] [-s STEPS] [--seed S] [-d DEVICES] [--query DQL]\n"
                 "STEPS steps (default 4) of BODIES bodies (default 2048), split over the\n"
                 "devices; see dag-apps(1).\n");
}

int main(int argc, char **argv)
{
    struct dagapp_opts o = {.size = 2048, .steps = 4, .seed = 1, .repeats = 1};
    dagapp_parse("dag-nbody", argc, argv, &o, 1 << 20, usage);
    size_t n = o.size, bytes = n * 16;
    float *pos0 = app_malloc(bytes), *vel0 = app_malloc(bytes);
    float *pos[2] = {app_malloc(bytes), app_malloc(bytes)};
    nbody_input(o.seed, n, pos0, vel0);
    memcpy(pos[0], pos0, bytes);
    int p = dagapp_init(&o);
    app_require_units(n, (cl_uint)p, "bodies");

    dag_kernel **k = dagapp_kernels(p, nbody_source, "nbody");
    dag_buffer **bpos = app_calloc((size_t)p, sizeof(*bpos));
    dag_buffer **bvel = app_calloc((size_t)p, sizeof(*bvel));
    dag_buffer **bout = app_calloc((size_t)p, sizeof(*bout));
    double start = app_seconds();
    dag_event **done = app_calloc((size_t)p, sizeof(*done)), *step_done = NULL;
    for (uint64_t s = 0; s < o.steps; s++) {
        for (int d = 0; d < p; d++) {
            dag_device *dev = dag_get_device(d);
            size_t first, count;
            app_split(n, (cl_uint)p, (cl_uint)d, &first, &count);
            if (s == 0) {
                bpos[d] = dag_create_buffer(dev, bytes, CL_MEM_READ_ONLY);
                bvel[d] = dag_create_buffer(dev, count * 16, CL_MEM_READ_WRITE);
                bout[d] = dag_create_buffer(dev, count * 16, CL_MEM_WRITE_ONLY);
                dag_event *written;
                dag_write(bvel[d], 0, count * 16, vel0 + 4 * first, NULL, &written);
                dag_release_event(written);
            }
            dag_event *in, *ran;
            dag_write(bpos[d], 0, bytes, pos[s % 2], step_done, &in);
            int bodies = (int)n, from = (int)first;
            float dt = 0.01f;
            dag_run(k[d], 1, NULL, &count, NULL, in, &ran, 6, DAG_BUF(bpos[d]), DAG_BUF(bvel[d]),
                    DAG_BUF(bout[d]), DAG_VAL(bodies), DAG_VAL(from), DAG_VAL(dt));
            dag_read(bout[d], 0, count * 16, pos[(s + 1) % 2] + 4 * first, ran, &done[d]);
            dag_release_event(in);
            dag_release_event(ran);
        }
        dag_release_event(step_done);
        step_done = dag_merge((unsigned)p, done);
        for (int d = 0; d < p; d++)
            dag_release_event(done[d]);
    }
    dagapp_check(dag_wait(step_done), "running");
    double seconds = app_seconds() - start;
    dag_release_event(step_done);
    for (int d = 0; d < p; d++) {
        dag_release_buffer(bpos[d], NULL);
        dag_release_buffer(bvel[d], NULL);
        dag_release_buffer(bout[d], NULL);
        dag_release_kernel(k[d], NULL);
    }

    bool ok = nbody_check(n, o.steps, pos0, vel0, pos[o.steps % 2]);
    dagapp_check(dag_shutdown(), "shutting down");
    char sum[32];
    snprintf(sum, sizeof(sum), "checksum=%016" PRIx64, dagapp_checksum(pos[o.steps % 2], bytes));
    dagapp_result("dag-nbody", n, p, seconds, sum, ok);
    free(k), free(bpos), free(bvel), free(bout), free(done);
    free(pos0), free(vel0), free(pos[0]), free(pos[1]);
    return ok ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
