/*
 * dagapp.h: what the DAG applications (dag-*.c) and their OpenCL twins
 * (plain-*.c on one device, multi-*.c on every device) share: the command
 * line, the kernels, the generated inputs, the CPU references and the
 * RESULT line.  The host code that runs the kernels, the part whose length
 * the report compares, is all in the dag-*.c, plain-*.c and multi-*.c
 * files.
 */
#ifndef DAG_DAGAPP_H
#define DAG_DAGAPP_H

#include "common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Options every application takes; `size` and `steps` mean what each
 * application says in its --help. */
struct dagapp_opts {
    uint64_t size, steps, seed, repeats, devices;
    const char *query; /* --query DQL, or NULL: all devices (or TOP devices) */
};

/* The program's name, for messages (set by dagapp_parse()). */
extern const char *dagapp_name;

/* Parses argv (exits 0 on --help, 2 on a bad option).  `opts` holds the
 * defaults on entry. */
void dagapp_parse(const char *name, int argc, char **argv, struct dagapp_opts *opts,
                  uint64_t max_size, void (*usage)(FILE *));

/* dag_init() with --query (or "SELECT TOP n" for -d n, or ALL); exits with
 * status 2 and dag_error() if it fails.  Returns the device count. */
int dagapp_init(const struct dagapp_opts *opts);

/* Exits with status 2 and dag_error() unless err is 0. */
void dagapp_check(int err, const char *what);

/* Kernel `name` of source on each of the p devices, built (exits if a
 * build fails); an array for free(). */
struct dag_kernel **dagapp_kernels(int p, const char *source, const char *name);

/* The RESULT line: app, size, devices, seconds, the runtime's counters and
 * which optimisations were on, then `extra` (may be ""), then verified. */
void dagapp_result(const char *app, uint64_t size, int devices, double seconds, const char *extra,
                   bool verified);

/* The same for the plain OpenCL twins (no runtime counters). */
void dagapp_plain_result(const char *app, uint64_t size, double seconds, uint64_t checksum,
                         bool verified);
/* And for the multi-device twins, which ran on `devices`. */
void dagapp_multi_result(const char *app, uint64_t size, cl_uint devices, double seconds,
                         uint64_t checksum, bool verified);

/* The first device of the first platform, its context and in-order queue,
 * for the plain twins. */
struct plain_device {
    cl_device_id id;
    cl_context context;
    cl_command_queue queue;
};
void plain_open(struct plain_device *dev);
void plain_close(struct plain_device *dev);
cl_kernel plain_kernel(const struct plain_device *dev, const char *source, const char *name);

/* The first `wanted` devices (0: all) of the first platform, in one context
 * with an in-order queue each, for the multi-device twins; exits if the
 * platform has fewer. */
struct plain_devices {
    cl_uint count;
    cl_device_id *ids;
    cl_context context;
    cl_command_queue *queues; /* one per device */
};
void plain_open_all(struct plain_devices *devs, uint64_t wanted);
void plain_close_all(struct plain_devices *devs);
/* One kernel built for every device: a launch takes the arguments set
 * before it, so the same kernel serves every queue. */
cl_kernel plain_kernel_all(const struct plain_devices *devs, const char *source, const char *name);

/* A checksum of the result's bytes, for the RESULT line's checksum=: runs
 * natively, under VOCL and with each optimisation on or off must agree. */
uint64_t dagapp_checksum(const void *data, size_t size);

/* Relative difference, NaN-safe (a NaN counts as a large error). */
double dagapp_rel_error(double got, double want);

/* ---- the applications' kernels, inputs and CPU references ---- */

/* linreg: mean squared error of M candidate lines y = a x + b over N
 * points.  Points x, y are replicated; a, b and the errors are split. */
extern const char linreg_source[];
void linreg_input(uint64_t seed, size_t models, size_t points, float *x, float *y, float *a,
                  float *b);
bool linreg_check(size_t models, size_t points, const float *x, const float *y, const float *a,
                  const float *b, const float *err);

/* matmul: C = A B, n x n floats, A and C split by rows, B replicated. */
extern const char matmul_source[];
void matrix_input(uint64_t seed, size_t n, float *m);
/* C = A B on the CPU in double, rows [first, first+count) only. */
void matmul_cpu(size_t n, const float *a, const float *b, double *c);
bool matrix_check(size_t n, const double *want, const float *got);

/* nbody: softened gravity, float4 (x, y, z, mass) positions and float4
 * velocities, leapfrog steps of dt. */
extern const char nbody_source[];
void nbody_input(uint64_t seed, size_t n, float *pos, float *vel);
bool nbody_check(size_t n, uint64_t steps, const float *pos0, const float *vel0, const float *pos);

/* perlin: an n x n image of 2-D gradient noise, split by rows. */
extern const char perlin_source[];
bool perlin_check(size_t n, uint64_t seed, const float *image);

/* knn: for each query the index of its nearest reference point (2-D); the
 * references are replicated, the queries split. */
extern const char knn_source[];
void knn_input(uint64_t seed, size_t queries, size_t refs, float *q, float *r);
bool knn_check(size_t queries, size_t refs, const float *q, const float *r, const int *nearest);

/* floyd: all-pairs shortest paths of a random graph of n vertices (int
 * weights, a missing edge is FLOYD_INF), rows split over the devices. */
#define FLOYD_INF 0x3fffffff
extern const char floyd_source[];
void floyd_input(uint64_t seed, size_t n, int *d);
bool floyd_check(size_t n, const int *d0, const int *d);

#endif
