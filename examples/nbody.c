/*
 * nbody: all-pairs gravitational N-body simulation with softening, in single
 * or double precision.  The bodies are split into one block per device; in
 * each step every device moves its bodies using the positions of ALL bodies,
 * staged tile by tile in local memory, then the host gathers every device's
 * new positions and sends the full array to every device.  A plain OpenCL
 * 1.2 program: run it natively or under vocl-run.
 */
#include "common.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LOCAL                 64 /* work-group size, and bodies per tile of local memory */
#define DEFAULT_BODIES        4096
#define MAX_BODIES            1048576
#define DEFAULT_STEPS         10
#define FULL_CHECK_MAX        4096 /* up to this many bodies, the CPU redoes every step */
#define SAMPLE                256  /* bodies checked after step 1 above that */
#define FLOPS_PER_INTERACTION 20

/* Units with G = 1; total mass 1 in a cube of side 2, so accelerations are
 * of order 1 and bodies move little in a few steps of DT. */
#define DT  0.01
#define EPS 0.1 /* softening length: close pairs do not blow up */

/* Largest accepted error of a coordinate, relative to the largest distance
 * a coordinate moved.  The CPU reference computes in double: single
 * precision differs from it by the rounding of coordinates near 1, which is
 * large next to one step's move (about 1e-3). */
#define TOLERANCE_SINGLE 1e-3
#define TOLERANCE_DOUBLE 1e-9

/* A body is a real4: position x, y, z and its mass in w.  Positions are
 * read from `pos` (all n bodies); the device's block of bodies starts at
 * `first`.  The last tile is padded with massless bodies, which pull with
 * zero force (the softening keeps their distance nonzero). */
static const char kernel_source[] =
    "__kernel void nbody_step(__global const real4 *pos, __global real4 *vel,\n"
    "                         __global real4 *new_pos, uint first, uint count,\n"
    "                         uint n, real dt, real eps2)\n"
    "{\n"
    "    __local real4 tile[LOCAL];\n"
    "    uint i = get_global_id(0), lid = get_local_id(0);\n"
    "    real4 me = i < count ? pos[first + i] : (real4)(0);\n"
    "    real3 acc = (real3)(0);\n"
    "    for (uint base = 0; base < n; base += LOCAL) {\n"
    "        tile[lid] = base + lid < n ? pos[base + lid] : (real4)(0);\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "        for (uint k = 0; k < LOCAL; k++) {\n"
    "            real3 d = tile[k].xyz - me.xyz;\n"
    "            real inv = rsqrt(dot(d, d) + eps2);\n"
    "            acc += d * (tile[k].w * inv * inv * inv);\n"
    "        }\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    }\n"
    "    if (i < count) {\n"
    "        real4 v = vel[i];\n"
    "        v.xyz += acc * dt;\n"
    "        vel[i] = v;\n"
    "        new_pos[i] = (real4)(me.xyz + v.xyz * dt, me.w);\n"
    "    }\n"
    "}\n";

/* The host's copies, 4 reals per body in the device precision: the initial
 * state, and the two position arrays the steps alternate between (the host
 * gathers into one while the other is still being sent to the devices). */
struct system {
    size_t n;
    enum app_precision precision;
    void *initial_pos, *initial_vel;
    void *pos[2];
};

/* One device's share: bodies [first, first + count). */
struct device_work {
    const struct app_device *device;
    cl_kernel kernel;
    cl_mem pos, vel, new_pos;
    size_t first, count;
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: nbody [-n BODIES] [-s STEPS] [-d DEVICES] [--precision single|double] "
            "[--help]\n"
            "Simulates gravity between all pairs of random bodies, the bodies split in\n"
            "one block per device; every step each device sends its new positions to\n"
            "the host, which sends all positions to every device.\n"
            "  -n BODIES      number of bodies, 1 to %d (default %d)\n"
            "  -s STEPS       timed time steps, 1 to 1000000 (default %d)\n"
            "  -d DEVICES     use the first DEVICES devices of the first platform that\n"
            "                 has devices (default: all); each needs at least one body\n"
            "  --precision P  single (default) or double (needs cl_khr_fp64)\n"
            "  --interleave ROUNDS\n"
            "                 compare the devices instead of sharing the work: ROUNDS\n"
            "                 rounds, 1 to 1000, in which each device in turn runs the\n"
            "                 whole simulation alone from the start (order 0..D-1 in\n"
            "                 even rounds, D-1..0 in odd ones); one TURN line per device\n"
            "                 and round, then one RESULT line for all of them\n"
            "  --help         show this help\n"
            "Timed: STEPS steps (kernel, reading each device's positions, writing all\n"
            "positions to every device), after one untimed warm-up step; seconds= is\n"
            "their total and rate= is %d flops per interaction * BODIES^2 * STEPS /\n"
            "seconds in GFLOP/s.\n"
            "Checked: with up to %d bodies, the CPU redoes all steps for all bodies in\n"
            "double; with more, it redoes the warm-up step (the first step of the\n"
            "simulation) for %d bodies spread evenly.\n"
            "The largest position error, relative to the largest distance a coordinate\n"
            "moved, must stay below %g (single) or %g (double).\n"
            "Exit status: 0 verified, 1 results wrong, 2 usage, setup or OpenCL error.\n",
            MAX_BODIES, DEFAULT_BODIES, DEFAULT_STEPS, FLOPS_PER_INTERACTION, FULL_CHECK_MAX,
            SAMPLE, TOLERANCE_SINGLE, TOLERANCE_DOUBLE);
}

static struct system make_system(size_t n, enum app_precision precision)
{
    size_t bytes = n * 4 * app_real_size(precision);
    struct system s = {
        .n = n,
        .precision = precision,
        .initial_pos = app_malloc(bytes),
        .initial_vel = app_malloc(bytes),
        .pos = {app_malloc(bytes), app_malloc(bytes)},
    };
    uint64_t seed = 1;
    for (size_t i = 0; i < n; i++) {
        for (size_t c = 0; c < 3; c++) {
            app_real_set(s.initial_pos, 4 * i + c, app_random_real(&seed, -1.0, 1.0), precision);
            app_real_set(s.initial_vel, 4 * i + c, app_random_real(&seed, -0.1, 0.1), precision);
        }
        app_real_set(s.initial_pos, 4 * i + 3, app_random_real(&seed, 0.5, 1.5) / (double)n,
                     precision);
        app_real_set(s.initial_vel, 4 * i + 3, 0.0, precision);
    }
    return s;
}

static void free_system(struct system *s)
{
    free(s->initial_pos);
    free(s->initial_vel);
    free(s->pos[0]);
    free(s->pos[1]);
}

/* Sets a kernel argument of type `real` from a double. */
static void set_real_arg(cl_kernel kernel, cl_uint index, double value,
                         enum app_precision precision)
{
    cl_double as_double = value;
    cl_float as_float = (cl_float)value;
    if (precision == APP_DOUBLE)
        CL_CHECK(clSetKernelArg(kernel, index, sizeof(as_double), &as_double));
    else
        CL_CHECK(clSetKernelArg(kernel, index, sizeof(as_float), &as_float));
}

static void setup_work(struct device_work *w, const struct app_device *device,
                       const struct system *s)
{
    size_t body_bytes = 4 * app_real_size(s->precision);
    w->device = device;
    w->kernel = app_create_kernel(device, "nbody_step");
    app_require_work_group(device, w->kernel, LOCAL);
    w->pos = app_create_buffer(device, CL_MEM_READ_ONLY, s->n * body_bytes);
    w->vel = app_create_buffer(device, CL_MEM_READ_WRITE, w->count * body_bytes);
    w->new_pos = app_create_buffer(device, CL_MEM_WRITE_ONLY, w->count * body_bytes);

    cl_uint first = (cl_uint)w->first, count = (cl_uint)w->count, n = (cl_uint)s->n;
    CL_CHECK(clSetKernelArg(w->kernel, 0, sizeof(cl_mem), &w->pos));
    CL_CHECK(clSetKernelArg(w->kernel, 1, sizeof(cl_mem), &w->vel));
    CL_CHECK(clSetKernelArg(w->kernel, 2, sizeof(cl_mem), &w->new_pos));
    CL_CHECK(clSetKernelArg(w->kernel, 3, sizeof(cl_uint), &first));
    CL_CHECK(clSetKernelArg(w->kernel, 4, sizeof(cl_uint), &count));
    CL_CHECK(clSetKernelArg(w->kernel, 5, sizeof(cl_uint), &n));
    set_real_arg(w->kernel, 6, DT, s->precision);
    set_real_arg(w->kernel, 7, EPS * EPS, s->precision);
}

/* The initial state; the steps keep it up to date from then on. */
static void load_initial(const struct device_work *w, const struct system *s)
{
    size_t body_bytes = 4 * app_real_size(s->precision);
    cl_command_queue queue = w->device->queue;
    CL_CHECK(clEnqueueWriteBuffer(queue, w->pos, CL_TRUE, 0, s->n * body_bytes, s->initial_pos, 0,
                                  NULL, NULL));
    CL_CHECK(clEnqueueWriteBuffer(queue, w->vel, CL_TRUE, 0, w->count * body_bytes,
                                  (char *)s->initial_vel + w->first * body_bytes, 0, NULL, NULL));
}

static void release_work(struct device_work *w)
{
    CL_CHECK(clReleaseMemObject(w->new_pos));
    CL_CHECK(clReleaseMemObject(w->vel));
    CL_CHECK(clReleaseMemObject(w->pos));
    CL_CHECK(clReleaseKernel(w->kernel));
}

/* One time step on every device.  `current` holds all positions, `next`
 * gets the new ones; unless the devices already have `current` (the first
 * step), it is sent to each of them first. */
static void step(const struct device_work *work, cl_uint count, const struct system *s,
                 const void *current, void *next, bool send)
{
    size_t body_bytes = 4 * app_real_size(s->precision);
    for (cl_uint d = 0; d < count; d++) {
        const struct device_work *w = &work[d];
        cl_command_queue queue = w->device->queue;
        if (send)
            CL_CHECK(clEnqueueWriteBuffer(queue, w->pos, CL_FALSE, 0, s->n * body_bytes, current, 0,
                                          NULL, NULL));
        size_t local = LOCAL, global = app_round_up(w->count, LOCAL);
        CL_CHECK(clEnqueueNDRangeKernel(queue, w->kernel, 1, NULL, &global, &local, 0, NULL, NULL));
        CL_CHECK(clEnqueueReadBuffer(queue, w->new_pos, CL_FALSE, 0, w->count * body_bytes,
                                     (char *)next + w->first * body_bytes, 0, NULL, NULL));
        CL_CHECK(clFlush(queue));
    }
    for (cl_uint d = 0; d < count; d++)
        CL_CHECK(clFinish(work[d].device->queue));
}

/* The CPU reference of the kernel for body i, in double: updates its
 * velocity vel[4i..4i+2] and writes its new position to new_pos. */
static void cpu_body(const double *pos, double *vel, double *new_pos, size_t n, size_t i)
{
    const double *me = pos + 4 * i;
    double acc[3] = {0.0, 0.0, 0.0};
    for (size_t j = 0; j < n; j++) {
        const double *other = pos + 4 * j;
        double d[3] = {other[0] - me[0], other[1] - me[1], other[2] - me[2]};
        double inv = 1.0 / sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2] + EPS * EPS);
        double pull = other[3] * inv * inv * inv;
        for (size_t c = 0; c < 3; c++)
            acc[c] += d[c] * pull;
    }
    for (size_t c = 0; c < 3; c++) {
        vel[4 * i + c] += acc[c] * DT;
        new_pos[4 * i + c] = me[c] + vel[4 * i + c] * DT;
    }
    new_pos[4 * i + 3] = me[3];
}

/* Reads an array of 4 * n reals into doubles. */
static double *to_doubles(const void *array, size_t n, enum app_precision precision)
{
    double *out = app_malloc(4 * n * sizeof(double));
    for (size_t i = 0; i < 4 * n; i++)
        out[i] = app_real_get(array, i, precision);
    return out;
}

/* Largest difference between the computed and reference positions of
 * `bodies` (every body if NULL), relative to the largest distance a
 * reference coordinate moved from `start`: relative to the coordinates
 * themselves, a wrong force would hide in a few steps' small moves. */
static double position_error(const void *computed, const double *ref, const double *start,
                             const size_t *bodies, size_t count, enum app_precision precision)
{
    double worst = 0.0, largest_move = 0.0;
    for (size_t b = 0; b < count; b++) {
        size_t i = bodies ? bodies[b] : b;
        for (size_t c = 0; c < 3; c++) {
            size_t k = 4 * i + c;
            double error = fabs(app_real_get(computed, k, precision) - ref[k]);
            worst = app_worst_error(worst, error);
            if (fabs(ref[k] - start[k]) > largest_move)
                largest_move = fabs(ref[k] - start[k]);
        }
    }
    return largest_move > 0.0 ? worst / largest_move : worst;
}

/* Redoes `steps` steps for every body on the CPU and compares the final
 * positions. */
static double check_all(const struct system *s, const void *final, size_t steps)
{
    double *start = to_doubles(s->initial_pos, s->n, s->precision);
    double *pos = to_doubles(s->initial_pos, s->n, s->precision);
    double *vel = to_doubles(s->initial_vel, s->n, s->precision);
    double *next = app_malloc(4 * s->n * sizeof(double));
    for (size_t t = 0; t < steps; t++) {
        for (size_t i = 0; i < s->n; i++)
            cpu_body(pos, vel, next, s->n, i);
        double *swap = pos;
        pos = next;
        next = swap;
    }
    double error = position_error(final, pos, start, NULL, s->n, s->precision);
    free(start);
    free(pos);
    free(vel);
    free(next);
    return error;
}

/* Redoes the first step on the CPU for SAMPLE bodies spread evenly and
 * compares their positions after it. */
static double check_sample(const struct system *s, const void *after_first)
{
    double *pos = to_doubles(s->initial_pos, s->n, s->precision);
    double *vel = to_doubles(s->initial_vel, s->n, s->precision);
    double *next = app_malloc(4 * s->n * sizeof(double));
    size_t bodies[SAMPLE];
    for (size_t b = 0; b < SAMPLE; b++) {
        bodies[b] = b * s->n / SAMPLE;
        cpu_body(pos, vel, next, s->n, bodies[b]);
    }
    double error = position_error(after_first, next, pos, bodies, SAMPLE, s->precision);
    free(pos);
    free(vel);
    free(next);
    return error;
}

/* The whole simulation on `count` devices from the initial state: the
 * warm-up, which is the first step (it also gets PoCL's compilation at the
 * first launch out of the timed part), then `steps` timed steps.  Steps
 * alternate between the two position arrays, starting in pos[1].  Returns
 * the timed seconds; *error is the check's (see usage()). */
static double simulate(const struct device_work *work, cl_uint count, const struct system *s,
                       uint64_t steps, double *error)
{
    for (cl_uint d = 0; d < count; d++)
        load_initial(&work[d], s);
    step(work, count, s, s->initial_pos, s->pos[1], false);
    bool sampled = s->n > FULL_CHECK_MAX;
    if (sampled)
        *error = check_sample(s, s->pos[1]);

    double start = app_seconds();
    for (uint64_t t = 1; t <= steps; t++)
        step(work, count, s, s->pos[t % 2], s->pos[(t + 1) % 2], true);
    double seconds = app_seconds() - start;

    if (!sampled)
        *error = check_all(s, s->pos[(steps + 1) % 2], steps + 1);
    return seconds;
}

/* --interleave: one device's turn (app_turn_fn); every turn is a whole
 * simulation, its own warm-up included. */
struct turn_ctx {
    const struct device_work *work;
    const struct system *s;
    uint64_t steps;
};

static double nbody_turn(void *ctx, cl_uint device, bool first, double *error)
{
    const struct turn_ctx *t = ctx;
    (void)first;
    return simulate(&t->work[device], 1, t->s, t->steps, error);
}

int main(int argc, char **argv)
{
    uint64_t n = DEFAULT_BODIES, steps = DEFAULT_STEPS, wanted = 0, rounds = 0;
    enum app_precision precision = APP_SINGLE;
    const struct app_option options[] = {
        {"-n", &n, 1, MAX_BODIES},
        {"-s", &steps, 1, 1000000},
        {"-d", &wanted, 1, UINT32_MAX},
        {"--interleave", &rounds, 1, 1000},
    };
    app_parse_args("nbody", argc, argv, options, sizeof(options) / sizeof(options[0]), &precision,
                   usage);

    char build_options[32];
    snprintf(build_options, sizeof(build_options), "-DLOCAL=%d", LOCAL);
    cl_uint count = 0;
    struct app_device *devices =
        app_open_devices(wanted, kernel_source, build_options, precision, &count);
    app_require_units(n, count, "bodies");

    struct system s = make_system(n, precision);
    struct device_work *work = app_calloc(count, sizeof(*work));
    for (cl_uint d = 0; d < count; d++) {
        /* Interleaved, every device gets all bodies. */
        app_split(s.n, rounds ? 1 : count, rounds ? 0 : d, &work[d].first, &work[d].count);
        setup_work(&work[d], &devices[d], &s);
        fprintf(stderr, "device %u: bodies [%zu, %zu)\n", d, work[d].first,
                work[d].first + work[d].count);
    }

    double tolerance = precision == APP_DOUBLE ? TOLERANCE_DOUBLE : TOLERANCE_SINGLE;
    double flops = FLOPS_PER_INTERACTION * (double)n * (double)n * (double)steps;
    double seconds;
    bool verified;
    if (rounds) {
        struct turn_ctx ctx = {work, &s, steps};
        seconds = app_interleave("nbody", rounds, count, nbody_turn, &ctx, flops, tolerance,
                                 &verified);
        flops *= (double)rounds * (double)count; /* RESULT: all turns together */
    } else {
        double error;
        seconds = simulate(work, count, &s, steps, &error);
        verified = error <= tolerance;
        fprintf(stderr, "%s: max relative error %.3g (tolerance %g)\n",
                n > FULL_CHECK_MAX ? "first step, sampled bodies" : "all steps, all bodies", error,
                tolerance);
    }
    app_print_result("nbody", app_precision_name(precision), n, count, seconds,
                     flops / seconds * 1e-9, "GFLOP/s", verified);

    for (cl_uint d = 0; d < count; d++)
        release_work(&work[d]);
    free(work);
    free_system(&s);
    app_close_devices(devices, count);
    return verified ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
