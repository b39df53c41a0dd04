/*
 * apps.h: what the all-pairs applications (allpairs-cv, allpairs-prnu,
 * allpairs-fusion) share: their command line (the runtime's options and
 * their own numbers), the directory their generated files go to, and the
 * figures and RESULT line they print.
 */
#ifndef ALLPAIRS_APPS_H
#define ALLPAIRS_APPS_H

#include "allpairs.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* An option of the application's own: "--flag N", min <= N <= max. */
struct apps_number {
    const char *flag;
    uint64_t *value;
    uint64_t min, max;
    const char *help; /* one line for --help */
};

struct apps_options {
    struct allpairs_config cfg;
    uint64_t items, seed;
    const char *dir; /* where the inputs are written; NULL: a temporary one */
    bool reuse;      /* --reuse: the files in --dir are the input, none generated */
    const char *output; /* -o: where the application writes its results */
    char path[4096]; /* the directory used */
};

/* Parses argv: the runtime's options, then `numbers`.  --help prints
 * `summary`, the options and the numbers, and exits 0; anything wrong
 * prints a message and the usage on stderr and exits 2.  Defaults: the
 * caller fills o->cfg and o->items before the call. */
void apps_parse(const char *name, const char *summary, int argc, char **argv,
                struct apps_options *o, const struct apps_number *numbers, size_t n_numbers);

/* Makes the input directory (--dir, or a temporary one).  A temporary
 * directory and the files in it are removed when the program exits,
 * whether it finished or gave up on an error. */
void apps_make_dir(const char *name, struct apps_options *o);
/* The path of item's input file: DIR/STEM-NNNNN.EXT; false if it does not
 * fit in size bytes. */
bool apps_item_path(const struct apps_options *o, const char *stem, const char *ext,
                    uint32_t item, char *path, size_t size);

/* Opens -o's file for writing (exits 2 if it cannot), or returns NULL
 * without -o; apps_close() checks that everything was written. */
FILE *apps_open_output(const char *name, const struct apps_options *o);
void apps_close_output(const char *name, const struct apps_options *o, FILE *f);

/* Prints "NAME: message" on stderr and exits 2. */
_Noreturn void apps_die(const char *name, const char *format, ...)
    __attribute__((format(printf, 2, 3)));

/* Runs the runtime, exiting 2 with its message on failure. */
void apps_run(const char *name, const struct allpairs_app *app, const struct apps_options *o,
              struct allpairs_stats *stats);

/* The figures on stderr, then the RESULT line on stdout:
 * RESULT app=NAME items=N devices=P seconds=T pairs_per_s=... R=...
 * hit_device=... hit_host=... hit_peer=... bytes_host=... bytes_peer=...
 * t_min=... efficiency=... EXTRA verified=yes|no */
void apps_result(const char *name, const struct apps_options *o, const struct allpairs_stats *s,
                 const char *extra, bool verified);

/* Stores the float a comparison gave at (i, j) and (j, i) of an n x n matrix. */
void apps_store_symmetric(float *matrix, uint64_t n, uint32_t i, uint32_t j,
                          const void *result);

uint64_t apps_random(uint64_t *state);
double apps_uniform(uint64_t *state); /* [0, 1) */
double apps_normal(uint64_t *state);  /* mean 0, deviation 1 */

#endif
