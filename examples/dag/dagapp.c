/*
 * dagapp.c: see dagapp.h.
 */
#include "dagapp.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *dagapp_name = "dag-app";

void dagapp_parse(const char *name, int argc, char **argv, struct dagapp_opts *opts,
                  uint64_t max_size, void (*usage)(FILE *))
{
    dagapp_name = name;
    /* --query takes a string: take it out before the numeric options. */
    char **rest = app_calloc((size_t)argc + 1, sizeof(*rest));
    int n = 0;
    rest[n++] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--query") == 0 || strcmp(argv[i], "-q") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "%s: %s needs a DQL query\n", name, argv[i]);
                usage(stderr);
                exit(APP_EXIT_ERROR);
            }
            opts->query = argv[++i];
        } else {
            rest[n++] = argv[i];
        }
    }
    const struct app_option options[] = {
        {"-n", &opts->size, 1, max_size},       {"-s", &opts->steps, 1, 100000},
        {"--seed", &opts->seed, 0, UINT64_MAX}, {"-r", &opts->repeats, 1, 1000},
        {"-d", &opts->devices, 0, 4096},
    };
    app_parse_args(name, n, rest, options, sizeof(options) / sizeof(options[0]), NULL, usage);
    free(rest);
}

void dagapp_plain_result(const char *app, uint64_t size, double seconds, uint64_t checksum,
                         bool verified)
{
    dagapp_multi_result(app, size, 1, seconds, checksum, verified);
}

void dagapp_multi_result(const char *app, uint64_t size, cl_uint devices, double seconds,
                         uint64_t checksum, bool verified)
{
    printf("RESULT app=%s size=%" PRIu64 " devices=%u seconds=%.6f checksum=%016" PRIx64
           " verified=%s\n",
           app, size, devices, seconds, checksum, verified ? "yes" : "no");
}

void plain_open(struct plain_device *dev)
{
    cl_platform_id platform;
    cl_uint n = 0;
    CL_CHECK(clGetPlatformIDs(1, &platform, &n));
    CL_CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &dev->id, NULL));
    cl_int err;
    dev->context = clCreateContext(NULL, 1, &dev->id, NULL, NULL, &err);
    CL_CHECK_ERR("clCreateContext", err);
    dev->queue = clCreateCommandQueue(dev->context, dev->id, 0, &err);
    CL_CHECK_ERR("clCreateCommandQueue", err);
}

void plain_close(struct plain_device *dev)
{
    CL_CHECK(clReleaseCommandQueue(dev->queue));
    CL_CHECK(clReleaseContext(dev->context));
}

cl_kernel plain_kernel(const struct plain_device *dev, const char *source, const char *name)
{
    cl_int err;
    cl_program program = clCreateProgramWithSource(dev->context, 1, &source, NULL, &err);
    CL_CHECK_ERR("clCreateProgramWithSource", err);
    CL_CHECK(clBuildProgram(program, 1, &dev->id, "", NULL, NULL));
    cl_kernel kernel = clCreateKernel(program, name, &err);
    CL_CHECK_ERR("clCreateKernel", err);
    CL_CHECK(clReleaseProgram(program));
    return kernel;
}

void plain_open_all(struct plain_devices *devs, uint64_t wanted)
{
    cl_platform_id platform;
    CL_CHECK(clGetPlatformIDs(1, &platform, NULL));
    CL_CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, NULL, &devs->count));
    if (wanted > devs->count)
        app_die("%" PRIu64 " device(s) requested, only %u available", wanted, devs->count);
    if (wanted)
        devs->count = (cl_uint)wanted;
    devs->ids = app_calloc(devs->count, sizeof(*devs->ids));
    CL_CHECK(clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, devs->count, devs->ids, NULL));
    cl_int err;
    devs->context = clCreateContext(NULL, devs->count, devs->ids, NULL, NULL, &err);
    CL_CHECK_ERR("clCreateContext", err);
    devs->queues = app_calloc(devs->count, sizeof(*devs->queues));
    for (cl_uint d = 0; d < devs->count; d++) {
        devs->queues[d] = clCreateCommandQueue(devs->context, devs->ids[d], 0, &err);
        CL_CHECK_ERR("clCreateCommandQueue", err);
    }
}

void plain_close_all(struct plain_devices *devs)
{
    for (cl_uint d = 0; d < devs->count; d++)
        CL_CHECK(clReleaseCommandQueue(devs->queues[d]));
    CL_CHECK(clReleaseContext(devs->context));
    free(devs->queues);
    free(devs->ids);
}

cl_kernel plain_kernel_all(const struct plain_devices *devs, const char *source, const char *name)
{
    cl_int err;
    cl_program program = clCreateProgramWithSource(devs->context, 1, &source, NULL, &err);
    CL_CHECK_ERR("clCreateProgramWithSource", err);
    CL_CHECK(clBuildProgram(program, devs->count, devs->ids, "", NULL, NULL));
    cl_kernel kernel = clCreateKernel(program, name, &err);
    CL_CHECK_ERR("clCreateKernel", err);
    CL_CHECK(clReleaseProgram(program));
    return kernel;
}

uint64_t dagapp_checksum(const void *data, size_t size)
{
    /* FNV-1a: the same bytes give the same sum, natively or not. */
    const unsigned char *p = data;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < size; i++)
        h = (h ^ p[i]) * UINT64_C(0x100000001b3);
    return h;
}

double dagapp_rel_error(double got, double want)
{
    double e = fabs(got - want) / (fabs(want) > 1.0 ? fabs(want) : 1.0);
    return e == e ? e : INFINITY;
}

/* ---- linreg ---- */

const char linreg_source[] =
    "__kernel void linreg(__global const float *x, __global const float *y,\n"
    "                     __global const float *a, __global const float *b,\n"
    "                     __global float *err, int points)\n"
    "{\n"
    "    int m = get_global_id(0);\n"
    "    float s = 0.0f;\n"
    "    for (int k = 0; k < points; k++) {\n"
    "        float d = y[k] - (a[m] * x[k] + b[m]);\n"
    "        s += d * d;\n"
    "    }\n"
    "    err[m] = s / points;\n"
    "}\n";

void linreg_input(uint64_t seed, size_t models, size_t points, float *x, float *y, float *a,
                  float *b)
{
    uint64_t state = seed;
    for (size_t k = 0; k < points; k++) {
        x[k] = (float)app_random_real(&state, -10, 10);
        y[k] = (float)(2.5 * x[k] - 1.0 + app_random_real(&state, -1, 1));
    }
    for (size_t m = 0; m < models; m++) {
        a[m] = (float)app_random_real(&state, 0, 5);
        b[m] = (float)app_random_real(&state, -3, 3);
    }
}

bool linreg_check(size_t models, size_t points, const float *x, const float *y, const float *a,
                  const float *b, const float *err)
{
    double worst = 0;
    for (size_t m = 0; m < models; m++) {
        double s = 0;
        for (size_t k = 0; k < points; k++) {
            double d = (double)y[k] - ((double)a[m] * x[k] + b[m]);
            s += d * d;
        }
        worst = app_worst_error(worst, dagapp_rel_error(err[m], s / (double)points));
    }
    fprintf(stderr, "linreg: worst relative error %.3g\n", worst);
    return worst < 1e-3;
}

/* ---- matmul ---- */

const char matmul_source[] =
    "__kernel void matmul(__global const float *a, __global const float *b,\n"
    "                     __global float *c, int n)\n"
    "{\n"
    "    int j = get_global_id(0), i = get_global_id(1);\n"
    "    float s = 0.0f;\n"
    "    for (int k = 0; k < n; k++)\n"
    "        s += a[i * n + k] * b[k * n + j];\n"
    "    c[i * n + j] = s;\n"
    "}\n";

void matrix_input(uint64_t seed, size_t n, float *m)
{
    uint64_t state = seed;
    for (size_t i = 0; i < n * n; i++)
        m[i] = (float)app_random_real(&state, -1, 1);
}

void matmul_cpu(size_t n, const float *a, const float *b, double *c)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++)
            c[i * n + j] = 0;
        for (size_t k = 0; k < n; k++) {
            double aik = a[i * n + k];
            for (size_t j = 0; j < n; j++)
                c[i * n + j] += aik * b[k * n + j];
        }
    }
}

bool matrix_check(size_t n, const double *want, const float *got)
{
    /* Errors relative to the size of a typical element of the product. */
    double scale = 0;
    for (size_t i = 0; i < n * n; i++)
        scale += fabs(want[i]);
    scale = scale / (double)(n * n) + 1e-30;
    double worst = 0;
    for (size_t i = 0; i < n * n; i++) {
        double e = fabs(got[i] - want[i]) / scale;
        worst = app_worst_error(worst, e == e ? e : INFINITY);
    }
    fprintf(stderr, "matrix: worst error %.3g of the mean magnitude\n", worst);
    return worst < 1e-3;
}

/* ---- nbody ---- */

const char nbody_source[] =
    "__kernel void nbody(__global const float4 *pos, __global float4 *vel,\n"
    "                    __global float4 *out, int n, int first, float dt)\n"
    "{\n"
    "    int i = get_global_id(0);\n"
    "    float4 p = pos[first + i];\n"
    "    float3 acc = (float3)(0.0f);\n"
    "    for (int j = 0; j < n; j++) {\n"
    "        float4 q = pos[j];\n"
    "        float3 d = q.xyz - p.xyz;\n"
    "        float r2 = dot(d, d) + 0.01f;\n"
    "        float inv = 1.0f / sqrt(r2);\n"
    "        acc += q.w * inv * inv * inv * d;\n"
    "    }\n"
    "    float4 v = vel[i];\n"
    "    v.xyz += acc * dt;\n"
    "    vel[i] = v;\n"
    "    p.xyz += v.xyz * dt;\n"
    "    out[i] = p;\n"
    "}\n";

void nbody_input(uint64_t seed, size_t n, float *pos, float *vel)
{
    uint64_t state = seed;
    for (size_t i = 0; i < n; i++) {
        for (int c = 0; c < 3; c++) {
            pos[4 * i + c] = (float)app_random_real(&state, -1, 1);
            vel[4 * i + c] = (float)app_random_real(&state, -0.05, 0.05);
        }
        pos[4 * i + 3] = (float)app_random_real(&state, 0.5, 1) / (float)n;
        vel[4 * i + 3] = 0;
    }
}

bool nbody_check(size_t n, uint64_t steps, const float *pos0, const float *vel0, const float *pos)
{
    const double dt = 0.01;
    double *p = app_calloc(4 * n, sizeof(*p)), *v = app_calloc(4 * n, sizeof(*v));
    double *next = app_calloc(4 * n, sizeof(*next));
    for (size_t i = 0; i < 4 * n; i++) {
        p[i] = pos0[i];
        v[i] = vel0[i];
    }
    for (uint64_t s = 0; s < steps; s++) {
        for (size_t i = 0; i < n; i++) {
            double acc[3] = {0, 0, 0};
            for (size_t j = 0; j < n; j++) {
                double d[3], r2 = 0.01;
                for (int c = 0; c < 3; c++) {
                    d[c] = p[4 * j + c] - p[4 * i + c];
                    r2 += d[c] * d[c];
                }
                double inv = 1 / sqrt(r2);
                for (int c = 0; c < 3; c++)
                    acc[c] += p[4 * j + 3] * inv * inv * inv * d[c];
            }
            for (int c = 0; c < 3; c++) {
                v[4 * i + c] += acc[c] * dt;
                next[4 * i + c] = p[4 * i + c] + v[4 * i + c] * dt;
            }
            next[4 * i + 3] = p[4 * i + 3];
        }
        double *t = p;
        p = next;
        next = t;
    }
    double worst = 0;
    for (size_t i = 0; i < 4 * n; i++)
        worst = app_worst_error(worst, dagapp_rel_error(pos[i], p[i]));
    free(p);
    free(v);
    free(next);
    fprintf(stderr, "nbody: worst error %.3g\n", worst);
    return worst < 1e-3;
}

/* ---- perlin ---- */

/* The same code is compiled as the kernel's (OpenCL C) and as the CPU
 * reference (C): written once, turned into a string for OpenCL. */
typedef unsigned int uint;
#define STRINGIFY(...) #__VA_ARGS__
#define EXPAND_STRINGIFY(...) STRINGIFY(__VA_ARGS__)
#define PERLIN_CODE                                                                                \
    uint perlin_hash(uint x, uint y, uint seed)                                                    \
    {                                                                                              \
        uint h = x * 374761393u + y * 668265263u + seed * 2246822519u;                             \
        h = (h ^ (h >> 13)) * 1274126177u;                                                         \
        return h ^ (h >> 16);                                                                      \
    }                                                                                              \
    float perlin_grad(uint h, float dx, float dy)                                                  \
    {                                                                                              \
        return ((h & 1) ? -dx : dx) + ((h & 2) ? -dy : dy);                                        \
    }                                                                                              \
    float perlin_fade(float t)                                                                     \
    {                                                                                              \
        return t * t * t * (t * (t * 6.0f - 15.0f) + 10.0f);                                       \
    }                                                                                              \
    float perlin_at(float fx, float fy, uint seed)                                                 \
    {                                                                                              \
        float total = 0.0f, amp = 1.0f;                                                            \
        for (int o = 0; o < 4; o++) {                                                              \
            uint ix = (uint)fx, iy = (uint)fy;                                                     \
            float dx = fx - (float)ix, dy = fy - (float)iy;                                        \
            float u = perlin_fade(dx), v = perlin_fade(dy);                                        \
            float n00 = perlin_grad(perlin_hash(ix, iy, seed), dx, dy);                            \
            float n10 = perlin_grad(perlin_hash(ix + 1, iy, seed), dx - 1.0f, dy);                 \
            float n01 = perlin_grad(perlin_hash(ix, iy + 1, seed), dx, dy - 1.0f);                 \
            float n11 = perlin_grad(perlin_hash(ix + 1, iy + 1, seed), dx - 1.0f, dy - 1.0f);      \
            float nx0 = n00 + u * (n10 - n00), nx1 = n01 + u * (n11 - n01);                        \
            total += amp * (nx0 + v * (nx1 - nx0));                                                \
            fx *= 2.0f;                                                                            \
            fy *= 2.0f;                                                                            \
            amp *= 0.5f;                                                                           \
        }                                                                                          \
        return total;                                                                              \
    }

const char perlin_source[] = EXPAND_STRINGIFY(PERLIN_CODE) "\n"
    "__kernel void perlin(__global float *out, int n, int first_row, uint seed)\n"
    "{\n"
    "    int x = get_global_id(0), y = get_global_id(1);\n"
    "    out[y * n + x] = perlin_at(x / 16.0f, (first_row + y) / 16.0f, seed);\n"
    "}\n";

uint perlin_hash(uint x, uint y, uint seed);
float perlin_grad(uint h, float dx, float dy);
float perlin_fade(float t);
float perlin_at(float fx, float fy, uint seed);
PERLIN_CODE

bool perlin_check(size_t n, uint64_t seed, const float *image)
{
    double worst = 0, sum = 0;
    for (size_t y = 0; y < n; y++) {
        for (size_t x = 0; x < n; x++) {
            float want = perlin_at((float)x / 16.0f, (float)y / 16.0f, (uint)seed);
            worst = app_worst_error(worst, dagapp_rel_error(image[y * n + x], want));
            sum += fabs(want);
        }
    }
    fprintf(stderr, "perlin: worst error %.3g, mean |value| %.3g\n", worst, sum / (double)(n * n));
    /* An image of zeros would match nothing but a zero reference. */
    return worst < 1e-4 && sum > 0;
}

/* ---- knn ---- */

const char knn_source[] =
    "__kernel void knn(__global const float2 *q, __global const float2 *r,\n"
    "                  __global int *nearest, int refs)\n"
    "{\n"
    "    int i = get_global_id(0);\n"
    "    float2 p = q[i];\n"
    "    float best = INFINITY;\n"
    "    int at = -1;\n"
    "    for (int j = 0; j < refs; j++) {\n"
    "        float2 d = r[j] - p;\n"
    "        float e = d.x * d.x + d.y * d.y;\n"
    "        if (e < best) {\n"
    "            best = e;\n"
    "            at = j;\n"
    "        }\n"
    "    }\n"
    "    nearest[i] = at;\n"
    "}\n";

void knn_input(uint64_t seed, size_t queries, size_t refs, float *q, float *r)
{
    uint64_t state = seed;
    for (size_t i = 0; i < 2 * queries; i++)
        q[i] = (float)app_random_real(&state, 0, 1);
    for (size_t i = 0; i < 2 * refs; i++)
        r[i] = (float)app_random_real(&state, 0, 1);
}

bool knn_check(size_t queries, size_t refs, const float *q, const float *r, const int *nearest)
{
    size_t wrong = 0;
    for (size_t i = 0; i < queries; i++) {
        double best = INFINITY;
        for (size_t j = 0; j < refs; j++) {
            double dx = r[2 * j] - q[2 * i], dy = r[2 * j + 1] - q[2 * i + 1];
            best = fmin(best, dx * dx + dy * dy);
        }
        /* Another point at the same distance (to float rounding) is as
         * good an answer. */
        int at = nearest[i];
        double got = INFINITY;
        if (at >= 0 && (size_t)at < refs) {
            double dx = r[2 * at] - q[2 * i], dy = r[2 * at + 1] - q[2 * i + 1];
            got = dx * dx + dy * dy;
        }
        if (!(got <= best * (1 + 1e-5) + 1e-12))
            wrong++;
    }
    fprintf(stderr, "knn: %zu of %zu queries wrong\n", wrong, queries);
    return wrong == 0;
}

/* ---- floyd ---- */

const char floyd_source[] =
    "__kernel void floyd(__global int *d, __global const int *rowk, int n, int k)\n"
    "{\n"
    "    int j = get_global_id(0), i = get_global_id(1);\n"
    "    int via = d[i * n + k] + rowk[j];\n"
    "    if (via < d[i * n + j])\n"
    "        d[i * n + j] = via;\n"
    "}\n";

void floyd_input(uint64_t seed, size_t n, int *d)
{
    uint64_t state = seed;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            /* About 8 edges per vertex, weights 1..100. */
            bool edge = app_random(&state) % n < 8;
            d[i * n + j] = i == j ? 0 : edge ? (int)(1 + app_random(&state) % 100) : FLOYD_INF;
        }
    }
}

bool floyd_check(size_t n, const int *d0, const int *d)
{
    int *want = app_malloc(n * n * sizeof(*want));
    memcpy(want, d0, n * n * sizeof(*want));
    for (size_t k = 0; k < n; k++) {
        for (size_t i = 0; i < n; i++) {
            for (size_t j = 0; j < n; j++) {
                int via = want[i * n + k] + want[k * n + j];
                if (via < want[i * n + j])
                    want[i * n + j] = via;
            }
        }
    }
    size_t wrong = 0, reachable = 0;
    for (size_t i = 0; i < n * n; i++) {
        wrong += want[i] != d[i];
        reachable += want[i] < FLOYD_INF;
    }
    free(want);
    fprintf(stderr, "floyd: %zu of %zu distances wrong, %zu pairs connected\n", wrong, n * n,
            reachable);
    return wrong == 0;
}
