/*
 * dagrun.c: the part of dagapp.h that only the dag-* applications use, the
 * one that calls the runtime (the plain-* twins do not link it).
 */
#include "dagapp.h"

#include "dag.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void dagapp_check(int err, const char *what)
{
    if (err != 0) {
        fprintf(stderr, "%s: %s: %s\n", dagapp_name, what, dag_error());
        exit(APP_EXIT_ERROR);
    }
}

dag_kernel **dagapp_kernels(int p, const char *source, const char *name)
{
    dag_kernel **k = app_calloc((size_t)p, sizeof(*k));
    for (int d = 0; d < p; d++)
        k[d] = dag_create_kernel(dag_get_device(d), source, name, "");
    dagapp_check(dag_finish(), "building the kernel");
    return k;
}

int dagapp_init(const struct dagapp_opts *opts)
{
    char query[64] = "SELECT ALL";
    if (opts->devices)
        snprintf(query, sizeof(query), "SELECT TOP %" PRIu64, opts->devices);
    int n = dag_init(opts->query ? opts->query : query);
    if (n < 0)
        dagapp_check(n, "dag_init");
    if (opts->devices && (uint64_t)n < opts->devices)
        app_die("%" PRIu64 " device(s) requested, only %d available", opts->devices, n);
    /* With its node, and the node's name where the driver says it
     * (cl_vocl_device_location), so that a test can see the placement. */
    for (int i = 0; i < n; i++) {
        dag_device *dev = dag_get_device(i);
        const char *host = dag_device_node_name(dev);
        fprintf(stderr, "device %d (node %d%s%s): %s\n", i, dag_device_node(dev), *host ? " " : "",
                host, dag_device_name(dev));
    }
    return n;
}

/* "on" or "off" as forced (DAG_DCR, DAG_DHDCR), "auto-on" or "auto-off" as
 * dag_init decided. */
static const char *setting(bool on, bool decided)
{
    return decided ? (on ? "auto-on" : "auto-off") : on ? "on" : "off";
}

void dagapp_result(const char *app, uint64_t size, int devices, double seconds, const char *extra,
                   bool verified)
{
    struct dag_stats s;
    dag_get_stats(&s);
    printf("RESULT app=%s size=%" PRIu64 " devices=%d seconds=%.6f dcr=%s dhdcr=%s "
           "h2d_bytes=%" PRIu64 " d2h_bytes=%" PRIu64 " d2d_bytes=%" PRIu64 " h2d_ops=%" PRIu64
           " d2h_ops=%" PRIu64 " d2d_ops=%" PRIu64 " broadcasts=%" PRIu64 " scatters=%" PRIu64
           " gathers=%" PRIu64 " dhdcr_writes=%" PRIu64 " commands=%" PRIu64 "%s%s verified=%s\n",
           app, size, devices, seconds, setting(s.dcr, s.dcr_auto),
           setting(s.dhdcr, s.dhdcr_auto), s.h2d_bytes,
           s.d2h_bytes, s.d2d_bytes, s.h2d_ops, s.d2h_ops, s.d2d_ops, s.broadcasts, s.scatters,
           s.gathers, s.dhdcr_copies, s.commands, *extra ? " " : "", extra,
           verified ? "yes" : "no");
}

