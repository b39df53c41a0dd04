/*
 * test_metrics.c - voclproxyd --metrics-file's figures (proxyd/metrics.c):
 * a worker's file reads back as written; any other file, read as a
 * daemon reads a worker's (untrusted), is refused whole; counters taken
 * as a floor never go down; the daemon's file has every family with its
 * HELP and TYPE, and a label per refusal.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "metrics.h"
#include "scratch.h"

static char dir[] = "/tmp/vocl-metrics-XXXXXX";
static char path[sizeof(dir) + 32];

static int make_dir(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof(path), "%s/f", dir);
    return 0;
}

static int remove_dir(void **state)
{
    (void)state;
    return scratch_remove(dir);
}

/* text (n bytes) into path. */
static void put(const char *text, size_t n)
{
    unlink(path);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* path's text into out (cap bytes, NUL-terminated); its length. */
static size_t slurp(char *out, size_t cap)
{
    FILE *r = fopen(path, "r");
    assert_non_null(r);
    size_t n = fread(out, 1, cap - 1, r);
    fclose(r);
    out[n] = 0;
    return n;
}

static struct proxyd_figures sample(void)
{
    struct proxyd_figures f = {.sessions = 1, .objects = 16, .memory = 262144, .busy_known = true};
    for (int i = 0; i < PROXYD_COUNTS; i++)
        f.count[i] = (uint64_t)i * 1000 + 7;
    f.count[PROXYD_BYTES_IN] = UINT64_MAX; /* (the largest there is) */
    f.busy[0] = 1000;
    f.busy[3] = 5;
    return f;
}

static void round_trip(void **state)
{
    (void)state;
    struct proxyd_figures f = sample(), g;
    assert_int_equal(proxyd_figures_write(path, &f), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(proxyd_figures_read(AT_FDCWD, path, &g), 0);
    assert_memory_equal(f.count, g.count, sizeof(f.count));
    assert_int_equal(g.sessions, 1);
    assert_int_equal(g.objects, 16);
    assert_int_equal(g.memory, 262144);
    assert_memory_equal(f.busy, g.busy, sizeof(f.busy));
}

/* A file of good lines, with one line replaced by bad (NULL: left out)
 * or added (replace: false). */
static size_t with(char *out, size_t cap, const char *bad, bool replace)
{
    struct proxyd_figures f = {0};
    char good[4096];
    assert_int_equal(proxyd_figures_write(path, &f), 0);
    slurp(good, sizeof(good));
    const char *rest = replace ? strchr(good, '\n') + 1 : good; /* (the first line out) */
    int k = snprintf(out, cap, "%s%s%s", bad ? bad : "", bad ? "\n" : "", rest);
    assert_true(k > 0 && (size_t)k < cap);
    return (size_t)k;
}

static void refuses(void **state)
{
    (void)state;
    static const struct {
        const char *line;
        bool replace;
    } bad[] = {
        {NULL, true},                               /* a name missing */
        {"commands 18446744073709551616", true},    /* 2^64 */
        {"commands 99999999999999999999999", true}, /* more digits than fit */
        {"commands -5", true},
        {"commands 5x", true},
        {"commands  5", true},
        {"commands 5 ", true},
        {" commands 5", true},
        {"commands", true},
        {"commands 5", false}, /* twice */
        {"what 1", false},
        {"busy 0 1001", false},
        {"busy 32 1", false}, /* past EXEC_BUSY_DEVS */
        {"busy 0 1\nbusy 0 1", false},
        {"busy 0", false},
        {"", false}, /* an empty line */
    };
    char text[8192];
    struct proxyd_figures g;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        put(text, with(text, sizeof(text), bad[i].line, bad[i].replace));
        g.count[0] = 1;
        if (proxyd_figures_read(AT_FDCWD, path, &g) != 0) {
            assert_int_equal(g.count[0], 0); /* (zeroed) */
            continue;
        }
        fail_msg("accepted: %s", bad[i].line ? bad[i].line : "(a name left out)");
    }
    /* A NUL in a line; no newline at the end; an empty file. */
    size_t n = with(text, sizeof(text), "commands 1", true);
    text[9] = 0;
    put(text, n);
    assert_int_equal(proxyd_figures_read(AT_FDCWD, path, &g), -1);
    n = with(text, sizeof(text), "commands 1", true);
    put(text, n - 1);
    assert_int_equal(proxyd_figures_read(AT_FDCWD, path, &g), -1);
    put("", 0);
    assert_int_equal(proxyd_figures_read(AT_FDCWD, path, &g), -1);
    /* The good one, to show the checks above are not blind. */
    put(text, with(text, sizeof(text), "commands 1", true));
    assert_int_equal(proxyd_figures_read(AT_FDCWD, path, &g), 0);
    assert_int_equal(g.count[PROXYD_COMMANDS], 1);
    /* More than 4 KiB: good lines, one repeated past it, refused unread. */
    char big[6000];
    memset(big, '\n', sizeof(big));
    memcpy(big, text, strlen(text));
    put(big, sizeof(big));
    assert_int_equal(proxyd_figures_read(AT_FDCWD, path, &g), -1);
    /* A link to a good file, a directory, a FIFO. */
    char other[sizeof(path) + 8];
    snprintf(other, sizeof(other), "%s/good", dir);
    put(text, strlen(text));
    assert_int_equal(rename(path, other), 0);
    assert_int_equal(symlink(other, path), 0);
    assert_int_equal(proxyd_figures_read(AT_FDCWD, path, &g), -1);
    unlink(path);
    assert_int_equal(mkdir(path, 0700), 0);
    assert_int_equal(proxyd_figures_read(AT_FDCWD, path, &g), -1);
    rmdir(path);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(proxyd_figures_read(AT_FDCWD, path, &g), -1); /* (without waiting) */
    unlink(path);
}

static void floors(void **state)
{
    (void)state;
    struct proxyd_figures seen = {0}, a = {0}, b = {0}, sum = {0};
    a.count[PROXYD_COMMANDS] = 10;
    b.count[PROXYD_COMMANDS] = 4; /* (an older file, or a worker's file rewritten lower) */
    b.count[PROXYD_ACCEPTED] = 1;
    proxyd_figures_max(&seen, &a);
    proxyd_figures_max(&seen, &b);
    assert_int_equal(seen.count[PROXYD_COMMANDS], 10);
    assert_int_equal(seen.count[PROXYD_ACCEPTED], 1);
    /* Sums saturate; gauges only when asked; busy at most all. */
    sum.count[PROXYD_BYTES_OUT] = UINT64_MAX - 1;
    a.count[PROXYD_BYTES_OUT] = 5;
    a.sessions = 2;
    a.busy[1] = 700;
    proxyd_figures_add(&sum, &a, false);
    assert_true(sum.count[PROXYD_BYTES_OUT] == UINT64_MAX);
    assert_int_equal(sum.sessions, 0);
    proxyd_figures_add(&sum, &a, true);
    proxyd_figures_add(&sum, &a, true);
    assert_int_equal(sum.sessions, 4);
    assert_int_equal(sum.busy[1], 1000);
}

static void prometheus(void **state)
{
    (void)state;
    struct exec_node node = {0}; /* (no device: no driver asked) */
    struct proxyd_figures f = sample();
    f.count[PROXYD_REFUSED_HELLO_TIMEOUT] = 3;
    assert_int_equal(proxyd_metrics_write(path, &f, &node), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    char text[8192];
    size_t n = slurp(text, sizeof(text));
    static const char *const want[] = {
        "# TYPE vocl_sessions gauge\nvocl_sessions 1\n",
        "# TYPE vocl_connections_accepted_total counter\n",
        "vocl_connections_refused_total{reason=\"token\"} ",
        "vocl_connections_refused_total{reason=\"hello_timeout\"} 3\n",
        "vocl_connections_refused_total{reason=\"other\"} ",
        "vocl_received_bytes_total 18446744073709551615\n",
        "# HELP vocl_memory_objects_bytes ",
        "vocl_memory_objects_bytes 262144\n",
        "# TYPE vocl_device_busy_ratio gauge\n",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (!strstr(text, want[i]))
            fail_msg("no '%s' in:\n%s", want[i], text);
    /* Every family: HELP, then TYPE, once each. */
    for (char *p = text; (p = strstr(p, "# HELP ")); p++) {
        char name[64], type[80];
        assert_int_equal(sscanf(p, "# HELP %63s", name), 1);
        snprintf(type, sizeof(type), "\n# TYPE %s ", name);
        assert_non_null(strstr(p, type));
        assert_ptr_equal(strstr(text, type), strstr(p, type));
    }
    assert_int_equal(text[n - 1], '\n');
    /* Without --busy-share no busy series. */
    f.busy_known = false;
    assert_int_equal(proxyd_metrics_write(path, &f, &node), 0);
    slurp(text, sizeof(text));
    assert_null(strstr(text, "busy"));
    /* Nothing left beside it. */
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "test $(ls %s | grep -c tmp) = 0", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip),
        cmocka_unit_test(refuses),
        cmocka_unit_test(floors),
        cmocka_unit_test(prometheus),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
