/*
 * smithwaterman: best local alignment score (Smith-Waterman, linear gap
 * penalty) of pairs of random DNA sequences.  Each pair is filled in by a
 * wavefront: one small kernel launch per anti-diagonal of the score matrix,
 * so the run is bound by launch overhead, not arithmetic.  The pairs are
 * split into one block per device.  A plain OpenCL 1.2 program: run it
 * natively or under vocl-run.
 */
#include "common.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_LENGTH           2048
#define MAX_LENGTH               8192
#define DEFAULT_PAIRS_PER_DEVICE 2
#define MAX_PAIRS                1000000
/* One work-group size for every launch: PoCL compiles the kernel again for
 * each new one, which would dwarf the run if every length of anti-diagonal
 * brought its own. */
#define LOCAL 64

/* Scores: a match adds MATCH, a mismatch adds MISMATCH (negative), and
 * every gap position adds -GAP (a linear gap penalty). */
#define MATCH    2
#define MISMATCH (-1)
#define GAP      1

/* h is the (len + 1) x (len + 1) score matrix of the pair being aligned;
 * its row 0 and column 0 stay zero.  Cell (i, j) depends on (i-1, j-1),
 * (i-1, j) and (i, j-1), which all lie on the two previous anti-diagonals
 * (i + j = diag - 1 and diag - 2), so all cells of one anti-diagonal can be
 * computed at once.  Work-item k computes the k-th cell of anti-diagonal
 * `diag`, counted from its smallest i; the last work-group may run past
 * the end of the anti-diagonal. */
static const char kernel_source[] =
    "__kernel void sw_diagonal(__global const uchar *seq_a, __global const uchar *seq_b,\n"
    "                          __global int *h, __global int *best,\n"
    "                          uint len, uint pair, uint diag)\n"
    "{\n"
    "    uint i = get_global_id(0) + (diag > len ? diag - len : 1);\n"
    "    if (i > min(diag - 1, len))\n"
    "        return; /* past the end of the anti-diagonal */\n"
    "    uint j = diag - i;\n"
    "    __global const uchar *a = seq_a + (size_t)pair * len;\n"
    "    __global const uchar *b = seq_b + (size_t)pair * len;\n"
    "    size_t w = len + 1;\n"
    "    int score = h[(i - 1) * w + j - 1] + (a[i - 1] == b[j - 1] ? MATCH : MISMATCH);\n"
    "    score = max(score, h[(i - 1) * w + j] - GAP);\n"
    "    score = max(score, h[i * w + j - 1] - GAP);\n"
    "    score = max(score, 0);\n"
    "    h[i * w + j] = score;\n"
    "    atomic_max(&best[pair], score);\n"
    "}\n";

/* One device's share: pairs [first, first + count), aligned one after the
 * other in the same score matrix. */
struct device_work {
    const struct app_device *device;
    cl_kernel kernel;
    cl_mem seq_a, seq_b, h, best;
    size_t first, count;
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: smithwaterman [-n LENGTH] [-p PAIRS] [-d DEVICES] [--help]\n"
            "Computes the best Smith-Waterman local alignment score of pairs of random\n"
            "DNA sequences (match +%d, mismatch %d, gap -%d per position: a linear gap\n"
            "penalty).  Each pair takes one kernel launch per anti-diagonal of its\n"
            "score matrix, 2*LENGTH-1 in all; the pairs are split in one block per\n"
            "device.\n"
            "  -n LENGTH      length of every sequence, 1 to %d (default %d)\n"
            "  -p PAIRS       number of sequence pairs, 1 to %d (default %d per\n"
            "                 device); every device needs at least one\n"
            "  -d DEVICES     use the first DEVICES devices of the first platform that\n"
            "                 has devices (default: all)\n"
            "  --help         show this help\n"
            "Timed: writing the sequences to the devices, every launch and reading the\n"
            "scores back, after one untimed warm-up launch; rate= is\n"
            "PAIRS*LENGTH^2/seconds in Gcells/s (10^9 cell updates per second).\n"
            "Checked: every pair's score must equal the score computed on the CPU.\n"
            "Exit status: 0 verified, 1 results wrong, 2 usage, setup or OpenCL error.\n",
            MATCH, MISMATCH, GAP, MAX_LENGTH, DEFAULT_LENGTH, MAX_PAIRS, DEFAULT_PAIRS_PER_DEVICE);
}

static void setup_work(struct device_work *w, const struct app_device *device, size_t len)
{
    size_t side = len + 1;
    w->device = device;
    w->kernel = app_create_kernel(device, "sw_diagonal");
    app_require_work_group(device, w->kernel, LOCAL);
    w->seq_a = app_create_buffer(device, CL_MEM_READ_ONLY, w->count * len);
    w->seq_b = app_create_buffer(device, CL_MEM_READ_ONLY, w->count * len);
    w->h = app_create_buffer(device, CL_MEM_READ_WRITE, side * side * sizeof(cl_int));
    w->best = app_create_buffer(device, CL_MEM_READ_WRITE, w->count * sizeof(cl_int));

    /* Only row 0 and column 0 need the zeros: the launches write every
     * other cell before any launch reads it. */
    cl_int zero = 0;
    CL_CHECK(clEnqueueFillBuffer(device->queue, w->h, &zero, sizeof(zero), 0,
                                 side * side * sizeof(cl_int), 0, NULL, NULL));

    cl_uint len32 = (cl_uint)len;
    CL_CHECK(clSetKernelArg(w->kernel, 0, sizeof(cl_mem), &w->seq_a));
    CL_CHECK(clSetKernelArg(w->kernel, 1, sizeof(cl_mem), &w->seq_b));
    CL_CHECK(clSetKernelArg(w->kernel, 2, sizeof(cl_mem), &w->h));
    CL_CHECK(clSetKernelArg(w->kernel, 3, sizeof(cl_mem), &w->best));
    CL_CHECK(clSetKernelArg(w->kernel, 4, sizeof(cl_uint), &len32));
}

static void release_work(struct device_work *w)
{
    CL_CHECK(clReleaseMemObject(w->best));
    CL_CHECK(clReleaseMemObject(w->h));
    CL_CHECK(clReleaseMemObject(w->seq_b));
    CL_CHECK(clReleaseMemObject(w->seq_a));
    CL_CHECK(clReleaseKernel(w->kernel));
}

/* Queues the sequences of the device's pairs and zero best scores. */
static void send_pairs(const struct device_work *w, size_t len, const cl_uchar *a,
                       const cl_uchar *b)
{
    cl_command_queue queue = w->device->queue;
    cl_int zero = 0;
    CL_CHECK(clEnqueueWriteBuffer(queue, w->seq_a, CL_FALSE, 0, w->count * len, a + w->first * len,
                                  0, NULL, NULL));
    CL_CHECK(clEnqueueWriteBuffer(queue, w->seq_b, CL_FALSE, 0, w->count * len, b + w->first * len,
                                  0, NULL, NULL));
    CL_CHECK(clEnqueueFillBuffer(queue, w->best, &zero, sizeof(zero), 0, w->count * sizeof(cl_int),
                                 0, NULL, NULL));
}

/* Queues the launch for anti-diagonal `diag` (i + j, 2 to 2 * len) of the
 * device's pair `pair` (counted within its block). */
static void launch_diagonal(const struct device_work *w, size_t len, cl_uint pair, cl_uint diag)
{
    size_t low = diag > len ? diag - len : 1;
    size_t high = diag - 1 < len ? diag - 1 : len;
    size_t local = LOCAL, global = app_round_up(high - low + 1, LOCAL);
    CL_CHECK(clSetKernelArg(w->kernel, 5, sizeof(cl_uint), &pair));
    CL_CHECK(clSetKernelArg(w->kernel, 6, sizeof(cl_uint), &diag));
    CL_CHECK(clEnqueueNDRangeKernel(w->device->queue, w->kernel, 1, NULL, &global, &local, 0, NULL,
                                    NULL));
}

/* Aligns every pair and reads the scores into `scores`.  The launches go
 * to the devices in turn, one anti-diagonal each, so that all devices work
 * at once. */
static void align(const struct device_work *work, cl_uint count, size_t len, const cl_uchar *a,
                  const cl_uchar *b, cl_int *scores)
{
    size_t most_pairs = 0;
    for (cl_uint d = 0; d < count; d++) {
        send_pairs(&work[d], len, a, b);
        if (work[d].count > most_pairs)
            most_pairs = work[d].count;
    }
    for (size_t pair = 0; pair < most_pairs; pair++) {
        for (size_t diag = 2; diag <= 2 * len; diag++) {
            for (cl_uint d = 0; d < count; d++) {
                if (pair < work[d].count)
                    launch_diagonal(&work[d], len, (cl_uint)pair, (cl_uint)diag);
            }
        }
        /* Start this pair's launches while the next pair is queued. */
        for (cl_uint d = 0; d < count; d++)
            CL_CHECK(clFlush(work[d].device->queue));
    }
    for (cl_uint d = 0; d < count; d++) {
        const struct device_work *w = &work[d];
        CL_CHECK(clEnqueueReadBuffer(w->device->queue, w->best, CL_TRUE, 0,
                                     w->count * sizeof(cl_int), scores + w->first, 0, NULL, NULL));
    }
}

/* The CPU reference, one row of the score matrix at a time. */
static cl_int cpu_score(const cl_uchar *a, const cl_uchar *b, size_t len, cl_int *prev, cl_int *row)
{
    cl_int best = 0;
    for (size_t j = 0; j <= len; j++)
        prev[j] = 0;
    for (size_t i = 1; i <= len; i++) {
        row[0] = 0;
        for (size_t j = 1; j <= len; j++) {
            cl_int score = prev[j - 1] + (a[i - 1] == b[j - 1] ? MATCH : MISMATCH);
            if (prev[j] - GAP > score)
                score = prev[j] - GAP;
            if (row[j - 1] - GAP > score)
                score = row[j - 1] - GAP;
            if (score < 0)
                score = 0;
            row[j] = score;
            if (score > best)
                best = score;
        }
        memcpy(prev, row, (len + 1) * sizeof(cl_int));
    }
    return best;
}

/* Number of pairs whose device score differs from the CPU's. */
static size_t count_wrong(const cl_uchar *a, const cl_uchar *b, size_t len, size_t pairs,
                          const cl_int *scores)
{
    cl_int *prev = app_malloc((len + 1) * sizeof(cl_int));
    cl_int *row = app_malloc((len + 1) * sizeof(cl_int));
    size_t wrong = 0;
    for (size_t p = 0; p < pairs; p++) {
        cl_int expected = cpu_score(a + p * len, b + p * len, len, prev, row);
        if (scores[p] != expected) {
            if (wrong < 5)
                fprintf(stderr, "pair %zu: score %d, expected %d\n", p, scores[p], expected);
            wrong++;
        }
    }
    free(prev);
    free(row);
    return wrong;
}

int main(int argc, char **argv)
{
    uint64_t len = DEFAULT_LENGTH, pairs = 0, wanted = 0;
    const struct app_option options[] = {
        {"-n", &len, 1, MAX_LENGTH},
        {"-p", &pairs, 1, MAX_PAIRS},
        {"-d", &wanted, 1, UINT32_MAX},
    };
    app_parse_args("smithwaterman", argc, argv, options, sizeof(options) / sizeof(options[0]), NULL,
                   usage);

    char build_options[64];
    snprintf(build_options, sizeof(build_options), "-DMATCH=%d -DMISMATCH=%d -DGAP=%d", MATCH,
             MISMATCH, GAP);
    cl_uint count = 0;
    struct app_device *devices =
        app_open_devices(wanted, kernel_source, build_options, APP_SINGLE, &count);
    if (pairs == 0) /* not given */
        pairs = (uint64_t)DEFAULT_PAIRS_PER_DEVICE * count;
    app_require_units(pairs, count, "pairs");

    /* Pair p is a[p * len ...] and b[p * len ...]. */
    size_t letters = (size_t)pairs * len;
    cl_uchar *a = app_malloc(letters);
    cl_uchar *b = app_malloc(letters);
    uint64_t seed = 1;
    for (size_t i = 0; i < letters; i++) {
        a[i] = (cl_uchar) "ACGT"[app_random(&seed) % 4];
        b[i] = (cl_uchar) "ACGT"[app_random(&seed) % 4];
    }
    cl_int *scores = app_malloc(pairs * sizeof(cl_int));

    struct device_work *work = app_calloc(count, sizeof(*work));
    for (cl_uint d = 0; d < count; d++) {
        app_split(pairs, count, d, &work[d].first, &work[d].count);
        setup_work(&work[d], &devices[d], len);
        fprintf(stderr, "device %u: pairs [%zu, %zu)\n", d, work[d].first,
                work[d].first + work[d].count);
    }

    /* Warm-up: one launch per device gets PoCL's compilation at the first
     * launch out of the timed part; align() sends everything again. */
    for (cl_uint d = 0; d < count; d++) {
        send_pairs(&work[d], len, a, b);
        launch_diagonal(&work[d], len, 0, 2);
    }
    for (cl_uint d = 0; d < count; d++)
        CL_CHECK(clFinish(work[d].device->queue));

    double start = app_seconds();
    align(work, count, len, a, b, scores);
    double seconds = app_seconds() - start;

    size_t wrong = count_wrong(a, b, len, pairs, scores);
    fprintf(stderr, "%" PRIu64 " pair(s), %zu wrong score(s); score of pair 0: %d\n", pairs, wrong,
            scores[0]);
    double cells = (double)pairs * (double)len * (double)len;
    app_print_result("smithwaterman", "int", len, count, seconds, cells / seconds * 1e-9,
                     "Gcells/s", wrong == 0);

    for (cl_uint d = 0; d < count; d++)
        release_work(&work[d]);
    free(work);
    free(a);
    free(b);
    free(scores);
    app_close_devices(devices, count);
    return wrong == 0 ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
