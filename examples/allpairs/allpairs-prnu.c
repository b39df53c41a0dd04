/*
 * allpairs-prnu: common-source identification of images (Rocket's forensics
 * application) on the all-pairs runtime.
 *
 * It generates images from K synthetic cameras, each camera a fixed
 * multiplicative noise pattern (its PRNU), each image a smooth random scene
 * times (1 + the pattern) plus shot noise, written as 8-bit PGM files.  On
 * the devices, preprocessing extracts each image's noise residual (the
 * image less its 3x3 local mean) and the comparison is the normalised
 * cross-correlation of two residuals.  Pairs above a threshold are joined
 * into groups, which must be the true cameras; every correlation must also
 * match a CPU reference.
 */
#include "apps.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NAME      "allpairs-prnu"
#define LOCAL     64   /* work-items of the compare's one work-group */
#define PRNU      0.03 /* strength of a camera's pattern */
#define NOISE     1.5  /* deviation of the shot noise, in grey levels */
#define THRESHOLD 0.2  /* correlations above it: same camera */
#define TOLERANCE 2e-3 /* device against CPU, on a correlation */

static const char kernel_source[] =
    "__kernel void prnu_extract(__global const uchar *image, __global float *residual,\n"
    "                           uint index)\n"
    "{\n"
    "    int x = get_global_id(0) % W, y = get_global_id(0) / W;\n"
    "    if (y >= H)\n"
    "        return;\n"
    "    float sum = 0.0f;\n"
    "    int count = 0;\n"
    "    for (int dy = -1; dy <= 1; dy++)\n"
    "        for (int dx = -1; dx <= 1; dx++) {\n"
    "            int u = x + dx, v = y + dy;\n"
    "            if (u >= 0 && u < W && v >= 0 && v < H) {\n"
    "                sum += image[v * W + u];\n"
    "                count++;\n"
    "            }\n"
    "        }\n"
    "    residual[y * W + x] = image[y * W + x] - sum / count;\n"
    "}\n"
    "\n"
    "__kernel void prnu_ncc(__global const float *a, __global const float *b,\n"
    "                       __global float *ncc, uint i, uint j)\n"
    "{\n"
    "    __local float s[5][LOCAL];\n"
    "    int t = get_local_id(0);\n"
    "    float sa = 0, sb = 0, sab = 0, saa = 0, sbb = 0;\n"
    "    for (int k = t; k < W * H; k += LOCAL) {\n"
    "        float x = a[k], y = b[k];\n"
    "        sa += x; sb += y; sab += x * y; saa += x * x; sbb += y * y;\n"
    "    }\n"
    "    s[0][t] = sa; s[1][t] = sb; s[2][t] = sab; s[3][t] = saa; s[4][t] = sbb;\n"
    "    for (int step = LOCAL / 2; step > 0; step /= 2) {\n"
    "        barrier(CLK_LOCAL_MEM_FENCE);\n"
    "        if (t < step)\n"
    "            for (int q = 0; q < 5; q++)\n"
    "                s[q][t] += s[q][t + step];\n"
    "    }\n"
    "    if (t == 0) {\n"
    "        float n = W * H;\n"
    "        float cov = s[2][0] - s[0][0] * s[1][0] / n;\n"
    "        float va = s[3][0] - s[0][0] * s[0][0] / n;\n"
    "        float vb = s[4][0] - s[1][0] * s[1][0] / n;\n"
    "        ncc[0] = cov / sqrt(va * vb);\n"
    "    }\n"
    "}\n";

struct prnu {
    struct apps_options *o;
    uint32_t size;  /* images are size x size */
    float *matrix;  /* n x n, the devices' correlations */
};

static bool file_name(const struct prnu *p, uint32_t item, char *path, size_t size)
{
    return apps_item_path(p->o, "image", "pgm", item, path, size);
}

static bool file_path(void *user, uint32_t item, char *path, size_t size)
{
    return file_name(user, item, path, size);
}

/* A binary PGM of exactly size x size pixels, maxval 255. */
static bool parse(void *user, uint32_t item, const void *data, size_t length, void *parsed,
                  char *error, size_t error_size)
{
    (void)item;
    const struct prnu *p = user;
    const char *text = data;
    unsigned w = 0, h = 0, maxval = 0;
    int header = 0;
    if (length < 2 || memcmp(text, "P5", 2) != 0) {
        snprintf(error, error_size, "not a binary PGM file (no P5)");
        return false;
    }
    /* The header is short: parse it from a NUL-terminated copy. */
    char head[64];
    size_t n = length < sizeof(head) - 1 ? length : sizeof(head) - 1;
    memcpy(head, text, n);
    head[n] = '\0';
    if (sscanf(head, "P5 %u %u %u%n", &w, &h, &maxval, &header) != 3 || header <= 0 ||
        (size_t)header >= length) {
        snprintf(error, error_size, "malformed PGM header");
        return false;
    }
    header++; /* the one whitespace after maxval */
    if (w != p->size || h != p->size || maxval != 255) {
        snprintf(error, error_size, "a %ux%u image of maxval %u, expected %ux%u of 255", w, h,
                 maxval, p->size, p->size);
        return false;
    }
    size_t pixels = (size_t)w * h;
    if (length - (size_t)header != pixels) {
        snprintf(error, error_size, "%zu bytes of pixels, expected %zu", length - (size_t)header,
                 pixels);
        return false;
    }
    memcpy(parsed, text + header, pixels);
    return true;
}

static void postprocess(void *user, uint32_t i, uint32_t j, const void *result)
{
    struct prnu *p = user;
    float v;
    memcpy(&v, result, sizeof(v));
    p->matrix[(size_t)i * p->o->items + j] = v;
}

/* ---- input ---- */

static uint32_t camera_of(uint32_t item, uint32_t cameras)
{
    return item % cameras;
}

static void generate(const struct prnu *p, uint32_t cameras)
{
    uint32_t s = p->size, n = (uint32_t)p->o->items;
    size_t pixels = (size_t)s * s;
    uint64_t rng = p->o->seed * 0x9e3779b97f4a7c15ULL + 1;
    double *patterns = malloc(cameras * pixels * sizeof(*patterns));
    unsigned char *image = malloc(pixels);
    if (!patterns || !image)
        apps_die(NAME, "out of memory");
    for (size_t k = 0; k < cameras * pixels; k++)
        patterns[k] = PRNU * apps_normal(&rng);
    for (uint32_t i = 0; i < n; i++) {
        const double *k = patterns + camera_of(i, cameras) * pixels;
        /* A smooth scene: a plane and two slow waves, different each time. */
        double a = 60 + 60 * apps_uniform(&rng), gx = apps_uniform(&rng) - 0.5,
               gy = apps_uniform(&rng) - 0.5, f1 = 0.05 + 0.1 * apps_uniform(&rng),
               f2 = 0.05 + 0.1 * apps_uniform(&rng), ph = 6.28 * apps_uniform(&rng);
        for (uint32_t y = 0; y < s; y++)
            for (uint32_t x = 0; x < s; x++) {
                double scene = 128 + gx * x + gy * y + a * 0.5 * sin(f1 * x + ph) * cos(f2 * y);
                double v = scene * (1.0 + k[y * s + x]) + NOISE * apps_normal(&rng);
                image[y * s + x] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : lround(v));
            }
        char path[4200];
        file_name(p, i, path, sizeof(path));
        FILE *f = fopen(path, "wb");
        if (!f)
            apps_die(NAME, "cannot create %s: %s", path, strerror(errno));
        fprintf(f, "P5\n%u %u\n255\n", s, s);
        fwrite(image, 1, pixels, f);
        if (fclose(f) != 0)
            apps_die(NAME, "cannot write %s", path);
    }
    free(image);
    free(patterns);
}

/* ---- the CPU reference ---- */

static void cpu_residual(const unsigned char *img, uint32_t s, double *out)
{
    for (int y = 0; y < (int)s; y++)
        for (int x = 0; x < (int)s; x++) {
            double sum = 0;
            int count = 0;
            for (int dy = -1; dy <= 1; dy++)
                for (int dx = -1; dx <= 1; dx++) {
                    int u = x + dx, v = y + dy;
                    if (u >= 0 && u < (int)s && v >= 0 && v < (int)s) {
                        sum += img[v * (int)s + u];
                        count++;
                    }
                }
            out[y * (int)s + x] = img[y * (int)s + x] - sum / count;
        }
}

static double cpu_ncc(const double *a, const double *b, size_t n)
{
    double sa = 0, sb = 0, sab = 0, saa = 0, sbb = 0;
    for (size_t k = 0; k < n; k++) {
        sa += a[k];
        sb += b[k];
        sab += a[k] * b[k];
        saa += a[k] * a[k];
        sbb += b[k] * b[k];
    }
    double cov = sab - sa * sb / n, va = saa - sa * sa / n, vb = sbb - sb * sb / n;
    return cov / sqrt(va * vb);
}

static uint32_t find(uint32_t *parent, uint32_t x)
{
    while (parent[x] != x)
        x = parent[x] = parent[parent[x]];
    return x;
}

int main(int argc, char **argv)
{
    struct apps_options o = {
        .items = 24,
        .seed = 1,
        .cfg = {.device_slots = 16, .host_slots = 8, .jobs = 4, .hops = 1, .calibrate = 0},
    };
    uint64_t cameras = 4, size = 64;
    struct apps_number numbers[] = {
        {"--cameras", &cameras, 1, 1024, "synthetic cameras the images come from"},
        {"--size", &size, 8, 4096, "images are SIZE x SIZE pixels"},
    };
    apps_parse(NAME,
               "Common-source identification: which generated images come from the same\n"
               "camera, by the normalised cross-correlation of their noise residuals on\n"
               "every pair, on the all-pairs runtime (allpairs(1)).",
               argc, argv, &o, numbers, sizeof(numbers) / sizeof(numbers[0]));
    if (cameras > o.items)
        apps_die(NAME, "--cameras %" PRIu64 " is more than the %" PRIu64 " images", cameras,
                 o.items);
    uint32_t n = (uint32_t)o.items, s = (uint32_t)size;
    struct prnu p = {.o = &o, .size = s};
    p.matrix = calloc((size_t)n * n, sizeof(*p.matrix));
    if (!p.matrix)
        apps_die(NAME, "out of memory");
    apps_make_dir(NAME, &o);
    if (!o.reuse)
        generate(&p, (uint32_t)cameras);

    char options[128];
    snprintf(options, sizeof(options), "-DW=%u -DH=%u -DLOCAL=%d", s, s, LOCAL);
    size_t pixels = (size_t)s * s;
    struct allpairs_app app = {
        .name = NAME,
        .user = &p,
        .source = kernel_source,
        .build_options = options,
        .preprocess_kernel = "prnu_extract",
        .compare_kernel = "prnu_ncc",
        .preprocess_global = pixels,
        .compare_global = LOCAL,
        .compare_local = LOCAL,
        .parsed_size = pixels,
        .item_size = pixels * sizeof(float),
        .result_size = sizeof(float),
        .file_path = file_path,
        .parse = parse,
        .postprocess = postprocess,
    };
    struct allpairs_stats st;
    apps_run(NAME, &app, &o, &st);

    /* The reference: every residual and correlation again, in double. */
    double *res = malloc((size_t)n * pixels * sizeof(*res));
    unsigned char *img = malloc(pixels);
    uint32_t *parent = malloc(n * sizeof(*parent));
    if (!res || !img || !parent)
        apps_die(NAME, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        char path[4200], error[256];
        file_name(&p, i, path, sizeof(path));
        FILE *f = fopen(path, "rb");
        if (!f)
            apps_die(NAME, "cannot open %s: %s", path, strerror(errno));
        unsigned char buf[1 << 16];
        size_t len = fread(buf, 1, sizeof(buf) < pixels + 64 ? sizeof(buf) : pixels + 64, f);
        fclose(f);
        if (pixels + 64 > sizeof(buf)) { /* large images: read again, whole */
            unsigned char *big = malloc(pixels + 64);
            if (!big || !(f = fopen(path, "rb")))
                apps_die(NAME, "cannot read %s", path);
            len = fread(big, 1, pixels + 64, f);
            fclose(f);
            if (!parse(&p, i, big, len, img, error, sizeof(error)))
                apps_die(NAME, "%s: %s", path, error);
            free(big);
        } else if (!parse(&p, i, buf, len, img, error, sizeof(error))) {
            apps_die(NAME, "%s: %s", path, error);
        }
        cpu_residual(img, s, res + (size_t)i * pixels);
        parent[i] = i;
    }
    double worst = 0.0, same_min = 1.0, other_max = -1.0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = i + 1; j < n; j++) {
            double ref = cpu_ncc(res + (size_t)i * pixels, res + (size_t)j * pixels, pixels);
            double dev = p.matrix[(size_t)i * n + j];
            double err = fabs(dev - ref);
            if (!(err <= worst)) /* NaN counts as the worst */
                worst = err;
            if (camera_of(i, (uint32_t)cameras) == camera_of(j, (uint32_t)cameras))
                same_min = dev < same_min ? dev : same_min;
            else
                other_max = dev > other_max ? dev : other_max;
            if (dev > THRESHOLD)
                parent[find(parent, i)] = find(parent, j);
        }
    /* The groups must be the cameras: same camera <=> same group. */
    uint32_t wrong = 0, groups = 0;
    for (uint32_t i = 0; i < n; i++) {
        groups += find(parent, i) == i;
        for (uint32_t j = i + 1; j < n; j++) {
            bool same = camera_of(i, (uint32_t)cameras) == camera_of(j, (uint32_t)cameras);
            wrong += same != (find(parent, i) == find(parent, j));
        }
    }
    bool verified = worst <= TOLERANCE && wrong == 0;
    fprintf(stderr,
            NAME ": %u groups for %" PRIu64 " cameras, %u pairs grouped wrongly; correlations: "
                 "same camera >= %.4f, others <= %.4f; device - CPU <= %.2g\n",
            groups, cameras, wrong, same_min, other_max, worst);
    char extra[128];
    snprintf(extra, sizeof(extra), "cameras=%" PRIu64 " groups=%u size=%u max_error=%.2g", cameras,
             groups, s, worst);
    FILE *out = apps_open_output(NAME, &o);
    for (uint32_t i = 0; out && i < n; i++)
        for (uint32_t j = i + 1; j < n; j++)
            fprintf(out, "%u %u %.9g %u\n", i, j, p.matrix[(size_t)i * n + j], find(parent, i));
    apps_close_output(NAME, &o, out);
    apps_result(NAME, &o, &st, extra, verified);

    free(parent);
    free(img);
    free(res);
    free(p.matrix);
    return verified ? 0 : 1;
}
