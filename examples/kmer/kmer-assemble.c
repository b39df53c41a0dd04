/*
 * kmer-assemble: de Bruijn contig assembly on a hash table spread over every
 * OpenCL device, after the distributed hash table of the UPC++ k-mer report
 * and HipMer's aggregated stores.  A plain OpenCL 1.2 program: run it
 * natively or under vocl-run, where each device may live in another proxy.
 *
 * The table has S slots, S / p on each of the p devices: slot s lives on
 * device s / (S / p).  A k-mer's home slot is hash(k-mer) mod S; probing is
 * linear and wraps within the home device's part, so a k-mer never leaves
 * the device that owns its home slot.  Inserting: the host sorts the k-mers
 * into one batch per device and sends a batch (one write, one kernel) when
 * it is full; the kernel claims slots with atomic_cmpxchg.  Traversal: every
 * contig starts at a k-mer with no backward extension; all contigs advance
 * one base per round, the round's lookups grouped into one request per
 * device, until each meets a forward extension F.
 *
 * One context holds every device, as in the project's other runtimes, and
 * each device has one in-order queue of it; nothing blocks while commands
 * are enqueued.  No batch ever goes from one device to another: every batch
 * a device receives is made by the host (insertion batches from the file it
 * reads, each round's lookups from the round's results, which it must read
 * anyway to grow the contigs), so there is nothing a device-to-device copy
 * could carry instead of the host.  The host waits only to reuse a staging buffer (insertion) and
 * once per round for the round's results (traversal).  The result is checked
 * against the single-threaded CPU assembler of kmer.c, which is also timed
 * for comparison, and with --genome against the genome's unique-k-mer
 * segments.
 */
#include "common.h"
#include "kmer.h"

#include <CL/cl_ext.h> /* CL_PLATFORM_NOT_FOUND_KHR from the ICD loader */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_BATCH 16384 /* k-mers per batch and device */
#define MAX_BATCH     (1u << 24)
#define DEFAULT_LOAD  50 /* percent of the slots the k-mers fill on average */
#define STAGES        4  /* host staging buffers per device, in flight at once */
/* Work-items per group.  Every launch names it: left to the driver, the
 * group size follows the launch's size, and PoCL compiles each kernel anew
 * for each group size it meets, inside the timed rounds (61 compiles of the
 * lookup for a 2,000,000-base genome, 8 s). */
#define LOCAL 64
static const size_t local_size = LOCAL;

/* The table's three arrays per device: used[s] (claimed by compare and
 * swap), keys[s] and exts[s] (the extensions, kmer_ext_pack()).  A batch is
 * `count` k-mers followed by their `count` extension bytes.  Lookups run in
 * later kernels than every insert, so they may read keys without atomics. */
static const char kernel_source[] =
    "ulong kmer_hash(ulong x)\n"
    "{\n"
    "    x ^= x >> 33;\n"
    "    x *= 0xff51afd7ed558ccdUL;\n"
    "    x ^= x >> 33;\n"
    "    x *= 0xc4ceb9fe1a85ec53UL;\n"
    "    x ^= x >> 33;\n"
    "    return x;\n"
    "}\n"
    "\n"
    "__kernel void kmer_insert(__global volatile uint *used, __global ulong *keys,\n"
    "                          __global uchar *exts, __global const ulong *batch,\n"
    "                          uint count, ulong table_slots, ulong first_slot,\n"
    "                          uint slots, __global uint *failed)\n"
    "{\n"
    "    uint i = get_global_id(0);\n"
    "    if (i >= count)\n"
    "        return;\n"
    "    ulong kmer = batch[i];\n"
    "    uchar ext = ((__global const uchar *)(batch + count))[i];\n"
    "    uint s = (uint)(kmer_hash(kmer) % table_slots - first_slot);\n"
    "    for (uint probe = 0; probe < slots; probe++) {\n"
    "        if (atomic_cmpxchg(&used[s], 0u, 1u) == 0u) {\n"
    "            keys[s] = kmer;\n"
    "            exts[s] = ext;\n"
    "            return;\n"
    "        }\n"
    "        s = s + 1 == slots ? 0 : s + 1;\n"
    "    }\n"
    "    atomic_inc(failed);\n"
    "}\n"
    "\n"
    "__kernel void kmer_lookup(__global const uint *used, __global const ulong *keys,\n"
    "                          __global const uchar *exts, __global const ulong *queries,\n"
    "                          uint count, ulong table_slots, ulong first_slot,\n"
    "                          uint slots, __global uchar *results)\n"
    "{\n"
    "    uint i = get_global_id(0);\n"
    "    if (i >= count)\n"
    "        return;\n"
    "    ulong kmer = queries[i];\n"
    "    uint s = (uint)(kmer_hash(kmer) % table_slots - first_slot);\n"
    "    uchar found = 0xff;\n"
    "    for (uint probe = 0; probe < slots && used[s]; probe++) {\n"
    "        if (keys[s] == kmer) {\n"
    "            found = exts[s];\n"
    "            break;\n"
    "        }\n"
    "        s = s + 1 == slots ? 0 : s + 1;\n"
    "    }\n"
    "    results[i] = found;\n"
    "}\n";

/* A host buffer holding one batch on its way to a device; `written` is the
 * event of its write, which must complete before the buffer is refilled. */
struct stage {
    cl_ulong *data; /* kmers[batch], then batch extension bytes */
    size_t count;
    cl_event written;
};

/* The devices of the table: one context over all of them, one program built
 * for all, one in-order queue each. */
struct devices {
    cl_context context;
    cl_program program;
    cl_uint count;
    cl_device_id *ids;
    cl_command_queue *queues;
};

/* One device's part of the table: slots [first_slot, first_slot + slots). */
struct part {
    cl_command_queue queue;
    cl_kernel insert, lookup;
    cl_mem used, keys, exts, failed;
    cl_mem batch;            /* the batch being inserted */
    cl_mem queries, results; /* one round's lookups */
    cl_ulong first_slot;
    cl_uint slots;
    struct stage stages[STAGES];
    unsigned current;
    cl_uint failed_count;
};

/* The whole table and what both phases need. */
struct table {
    struct part *parts;
    cl_uint count;        /* devices */
    cl_ulong total_slots; /* S */
    cl_uint part_slots;   /* S / p */
    size_t batch;         /* k-mers per batch */
    unsigned k;
};

struct options {
    const char *input, *genome, *output;
    uint64_t devices, batch, load, k;
    bool cpu_only;
};

static void usage(FILE *out)
{
    fprintf(out,
            "usage: kmer-assemble [options] KMER_FILE\n"
            "Assembles contigs from a file of k-mers and their extensions (one\n"
            "'KMER BF' a line; B and F the backward and forward extension, each A, C,\n"
            "G, T or F for none), on a hash table spread over every OpenCL device.\n"
            "  -d DEVICES      use the first DEVICES devices of the first platform that\n"
            "                  has devices (default: all)\n"
            "  -b BATCH        k-mers per batch sent to a device, 1 to %u (default %d)\n"
            "  --load PERCENT  how full the table is on average, 10 to 90 (default %d)\n"
            "  -k K            the k the file must have (default: that of its first line)\n"
            "  -o FILE         write the contigs as FASTA to FILE, sorted\n"
            "  --genome FILE   also check the contigs against the unique-k-mer segments\n"
            "                  of this genome (FASTA, as kmer-gen writes it)\n"
            "  --cpu-only      only the single-threaded CPU assembler\n"
            "  --help          show this help\n"
            "Timed: inserting every k-mer (batching, transfers, kernels, until the last\n"
            "insert completes) and the traversal (all rounds); seconds= is their sum.\n"
            "inserts_per_s= is k-mers / insert time, lookups_per_s= is successor\n"
            "lookups / traversal time; the cpu_ fields are the same for the CPU\n"
            "assembler on the same input.\n"
            "Checked: the set of contigs equals that of the CPU assembler (and the\n"
            "genome's segments with --genome).\n"
            "Exit status: 0 verified, 1 contigs differ, 2 usage, input or OpenCL error.\n",
            MAX_BATCH, DEFAULT_BATCH, DEFAULT_LOAD);
}

/* Prints the message and the usage on stderr and exits. */
static _Noreturn void usage_error(const char *format, const char *arg)
{
    fprintf(stderr, "kmer-assemble: ");
    fprintf(stderr, format, arg);
    fputc('\n', stderr);
    usage(stderr);
    exit(APP_EXIT_ERROR);
}

static void parse_options(int argc, char **argv, struct options *o)
{
    *o = (struct options){.batch = DEFAULT_BATCH, .load = DEFAULT_LOAD};
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            usage(stdout);
            exit(0);
        }
        if (strcmp(flag, "--cpu-only") == 0) {
            o->cpu_only = true;
            continue;
        }
        if (flag[0] != '-') {
            if (o->input)
                usage_error("more than one k-mer file ('%s')", flag);
            o->input = flag;
            continue;
        }
        const char **text = strcmp(flag, "-o") == 0         ? &o->output
                            : strcmp(flag, "--genome") == 0 ? &o->genome
                                                            : NULL;
        struct {
            const char *flag;
            uint64_t *value, min, max;
        } numbers[] = {
            {"-d", &o->devices, 1, UINT32_MAX},
            {"-b", &o->batch, 1, MAX_BATCH},
            {"--load", &o->load, 10, 90},
            {"-k", &o->k, 1, KMER_MAX_K},
        };
        size_t n = 0;
        while (n < sizeof(numbers) / sizeof(numbers[0]) && strcmp(numbers[n].flag, flag) != 0)
            n++;
        if (!text && n == sizeof(numbers) / sizeof(numbers[0]))
            usage_error("unknown argument '%s'", flag);
        if (i + 1 >= argc)
            usage_error("%s needs a value", flag);
        const char *value = argv[++i];
        if (text) {
            *text = value;
        } else if (!app_parse_u64(value, numbers[n].value) || *numbers[n].value < numbers[n].min ||
                   *numbers[n].value > numbers[n].max) {
            fprintf(stderr, "kmer-assemble: %s needs an integer from %" PRIu64 " to %" PRIu64 "\n",
                    flag, numbers[n].min, numbers[n].max);
            usage(stderr);
            exit(APP_EXIT_ERROR);
        }
    }
    if (!o->input)
        usage_error("%s", "no k-mer file given");
}

/* ---- the table ---- */

static cl_uint owner(const struct table *t, uint64_t kmer)
{
    return (cl_uint)(kmer_hash(kmer) % t->total_slots / t->part_slots);
}

/* Picks S / p so that the k-mers fill `load` percent of the slots on
 * average and no part more than 90 %: the hash spreads them evenly, but
 * small inputs over many devices can still meet an unlucky part. */
static void size_table(struct table *t, const struct kmer_input *in, uint64_t load)
{
    uint64_t slots = (in->count * 100 + t->count * load - 1) / (t->count * load);
    if (slots < 64)
        slots = 64;
    size_t *counts = app_calloc(t->count, sizeof(*counts));
    for (int tries = 0;; tries++) {
        if (slots > UINT32_MAX || tries == 16)
            app_die("cannot size the table: %" PRIu64 " slots per device", slots);
        t->part_slots = (cl_uint)slots;
        t->total_slots = slots * t->count;
        memset(counts, 0, t->count * sizeof(*counts));
        size_t most = 0;
        for (size_t i = 0; i < in->count; i++) {
            size_t c = ++counts[owner(t, in->kmers[i])];
            most = c > most ? c : most;
        }
        if (most * 10 <= slots * 9)
            break;
        slots *= 2;
    }
    free(counts);
}

static void set_arg(cl_kernel kernel, cl_uint index, size_t size, const void *value)
{
    CL_CHECK(clSetKernelArg(kernel, index, size, value));
}

/* ---- devices ---- */

/* The first `wanted` devices (0: all) of the first platform that has any,
 * as the other runtimes take them.  One context over all of them, so that
 * one wait list may hold every device's events; one queue each. */
static void open_devices(uint64_t wanted, struct devices *devs)
{
    cl_uint available = 0;
    cl_device_id *ids = app_find_devices(&available);
    cl_int err;
    if (wanted > available)
        app_die("%" PRIu64 " device(s) requested, only %u available", wanted, available);

    *devs = (struct devices){.count = wanted > 0 ? (cl_uint)wanted : available, .ids = ids};
    devs->context = clCreateContext(NULL, devs->count, ids, NULL, NULL, &err);
    CL_CHECK_ERR("clCreateContext", err);
    devs->queues = app_calloc(devs->count, sizeof(*devs->queues));
    for (cl_uint d = 0; d < devs->count; d++) {
        devs->queues[d] = clCreateCommandQueue(devs->context, ids[d], 0, &err);
        CL_CHECK_ERR("clCreateCommandQueue", err);
        char *name = app_device_string(ids[d], CL_DEVICE_NAME);
        fprintf(stderr, "device %u: %s\n", d, name);
        free(name);
    }

    const char *source = kernel_source;
    devs->program = clCreateProgramWithSource(devs->context, 1, &source, NULL, &err);
    CL_CHECK_ERR("clCreateProgramWithSource", err);
    err = clBuildProgram(devs->program, devs->count, ids, "", NULL, NULL);
    if (err == CL_BUILD_PROGRAM_FAILURE) {
        /* The log of the first device whose build failed. */
        for (cl_uint d = 0; d < devs->count; d++) {
            size_t size = 0;
            CL_CHECK(clGetProgramBuildInfo(devs->program, ids[d], CL_PROGRAM_BUILD_LOG, 0, NULL,
                                           &size));
            char *log = app_malloc(size + 1);
            CL_CHECK(clGetProgramBuildInfo(devs->program, ids[d], CL_PROGRAM_BUILD_LOG, size, log,
                                           NULL));
            log[size] = '\0';
            if (size > 1)
                app_die("build failed on device %u:\n%s", d, log);
            free(log);
        }
    }
    CL_CHECK_ERR("clBuildProgram", err);
    fprintf(stderr,
            "kmer: one context over %u device(s), one queue each; no batch moves device to "
            "device (the host makes every batch)\n",
            devs->count);
}

static void close_devices(struct devices *devs)
{
    CL_CHECK(clReleaseProgram(devs->program));
    for (cl_uint d = 0; d < devs->count; d++)
        CL_CHECK(clReleaseCommandQueue(devs->queues[d]));
    CL_CHECK(clReleaseContext(devs->context));
    /* Root devices from clGetDeviceIDs are not reference counted. */
    free(devs->queues);
    free(devs->ids);
}

static cl_mem create_buffer(const struct devices *devs, cl_mem_flags flags, size_t size)
{
    cl_int err;
    cl_mem buffer = clCreateBuffer(devs->context, flags, size, NULL, &err);
    CL_CHECK_ERR("clCreateBuffer", err);
    return buffer;
}

static cl_kernel create_kernel(const struct devices *devs, const char *name)
{
    cl_int err;
    cl_kernel kernel = clCreateKernel(devs->program, name, &err);
    CL_CHECK_ERR("clCreateKernel", err);
    return kernel;
}

/* Dies unless `kernel` runs groups of LOCAL work-items on device `index`. */
static void require_group(const struct devices *devs, cl_uint index, cl_kernel kernel)
{
    size_t most = 0;
    CL_CHECK(clGetKernelWorkGroupInfo(kernel, devs->ids[index], CL_KERNEL_WORK_GROUP_SIZE,
                                      sizeof(most), &most, NULL));
    if (most < LOCAL)
        app_die("device %u runs groups of at most %zu work-items, kmer-assemble needs %d", index,
                most, LOCAL);
}

/* Buffers, kernels and staging buffers of one part; `queries`: the most
 * lookups one round can send it (every contig's). */
static void setup_part(struct part *p, const struct devices *devs, const struct table *t,
                       cl_uint index, size_t queries)
{
    p->queue = devs->queues[index];
    p->slots = t->part_slots;
    p->first_slot = (cl_ulong)index * t->part_slots;
    p->used = create_buffer(devs, CL_MEM_READ_WRITE, p->slots * sizeof(cl_uint));
    p->keys = create_buffer(devs, CL_MEM_READ_WRITE, p->slots * sizeof(cl_ulong));
    p->exts = create_buffer(devs, CL_MEM_READ_WRITE, p->slots);
    p->failed = create_buffer(devs, CL_MEM_READ_WRITE, sizeof(cl_uint));
    p->batch = create_buffer(devs, CL_MEM_READ_ONLY, t->batch * (sizeof(cl_ulong) + 1));
    if (queries == 0)
        queries = 1; /* no contig to walk: still a valid buffer */
    p->queries = create_buffer(devs, CL_MEM_READ_ONLY, queries * sizeof(cl_ulong));
    p->results = create_buffer(devs, CL_MEM_WRITE_ONLY, queries);
    for (unsigned s = 0; s < STAGES; s++)
        p->stages[s].data = app_malloc(t->batch * (sizeof(cl_ulong) + 1));

    cl_uint zero = 0;
    p->insert = create_kernel(devs, "kmer_insert");
    set_arg(p->insert, 0, sizeof(cl_mem), &p->used);
    set_arg(p->insert, 1, sizeof(cl_mem), &p->keys);
    set_arg(p->insert, 2, sizeof(cl_mem), &p->exts);
    set_arg(p->insert, 3, sizeof(cl_mem), &p->batch);
    set_arg(p->insert, 4, sizeof(cl_uint), &zero);
    set_arg(p->insert, 5, sizeof(cl_ulong), &t->total_slots);
    set_arg(p->insert, 6, sizeof(cl_ulong), &p->first_slot);
    set_arg(p->insert, 7, sizeof(cl_uint), &p->slots);
    set_arg(p->insert, 8, sizeof(cl_mem), &p->failed);
    p->lookup = create_kernel(devs, "kmer_lookup");
    set_arg(p->lookup, 0, sizeof(cl_mem), &p->used);
    set_arg(p->lookup, 1, sizeof(cl_mem), &p->keys);
    set_arg(p->lookup, 2, sizeof(cl_mem), &p->exts);
    set_arg(p->lookup, 3, sizeof(cl_mem), &p->queries);
    set_arg(p->lookup, 4, sizeof(cl_uint), &zero);
    set_arg(p->lookup, 5, sizeof(cl_ulong), &t->total_slots);
    set_arg(p->lookup, 6, sizeof(cl_ulong), &p->first_slot);
    set_arg(p->lookup, 7, sizeof(cl_uint), &p->slots);
    set_arg(p->lookup, 8, sizeof(cl_mem), &p->results);
    require_group(devs, index, p->insert);
    require_group(devs, index, p->lookup);

    /* An empty table, and one launch of each kernel with nothing to do, so
     * that PoCL compiles them before anything is timed. */
    cl_command_queue q = p->queue;
    size_t global = LOCAL;
    CL_CHECK(clEnqueueFillBuffer(q, p->used, &zero, sizeof(zero), 0, p->slots * sizeof(cl_uint), 0,
                                 NULL, NULL));
    CL_CHECK(
        clEnqueueFillBuffer(q, p->failed, &zero, sizeof(zero), 0, sizeof(zero), 0, NULL, NULL));
    CL_CHECK(clEnqueueNDRangeKernel(q, p->insert, 1, NULL, &global, &local_size, 0, NULL, NULL));
    CL_CHECK(clEnqueueNDRangeKernel(q, p->lookup, 1, NULL, &global, &local_size, 0, NULL, NULL));
    CL_CHECK(clFlush(q));
}

static void release_part(struct part *p)
{
    for (unsigned s = 0; s < STAGES; s++) {
        if (p->stages[s].written)
            CL_CHECK(clReleaseEvent(p->stages[s].written));
        free(p->stages[s].data);
    }
    CL_CHECK(clReleaseKernel(p->lookup));
    CL_CHECK(clReleaseKernel(p->insert));
    CL_CHECK(clReleaseMemObject(p->results));
    CL_CHECK(clReleaseMemObject(p->queries));
    CL_CHECK(clReleaseMemObject(p->batch));
    CL_CHECK(clReleaseMemObject(p->failed));
    CL_CHECK(clReleaseMemObject(p->exts));
    CL_CHECK(clReleaseMemObject(p->keys));
    CL_CHECK(clReleaseMemObject(p->used));
}

/* ---- insertion ---- */

/* The part's current staging buffer, once its last write has completed. */
static struct stage *free_stage(struct part *p)
{
    struct stage *s = &p->stages[p->current];
    if (s->written) {
        /* The device is STAGES batches behind the host: wait for it. */
        CL_CHECK(clWaitForEvents(1, &s->written));
        CL_CHECK(clReleaseEvent(s->written));
        s->written = NULL;
    }
    return s;
}

/* Sends the current staging buffer of `p` (if it holds anything) and
 * launches its insertion; moves on to the next staging buffer. */
static void send_batch(struct part *p, const struct table *t)
{
    struct stage *s = &p->stages[p->current];
    if (s->count == 0)
        return;
    /* The extensions follow the k-mers directly, for one write. */
    uint8_t *exts = (uint8_t *)(s->data + t->batch);
    if (s->count < t->batch)
        memmove(s->data + s->count, exts, s->count);
    cl_command_queue q = p->queue;
    cl_uint count = (cl_uint)s->count;
    CL_CHECK(clEnqueueWriteBuffer(q, p->batch, CL_FALSE, 0, s->count * (sizeof(cl_ulong) + 1),
                                  s->data, 0, NULL, &s->written));
    set_arg(p->insert, 4, sizeof(cl_uint), &count);
    size_t global = app_round_up(s->count, LOCAL);
    CL_CHECK(clEnqueueNDRangeKernel(q, p->insert, 1, NULL, &global, &local_size, 0, NULL, NULL));
    CL_CHECK(clFlush(q));
    s->count = 0;
    p->current = (p->current + 1) % STAGES;
}

/* Inserts every k-mer; returns when all inserts have completed. */
static void insert_all(struct table *t, const struct kmer_input *in)
{
    for (size_t i = 0; i < in->count; i++) {
        struct part *p = &t->parts[owner(t, in->kmers[i])];
        struct stage *s = &p->stages[p->current];
        s->data[s->count] = in->kmers[i];
        ((uint8_t *)(s->data + t->batch))[s->count] = in->exts[i];
        if (++s->count == t->batch) {
            send_batch(p, t);
            free_stage(p);
        }
    }
    /* The partial batches, then each part's count of k-mers that found no
     * free slot, read back after all its inserts; one wait for all. */
    cl_event *read = app_calloc(t->count, sizeof(*read));
    for (cl_uint d = 0; d < t->count; d++) {
        struct part *p = &t->parts[d];
        send_batch(p, t);
        CL_CHECK(clEnqueueReadBuffer(p->queue, p->failed, CL_FALSE, 0, sizeof(cl_uint),
                                     &p->failed_count, 0, NULL, &read[d]));
        CL_CHECK(clFlush(p->queue));
    }
    CL_CHECK(clWaitForEvents(t->count, read));
    for (cl_uint d = 0; d < t->count; d++) {
        CL_CHECK(clReleaseEvent(read[d]));
        if (t->parts[d].failed_count)
            app_die("device %u: %u k-mers found no free slot", d, t->parts[d].failed_count);
    }
    free(read);
}

/* ---- traversal ---- */

/* A contig being walked: its last k-mer and that k-mer's forward extension. */
struct walk {
    uint64_t kmer;
    int forward;
    struct kmer_string seq;
};

/* Walks every contig from its start k-mer, all together, one base a round. */
static void traverse(struct table *t, const struct kmer_input *in, struct contig_set *contigs,
                     struct kmer_stats *stats)
{
    size_t starts = 0;
    for (size_t i = 0; i < in->count; i++)
        starts += kmer_ext_backward(in->exts[i]) == KMER_NONE;
    struct walk *walks = app_calloc(starts, sizeof(*walks));
    size_t *active = app_calloc(starts, sizeof(*active)); /* walks not finished */
    size_t n_active = 0, w = 0;
    for (size_t i = 0; i < in->count; i++) {
        if (kmer_ext_backward(in->exts[i]) != KMER_NONE)
            continue;
        walks[w] = (struct walk){.kmer = in->kmers[i], .forward = kmer_ext_forward(in->exts[i])};
        kmer_string_start(&walks[w].seq, in->kmers[i], t->k);
        if (walks[w].forward != KMER_NONE)
            active[n_active++] = w;
        w++;
    }

    /* One round's lookups sorted by device: queries[first[d] .. first[d+1])
     * go to device d, for the walks in which[]. */
    cl_ulong *queries = app_calloc(starts, sizeof(*queries));
    uint8_t *results = app_calloc(starts, 1);
    size_t *which = app_calloc(starts, sizeof(*which));
    cl_uint *dest = app_calloc(starts, sizeof(*dest));
    size_t *first = app_calloc(t->count + 1, sizeof(*first));
    size_t *fill = app_calloc(t->count, sizeof(*fill));
    cl_event *done = app_calloc(t->count, sizeof(*done));

    while (n_active > 0) {
        if (stats->rounds++ > in->count)
            app_die("a contig never ends (a cycle in the k-mers)");
        memset(first, 0, (t->count + 1) * sizeof(*first));
        for (size_t a = 0; a < n_active; a++) {
            const struct walk *wk = &walks[active[a]];
            dest[a] = owner(t, kmer_next(wk->kmer, wk->forward, t->k));
            first[dest[a] + 1]++;
        }
        for (cl_uint d = 0; d < t->count; d++) {
            first[d + 1] += first[d];
            fill[d] = first[d];
        }
        for (size_t a = 0; a < n_active; a++) {
            const struct walk *wk = &walks[active[a]];
            size_t at = fill[dest[a]]++;
            queries[at] = kmer_next(wk->kmer, wk->forward, t->k);
            which[at] = active[a];
        }

        /* Every device's request in flight before waiting for any. */
        cl_uint waiting = 0;
        for (cl_uint d = 0; d < t->count; d++) {
            size_t count = first[d + 1] - first[d];
            if (count == 0)
                continue;
            struct part *p = &t->parts[d];
            cl_command_queue q = p->queue;
            cl_uint n = (cl_uint)count;
            CL_CHECK(clEnqueueWriteBuffer(q, p->queries, CL_FALSE, 0, count * sizeof(cl_ulong),
                                          queries + first[d], 0, NULL, NULL));
            set_arg(p->lookup, 4, sizeof(cl_uint), &n);
            size_t global = app_round_up(count, LOCAL);
            CL_CHECK(
                clEnqueueNDRangeKernel(q, p->lookup, 1, NULL, &global, &local_size, 0, NULL, NULL));
            CL_CHECK(clEnqueueReadBuffer(q, p->results, CL_FALSE, 0, count, results + first[d], 0,
                                         NULL, &done[waiting++]));
            CL_CHECK(clFlush(q));
        }
        /* One context, so one wait for every device's reply, after every
         * enqueue.  (Waiting on a condition that event callbacks signal
         * took twice as long through VOCL, whose callbacks run on a thread
         * of its own.) */
        if (waiting > 0)
            CL_CHECK(clWaitForEvents(waiting, done));
        for (cl_uint e = 0; e < waiting; e++)
            CL_CHECK(clReleaseEvent(done[e]));

        stats->lookups += n_active;
        for (size_t at = 0; at < n_active; at++) {
            struct walk *wk = &walks[which[at]];
            if (results[at] == KMER_NOT_FOUND) {
                stats->dangling++;
                wk->forward = KMER_NONE;
                continue;
            }
            kmer_string_add(&wk->seq, kmer_base_letter(wk->forward));
            wk->kmer = kmer_next(wk->kmer, wk->forward, t->k);
            wk->forward = kmer_ext_forward(results[at]);
        }
        size_t kept = 0;
        for (size_t a = 0; a < n_active; a++) {
            if (walks[active[a]].forward != KMER_NONE)
                active[kept++] = active[a];
        }
        n_active = kept;
    }
    for (size_t i = 0; i < starts; i++)
        contig_set_add(contigs, walks[i].seq.s);

    free(done);
    free(fill);
    free(first);
    free(dest);
    free(which);
    free(results);
    free(queries);
    free(active);
    free(walks);
}

/* The device assembly, timed phase by phase. */
static void assemble_on_devices(const struct options *o, const struct kmer_input *in,
                                struct contig_set *contigs, struct kmer_stats *stats,
                                cl_uint *devices)
{
    struct devices devs;
    open_devices(o->devices, &devs);
    cl_uint count = devs.count;
    struct table t = {.count = count, .batch = (size_t)o->batch, .k = in->k};
    size_t starts = 0;
    for (size_t i = 0; i < in->count; i++)
        starts += kmer_ext_backward(in->exts[i]) == KMER_NONE;
    size_table(&t, in, o->load);
    fprintf(stderr, "table: %" PRIu64 " slots, %u on each of %u devices, batches of %zu k-mers\n",
            (uint64_t)t.total_slots, t.part_slots, count, t.batch);

    t.parts = app_calloc(count, sizeof(*t.parts));
    for (cl_uint d = 0; d < count; d++)
        setup_part(&t.parts[d], &devs, &t, d, starts);
    for (cl_uint d = 0; d < count; d++)
        CL_CHECK(clFinish(devs.queues[d]));

    *stats = (struct kmer_stats){.inserts = in->count};
    double t0 = app_seconds();
    insert_all(&t, in);
    double t1 = app_seconds();
    traverse(&t, in, contigs, stats);
    stats->insert_seconds = t1 - t0;
    stats->traverse_seconds = app_seconds() - t1;

    for (cl_uint d = 0; d < count; d++)
        release_part(&t.parts[d]);
    free(t.parts);
    close_devices(&devs);
    *devices = count;
}

static double per_second(uint64_t n, double seconds)
{
    return seconds > 0.0 ? (double)n / seconds : 0.0;
}

static void print_stats(const char *who, const struct kmer_stats *s)
{
    fprintf(stderr,
            "%s: %" PRIu64 " inserts in %.4f s (%.4g/s), %" PRIu64 " lookups in %" PRIu64
            " rounds in %.4f s (%.4g/s), %" PRIu64 " contigs ended at a missing k-mer\n",
            who, s->inserts, s->insert_seconds, per_second(s->inserts, s->insert_seconds),
            s->lookups, s->rounds, s->traverse_seconds, per_second(s->lookups, s->traverse_seconds),
            s->dangling);
}

int main(int argc, char **argv)
{
    struct options o;
    parse_options(argc, argv, &o);
    /* Only to give common.c's messages this program's name: no options. */
    app_parse_args("kmer-assemble", 1, argv, NULL, 0, NULL, usage);

    char error[512];
    struct kmer_input in;
    if (!kmer_read_file(o.input, (unsigned)o.k, &in, error, sizeof(error)))
        app_die("%s", error);

    /* The CPU assembler: the reference, and the baseline of the figures. */
    struct contig_set reference = {0};
    struct kmer_stats cpu;
    if (!kmer_cpu_assemble(&in, &reference, &cpu, error, sizeof(error)))
        app_die("%s: %s", o.input, error);
    contig_set_sort(&reference);
    print_stats("cpu", &cpu);
    size_t uncovered = kmer_uncovered(&in, &reference);
    fprintf(stderr, "cpu: %zu contigs, %zu bases; %zu k-mers on no contig\n", reference.count,
            contig_set_bases(&reference), uncovered);

    bool verified = true, checked = false;
    if (o.genome) {
        char *genome;
        size_t length;
        if (!kmer_read_genome(o.genome, &genome, &length, error, sizeof(error)))
            app_die("%s", error);
        struct contig_set segments = {0};
        kmer_genome_segments(genome, length, in.k, &segments);
        contig_set_sort(&segments);
        bool same = contig_set_equal(&reference, &segments, error, sizeof(error));
        fprintf(stderr, "genome: %zu unique-k-mer segments, %s the CPU contigs%s%s\n",
                segments.count, same ? "equal to" : "NOT equal to", same ? "" : ": ",
                same ? "" : error);
        verified &= same;
        checked = true;
        contig_set_free(&segments);
        free(genome);
    }

    struct contig_set contigs = {0};
    struct kmer_stats dev = cpu;
    cl_uint devices = 0;
    if (!o.cpu_only) {
        assemble_on_devices(&o, &in, &contigs, &dev, &devices);
        contig_set_sort(&contigs);
        print_stats("devices", &dev);
        bool same = contig_set_equal(&contigs, &reference, error, sizeof(error));
        fprintf(stderr, "devices: %zu contigs, %s the CPU contigs%s%s\n", contigs.count,
                same ? "equal to" : "NOT equal to", same ? "" : ": ", same ? "" : error);
        verified &= same;
        checked = true;
    }

    if (o.output) {
        FILE *f = fopen(o.output, "w");
        if (!f)
            app_die("cannot create %s: %s", o.output, strerror(errno));
        bool written = contig_set_write_fasta(o.cpu_only ? &reference : &contigs, f);
        if (fclose(f) != 0 || !written)
            app_die("cannot write %s: %s", o.output, strerror(errno));
    }

    /* --cpu-only without --genome has nothing to compare with. */
    const char *verdict = !checked ? "unchecked" : verified ? "yes" : "no";
    printf("RESULT app=kmer-assemble mode=%s k=%u kmers=%zu contigs=%zu devices=%u batch=%" PRIu64
           " seconds=%.6f inserts_per_s=%.4g lookups_per_s=%.4g rounds=%" PRIu64
           " cpu_inserts_per_s=%.4g cpu_lookups_per_s=%.4g verified=%s\n",
           o.cpu_only ? "cpu" : "devices", in.k, in.count, reference.count, devices, o.batch,
           dev.insert_seconds + dev.traverse_seconds, per_second(dev.inserts, dev.insert_seconds),
           per_second(dev.lookups, dev.traverse_seconds), dev.rounds,
           per_second(cpu.inserts, cpu.insert_seconds),
           per_second(cpu.lookups, cpu.traverse_seconds), verdict);

    contig_set_free(&contigs);
    contig_set_free(&reference);
    kmer_input_free(&in);
    return verified ? APP_EXIT_VERIFIED : APP_EXIT_WRONG;
}
