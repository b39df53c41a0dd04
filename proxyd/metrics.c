/*
 * metrics.c - voclproxyd --metrics-file (metrics.h): a process's figures,
 * a worker's file of them (written by the worker, read by its daemon as
 * untrusted input: a worker runs its tenant's kernels, which on a CPU
 * device may write anywhere in it), and the daemon's file for Prometheus.
 */
#include "metrics.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "log.h"
#include "native.h"

atomic_uint_fast64_t proxyd_counts[PROXYD_COUNTS];

/* The counters' names in a worker's file. */
static const char *const count_names[PROXYD_COUNTS] = {
#define PROXYD_X(name, text) [PROXYD_##name] = text,
    PROXYD_COUNTERS(PROXYD_X)
#undef PROXYD_X
#define PROXYD_X(name, text) [PROXYD_REFUSED_##name] = "refused_" text,
        PROXYD_REFUSALS(PROXYD_X)
#undef PROXYD_X
};

/* The refusals' labels in the metrics file. */
static const char *const refusal_labels[] = {
#define PROXYD_X(name, text) text,
    PROXYD_REFUSALS(PROXYD_X)
#undef PROXYD_X
};

void proxyd_figures_own(struct exec_node *node, uint64_t sessions, struct proxyd_figures *f)
{
    *f = (struct proxyd_figures){.sessions = sessions,
                                 .objects = atomic_load(&node->nobjs),
                                 .memory = atomic_load(&node->bytes),
                                 .busy_known = node->busy_share};
    for (int i = 0; i < PROXYD_COUNTS; i++)
        f->count[i] = atomic_load_explicit(&proxyd_counts[i], memory_order_relaxed);
    /* (The executor counts the HELLOs it answers.) */
    f->count[PROXYD_ACCEPTED] += atomic_load(&node->hellos);
    f->count[PROXYD_REFUSED_TOKEN] += atomic_load(&node->refused[EXEC_REFUSED_TOKEN]);
    f->count[PROXYD_REFUSED_USER] += atomic_load(&node->refused[EXEC_REFUSED_USER]);
    f->count[PROXYD_REFUSED_DRAINED] += atomic_load(&node->refused[EXEC_REFUSED_DRAINED]);
    f->count[PROXYD_REFUSED_OTHER] += atomic_load(&node->refused[EXEC_REFUSED_VERSION]);
    for (cl_uint d = 0; f->busy_known && d < node->ndev && d < EXEC_BUSY_DEVS; d++) {
        unsigned p = exec_busy_permille(node, d);
        f->busy[d] = (uint16_t)(p > 1000 ? 0 : p); /* (not measured yet: idle) */
    }
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

void proxyd_figures_add(struct proxyd_figures *to, const struct proxyd_figures *f, bool gauges)
{
    for (int i = 0; i < PROXYD_COUNTS; i++)
        to->count[i] = add_sat(to->count[i], f->count[i]);
    if (!gauges)
        return;
    to->sessions = add_sat(to->sessions, f->sessions);
    to->objects = add_sat(to->objects, f->objects);
    to->memory = add_sat(to->memory, f->memory);
    /* (At most all of a device: time two processes overlap counts twice.) */
    for (int d = 0; d < EXEC_BUSY_DEVS; d++) {
        unsigned b = (unsigned)to->busy[d] + f->busy[d];
        to->busy[d] = (uint16_t)(b > 1000 ? 1000 : b);
    }
}

void proxyd_figures_max(struct proxyd_figures *to, const struct proxyd_figures *f)
{
    for (int i = 0; i < PROXYD_COUNTS; i++)
        if (f->count[i] > to->count[i])
            to->count[i] = f->count[i];
}

/* text into a file beside path, of mode (whatever the umask), then
 * renamed to path: a reader sees the old file or the new one, whole.  0
 * or -1 (errno). */
static int write_beside(const char *path, const char *text, size_t len, mode_t mode)
{
    char tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid()) >= sizeof(tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0)
        return -1;
    int err = fchmod(fd, mode) ? errno : 0;
    size_t done = 0;
    errno = 0;
    while (done < len) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    if (!err && done < len)
        err = errno ? errno : EIO;
    if (close(fd) && !err)
        err = errno;
    if (!err && rename(tmp, path))
        err = errno;
    if (err) {
        unlink(tmp);
        errno = err;
        return -1;
    }
    return 0;
}

/* A growing text (what a file will hold); fail once it would not fit. */
struct text {
    char *buf;
    size_t len, cap;
    bool fail;
};

__attribute__((format(printf, 2, 3))) static void put(struct text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = t->fail ? -1 : vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= t->cap - t->len)
        t->fail = true;
    else
        t->len += (size_t)n;
}

/* The most a worker's file holds (and the most its daemon reads). */
#define FIGURES_MAX 4096

int proxyd_figures_write(const char *path, const struct proxyd_figures *f)
{
    char buf[FIGURES_MAX];
    struct text t = {.buf = buf, .cap = sizeof(buf)};
    for (int i = 0; i < PROXYD_COUNTS; i++)
        put(&t, "%s %" PRIu64 "\n", count_names[i], f->count[i]);
    put(&t, "sessions %" PRIu64 "\nobjects %" PRIu64 "\nmemory %" PRIu64 "\n", f->sessions,
        f->objects, f->memory);
    for (int d = 0; f->busy_known && d < EXEC_BUSY_DEVS; d++)
        if (f->busy[d])
            put(&t, "busy %d %u\n", d, (unsigned)f->busy[d]);
    return t.fail ? -1 : write_beside(path, t.buf, t.len, 0600);
}

/* A decimal number of at most 20 digits that fits 64 bits, ending at
 * *end (one space or newline); false if not. */
static bool number(const char *s, const char **end, uint64_t *v)
{
    uint64_t n = 0;
    const char *p = s;
    for (; *p >= '0' && *p <= '9' && p - s < 20; p++) {
        unsigned digit = (unsigned)(*p - '0');
        if (n > (UINT64_MAX - digit) / 10)
            return false;
        n = n * 10 + digit;
    }
    *end = p;
    *v = n;
    return p > s;
}

/* One line of a worker's file into *f, with seen marking the names had. */
static bool parse_line(const char *line, struct proxyd_figures *f, bool *seen)
{
    const char *sp = strchr(line, ' '), *end;
    uint64_t v, dev;
    if (!sp)
        return false;
    size_t n = (size_t)(sp - line);
    if (n == 4 && !memcmp(line, "busy", 4)) {
        if (!number(sp + 1, &end, &dev) || *end != ' ' || dev >= EXEC_BUSY_DEVS ||
            !number(end + 1, &end, &v) || *end || v > 1000 || f->busy[dev])
            return false;
        f->busy[dev] = (uint16_t)v;
        f->busy_known = true;
        return true;
    }
    if (!number(sp + 1, &end, &v) || *end)
        return false;
    static const char *const gauges[] = {"sessions", "objects", "memory"};
    uint64_t *gauge[] = {&f->sessions, &f->objects, &f->memory};
    for (int i = 0; i < PROXYD_COUNTS + 3; i++) {
        const char *name = i < PROXYD_COUNTS ? count_names[i] : gauges[i - PROXYD_COUNTS];
        if (strlen(name) != n || memcmp(name, line, n))
            continue;
        if (seen[i])
            return false; /* (twice) */
        seen[i] = true;
        *(i < PROXYD_COUNTS ? &f->count[i] : gauge[i - PROXYD_COUNTS]) = v;
        return true;
    }
    return false;
}

int proxyd_figures_read(int dir, const char *name, struct proxyd_figures *f)
{
    *f = (struct proxyd_figures){0};
    char buf[FIGURES_MAX + 1];
    int fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    struct stat st;
    if (fd < 0)
        return -1;
    ssize_t got = 0;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > FIGURES_MAX)
        got = -1;
    while (got >= 0 && got <= FIGURES_MAX) {
        ssize_t r = read(fd, buf + got, sizeof(buf) - (size_t)got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            got = r < 0 ? -1 : got;
            break;
        }
        got += r;
    }
    close(fd);
    if (got <= 0 || got > FIGURES_MAX || buf[got - 1] != '\n')
        return -1;
    buf[got] = 0;
    bool seen[PROXYD_COUNTS + 3] = {0};
    /* (By length, not by NUL: a NUL in a line rejects the file.) */
    for (char *line = buf, *nl, *end = buf + got; line < end; line = nl + 1) {
        nl = memchr(line, '\n', (size_t)(end - line)); /* (the last byte is one) */
        *nl = 0;
        if (memchr(line, 0, (size_t)(nl - line)) || !parse_line(line, f, seen)) {
            *f = (struct proxyd_figures){0};
            return -1;
        }
    }
    for (int i = 0; i < PROXYD_COUNTS + 3; i++)
        if (!seen[i]) { /* (a worker writes every one) */
            *f = (struct proxyd_figures){0};
            return -1;
        }
    return 0;
}

/* s as a label value: '"', '\' and the unprintable replaced (a driver's
 * device name). */
static void label(char *out, size_t n, const char *s)
{
    size_t k = 0;
    for (; s[k] && k + 1 < n; k++)
        out[k] = s[k] < ' ' || s[k] > '~' || s[k] == '"' || s[k] == '\\' ? '?' : s[k];
    out[k] = 0;
}

static void family(struct text *t, const char *name, const char *type, const char *help)
{
    put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

int proxyd_metrics_write(const char *path, const struct proxyd_figures *f, struct exec_node *node)
{
    static bool warned;
    size_t cap = 4096 + (size_t)node->ndev * 512;
    struct text t = {.buf = malloc(cap), .cap = cap, .fail = false};
    if (!t.buf)
        return -1;
    family(&t, "vocl_sessions", "gauge",
           "Open sessions: clients connected to the daemon or to its workers.");
    put(&t, "vocl_sessions %" PRIu64 "\n", f->sessions);
    family(&t, "vocl_connections_accepted_total", "counter",
           "Connections served: their HELLO (token, user) accepted.");
    put(&t, "vocl_connections_accepted_total %" PRIu64 "\n", f->count[PROXYD_ACCEPTED]);
    family(&t, "vocl_connections_refused_total", "counter", "Connections refused, by reason.");
    for (int i = 0; i < PROXYD_COUNTS - PROXYD_REFUSED_TOKEN; i++)
        put(&t, "vocl_connections_refused_total{reason=\"%s\"} %" PRIu64 "\n", refusal_labels[i],
            f->count[PROXYD_REFUSED_TOKEN + i]);
    family(&t, "vocl_commands_total", "counter", "Requests served.");
    put(&t, "vocl_commands_total %" PRIu64 "\n", f->count[PROXYD_COMMANDS]);
    family(&t, "vocl_received_bytes_total", "counter",
           "Bytes received from clients over their connections: requests and data.");
    put(&t, "vocl_received_bytes_total %" PRIu64 "\n", f->count[PROXYD_BYTES_IN]);
    family(&t, "vocl_sent_bytes_total", "counter",
           "Bytes sent to clients over their connections: replies and data.");
    put(&t, "vocl_sent_bytes_total %" PRIu64 "\n", f->count[PROXYD_BYTES_OUT]);
    family(&t, "vocl_objects", "gauge", "OpenCL objects the open sessions hold.");
    put(&t, "vocl_objects %" PRIu64 "\n", f->objects);
    family(&t, "vocl_memory_objects_bytes", "gauge",
           "Bytes of memory objects the open sessions hold.");
    put(&t, "vocl_memory_objects_bytes %" PRIu64 "\n", f->memory);
    family(&t, "vocl_device_info", "gauge", "The devices served, by index, with their names.");
    for (cl_uint d = 0; d < node->ndev; d++) {
        char name[128] = "", text[128];
        node->cl->clGetDeviceInfo(node->devs[d], CL_DEVICE_NAME, sizeof(name), name, NULL);
        name[sizeof(name) - 1] = 0;
        label(text, sizeof(text), name);
        put(&t, "vocl_device_info{device=\"%u\",name=\"%s\"} 1\n", d, text);
    }
    family(&t, "vocl_device_memory_bytes", "gauge", "Each device's global memory.");
    for (cl_uint d = 0; d < node->ndev; d++) {
        cl_ulong mem = 0;
        node->cl->clGetDeviceInfo(node->devs[d], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(mem), &mem,
                                  NULL);
        put(&t, "vocl_device_memory_bytes{device=\"%u\"} %" PRIu64 "\n", d, (uint64_t)mem);
    }
    if (f->busy_known) {
        family(&t, "vocl_device_busy_ratio", "gauge",
               "Each device's busy share of the last whole second (voclproxyd --busy-share).");
        for (cl_uint d = 0; d < node->ndev && d < EXEC_BUSY_DEVS; d++)
            put(&t, "vocl_device_busy_ratio{device=\"%u\"} %u.%03u\n", d, f->busy[d] / 1000u,
                f->busy[d] % 1000u);
    }
    /* (Readable by node_exporter, another user, whatever the daemon's
     * umask: the unit's is 0077.) */
    int rc = t.fail ? (errno = ENOMEM, -1) : write_beside(path, t.buf, t.len, 0644);
    if (rc && !warned)
        vocl_warn("--metrics-file %s: cannot write it (%s): trying again", path, strerror(errno));
    warned = rc != 0;
    free(t.buf);
    return rc;
}
