/*
 * gemm: C = A * B for square N x N matrices in single or double precision
 * (SGEMM / DGEMM), with a kernel that stages 16 x 16 tiles of A and B in
 * local memory.  The rows of C are split into one block per device; each
 * device gets its rows of A and all of B.  A plain OpenCL 1.2 program: run it
 * natively or under vocl-run.
 */
#include "common.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TILE            16 /* a TILE x TILE work-group computes a TILE x TILE block of C */
#define DEFAULT_N       768
#define MAX_N           8192
#define DEFAULT_REPEATS 3
#define CHECK_ROWS      64 /* rows of C recomputed on the CPU */

/* Largest accepted error of an element, relative to sum_k |a_ik * b_kj|,
 * the scale of the rounding errors of the dot product. */
#define TOLERANCE_SINGLE 1e-5
#define TOLERANCE_DOUBLE 1e-12

/* Rows and columns past the edge of the matrices read as zero, so any N
 * works with whole tiles. */
static const char kernel_source[] =
    "__kernel void gemm(__global const real *a, __global const real *b,\n"
    "                   __global real *c, uint rows, uint n)\n"
    "{\n"
    "    __local real tile_a[TILE][TILE];\n"
    "    __local real tile_b[TILE][TILE];\n"
    "    uint x = get_local_id(0), y = get_local_id(1);\n"
    "    uint col = get_global_id(0), row = get_global_id(1);\n"
    "    real sum = 0;\n"
    "    for (uint t = 0; t < n; t += TILE) {\n"
    "        tile_a[y][x] = row < rows && t + x < n ? a[(size_t)row * n + t + x] : 0;\n"
    "        tile_b[y][x] = t + y < n && col < n ? b[(size_t)(t + y) * n + col] : 0;\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "        for (uint k = 0; k < TILE; k++)\n"
    "            sum += tile_a[y][k] * tile_b[k][x];\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    if (row < rows && col < n)\n"
    "        c[(size_t)row * n + col] = sum;\n"
    "}\n";

/* The whole problem on the host: inputs and result in the device precision,
 * plus the inputs as doubles (holding the same, rounded, values) for the
 * CPU reference. */
struct problem {
    size_t n;
    enum app_precision precision;
    void *a, *b, *c;
    double *a_ref, *b_ref;
};

/* One device's share: rows [first_row, first_row + rows) of A and C. */
struct device_work {
    const struct app_device *device;
    cl_kernel kernel;
    cl_mem a, b, c;
    size_t first_row, rows;
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: gemm [-n SIZE] [-d DEVICES] [--precision single|double] [-r REPEATS] [--help]\n"
            "Computes C = A * B for random square matrices, the rows of C split in one\n"
            "block per device (each device gets its rows of A and all of B).\n"
            "  -n SIZE        matrix size N, 1 to %d (default %d)\n"
            "  -d DEVICES     use the first DEVICES devices of the first platform that\n"
            "                 has devices (default: all); each needs at least one row\n"
            "  --precision P  single (SGEMM, default) or double (DGEMM, needs cl_khr_fp64)\n"
            "  -r REPEATS     timed multiplications, 1 to 1000 (default %d)\n"
            "  --interleave ROUNDS\n"
            "                 compare the devices instead of sharing the work: ROUNDS\n"
            "                 rounds, 1 to 1000, in which each device in turn does the\n"
            "                 whole problem alone (REPEATS multiplications; order 0..D-1\n"
            "                 in even rounds, D-1..0 in odd ones); one TURN line per\n"
            "                 device and round, then one RESULT line for all of them\n"
            "  --help         show this help\n"
            "Timed: REPEATS times writing A and B to the devices, the kernel and reading\n"
            "C back, after one untimed warm-up run; seconds= is their total and\n"
            "rate= is 2*N^3*REPEATS/seconds in GFLOP/s.\n"
            "Checked: %d rows of C spread evenly (all rows if N <= %d) are recomputed on\n"
            "the CPU in double; the error of each element relative to sum_k |a_ik*b_kj|\n"
            "must stay below %g (single) or %g (double).\n"
            "Exit status: 0 verified, 1 results wrong, 2 usage, setup or OpenCL error.\n",
            MAX_N, DEFAULT_N, DEFAULT_REPEATS, CHECK_ROWS, CHECK_ROWS, TOLERANCE_SINGLE,
            TOLERANCE_DOUBLE);
}

/* Fills one input matrix with random values in [-1, 1). */
static void fill_input(void *matrix, double *ref, size_t count, enum app_precision precision,
                       uint64_t *seed)
{
    for (size_t i = 0; i < count; i++) {
        app_real_set(matrix, i, app_random_real(seed, -1.0, 1.0), precision);
        /* Read back, so that the reference sees the float-rounded value. */
        ref[i] = app_real_get(matrix, i, precision);
    }
}

static struct problem make_problem(size_t n, enum app_precision precision)
{
    size_t bytes = n * n * app_real_size(precision);
    struct problem p = {
        .n = n,
        .precision = precision,
        .a = app_malloc(bytes),
        .b = app_malloc(bytes),
        .c = app_malloc(bytes),
        .a_ref = app_malloc(n * n * sizeof(double)),
        .b_ref = app_malloc(n * n * sizeof(double)),
    };
    uint64_t seed = 1;
    fill_input(p.a, p.a_ref, n * n, precision, &seed);
    fill_input(p.b, p.b_ref, n * n, precision, &seed);
    return p;
}

static void free_problem(struct problem *p)
{
    free(p->a);
    free(p->b);
    free(p->c);
    free(p->a_ref);
    free(p->b_ref);
}

static void setup_work(struct device_work *w, const struct app_device *device,
                       const struct problem *p)
{
    size_t row_bytes = p->n * app_real_size(p->precision);
    w->device = device;
    w->kernel = app_create_kernel(device, "gemm");
    app_require_work_group(device, w->kernel, TILE * TILE);
    w->a = app_create_buffer(device, CL_MEM_READ_ONLY, w->rows * row_bytes);
    w->b = app_create_buffer(device, CL_MEM_READ_ONLY, p->n * row_bytes);
    w->c = app_create_buffer(device, CL_MEM_WRITE_ONLY, w->rows * row_bytes);

    cl_uint rows = (cl_uint)w->rows, n = (cl_uint)p->n;
    CL_CHECK(clSetKernelArg(w->kernel, 0, sizeof(cl_mem), &w->a));
    CL_CHECK(clSetKernelArg(w->kernel, 1, sizeof(cl_mem), &w->b));
    CL_CHECK(clSetKernelArg(w->kernel, 2, sizeof(cl_mem), &w->c));
    CL_CHECK(clSetKernelArg(w->kernel, 3, sizeof(cl_uint), &rows));
    CL_CHECK(clSetKernelArg(w->kernel, 4, sizeof(cl_uint), &n));
}

static void release_work(struct device_work *w)
{
    CL_CHECK(clReleaseMemObject(w->c));
    CL_CHECK(clReleaseMemObject(w->b));
    CL_CHECK(clReleaseMemObject(w->a));
    CL_CHECK(clReleaseKernel(w->kernel));
}

/* Queues the transfers and the kernel of one device without waiting, so
 * that all devices work at once.  The host arrays stay untouched until
 * multiply() has waited for every queue. */
static void start_device(const struct device_work *w, const struct problem *p)
{
    cl_command_queue queue = w->device->queue;
    size_t row_bytes = p->n * app_real_size(p->precision);
    size_t offset = w->first_row * row_bytes;

    CL_CHECK(clEnqueueWriteBuffer(queue, w->a, CL_FALSE, 0, w->rows * row_bytes,
                                  (char *)p->a + offset, 0, NULL, NULL));
    CL_CHECK(clEnqueueWriteBuffer(queue, w->b, CL_FALSE, 0, p->n * row_bytes, p->b, 0, NULL, NULL));
    size_t local[2] = {TILE, TILE};
    size_t global[2] = {app_round_up(p->n, TILE), app_round_up(w->rows, TILE)};
    CL_CHECK(clEnqueueNDRangeKernel(queue, w->kernel, 2, NULL, global, local, 0, NULL, NULL));
    CL_CHECK(clEnqueueReadBuffer(queue, w->c, CL_FALSE, 0, w->rows * row_bytes,
                                 (char *)p->c + offset, 0, NULL, NULL));
    CL_CHECK(clFlush(queue));
}

static void multiply(const struct device_work *work, cl_uint count, const struct problem *p)
{
    for (cl_uint d = 0; d < count; d++)
        start_device(&work[d], p);
    for (cl_uint d = 0; d < count; d++)
        CL_CHECK(clFinish(work[d].device->queue));
}

/* Largest error of row i of C relative to the rounding scale of each
 * element; `sum` and `scale` are scratch rows of n doubles. */
static double row_error(const struct problem *p, size_t i, double *sum, double *scale)
{
    size_t n = p->n;
    for (size_t j = 0; j < n; j++)
        sum[j] = scale[j] = 0.0;
    /* k outside j walks A's row and B's rows in memory order. */
    for (size_t k = 0; k < n; k++) {
        double a_ik = p->a_ref[i * n + k];
        const double *b_row = p->b_ref + k * n;
        for (size_t j = 0; j < n; j++) {
            sum[j] += a_ik * b_row[j];
            scale[j] += fabs(a_ik * b_row[j]);
        }
    }
    double worst = 0.0;
    for (size_t j = 0; j < n; j++) {
        double error = fabs(app_real_get(p->c, i * n + j, p->precision) - sum[j]);
        if (scale[j] > 0.0)
            error /= scale[j];
        worst = app_worst_error(worst, error);
    }
    return worst;
}

static double max_error(const struct problem *p)
{
    size_t checked = p->n < CHECK_ROWS ? p->n : CHECK_ROWS;
    double *sum = app_malloc(p->n * sizeof(double));
    double *scale = app_malloc(p->n * sizeof(double));
    double worst = 0.0;
    for (size_t r = 0; r < checked; r++)
        worst = app_worst_error(worst, row_error(p, r * p->n / checked, sum, scale));
    free(sum);
    free(scale);
    return worst;
}

/* One run on `count` devices: the warm-up if asked (it also gets PoCL's
 * compilation at the first launch out of the timed part), then REPEATS
 * timed multiplications, C cleared first so that whatever ran before cannot
 * pass for their result.  Returns the timed seconds; *error is max_error(). */
static double run(const struct device_work *work, cl_uint count, const struct problem *p,
                  uint64_t repeats, bool warm_up, double *error)
{
    if (warm_up)
        multiply(work, count, p);
    memset(p->c, 0, p->n * p->n * app_real_size(p->precision));
    double start = app_seconds();
    for (uint64_t r = 0; r < repeats; r++)
        multiply(work, count, p);
    double seconds = app_seconds() - start;
    *error = max_error(p);
    return seconds;
}

/* --interleave: one device's turn (app_turn_fn), its warm-up in the first. */
struct turn_ctx {
    const struct device_work *work;
    const struct problem *p;
    uint64_t repeats;
};

static double gemm_turn(void *ctx, cl_uint device, bool first, double *error)
{
    const struct turn_ctx *t = ctx;
    return run(&t->work[device], 1, t->p, t->repeats, first, error);
}

int main(int argc, char **argv)
{
    uint64_t n = DEFAULT_N, wanted = 0, repeats = DEFAULT_REPEATS, rounds = 0;
    enum app_precision precision = APP_SINGLE;
    const struct app_option options[] = {
        {"-n", &n, 1, MAX_N},
        {"-d", &wanted, 1, UINT32_MAX},
        {"-r", &repeats, 1, 1000},
        {"--interleave", &rounds, 1, 1000},
    };
    app_parse_args("gemm", argc, argv, options, sizeof(options) / sizeof(options[0]), &precision,
                   usage);

    char build_options[32];
    snprintf(build_options, sizeof(build_options), "-DTILE=%d", TILE);
    cl_uint count = 0;
    struct app_device *devices =
        app_open_devices(wanted, kernel_source, build_options, precision, &count);
    app_require_units(n, count, "rows");

    struct problem p = make_problem(n, precision);
    struct device_work *work = app_calloc(count, sizeof(*work));
    for (cl_uint d = 0; d < count; d++) {
        /* Interleaved, every device gets all rows. */
        app_split(p.n, rounds ? 1 : count, rounds ? 0 : d, &work[d].first_row, &work[d].rows);
        setup_work(&work[d], &devices[d], &p);
        fprintf(stderr, "device %u: rows [%zu, %zu)\n", d, work[d].first_row,
                work[d].first_row + work[d].rows);
    }

    double tolerance = precision == APP_DOUBLE ? TOLERANCE_DOUBLE : TOLERANCE_SINGLE;
    double flops = 2.0 * (double)n * (double)n * (double)n * (double)repeats;
    double seconds;
    bool verified;
    if (rounds) {
        struct turn_ctx ctx = {work, &p, repeats};
        seconds = app_interleave("gemm", rounds, count, gemm_turn, &ctx, flops, tolerance,
                                 &verified);
        flops *= (double)rounds * (double)count; /* RESULT: all turns together */
    } else {
        double error;
        seconds = run(work, count, &p, repeats, true, &error);
        verified = error <= tolerance;
        fprintf(stderr, "max relative error %.3g (tolerance %g)\n", error, tolerance);
    }
    app_print_result("gemm", app_precision_name(precision), n, count, seconds,
                     flops / seconds * 1e-9, "GFLOP/s", verified);

    for (cl_uint d = 0; d < count; d++)
        release_work(&work[d]);
    free(work);
    free_problem(&p);
    app_close_devices(devices, count);
    return verified ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
