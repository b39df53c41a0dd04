/*
 * allpairs-cv: phylogeny from composition vectors (Qi, Wang and Hao 2004;
 * Rocket's bioinformatics application) on the all-pairs runtime.
 *
 * It generates a family of proteomes with known ancestry: a random root
 * proteome, mutated (substitutions) along every branch of a balanced binary
 * tree whose leaves, in a shuffled order, are the files, written as FASTA.
 * Parsing counts the k-, (k-1)- and (k-2)-strings of each protein; the
 * device computes the sparse composition vector, each k-string's frequency
 * against its Markov expectation, a(w) = (p(w) - p0(w)) / p0(w) with
 * p0(w) = p(w1..wk-1) p(w2..wk) / p(w2..wk-1); the comparison is the cosine
 * distance (1 - C) / 2 of two sparse vectors, a merge by binary search
 * whose work depends on the pair (irregular).  Neighbour joining on the
 * distances gives a tree, written in Newick format with -o; its splits
 * must be those of the true tree, and every distance must match a CPU
 * reference.
 */
#include "apps.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NAME      "allpairs-cv"
#define LOCAL     64
#define MAX_LEN   300  /* most amino acids of a generated protein */
#define MIN_LEN   100
#define RATE      0.03 /* substitutions per site and branch */
#define TOLERANCE 1e-4 /* of a distance, device against CPU */

static const char amino[] = "ACDEFGHIKLMNPQRSTVWY";

/* parsed (uint): [0] distinct k-strings nd, [1..3] totals of k-, (k-1)-,
 * (k-2)-strings, [4..7] unused, codes[MAXD], counts[MAXD], then the counts
 * of every (k-1)-string (C1 of them) and every (k-2)-string (C2).
 * item: [0] nd, [1..3] unused, codes[MAXD] (uint), values[MAXD] (float). */
static const char kernel_source[] =
    "__kernel void cv_vector(__global const uint *parsed, __global uint *item, uint index)\n"
    "{\n"
    "    uint t = get_global_id(0), nd = parsed[0];\n"
    "    __global const uint *codes = parsed + 8, *counts = codes + MAXD;\n"
    "    __global const uint *c1 = counts + MAXD, *c2 = c1 + C1;\n"
    "    if (t == 0)\n"
    "        item[0] = nd;\n"
    "    if (t >= nd)\n"
    "        return;\n"
    "    uint w = codes[t];\n"
    "    float lk = parsed[1], l1 = parsed[2], l2 = parsed[3];\n"
    "    float p = counts[t] / lk;\n"
    "    float p0 = (c1[w / 20] / l1) * (c1[w % C1] / l1) / (c2[(w / 20) % C2] / l2);\n"
    "    item[4 + t] = w;\n"
    "    ((__global float *)(item + 4 + MAXD))[t] = (p - p0) / p0;\n"
    "}\n"
    "\n"
    "__kernel void cv_distance(__global const uint *a, __global const uint *b,\n"
    "                          __global float *result, uint i, uint j)\n"
    "{\n"
    "    __local float s[3][LOCAL];\n"
    "    uint na = a[0], nb = b[0], t = get_local_id(0);\n"
    "    __global const uint *ca = a + 4, *cb = b + 4;\n"
    "    __global const float *va = (__global const float *)(a + 4 + MAXD);\n"
    "    __global const float *vb = (__global const float *)(b + 4 + MAXD);\n"
    "    float dot = 0.0f, aa = 0.0f, bb = 0.0f;\n"
    "    for (uint k = t; k < na; k += LOCAL) {\n"
    "        uint w = ca[k], lo = 0, hi = nb;\n"
    "        while (lo < hi) {\n"
    "            uint mid = (lo + hi) / 2;\n"
    "            if (cb[mid] < w) lo = mid + 1; else hi = mid;\n"
    "        }\n"
    "        if (lo < nb && cb[lo] == w)\n"
    "            dot += va[k] * vb[lo];\n"
    "        aa += va[k] * va[k];\n"
    "    }\n"
    "    for (uint k = t; k < nb; k += LOCAL)\n"
    "        bb += vb[k] * vb[k];\n"
    "    s[0][t] = dot; s[1][t] = aa; s[2][t] = bb;\n"
    "    for (uint step = LOCAL / 2; step > 0; step /= 2) {\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "        if (t < step)\n"
    "            for (int q = 0; q < 3; q++)\n"
    "                s[q][t] += s[q][t + step];\n"
    "    }\n"
    "    if (t == 0)\n"
    "        result[0] = (1.0f - s[0][0] / sqrt(s[1][0] * s[2][0])) / 2.0f;\n"
    "}\n";

struct cv {
    struct apps_options *o;
    uint32_t k, maxd, c1, c2, ck;
    float *dist; /* n x n, from the devices */
};

static size_t parsed_words(const struct cv *c)
{
    return 8 + 2 * (size_t)c->maxd + c->c1 + c->c2;
}

static bool file_name(const struct cv *c, uint32_t item, char *path, size_t size)
{
    return apps_item_path(c->o, "proteome", "fasta", item, path, size);
}

static bool file_path(void *user, uint32_t item, char *path, size_t size)
{
    return file_name(user, item, path, size);
}

static int amino_index(char a)
{
    const char *p = a ? strchr(amino, a) : NULL;
    return p ? (int)(p - amino) : -1;
}

/* Counts the k-strings (dense, then compacted in code order), (k-1)- and
 * (k-2)-strings of every protein of a FASTA file. */
static bool parse(void *user, uint32_t item, const void *data, size_t length, void *out,
                  char *error, size_t error_size)
{
    (void)item;
    const struct cv *c = user;
    const char *text = data;
    uint32_t *parsed = out, *codes = parsed + 8, *counts = codes + c->maxd;
    uint32_t *c1 = counts + c->maxd, *c2 = c1 + c->c1;
    uint32_t *dense = calloc(c->ck, sizeof(*dense));
    if (!dense) {
        snprintf(error, error_size, "out of memory");
        return false;
    }
    bool ok = false;
    uint64_t lk = 0, l1 = 0, l2 = 0;
    uint32_t line = 1, run = 0, code = 0; /* run: letters of the current protein so far */
    bool header = false, any = false;
    for (size_t at = 0; at < length; at++) {
        char ch = text[at];
        if (ch == '\n') {
            line++;
            header = false;
            continue;
        }
        if (header || ch == '\r')
            continue;
        if (ch == '>' && (at == 0 || text[at - 1] == '\n')) {
            header = true;
            any = true;
            run = 0;
            code = 0;
            continue;
        }
        int a = amino_index(ch);
        if (a < 0 || !any) {
            snprintf(error, error_size, "line %u: %s", line,
                     !any ? "sequence before the first '>' header" : "not an amino acid letter");
            goto out;
        }
        code = (code * 20 + (uint32_t)a) % c->ck;
        run++;
        if (run >= c->k - 2) {
            c2[code % c->c2]++;
            l2++;
        }
        if (run >= c->k - 1) {
            c1[code % c->c1]++;
            l1++;
        }
        if (run >= c->k) {
            dense[code]++;
            lk++;
        }
    }
    if (lk == 0) {
        snprintf(error, error_size, "no protein of %u or more amino acids", c->k);
        goto out;
    }
    uint32_t nd = 0;
    for (uint32_t w = 0; w < c->ck; w++) {
        if (!dense[w])
            continue;
        if (nd == c->maxd) {
            snprintf(error, error_size, "more than %u distinct %u-strings", c->maxd, c->k);
            goto out;
        }
        codes[nd] = w;
        counts[nd++] = dense[w];
    }
    parsed[0] = nd;
    parsed[1] = (uint32_t)lk;
    parsed[2] = (uint32_t)l1;
    parsed[3] = (uint32_t)l2;
    ok = true;
out:
    free(dense);
    return ok;
}

static void postprocess(void *user, uint32_t i, uint32_t j, const void *result)
{
    struct cv *c = user;
    apps_store_symmetric(c->dist, c->o->items, i, j, result);
}

/* ---- input: a family with known ancestry ---- */

struct family {
    uint32_t n, proteins;
    uint32_t *lengths;  /* of each protein */
    uint32_t *leaf_of;  /* tree leaf -> file */
    uint8_t *splits;    /* true splits, n bytes each */
    uint32_t n_splits;
};

static void add_split(struct family *f, uint32_t lo, uint32_t hi)
{
    uint32_t size = hi - lo;
    if (size < 2 || size > f->n - 2)
        return;
    uint8_t *s = f->splits + (size_t)f->n_splits++ * f->n;
    memset(s, 0, f->n);
    for (uint32_t l = lo; l < hi; l++)
        s[f->leaf_of[l]] = 1;
}

static void write_fasta(const struct cv *c, const struct family *f, uint32_t file,
                        const char *genome)
{
    char path[4200];
    file_name(c, file, path, sizeof(path));
    FILE *out = fopen(path, "w");
    if (!out)
        apps_die(NAME, "cannot create %s: %s", path, strerror(errno));
    size_t at = 0;
    for (uint32_t p = 0; p < f->proteins; p++) {
        fprintf(out, ">sp|P%05u%02u| protein %u of proteome %u\n", file, p, p, file);
        for (uint32_t k = 0; k < f->lengths[p]; k += 60)
            fprintf(out, "%.*s\n", (int)(f->lengths[p] - k < 60 ? f->lengths[p] - k : 60),
                    genome + at + k);
        at += f->lengths[p];
    }
    if (fclose(out) != 0)
        apps_die(NAME, "cannot write %s", path);
}

/* Leaves [lo, hi) descend from `genome`: each half gets its own mutated
 * copy, down to single leaves. */
static void descend(const struct cv *c, struct family *f, const char *genome, size_t len,
                    uint32_t lo, uint32_t hi, uint64_t *rng, bool write)
{
    add_split(f, lo, hi);
    if (hi - lo == 1) {
        if (write)
            write_fasta(c, f, f->leaf_of[lo], genome);
        return;
    }
    uint32_t mid = lo + (hi - lo) / 2;
    char *child = malloc(len + 1);
    if (!child)
        apps_die(NAME, "out of memory");
    for (int half = 0; half < 2; half++) {
        memcpy(child, genome, len + 1);
        for (size_t k = 0; k < len; k++)
            if (apps_uniform(rng) < RATE)
                child[k] = amino[apps_random(rng) % 20];
        descend(c, f, child, len, half ? mid : lo, half ? hi : mid, rng, write);
    }
    free(child);
}

static void make_family(const struct cv *c, struct family *f, uint32_t proteins, bool write)
{
    uint32_t n = (uint32_t)c->o->items;
    uint64_t rng = c->o->seed * 0x9e3779b97f4a7c15ULL + 3;
    *f = (struct family){.n = n, .proteins = proteins};
    f->lengths = malloc(proteins * sizeof(*f->lengths));
    f->leaf_of = malloc(n * sizeof(*f->leaf_of));
    f->splits = malloc((size_t)2 * n * n);
    if (!f->lengths || !f->leaf_of || !f->splits)
        apps_die(NAME, "out of memory");
    size_t len = 0;
    for (uint32_t p = 0; p < proteins; p++) {
        f->lengths[p] = MIN_LEN + (uint32_t)(apps_random(&rng) % (MAX_LEN - MIN_LEN + 1));
        len += f->lengths[p];
    }
    for (uint32_t l = 0; l < n; l++)
        f->leaf_of[l] = l;
    for (uint32_t l = n; l > 1; l--) { /* files in no order of the tree */
        uint32_t r = (uint32_t)(apps_random(&rng) % l), t = f->leaf_of[l - 1];
        f->leaf_of[l - 1] = f->leaf_of[r];
        f->leaf_of[r] = t;
    }
    char *root = malloc(len + 1);
    if (!root)
        apps_die(NAME, "out of memory");
    for (size_t k = 0; k < len; k++)
        root[k] = amino[apps_random(&rng) % 20];
    root[len] = '\0';
    descend(c, f, root, len, 0, n, &rng, write);
    free(root);
}

/* ---- neighbour joining ---- */

static int cmp_split(const void *a, const void *b, void *n)
{
    return memcmp(a, b, *(size_t *)n);
}

/* Sorts splits (n bytes each, complemented so that leaf 0 is out of
 * them), drops repeats; returns how many remain. */
static uint32_t normalise_splits(uint8_t *s, uint32_t count, size_t n)
{
    for (uint32_t k = 0; k < count; k++)
        if (s[k * n])
            for (size_t l = 0; l < n; l++)
                s[k * n + l] ^= 1;
    /* insertion sort: a few hundred splits at most in practice */
    for (uint32_t k = 1; k < count; k++)
        for (uint32_t m = k; m > 0 && cmp_split(s + (m - 1) * n, s + m * n, &n) > 0; m--)
            for (size_t l = 0; l < n; l++) {
                uint8_t t = s[(m - 1) * n + l];
                s[(m - 1) * n + l] = s[m * n + l];
                s[m * n + l] = t;
            }
    uint32_t kept = 0;
    for (uint32_t k = 0; k < count; k++)
        if (kept == 0 || memcmp(s + (kept - 1) * n, s + k * n, n) != 0)
            memmove(s + kept++ * n, s + k * n, n);
    return kept;
}

/* Neighbour joining on d (n x n).  Writes the Newick tree to `out` (if not
 * NULL) and the splits of its internal nodes to splits (n bytes each);
 * returns how many. */
static uint32_t neighbour_join(const float *d, uint32_t n, FILE *out, uint8_t *splits)
{
    uint32_t m = n, n_splits = 0;
    double *D = malloc((size_t)n * n * sizeof(*D)), *r = malloc(n * sizeof(*r));
    uint8_t *sets = calloc((size_t)n * n, 1); /* leaves under each active node */
    char **newick = malloc(n * sizeof(*newick));
    uint32_t *id = malloc(n * sizeof(*id));
    if (!D || !r || !sets || !newick || !id)
        apps_die(NAME, "out of memory");
    for (uint32_t a = 0; a < n; a++) {
        for (uint32_t b = 0; b < n; b++)
            D[(size_t)a * n + b] = a == b ? 0.0 : d[(size_t)a * n + b];
        sets[(size_t)a * n + a] = 1;
        newick[a] = malloc(16);
        if (!newick[a])
            apps_die(NAME, "out of memory");
        snprintf(newick[a], 16, "p%05u", a);
        id[a] = a;
    }
    /* Active nodes are rows 0 .. m-1 of D (compacted as they join). */
    while (m > 3) {
        for (uint32_t a = 0; a < m; a++) {
            r[a] = 0.0;
            for (uint32_t b = 0; b < m; b++)
                r[a] += D[(size_t)a * n + b];
        }
        uint32_t fa = 0, fb = 1;
        double best = INFINITY;
        for (uint32_t a = 0; a < m; a++)
            for (uint32_t b = a + 1; b < m; b++) {
                double q = (m - 2) * D[(size_t)a * n + b] - r[a] - r[b];
                if (q < best) {
                    best = q;
                    fa = a;
                    fb = b;
                }
            }
        double dab = D[(size_t)fa * n + fb];
        double la = dab / 2 + (r[fa] - r[fb]) / (2.0 * (m - 2)), lb = dab - la;
        size_t size = strlen(newick[fa]) + strlen(newick[fb]) + 64;
        char *joined = malloc(size);
        if (!joined)
            apps_die(NAME, "out of memory");
        snprintf(joined, size, "(%s:%.6f,%s:%.6f)", newick[fa], la, newick[fb], lb);
        free(newick[fa]);
        free(newick[fb]);
        /* The new node takes row fa; row fb gets the last row. */
        for (uint32_t c = 0; c < m; c++) {
            if (c == fa || c == fb)
                continue;
            double v = (D[(size_t)fa * n + c] + D[(size_t)fb * n + c] - dab) / 2;
            D[(size_t)fa * n + c] = D[(size_t)c * n + fa] = v;
        }
        for (uint32_t l = 0; l < n; l++)
            sets[(size_t)fa * n + l] |= sets[(size_t)fb * n + l];
        memcpy(splits + (size_t)n_splits++ * n, sets + (size_t)fa * n, n);
        newick[fa] = joined;
        uint32_t last = m - 1;
        if (fb != last) {
            for (uint32_t c = 0; c < m; c++) {
                D[(size_t)fb * n + c] = D[(size_t)last * n + c];
                D[(size_t)c * n + fb] = D[(size_t)c * n + last];
            }
            D[(size_t)fb * n + fb] = 0.0;
            memcpy(sets + (size_t)fb * n, sets + (size_t)last * n, n);
            newick[fb] = newick[last];
        }
        m--;
    }
    if (out) {
        /* The last three meet at one centre. */
        double d01 = D[1], d02 = D[2], d12 = D[n + 2];
        fprintf(out, "(%s:%.6f,%s:%.6f,%s:%.6f);\n", newick[0], (d01 + d02 - d12) / 2, newick[1],
                (d01 + d12 - d02) / 2, newick[2], (d02 + d12 - d01) / 2);
    }
    for (uint32_t a = 0; a < m; a++)
        free(newick[a]);
    free(id);
    free(newick);
    free(sets);
    free(r);
    free(D);
    return n_splits;
}

/* ---- the CPU reference ---- */

struct vec {
    uint32_t n;
    uint32_t *codes;
    double *values;
};

static void cpu_vector(const struct cv *c, const uint32_t *parsed, struct vec *v)
{
    const uint32_t *codes = parsed + 8, *counts = codes + c->maxd;
    const uint32_t *c1 = counts + c->maxd, *c2 = c1 + c->c1;
    double lk = parsed[1], l1 = parsed[2], l2 = parsed[3];
    v->n = parsed[0];
    v->codes = malloc((v->n + 1) * sizeof(*v->codes));
    v->values = malloc((v->n + 1) * sizeof(*v->values));
    if (!v->codes || !v->values)
        apps_die(NAME, "out of memory");
    for (uint32_t t = 0; t < v->n; t++) {
        uint32_t w = codes[t];
        double p = counts[t] / lk;
        double p0 = (c1[w / 20] / l1) * (c1[w % c->c1] / l1) / (c2[(w / 20) % c->c2] / l2);
        v->codes[t] = w;
        v->values[t] = (p - p0) / p0;
    }
}

static double cpu_distance(const struct vec *a, const struct vec *b)
{
    double dot = 0, aa = 0, bb = 0;
    uint32_t x = 0, y = 0;
    while (x < a->n && y < b->n) {
        if (a->codes[x] < b->codes[y])
            x++;
        else if (a->codes[x] > b->codes[y])
            y++;
        else
            dot += a->values[x++] * b->values[y++];
    }
    for (uint32_t k = 0; k < a->n; k++)
        aa += a->values[k] * a->values[k];
    for (uint32_t k = 0; k < b->n; k++)
        bb += b->values[k] * b->values[k];
    return (1.0 - dot / sqrt(aa * bb)) / 2.0;
}

int main(int argc, char **argv)
{
    struct apps_options o = {
        .items = 16,
        .seed = 1,
        .cfg = {.device_slots = 16, .host_slots = 8, .jobs = 4, .hops = 1},
    };
    uint64_t proteins = 8, k = 4;
    struct apps_number numbers[] = {
        {"--proteins", &proteins, 1, 1000, "proteins of each proteome"},
        {"-k", &k, 3, 5, "length of the strings counted"},
    };
    apps_parse(NAME,
               "Phylogeny from composition vectors: the CV distance of every pair of\n"
               "generated proteomes (FASTA) on the all-pairs runtime (allpairs(1)), then a\n"
               "neighbour-joining tree (Newick, with -o) checked against the true one.",
               argc, argv, &o, numbers, sizeof(numbers) / sizeof(numbers[0]));
    if (o.items < 4)
        apps_die(NAME, "a tree needs -n 4 or more proteomes");
    uint32_t n = (uint32_t)o.items;
    struct cv c = {.o = &o, .k = (uint32_t)k};
    c.c2 = 1;
    for (uint32_t l = 0; l + 2 < c.k; l++)
        c.c2 *= 20;
    c.c1 = c.c2 * 20;
    c.ck = c.c1 * 20;
    c.maxd = (uint32_t)proteins * MAX_LEN;
    c.dist = calloc((size_t)n * n, sizeof(*c.dist));
    if (!c.dist)
        apps_die(NAME, "out of memory");
    apps_make_dir(NAME, &o);
    struct family fam;
    make_family(&c, &fam, (uint32_t)proteins, !o.reuse);

    char options[96];
    snprintf(options, sizeof(options), "-DLOCAL=%d -DMAXD=%uu -DC1=%uu -DC2=%uu", LOCAL, c.maxd,
             c.c1, c.c2);
    struct allpairs_app app = {
        .name = NAME,
        .user = &c,
        .source = kernel_source,
        .build_options = options,
        .preprocess_kernel = "cv_vector",
        .compare_kernel = "cv_distance",
        .preprocess_global = (c.maxd + LOCAL - 1) / LOCAL * LOCAL,
        .compare_global = LOCAL,
        .compare_local = LOCAL,
        .parsed_size = parsed_words(&c) * sizeof(uint32_t),
        .item_size = (4 + 2 * (size_t)c.maxd) * sizeof(uint32_t),
        .result_size = sizeof(float),
        .file_path = file_path,
        .parse = parse,
        .postprocess = postprocess,
    };
    struct allpairs_stats st;
    apps_run(NAME, &app, &o, &st);

    /* The reference distances, from the same files, in double. */
    struct vec *vecs = calloc(n, sizeof(*vecs));
    uint32_t *parsed = malloc(app.parsed_size);
    if (!vecs || !parsed)
        apps_die(NAME, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        char path[4200], error[256];
        file_name(&c, i, path, sizeof(path));
        FILE *in = fopen(path, "rb");
        if (!in)
            apps_die(NAME, "cannot open %s: %s", path, strerror(errno));
        size_t cap = (size_t)proteins * (MAX_LEN + 128) * 2 + 4096;
        char *text = malloc(cap);
        size_t len = text ? fread(text, 1, cap, in) : 0;
        fclose(in);
        memset(parsed, 0, app.parsed_size);
        if (!text || !parse(&c, i, text, len, parsed, error, sizeof(error)))
            apps_die(NAME, "%s: %s", path, text ? error : "out of memory");
        free(text);
        cpu_vector(&c, parsed, &vecs[i]);
    }
    double worst = 0.0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = i + 1; j < n; j++) {
            double err = fabs(c.dist[(size_t)i * n + j] - cpu_distance(&vecs[i], &vecs[j]));
            if (!(err <= worst))
                worst = err;
        }

    /* The tree, and its splits against the true ones. */
    FILE *out = apps_open_output(NAME, &o);
    uint8_t *splits = malloc((size_t)n * n);
    if (!splits)
        apps_die(NAME, "out of memory");
    uint32_t found = neighbour_join(c.dist, n, out, splits);
    apps_close_output(NAME, &o, out);
    found = normalise_splits(splits, found, n);
    uint32_t truth = normalise_splits(fam.splits, fam.n_splits, n);
    uint32_t same = 0;
    for (uint32_t a = 0; a < found; a++)
        for (uint32_t b = 0; b < truth; b++)
            same += memcmp(splits + (size_t)a * n, fam.splits + (size_t)b * n, n) == 0;
    uint32_t rf = found + truth - 2 * same; /* Robinson-Foulds distance */
    bool verified = worst <= TOLERANCE && rf == 0;
    fprintf(stderr,
            NAME ": neighbour joining: %u splits, %u of the true tree's %u (Robinson-Foulds "
                 "distance %u); device - CPU <= %.2g\n",
            found, same, truth, rf, worst);
    char extra[128];
    snprintf(extra, sizeof(extra), "k=%u proteins=%" PRIu64 " splits=%u rf=%u max_error=%.2g", c.k,
             proteins, found, rf, worst);
    apps_result(NAME, &o, &st, extra, verified);

    for (uint32_t i = 0; i < n; i++) {
        free(vecs[i].codes);
        free(vecs[i].values);
    }
    free(vecs);
    free(splits);
    free(parsed);
    free(fam.splits);
    free(fam.leaf_of);
    free(fam.lengths);
    free(c.dist);
    return verified ? 0 : 1;
}
