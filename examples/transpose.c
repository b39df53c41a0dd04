/*
 * transpose: B = A^T for a square N x N matrix of floats, through tiles of
 * local memory padded by one column.  The rows of A are split into one block
 * per device; each device transposes its block into the matching columns of
 * B.  Little arithmetic: the host <-> device transfers bound the rate.  A
 * plain OpenCL 1.2 program: run it natively or under vocl-run.
 */
#include "common.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define TILE            16 /* a TILE x TILE work-group moves a TILE x TILE tile */
#define DEFAULT_N       2048
#define MAX_N           32768
#define DEFAULT_REPEATS 10

/* The group reads a tile along rows of `in` and writes it along rows of
 * `out`, so both global accesses are contiguous; the transposition happens
 * in local memory.  The padding column shifts each row of the tile by one
 * bank, so reading a column of the tile does not hit one bank TILE times. */
static const char kernel_source[] =
    "__kernel void transpose(__global const float *in, __global float *out,\n"
    "                        uint rows, uint cols)\n"
    "{\n"
    "    __local float tile[TILE][TILE + 1];\n"
    "    uint x = get_local_id(0), y = get_local_id(1);\n"
    "    uint col = get_group_id(0) * TILE + x, row = get_group_id(1) * TILE + y;\n"
    "    if (row < rows && col < cols)\n"
    "        tile[y][x] = in[(size_t)row * cols + col];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    /* out is cols x rows: the group's tile lands at the swapped place. */\n"
    "    uint out_col = get_group_id(1) * TILE + x, out_row = get_group_id(0) * TILE + y;\n"
    "    if (out_row < cols && out_col < rows)\n"
    "        out[(size_t)out_row * rows + out_col] = tile[x][y];\n"
    "}\n";

/* One device's share: rows [first_row, first_row + rows) of A, which
 * become the same columns of B. */
struct device_work {
    const struct app_device *device;
    cl_kernel kernel;
    cl_mem in, out;
    size_t first_row, rows;
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: transpose [-n SIZE] [-d DEVICES] [-r REPEATS] [--help]\n"
            "Transposes a random square matrix of floats, the rows of A split in one\n"
            "block per device (each device writes the matching columns of B).\n"
            "  -n SIZE        matrix size N, 1 to %d (default %d)\n"
            "  -d DEVICES     use the first DEVICES devices of the first platform that\n"
            "                 has devices (default: all); each needs at least one row\n"
            "  -r REPEATS     timed transpositions, 1 to 100000 (default %d)\n"
            "  --help         show this help\n"
            "Timed: REPEATS times writing A to the devices, the kernel and reading B\n"
            "back, after one untimed warm-up run; seconds= is their total and rate= is\n"
            "2*N*N*4*REPEATS/seconds in GB/s (10^9 bytes): the bytes written and read,\n"
            "so the rate includes the transfers, which take most of the time.\n"
            "Checked: every element of B must equal its element of A exactly.\n"
            "Exit status: 0 verified, 1 results wrong, 2 usage, setup or OpenCL error.\n",
            MAX_N, DEFAULT_N, DEFAULT_REPEATS);
}

static void setup_work(struct device_work *w, const struct app_device *device, size_t n)
{
    size_t bytes = w->rows * n * sizeof(cl_float);
    w->device = device;
    w->kernel = app_create_kernel(device, "transpose");
    app_require_work_group(device, w->kernel, TILE * TILE);
    w->in = app_create_buffer(device, CL_MEM_READ_ONLY, bytes);
    w->out = app_create_buffer(device, CL_MEM_WRITE_ONLY, bytes);

    cl_uint rows = (cl_uint)w->rows, cols = (cl_uint)n;
    CL_CHECK(clSetKernelArg(w->kernel, 0, sizeof(cl_mem), &w->in));
    CL_CHECK(clSetKernelArg(w->kernel, 1, sizeof(cl_mem), &w->out));
    CL_CHECK(clSetKernelArg(w->kernel, 2, sizeof(cl_uint), &rows));
    CL_CHECK(clSetKernelArg(w->kernel, 3, sizeof(cl_uint), &cols));
}

static void release_work(struct device_work *w)
{
    CL_CHECK(clReleaseMemObject(w->out));
    CL_CHECK(clReleaseMemObject(w->in));
    CL_CHECK(clReleaseKernel(w->kernel));
}

/* Queues one device's transfers and kernel without waiting, so that all
 * devices work at once. */
static void start_device(const struct device_work *w, size_t n, const cl_float *a, cl_float *b)
{
    cl_command_queue queue = w->device->queue;
    CL_CHECK(clEnqueueWriteBuffer(queue, w->in, CL_FALSE, 0, w->rows * n * sizeof(cl_float),
                                  a + w->first_row * n, 0, NULL, NULL));
    size_t local[2] = {TILE, TILE};
    size_t global[2] = {app_round_up(n, TILE), app_round_up(w->rows, TILE)};
    CL_CHECK(clEnqueueNDRangeKernel(queue, w->kernel, 2, NULL, global, local, 0, NULL, NULL));

    /* The device's n x rows result is a band of columns of B: read it
     * straight into place, one row of bytes per row of B. */
    size_t buffer_origin[3] = {0, 0, 0};
    size_t host_origin[3] = {w->first_row * sizeof(cl_float), 0, 0};
    size_t region[3] = {w->rows * sizeof(cl_float), n, 1};
    CL_CHECK(clEnqueueReadBufferRect(queue, w->out, CL_FALSE, buffer_origin, host_origin, region,
                                     w->rows * sizeof(cl_float), 0, n * sizeof(cl_float), 0, b, 0,
                                     NULL, NULL));
    CL_CHECK(clFlush(queue));
}

static void transpose(const struct device_work *work, cl_uint count, size_t n, const cl_float *a,
                      cl_float *b)
{
    for (cl_uint d = 0; d < count; d++)
        start_device(&work[d], n, a, b);
    for (cl_uint d = 0; d < count; d++)
        CL_CHECK(clFinish(work[d].device->queue));
}

/* Number of elements of b that are not the transposed element of a. */
static size_t count_wrong(const cl_float *a, const cl_float *b, size_t n)
{
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t j = 0; j < n; j++) {
            if (b[j * n + i] != a[i * n + j]) {
                if (wrong < 5)
                    fprintf(stderr, "B[%zu][%zu] = %g, expected %g\n", j, i, b[j * n + i],
                            a[i * n + j]);
                wrong++;
            }
        }
    }
    return wrong;
}

int main(int argc, char **argv)
{
    uint64_t n = DEFAULT_N, wanted = 0, repeats = DEFAULT_REPEATS;
    const struct app_option options[] = {
        {"-n", &n, 1, MAX_N},
        {"-d", &wanted, 1, UINT32_MAX},
        {"-r", &repeats, 1, 100000},
    };
    app_parse_args("transpose", argc, argv, options, sizeof(options) / sizeof(options[0]), NULL,
                   usage);

    char build_options[32];
    snprintf(build_options, sizeof(build_options), "-DTILE=%d", TILE);
    cl_uint count = 0;
    struct app_device *devices =
        app_open_devices(wanted, kernel_source, build_options, APP_SINGLE, &count);
    app_require_units(n, count, "rows");

    size_t elements = (size_t)n * n;
    cl_float *a = app_malloc(elements * sizeof(cl_float));
    cl_float *b = app_malloc(elements * sizeof(cl_float));
    uint64_t seed = 1;
    for (size_t i = 0; i < elements; i++)
        a[i] = (cl_float)app_random_real(&seed, -1.0, 1.0);

    struct device_work *work = app_calloc(count, sizeof(*work));
    for (cl_uint d = 0; d < count; d++) {
        app_split(n, count, d, &work[d].first_row, &work[d].rows);
        setup_work(&work[d], &devices[d], n);
        fprintf(stderr, "device %u: rows [%zu, %zu)\n", d, work[d].first_row,
                work[d].first_row + work[d].rows);
    }

    transpose(work, count, n, a, b); /* warm-up, and PoCL's compilation */
    /* Whatever the warm-up left must not pass for the timed runs' result. */
    memset(b, 0, elements * sizeof(cl_float));
    double start = app_seconds();
    for (uint64_t r = 0; r < repeats; r++)
        transpose(work, count, n, a, b);
    double seconds = app_seconds() - start;

    size_t wrong = count_wrong(a, b, n);
    fprintf(stderr, "%zu wrong element(s)\n", wrong);
    double bytes = 2.0 * (double)elements * sizeof(cl_float) * (double)repeats;
    app_print_result("transpose", "single", n, count, seconds, bytes / seconds * 1e-9, "GB/s",
                     wrong == 0);

    for (cl_uint d = 0; d < count; d++)
        release_work(&work[d]);
    free(work);
    free(a);
    free(b);
    app_close_devices(devices, count);
    return wrong == 0 ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
