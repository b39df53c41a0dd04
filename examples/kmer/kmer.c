/*
 * kmer.c: encoding, k-mer files, the CPU reference assembler, genome
 * segments and contig sets; see kmer.h.  Plain C, no OpenCL: kmer-gen and
 * the unit test link it too.
 */
#include "kmer.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define READ_CHUNK (4u << 20) /* bytes read from a k-mer file at a time */

static const char letters[] = "ACGTF";

/* ---- small helpers ---- */

/* Exits on failure: the callers have nothing sensible to do without memory. */
static void *xrealloc(void *p, size_t size)
{
    void *q = realloc(p, size ? size : 1);
    if (!q) {
        fprintf(stderr, "out of memory (%zu bytes)\n", size);
        exit(2);
    }
    return q;
}

static void say(char *error, size_t size, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static void say(char *error, size_t size, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    vsnprintf(error, size, format, args);
    va_end(args);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- encoding ---- */

int kmer_base_code(char c)
{
    switch (c) {
    case 'A':
        return 0;
    case 'C':
        return 1;
    case 'G':
        return 2;
    case 'T':
        return 3;
    case 'F':
        return KMER_NONE;
    default:
        return -1;
    }
}

char kmer_base_letter(int code)
{
    return code >= 0 && code <= KMER_NONE ? letters[code] : '?';
}

bool kmer_encode(const char *bases, unsigned k, uint64_t *kmer)
{
    uint64_t v = 0;
    for (unsigned i = 0; i < k; i++) {
        int code = kmer_base_code(bases[i]);
        if (code < 0 || code == KMER_NONE)
            return false;
        v = (v << 2) | (uint64_t)code;
    }
    *kmer = v;
    return true;
}

void kmer_decode(uint64_t kmer, unsigned k, char *out)
{
    for (unsigned i = 0; i < k; i++)
        out[i] = letters[(kmer >> (2 * (k - 1 - i))) & 3];
}

void kmer_string_add(struct kmer_string *str, char c)
{
    if (str->len + 1 >= str->capacity) {
        str->capacity = str->capacity ? 2 * str->capacity : 256;
        str->s = xrealloc(str->s, str->capacity);
    }
    str->s[str->len++] = c;
    str->s[str->len] = '\0';
}

void kmer_string_start(struct kmer_string *str, uint64_t kmer, unsigned k)
{
    *str = (struct kmer_string){.capacity = 2 * (size_t)k + 2};
    str->s = xrealloc(NULL, str->capacity);
    kmer_decode(kmer, k, str->s);
    str->len = k;
    str->s[k] = '\0';
}

/* ---- k-mer files ---- */

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Copies up to 40 characters of a line into `out`, as something printable. */
static void quote_line(const char *line, size_t len, char *out, size_t size)
{
    size_t n = 0;
    for (size_t i = 0; i < len && n + 4 < size && i < 40; i++)
        out[n++] = line[i] >= 32 && line[i] < 127 ? line[i] : '?';
    if (len > 40 && n + 4 < size) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
}

/* Parses one line (without its '\n') into in->kmers/exts[in->count]. */
static bool parse_line(const char *path, size_t lineno, const char *line, size_t len,
                       struct kmer_input *in, char *error, size_t error_size)
{
    char shown[64];
    if (len > 0 && line[len - 1] == '\r')
        len--; /* a file written on Windows */
    quote_line(line, len, shown, sizeof(shown));

    size_t bases = 0;
    while (bases < len && !is_blank(line[bases]))
        bases++;
    if (bases == 0) {
        say(error, error_size,
            "%s:%zu: malformed line '%s': expected a k-mer, white space and two extension "
            "letters",
            path, lineno, shown);
        return false;
    }
    for (size_t i = 0; i < bases; i++) {
        int code = kmer_base_code(line[i]);
        if (code < 0 || code == KMER_NONE) {
            say(error, error_size,
                "%s:%zu: malformed line '%s': the k-mer has a letter other than A, C, G, T", path,
                lineno, shown);
            return false;
        }
    }
    if (in->k == 0) {
        if (bases > KMER_MAX_K) {
            say(error, error_size, "%s:%zu: k = %zu is not supported (at most %d)", path, lineno,
                bases, KMER_MAX_K);
            return false;
        }
        in->k = (unsigned)bases;
    }
    if (bases != in->k) {
        say(error, error_size, "%s:%zu: k mismatch: a k-mer of %zu bases, expected k = %u", path,
            lineno, bases, in->k);
        return false;
    }
    uint64_t kmer;
    kmer_encode(line, in->k, &kmer); /* cannot fail: the letters are checked */
    size_t i = bases;
    while (i < len && is_blank(line[i]))
        i++;
    int backward = i + 2 <= len ? kmer_base_code(line[i]) : -1;
    int forward = i + 2 <= len ? kmer_base_code(line[i + 1]) : -1;
    size_t end = i + 2;
    while (end < len && is_blank(line[end]))
        end++;
    if (i == bases || backward < 0 || forward < 0 || end != len) {
        say(error, error_size,
            "%s:%zu: malformed line '%s': expected the k-mer, white space and two extension "
            "letters of A, C, G, T, F",
            path, lineno, shown);
        return false;
    }
    in->kmers[in->count] = kmer;
    in->exts[in->count] = kmer_ext_pack(backward, forward);
    in->count++;
    return true;
}

/* Makes room for one more k-mer. */
static void grow_input(struct kmer_input *in, size_t *capacity)
{
    if (in->count < *capacity)
        return;
    *capacity = *capacity ? 2 * *capacity : 1024;
    in->kmers = xrealloc(in->kmers, *capacity * sizeof(*in->kmers));
    in->exts = xrealloc(in->exts, *capacity * sizeof(*in->exts));
}

/* Parses the complete lines of buf[0, len); returns how many bytes they
 * took (the rest is an incomplete last line), or SIZE_MAX on an error.  At
 * the end of the file (`last`), the rest is a line too. */
static size_t parse_lines(const char *path, const char *buf, size_t len, bool last, size_t *lineno,
                          struct kmer_input *in, size_t *capacity, char *error, size_t error_size)
{
    size_t start = 0;
    while (start < len) {
        const char *nl = memchr(buf + start, '\n', len - start);
        if (!nl && !last)
            break;
        size_t end = nl ? (size_t)(nl - buf) : len;
        ++*lineno;
        grow_input(in, capacity);
        if (!parse_line(path, *lineno, buf + start, end - start, in, error, error_size))
            return SIZE_MAX;
        start = nl ? end + 1 : len;
    }
    return start;
}

bool kmer_read_file(const char *path, unsigned k, struct kmer_input *in, char *error,
                    size_t error_size)
{
    *in = (struct kmer_input){.k = k};
    bool ok = false;
    char *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        say(error, error_size, "cannot open %s: %s", path, strerror(errno));
        return false;
    }
    struct stat st;
    double total = fstat(fileno(f), &st) == 0 && st.st_size > 0 ? (double)st.st_size : 0.0;
    size_t capacity = 0;

    double t0 = now(), done = 0.0;
    int shown_tenth = 0;
    size_t lineno = 0, held = 0;
    buf = xrealloc(NULL, READ_CHUNK);
    for (;;) {
        size_t got = fread(buf + held, 1, READ_CHUNK - held, f);
        if (ferror(f)) {
            say(error, error_size, "%s: read error: %s", path, strerror(errno));
            goto out;
        }
        bool last = got == 0 || feof(f);
        size_t len = held + got;
        const char *nl = memchr(buf, '\n', len);
        if (capacity == 0 && total > 0.0 && nl) {
            /* Guess the count from the size and the first line, with a
             * little to spare, so that the arrays rarely grow. */
            capacity = (size_t)(1.02 * total / (double)(nl - buf + 1)) + 1024;
            in->kmers = xrealloc(NULL, capacity * sizeof(*in->kmers));
            in->exts = xrealloc(NULL, capacity * sizeof(*in->exts));
        }
        size_t used = parse_lines(path, buf, len, last, &lineno, in, &capacity, error, error_size);
        if (used == SIZE_MAX)
            goto out;
        if (used == 0 && len == READ_CHUNK) {
            say(error, error_size, "%s:%zu: malformed line: longer than %u bytes", path, lineno + 1,
                READ_CHUNK);
            goto out;
        }
        memmove(buf, buf + used, len - used);
        held = len - used;
        done += (double)got;
        /* Progress in tenths, only for files that take several chunks. */
        if (total > 2.0 * READ_CHUNK && (int)(10.0 * done / total) > shown_tenth) {
            shown_tenth = (int)(10.0 * done / total);
            fprintf(stderr, "reading %s: %3d%% (%zu k-mers, %.1f s)\n", path, 10 * shown_tenth,
                    in->count, now() - t0);
        }
        if (last)
            break;
    }
    if (in->count == 0) {
        say(error, error_size, "%s: no k-mers in the file", path);
        goto out;
    }
    fprintf(stderr, "read %zu k-mers (k = %u) from %s in %.2f s\n", in->count, in->k, path,
            now() - t0);
    ok = true;
out:
    free(buf);
    fclose(f);
    if (!ok)
        kmer_input_free(in);
    return ok;
}

void kmer_input_free(struct kmer_input *in)
{
    free(in->kmers);
    free(in->exts);
    *in = (struct kmer_input){0};
}

/* ---- contigs ---- */

void contig_set_add(struct contig_set *set, char *seq)
{
    if (set->count == set->capacity) {
        set->capacity = set->capacity ? 2 * set->capacity : 64;
        set->seqs = xrealloc(set->seqs, set->capacity * sizeof(*set->seqs));
    }
    set->seqs[set->count++] = seq;
}

void contig_set_free(struct contig_set *set)
{
    for (size_t i = 0; i < set->count; i++)
        free(set->seqs[i]);
    free(set->seqs);
    *set = (struct contig_set){0};
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void contig_set_sort(struct contig_set *set)
{
    if (set->count > 1)
        qsort(set->seqs, set->count, sizeof(*set->seqs), compare_strings);
}

bool contig_set_equal(const struct contig_set *a, const struct contig_set *b, char *why,
                      size_t why_size)
{
    if (a->count != b->count) {
        say(why, why_size, "%zu contigs against %zu", a->count, b->count);
        return false;
    }
    for (size_t i = 0; i < a->count; i++) {
        if (strcmp(a->seqs[i], b->seqs[i]) != 0) {
            say(why, why_size, "sorted contig %zu differs (%zu bases against %zu)", i,
                strlen(a->seqs[i]), strlen(b->seqs[i]));
            return false;
        }
    }
    return true;
}

size_t contig_set_bases(const struct contig_set *set)
{
    size_t total = 0;
    for (size_t i = 0; i < set->count; i++)
        total += strlen(set->seqs[i]);
    return total;
}

bool contig_set_write_fasta(const struct contig_set *set, FILE *out)
{
    for (size_t i = 0; i < set->count; i++) {
        const char *s = set->seqs[i];
        size_t len = strlen(s);
        if (fprintf(out, ">contig_%zu length=%zu\n", i + 1, len) < 0)
            return false;
        for (size_t at = 0; at < len; at += 80) {
            size_t n = len - at < 80 ? len - at : 80;
            if (fwrite(s + at, 1, n, out) != n || fputc('\n', out) == EOF)
                return false;
        }
    }
    return fflush(out) == 0;
}

/* ---- the CPU assembler ---- */

/* One slot of the CPU table: the k-mer and 1 + its index in the input
 * (0: empty).  The key is stored, not only the index, so that probing reads
 * one cache line, as a plain hash table would. */
struct cpu_slot {
    uint64_t kmer;
    uint32_t index1;
};

struct cpu_table {
    struct cpu_slot *slots;
    size_t mask; /* slots - 1; a power of two at least twice the k-mers */
};

static void cpu_table_init(struct cpu_table *t, size_t count)
{
    size_t slots = 64;
    while (slots < 2 * count)
        slots *= 2;
    t->slots = calloc(slots, sizeof(*t->slots));
    if (!t->slots) {
        fprintf(stderr, "out of memory (a table of %zu slots)\n", slots);
        exit(2);
    }
    t->mask = slots - 1;
}

/* The slot that holds `kmer`, or the empty slot where it would go. */
static struct cpu_slot *cpu_table_find(const struct cpu_table *t, uint64_t kmer)
{
    size_t s = kmer_hash(kmer) & t->mask;
    /* Never full (at most half the slots are used), so this ends. */
    while (t->slots[s].index1 != 0 && t->slots[s].kmer != kmer)
        s = (s + 1) & t->mask;
    return &t->slots[s];
}

bool kmer_cpu_assemble(const struct kmer_input *in, struct contig_set *contigs,
                       struct kmer_stats *stats, char *error, size_t error_size)
{
    *stats = (struct kmer_stats){0};
    if (in->count >= UINT32_MAX) {
        say(error, error_size, "too many k-mers (%zu)", in->count);
        return false;
    }
    bool ok = false;
    struct cpu_table table;
    cpu_table_init(&table, in->count);

    double t0 = now();
    for (size_t i = 0; i < in->count; i++) {
        struct cpu_slot *slot = cpu_table_find(&table, in->kmers[i]);
        if (slot->index1 != 0) {
            say(error, error_size, "the k-mer on line %zu repeats the one on line %u", i + 1,
                slot->index1);
            goto out;
        }
        slot->kmer = in->kmers[i];
        slot->index1 = (uint32_t)(i + 1);
    }
    double t1 = now();
    stats->insert_seconds = t1 - t0;
    stats->inserts = in->count;

    for (size_t i = 0; i < in->count; i++) {
        if (kmer_ext_backward(in->exts[i]) != KMER_NONE)
            continue;
        struct kmer_string g;
        kmer_string_start(&g, in->kmers[i], in->k);
        uint64_t kmer = in->kmers[i];
        int forward = kmer_ext_forward(in->exts[i]);
        uint64_t steps = 0;
        while (forward != KMER_NONE) {
            /* A walk longer than the input visits a k-mer twice. */
            if (steps++ > in->count) {
                say(error, error_size, "the contig from line %zu never ends (a cycle)", i + 1);
                free(g.s);
                goto out;
            }
            uint64_t next = kmer_next(kmer, forward, in->k);
            const struct cpu_slot *slot = cpu_table_find(&table, next);
            stats->lookups++;
            if (slot->index1 == 0) {
                stats->dangling++;
                break;
            }
            kmer_string_add(&g, kmer_base_letter(forward));
            kmer = next;
            forward = kmer_ext_forward(in->exts[slot->index1 - 1]);
        }
        if (steps > stats->rounds)
            stats->rounds = steps;
        contig_set_add(contigs, g.s);
    }
    stats->traverse_seconds = now() - t1;
    ok = true;
out:
    free(table.slots);
    return ok;
}

size_t kmer_uncovered(const struct kmer_input *in, const struct contig_set *contigs)
{
    size_t covered = 0;
    for (size_t i = 0; i < contigs->count; i++)
        covered += strlen(contigs->seqs[i]) - in->k + 1;
    return covered >= in->count ? 0 : in->count - covered;
}

/* ---- genomes ---- */

bool kmer_read_genome(const char *path, char **bases, size_t *length, char *error,
                      size_t error_size)
{
    *bases = NULL;
    *length = 0;
    FILE *f = fopen(path, "r");
    if (!f) {
        say(error, error_size, "cannot open %s: %s", path, strerror(errno));
        return false;
    }
    bool ok = false;
    char *line = NULL, *out = NULL;
    size_t line_size = 0, len = 0, capacity = 0, lineno = 0;
    ssize_t got;
    while ((got = getline(&line, &line_size, f)) >= 0) {
        lineno++;
        if (line[0] == '>' || line[0] == ';')
            continue;
        if (len + (size_t)got + 1 > capacity) {
            capacity = 2 * (len + (size_t)got + 1);
            out = xrealloc(out, capacity);
        }
        for (ssize_t i = 0; i < got; i++) {
            char c = line[i];
            if (c == '\n' || c == '\r' || is_blank(c))
                continue;
            if (c >= 'a' && c <= 'z')
                c = (char)(c - 'a' + 'A');
            int code = kmer_base_code(c);
            if (code < 0 || code == KMER_NONE) {
                say(error, error_size, "%s:%zu: '%c' is not a base (A, C, G, T)", path, lineno,
                    line[i] >= 32 && line[i] < 127 ? line[i] : '?');
                goto out;
            }
            out[len++] = c;
        }
    }
    if (ferror(f)) {
        say(error, error_size, "%s: read error: %s", path, strerror(errno));
        goto out;
    }
    if (len == 0) {
        say(error, error_size, "%s: no bases in the file", path);
        goto out;
    }
    out[len] = '\0';
    *bases = out;
    *length = len;
    out = NULL;
    ok = true;
out:
    free(out);
    free(line);
    fclose(f);
    return ok;
}

bool *kmer_unique_positions(const char *genome, size_t length, unsigned k)
{
    size_t positions = length >= k ? length - k + 1 : 0;
    bool *unique = xrealloc(NULL, positions * sizeof(*unique));
    /* Counts of every k-mer, saturated at 2, in an open-address table;
     * count 0 marks an empty slot. */
    size_t slots = 64;
    while (slots < 2 * positions)
        slots *= 2;
    uint64_t *keys = xrealloc(NULL, slots * sizeof(*keys));
    uint8_t *counts = calloc(slots, 1);
    if (!counts) {
        fprintf(stderr, "out of memory (a table of %zu slots)\n", slots);
        exit(2);
    }
    uint64_t mask = kmer_mask(k), kmer = 0;
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i + k <= length; i++) {
            if (i == 0)
                kmer_encode(genome, k, &kmer);
            else
                kmer = ((kmer << 2) | (uint64_t)kmer_base_code(genome[i + k - 1])) & mask;
            size_t s = kmer_hash(kmer) & (slots - 1);
            while (counts[s] != 0 && keys[s] != kmer)
                s = (s + 1) & (slots - 1);
            if (pass == 0) {
                keys[s] = kmer;
                counts[s] = counts[s] < 2 ? counts[s] + 1 : 2;
            } else {
                unique[i] = counts[s] == 1;
            }
        }
    }
    free(keys);
    free(counts);
    return unique;
}

void kmer_genome_segments(const char *genome, size_t length, unsigned k,
                          struct contig_set *segments)
{
    bool *unique = kmer_unique_positions(genome, length, k);
    size_t positions = length >= k ? length - k + 1 : 0;
    for (size_t i = 0; i < positions;) {
        if (!unique[i]) {
            i++;
            continue;
        }
        size_t j = i;
        while (j + 1 < positions && unique[j + 1])
            j++;
        size_t len = j - i + k; /* k-mers i..j cover bases [i, j + k) */
        char *seq = xrealloc(NULL, len + 1);
        memcpy(seq, genome + i, len);
        seq[len] = '\0';
        contig_set_add(segments, seq);
        i = j + 1;
    }
    free(unique);
}
