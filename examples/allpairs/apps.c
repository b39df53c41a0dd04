/* apps.c: see apps.h. */
#define _POSIX_C_SOURCE 200809L
#include "apps.h"

#include "clutil.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

void apps_die(const char *name, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fprintf(stderr, "%s: ", name);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    exit(2);
}

/* The runtime's numeric options. */
struct number {
    const char *flag;
    uint64_t value;
    uint64_t min, max;
    const char *help;
};

static void usage(FILE *out, const char *name, const char *summary, const struct number *common,
                  size_t n_common, const struct apps_number *numbers, size_t n_numbers)
{
    fprintf(out, "usage: %s [options]\n%s\n", name, summary);
    for (size_t k = 0; k < n_numbers; k++)
        fprintf(out, "  %-18s %s (default %" PRIu64 ")\n", numbers[k].flag, numbers[k].help,
                *numbers[k].value);
    for (size_t k = 0; k < n_common; k++)
        fprintf(out, "  %-18s %s (default %" PRIu64 ")\n", common[k].flag, common[k].help,
                common[k].value);
    fprintf(out,
            "  --dir DIR          write the generated inputs to DIR and keep them\n"
            "                     (default: a temporary directory, removed at the end)\n"
            "  --reuse            do not generate: read the files already in --dir\n"
            "  -o FILE            write the results to FILE\n"
            "  --hops auto        the default: the third level (h as above) only where a\n"
            "                     device-to-device copy, measured at start, beats a load\n"
            "  --trace FILE       write a timeline of every thread (Chrome trace format)\n"
            "  --no-progress      no progress bar on stderr\n"
            "  -v, --verbose      each device's node and steal order on stderr\n"
            "  --help             show this help\n"
            "Prints the runtime's figures on stderr and a RESULT line on stdout.\n"
            "Exit status: 0 verified, 1 results differ from the CPU reference,\n"
            "2 usage, input or OpenCL error.\n");
}

void apps_parse(const char *name, const char *summary, int argc, char **argv,
                struct apps_options *o, const struct apps_number *numbers, size_t n_numbers)
{
    struct allpairs_config *c = &o->cfg;
    struct number common[] = {
        {"-n", o->items, 2, 1u << 20, "items (files) to compare, every pair of them"},
        {"--seed", o->seed, 0, UINT64_MAX, "seed of the generated input"},
        {"-d", c->devices, 0, 4096, "use the first D devices (0: all)"},
        {"--group", c->group, 0, 4096,
         "K devices a node, in order: steal there first (0: the driver's nodes)"},
        {"--device-slots", c->device_slots, 3, 1u << 20, "cache slots per device"},
        {"--host-slots", c->host_slots, 0, 1u << 24, "host cache slots (0: no host cache)"},
        {"--jobs", c->jobs, 1, 4096, "concurrent jobs per device"},
        {"--hops", c->hops, 0, 64,
         "h: candidates per item device to device; a number forces it (0: off)"},
        {"--parsers", c->parsers, 1, 7, "threads that parse files"},
        {"--calibrate", c->calibrate, 0, 4096, "items timed alone for T_min (0: none)"},
    };
    size_t n_common = sizeof(common) / sizeof(common[0]);
    c->progress = true;
    /* The third level decides for itself unless a number forces it. */
    bool hops_given = false;
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--hops") == 0 && i + 1 < argc && strcmp(argv[i + 1], "auto") == 0) {
            hops_given = false;
            i++;
            continue;
        }
        if (strcmp(flag, "--hops") == 0)
            hops_given = true;
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            usage(stdout, name, summary, common, n_common, numbers, n_numbers);
            exit(0);
        }
        if (strcmp(flag, "--no-progress") == 0) {
            c->progress = false;
            continue;
        }
        if (strcmp(flag, "--verbose") == 0 || strcmp(flag, "-v") == 0) {
            c->verbose = true;
            continue;
        }
        if (strcmp(flag, "--reuse") == 0) {
            o->reuse = true;
            continue;
        }
        if (strcmp(flag, "--dir") == 0 || strcmp(flag, "--trace") == 0 || strcmp(flag, "-o") == 0) {
            if (i + 1 >= argc || argv[i + 1][0] == '\0') {
                fprintf(stderr, "%s: %s needs a value\n", name, flag);
                usage(stderr, name, summary, common, n_common, numbers, n_numbers);
                exit(2);
            }
            if (flag[1] == 'o')
                o->output = argv[++i];
            else if (flag[2] == 'd')
                o->dir = argv[++i];
            else
                c->trace = argv[++i];
            continue;
        }
        uint64_t *value = NULL, min = 0, max = 0;
        for (size_t k = 0; k < n_common && !value; k++)
            if (strcmp(common[k].flag, flag) == 0) {
                value = &common[k].value;
                min = common[k].min;
                max = common[k].max;
            }
        for (size_t k = 0; k < n_numbers && !value; k++)
            if (strcmp(numbers[k].flag, flag) == 0) {
                value = numbers[k].value;
                min = numbers[k].min;
                max = numbers[k].max;
            }
        if (!value) {
            fprintf(stderr, "%s: unknown argument '%s'\n", name, flag);
            usage(stderr, name, summary, common, n_common, numbers, n_numbers);
            exit(2);
        }
        if (i + 1 >= argc || !app_parse_u64(argv[i + 1], value) || *value < min || *value > max) {
            fprintf(stderr, "%s: %s needs an integer from %" PRIu64 " to %" PRIu64 "\n", name,
                    flag, min, max);
            usage(stderr, name, summary, common, n_common, numbers, n_numbers);
            exit(2);
        }
        i++;
    }
    o->items = common[0].value;
    o->seed = common[1].value;
    c->devices = (uint32_t)common[2].value;
    c->group = (uint32_t)common[3].value;
    c->device_slots = (uint32_t)common[4].value;
    c->host_slots = (uint32_t)common[5].value;
    c->jobs = (uint32_t)common[6].value;
    c->hops = (uint32_t)common[7].value;
    c->hops_auto = !hops_given;
    if (c->hops_auto && c->hops == 0)
        c->hops = 1;
    c->parsers = (uint32_t)common[8].value;
    c->calibrate = (uint32_t)common[9].value;
    c->items = (uint32_t)o->items;
    c->seed = o->seed;
    if (o->reuse && !o->dir)
        apps_die(name, "--reuse needs --dir");
    if (c->jobs > (c->device_slots - 1) / 2)
        apps_die(name, "--jobs %u needs more than %u device slots (--device-slots %u)", c->jobs,
                 2 * c->jobs, c->device_slots);
}

/* The temporary input directory, removed at exit; empty with --dir. */
static char temp_dir[4096];

/* Everything in the directory is ours: mkdtemp made it for this process. */
static void remove_temp_dir(void)
{
    DIR *d = opendir(temp_dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        unlinkat(dirfd(d), e->d_name, 0);
    }
    closedir(d);
    rmdir(temp_dir);
}

void apps_make_dir(const char *name, struct apps_options *o)
{
    if (o->dir) {
        if (mkdir(o->dir, 0777) != 0 && errno != EEXIST)
            apps_die(name, "cannot create %s: %s", o->dir, strerror(errno));
        snprintf(o->path, sizeof(o->path), "%s", o->dir);
        return;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(o->path, sizeof(o->path), "%s/%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    if (!mkdtemp(o->path))
        apps_die(name, "cannot create a directory %s: %s", o->path, strerror(errno));
    snprintf(temp_dir, sizeof(temp_dir), "%s", o->path);
    atexit(remove_temp_dir);
}

bool apps_item_path(const struct apps_options *o, const char *stem, const char *ext,
                    uint32_t item, char *path, size_t size)
{
    int n = snprintf(path, size, "%s/%s-%05u.%s", o->path, stem, item, ext);
    return n > 0 && (size_t)n < size;
}

void apps_store_symmetric(float *matrix, uint64_t n, uint32_t i, uint32_t j,
                          const void *result)
{
    float v;
    memcpy(&v, result, sizeof(v));
    matrix[(size_t)i * n + j] = v;
    matrix[(size_t)j * n + i] = v;
}

FILE *apps_open_output(const char *name, const struct apps_options *o)
{
    if (!o->output)
        return NULL;
    FILE *f = fopen(o->output, "w");
    if (!f)
        apps_die(name, "cannot create %s: %s", o->output, strerror(errno));
    return f;
}

void apps_close_output(const char *name, const struct apps_options *o, FILE *f)
{
    if (f && (ferror(f) | fclose(f)))
        apps_die(name, "cannot write %s", o->output);
}

void apps_run(const char *name, const struct allpairs_app *app, const struct apps_options *o,
              struct allpairs_stats *stats)
{
    char error[4096];
    if (allpairs_run(app, &o->cfg, stats, error, sizeof(error)) != 0)
        apps_die(name, "%s", error);
}

static double percent(uint64_t hits, uint64_t lookups)
{
    return lookups ? 100.0 * (double)hits / (double)lookups : 0.0;
}

void apps_result(const char *name, const struct apps_options *o, const struct allpairs_stats *s,
                 const char *extra, bool verified)
{
    allpairs_print_stats(stderr, s, o->cfg.items);
    printf("RESULT app=%s items=%u devices=%u seconds=%.6f pairs_per_s=%.4g R=%.3f "
           "hit_device=%.1f hit_host=%.1f hit_peer=%.1f loads=%" PRIu64 " bytes_host=%" PRIu64
           " bytes_peer=%" PRIu64 " device_slots=%u host_slots=%u hops=%u l3=%s-%s t_min=%.6g "
           "efficiency=%.3f %s%sverified=%s\n",
           name, o->cfg.items, s->devices, s->seconds,
           s->seconds > 0 ? (double)s->pairs / s->seconds : 0.0, allpairs_r(s, o->cfg.items),
           percent(s->l1_hits, s->l1_lookups), percent(s->l2_hits, s->l2_lookups),
           percent(s->l3_hits, s->l3_lookups), s->loads, allpairs_bytes_host(s), s->bytes_l3,
           o->cfg.device_slots, o->cfg.host_slots, s->hops, s->l3_auto ? "auto" : "forced",
           s->hops > 0 && s->devices > 1 ? "on" : "off", s->t_min, allpairs_efficiency(s),
           extra ? extra : "", extra && *extra ? " " : "", verified ? "yes" : "no");
    fflush(stdout);
}

uint64_t apps_random(uint64_t *state)
{
    uint64_t x = *state += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

double apps_uniform(uint64_t *state)
{
    return (double)(apps_random(state) >> 11) * 0x1p-53;
}

double apps_normal(uint64_t *state)
{
    /* Box-Muller; 1 - u keeps the logarithm finite. */
    double u = 1.0 - apps_uniform(state), v = apps_uniform(state);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}
