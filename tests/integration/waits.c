/*
 * waits.c - threads that block on commands gated by a user event while
 * another thread sets it: natively nothing hangs, so nothing may hang here.
 *
 *  callback  a kernel gated by a user event, an event callback on it (VOCL
 *            waits for it on a thread of its own), then the main thread
 *            sets the user event: the callback must run.
 *  failed    a marker gated by a user event that is set to an error: its
 *            callback must not say CL_COMPLETE.  It must say the error, or
 *            not run at all: PoCL never calls it (the event's status is
 *            -1), VOCL calls it with the command's status.
 *  blockers  8 threads, spread over every device of one context, each
 *            blocking in clFinish, a blocking read or clWaitForEvents on a
 *            command gated by one user event; after 200 ms the main thread
 *            sets it, and every thread must return with the right data.
 *
 *  map       non-blocking maps of a buffer and of an image, gated by a
 *            user event that this same thread sets only after them (as
 *            OpenCL-CTS events callbacks does): the maps return at once,
 *            and after the gate and a wait their pointers hold the data;
 *            a write through the buffer's map reaches the buffer.
 *  setter    a blocking map gated by a user event that another thread sets
 *            100 ms later: the map returns with the data (a local device's
 *            map waited holding libvocl's lock, which the setter needs).
 *  foreign   12 kernels on the first device, gated by one user event, and
 *            a kernel on the last device (another proxy's, under vocl-run
 *            -n 2) whose wait list is their 12 events: the enqueue returns
 *            before the gate is set (libvocl waited for the ninth and on).
 *  shared    4 threads, each with a queue on its own device, launch one
 *            kernel object (arguments set once) 20 times at once, as the
 *            spec allows: every launch must reach its device whole.
 *  stages    a kernel that runs for a while, with CL_SUBMITTED and
 *            CL_RUNNING callbacks: each is called with its own type while
 *            the kernel still runs (VOCL called them at its completion).
 *
 * Rounds of each (-r N, default 3).  A hang is caught by alarm(): exit 3.
 * The output is the same natively and through VOCL (compare.sh).
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <CL/cl.h>

#define THREADS 8
#define N 1024
#define MAXDEV 8

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cl_int err_ = (call);                                                                      \
        if (err_ != CL_SUCCESS) {                                                                  \
            fprintf(stderr, "waits: %s failed: %d (line %d)\n", #call, err_, __LINE__);         \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static const char *src =
    "kernel void fill(global int *x, int v) { x[get_global_id(0)] = v; }\n"
    "kernel void spin(global int *x, int n) {\n"
    "    int a = x[0];\n"
    "    for (int i = 0; i < n; i++) a = a * 1103515245 + 12345;\n"
    "    x[0] = a;\n"
    "}\n";

static cl_context ctx;
static cl_program prog;
static cl_device_id devs[MAXDEV];
static cl_uint ndev;

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "waits: HANG: a wait did not return in time\n";
    if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0)
        _exit(3);
    _exit(3);
}

static cl_kernel fill_kernel(cl_mem buf, int v)
{
    cl_int err;
    cl_kernel k = clCreateKernel(prog, "fill", &err);
    CHECK(err);
    CHECK(clSetKernelArg(k, 0, sizeof(buf), &buf));
    CHECK(clSetKernelArg(k, 1, sizeof(v), &v));
    return k;
}

static atomic_int called;

static void CL_CALLBACK on_complete(cl_event ev, cl_int status, void *data)
{
    (void)ev, (void)data;
    if (status == CL_COMPLETE)
        atomic_fetch_add(&called, 1);
}

/* A gated kernel with a callback; the main thread sets the gate. */
static int callback_round(int round)
{
    cl_int err;
    cl_command_queue q = clCreateCommandQueue(ctx, devs[round % ndev], 0, &err);
    CHECK(err);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(int), NULL, &err);
    CHECK(err);
    cl_event gate = clCreateUserEvent(ctx, &err), done;
    CHECK(err);
    cl_kernel k = fill_kernel(buf, 7 + round);
    size_t g = N;
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 1, &gate, &done));
    CHECK(clFlush(q));
    atomic_store(&called, 0);
    CHECK(clSetEventCallback(done, CL_COMPLETE, on_complete, NULL));
    usleep(50000); /* the callback's wait is under way */
    CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
    CHECK(clWaitForEvents(1, &done));
    for (int i = 0; i < 2000 && !atomic_load(&called); i++)
        usleep(1000);
    int got[N];
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof(got), got, 0, NULL, NULL));
    int ok = atomic_load(&called) == 1 && got[0] == 7 + round && got[N - 1] == 7 + round;
    clReleaseEvent(done), clReleaseEvent(gate), clReleaseKernel(k);
    clReleaseMemObject(buf), clReleaseCommandQueue(q);
    return ok;
}

/* Callbacks of CL_SUBMITTED and CL_RUNNING: each called with its type,
 * while the command has not completed yet (asked from the callback). */
static atomic_int stage_called[2], stage_early[2];

static void CL_CALLBACK on_stage(cl_event ev, cl_int status, void *data)
{
    int i = (int)(intptr_t)data, type = i ? CL_RUNNING : CL_SUBMITTED;
    cl_int now = CL_COMPLETE;
    clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(now), &now, NULL);
    atomic_store(&stage_early[i], status == type && now > CL_COMPLETE);
    atomic_fetch_add(&stage_called[i], 1);
}

static int stages_round(int round)
{
    cl_int err;
    cl_command_queue q = clCreateCommandQueue(ctx, devs[round % ndev], 0, &err);
    CHECK(err);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(int), NULL, &err);
    CHECK(err);
    cl_kernel k = clCreateKernel(prog, "spin", &err);
    CHECK(err);
    int n = 300 * 1000 * 1000; /* a second or so on a CPU device */
    CHECK(clSetKernelArg(k, 0, sizeof(buf), &buf));
    CHECK(clSetKernelArg(k, 1, sizeof(n), &n));
    size_t one = 1;
    cl_event ev;
    for (int i = 0; i < 2; i++)
        atomic_store(&stage_called[i], 0), atomic_store(&stage_early[i], 0);
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &one, NULL, 0, NULL, &ev));
    CHECK(clSetEventCallback(ev, CL_SUBMITTED, on_stage, (void *)(intptr_t)0));
    CHECK(clSetEventCallback(ev, CL_RUNNING, on_stage, (void *)(intptr_t)1));
    CHECK(clFlush(q));
    CHECK(clWaitForEvents(1, &ev));
    for (int i = 0; i < 2000 && (!stage_called[0] || !stage_called[1]); i++)
        usleep(1000);
    int ok = 1;
    for (int i = 0; i < 2; i++)
        ok &= atomic_load(&stage_called[i]) == 1 && atomic_load(&stage_early[i]);
    clReleaseEvent(ev), clReleaseKernel(k), clReleaseMemObject(buf), clReleaseCommandQueue(q);
    return ok;
}

/* Non-blocking maps behind a user event that this thread sets afterwards. */
static int gated_map_round(int round)
{
    cl_int err;
    cl_command_queue q = clCreateCommandQueue(ctx, devs[round % ndev], 0, &err);
    CHECK(err);
    int init[N];
    for (int i = 0; i < N; i++)
        init[i] = i * 3 + round;
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(init), init,
                                &err);
    CHECK(err);
    cl_image_format fmt = {CL_R, CL_SIGNED_INT32};
    cl_image_desc desc = {.image_type = CL_MEM_OBJECT_IMAGE2D, .image_width = 32,
                          .image_height = N / 32};
    cl_mem img = clCreateImage(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, &fmt, &desc, init,
                               &err);
    CHECK(err);
    cl_event gate = clCreateUserEvent(ctx, &err), mapped[2];
    CHECK(err);
    int *p = clEnqueueMapBuffer(q, buf, CL_FALSE, CL_MAP_READ | CL_MAP_WRITE, 0, sizeof(init), 1,
                                &gate, &mapped[0], &err);
    CHECK(err);
    size_t origin[3] = {0, 0, 0}, region[3] = {32, N / 32, 1}, pitch = 0;
    int *pi = clEnqueueMapImage(q, img, CL_FALSE, CL_MAP_READ, origin, region, &pitch, NULL, 1,
                                &gate, &mapped[1], &err);
    CHECK(err);
    CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
    CHECK(clWaitForEvents(2, mapped));
    int ok = p && pi && pitch == 32 * sizeof(int);
    for (int i = 0; ok && i < N; i++)
        ok = p[i] == init[i] && pi[(i / 32) * (pitch / sizeof(int)) + i % 32] == init[i];
    if (p)
        p[1] = -5;
    if (p)
        CHECK(clEnqueueUnmapMemObject(q, buf, p, 0, NULL, NULL));
    if (pi)
        CHECK(clEnqueueUnmapMemObject(q, img, pi, 0, NULL, NULL));
    int back[2];
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof(back), back, 0, NULL, NULL));
    ok = ok && back[0] == init[0] && back[1] == -5;
    clReleaseEvent(mapped[0]), clReleaseEvent(mapped[1]), clReleaseEvent(gate);
    clReleaseMemObject(img), clReleaseMemObject(buf), clReleaseCommandQueue(q);
    return ok;
}

static void *set_later(void *gate)
{
    usleep(100000);
    CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
    return NULL;
}

/* A blocking map gated by a user event that another thread sets. */
static int setter_round(int round)
{
    cl_int err;
    cl_command_queue q = clCreateCommandQueue(ctx, devs[round % ndev], 0, &err);
    CHECK(err);
    int init[N];
    for (int i = 0; i < N; i++)
        init[i] = 5 * i - round;
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(init), init,
                                &err);
    CHECK(err);
    cl_event gate = clCreateUserEvent(ctx, &err);
    CHECK(err);
    pthread_t t;
    if (pthread_create(&t, NULL, set_later, gate))
        return 0;
    int *p = clEnqueueMapBuffer(q, buf, CL_TRUE, CL_MAP_READ, 0, sizeof(init), 1, &gate, NULL,
                                &err);
    CHECK(err);
    int ok = p && !memcmp(p, init, sizeof(init));
    pthread_join(t, NULL);
    if (p)
        CHECK(clEnqueueUnmapMemObject(q, buf, p, 0, NULL, NULL));
    CHECK(clFinish(q));
    clReleaseEvent(gate), clReleaseMemObject(buf), clReleaseCommandQueue(q);
    return ok;
}

/* A command whose wait list holds many gated events of another device. */
#define FOREIGN 12
static int foreign_round(int round)
{
    cl_int err;
    cl_command_queue qa = clCreateCommandQueue(ctx, devs[0], 0, &err);
    CHECK(err);
    cl_command_queue qb = clCreateCommandQueue(ctx, devs[ndev - 1], 0, &err);
    CHECK(err);
    cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(int), NULL, &err);
    CHECK(err);
    cl_mem b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(int), NULL, &err);
    CHECK(err);
    cl_event gate = clCreateUserEvent(ctx, &err), evs[FOREIGN], last;
    CHECK(err);
    cl_kernel ka = fill_kernel(a, 3 + round), kb = fill_kernel(b, 4 + round);
    size_t g = N;
    for (int i = 0; i < FOREIGN; i++)
        CHECK(clEnqueueNDRangeKernel(qa, ka, 1, NULL, &g, NULL, 1, &gate, &evs[i]));
    CHECK(clFlush(qa));
    CHECK(clEnqueueNDRangeKernel(qb, kb, 1, NULL, &g, NULL, FOREIGN, evs, &last));
    CHECK(clFlush(qb));
    CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
    CHECK(clWaitForEvents(1, &last));
    int got[2];
    CHECK(clEnqueueReadBuffer(qb, b, CL_TRUE, 0, sizeof(int), &got[1], 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(qa, a, CL_TRUE, 0, sizeof(int), &got[0], 0, NULL, NULL));
    cl_int st = 0;
    CHECK(clGetEventInfo(evs[FOREIGN - 1], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st,
                         NULL));
    int ok = got[0] == 3 + round && got[1] == 4 + round && st == CL_COMPLETE;
    for (int i = 0; i < FOREIGN; i++)
        clReleaseEvent(evs[i]);
    clReleaseEvent(last), clReleaseEvent(gate), clReleaseKernel(ka), clReleaseKernel(kb);
    clReleaseMemObject(a), clReleaseMemObject(b);
    clReleaseCommandQueue(qa), clReleaseCommandQueue(qb);
    return ok;
}

/* Many callbacks on commands a user event holds: each is called once its
 * command ends, and while they wait they cost the process no thread each
 * (the threads counted in /proc/self/status). */
#define CALLBACKS 200

static atomic_int many_called;

static void CL_CALLBACK on_many(cl_event ev, cl_int status, void *data)
{
    (void)ev, (void)data;
    if (status == CL_COMPLETE)
        atomic_fetch_add(&many_called, 1);
}

static int threads_now(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[128];
    int n = -1;
    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    if (f)
        fclose(f);
    return n;
}

static int many_callbacks(void)
{
    cl_int err;
    cl_command_queue q = clCreateCommandQueue(ctx, devs[0], 0, &err);
    CHECK(err);
    cl_event gate = clCreateUserEvent(ctx, &err), ev[CALLBACKS];
    CHECK(err);
    atomic_store(&many_called, 0);
    int before = threads_now();
    for (int i = 0; i < CALLBACKS; i++) {
        CHECK(clEnqueueMarkerWithWaitList(q, 1, &gate, &ev[i]));
        CHECK(clSetEventCallback(ev[i], CL_COMPLETE, on_many, NULL));
    }
    CHECK(clFlush(q));
    usleep(100000); /* the callbacks' waits are under way */
    int extra = threads_now() - before;
    CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
    CHECK(clFinish(q));
    for (int i = 0; i < 5000 && atomic_load(&many_called) < CALLBACKS; i++)
        usleep(1000);
    int called_back = atomic_load(&many_called);
    for (int i = 0; i < CALLBACKS; i++)
        clReleaseEvent(ev[i]);
    clReleaseEvent(gate), clReleaseCommandQueue(q);
    if (called_back != CALLBACKS || extra >= CALLBACKS / 4) {
        fprintf(stderr, "waits: %d of %d callbacks called; %d more threads while they waited\n",
                called_back, CALLBACKS, extra);
        return 0;
    }
    return 1;
}

/* A marker gated by a user event that fails: no callback saying it ran. */
#define NOT_CALLED 1000
static atomic_int failed_status = NOT_CALLED;

static void CL_CALLBACK on_failed(cl_event ev, cl_int status, void *data)
{
    (void)ev, (void)data;
    atomic_store(&failed_status, status);
}

static int failed_callback(void)
{
    cl_int err;
    cl_command_queue q = clCreateCommandQueue(ctx, devs[0], 0, &err);
    CHECK(err);
    cl_event gate = clCreateUserEvent(ctx, &err), marker;
    CHECK(err);
    CHECK(clEnqueueMarkerWithWaitList(q, 1, &gate, &marker));
    CHECK(clSetEventCallback(marker, CL_COMPLETE, on_failed, NULL));
    CHECK(clFlush(q));
    CHECK(clSetUserEventStatus(gate, -1));
    for (int i = 0; i < 500 && atomic_load(&failed_status) == NOT_CALLED; i++)
        usleep(1000);
    clFinish(q); /* may report the failure too */
    cl_int status = atomic_load(&failed_status);
    clReleaseEvent(marker), clReleaseEvent(gate), clReleaseCommandQueue(q);
    if (status >= 0 && status != NOT_CALLED) {
        fprintf(stderr, "waits: the callback of a failed command got status %d\n", status);
        return 0;
    }
    return 1;
}

struct sharer {
    int id;
    cl_kernel k;
    cl_int err;
};

#define SHARERS 4
#define LAUNCHES 20

static void *sharer(void *arg)
{
    struct sharer *sh = arg;
    cl_command_queue q = clCreateCommandQueue(ctx, devs[sh->id % ndev], 0, &sh->err);
    size_t g = N;
    for (int i = 0; q && i < LAUNCHES && sh->err == CL_SUCCESS; i++)
        sh->err = clEnqueueNDRangeKernel(q, sh->k, 1, NULL, &g, NULL, 0, NULL, NULL);
    if (q && sh->err == CL_SUCCESS)
        sh->err = clFinish(q);
    if (q)
        clReleaseCommandQueue(q);
    return NULL;
}

/* One kernel object launched from SHARERS threads at once. */
static int shared_round(int round)
{
    cl_int err;
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(int), NULL, &err);
    CHECK(err);
    cl_kernel k = fill_kernel(buf, 40 + round);
    struct sharer sh[SHARERS];
    pthread_t t[SHARERS];
    for (int i = 0; i < SHARERS; i++) {
        sh[i] = (struct sharer){.id = i, .k = k};
        if (pthread_create(&t[i], NULL, sharer, &sh[i]))
            exit(1);
    }
    int ok = 1;
    for (int i = 0; i < SHARERS; i++) {
        pthread_join(t[i], NULL);
        if (sh[i].err != CL_SUCCESS)
            fprintf(stderr, "waits: shared kernel, thread %d: error %d\n", i, sh[i].err), ok = 0;
    }
    cl_command_queue q = clCreateCommandQueue(ctx, devs[0], 0, &err);
    CHECK(err);
    int got[N];
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof(got), got, 0, NULL, NULL));
    for (int i = 0; i < N; i++)
        ok &= got[i] == 40 + round;
    clReleaseCommandQueue(q), clReleaseKernel(k), clReleaseMemObject(buf);
    return ok;
}

struct blocker {
    int id;
    cl_event gate;
    atomic_bool returned;
    int ok;
};

/* One blocking wait of four kinds on a command held by the gate. */
static void *blocker(void *arg)
{
    struct blocker *b = arg;
    cl_int err;
    cl_command_queue q = clCreateCommandQueue(ctx, devs[b->id % ndev], 0, &err);
    CHECK(err);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(int), NULL, &err);
    CHECK(err);
    cl_kernel k = fill_kernel(buf, 100 + b->id);
    size_t g = N;
    int got[N];
    memset(got, 0, sizeof(got));
    cl_event ev;
    switch (b->id % 4) {
    case 0: /* clFinish of a queue whose kernel waits for the gate */
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 1, &b->gate, NULL));
        CHECK(clFinish(q));
        atomic_store(&b->returned, true);
        CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof(got), got, 0, NULL, NULL));
        break;
    case 1: /* a blocking read after the gated kernel */
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 1, &b->gate, &ev));
        CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof(got), got, 1, &ev, NULL));
        atomic_store(&b->returned, true);
        clReleaseEvent(ev);
        break;
    case 2: { /* a blocking rectangular read after the gated kernel */
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 1, &b->gate, &ev));
        const size_t origin[3] = {0, 0, 0}, region[3] = {N * sizeof(int), 1, 1};
        CHECK(clEnqueueReadBufferRect(q, buf, CL_TRUE, origin, origin, region, 0, 0, 0, 0, got, 1,
                                      &ev, NULL));
        atomic_store(&b->returned, true);
        clReleaseEvent(ev);
        break;
    }
    default: /* clWaitForEvents on the gated kernel */
        CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &g, NULL, 1, &b->gate, &ev));
        CHECK(clFlush(q));
        CHECK(clWaitForEvents(1, &ev));
        atomic_store(&b->returned, true);
        CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof(got), got, 0, NULL, NULL));
        clReleaseEvent(ev);
    }
    b->ok = got[0] == 100 + b->id && got[N - 1] == 100 + b->id;
    clReleaseKernel(k), clReleaseMemObject(buf), clReleaseCommandQueue(q);
    return NULL;
}

static int blockers_round(int *early)
{
    cl_int err;
    struct blocker b[THREADS];
    pthread_t t[THREADS];
    cl_event gate = clCreateUserEvent(ctx, &err);
    CHECK(err);
    for (int i = 0; i < THREADS; i++) {
        b[i] = (struct blocker){.id = i, .gate = gate};
        if (pthread_create(&t[i], NULL, blocker, &b[i]))
            exit(1);
    }
    usleep(200000);
    for (int i = 0; i < THREADS; i++)
        *early += atomic_load(&b[i].returned);
    CHECK(clSetUserEventStatus(gate, CL_COMPLETE));
    int ok = 1;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        ok &= b[i].ok;
    }
    clReleaseEvent(gate);
    return ok;
}

int main(int argc, char **argv)
{
    int rounds = argc > 2 && !strcmp(argv[1], "-r") ? atoi(argv[2]) : 3;
    signal(SIGALRM, on_alarm);
    alarm(30 + 5 * (unsigned)rounds);

    cl_platform_id plat;
    CHECK(clGetPlatformIDs(1, &plat, NULL));
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, MAXDEV, devs, &ndev));
    if (ndev > MAXDEV)
        ndev = MAXDEV;
    cl_int err;
    ctx = clCreateContext(NULL, ndev, devs, NULL, NULL, &err);
    CHECK(err);
    prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, ndev, devs, NULL, NULL, NULL));

    int failed = 0, early = 0;
    for (int r = 0; r < rounds; r++) {
        int cb = callback_round(r), bl = blockers_round(&early), sh = shared_round(r);
        int fo = foreign_round(r), gm = gated_map_round(r), st = setter_round(r);
        failed += !cb + !bl + !sh + !gm + !fo + !st;
        if (!cb || !bl || !sh || !gm || !fo || !st)
            fprintf(stderr,
                    "waits: round %d: callback %s, blockers %s, shared %s, map %s, foreign %s, "
                    "setter %s\n",
                    r, cb ? "ok" : "WRONG", bl ? "ok" : "WRONG", sh ? "ok" : "WRONG",
                    gm ? "ok" : "WRONG", fo ? "ok" : "WRONG", st ? "ok" : "WRONG");
    }
    int many = many_callbacks(), gate_failed = failed_callback(), stages = stages_round(0);
    failed += !many + !gate_failed + !stages;
    /* A wait that returned before its gate was set is wrong too. */
    printf("callback after a gated kernel: %s\n", failed ? "FAILED" : "ran");
    printf("%d threads blocked on one user event: %s\n", THREADS,
           failed ? "FAILED" : "all returned with their data");
    printf("waits returned before the gate was set: %d\n", early);
    printf("%d callbacks on gated commands: %s\n", CALLBACKS,
           many ? "all called, no thread each" : "FAILED");
    printf("callback of a command whose gate failed: %s\n",
           gate_failed ? "no callback says it ran" : "FAILED");
    printf("CL_SUBMITTED and CL_RUNNING callbacks of a long kernel: %s\n",
           stages ? "each called while it ran"
                  : stage_called[0] + stage_called[1] ? "called late" : "FAILED");
    printf("one kernel launched by %d threads at once: %s\n", SHARERS,
           failed ? "FAILED" : "every launch ran");
    printf("non-blocking maps behind a user event set after them: %s\n",
           failed ? "FAILED" : "returned at once, data there after the wait");
    printf("a command waiting for %d gated events of another device: %s\n", FOREIGN,
           failed ? "FAILED" : "enqueued without waiting");
    printf("a blocking map gated by a user event another thread sets: %s\n",
           failed ? "FAILED" : "returned with the data");
    clReleaseProgram(prog);
    clReleaseContext(ctx);
    return failed || early ? 1 : 0;
}
