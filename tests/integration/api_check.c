/*
 * api_check.c - an ordinary OpenCL program that walks much of the API and
 * prints what it sees, one line per check.  Run natively and under
 * vocl-run, the two outputs must be identical: that is the test.
 * Handles returned by info queries must be the ones the program holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static const char *src =
    "typedef struct { int a; float b; } pair;\n"
    "kernel void scale(global float *x, float k, local float *tmp, pair p) {\n"
    "  size_t i = get_global_id(0); tmp[get_local_id(0)] = x[i] * k + p.a + p.b;\n"
    "  barrier(CLK_LOCAL_MEM_FENCE); x[i] = tmp[get_local_id(0)]; }\n"
    "kernel void fill(global int *y, int v) { y[get_global_id(0)] = v + get_global_id(0); }\n"
    "kernel void img(read_only image2d_t in, write_only image2d_t out, sampler_t s) {\n"
    "  int2 p = (int2)(get_global_id(0), get_global_id(1));\n"
    "  write_imagef(out, p, read_imagef(in, s, p) * 2.0f); }\n";

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
    CHECK(clBuildProgram(bad, 0, NULL, NULL, NULL, NULL) == CL_BUILD_PROGRAM_FAILURE,
          "a bad program fails to build");
    CL(clGetProgramBuildInfo(bad, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &sz));
    CHECK(sz > 1, "the failed build has a log");
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
    CL(clCompileProgram(pm, 1, &dev, NULL, 1, &ph, &hname, NULL, NULL));
    cl_program pl = clLinkProgram(ctx, 1, &dev, NULL, 1, &pm, NULL, NULL, &err);
    CHECK(pl && err == CL_SUCCESS, "clLinkProgram");
    if (pl) {
        cl_kernel kt = clCreateKernel(pl, "tw", &err);
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
