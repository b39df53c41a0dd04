/*
 * common.h: host code shared by the example applications (gemm, nbody,
 * transpose, smithwaterman): error reporting, command-line parsing, device
 * discovery and setup, work splitting, timing and the RESULT line.  Like the
 * applications, it uses only the standard OpenCL 1.2 API and knows nothing
 * of VOCL.
 *
 * Every application exits with APP_EXIT_VERIFIED, APP_EXIT_WRONG or
 * APP_EXIT_ERROR; the helpers here exit with APP_EXIT_ERROR on any usage,
 * setup or OpenCL error, so callers never check their results.
 */
#ifndef VOCL_EXAMPLES_COMMON_H
#define VOCL_EXAMPLES_COMMON_H

/* The build may pass a newer target on the command line; the examples
 * deliberately stick to the 1.2 API, so override it before any CL header. */
#undef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#ifndef CL_USE_DEPRECATED_OPENCL_1_2_APIS
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#endif

#include <CL/cl.h>

#include "clutil.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
    APP_EXIT_VERIFIED = 0,
    APP_EXIT_WRONG = 1, /* ran, but the results differ from the CPU reference */
    APP_EXIT_ERROR = 2, /* usage, setup or OpenCL error */
};

/* ---- errors ---- */

/* app_cl_fail (clutil.h) prints "NAME: CALL failed: CL_ERROR_NAME (code) at
 * line LINE" and exits with APP_EXIT_ERROR. */

/* Prints "NAME: message" and exits with APP_EXIT_ERROR. */
_Noreturn void app_die(const char *format, ...) __attribute__((format(printf, 1, 2)));

/* malloc and calloc that exit on failure; zero sizes are fine. */
void *app_malloc(size_t size);
void *app_calloc(size_t count, size_t size);

/* ---- command line ---- */

enum app_precision { APP_SINGLE, APP_DOUBLE };

/* A numeric option: "-n 512" stores 512 in *value if min <= 512 <= max. */
struct app_option {
    const char *flag;
    uint64_t *value;
    uint64_t min, max;
};

/* Parses argv against `options`; --precision single|double is accepted only
 * when `precision` is not NULL.  `name` prefixes every later message.
 * --help prints usage(stdout) and exits 0; any error prints a message and
 * usage(stderr) and exits with APP_EXIT_ERROR. */
void app_parse_args(const char *name, int argc, char **argv, const struct app_option *options,
                    size_t num_options, enum app_precision *precision, void (*usage)(FILE *));

const char *app_precision_name(enum app_precision precision);

/* Bytes of one `real` (see app_open_devices()): cl_float or cl_double. */
size_t app_real_size(enum app_precision precision);

/* Element i of an array of reals of the given precision, as a double. */
double app_real_get(const void *array, size_t i, enum app_precision precision);
void app_real_set(void *array, size_t i, double value, enum app_precision precision);

/* ---- devices ---- */

/* One device with its own context, in-order queue and built program. */
struct app_device {
    cl_device_id id;
    char *name;
    cl_context context;
    cl_command_queue queue;
    cl_program program;
};

/* The value of a string query of a device, NUL-terminated (malloc'd). */
char *app_device_string(cl_device_id device, cl_device_info param);

/* The devices of the first platform that has any (*count of them, the
 * array malloc'd); says how many on stderr, dies where there are none. */
cl_device_id *app_find_devices(cl_uint *count);

/* Opens the first `wanted` devices (0: all) of the first platform that has
 * devices, and builds `source` for each with `build_options` (the build log
 * is printed if that fails).  The source may use the types `real`, `real3`
 * and `real4`: float for APP_SINGLE; double for APP_DOUBLE, which needs
 * cl_khr_fp64 on every device. */
struct app_device *app_open_devices(uint64_t wanted, const char *source, const char *build_options,
                                    enum app_precision precision, cl_uint *count);
void app_close_devices(struct app_device *devices, cl_uint count);

cl_kernel app_create_kernel(const struct app_device *device, const char *name);
cl_mem app_create_buffer(const struct app_device *device, cl_mem_flags flags, size_t size);

/* Ends with APP_EXIT_ERROR unless the device runs `kernel` in work-groups
 * of `size` work-items (the tiled kernels need a fixed size). */
void app_require_work_group(const struct app_device *device, cl_kernel kernel, size_t size);

/* ---- work, time, results ---- */

/* Splits `total` units into `parts` contiguous blocks whose sizes differ by
 * at most one; block `index` is [*first, *first + *count). */
void app_split(size_t total, cl_uint parts, cl_uint index, size_t *first, size_t *count);

/* Ends with APP_EXIT_ERROR if `units` cannot give every device some work. */
void app_require_units(uint64_t units, cl_uint devices, const char *what);

/* The larger of two errors, where a NaN counts as larger than anything:
 * a wrong result must never pass as a small error. */
double app_worst_error(double worst, double error);

/* Rounds `value` up to a multiple of `step`. */
size_t app_round_up(size_t value, size_t step);

/* Seconds on a monotonic clock, for measuring intervals. */
double app_seconds(void);

/* splitmix64: a small, seeded generator, so every run sees the same data. */
uint64_t app_random(uint64_t *state);
/* Uniform in [low, high). */
double app_random_real(uint64_t *state, double low, double high);

/* --interleave: one turn of `device` alone on the whole problem, its warm-up
 * first when `first`; returns its timed seconds and sets *error. */
typedef double app_turn_fn(void *ctx, cl_uint device, bool first, double *error);
/* Runs `rounds` rounds of one turn per device, devices 0..count-1 in even
 * rounds and the other way round in odd ones, and prints a TURN line for
 * each (the RESULT line's fields for one turn, with round= and device=).
 * `flops`: of one turn.  Returns the seconds of all turns; *verified is
 * whether every error stayed within `tolerance`. */
double app_interleave(const char *app, uint64_t rounds, cl_uint count, app_turn_fn *turn,
                      void *ctx, double flops, double tolerance, bool *verified);
/* The machine-readable last line of every application's stdout. */
void app_print_result(const char *app, const char *precision, uint64_t size, cl_uint devices,
                      double seconds, double rate, const char *unit, bool verified);

#endif
