/*
 * kmer-gen: makes a random genome and its k-mer file, the input of
 * kmer-assemble.  The genome is random bases with repeats planted at about
 * every SPACING bases (a k-mer copied from a random place), so that the
 * k-mers that occur once form many segments, as repeats break real
 * assemblies into contigs.  The k-mer file holds every unique k-mer, in a
 * random order, with its extensions: the base before and after it when the
 * k-mer there is unique too, F otherwise.  Its contigs are then exactly the
 * genome's unique-k-mer segments (kmer-assemble --genome checks that).
 */
#include "kmer.h"

#include "clutil.h" /* app_parse_u64 */

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_BASES   1000000
#define MAX_BASES       1000000000 /* positions fit a uint32_t */
#define DEFAULT_K       31
#define DEFAULT_SPACING 1000

static void usage(FILE *out)
{
    fprintf(out,
            "usage: kmer-gen [-n BASES] [-k K] [-l SPACING] [-s SEED] [-o PREFIX] [--help]\n"
            "Writes a random genome to PREFIX.fa and its unique k-mers with their\n"
            "extensions to PREFIX.txt (one 'KMER BF' a line, B and F each A, C, G, T or\n"
            "F for none), the input of kmer-assemble.\n"
            "  -n BASES    genome length, %d to %d (default %d)\n"
            "  -k K        k-mer length, 2 to %d (default %d)\n"
            "  -l SPACING  plant a repeat about every SPACING bases (uniform in\n"
            "              [SPACING/2, 3*SPACING/2]), which ends the contigs there;\n"
            "              0: none (default %d)\n"
            "  -s SEED     random seed (default 1)\n"
            "  -o PREFIX   output prefix (default kmer-genome)\n"
            "  --help      show this help\n",
            100, MAX_BASES, DEFAULT_BASES, KMER_MAX_K, DEFAULT_K, DEFAULT_SPACING);
}

/* Prints "kmer-gen: message" and exits with status 2. */
static _Noreturn void die(const char *format, ...) __attribute__((format(printf, 1, 2)));

static void die(const char *format, ...)
{
    va_list args;
    va_start(args, format);
    fputs("kmer-gen: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
    exit(2);
}

/* splitmix64, as the other examples use: the same seed, the same genome. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t x = *state += UINT64_C(0x9e3779b97f4a7c15);
    x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
    return x ^ (x >> 31);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static FILE *create(const char *prefix, const char *suffix, char *path, size_t size)
{
    snprintf(path, size, "%s%s", prefix, suffix);
    FILE *f = fopen(path, "w");
    if (!f)
        die("cannot create %s: %s", path, strerror(errno));
    /* Large writes: the k-mer file of 10^8 bases is about 3 GB. */
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    return f;
}

static void finish(FILE *f, const char *path)
{
    if (ferror(f) || fclose(f) != 0)
        die("cannot write %s: %s", path, strerror(errno));
}

int main(int argc, char **argv)
{
    uint64_t bases = DEFAULT_BASES, k = DEFAULT_K, spacing = DEFAULT_SPACING, seed = 1;
    const char *prefix = "kmer-genome";
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--help") == 0 || strcmp(flag, "-h") == 0) {
            usage(stdout);
            return 0;
        }
        if (i + 1 >= argc) {
            usage(stderr);
            die("%s needs a value", flag);
        }
        const char *value = argv[++i];
        uint64_t *number = strcmp(flag, "-n") == 0   ? &bases
                           : strcmp(flag, "-k") == 0 ? &k
                           : strcmp(flag, "-l") == 0 ? &spacing
                           : strcmp(flag, "-s") == 0 ? &seed
                                                     : NULL;
        if (strcmp(flag, "-o") == 0) {
            prefix = value;
        } else if (!number) {
            usage(stderr);
            die("unknown argument '%s'", flag);
        } else if (!app_parse_u64(value, number)) {
            die("%s needs a number, not '%s'", flag, value);
        }
    }
    if (bases < 100 || bases > MAX_BASES)
        die("-n needs a length from 100 to %d", MAX_BASES);
    if (k < 2 || k > KMER_MAX_K)
        die("-k needs a k from 2 to %d", KMER_MAX_K);
    if (spacing != 0 && spacing < 2 * k)
        die("-l needs a spacing of at least 2k = %" PRIu64 " (or 0)", 2 * k);

    double t0 = now();
    char *genome = malloc(bases + 1);
    if (!genome)
        die("out of memory (%" PRIu64 " bases)", bases);
    uint64_t state = seed;
    for (uint64_t i = 0; i < bases; i++)
        genome[i] = "ACGT"[next_random(&state) & 3];
    genome[bases] = '\0';
    uint64_t repeats = 0;
    if (spacing > 0) {
        /* Copy the k-mer at a random place q over the one at p: both are then
         * repeated and end the segments around them. */
        for (uint64_t p = spacing / 2 + next_random(&state) % (spacing + 1); p + k <= bases;
             p += spacing / 2 + next_random(&state) % (spacing + 1)) {
            uint64_t q = next_random(&state) % (bases - k + 1);
            memmove(genome + p, genome + q, k);
            repeats++;
        }
    }
    fprintf(stderr, "kmer-gen: %" PRIu64 " random bases, %" PRIu64 " planted repeats (%.2f s)\n",
            bases, repeats, now() - t0);

    size_t positions = bases - k + 1;
    bool *unique = kmer_unique_positions(genome, bases, (unsigned)k);
    uint32_t *order = malloc(positions * sizeof(*order));
    if (!order)
        die("out of memory (%zu positions)", positions);
    size_t count = 0, segments = 0, run = 0, longest = 0;
    for (size_t i = 0; i < positions; i++) {
        if (!unique[i]) {
            run = 0;
            continue;
        }
        order[count++] = (uint32_t)i;
        segments += run == 0;
        run++;
        longest = run > longest ? run : longest;
    }
    /* A random order, as k-mers come out of a counter, not genome order. */
    for (size_t i = count; i > 1; i--) {
        size_t j = next_random(&state) % i;
        uint32_t t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    fprintf(stderr,
            "kmer-gen: %zu unique %" PRIu64 "-mers of %zu in %zu segments, the longest %zu "
            "bases (%.2f s)\n",
            count, k, positions, segments, longest ? longest + k - 1 : 0, now() - t0);

    char path[4096];
    FILE *f = create(prefix, ".txt", path, sizeof(path));
    char line[KMER_MAX_K + 5];
    for (size_t n = 0; n < count; n++) {
        size_t i = order[n];
        int backward = i > 0 && unique[i - 1] ? kmer_base_code(genome[i - 1]) : KMER_NONE;
        int forward =
            i + 1 < positions && unique[i + 1] ? kmer_base_code(genome[i + k]) : KMER_NONE;
        memcpy(line, genome + i, k);
        line[k] = ' ';
        line[k + 1] = kmer_base_letter(backward);
        line[k + 2] = kmer_base_letter(forward);
        line[k + 3] = '\n';
        fwrite(line, 1, k + 4, f);
        if (count > 10000000 && n % 10000000 == 9999999)
            fprintf(stderr, "kmer-gen: writing %s: %zu%%\n", path, 100 * (n + 1) / count);
    }
    finish(f, path);
    fprintf(stderr, "kmer-gen: wrote %s (%.2f s)\n", path, now() - t0);

    f = create(prefix, ".fa", path, sizeof(path));
    fprintf(f, ">genome length=%" PRIu64 " k=%" PRIu64 " spacing=%" PRIu64 " seed=%" PRIu64 "\n",
            bases, k, spacing, seed);
    for (uint64_t at = 0; at < bases; at += 80) {
        fwrite(genome + at, 1, bases - at < 80 ? bases - at : 80, f);
        fputc('\n', f);
    }
    finish(f, path);
    fprintf(stderr, "kmer-gen: wrote %s (%.2f s)\n", path, now() - t0);

    free(order);
    free(unique);
    free(genome);
    return 0;
}
