/*
 * cases.c - live migrations of this very process, asked through its own
 * control socket as vocl-ctl asks (libvocl/control.c), between OpenCL
 * calls.  Run under `vocl-run -n 3 -d 1 --spare 1` with
 * VOCL_CTL_DIR set: devices 0 and 1 are proxies 0 and 1, proxy 2 is the
 * spare.  Each case checks what the OpenCL specification says the
 * application sees: nothing but a pause.
 *
 *   args       arguments set once before a migration serve the launches
 *              after it; a program the application released still backs
 *              its kernel; a reference taken before is released after;
 *              ten moves there and back keep the data
 *   events     an event of before is complete after, and a wait list
 *              naming it works
 *   map        a region mapped before is unmapped after: its writes land;
 *              the same with a buffer shared with a proxy of this node
 *              (mapped in place), written before and after the move
 *   sub        a sub-buffer keeps its region and its bytes
 *   image      a 2D image keeps its format, shape and pixels
 *   long       a kernel that runs past VOCL_MIGRATE_WAIT_MS: refused, saying
 *              why; once it is done, the move goes
 *   gated      a user event not yet set: the migration is refused, with
 *              the reason, and nothing moved; once set, it goes
 *   callback   a completion callback registered just before fires once
 *   printf     a kernel's output of before a move comes before that of after
 *   requests   malformed requests are refused and change nothing
 *   spanning   a context spanning proxies 0 and 1 moves its part on 0 and
 *              back, a buffer written on one device and read on the other;
 *              a move onto proxy 1, which it spans already, is refused
 * Exit 0: all passed; 1: one failed (it says which on stderr).
 */
#include <CL/cl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../integration/cl_check.h"
#include "ctl-ask.h"

static const char *source = "__kernel void add(__global int *a, int v)\n"
                            "{ a[get_global_id(0)] += v; }\n";

enum { N = 4096 };

static int failed;

static void expect(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "cases: FAILED: %s\n", what);
        failed = 1;
    }
}

/* Sends req to this process's control socket; the answer in out. */
static void ask(const char *req, char *out, size_t n)
{
    char dir[256], pid[32];
    snprintf(pid, sizeof(pid), "%ld", (long)getpid());
    vocl_ctl_ask(vocl_ctl_dir_of(NULL, dir, sizeof(dir)), pid, req, out, n);
}

/* The objects this process has on proxy px, as the control socket counts them. */
static int objects_on(int px)
{
    char ans[4096], key[32];
    ask("proxies", ans, sizeof(ans));
    snprintf(key, sizeof(key), "proxy %d ", px);
    const char *l = strstr(ans, key), *o = l ? strstr(l, "objects=") : NULL;
    return o ? atoi(o + 8) : -1;
}

/* Where device 0's objects are: proxy 0, or the spare, 2. */
static int home;

/* Moves them to the other: whether it said ok, and they all went. */
static int move(void)
{
    char req[64], ans[1024];
    int to = home == 0 ? 2 : 0;
    snprintf(req, sizeof(req), "migrate %d %d", home, to);
    ask(req, ans, sizeof(ans));
    if (strncmp(ans, "ok", 2)) {
        fprintf(stderr, "cases: %s: %s", req, ans);
        return 0;
    }
    int left = objects_on(home), there = objects_on(to);
    home = to;
    if (left != 0 || there <= 0)
        fprintf(stderr, "cases: %s: %d objects left, %d there\n", req, left, there);
    return left == 0 && there > 0;
}

/* A move that must be refused, its answer naming reason; nothing moves. */
static void refused(const char *reason, const char *what)
{
    char req[64], ans[1024], msg[128];
    snprintf(req, sizeof(req), "migrate %d %d", home, 2 - home);
    ask(req, ans, sizeof(ans));
    if (strncmp(ans, "error", 5) || !strstr(ans, reason))
        fprintf(stderr, "cases: %s: %s", req, ans);
    snprintf(msg, sizeof(msg), "%s: refused, saying why", what);
    expect(strncmp(ans, "error", 5) == 0 && strstr(ans, reason) != NULL, msg);
    snprintf(msg, sizeof(msg), "%s: nothing moved", what);
    expect(objects_on(2 - home) == 0, msg);
}

static cl_int sum_check(cl_command_queue q, cl_mem buf, int want)
{
    static int h[N];
    cl_int err = clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof(h), h, 0, NULL, NULL);
    for (int i = 0; err == CL_SUCCESS && i < N; i++)
        if (h[i] != want + i) {
            fprintf(stderr, "cases: element %d is %d, not %d\n", i, h[i], want + i);
            return -1;
        }
    return err;
}

static atomic_int called;
static void CL_CALLBACK on_done(cl_event e, cl_int status, void *data)
{
    (void)e, (void)data;
    if (status == CL_COMPLETE)
        atomic_fetch_add(&called, 1);
}

/* Waits for a file to exist, at most 60 s. */
static int await_file(const char *path)
{
    for (int i = 0; i < 6000; i++) {
        if (access(path, F_OK) == 0)
            return 0;
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    return -1;
}

/*
 * --target-dies MIB DIR: a buffer of MIB MiB on device 0, filled; then
 * DIR/ready, and the test script moves proxy 0 and kills the target
 * meanwhile; at DIR/go, the buffer must still be whole on proxy 0, and a
 * kernel there must still run.  --source-dies: the same, the source killed
 * (with failover): proxy 0 is the target's process then.
 */
static int one_dies(cl_device_id dev, size_t mib, const char *dir, bool target)
{
    char path[512];
    cl_int err;
    size_t n = (mib << 20) / sizeof(int);
    cl_context ctx = context_on(dev);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, NULL, &err);
    CHECK(err);
    cl_kernel add = build_kernel(ctx, dev, source, "add");
    int *h = malloc(n * sizeof(int));
    for (size_t i = 0; h && i < n; i++)
        h[i] = (int)i;
    /* (Written, not made from h: a failover log keeps a buffer's first
     * bytes beside its checkpoints' copies.) */
    cl_mem buf = h ? clCreateBuffer(ctx, CL_MEM_READ_WRITE, n * sizeof(int), NULL, &err) : NULL;
    CHECK(h ? err : CL_OUT_OF_HOST_MEMORY);
    CHECK(clEnqueueWriteBuffer(q, buf, CL_TRUE, 0, n * sizeof(int), h, 0, NULL, NULL));
    CHECK(clFinish(q));
    snprintf(path, sizeof(path), "%s/ready", dir);
    fclose(fopen(path, "w"));
    snprintf(path, sizeof(path), "%s/go", dir);
    if (await_file(path)) {
        fprintf(stderr, "cases: no %s\n", path);
        return 1;
    }
    int v = 3;
    CHECK(clSetKernelArg(add, 0, sizeof(buf), &buf));
    CHECK(clSetKernelArg(add, 1, sizeof(v), &v));
    CHECK(clEnqueueNDRangeKernel(q, add, 1, NULL, &n, NULL, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, n * sizeof(int), h, 0, NULL, NULL));
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++)
        wrong += h[i] != (int)i + v;
    expect(wrong == 0, "the buffer, whole after the kill, and a kernel on it");
    expect(objects_on(0) > 0 && objects_on(2) == 0, "everything on proxy 0");
    free(h);
    clReleaseMemObject(buf);
    clReleaseKernel(add);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    if (target)
        printf("cases: target-dies: %s\n", failed ? "FAILED" : "the source kept everything");
    else
        printf("cases: source-dies: %s\n", failed ? "FAILED" : "the buffer went on whole");
    return failed;
}

int main(int argc, char **argv)
{
    cl_device_id devs[2];
    if (first_devices(devs, 2) < 2) {
        fprintf(stderr, "cases: needs two devices (vocl-run -n 3 -d 1, VOCL_SPARE=1)\n");
        return 1;
    }
    if (argc == 4 && strcmp(argv[1], "--target-dies") == 0)
        return one_dies(devs[0], (size_t)atol(argv[2]), argv[3], true);
    if (argc == 4 && strcmp(argv[1], "--source-dies") == 0)
        return one_dies(devs[0], (size_t)atol(argv[2]), argv[3], false);
    char name0[256], name0_after[256];
    CHECK(clGetDeviceInfo(devs[0], CL_DEVICE_NAME, sizeof(name0), name0, NULL));
    cl_int err;
    cl_context ctx = context_on(devs[0]);
    cl_command_queue q = clCreateCommandQueueWithProperties(ctx, devs[0], NULL, &err);
    CHECK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 1, devs, "-DUNUSED=1", NULL, NULL));
    cl_kernel add = clCreateKernel(prog, "add", &err);
    CHECK(err);
    CHECK(clReleaseProgram(prog)); /* the kernel holds it */
    static int init[N];
    for (int i = 0; i < N; i++)
        init[i] = i;
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(init), init,
                                &err);
    CHECK(err);
    size_t global = N;
    int v = 1, total = 0;
    CHECK(clSetKernelArg(add, 0, sizeof(buf), &buf));
    CHECK(clSetKernelArg(add, 1, sizeof(v), &v));

    /* args: set once, launched on both sides of ten moves; a reference
     * taken before them is released after (the target must count it) */
    CHECK(clRetainKernel(add));
    cl_event before;
    CHECK(clEnqueueNDRangeKernel(q, add, 1, NULL, &global, NULL, 0, NULL, &before));
    total += v;
    expect(move(), "args: the migration 0 -> 2");
    CHECK(clEnqueueNDRangeKernel(q, add, 1, NULL, &global, NULL, 0, NULL, NULL));
    total += v;
    expect(sum_check(q, buf, total) == CL_SUCCESS, "args: the data after one move");
    for (int i = 0; i < 10; i++) {
        expect(move(), "args: a move of the ten");
        CHECK(clEnqueueNDRangeKernel(q, add, 1, NULL, &global, NULL, 0, NULL, NULL));
        total += v;
    }
    CHECK(clReleaseKernel(add));
    expect(sum_check(q, buf, total) == CL_SUCCESS, "args: the data after ten moves");
    CHECK(clGetDeviceInfo(devs[0], CL_DEVICE_NAME, sizeof(name0_after), name0_after, NULL));
    expect(strcmp(name0, name0_after) == 0, "args: the device is the same kind");

    /* events: complete after, and usable in a wait list */
    cl_int st = CL_QUEUED;
    CHECK(clGetEventInfo(before, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL));
    expect(st == CL_COMPLETE, "events: an event of before is complete");
    CHECK(clEnqueueNDRangeKernel(q, add, 1, NULL, &global, NULL, 1, &before, NULL));
    total += v;
    CHECK(clWaitForEvents(1, &before));
    CHECK(clReleaseEvent(before));
    expect(sum_check(q, buf, total) == CL_SUCCESS, "events: a wait list naming it");

    /* map: mapped before, written, unmapped after */
    int *p = clEnqueueMapBuffer(q, buf, CL_TRUE, CL_MAP_WRITE, 0, sizeof(init), 0, NULL, NULL,
                                &err);
    CHECK(err);
    for (int i = 0; i < N; i++)
        p[i] = i + 100;
    expect(move(), "map: the migration with a region mapped");
    CHECK(clEnqueueUnmapMemObject(q, buf, p, 0, NULL, NULL));
    total = 100;
    expect(sum_check(q, buf, total) == CL_SUCCESS, "map: the writes through the map landed");

    /* map-shared: the same with a buffer large enough to be shared with a
     * proxy of this node, which maps it in place: the memory the pointer
     * shows leaves with the move, and the writes through it still land */
    enum { BIG = (4 << 20) / sizeof(int) };
    cl_mem big = clCreateBuffer(ctx, CL_MEM_READ_WRITE, BIG * sizeof(int), NULL, &err);
    CHECK(err);
    p = clEnqueueMapBuffer(q, big, CL_TRUE, CL_MAP_WRITE, 0, BIG * sizeof(int), 0, NULL, NULL,
                           &err);
    CHECK(err);
    for (int i = 0; i < (int)BIG; i++)
        p[i] = 3 * i;
    expect(move(), "map-shared: the migration with a shared region mapped");
    for (int i = 0; i < (int)BIG; i += 2)
        p[i] = 5 * i; /* (and some after the move) */
    CHECK(clEnqueueUnmapMemObject(q, big, p, 0, NULL, NULL));
    int *got = malloc(BIG * sizeof(int));
    CHECK(clEnqueueReadBuffer(q, big, CL_TRUE, 0, BIG * sizeof(int), got, 0, NULL, NULL));
    int bad = 0;
    for (int i = 0; i < (int)BIG && !bad; i++)
        bad = got[i] != (i % 2 ? 3 : 5) * i;
    expect(!bad, "map-shared: the writes through the map, before and after the move, landed");
    free(got);
    CHECK(clReleaseMemObject(big));

    /* sub: a sub-buffer keeps its region and bytes */
    cl_buffer_region reg = {N / 2 * sizeof(int), N / 2 * sizeof(int)};
    cl_mem sub = clCreateSubBuffer(buf, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &reg,
                                   &err);
    CHECK(err);
    expect(move(), "sub: the migration with a sub-buffer");
    static int half[N / 2];
    CHECK(clEnqueueReadBuffer(q, sub, CL_TRUE, 0, sizeof(half), half, 0, NULL, NULL));
    expect(half[0] == total + N / 2 && half[N / 2 - 1] == total + N - 1,
           "sub: its bytes after the move");
    size_t off = 0;
    CHECK(clGetMemObjectInfo(sub, CL_MEM_OFFSET, sizeof(off), &off, NULL));
    expect(off == reg.origin, "sub: its offset");
    CHECK(clReleaseMemObject(sub));

    /* image: a 2D image keeps its format, its shape and its pixels */
    cl_image_format fmt = {CL_RGBA, CL_UNSIGNED_INT8};
    cl_image_desc desc = {.image_type = CL_MEM_OBJECT_IMAGE2D, .image_width = 64,
                          .image_height = 32};
    static unsigned char px[64 * 32 * 4], back[64 * 32 * 4];
    for (size_t i = 0; i < sizeof(px); i++)
        px[i] = (unsigned char)(i * 7 + 1);
    cl_mem img = clCreateImage(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, &fmt, &desc, px,
                               &err);
    CHECK(err);
    expect(move(), "image: the migration with an image");
    size_t origin[3] = {0, 0, 0}, region[3] = {64, 32, 1};
    CHECK(clEnqueueReadImage(q, img, CL_TRUE, origin, region, 0, 0, back, 0, NULL, NULL));
    expect(memcmp(px, back, sizeof(px)) == 0, "image: its pixels after the move");
    size_t height = 0;
    CHECK(clGetImageInfo(img, CL_IMAGE_HEIGHT, sizeof(height), &height, NULL));
    expect(height == 32, "image: its shape after the move");
    CHECK(clReleaseMemObject(img));

    /* long: a kernel that runs past VOCL_MIGRATE_WAIT_MS (cases.sh: 1500)
     * makes the move fail, saying why; once it is done, the move goes */
    static const char *spin_src =
        "__kernel void spin(__global int *a, long n)\n"
        "{ int x = a[0]; for (long i = 0; i < n; i++) x = x * 1103515245 + 12345; a[1] = x; }\n";
    cl_kernel spin = build_kernel(ctx, devs[0], spin_src, "spin");
    cl_mem sb = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
    CHECK(err);
    CHECK(clSetKernelArg(spin, 0, sizeof(sb), &sb));
    cl_long spins = 1 << 10;
    double took = 0;
    CHECK(clSetKernelArg(spin, 1, sizeof(spins), &spins));
    CHECK(clEnqueueTask(q, spin, 0, NULL, NULL)); /* (PoCL compiles it at its first launch) */
    CHECK(clFinish(q));
    spins = 1 << 22;
    while (took < 0.05 && spins < ((cl_long)1 << 40)) { /* (calibrated: speeds vary) */
        spins *= 2;
        CHECK(clSetKernelArg(spin, 1, sizeof(spins), &spins));
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        CHECK(clEnqueueTask(q, spin, 0, NULL, NULL));
        CHECK(clFinish(q));
        clock_gettime(CLOCK_MONOTONIC, &t1);
        took = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    }
    spins = (cl_long)((double)spins * 4.0 / took); /* about 4 s */
    CHECK(clSetKernelArg(spin, 1, sizeof(spins), &spins));
    CHECK(clEnqueueTask(q, spin, 0, NULL, NULL));
    refused("did not finish", "long");
    CHECK(clFinish(q));
    expect(move(), "long: once the kernel is done");
    CHECK(clReleaseMemObject(sb));
    CHECK(clReleaseKernel(spin));

    /* gated: refused while a user event holds a command */
    cl_event user = clCreateUserEvent(ctx, &err);
    CHECK(err);
    CHECK(clEnqueueNDRangeKernel(q, add, 1, NULL, &global, NULL, 1, &user, NULL));
    total += v;
    refused("user event", "gated");
    CHECK(clSetUserEventStatus(user, CL_COMPLETE));
    CHECK(clFinish(q));
    CHECK(clReleaseEvent(user));
    expect(move(), "gated: once the event is set");
    expect(sum_check(q, buf, total) == CL_SUCCESS, "gated: the data");

    /* callback: registered just before, fires once after */
    cl_event last;
    CHECK(clEnqueueNDRangeKernel(q, add, 1, NULL, &global, NULL, 0, NULL, &last));
    total += v;
    CHECK(clSetEventCallback(last, CL_COMPLETE, on_done, NULL));
    expect(move(), "callback: the migration");
    for (int i = 0; i < 500 && atomic_load(&called) == 0; i++)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    nanosleep(&(struct timespec){0, 100000000}, NULL);
    expect(atomic_load(&called) == 1, "callback: fired once");
    CHECK(clReleaseEvent(last));
    expect(sum_check(q, buf, total) == CL_SUCCESS, "callback: the data");

    /* requests: malformed ones change nothing */
    char ans[1024];
    ask("migrate 0 0", ans, sizeof(ans));
    expect(strncmp(ans, "error", 5) == 0, "requests: to itself");
    ask("migrate 0 9", ans, sizeof(ans));
    expect(strncmp(ans, "error", 5) == 0 && strstr(ans, "no proxy 9"), "requests: no such proxy");
    ask("migrate x", ans, sizeof(ans));
    expect(strncmp(ans, "error", 5) == 0, "requests: garbage");
    expect(objects_on(home) > 0 && objects_on(2 - home) == 0, "requests: nothing moved");

    /* spanning: a context over proxies 0 and 1 moves its part on 0; a
     * buffer written on one device is read on the other, both ways */
    if (home != 0)
        expect(move(), "spanning: back to proxy 0 first");
    cl_context both = clCreateContext(NULL, 2, devs, NULL, NULL, &err);
    CHECK(err);
    ask("migrate 0 1", ans, sizeof(ans));
    expect(strncmp(ans, "error", 5) == 0 && strstr(ans, "already"),
           "spanning: refused onto a proxy it spans");
    cl_command_queue q0 = clCreateCommandQueueWithProperties(both, devs[0], NULL, &err);
    CHECK(err);
    cl_command_queue q1 = clCreateCommandQueueWithProperties(both, devs[1], NULL, &err);
    CHECK(err);
    cl_program bp = clCreateProgramWithSource(both, 1, &source, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(bp, 2, devs, NULL, NULL, NULL));
    cl_kernel badd = clCreateKernel(bp, "add", &err);
    CHECK(err);
    cl_mem b1 = clCreateBuffer(both, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof(init), init,
                               &err);
    CHECK(err);
    int btotal = 0;
    CHECK(clSetKernelArg(badd, 0, sizeof(b1), &b1));
    CHECK(clSetKernelArg(badd, 1, sizeof(v), &v));
    CHECK(clEnqueueNDRangeKernel(q0, badd, 1, NULL, &global, NULL, 0, NULL, NULL));
    btotal += v;
    CHECK(clFinish(q0));
    for (int i = 0; i < 4; i++) {
        expect(move(), "spanning: a move of the context's part");
        cl_command_queue wq = i % 2 ? q0 : q1, rq = i % 2 ? q1 : q0;
        CHECK(clEnqueueNDRangeKernel(wq, badd, 1, NULL, &global, NULL, 0, NULL, NULL));
        btotal += v;
        CHECK(clFinish(wq));
        expect(sum_check(rq, b1, btotal) == CL_SUCCESS, "spanning: written on one, read on other");
    }
    CHECK(clReleaseMemObject(b1));
    CHECK(clReleaseKernel(badd));
    CHECK(clReleaseProgram(bp));
    CHECK(clReleaseCommandQueue(q0));
    CHECK(clReleaseCommandQueue(q1));
    CHECK(clReleaseContext(both));
    expect(sum_check(q, buf, total) == CL_SUCCESS, "spanning: the first context's data");

    /* printf: a kernel's output of before the move comes before that of
     * after it (cases.sh checks the order of the lines) */
    static const char *say = "__kernel void say(int when) { printf(\"kprintf: %d\\n\", when); }\n";
    cl_kernel sk = build_kernel(ctx, devs[0], say, "say");
    size_t one = 1;
    for (int when = 1; when <= 2; when++) {
        CHECK(clSetKernelArg(sk, 0, sizeof(when), &when));
        CHECK(clEnqueueNDRangeKernel(q, sk, 1, NULL, &one, NULL, 0, NULL, NULL));
        if (when == 1)
            expect(move(), "printf: the migration between two kernels that print");
    }
    CHECK(clFinish(q));
    CHECK(clReleaseKernel(sk));

    CHECK(clReleaseMemObject(buf));
    CHECK(clReleaseKernel(add));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    printf("cases: %s\n", failed ? "FAILED" : "all passed");
    return failed;
}
