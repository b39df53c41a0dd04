/*
 * hep.h: a runtime for pipelines of filtering propositions over independent
 * events, after HEP-Frame (Pereira and Proença, CPC 2021), on the standard
 * OpenCL API.
 *
 * Events come from an HDF5 file (hep_file_*; one dataset per column under
 * /events, chunked along the events).  An analysis declares its columns, a
 * list of propositions (OpenCL C functions that keep or drop one event) with
 * the propositions each depends on, and histograms of derived values.
 * hep_run() reads the file in batches with data-setup (DS) threads, hands
 * them to processing (DP) threads that run the pipeline on every device of
 * the first platform that has one, compacts the survivors on the device
 * after each proposition, reorders the propositions at checkpoints (lightest
 * first: weight = (1 - time_weight) x keep ratio + time_weight x normalised
 * time, never before a dependency) and moves threads between DS and DP.
 * The selected events and the histograms never depend on the order, the
 * batches or the devices: every proposition sees one event at a time, and
 * its random numbers are Philox-4x32 words keyed by event id and use.
 *
 * Functions that return int return 0 or -1; the message is then in the
 * `error` buffer the caller passed.  Not thread-safe across calls on the
 * same objects; hep_run() may run on any thread.  See hep(3).
 */
#ifndef HEP_H
#define HEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define HEP_ERROR_SIZE 512
#define HEP_MAX_PROPS  64

/* Element types of columns. */
enum hep_type {
    HEP_F32, /* float: input columns */
    HEP_I32, /* int32_t: input columns */
    HEP_F64, /* double: derived columns, written by propositions */
};

/* A column: `width` values per event (e.g. 10 jets).  Input columns are
 * read from the file; derived ones (HEP_F64 only) live on the devices and
 * are written by the propositions that compute them. */
struct hep_column {
    const char *name; /* a C identifier: the kernels see it by this name */
    enum hep_type type;
    unsigned width;
    bool derived;
};

/* A proposition: an OpenCL C function `int FUNCTION(HEP_PARAMS, uint e)`
 * of the analysis source that returns nonzero to keep event e of the batch.
 * `deps`: names of the propositions that must run before it, separated by
 * commas or spaces (NULL: none). */
struct hep_prop {
    const char *name;
    const char *function;
    const char *deps;
};

/* A histogram of a derived column of width 1 over the selected events. */
struct hep_hist {
    const char *name;
    const char *column;
    const char *title; /* axis label of the plot */
    unsigned bins;
    double lo, hi;
};

struct hep_analysis {
    const char *name;
    /* OpenCL C.  Before it the runtime defines HEP_OPENCL, HEP_PARAMS (the
     * columns by name, then `hep_ids` and `hep_rng`), HEP_ARGS (the same
     * names, to pass them on), HEP_RNG_PER_EVENT, HEP_RANDOM(e, use)
     * (random word `use` of event e, 0 <= use < rng_per_event),
     * HEP_EVENT_ID(e), HEP_SEED, and includes hep_dev.h. */
    const char *source;
    const char *build_options;
    const struct hep_column *columns;
    size_t num_columns;
    const struct hep_prop *props; /* in the given, initial order */
    size_t num_props;
    const struct hep_hist *hists;
    size_t num_hists;
    unsigned rng_per_event; /* random words per event: a multiple of 4 */
    uint64_t seed;
};

struct hep_options {
    const char *input;   /* the HDF5 events file */
    unsigned devices;    /* at most this many devices (0: all) */
    unsigned threads;    /* host threads for DS and DP together (0: 2 + 2 per device) */
    int ds_threads;      /* < 0: adapt the DS/DP split; else this many DS threads */
    bool adapt;          /* reorder the propositions at checkpoints */
    size_t batch;        /* events per batch (0: 4096) */
    unsigned slots;      /* batches in flight per device (0: 2) */
    unsigned checkpoint; /* batches to the first checkpoint (0: 2) */
    double time_weight;  /* of the normalised time in a weight (< 0: 0.3) */
    bool progress;       /* a progress bar on stderr once a run passes 1 s */
};

/* What one proposition did over the run. */
struct hep_prop_stats {
    uint64_t events_in, events_out;
    double seconds; /* kernel time (device profiling), summed over devices */
    unsigned level; /* of its dependencies: 0 for none */
    unsigned first_position, last_position;
    char positions[160]; /* its position at each checkpoint ("3 1 1 ...") */
};

struct hep_result {
    uint64_t events, selected;
    unsigned devices, threads, checkpoints;
    double seconds;          /* wall time from the first batch to the last */
    double setup_seconds;    /* opening the file and the devices, building */
    double ds_seconds;       /* until the last batch was read */
    unsigned final_ds;       /* DS threads at the last checkpoint */
    char splits[160];        /* the DS threads at each checkpoint */
    uint64_t *ids;           /* selected event ids, ascending */
    uint64_t **hists;        /* per histogram: bins + 2 counts (underflow first) */
    size_t num_hists;
    struct hep_prop_stats props[HEP_MAX_PROPS];
    unsigned order[HEP_MAX_PROPS]; /* the last order, as indices of props */
};

/* Fills `opts` with the defaults above. */
void hep_options_default(struct hep_options *opts);

/* Runs the analysis over opts->input.  On failure returns -1 with a message
 * in error (HEP_ERROR_SIZE bytes) and leaves *result empty. */
int hep_run(const struct hep_analysis *an, const struct hep_options *opts,
            struct hep_result *result, char *error);
void hep_result_free(struct hep_result *result);

/* Writes DIR/NAME-hists.txt, DIR/NAME-ids.txt and DIR/NAME-props.txt, each
 * through a temporary file renamed at the end, so that an error never
 * leaves a truncated file in place of a good one; with `plot`, also
 * DIR/NAME-HIST.png for each histogram (python3 with matplotlib). */
int hep_write_outputs(const struct hep_analysis *an, const struct hep_result *result,
                      const char *dir, bool plot, char *error);

/* Prints the per-proposition table (drop ratio, time, positions). */
void hep_print_table(FILE *out, const struct hep_analysis *an, const struct hep_result *result);

/* ---- the events file ---- */

typedef struct hep_file hep_file;

/* Creates `path` (through PATH.tmp, renamed by hep_file_close) with the
 * input columns of `columns` (derived ones are skipped), `chunk` events per
 * HDF5 chunk and deflate level `deflate` (0: none). */
hep_file *hep_file_create(const char *path, const struct hep_column *columns, size_t num_columns,
                          size_t chunk, int deflate, char *error);
/* Appends `count` events: ids, then one array per input column in the
 * order of `columns` (count x width values each). */
int hep_file_append(hep_file *f, size_t count, const uint64_t *ids, void *const *data,
                    char *error);

/* Opens `path` and checks that it holds event_id and every input column of
 * `columns` with the right type and width, all of one length. */
hep_file *hep_file_open(const char *path, const struct hep_column *columns, size_t num_columns,
                        char *error);
uint64_t hep_file_events(const hep_file *f);
/* Reads events [first, first + count) into ids and one array per input
 * column; safe to call from several threads at once. */
int hep_file_read(hep_file *f, uint64_t first, size_t count, uint64_t *ids, void *const *data,
                  char *error);
/* Closes; for a file being written, returns -1 if finishing it failed. */
int hep_file_close(hep_file *f, char *error);

#endif
