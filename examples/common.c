/*
 * common.c: host code shared by the example applications; see common.h.
 */
#include "common.h"
#include "clutil.h"

#include <CL/cl_ext.h> /* CL_PLATFORM_NOT_FOUND_KHR from the ICD loader */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Set once by app_parse_args(), before anything can fail. */
static const char *program_name = "example";

/* Put before every kernel source: the types of app_open_devices(). */
static const char real_types[] = "#ifdef APP_DOUBLE\n"
                                 "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
                                 "typedef double real;\n"
                                 "typedef double3 real3;\n"
                                 "typedef double4 real4;\n"
                                 "#else\n"
                                 "typedef float real;\n"
                                 "typedef float3 real3;\n"
                                 "typedef float4 real4;\n"
                                 "#endif\n";

/* ---- errors ---- */

void app_cl_fail(const char *call, cl_int err, int line)
{
    fprintf(stderr, "%s: %s failed: %s (%d) at line %d\n", program_name, call,
            app_cl_error_name(err), (int)err, line);
    exit(APP_EXIT_ERROR);
}

/* "NAME: message" on stderr. */
static void vsay(const char *format, va_list args)
{
    fprintf(stderr, "%s: ", program_name);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
}

void app_die(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsay(format, args);
    va_end(args);
    exit(APP_EXIT_ERROR);
}

void *app_malloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        app_die("out of memory (%zu bytes)", size);
    return p;
}

void *app_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        app_die("out of memory (%zu x %zu bytes)", count, size);
    return p;
}

/* ---- command line ---- */

/* Prints "NAME: message" and the usage to stderr and exits. */
static _Noreturn void usage_error(void (*usage)(FILE *), const char *format, ...)
    __attribute__((format(printf, 2, 3)));

static void usage_error(void (*usage)(FILE *), const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsay(format, args);
    va_end(args);
    usage(stderr);
    exit(APP_EXIT_ERROR);
}

static const struct app_option *find_option(const struct app_option *options, size_t count,
                                            const char *flag)
{
    for (size_t i = 0; i < count; i++) {
        if (strcmp(options[i].flag, flag) == 0)
            return &options[i];
    }
    return NULL;
}

void app_parse_args(const char *name, int argc, char **argv, const struct app_option *options,
                    size_t num_options, enum app_precision *precision, void (*usage)(FILE *))
{
    program_name = name;
    /* Every option but --help takes a value, hence the step of two. */
    for (int i = 1; i < argc; i += 2) {
        const char *flag = argv[i];
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;

        if (precision && strcmp(flag, "--precision") == 0) {
            if (value && strcmp(value, "single") == 0)
                *precision = APP_SINGLE;
            else if (value && strcmp(value, "double") == 0)
                *precision = APP_DOUBLE;
            else
                usage_error(usage, "%s needs 'single' or 'double'", flag);
            continue;
        }

        const struct app_option *option = find_option(options, num_options, flag);
        if (!option)
            usage_error(usage, "unknown argument '%s'", flag);
        uint64_t number;
        if (!value || !app_parse_u64(value, &number) || number < option->min || number > option->max)
            usage_error(usage, "%s needs an integer from %" PRIu64 " to %" PRIu64, flag,
                        option->min, option->max);
        *option->value = number;
    }
}

const char *app_precision_name(enum app_precision precision)
{
    return precision == APP_DOUBLE ? "double" : "single";
}

size_t app_real_size(enum app_precision precision)
{
    return precision == APP_DOUBLE ? sizeof(cl_double) : sizeof(cl_float);
}

double app_real_get(const void *array, size_t i, enum app_precision precision)
{
    if (precision == APP_DOUBLE)
        return ((const cl_double *)array)[i];
    return ((const cl_float *)array)[i];
}

void app_real_set(void *array, size_t i, double value, enum app_precision precision)
{
    if (precision == APP_DOUBLE)
        ((cl_double *)array)[i] = value;
    else
        ((cl_float *)array)[i] = (cl_float)value;
}

/* ---- devices ---- */

char *app_device_string(cl_device_id device, cl_device_info param)
{
    size_t size = 0;
    CL_CHECK(clGetDeviceInfo(device, param, 0, NULL, &size));
    char *value = app_malloc(size + 1);
    CL_CHECK(clGetDeviceInfo(device, param, size, value, NULL));
    value[size] = '\0';
    return value;
}

cl_device_id *app_find_devices(cl_uint *count)
{
    cl_uint num_platforms = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &num_platforms);
    /* The ICD loader reports "no platforms" as an error, not as zero. */
    if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && num_platforms == 0))
        app_die("no OpenCL platform found");
    CL_CHECK_ERR("clGetPlatformIDs", err);
    cl_platform_id *platforms = app_malloc(num_platforms * sizeof(*platforms));
    CL_CHECK(clGetPlatformIDs(num_platforms, platforms, NULL));

    cl_device_id *devices = NULL;
    for (cl_uint p = 0; p < num_platforms && !devices; p++) {
        *count = 0;
        err = clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL, count);
        if (err == CL_DEVICE_NOT_FOUND || (err == CL_SUCCESS && *count == 0))
            continue;
        CL_CHECK_ERR("clGetDeviceIDs", err);
        devices = app_malloc(*count * sizeof(*devices));
        CL_CHECK(clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, *count, devices, NULL));
        fprintf(stderr, "platform %u: %u device(s)\n", p, *count);
    }
    free(platforms);
    if (!devices)
        app_die("no OpenCL device found on any platform");
    return devices;
}

static void build_program(struct app_device *device, const char *source, const char *options)
{
    cl_int err;
    const char *sources[2] = {real_types, source};
    device->program = clCreateProgramWithSource(device->context, 2, sources, NULL, &err);
    CL_CHECK_ERR("clCreateProgramWithSource", err);

    err = clBuildProgram(device->program, 1, &device->id, options, NULL, NULL);
    if (err == CL_BUILD_PROGRAM_FAILURE) {
        size_t size = 0;
        CL_CHECK(clGetProgramBuildInfo(device->program, device->id, CL_PROGRAM_BUILD_LOG, 0, NULL,
                                       &size));
        char *log = app_malloc(size + 1);
        CL_CHECK(clGetProgramBuildInfo(device->program, device->id, CL_PROGRAM_BUILD_LOG, size, log,
                                       NULL));
        log[size] = '\0';
        fprintf(stderr, "%s: build failed on %s:\n%s\n", program_name, device->name, log);
        free(log);
        exit(APP_EXIT_ERROR);
    }
    CL_CHECK_ERR("clBuildProgram", err);
}

static void open_device(struct app_device *device, cl_device_id id, const char *source,
                        const char *options)
{
    cl_int err;
    device->id = id;
    device->name = app_device_string(id, CL_DEVICE_NAME);
    device->context = clCreateContext(NULL, 1, &id, NULL, NULL, &err);
    CL_CHECK_ERR("clCreateContext", err);
    device->queue = clCreateCommandQueue(device->context, id, 0, &err);
    CL_CHECK_ERR("clCreateCommandQueue", err);
    build_program(device, source, options);
}

struct app_device *app_open_devices(uint64_t wanted, const char *source, const char *build_options,
                                    enum app_precision precision, cl_uint *count)
{
    cl_uint available = 0;
    cl_device_id *ids = app_find_devices(&available);
    if (wanted > available)
        app_die("%" PRIu64 " device(s) requested, only %u available", wanted, available);
    *count = wanted > 0 ? (cl_uint)wanted : available;

    char options[256];
    snprintf(options, sizeof(options), "%s%s", build_options,
             precision == APP_DOUBLE ? " -DAPP_DOUBLE" : "");

    struct app_device *devices = app_calloc(*count, sizeof(*devices));
    for (cl_uint d = 0; d < *count; d++) {
        if (precision == APP_DOUBLE && !app_device_has_extension(ids[d], "cl_khr_fp64"))
            app_die("device %u has no cl_khr_fp64: use --precision single", d);
        open_device(&devices[d], ids[d], source, options);
        fprintf(stderr, "device %u: %s\n", d, devices[d].name);
    }
    free(ids);
    return devices;
}

void app_close_devices(struct app_device *devices, cl_uint count)
{
    for (cl_uint d = 0; d < count; d++) {
        CL_CHECK(clReleaseProgram(devices[d].program));
        CL_CHECK(clReleaseCommandQueue(devices[d].queue));
        CL_CHECK(clReleaseContext(devices[d].context));
        /* Root devices from clGetDeviceIDs are not reference counted. */
        free(devices[d].name);
    }
    free(devices);
}

cl_kernel app_create_kernel(const struct app_device *device, const char *name)
{
    cl_int err;
    cl_kernel kernel = clCreateKernel(device->program, name, &err);
    CL_CHECK_ERR("clCreateKernel", err);
    return kernel;
}

cl_mem app_create_buffer(const struct app_device *device, cl_mem_flags flags, size_t size)
{
    cl_int err;
    cl_mem buffer = clCreateBuffer(device->context, flags, size, NULL, &err);
    CL_CHECK_ERR("clCreateBuffer", err);
    return buffer;
}

void app_require_work_group(const struct app_device *device, cl_kernel kernel, size_t size)
{
    size_t kernel_max = 0;
    CL_CHECK(clGetKernelWorkGroupInfo(kernel, device->id, CL_KERNEL_WORK_GROUP_SIZE,
                                      sizeof(kernel_max), &kernel_max, NULL));
    if (kernel_max < size)
        app_die("%s runs work-groups of at most %zu work-items, this program needs %zu",
                device->name, kernel_max, size);
}

/* ---- work, time, results ---- */

void app_split(size_t total, cl_uint parts, cl_uint index, size_t *first, size_t *count)
{
    size_t base = total / parts, extra = total % parts;
    /* The first `extra` blocks get one unit more. */
    *first = index * base + (index < extra ? index : extra);
    *count = base + (index < extra ? 1 : 0);
}

void app_require_units(uint64_t units, cl_uint devices, const char *what)
{
    if (units < devices)
        app_die("%" PRIu64 " %s cannot keep %u devices busy: give every device at least one", units,
                what, devices);
}

double app_worst_error(double worst, double error)
{
    return error <= worst ? worst : error;
}

size_t app_round_up(size_t value, size_t step)
{
    return (value + step - 1) / step * step;
}

double app_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t app_random(uint64_t *state)
{
    uint64_t x = *state += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

double app_random_real(uint64_t *state, double low, double high)
{
    /* The top 53 bits give every double in [0, 1) the same chance. */
    double unit = (double)(app_random(state) >> 11) * 0x1p-53;
    return low + (high - low) * unit;
}

double app_interleave(const char *app, uint64_t rounds, cl_uint count, app_turn_fn *turn,
                      void *ctx, double flops, double tolerance, bool *verified)
{
    double total = 0.0;
    *verified = true;
    for (uint64_t r = 0; r < rounds; r++) {
        for (cl_uint i = 0; i < count; i++) {
            cl_uint d = r % 2 ? count - 1 - i : i;
            double error, seconds = turn(ctx, d, r == 0, &error);
            bool ok = error <= tolerance;
            total += seconds;
            *verified &= ok;
            printf("TURN app=%s round=%" PRIu64 " device=%u seconds=%.6f rate=%.4g verified=%s\n",
                   app, r, d, seconds, flops / seconds * 1e-9, ok ? "yes" : "no");
            fflush(stdout);
        }
    }
    return total;
}

void app_print_result(const char *app, const char *precision, uint64_t size, cl_uint devices,
                      double seconds, double rate, const char *unit, bool verified)
{
    printf("RESULT app=%s precision=%s size=%" PRIu64 " devices=%u seconds=%.6f rate=%.4g "
           "unit=%s verified=%s\n",
           app, precision, size, devices, seconds, rate, unit, verified ? "yes" : "no");
    fflush(stdout); /* (as it happens: a test that stops the program mid-work looks for it) */
}
