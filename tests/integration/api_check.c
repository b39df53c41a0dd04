/*
 * api_check.c - an ordinary OpenCL program that walks much of the API and
 * prints what it sees, one line per check.  Run natively and under
 * vocl-run, the two outputs must be identical: that is the test.
 * Handles returned by info queries must be the ones the program holds.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <CL/cl.h>

static int failures;

#define SAY(...) printf(__VA_ARGS__)
#define CHECK(cond, what)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL %s (line %d)\n", what, __LINE__);                                         \
            failures++;                                                                            \
        } else {                                                                                   \
            printf("ok %s\n", what);                                                               \
        }                                                                                          \
    } while (0)
#define CL(call) CHECK((err = (call)) == CL_SUCCESS, #call)

/* Build notifications: which programs they named, in order. */
static struct {
    atomic_int calls;
    atomic_int done;   /* counted after prog[] is written: built_wait reads it */
    uintptr_t prog[3]; /* as numbers: the failed one is released by then */
} built;

static void CL_CALLBACK on_built(cl_program p, void *data)
{
    int i = atomic_fetch_add(&built.calls, 1);
    if (data == &built && i < 3)
        built.prog[i] = (uintptr_t)p;
    atomic_fetch_add(&built.done, 1);
}

/* Up to 10 s for n build notifications (the spec lets them come later). */
static void CL_CALLBACK on_mem_gone(cl_mem m, void *ran)
{
    (void)m;
    atomic_store((atomic_int *)ran, 1);
}

static int built_wait(int n)
{
    for (int i = 0; i < 1000 && atomic_load(&built.done) < n; i++)
        nanosleep(&(struct timespec){0, 10000000}, NULL);
    return atomic_load(&built.done);
}

static const char *src =
    "typedef struct { int a; float b; } pair;\n"
    "kernel void scale(global float *x, float k, local float *tmp, pair p) {\n"
    "  size_t i = get_global_id(0); tmp[get_local_id(0)] = x[i] * k + p.a + p.b;\n"
    "  barrier(CLK_LOCAL_MEM_FENCE); x[i] = tmp[get_local_id(0)]; }\n"
    "kernel void fill(global int *y, int v) { y[get_global_id(0)] = v + get_global_id(0); }\n"
    "kernel void img(read_only image2d_t in, write_only image2d_t out, sampler_t s) {\n"
    "  int2 p = (int2)(get_global_id(0), get_global_id(1));\n"
    "  write_imagef(out, p, read_imagef(in, s, p) * 2.0f); }\n";

/*
 * A signature written the way real code writes them: #define'd names,
 * attributes, an image, a sampler and a __local pointer.
 */
static const char *sig_src =
    "#define GBUF global float *\n"
    "#define KERN __kernel\n"
    "#define VEC float4\n"
    "struct pair { int a; float b; };\n"
    "KERN __attribute__((reqd_work_group_size(1, 1, 1))) void sig(GBUF restrict g,\n"
    "    constant int *c, read_only image2d_t im, sampler_t s, local float *l, int i,\n"
    "    VEC f4, float3 f3, char ch, struct pair p, uchar2 u2, unsigned int ui, long lg) {\n"
    "  l[0] = 1.0f;\n"
    "  g[0] = c[0] + l[0] + read_imagef(im, s, (int2)(0, 0)).x + i + f4.y + f3.z + ch + p.a\n"
    "         + p.b + u2.y + ui + lg; }\n";

/*
 * Each clSetKernelArg case of sig, one line each: the code it returns.
 * Without typed, the wrong sizes of values are left out: VOCL knows the
 * size of a value's type only from the source, and a program from binaries
 * has none, so there the native error comes with the launch.
 */
static void sig_arg_errors(const char *what, cl_kernel k, cl_mem buf, cl_mem cbuf, cl_mem img,
                           cl_sampler smp, int typed)
{
    static int not_an_object[64]; /* an address that is no OpenCL object */
    void *bogus = not_an_object;
    cl_mem no_mem = NULL;
    cl_sampler no_smp = NULL;
    char bytes[32] = {0};
    const struct {
        const char *name;
        cl_uint index;
        size_t size;
        const void *value;
        int typed; /* a wrong size for the value's type */
    } cases[] = {
        {"index past the end", 13, 4, bytes, 0},
        {"buffer", 0, sizeof(cl_mem), &buf, 0},
        {"buffer NULL", 0, sizeof(cl_mem), NULL, 0},
        {"buffer pointing to NULL", 0, sizeof(cl_mem), &no_mem, 0},
        {"buffer size 4", 0, 4, &buf, 0},
        {"buffer NULL size 0", 0, 0, NULL, 0},
        {"constant buffer", 1, sizeof(cl_mem), &cbuf, 0},
        {"constant buffer size 4", 1, 4, &cbuf, 0},
        {"image", 2, sizeof(cl_mem), &img, 0},
        {"image given a buffer", 2, sizeof(cl_mem), &buf, 0},
        {"image NULL", 2, sizeof(cl_mem), NULL, 0},
        {"image pointing to NULL", 2, sizeof(cl_mem), &no_mem, 0},
        {"image size 4", 2, 4, &img, 0},
        {"sampler", 3, sizeof(cl_sampler), &smp, 0},
        {"sampler NULL", 3, sizeof(cl_sampler), NULL, 0},
        {"sampler NULL size 4", 3, 4, NULL, 0},
        {"sampler pointing to NULL", 3, sizeof(cl_sampler), &no_smp, 0},
        {"sampler size 4", 3, 4, &smp, 0},
        {"local", 4, 64, NULL, 0},
        {"local with a value", 4, 64, bytes, 0},
        {"local size 0", 4, 0, NULL, 0},
        {"local size 0 with a value", 4, 0, bytes, 0},
        {"int", 5, 4, bytes, 0},
        {"int NULL", 5, 4, NULL, 0},
        {"int NULL size 0", 5, 0, NULL, 0},
        {"int size 8", 5, 8, bytes, 1},
        {"int size 2", 5, 2, bytes, 1},
        {"int size 0", 5, 0, bytes, 1},
        {"int size 3", 5, 3, bytes, 0},
        {"VEC (float4)", 6, 16, bytes, 0},
        {"VEC size 8", 6, 8, bytes, 1},
        {"VEC size 12", 6, 12, bytes, 0},
        {"float3 size 16", 7, 16, bytes, 0},
        {"float3 size 12", 7, 12, bytes, 0},
        {"float3 size 8", 7, 8, bytes, 1},
        {"char", 8, 1, bytes, 0},
        {"char size 4", 8, 4, bytes, 1},
        {"struct", 9, 8, bytes, 0},
        {"struct NULL", 9, 8, NULL, 0},
        {"struct size 4", 9, 4, bytes, 0},
        {"uchar2", 10, 2, bytes, 0},
        {"uchar2 size 4", 10, 4, bytes, 1},
        {"unsigned int", 11, 4, bytes, 0},
        {"unsigned int size 8", 11, 8, bytes, 1},
        {"long", 12, 8, bytes, 0},
        {"long size 4", 12, 4, bytes, 1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (typed || !cases[i].typed)
            SAY("setarg %s %s: %d\n", what, cases[i].name,
                clSetKernelArg(k, cases[i].index, cases[i].size, cases[i].value));
    /* PoCL 3.1 does not check handles (any address is taken), where the spec
     * wants the error VOCL returns: either answer passes. */
    const struct {
        const char *name;
        cl_uint index;
        const void *value;
        cl_int spec;
    } handles[] = {
        {"buffer given no object", 0, &bogus, CL_INVALID_MEM_OBJECT},
        {"buffer given a sampler", 0, &smp, CL_INVALID_MEM_OBJECT},
        {"image given no object", 2, &bogus, CL_INVALID_MEM_OBJECT},
        {"sampler given no object", 3, &bogus, CL_INVALID_SAMPLER},
        {"sampler given a buffer", 3, &buf, CL_INVALID_SAMPLER},
    };
    for (size_t i = 0; i < sizeof(handles) / sizeof(handles[0]); i++) {
        cl_int e = clSetKernelArg(k, handles[i].index, sizeof(void *), handles[i].value);
        SAY("setarg %s %s: %s\n", what, handles[i].name,
            e == handles[i].spec || e == CL_SUCCESS ? "spec error or unchecked" : "other");
    }
}

/* Sets every argument of sig right, runs it, and prints what it wrote. */
static void sig_run(const char *what, cl_command_queue q, cl_kernel k, cl_mem buf, cl_mem cbuf,
                    cl_mem img, cl_sampler smp)
{
    cl_int err;
    cl_int i = 2;
    cl_float4 f4 = {{0, 3, 0, 0}};
    cl_float3 f3 = {{0, 0, 4, 0}};
    cl_char ch = 5;
    struct {
        cl_int a;
        cl_float b;
    } pr = {6, 0.5f};
    cl_uchar2 u2 = {{0, 7}};
    cl_uint ui = 8;
    cl_long lg = 9;
    CL(clSetKernelArg(k, 0, sizeof(cl_mem), &buf));
    CL(clSetKernelArg(k, 1, sizeof(cl_mem), &cbuf));
    CL(clSetKernelArg(k, 2, sizeof(cl_mem), &img));
    CL(clSetKernelArg(k, 3, sizeof(cl_sampler), &smp));
    CL(clSetKernelArg(k, 4, 16, NULL));
    CL(clSetKernelArg(k, 5, sizeof(i), &i));
    CL(clSetKernelArg(k, 6, sizeof(f4), &f4));
    CL(clSetKernelArg(k, 7, 12, &f3)); /* PoCL takes a float3 of 12 bytes too */
    CL(clSetKernelArg(k, 8, sizeof(ch), &ch));
    CL(clSetKernelArg(k, 9, sizeof(pr), &pr));
    CL(clSetKernelArg(k, 10, sizeof(u2), &u2));
    CL(clSetKernelArg(k, 11, sizeof(ui), &ui));
    CL(clSetKernelArg(k, 12, sizeof(lg), &lg));
    CL(clEnqueueTask(q, k, 0, NULL, NULL));
    float g = 0;
    CL(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof(g), &g, 0, NULL, NULL));
    SAY("sig %s wrote %g\n", what, g);
}

int main(void)
{
    cl_int err;
    cl_platform_id plat;
    cl_device_id dev;
    CL(clGetPlatformIDs(1, &plat, NULL));
    CL(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 1, &dev, NULL));

    /* Invalid arguments get the spec's codes. */
    CHECK(clGetDeviceInfo(NULL, CL_DEVICE_NAME, 0, NULL, NULL) == CL_INVALID_DEVICE, "NULL device");
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 0, &dev, NULL) == CL_INVALID_VALUE,
          "num_entries 0 with a list");
    CHECK(clCreateContext(NULL, 0, NULL, NULL, NULL, &err) == NULL && err == CL_INVALID_VALUE,
          "context of no device");

    cl_platform_id p2;
    CL(clGetDeviceInfo(dev, CL_DEVICE_PLATFORM, sizeof(p2), &p2, NULL));
    CHECK(p2 == plat, "CL_DEVICE_PLATFORM is the platform held");
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)plat, 0};
    cl_context ctx = clCreateContext(props, 1, &dev, NULL, NULL, &err);
    CHECK(ctx && err == CL_SUCCESS, "clCreateContext with a platform property");
    cl_device_id d2;
    CL(clGetContextInfo(ctx, CL_CONTEXT_DEVICES, sizeof(d2), &d2, NULL));
    CHECK(d2 == dev, "CL_CONTEXT_DEVICES");
    cl_context_properties p3[3];
    size_t sz;
    CL(clGetContextInfo(ctx, CL_CONTEXT_PROPERTIES, sizeof(p3), p3, &sz));
    CHECK(sz == sizeof(p3) && p3[1] == (cl_context_properties)plat, "CL_CONTEXT_PROPERTIES");

    cl_command_queue q = clCreateCommandQueue(ctx, dev, CL_QUEUE_PROFILING_ENABLE, &err);
    CHECK(q && err == CL_SUCCESS, "clCreateCommandQueue");
    cl_context c2;
    CL(clGetCommandQueueInfo(q, CL_QUEUE_CONTEXT, sizeof(c2), &c2, NULL));
    CHECK(c2 == ctx, "CL_QUEUE_CONTEXT");
    CL(clGetCommandQueueInfo(q, CL_QUEUE_DEVICE, sizeof(d2), &d2, NULL));
    CHECK(d2 == dev, "CL_QUEUE_DEVICE");
    cl_uint refs;
    CL(clRetainCommandQueue(q));
    CL(clGetCommandQueueInfo(q, CL_QUEUE_REFERENCE_COUNT, sizeof(refs), &refs, NULL));
    SAY("queue references after retain: %u\n", refs);
    CL(clReleaseCommandQueue(q));

    /* Buffers: host pointer flags, sub-buffers, fill, copy, rect, map. */
    enum { N = 4096 };
    float *host = malloc(N * sizeof(float));
    for (int i = 0; i < N; i++)
        host[i] = (float)i;
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_COPY_HOST_PTR, N * sizeof(float), host, &err);
    CHECK(buf && err == CL_SUCCESS, "buffer from host data");
    CHECK(clCreateBuffer(ctx, 0, 0, NULL, &err) == NULL && err == CL_INVALID_BUFFER_SIZE,
          "zero-size buffer");
    CHECK(clCreateBuffer(ctx, CL_MEM_COPY_HOST_PTR, 16, NULL, &err) == NULL &&
              err == CL_INVALID_HOST_PTR, "COPY_HOST_PTR without a pointer");
    CL(clGetMemObjectInfo(buf, CL_MEM_CONTEXT, sizeof(c2), &c2, NULL));
    CHECK(c2 == ctx, "CL_MEM_CONTEXT");
    size_t msize;
    CL(clGetMemObjectInfo(buf, CL_MEM_SIZE, sizeof(msize), &msize, NULL));
    SAY("buffer size %zu\n", msize);
    cl_buffer_region reg = {1024 * sizeof(float), 1024 * sizeof(float)};
    cl_mem sub = clCreateSubBuffer(buf, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &reg, &err);
    CHECK(sub && err == CL_SUCCESS, "sub-buffer");
    cl_mem parent;
    CL(clGetMemObjectInfo(sub, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof(parent), &parent, NULL));
    CHECK(parent == buf, "CL_MEM_ASSOCIATED_MEMOBJECT");
    float got[8];
    CL(clEnqueueReadBuffer(q, sub, CL_TRUE, 0, sizeof(got), got, 0, NULL, NULL));
    SAY("sub-buffer reads %g %g\n", got[0], got[7]);
    CHECK(clEnqueueReadBuffer(q, buf, CL_TRUE, N * sizeof(float) - 4, 8, got, 0, NULL, NULL) ==
              CL_INVALID_VALUE, "read past the end");
    int pattern = 7;
    cl_mem ibuf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(int), NULL, &err);
    CL(clEnqueueFillBuffer(q, ibuf, &pattern, sizeof(pattern), 0, N * sizeof(int), 0, NULL, NULL));
    cl_mem ibuf2 = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(int), NULL, &err);
    CL(clEnqueueCopyBuffer(q, ibuf, ibuf2, 0, 0, N * sizeof(int), 0, NULL, NULL));
    int *ih = malloc(N * sizeof(int));
    CL(clEnqueueReadBuffer(q, ibuf2, CL_TRUE, 0, N * sizeof(int), ih, 0, NULL, NULL));
    SAY("fill+copy: %d %d\n", ih[0], ih[N - 1]);

    /* Rect transfers: a 16x16 window of a 64x64 int matrix, host pitch 80. */
    int *mat = calloc(80 * 64, sizeof(int));
    for (int y = 0; y < 64; y++)
        for (int x = 0; x < 64; x++)
            mat[y * 80 + x] = y * 100 + x;
    size_t bo[3] = {8 * sizeof(int), 4, 0}, ho[3] = {2 * sizeof(int), 3, 0};
    size_t rg[3] = {16 * sizeof(int), 16, 1};
    CL(clEnqueueWriteBufferRect(q, ibuf, CL_TRUE, bo, ho, rg, 64 * sizeof(int), 0,
                                80 * sizeof(int), 0, mat, 0, NULL, NULL));
    int *back = calloc(80 * 64, sizeof(int));
    for (int i = 0; i < 80 * 64; i++)
        back[i] = -1;
    CL(clEnqueueReadBufferRect(q, ibuf, CL_TRUE, bo, ho, rg, 64 * sizeof(int), 0,
                               80 * sizeof(int), 0, back, 0, NULL, NULL));
    int same = 1, untouched = 1;
    for (int y = 0; y < 64; y++)
        for (int x = 0; x < 80; x++) {
            int in = y >= 3 && y < 19 && x >= 2 && x < 18;
            if (in && back[y * 80 + x] != mat[y * 80 + x])
                same = 0;
            if (!in && back[y * 80 + x] != -1)
                untouched = 0;
        }
    CHECK(same, "rect read returns the rect written");
    CHECK(untouched, "rect read writes nothing outside the rect");

    void *mp = clEnqueueMapBuffer(q, buf, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, 64, 0, NULL,
                                  NULL, &err);
    CHECK(mp && err == CL_SUCCESS, "map");
    if (mp) {
        SAY("mapped %g\n", ((float *)mp)[3]);
        ((float *)mp)[3] = 42.0f;
        CL(clEnqueueUnmapMemObject(q, buf, mp, 0, NULL, NULL));
    }
    CL(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof(got), got, 0, NULL, NULL));
    SAY("after unmap %g\n", got[3]);

    /* Programs and kernels. */
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(prog && err == CL_SUCCESS, "program from source");
    CL(clBuildProgram(prog, 1, &dev, "-cl-kernel-arg-info", NULL, NULL));
    cl_build_status bs;
    CL(clGetProgramBuildInfo(prog, dev, CL_PROGRAM_BUILD_STATUS, sizeof(bs), &bs, NULL));
    SAY("build status %d\n", bs);
    CL(clGetProgramInfo(prog, CL_PROGRAM_CONTEXT, sizeof(c2), &c2, NULL));
    CHECK(c2 == ctx, "CL_PROGRAM_CONTEXT");
    char names[256];
    CL(clGetProgramInfo(prog, CL_PROGRAM_KERNEL_NAMES, sizeof(names), names, NULL));
    SAY("kernels: %s\n", names);
    cl_program bad = clCreateProgramWithSource(ctx, 1, (const char *[]){"kernel void f( {"}, NULL,
                                               &err);
    CHECK(clBuildProgram(bad, 0, NULL, NULL, on_built, &built) == CL_BUILD_PROGRAM_FAILURE,
          "a bad program fails to build");
    CL(clGetProgramBuildInfo(bad, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &sz));
    CHECK(sz > 1, "the failed build has a log");
    const uintptr_t bad_prog = (uintptr_t)bad;
    CL(clReleaseProgram(bad));

    cl_kernel k = clCreateKernel(prog, "scale", &err);
    CHECK(k && err == CL_SUCCESS, "clCreateKernel");
    CHECK(clCreateKernel(prog, "nope", &err) == NULL && err == CL_INVALID_KERNEL_NAME,
          "unknown kernel name");
    cl_program p4;
    CL(clGetKernelInfo(k, CL_KERNEL_PROGRAM, sizeof(p4), &p4, NULL));
    CHECK(p4 == prog, "CL_KERNEL_PROGRAM");
    cl_uint nargs;
    CL(clGetKernelInfo(k, CL_KERNEL_NUM_ARGS, sizeof(nargs), &nargs, NULL));
    SAY("scale has %u args\n", nargs);
    char aname[64];
    CL(clGetKernelArgInfo(k, 3, CL_KERNEL_ARG_TYPE_NAME, sizeof(aname), aname, NULL));
    SAY("arg 3 type %s\n", aname);
    size_t wg;
    CL(clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof(wg), &wg, NULL));
    CHECK(clSetKernelArg(k, 9, 4, &pattern) == CL_INVALID_ARG_INDEX, "arg index out of range");
    float kf = 2.0f;
    struct {
        int a;
        float b;
    } pr = {3, 0.5f};
    CL(clSetKernelArg(k, 0, sizeof(cl_mem), &buf));
    CL(clSetKernelArg(k, 1, sizeof(float), &kf));
    CL(clSetKernelArg(k, 2, 64 * sizeof(float), NULL));
    CL(clSetKernelArg(k, 3, sizeof(pr), &pr));
    size_t gsz = N, lsz = 64;
    cl_event ev;
    CL(clEnqueueNDRangeKernel(q, k, 1, NULL, &gsz, &lsz, 0, NULL, &ev));
    CL(clWaitForEvents(1, &ev));
    cl_command_queue q2;
    CL(clGetEventInfo(ev, CL_EVENT_COMMAND_QUEUE, sizeof(q2), &q2, NULL));
    CHECK(q2 == q, "CL_EVENT_COMMAND_QUEUE");
    cl_command_type ct;
    CL(clGetEventInfo(ev, CL_EVENT_COMMAND_TYPE, sizeof(ct), &ct, NULL));
    SAY("event command type %#x\n", ct);
    cl_ulong t0, t1;
    CL(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof(t0), &t0, NULL));
    CL(clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof(t1), &t1, NULL));
    CHECK(t1 >= t0, "profiling times in order");
    CL(clReleaseEvent(ev));
    /* Launch again with one argument changed (the others stay cached). */
    kf = 0.5f;
    CL(clSetKernelArg(k, 1, sizeof(float), &kf));
    CL(clEnqueueNDRangeKernel(q, k, 1, NULL, &gsz, &lsz, 0, NULL, NULL));
    CL(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, N * sizeof(float), host, 0, NULL, NULL));
    SAY("scaled: %g %g %g\n", host[0], host[3], host[N - 1]);

    cl_kernel kc = clCloneKernel(k, &err);
    if (kc) {
        CL(clEnqueueNDRangeKernel(q, kc, 1, NULL, &gsz, &lsz, 0, NULL, NULL));
        CL(clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof(got), got, 0, NULL, NULL));
        SAY("clone: %g\n", got[1]);
        clReleaseKernel(kc);
    }

    cl_kernel ks[4];
    cl_uint nk;
    CL(clCreateKernelsInProgram(prog, 4, ks, &nk));
    SAY("kernels in program: %u\n", nk);
    for (cl_uint i = 0; i < nk; i++)
        clReleaseKernel(ks[i]);

    /* Binaries round trip. */
    size_t binsize;
    CL(clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof(binsize), &binsize, NULL));
    unsigned char *bin = malloc(binsize);
    CL(clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof(bin), &bin, NULL));
    cl_int bstat;
    cl_program pb = clCreateProgramWithBinary(ctx, 1, &dev, &binsize,
                                              (const unsigned char **)&bin, &bstat, &err);
    CHECK(pb && err == CL_SUCCESS && bstat == CL_SUCCESS, "program from its binary");
    CL(clBuildProgram(pb, 1, &dev, NULL, NULL, NULL));
    cl_kernel kb = clCreateKernel(pb, "fill", &err);
    int base = 100;
    CL(clSetKernelArg(kb, 0, sizeof(cl_mem), &ibuf));
    CL(clSetKernelArg(kb, 1, sizeof(int), &base));
    CL(clEnqueueTask(q, kb, 0, NULL, NULL));
    CL(clEnqueueReadBuffer(q, ibuf, CL_TRUE, 0, sizeof(int), ih, 0, NULL, NULL));
    SAY("task from binary wrote %d\n", ih[0]);
    clReleaseKernel(kb);
    clReleaseProgram(pb);
    free(bin);

    /* User events gate commands; markers and barriers. */
    cl_event ue = clCreateUserEvent(ctx, &err);
    CHECK(ue && err == CL_SUCCESS, "user event");
    cl_event after;
    CL(clEnqueueMarkerWithWaitList(q, 1, &ue, &after));
    cl_int st;
    CL(clGetEventInfo(after, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL));
    CHECK(st != CL_COMPLETE, "marker waits for the user event");
    CL(clSetUserEventStatus(ue, CL_COMPLETE));
    CL(clWaitForEvents(1, &after));
    CL(clEnqueueBarrierWithWaitList(q, 0, NULL, NULL));
    CL(clFinish(q));
    clReleaseEvent(after);
    clReleaseEvent(ue);

    /* Images and samplers. */
    cl_image_format fmt = {CL_RGBA, CL_FLOAT};
    cl_image_desc desc = {.image_type = CL_MEM_OBJECT_IMAGE2D, .image_width = 8, .image_height = 4};
    float pix[8 * 4 * 4];
    for (int i = 0; i < 8 * 4 * 4; i++)
        pix[i] = (float)i;
    cl_mem im_in = clCreateImage(ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, &fmt, &desc, pix,
                                 &err);
    CHECK(im_in && err == CL_SUCCESS, "image from host data");
    cl_mem im_out = clCreateImage(ctx, CL_MEM_WRITE_ONLY, &fmt, &desc, NULL, &err);
    cl_sampler smp = clCreateSampler(ctx, CL_FALSE, CL_ADDRESS_CLAMP_TO_EDGE, CL_FILTER_NEAREST,
                                     &err);
    CHECK(smp && err == CL_SUCCESS, "sampler");
    CL(clGetSamplerInfo(smp, CL_SAMPLER_CONTEXT, sizeof(c2), &c2, NULL));
    CHECK(c2 == ctx, "CL_SAMPLER_CONTEXT");
    cl_kernel ki = clCreateKernel(prog, "img", &err);
    CL(clSetKernelArg(ki, 0, sizeof(cl_mem), &im_in));
    CL(clSetKernelArg(ki, 1, sizeof(cl_mem), &im_out));
    CL(clSetKernelArg(ki, 2, sizeof(cl_sampler), &smp));
    size_t g2[2] = {8, 4};
    CL(clEnqueueNDRangeKernel(q, ki, 2, NULL, g2, NULL, 0, NULL, NULL));
    float out[8 * 4 * 4];
    size_t origin[3] = {0, 0, 0}, region[3] = {8, 4, 1};
    CL(clEnqueueReadImage(q, im_out, CL_TRUE, origin, region, 0, 0, out, 0, NULL, NULL));
    SAY("image: %g %g\n", out[5], out[127]);
    size_t w;
    CL(clGetImageInfo(im_out, CL_IMAGE_WIDTH, sizeof(w), &w, NULL));
    SAY("image width %zu\n", w);
    /* What clGetImageInfo says of images of each shape (libvocl answers
     * what the creation said itself): the same as natively, fields that do
     * not apply 0 whatever the descriptor held. */
    cl_image_desc shapes[] = {
        {.image_type = CL_MEM_OBJECT_IMAGE1D, .image_width = 16, .image_height = 7,
         .image_depth = 5, .image_array_size = 3},
        {.image_type = CL_MEM_OBJECT_IMAGE1D_ARRAY, .image_width = 16, .image_height = 7,
         .image_array_size = 3},
        {.image_type = CL_MEM_OBJECT_IMAGE2D, .image_width = 16, .image_height = 7,
         .image_depth = 5},
        {.image_type = CL_MEM_OBJECT_IMAGE2D_ARRAY, .image_width = 16, .image_height = 7,
         .image_array_size = 3},
        {.image_type = CL_MEM_OBJECT_IMAGE3D, .image_width = 16, .image_height = 7,
         .image_depth = 5, .image_array_size = 3},
    };
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        cl_image_format f8 = {CL_RGBA, CL_UNSIGNED_INT8};
        cl_mem im = clCreateImage(ctx, CL_MEM_READ_WRITE, &f8, &shapes[i], NULL, &err);
        CHECK(im && err == CL_SUCCESS, "an image of each shape");
        if (!im)
            continue;
        static const cl_image_info sizes[] = {CL_IMAGE_ELEMENT_SIZE, CL_IMAGE_ROW_PITCH,
                                              CL_IMAGE_WIDTH,        CL_IMAGE_HEIGHT,
                                              CL_IMAGE_DEPTH,        CL_IMAGE_ARRAY_SIZE};
        char line[256];
        int at = snprintf(line, sizeof(line), "image of type %#x:",
                          (unsigned)shapes[i].image_type);
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            size_t v = 99, got = 0;
            CL(clGetImageInfo(im, sizes[k], sizeof(v), &v, &got));
            at += snprintf(line + at, sizeof(line) - (size_t)at, " %zu (%zu B)", v, got);
        }
        cl_image_format back = {0, 0};
        cl_uint mips = 99, samples = 99;
        cl_mem under = (cl_mem)1;
        CL(clGetImageInfo(im, CL_IMAGE_FORMAT, sizeof(back), &back, NULL));
        CL(clGetImageInfo(im, CL_IMAGE_NUM_MIP_LEVELS, sizeof(mips), &mips, NULL));
        CL(clGetImageInfo(im, CL_IMAGE_NUM_SAMPLES, sizeof(samples), &samples, NULL));
        CL(clGetImageInfo(im, CL_IMAGE_BUFFER, sizeof(under), &under, NULL));
        SAY("%s; format %#x %#x, mips %u, samples %u, buffer %s\n", line,
            (unsigned)back.image_channel_order, (unsigned)back.image_channel_data_type, mips,
            samples, under ? "set" : "none");
        err = clGetImageInfo(im, CL_IMAGE_WIDTH, 1, &w, NULL);
        SAY("image width into 1 byte: %d\n", err);
        clReleaseMemObject(im);
    }
    cl_uint nfmt;
    CL(clGetSupportedImageFormats(ctx, CL_MEM_READ_WRITE, CL_MEM_OBJECT_IMAGE2D, 0, NULL, &nfmt));
    CHECK(nfmt > 0, "supported image formats");
    /* Image copies, fills, writes, and images to and from buffers. */
    cl_mem im_c = clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err);
    CL(clEnqueueWriteImage(q, im_c, CL_TRUE, origin, region, 0, 0, pix, 0, NULL, NULL));
    size_t o2[3] = {2, 1, 0}, r2[3] = {4, 2, 1};
    CL(clEnqueueCopyImage(q, im_out, im_c, origin, o2, r2, 0, NULL, NULL));
    float color[4] = {9, 8, 7, 6};
    size_t o3[3] = {7, 3, 0}, r3[3] = {1, 1, 1};
    CL(clEnqueueFillImage(q, im_c, color, o3, r3, 0, NULL, NULL));
    cl_mem ibuf3 = clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(pix), NULL, &err);
    CL(clEnqueueCopyImageToBuffer(q, im_c, ibuf3, origin, region, 0, 0, NULL, NULL));
    CL(clEnqueueCopyBufferToImage(q, ibuf3, im_out, 0, origin, region, 0, NULL, NULL));
    CL(clEnqueueReadImage(q, im_out, CL_TRUE, origin, region, 0, 0, out, 0, NULL, NULL));
    SAY("image copies: %g %g %g\n", out[0], out[(1 * 8 + 2) * 4 + 1], out[127]);
    size_t mrp = 0;
    float *mimg = clEnqueueMapImage(q, im_c, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, o2, r2, &mrp,
                                    NULL, 0, NULL, NULL, &err);
    CHECK(mimg && err == CL_SUCCESS, "map image");
    if (mimg) {
        float first = mimg[0];
        mimg[mrp / sizeof(float) + 1] = 77.0f; /* second row, first pixel, green */
        CL(clEnqueueUnmapMemObject(q, im_c, mimg, 0, NULL, NULL));
        float px[4];
        size_t o4[3] = {2, 2, 0};
        CL(clEnqueueReadImage(q, im_c, CL_TRUE, o4, r3, 0, 0, px, 0, NULL, NULL));
        SAY("mapped image: first %g, written back %g\n", first, px[1]);
    }
    cl_mem migs[2] = {ibuf3, im_c};
    CL(clEnqueueMigrateMemObjects(q, 2, migs, 0, 0, NULL, NULL));
    clReleaseMemObject(ibuf3);
    clReleaseMemObject(im_c);

    /* clSetKernelArg's own errors: argument kinds from the source, and
     * from the native argument info (a program from binaries). */
    cl_program ps = clCreateProgramWithSource(ctx, 1, &sig_src, NULL, &err);
    CL(clBuildProgram(ps, 1, &dev, NULL, NULL, NULL));
    cl_kernel ksig = clCreateKernel(ps, "sig", &err);
    CHECK(ksig && err == CL_SUCCESS, "kernel with #define'd names and attributes");
    sig_arg_errors("source", ksig, buf, ibuf, im_in, smp, 1);
    sig_run("from source", q, ksig, buf, ibuf, im_in, smp);
    size_t sigsize;
    CL(clGetProgramInfo(ps, CL_PROGRAM_BINARY_SIZES, sizeof(sigsize), &sigsize, NULL));
    unsigned char *sigbin = malloc(sigsize);
    CL(clGetProgramInfo(ps, CL_PROGRAM_BINARIES, sizeof(sigbin), &sigbin, NULL));
    cl_program psb = clCreateProgramWithBinary(ctx, 1, &dev, &sigsize,
                                               (const unsigned char **)&sigbin, NULL, &err);
    CL(clBuildProgram(psb, 1, &dev, NULL, NULL, NULL));
    cl_kernel ksb;
    cl_uint nksb = 0;
    CL(clCreateKernelsInProgram(psb, 1, &ksb, &nksb));
    if (nksb == 1) {
        sig_arg_errors("binary", ksb, buf, ibuf, im_in, smp, 0);
        sig_run("from binary", q, ksb, buf, ibuf, im_in, smp);
        cl_kernel ksc = clCloneKernel(ksb, &err);
        CHECK(ksc && err == CL_SUCCESS, "clone of the kernel from binary");
        if (ksc) {
            SAY("setarg clone local with a value: %d\n", clSetKernelArg(ksc, 4, 4, &err));
            clReleaseKernel(ksc);
        }
        clReleaseKernel(ksb);
    }
    /* A signature the parser cannot read (a function-like macro), built
     * without argument info: arguments still work, judged by their values. */
    const char *fm_src = "#define ARG(t, n) t n\n"
                         "kernel void fm(ARG(global int *, y), int v) { y[1] = v; }\n";
    cl_program pfm = clCreateProgramWithSource(ctx, 1, &fm_src, NULL, &err);
    CL(clBuildProgram(pfm, 1, &dev, NULL, NULL, NULL));
    cl_kernel kfm = clCreateKernel(pfm, "fm", &err);
    int v = 33;
    CL(clSetKernelArg(kfm, 0, sizeof(cl_mem), &ibuf));
    CL(clSetKernelArg(kfm, 1, sizeof(v), &v));
    CL(clEnqueueTask(q, kfm, 0, NULL, NULL));
    CL(clEnqueueReadBuffer(q, ibuf, CL_TRUE, sizeof(int), sizeof(int), &v, 0, NULL, NULL));
    SAY("unparsed kernel wrote %d\n", v);
    clReleaseKernel(kfm);
    clReleaseProgram(pfm);
    clReleaseKernel(ksig);
    clReleaseProgram(psb);
    clReleaseProgram(ps);
    free(sigbin);

    clReleaseKernel(ki);
    clReleaseSampler(smp);
    clReleaseMemObject(im_in);
    clReleaseMemObject(im_out);

    /* OpenCL 1.1 markers and barriers, flush, queues with properties. */
    cl_event m11;
    CL(clEnqueueMarker(q, &m11));
    /* (PoCL 3.1 aborts in clEnqueueWaitForEvents: not called natively.) */
    CL(clEnqueueBarrier(q));
    CL(clFlush(q));
    CL(clWaitForEvents(1, &m11));
    clReleaseEvent(m11);
    cl_queue_properties qp[] = {CL_QUEUE_PROPERTIES, CL_QUEUE_PROFILING_ENABLE, 0};
    cl_command_queue q3 = clCreateCommandQueueWithProperties(ctx, dev, qp, &err);
    CHECK(q3 && err == CL_SUCCESS, "clCreateCommandQueueWithProperties");
    cl_command_queue_properties gotp = 0;
    CL(clGetCommandQueueInfo(q3, CL_QUEUE_PROPERTIES, sizeof(gotp), &gotp, NULL));
    SAY("queue properties %#llx\n", (unsigned long long)gotp);
    clReleaseCommandQueue(q3);
    cl_sampler_properties sp[] = {CL_SAMPLER_NORMALIZED_COORDS, CL_TRUE, 0};
    cl_sampler s2 = clCreateSamplerWithProperties(ctx, sp, &err);
    CHECK(s2 && err == CL_SUCCESS, "clCreateSamplerWithProperties");
    cl_bool norm = 0;
    CL(clGetSamplerInfo(s2, CL_SAMPLER_NORMALIZED_COORDS, sizeof(norm), &norm, NULL));
    SAY("sampler normalized %u\n", norm);
    clReleaseSampler(s2);

    /* Separate compilation: a header program, compile, link. */
    const char *hdr_src = "#define TWICE(x) ((x) * 2)\n";
    const char *main_src = "#include \"twice.h\"\n"
                           "kernel void tw(global int *y) { y[get_global_id(0)] = TWICE(21); }\n";
    cl_program ph = clCreateProgramWithSource(ctx, 1, &hdr_src, NULL, &err);
    cl_program pm = clCreateProgramWithSource(ctx, 1, &main_src, NULL, &err);
    const char *hname = "twice.h";
    CL(clCompileProgram(pm, 1, &dev, NULL, 1, &ph, &hname, on_built, &built));
    cl_program pl = clLinkProgram(ctx, 1, &dev, NULL, 1, &pm, on_built, &built, &err);
    CHECK(pl && err == CL_SUCCESS, "clLinkProgram");
    SAY("build notifications: %d (failed build, compile, link)\n", built_wait(3));
    CHECK(built.prog[0] == bad_prog && built.prog[1] == (uintptr_t)pm &&
              built.prog[2] == (uintptr_t)pl,
          "each names its program, with the user_data given");
    if (pl) {
        cl_kernel kt = clCreateKernel(pl, "tw", &err);
        /* (kinds from the linked input's source) */
        SAY("setarg linked buffer size 4: %d\n", clSetKernelArg(kt, 0, 4, &ibuf));
        CL(clSetKernelArg(kt, 0, sizeof(cl_mem), &ibuf));
        size_t one = 1;
        CL(clEnqueueNDRangeKernel(q, kt, 1, NULL, &one, NULL, 0, NULL, NULL));
        CL(clEnqueueReadBuffer(q, ibuf, CL_TRUE, 0, sizeof(int), ih, 0, NULL, NULL));
        SAY("linked kernel wrote %d\n", ih[0]);
        clReleaseKernel(kt);
        clReleaseProgram(pl);
    }
    clReleaseProgram(ph);
    clReleaseProgram(pm);

    /* Many headers, each a program of its own (the proxy once had room
     * for the names of five). */
    enum { NHDR = 24 };
    cl_program hdrs[NHDR];
    const char *hnames[NHDR];
    char hsrc[NHDR][64], hnm[NHDR][16], many_src[NHDR * 24 + 128];
    size_t used = 0;
    for (int i = 0; i < NHDR; i++) {
        snprintf(hsrc[i], sizeof(hsrc[i]), "#define H%d %d\n", i, i);
        snprintf(hnm[i], sizeof(hnm[i]), "h%d.h", i);
        hnames[i] = hnm[i];
        const char *hs = hsrc[i];
        hdrs[i] = clCreateProgramWithSource(ctx, 1, &hs, NULL, &err);
        CL(err);
        used += (size_t)snprintf(many_src + used, sizeof(many_src) - used, "#include \"h%d.h\"\n", i);
    }
    snprintf(many_src + used, sizeof(many_src) - used,
             "kernel void many(global int *y) { y[0] = H%d; }\n", NHDR - 1);
    const char *ms = many_src;
    cl_program pmany = clCreateProgramWithSource(ctx, 1, &ms, NULL, &err);
    CL(err);
    SAY("compile with %d headers: %d\n", NHDR,
        (int)clCompileProgram(pmany, 1, &dev, NULL, NHDR, hdrs, hnames, NULL, NULL));
    clReleaseProgram(pmany);
    for (int i = 0; i < NHDR; i++)
        clReleaseProgram(hdrs[i]);

    /* Work-group sizes a driver refuses at once, not at the next clFinish;
     * each twice, and a good shape between. */
    static const char *wg_src =
        "kernel __attribute__((reqd_work_group_size(4, 1, 1))) void fixed(global int *y)\n"
        "{ y[get_global_id(0)] = 1; }\n"
        "kernel void free_size(global int *y) { if (get_global_id(0) < 16) y[get_global_id(0)] = 2; }\n";
    static const char *const wg_opts[] = {"", "-cl-std=CL2.0", "-cl-std=CL2.0 -cl-uniform-work-group-size"};
    for (int o = 0; o < 3; o++) {
        cl_program pw = clCreateProgramWithSource(ctx, 1, &wg_src, NULL, &err);
        CL(err);
        cl_int berr = clBuildProgram(pw, 1, &dev, wg_opts[o], NULL, NULL);
        SAY("build with '%s': %d\n", wg_opts[o], (int)berr);
        cl_kernel kf = clCreateKernel(pw, "fixed", &err), kv = clCreateKernel(pw, "free_size", &err);
        CL(clSetKernelArg(kf, 0, sizeof(ibuf), &ibuf));
        CL(clSetKernelArg(kv, 0, sizeof(ibuf), &ibuf));
        static const size_t g8 = 8, g10 = 10, l2 = 2, l4 = 4;
        for (int rep = 0; rep < 2; rep++) {
            SAY("  reqd 4, local 2: %d; local 4: %d; no local: %d\n",
                (int)clEnqueueNDRangeKernel(q, kf, 1, NULL, &g8, &l2, 0, NULL, NULL),
                (int)clEnqueueNDRangeKernel(q, kf, 1, NULL, &g8, &l4, 0, NULL, NULL),
                (int)clEnqueueNDRangeKernel(q, kf, 1, NULL, &g8, NULL, 0, NULL, NULL));
            SAY("  global 10, local 4: %d; global 8, local 4: %d\n",
                (int)clEnqueueNDRangeKernel(q, kv, 1, NULL, &g10, &l4, 0, NULL, NULL),
                (int)clEnqueueNDRangeKernel(q, kv, 1, NULL, &g8, &l4, 0, NULL, NULL));
        }
        SAY("  then clFinish: %d\n", (int)clFinish(q));
        clReleaseKernel(kf);
        clReleaseKernel(kv);
        clReleaseProgram(pw);
    }

    /* Timers and sub-devices, where the device has them. */
    cl_ulong dts, hts;
    SAY("device and host timer: %s\n",
        clGetDeviceAndHostTimer(dev, &dts, &hts) == CL_SUCCESS ? "ok" : "not available");
    cl_uint cus = 0;
    CL(clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof(cus), &cus, NULL));
    cl_device_partition_property pp[] = {CL_DEVICE_PARTITION_EQUALLY, 1, 0};
    cl_uint nsub = 0;
    cl_int perr = clCreateSubDevices(dev, pp, 0, NULL, &nsub);
    SAY("sub-devices: %s\n", perr == CL_SUCCESS && nsub == cus ? "one per compute unit"
                            : perr == CL_SUCCESS ? "other count" : "not available");
    if (perr == CL_SUCCESS && nsub > 0) {
        cl_device_id *subs = malloc(nsub * sizeof(*subs));
        CL(clCreateSubDevices(dev, pp, nsub, subs, NULL));
        cl_device_id par;
        CL(clGetDeviceInfo(subs[0], CL_DEVICE_PARENT_DEVICE, sizeof(par), &par, NULL));
        CHECK(par == dev, "CL_DEVICE_PARENT_DEVICE");
        for (cl_uint i = 0; i < nsub; i++)
            CL(clReleaseDevice(subs[i]));
        free(subs);
    }

    CL(clReleaseMemObject(sub));

    /* What a driver says of flags, gated commands and device queues: the
     * values are printed, so compare.sh holds VOCL to the native ones. */
    static const cl_mem_flags flag_cases[] = {CL_MEM_HOST_READ_ONLY, CL_MEM_HOST_WRITE_ONLY,
                                              CL_MEM_ALLOC_HOST_PTR, CL_MEM_READ_ONLY};
    for (size_t i = 0; i < sizeof(flag_cases) / sizeof(flag_cases[0]); i++) {
        cl_mem m = clCreateBuffer(ctx, flag_cases[i], 64, NULL, &err);
        CL(err);
        cl_mem_flags got = 0;
        CL(clGetMemObjectInfo(m, CL_MEM_FLAGS, sizeof(got), &got, NULL));
        SAY("CL_MEM_FLAGS of a buffer made with %#llx: %#llx\n",
            (unsigned long long)flag_cases[i], (unsigned long long)got);
        cl_buffer_region half = {0, 32};
        cl_mem sb = clCreateSubBuffer(m, 0, CL_BUFFER_CREATE_TYPE_REGION, &half, &err);
        CL(err);
        CL(clGetMemObjectInfo(sb, CL_MEM_FLAGS, sizeof(got), &got, NULL));
        SAY("  its sub-buffer made with 0: %#llx\n", (unsigned long long)got);
        CL(clReleaseMemObject(sb));
        CL(clReleaseMemObject(m));
    }
    cl_event gate = clCreateUserEvent(ctx, &err), gated[3];
    CL(err);
    cl_kernel kfill = clCreateKernel(prog, "fill", &err);
    CL(err);
    int fill_v = 7, fill_back = 0;
    size_t one = 1;
    CL(clSetKernelArg(kfill, 0, sizeof(ibuf), &ibuf));
    CL(clSetKernelArg(kfill, 1, sizeof(fill_v), &fill_v));
    CL(clEnqueueMarkerWithWaitList(q, 1, &gate, &gated[0]));
    CL(clEnqueueNDRangeKernel(q, kfill, 1, NULL, &one, NULL, 1, &gate, &gated[1]));
    CL(clEnqueueReadBuffer(q, ibuf, CL_FALSE, 0, sizeof(fill_back), &fill_back, 1, &gate,
                           &gated[2]));
    CL(clFlush(q));
    static const char *const gated_what[3] = {"marker", "kernel", "read"};
    for (int i = 0; i < 3; i++) {
        CL(clGetEventInfo(gated[i], CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(st), &st, NULL));
        SAY("a %s gated by an unset user event is %s\n", gated_what[i],
            st == CL_QUEUED || st == CL_SUBMITTED ? "queued or submitted"
            : st == CL_RUNNING                    ? "running"
                                                  : "complete or failed");
    }
    CL(clSetUserEventStatus(gate, CL_COMPLETE));
    CL(clWaitForEvents(3, gated));
    SAY("the gated kernel wrote %d\n", fill_back);
    for (int i = 0; i < 3; i++)
        clReleaseEvent(gated[i]);
    clReleaseEvent(gate);
    clReleaseKernel(kfill);
    cl_image_format ffmt = {CL_RGBA, CL_FLOAT};
    cl_image_desc fdesc = {.image_type = CL_MEM_OBJECT_IMAGE2D, .image_width = 4,
                           .image_height = 4};
    for (size_t i = 0; i < sizeof(flag_cases) / sizeof(flag_cases[0]); i++) {
        cl_mem im = clCreateImage(ctx, flag_cases[i], &ffmt, &fdesc, NULL, &err);
        CL(err);
        cl_mem_flags got = 0;
        CL(clGetMemObjectInfo(im, CL_MEM_FLAGS, sizeof(got), &got, NULL));
        SAY("CL_MEM_FLAGS of an image made with %#llx: %#llx\n",
            (unsigned long long)flag_cases[i], (unsigned long long)got);
        CL(clReleaseMemObject(im));
    }
    /* Host access flags: what they forbid fails at once; maps they allow
     * work, on buffers, sub-buffers and images, with the data intact. */
    static const cl_mem_flags host_cases[] = {CL_MEM_HOST_WRITE_ONLY, CL_MEM_HOST_READ_ONLY,
                                              CL_MEM_HOST_NO_ACCESS};
    cl_uint align_bits = 0;
    CL(clGetDeviceInfo(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof(align_bits), &align_bits, NULL));
    for (size_t i = 0; i < 3; i++) {
        int seed[1024];
        for (int j = 0; j < 1024; j++)
            seed[j] = 100 + j;
        cl_mem hb = clCreateBuffer(ctx, host_cases[i] | CL_MEM_COPY_HOST_PTR, sizeof(seed), seed,
                                   &err);
        CL(err);
        cl_buffer_region half = {align_bits / 8, sizeof(int)};
        cl_mem hs = clCreateSubBuffer(hb, 0, CL_BUFFER_CREATE_TYPE_REGION, &half, &err);
        CL(err);
        static int back[1024];
        SAY("host flags %#llx: read %d, write %d\n", (unsigned long long)host_cases[i],
            (int)clEnqueueReadBuffer(q, hb, CL_TRUE, 0, sizeof(back), back, 0, NULL, NULL),
            (int)clEnqueueWriteBuffer(q, hb, CL_TRUE, 0, sizeof(back), back, 0, NULL, NULL));
        for (int sub = 0; sub < 2; sub++) {
            cl_mem m = sub ? hs : hb;
            cl_map_flags how = host_cases[i] == CL_MEM_HOST_READ_ONLY ? CL_MAP_READ : CL_MAP_WRITE;
            int *p = clEnqueueMapBuffer(q, m, CL_TRUE, how, 0, sizeof(int), 0, NULL, NULL, &err);
            SAY("  map %s of the %s: %d\n", how == CL_MAP_READ ? "read" : "write",
                sub ? "sub-buffer" : "buffer", (int)err);
            if (p && how == CL_MAP_READ)
                SAY("  it reads %d\n", p[0]);
            if (p && how == CL_MAP_WRITE)
                p[0] = 7;
            if (p)
                CL(clEnqueueUnmapMemObject(q, m, p, 0, NULL, NULL));
            CL(clFinish(q));
        }
        CL(clReleaseMemObject(hs));
        CL(clReleaseMemObject(hb));
        cl_image_format hf = {CL_RGBA, CL_UNSIGNED_INT8};
        cl_image_desc hd = {.image_type = CL_MEM_OBJECT_IMAGE2D, .image_width = 4,
                            .image_height = 4};
        cl_mem hi = clCreateImage(ctx, host_cases[i], &hf, &hd, NULL, &err);
        CL(err);
        size_t o3[3] = {0, 0, 0}, r3[3] = {4, 4, 1}, pitch = 0;
        unsigned char pix[64] = {0};
        SAY("  image: read %d, write %d", (int)clEnqueueReadImage(q, hi, CL_TRUE, o3, r3, 0, 0,
                                                                  pix, 0, NULL, NULL),
            (int)clEnqueueWriteImage(q, hi, CL_TRUE, o3, r3, 0, 0, pix, 0, NULL, NULL));
        cl_map_flags ihow = host_cases[i] == CL_MEM_HOST_READ_ONLY ? CL_MAP_READ : CL_MAP_WRITE;
        void *ip = clEnqueueMapImage(q, hi, CL_TRUE, ihow, o3, r3, &pitch, NULL, 0, NULL, NULL,
                                     &err);
        SAY(", map: %d\n", (int)err);
        if (ip)
            CL(clEnqueueUnmapMemObject(q, hi, ip, 0, NULL, NULL));
        CL(clFinish(q));
        CL(clReleaseMemObject(hi));
    }

    /* A kernel argument does not keep its object: a release frees it. */
    cl_mem argbuf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64, NULL, &err);
    CL(err);
    atomic_int dtor_ran = 0;
    CL(clSetMemObjectDestructorCallback(argbuf, on_mem_gone, &dtor_ran));
    cl_kernel kd = clCreateKernel(prog, "fill", &err);
    CL(err);
    CL(clSetKernelArg(kd, 0, sizeof(argbuf), &argbuf));
    CL(clReleaseMemObject(argbuf));
    for (int i = 0; i < 500 && !atomic_load(&dtor_ran); i++)
        nanosleep(&(struct timespec){0, 2000000}, NULL); /* up to 1 s */
    SAY("a kernel argument's buffer, released: destructor %s\n",
        atomic_load(&dtor_ran) ? "ran" : "did not run within 1 s");
    CL(clReleaseKernel(kd));
    SAY("clSetDefaultDeviceCommandQueue on a host queue: %d\n",
        (int)clSetDefaultDeviceCommandQueue(ctx, dev, q));

    clReleaseKernel(k);
    clReleaseProgram(prog);
    clReleaseMemObject(buf);
    clReleaseMemObject(ibuf);
    clReleaseMemObject(ibuf2);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
    free(host);
    free(ih);
    free(mat);
    free(back);
    SAY("%d failures\n", failures);
    return failures != 0;
}
