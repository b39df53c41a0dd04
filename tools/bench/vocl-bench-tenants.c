/*
 * vocl-bench-tenants: does one tenant of a proxy stall another?
 *
 * Tenant A works on device 0 through phases: idle, a long program build,
 * a wait on a command gated by a user event its other thread sets later,
 * a ~2 s kernel with clFinish, a ~2 s kernel of one work-item followed by
 * a blocking 64 MiB write (which waits for it), 64 MiB writes and reads
 * and, on a second thread, 64 KiB reads while A's process is stopped
 * (SIGSTOP) for a second in the middle, idle again.  Tenant B, on device 1 of the
 * same proxy, does 4-byte blocking reads all along and times each.  The
 * table gives B's latency in each of A's phases, natively (two processes
 * on the same PoCL devices) and through VOCL (vocl-run -a 2 -n 1 -d 2: two
 * application ranks, one proxy of two devices), and each against B's
 * latency while A is idle.  Through a proxy that waits inside a tenant's
 * build, wait or clFinish, B's reads stall for the whole phase.
 *
 * The same binary is the driver (no --role) and both tenants (--role a|b;
 * under vocl-run the MPI rank picks it: 0 is A).  The tenants are ordinary
 * OpenCL programs; they meet through files in a directory (--dir).
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#undef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120

#include <CL/cl.h>

#include "clutil.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROG "vocl-bench-tenants"
#define MAX_WAIT_S 120     /* the longest a tenant waits for the other */
#define MAX_SAMPLES 400000 /* B's reads kept (the rest are not timed) */
#define WRITE_MIB 64       /* A's large writes */
#define STOP_S 1.0         /* how long A's process is stopped */

_Noreturn void app_cl_fail(const char *call, cl_int err, int line)
{
    fprintf(stderr, PROG ": %s failed: %s (line %d)\n", call, app_cl_error_name(err), line);
    exit(1);
}

static _Noreturn void die(const char *msg)
{
    fprintf(stderr, PROG ": %s\n", msg);
    exit(1);
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts); /* both tenants' clock: they compare times */
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) && errno == EINTR) {
    }
}

/* --- the tenants --------------------------------------------------------------------------- */

/* One per thread: tenant B's thread and tenant A's main thread both ask. */
static _Thread_local char path_buf[4096];

static const char *path(const char *dir, const char *name)
{
    snprintf(path_buf, sizeof(path_buf), "%s/%s", dir, name);
    return path_buf;
}

static void touch(const char *dir, const char *name)
{
    FILE *f = fopen(path(dir, name), "w");
    if (!f || fclose(f))
        die("cannot write in the --dir directory");
}

static bool exists(const char *dir, const char *name)
{
    struct stat st;
    return stat(path(dir, name), &st) == 0;
}

/* Waits for dir/name; false after MAX_WAIT_S. */
static bool await(const char *dir, const char *name)
{
    for (int i = 0; i < MAX_WAIT_S * 100; i++) {
        if (exists(dir, name))
            return true;
        sleep_s(0.01);
    }
    return false;
}

struct dev {
    cl_context ctx;
    cl_command_queue q;
    cl_device_id d;
};

/* Device index of the first platform that has one (VOCL's, under vocl-run). */
static struct dev open_dev(cl_uint index)
{
    cl_platform_id plats[16];
    cl_uint np = 0;
    CL_CHECK(clGetPlatformIDs(16, plats, &np));
    for (cl_uint p = 0; p < np && p < 16; p++) {
        cl_device_id devs[16];
        cl_uint nd = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS ||
            nd <= index)
            continue;
        struct dev v = {.d = devs[index]};
        cl_int err;
        v.ctx = clCreateContext(NULL, 1, &v.d, NULL, NULL, &err);
        CL_CHECK_ERR("clCreateContext", err);
        v.q = clCreateCommandQueue(v.ctx, v.d, 0, &err);
        CL_CHECK_ERR("clCreateCommandQueue", err);
        return v;
    }
    die("no platform has two devices (POCL_DEVICES=\"pthread pthread\", or vocl-run -d 2)");
}

/* B: a blocking 4-byte read every 50 us or so until A is done, and a
 * 1 MiB one (untimed: chunks of a read, sent by the proxy's stream) after
 * every hundred; "end latency" a line. */
static void tenant_b(const char *dir)
{
    struct dev v = open_dev(1);
    cl_int err, value = 42, got = 0;
    cl_mem buf = clCreateBuffer(v.ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(value),
                                &value, &err);
    CL_CHECK_ERR("clCreateBuffer", err);
    const size_t mib = 1u << 20;
    cl_mem big = clCreateBuffer(v.ctx, CL_MEM_READ_WRITE, mib, NULL, &err);
    CL_CHECK_ERR("clCreateBuffer", err);
    double *t = malloc(2 * MAX_SAMPLES * sizeof(*t));
    char *bulk = malloc(mib);
    if (!t || !bulk)
        die("out of memory");
    for (int i = 0; i < 100; i++) /* warm up */
        CL_CHECK(clEnqueueReadBuffer(v.q, buf, CL_TRUE, 0, sizeof(got), &got, 0, NULL, NULL));
    touch(dir, "b.ready");
    size_t n = 0;
    double until = now() + MAX_WAIT_S;
    for (unsigned round = 0; !exists(dir, "a.done") && now() < until; round++) {
        if (round % 5 == 4)
            CL_CHECK(clEnqueueReadBuffer(v.q, big, CL_TRUE, 0, mib, bulk, 0, NULL, NULL));
        for (int i = 0; i < 20; i++) {
            double t0 = now();
            CL_CHECK(clEnqueueReadBuffer(v.q, buf, CL_TRUE, 0, sizeof(got), &got, 0, NULL, NULL));
            double t1 = now();
            if (got != value)
                die("tenant B read a wrong value");
            if (n < MAX_SAMPLES) {
                t[2 * n] = t1;
                t[2 * n + 1] = t1 - t0;
                n++;
            }
            sleep_s(50e-6);
        }
    }
    FILE *f = fopen(path(dir, "b.samples"), "w");
    for (size_t i = 0; f && i < n; i++)
        fprintf(f, "%.9f %.9f\n", t[2 * i], t[2 * i + 1]);
    if (!f || fclose(f))
        die("cannot write B's samples");
    free(t);
    free(bulk);
    clReleaseMemObject(big);
    clReleaseMemObject(buf);
    clReleaseCommandQueue(v.q);
    clReleaseContext(v.ctx);
}

/* A build that takes a while: many functions for the compiler to optimise.
 * Its salt differs from run to run, or PoCL's kernel cache (which hashes
 * the preprocessed source: a comment would not do) would give later runs
 * their binary at once. */
static char *slow_source(unsigned nfun)
{
    size_t cap = 512 + nfun * 400, n = 0;
    char *s = malloc(cap);
    if (!s)
        die("out of memory");
    n += (size_t)snprintf(s + n, cap - n, "__constant uint salt = %luu;\n",
                          (unsigned long)(getpid() ^ (long)(now() * 1e6)) & 0xffffffffu);
    for (unsigned i = 0; i < nfun; i++)
        n += (size_t)snprintf(s + n, cap - n,
                              "float f%u(float x) { float s = 0; for (int i = 0; i < %u; i++) "
                              "{ s += sin(x * i) * cos(s + %u.0f); x = fma(x, 1.0001f, s); } "
                              "return s; }\n",
                              i, 8 + i % 5, i);
    n += (size_t)snprintf(s + n, cap - n,
                          "__kernel void big(__global float *o) {\n"
                          " float x = o[get_global_id(0)] + (float)salt;\n");
    for (unsigned i = 0; i < nfun; i++)
        n += (size_t)snprintf(s + n, cap - n, " x += f%u(x);\n", i);
    snprintf(s + n, cap - n, " o[get_global_id(0)] = x; }\n");
    return s;
}

static const char spin_source[] =
    "__kernel void spin(__global float *o, uint n) {\n"
    "  float x = get_global_id(0);\n"
    "  for (uint i = 0; i < n; i++) x = x * 0.999999f + 1.0f;\n"
    "  o[get_global_id(0)] = x; }\n";

struct setter {
    cl_event user;
    double after;
};

/* A's second thread in the stopped phase: 64 KiB blocking reads (their
 * replies, past MPI's eager size, wait for A to take them) until t_end. */
struct reader {
    struct dev *v;
    cl_mem buf;
    double t_end;
};

static void *read_small(void *arg)
{
    struct reader *r = arg;
    cl_int err;
    char *host = malloc(65536);
    cl_command_queue q = clCreateCommandQueue(r->v->ctx, r->v->d, 0, &err);
    CL_CHECK_ERR("clCreateCommandQueue", err);
    if (!host)
        die("out of memory");
    while (now() < r->t_end)
        CL_CHECK(clEnqueueReadBuffer(q, r->buf, CL_TRUE, 0, 65536, host, 0, NULL, NULL));
    clReleaseCommandQueue(q);
    free(host);
    return NULL;
}

static void *tenant_b_thread(void *dir)
{
    tenant_b(dir);
    return NULL;
}

static void *set_later(void *arg)
{
    struct setter *s = arg;
    sleep_s(s->after);
    CL_CHECK(clSetUserEventStatus(s->user, CL_COMPLETE));
    return NULL;
}

static void phase(FILE *log, const char *name, double t0)
{
    fprintf(log, "%s %.9f %.9f\n", name, t0, now());
}

/* Enqueues spin on gws work items, n iterations each. */
static void spin_start(struct dev *v, cl_kernel k, cl_mem o, cl_uint n, size_t gws)
{
    CL_CHECK(clSetKernelArg(k, 0, sizeof(o), &o));
    CL_CHECK(clSetKernelArg(k, 1, sizeof(n), &n));
    CL_CHECK(clEnqueueNDRangeKernel(v->q, k, 1, NULL, &gws, NULL, 0, NULL, NULL));
}

/* Runs spin on gws work items, n iterations each; its time. */
static double spin(struct dev *v, cl_kernel k, cl_mem o, cl_uint n, size_t gws)
{
    double t0 = now();
    spin_start(v, k, o, n, gws);
    CL_CHECK(clFinish(v->q));
    return now() - t0;
}

/* The iterations for which spin on gws work items runs about secs. */
static cl_uint calibrate(struct dev *v, cl_kernel k, cl_mem o, size_t gws, double secs)
{
    cl_uint n = 1u << 16;
    double t = spin(v, k, o, n, gws);
    while (t < 0.2 && n < (1u << 30)) {
        n *= 4;
        t = spin(v, k, o, n, gws);
    }
    double want = (double)n * secs / t;
    return want > 4e9 ? 4000000000u : (cl_uint)want;
}

/* A child that stops this process (SIGSTOP) after delay, for STOP_S. */
static pid_t stop_me_later(double delay)
{
    pid_t self = getpid(), child = fork();
    if (child == 0) {
        sleep_s(delay);
        kill(self, SIGSTOP);
        sleep_s(STOP_S);
        kill(self, SIGCONT);
        _exit(0);
    }
    if (child < 0)
        die("cannot fork the stopping child");
    return child;
}

static cl_program build(struct dev *v, const char *src)
{
    cl_int err;
    cl_program p = clCreateProgramWithSource(v->ctx, 1, &src, NULL, &err);
    CL_CHECK_ERR("clCreateProgramWithSource", err);
    CL_CHECK(clBuildProgram(p, 1, &v->d, "", NULL, NULL));
    return p;
}

/* A: the phases, each logged as "name start end".  stop: A has a process
 * of its own, to stop (not B's too). */
static void tenant_a(const char *dir, double kernel_s, unsigned nfun, bool stop)
{
    struct dev v = open_dev(0);
    cl_int err;
    cl_program sp = build(&v, spin_source);
    cl_kernel k = clCreateKernel(sp, "spin", &err);
    CL_CHECK_ERR("clCreateKernel", err);
    cl_mem o = clCreateBuffer(v.ctx, CL_MEM_READ_WRITE, 256 * sizeof(float), NULL, &err);
    CL_CHECK_ERR("clCreateBuffer", err);
    /* Calibrate the long kernels before B starts: on every thread of the
     * device's pool (which starves B's device in one process: PoCL), and
     * on one work-item (which leaves the other thread to B). */
    cl_uint n = calibrate(&v, k, o, 256, kernel_s), n1 = calibrate(&v, k, o, 1, kernel_s);
    char *src = slow_source(nfun);
    const size_t big_bytes = (size_t)WRITE_MIB << 20;
    char *host = malloc(big_bytes);
    if (!host)
        die("out of memory");
    memset(host, 7, big_bytes);
    cl_mem big = clCreateBuffer(v.ctx, CL_MEM_READ_WRITE, big_bytes, NULL, &err);
    CL_CHECK_ERR("clCreateBuffer", err);
    CL_CHECK(clEnqueueWriteBuffer(v.q, big, CL_TRUE, 0, big_bytes, host, 0, NULL, NULL));

    if (!await(dir, "b.ready"))
        die("tenant B never started");
    FILE *log = fopen(path(dir, "a.phases"), "w");
    if (!log)
        die("cannot write A's phases");
    double t0 = now();
    sleep_s(1.5);
    phase(log, "idle", t0);

    t0 = now();
    cl_program slow = build(&v, src);
    phase(log, "build", t0);

    t0 = now();
    struct setter s = {.after = 1.5};
    s.user = clCreateUserEvent(v.ctx, &err);
    CL_CHECK_ERR("clCreateUserEvent", err);
    size_t gws = 256;
    cl_uint one = 1;
    cl_event gated;
    CL_CHECK(clSetKernelArg(k, 0, sizeof(o), &o));
    CL_CHECK(clSetKernelArg(k, 1, sizeof(one), &one));
    CL_CHECK(clEnqueueNDRangeKernel(v.q, k, 1, NULL, &gws, NULL, 1, &s.user, &gated));
    pthread_t th;
    if (pthread_create(&th, NULL, set_later, &s))
        die("cannot start a thread");
    CL_CHECK(clWaitForEvents(1, &gated));
    pthread_join(th, NULL);
    phase(log, "user-event", t0);

    t0 = now();
    spin(&v, k, o, n, 256);
    phase(log, "kernel", t0);

    t0 = now();
    spin_start(&v, k, o, n1, 1);
    CL_CHECK(clEnqueueWriteBuffer(v.q, big, CL_TRUE, 0, big_bytes, host, 0, NULL, NULL));
    phase(log, "kernel-write", t0);

    t0 = now();
    struct reader rd = {.v = &v, .buf = big, .t_end = t0 + 0.3 + STOP_S + 0.5};
    pthread_t rt;
    if (pthread_create(&rt, NULL, read_small, &rd))
        die("cannot start a thread");
    pid_t stopper = stop ? stop_me_later(0.3) : 0;
    for (unsigned i = 0; now() < rd.t_end; i++)
        CL_CHECK(i % 2 ? clEnqueueReadBuffer(v.q, big, CL_TRUE, 0, big_bytes, host, 0, NULL, NULL)
                       : clEnqueueWriteBuffer(v.q, big, CL_TRUE, 0, big_bytes, host, 0, NULL,
                                              NULL));
    pthread_join(rt, NULL);
    int st;
    if (stopper && (waitpid(stopper, &st, 0) != stopper || !WIFEXITED(st) || WEXITSTATUS(st)))
        die("the stopping child failed");
    phase(log, "stopped", t0);

    t0 = now();
    sleep_s(1.0);
    phase(log, "idle-after", t0);
    if (fclose(log))
        die("cannot write A's phases");
    touch(dir, "a.done");
    free(src);
    clReleaseEvent(gated);
    clReleaseEvent(s.user);
    clReleaseProgram(slow);
    clReleaseMemObject(big);
    free(host);
    clReleaseKernel(k);
    clReleaseMemObject(o);
    clReleaseProgram(sp);
    clReleaseCommandQueue(v.q);
    clReleaseContext(v.ctx);
}

/* --- the driver -------------------------------------------------------------------------------- */

#define NPHASES 7
static const char *const phase_names[NPHASES] = {"idle",         "build",   "user-event", "kernel",
                                                 "kernel-write", "stopped", "idle-after"};

struct stats {
    double span[NPHASES];  /* A's phase lengths */
    double med[NPHASES], p95[NPHASES], max[NPHASES];
    double gap[NPHASES]; /* the longest B went without a timed read ending */
    size_t n[NPHASES];
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* B's samples binned by A's phases; false when a file is missing or bad. */
static bool read_stats(const char *dir, struct stats *st)
{
    double start[NPHASES], end[NPHASES];
    FILE *f = fopen(path(dir, "a.phases"), "r");
    if (!f)
        return false;
    char name[32];
    for (int i = 0; i < NPHASES; i++)
        if (fscanf(f, "%31s %lf %lf", name, &start[i], &end[i]) != 3 ||
            strcmp(name, phase_names[i])) {
            fclose(f);
            return false;
        }
    fclose(f);
    if (!(f = fopen(path(dir, "b.samples"), "r")))
        return false;
    size_t n = 0;
    double *lat[NPHASES];
    for (int i = 0; i < NPHASES; i++) {
        lat[i] = malloc(MAX_SAMPLES * sizeof(double));
        st->n[i] = 0;
        st->span[i] = end[i] - start[i];
        if (!lat[i])
            die("out of memory");
    }
    /* The gaps between B's reads that end in a phase, from its start on,
     * and from its last read (or its start) to its end. */
    double t, l, last = 0, at[NPHASES];
    for (int i = 0; i < NPHASES; i++) {
        st->gap[i] = 0;
        at[i] = start[i];
    }
    while (fscanf(f, "%lf %lf", &t, &l) == 2 && n++ < MAX_SAMPLES) {
        for (int i = 0; i < NPHASES; i++) {
            if (t >= start[i] && t <= end[i]) {
                double from = last > start[i] ? last : start[i];
                if (t - from > st->gap[i])
                    st->gap[i] = t - from;
                at[i] = t;
            }
            /* A read is in a phase when it began and ended inside it. */
            if (t - l >= start[i] && t <= end[i]) {
                lat[i][st->n[i]++] = l;
                break;
            }
        }
        last = t;
    }
    for (int i = 0; i < NPHASES; i++)
        if (end[i] - at[i] > st->gap[i])
            st->gap[i] = end[i] - at[i];
    fclose(f);
    for (int i = 0; i < NPHASES; i++) {
        size_t m = st->n[i];
        qsort(lat[i], m, sizeof(double), cmp_double);
        st->med[i] = m ? lat[i][m / 2] : 0;
        st->p95[i] = m ? lat[i][m * 95 / 100] : 0;
        st->max[i] = m ? lat[i][m - 1] : 0;
        free(lat[i]);
    }
    return true;
}

/* Runs argv (NULL-terminated) with the environment as is; its exit status. */
static int run(char *const argv[])
{
    pid_t pid = fork();
    if (pid == 0) {
        execvp(argv[0], argv);
        fprintf(stderr, PROG ": cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    if (pid < 0 || waitpid(pid, &st, 0) < 0)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: " PROG " [--vocl-run PATH] [--kernel-seconds S] [--build-functions N]\n"
            "Tenant A (device 0) goes through phases: idle, a long build, a wait on a\n"
            "user-event-gated command, a long kernel with clFinish, a long kernel of one\n"
            "work-item followed by a blocking 64 MiB write, 64 MiB writes and reads and\n"
            "64 KiB reads while its process is stopped for 1 s (not in the one-process\n"
            "run); tenant B (device 1) times 4-byte blocking reads all along (and reads\n"
            "1 MiB after every hundred).  Prints B's latency per phase, natively and\n"
            "through one VOCL proxy serving both, and each against the idle latency.\n"
            "  --vocl-run PATH        the vocl-run to use (default: vocl-run on PATH)\n"
            "  --kernel-seconds S     how long A's kernel runs (default 2)\n"
            "  --build-functions N    size of A's slow program (default 300)\n"
            "Natively POCL_DEVICES defaults to \"pthread pthread\".\n");
}

/* One row: A's phase, then B's reads in it for each run. */
static void print_row(int i, const struct stats *st, int nruns)
{
    printf("%-12s %6.2f", phase_names[i], st[nruns - 1].span[i]);
    for (int r = 0; r < nruns; r++)
        printf(" | %6zu %8.1f %8.1f %9.1f %9.1f %6.2f", st[r].n[i], st[r].med[i] * 1e6,
               st[r].p95[i] * 1e6, st[r].max[i] * 1e6, st[r].gap[i] * 1e6,
               st[r].med[0] > 0 ? st[r].med[i] / st[r].med[0] : 0);
    printf("\n");
}

int main(int argc, char **argv)
{
    const char *role = NULL, *dir = NULL, *vocl_run = "vocl-run";
    double kernel_s = 2.0;
    uint64_t nfun = 300;
    /* Every option but --help takes a value: they go by pairs. */
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--role") && v) {
            role = v;
        } else if (!strcmp(a, "--dir") && v) {
            dir = v;
        } else if (!strcmp(a, "--vocl-run") && v) {
            vocl_run = v;
        } else if (!strcmp(a, "--kernel-seconds") && v) {
            char *end;
            kernel_s = strtod(v, &end);
            if (*end || !(kernel_s > 0 && kernel_s <= 60))
                die("--kernel-seconds takes a number of seconds in (0, 60]");
        } else if (!strcmp(a, "--build-functions") && v) {
            if (!app_parse_u64(v, &nfun) || nfun < 1 || nfun > 2000)
                die("--build-functions takes a number from 1 to 2000");
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (dir) { /* a tenant */
        const char *rank = getenv("PMI_RANK");
        if (!role)
            role = rank && strcmp(rank, "0") ? "b" : "a";
        if (!strcmp(role, "a"))
            tenant_a(dir, kernel_s, (unsigned)nfun, true);
        else if (!strcmp(role, "b"))
            tenant_b(dir);
        else if (!strcmp(role, "ab")) { /* one process: B on a thread */
            /* The driver is set up before the threads start: PoCL 3.1 can
             * fail a buffer of a context made during another's set-up. */
            struct dev d = open_dev(1);
            clReleaseCommandQueue(d.q);
            clReleaseContext(d.ctx);
            pthread_t b;
            if (pthread_create(&b, NULL, tenant_b_thread, (void *)dir))
                die("cannot start a thread");
            tenant_a(dir, kernel_s, (unsigned)nfun, false);
            pthread_join(b, NULL);
        } else
            die("--role takes a, b or ab");
        return 0;
    }

    /* The driver: the tenants natively (two processes, then two threads of
     * one process, as a proxy holds both devices), then through one proxy. */
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len <= 0)
        die("cannot find this program's path");
    self[len] = 0;
    char ks[32], nf[32];
    snprintf(ks, sizeof(ks), "%g", kernel_s);
    snprintf(nf, sizeof(nf), "%u", (unsigned)nfun);
    setenv("POCL_DEVICES", getenv("POCL_DEVICES") ? getenv("POCL_DEVICES") : "pthread pthread", 1);
    /* Through VOCL, data goes over MPI as from a client on another node:
     * on this one, large buffers are shared and their writes no request. */
    setenv("VOCL_SHM", getenv("VOCL_SHM") ? getenv("VOCL_SHM") : "0", 1);
    static const char *const titles[3] = {"native, 2 processes", "native, 1 process",
                                          "VOCL, 1 proxy"};
    struct stats st[3];
    for (int r = 0; r < 3; r++) {
        char dir[] = "/tmp/vocl-tenants-XXXXXX";
        if (!mkdtemp(dir))
            die("cannot make a temporary directory");
        fprintf(stderr, PROG ": %s\n", titles[r]);
        int rc;
        char *const a_argv[] = {self, "--role", r == 0 ? "a" : "ab", "--dir", dir,
                                "--kernel-seconds", ks, "--build-functions", nf, NULL};
        char *const v_argv[] = {(char *)vocl_run, "-a", "2", "-n", "1", "-d", "2", "--", self,
                                "--dir", dir, "--kernel-seconds", ks, "--build-functions", nf,
                                NULL};
        if (r == 0) { /* B in a process of its own */
            pid_t b = fork();
            if (b == 0) {
                execl(self, self, "--role", "b", "--dir", dir, (char *)NULL);
                _exit(127);
            }
            rc = run(a_argv);
            int bst;
            if (b < 0 || waitpid(b, &bst, 0) != b || !WIFEXITED(bst) || WEXITSTATUS(bst))
                rc = 1;
        } else {
            rc = run(r == 1 ? a_argv : v_argv);
        }
        bool ok = rc == 0 && read_stats(dir, &st[r]);
        const char *names[] = {"a.phases", "b.samples", "b.ready", "a.done"};
        for (int i = 0; i < 4; i++)
            unlink(path(dir, names[i]));
        rmdir(dir);
        if (!ok)
            die(rc ? "a run failed" : "a run left no usable phases or samples");
    }
    printf("Tenant B's 4-byte blocking reads (device 1) while tenant A (device 0) is in each\n"
           "phase: count, median, p95 and worst latency in us, the longest time in us that\n"
           "B went without one (it reads 1 MiB after every hundred), and the median against\n"
           "the median while A is idle.  In the one-process run A is not stopped.\n\n");
    printf("%-12s %6s", "A's phase", "secs");
    for (int r = 0; r < 3; r++)
        printf(" | %-51s", titles[r]);
    printf("\n%-12s %6s", "", "");
    for (int r = 0; r < 3; r++)
        printf(" | %6s %8s %8s %9s %9s %6s", "reads", "median", "p95", "worst", "gap", "ratio");
    printf("\n");
    for (int i = 0; i < NPHASES; i++)
        print_row(i, st, 3);
    return 0;
}
