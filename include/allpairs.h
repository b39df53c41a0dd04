/*
 * allpairs.h: a runtime for all-pairs computations on every OpenCL device,
 * after Rocket (Heldens et al., SC20): f(l(i), l(j)) for every pair i < j
 * of n items, where l(i) reads item i's file, parses it on the CPU, copies
 * it to a device and preprocesses it there, and f compares two
 * preprocessed items on a device and postprocesses the result on the CPU.
 *
 * It is an ordinary C library on the standard OpenCL 1.2 API: it takes the
 * devices of the first platform that has any, puts them in one context and
 * runs natively or under anything that provides such a platform.
 *
 * What it does for the application:
 *  - caches on three levels: per device, fixed-size slots in one device
 *    buffer (LRU; a slot is being written or readable, with a count of its
 *    readers; a job that needs a slot being filled waits for it); per
 *    process, a host cache in pinned (CL_MEM_ALLOC_HOST_PTR) memory; and a
 *    third level that copies an item from another device's cache device to
 *    device (clEnqueueCopyBuffer in the shared context), found through
 *    Rocket's point-of-contact bookkeeping (item i -> device i mod p keeps
 *    the last h devices that asked for it);
 *  - divide-and-conquer scheduling: the upper-triangular pair matrix split
 *    recursively into quadrants, one worker per device, idle workers steal
 *    the largest task of a random peer (peers of the same node first), a
 *    concurrent-job limit per device;
 *  - an asynchronous pipeline: one thread reads files, a pool parses, one
 *    thread per device enqueues, three in-order queues per device (to the
 *    device, kernels, from the device) joined by events, and one thread
 *    handles completions.
 */
#ifndef ALLPAIRS_H
#define ALLPAIRS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * The application.  The kernels are in `source`, built for every device
 * with `build_options`, and take exactly these arguments:
 *
 *   __kernel void PREPROCESS(__global const void *parsed, __global void *item, uint index)
 *   __kernel void COMPARE(__global const void *left, __global const void *right,
 *                         __global void *result, uint i, uint j)
 *
 * (with whatever pointer types the application likes).  `parsed` holds
 * parsed_size bytes, `item` item_size bytes (one cache slot), `result`
 * result_size bytes.  The kernels are launched over preprocess_global and
 * compare_global work-items, in work-groups of *_local (0: the device's
 * choice).
 */
struct allpairs_app {
    const char *name; /* in messages and the trace */
    void *user;       /* passed to every callback */
    const char *source;
    const char *build_options;
    const char *preprocess_kernel, *compare_kernel;
    size_t preprocess_global, preprocess_local;
    size_t compare_global, compare_local;
    size_t parsed_size, item_size, result_size;

    /* Writes the path of item `item`'s file into path[size]; false if it
     * does not fit. */
    bool (*file_path)(void *user, uint32_t item, char *path, size_t size);
    /* Parses the file's `size` bytes into `parsed` (parsed_size bytes,
     * zeroed); false with a message in error[error_size] on bad input.
     * Called from several threads at once, for different items. */
    bool (*parse)(void *user, uint32_t item, const void *data, size_t size, void *parsed,
                  char *error, size_t error_size);
    /* The result of pair (i, j), i < j; called from one thread at a time. */
    void (*postprocess)(void *user, uint32_t i, uint32_t j, const void *result);
};

struct allpairs_config {
    uint32_t items;        /* n */
    uint32_t devices;      /* the first `devices` devices; 0: all */
    uint32_t group;        /* workers steal first from the devices of their own node:
                              0: nodes as the driver says (cl_vocl_device_location;
                              without it, one node); K: overrides, K consecutive
                              devices a node */
    uint32_t device_slots; /* slots of each device cache, at least 3 */
    uint32_t host_slots;   /* slots of the host cache; 0: no host cache */
    uint32_t jobs;         /* concurrent-job limit per device (at most (device_slots - 1) / 2) */
    uint32_t hops;         /* h, candidates kept per item; 0: no third level */
    bool hops_auto;        /* with hops > 0: the third level only where a device-to-device
                              copy of an item, measured at start, is cheaper than a load */
    uint32_t parsers;      /* CPU threads that parse; 0: 2 */
    uint64_t seed;         /* of the random stealing */
    uint32_t calibrate;    /* T_min from this many items and the pairs among them, run alone
                              on the first device before the run; 0: no T_min */
    const char *trace;     /* write a Chrome trace of every thread here; NULL: none */
    bool progress;         /* a progress bar on stderr once the run takes over a second */
    bool verbose;          /* each device's node and steal order on stderr, at the start */
};

/* What a run did; the levels count each of a job's two items once. */
struct allpairs_stats {
    uint32_t devices;
    uint64_t pairs;
    double seconds; /* from the first job to the last result */
    uint64_t loads; /* file reads (each followed by a parse and a preprocess) */
    uint64_t l1_lookups, l1_hits;
    uint64_t l2_lookups, l2_hits; /* device-cache misses that looked in the host cache */
    uint64_t l3_lookups, l3_hits; /* host-cache misses that asked a point of contact */
    uint64_t l3_first_hop;        /* of the hits, those on the first candidate */
    uint64_t steals;
    /* Bytes moved: files read; parsed items to devices; host cache to
     * devices; devices to the host cache; device to device; results. */
    uint64_t bytes_file, bytes_parsed, bytes_l2_in, bytes_l2_out, bytes_l3, bytes_results;
    /* Calibration (when asked): mean seconds of one preprocess and one
     * compare kernel on the first device alone, and T_min = n t_pre +
     * C(n, 2) t_cmp. */
    uint32_t calibrated_items;
    double t_pre, t_cmp, t_min;
    /* The third level: h as run (0: off), whether hops_auto decided it,
     * and the figures it decided from (seconds, 0 where not measured): a
     * device-to-device copy of an item, and the load it would save (read
     * and parse the file, write the parsed item to a device). */
    uint32_t hops;
    bool l3_auto;
    double l3_copy, l3_load;
};

/* Runs every pair.  Returns 0, or -1 with a message in error[error_size]
 * (bad configuration, an unreadable or malformed file, an OpenCL error). */
int allpairs_run(const struct allpairs_app *app, const struct allpairs_config *config,
                 struct allpairs_stats *stats, char *error, size_t error_size);

/* Figures of a run: R = loads / n, hit rates, efficiency = (T_min / p) / T. */
double allpairs_r(const struct allpairs_stats *s, uint32_t items);
double allpairs_efficiency(const struct allpairs_stats *s);
/* Bytes between the application and the devices (everything but the third
 * level, which goes from device to device). */
uint64_t allpairs_bytes_host(const struct allpairs_stats *s);

/* A human-readable summary: pairs/s, R, hit rates and bytes per level,
 * T_min and efficiency. */
void allpairs_print_stats(FILE *out, const struct allpairs_stats *s, uint32_t items);

#endif
