/*
 * allpairs-fusion: the all-to-all comparison of localization-microscopy
 * particle fusion (Rocket's microscopy application) on the all-pairs
 * runtime: the L2 distance between two Gaussian mixtures, one Gaussian per
 * localization, for every pair of particles.
 *
 * It generates particles of 1,000 to 2,000 localizations (by default) from
 * a few template structures: each localization is a random binding site of
 * its particle's template, moved by Gaussian noise of a random per-point
 * uncertainty; a particle sees only some of its template's sites.  Files are
 * text, "x y sigma" per line after a "particle N" line.  Preprocessing
 * computes a particle's self term <f, f> on the device; the comparison the
 * cross term <f, g>, so that ||f - g||^2 = <f, f> + <g, g> - 2 <f, g>: an
 * irregular, compute-heavy pair function (N x M Gaussians).  Checked: every
 * distance against a CPU reference in double, and every particle's nearest
 * other particle comes from the same template.
 */
#include "apps.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NAME      "allpairs-fusion"
#define LOCAL     64
#define SITES     24   /* binding sites of a template */
#define LABELLED  0.75 /* share of a template's sites a particle sees */
#define SIGMA     0.03 /* mean localization uncertainty */
#define TOLERANCE 1e-3 /* of a distance, relative to <f, f> + <g, g> */

/* An item: float4 {count, <f, f>, 0, 0}, then float4 {x, y, sigma^2, 0}
 * per localization.  parsed is the same without the self term. */
static const char kernel_source[] =
    "float gauss(float2 d, float v)\n"
    "{\n"
    "    return exp(-dot(d, d) / (2.0f * v)) / (6.2831853f * v);\n"
    "}\n"
    "\n"
    "float cross_term(__global const float4 *a, __global const float4 *b, __local float *s)\n"
    "{\n"
    "    int na = (int)a[0].x, nb = (int)b[0].x, t = get_local_id(0);\n"
    "    float sum = 0.0f;\n"
    "    for (int i = t; i < na; i += LOCAL) {\n"
    "        float4 p = a[1 + i];\n"
    "        for (int j = 0; j < nb; j++) {\n"
    "            float4 q = b[1 + j];\n"
    "            sum += gauss(p.xy - q.xy, p.z + q.z);\n"
    "        }\n"
    "    }\n"
    "    s[t] = sum;\n"
    "    for (int step = LOCAL / 2; step > 0; step /= 2) {\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "        if (t < step)\n"
    "            s[t] += s[t + step];\n"
    "    }\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    return s[0] / ((float)na * (float)nb);\n"
    "}\n"
    "\n"
    "__kernel void fusion_self(__global const float4 *parsed, __global float4 *item, uint index)\n"
    "{\n"
    "    __local float s[LOCAL];\n"
    "    int n = (int)parsed[0].x;\n"
    "    for (int k = get_local_id(0); k <= n; k += LOCAL)\n"
    "        item[k] = parsed[k];\n"
    "    float self = cross_term(parsed, parsed, s);\n"
    "    if (get_local_id(0) == 0)\n"
    "        item[0] = (float4)(n, self, 0.0f, 0.0f);\n"
    "}\n"
    "\n"
    "__kernel void fusion_l2(__global const float4 *a, __global const float4 *b,\n"
    "                        __global float *result, uint i, uint j)\n"
    "{\n"
    "    __local float s[LOCAL];\n"
    "    float cross = cross_term(a, b, s);\n"
    "    if (get_local_id(0) == 0)\n"
    "        result[0] = a[0].y + b[0].y - 2.0f * cross;\n"
    "}\n";

struct fusion {
    struct apps_options *o;
    uint32_t max_points;
    float *dist; /* n x n, from the devices */
};

static bool file_name(const struct fusion *f, uint32_t item, char *path, size_t size)
{
    return apps_item_path(f->o, "particle", "txt", item, path, size);
}

static bool file_path(void *user, uint32_t item, char *path, size_t size)
{
    return file_name(user, item, path, size);
}

/* "particle N" then N lines "x y sigma": into float4 {N, 0, 0, 0} and
 * float4 {x, y, sigma^2, 0} each. */
static bool parse(void *user, uint32_t item, const void *data, size_t length, void *parsed,
                  char *error, size_t error_size)
{
    (void)item;
    const struct fusion *f = user;
    float *out = parsed;
    char *text = malloc(length + 1);
    if (!text) {
        snprintf(error, error_size, "out of memory");
        return false;
    }
    memcpy(text, data, length);
    text[length] = '\0';
    bool ok = false;
    unsigned count = 0;
    int used = 0;
    char *p = text;
    if (sscanf(p, "particle %u%n", &count, &used) != 1 || used == 0) {
        snprintf(error, error_size, "line 1: expected 'particle N'");
        goto out;
    }
    if (count == 0 || count > f->max_points) {
        snprintf(error, error_size, "line 1: %u localizations, expected 1 to %u", count,
                 f->max_points);
        goto out;
    }
    p += used;
    out[0] = (float)count;
    for (unsigned k = 0; k < count; k++) {
        double x, y, s;
        char *end;
        x = strtod(p, &end);
        if (end == p)
            goto bad;
        p = end;
        y = strtod(p, &end);
        if (end == p)
            goto bad;
        p = end;
        s = strtod(p, &end);
        if (end == p || !(s > 0) || !isfinite(x) || !isfinite(y))
            goto bad;
        p = end;
        float *q = out + 4 * (1 + k);
        q[0] = (float)x;
        q[1] = (float)y;
        q[2] = (float)(s * s);
        continue;
    bad:
        snprintf(error, error_size, "line %u: expected 'x y sigma' with sigma > 0", k + 2);
        goto out;
    }
    while (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')
        p++;
    if (*p != '\0') {
        snprintf(error, error_size, "more than the %u localizations announced", count);
        goto out;
    }
    ok = true;
out:
    free(text);
    return ok;
}

static void postprocess(void *user, uint32_t i, uint32_t j, const void *result)
{
    struct fusion *f = user;
    apps_store_symmetric(f->dist, f->o->items, i, j, result);
}

static uint32_t template_of(uint32_t item, uint32_t templates)
{
    return item % templates;
}

static void generate(const struct fusion *f, uint32_t templates, uint32_t min_points)
{
    uint64_t rng = f->o->seed * 0x9e3779b97f4a7c15ULL + 7;
    double *sites = malloc(templates * SITES * 2 * sizeof(*sites));
    if (!sites)
        apps_die(NAME, "out of memory");
    for (uint32_t k = 0; k < templates * SITES * 2; k++)
        sites[k] = 2.0 * apps_uniform(&rng) - 1.0;
    for (uint32_t i = 0; i < f->o->items; i++) {
        const double *t = sites + template_of(i, templates) * SITES * 2;
        bool seen[SITES];
        for (int s = 0; s < SITES; s++)
            seen[s] = apps_uniform(&rng) < LABELLED;
        seen[0] = true;
        uint32_t n = min_points + (uint32_t)(apps_random(&rng) % (f->max_points - min_points + 1));
        char path[4200];
        file_name(f, i, path, sizeof(path));
        FILE *out = fopen(path, "w");
        if (!out)
            apps_die(NAME, "cannot create %s: %s", path, strerror(errno));
        fprintf(out, "particle %u\n", n);
        for (uint32_t k = 0; k < n; k++) {
            int s;
            do
                s = (int)(apps_random(&rng) % SITES);
            while (!seen[s]);
            double sigma = SIGMA * (0.5 + apps_uniform(&rng));
            fprintf(out, "%.6f %.6f %.6f\n", t[2 * s] + sigma * apps_normal(&rng),
                    t[2 * s + 1] + sigma * apps_normal(&rng), sigma);
        }
        if (fclose(out) != 0)
            apps_die(NAME, "cannot write %s", path);
    }
    free(sites);
}

/* The cross term in double, from the parsed floats. */
static double cpu_cross(const float *a, const float *b)
{
    int na = (int)a[0], nb = (int)b[0];
    double sum = 0.0;
    for (int i = 0; i < na; i++) {
        const float *p = a + 4 * (1 + i);
        for (int j = 0; j < nb; j++) {
            const float *q = b + 4 * (1 + j);
            double dx = (double)p[0] - q[0], dy = (double)p[1] - q[1];
            double v = (double)p[2] + q[2];
            sum += exp(-(dx * dx + dy * dy) / (2.0 * v)) / (6.283185307179586 * v);
        }
    }
    return sum / ((double)na * nb);
}

int main(int argc, char **argv)
{
    struct apps_options o = {
        .items = 12,
        .seed = 1,
        .cfg = {.device_slots = 16, .host_slots = 8, .jobs = 4, .hops = 1},
    };
    uint64_t templates = 3, min_points = 1000, max_points = 2000;
    struct apps_number numbers[] = {
        {"--templates", &templates, 1, 1024, "structures the particles come from"},
        {"--min-points", &min_points, 1, 1u << 20, "fewest localizations of a particle"},
        {"--max-points", &max_points, 1, 1u << 20, "most localizations of a particle"},
    };
    apps_parse(NAME,
               "Particle fusion's all-to-all step: the L2 distance between the Gaussian\n"
               "mixtures of every pair of generated particles, on the all-pairs runtime\n"
               "(allpairs(1)).",
               argc, argv, &o, numbers, sizeof(numbers) / sizeof(numbers[0]));
    if (min_points > max_points)
        apps_die(NAME, "--min-points %" PRIu64 " is more than --max-points %" PRIu64, min_points,
                 max_points);
    if (templates > o.items)
        apps_die(NAME, "--templates %" PRIu64 " is more than the %" PRIu64 " particles", templates,
                 o.items);
    uint32_t n = (uint32_t)o.items;
    struct fusion f = {.o = &o, .max_points = (uint32_t)max_points};
    f.dist = calloc((size_t)n * n, sizeof(*f.dist));
    if (!f.dist)
        apps_die(NAME, "out of memory");
    apps_make_dir(NAME, &o);
    if (!o.reuse)
        generate(&f, (uint32_t)templates, (uint32_t)min_points);

    char options[64];
    snprintf(options, sizeof(options), "-DLOCAL=%d", LOCAL);
    size_t bytes = 16 * ((size_t)max_points + 1);
    struct allpairs_app app = {
        .name = NAME,
        .user = &f,
        .source = kernel_source,
        .build_options = options,
        .preprocess_kernel = "fusion_self",
        .compare_kernel = "fusion_l2",
        .preprocess_global = LOCAL,
        .preprocess_local = LOCAL,
        .compare_global = LOCAL,
        .compare_local = LOCAL,
        .parsed_size = bytes,
        .item_size = bytes,
        .result_size = sizeof(float),
        .file_path = file_path,
        .parse = parse,
        .postprocess = postprocess,
    };
    struct allpairs_stats st;
    apps_run(NAME, &app, &o, &st);

    /* The reference, in double, from the same files. */
    float *parsed = malloc((size_t)n * bytes);
    double *self = malloc(n * sizeof(*self));
    if (!parsed || !self)
        apps_die(NAME, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        char path[4200], error[256];
        file_name(&f, i, path, sizeof(path));
        FILE *in = fopen(path, "rb");
        if (!in)
            apps_die(NAME, "cannot open %s: %s", path, strerror(errno));
        size_t cap = 64 + 64 * (size_t)max_points;
        char *text = malloc(cap);
        size_t len = text ? fread(text, 1, cap, in) : 0;
        fclose(in);
        float *mine = parsed + (size_t)i * bytes / sizeof(float);
        memset(mine, 0, bytes);
        if (!text || !parse(&f, i, text, len, mine, error, sizeof(error)))
            apps_die(NAME, "%s: %s", path, text ? error : "out of memory");
        free(text);
        self[i] = cpu_cross(mine, mine);
    }
    double worst = 0.0;
    uint32_t misplaced = 0;
    for (uint32_t i = 0; i < n; i++) {
        const float *a = parsed + (size_t)i * bytes / sizeof(float);
        uint32_t nearest = i;
        for (uint32_t j = 0; j < n; j++) {
            if (j == i)
                continue;
            if (j > i) {
                const float *b = parsed + (size_t)j * bytes / sizeof(float);
                double ref = self[i] + self[j] - 2.0 * cpu_cross(a, b);
                double err = fabs(f.dist[(size_t)i * n + j] - ref) / (self[i] + self[j]);
                if (!(err <= worst))
                    worst = err;
            }
            if (nearest == i || f.dist[(size_t)i * n + j] < f.dist[(size_t)i * n + nearest])
                nearest = j;
        }
        /* Only particles whose template has another particle can be judged. */
        uint32_t t = template_of(i, (uint32_t)templates);
        bool partner = (n - 1 - t) / templates >= 1;
        misplaced += partner && template_of(nearest, (uint32_t)templates) != t;
    }
    bool verified = worst <= TOLERANCE && misplaced == 0;
    fprintf(stderr,
            NAME ": device - CPU <= %.2g of <f,f> + <g,g>; %u of %u particles nearest to one of "
                 "another template\n",
            worst, misplaced, n);
    FILE *out = apps_open_output(NAME, &o);
    for (uint32_t i = 0; out && i < n; i++)
        for (uint32_t j = i + 1; j < n; j++)
            fprintf(out, "%u %u %.9g\n", i, j, f.dist[(size_t)i * n + j]);
    apps_close_output(NAME, &o, out);
    char extra[128];
    snprintf(extra, sizeof(extra), "templates=%" PRIu64 " misplaced=%u max_error=%.2g", templates,
             misplaced, worst);
    apps_result(NAME, &o, &st, extra, verified);

    free(self);
    free(parsed);
    free(f.dist);
    return verified ? 0 : 1;
}
