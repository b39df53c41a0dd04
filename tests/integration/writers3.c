/*
 * writers3.c - three devices write their own parts of one buffer with no
 * order between them, and one part is written back to the value it had:
 * the buffer must end with every device's last writes.
 *
 * Through VOCL, with the devices in three proxies, unordered writers keep
 * twins and merge diffs (libvocl/coherence.c).  Device 0 writes part 0 with
 * 1s behind a kernel that keeps it busy a while; device 1 writes part 1
 * meanwhile (0 and 1 get twins of the zeros); device 0's write ends,
 * unobserved (the host only sleeps); device 2 writes part 2 (it joins from
 * device 0); device 0 writes part 0 back to 0s.  The buffer is read on
 * device 2.  A join that gave device 2 device 0's current bytes (1s) as
 * its base, not the twins' zeros, left part 0 at 1: device 0's write back
 * to 0 matches its twin and is in no diff (issue 35).
 *
 * With the argument 4, four devices: the buffer starts on device 2, which
 * writes part 2; device 0 writes part 0 with 1s behind its busy kernel (it
 * joins from device 2, its twin arriving with the data); device 1 writes
 * part 1 after device 0's write ended (it joins from device 0, whose twin
 * it must wait for); device 0 writes part 0 back to 0s; the buffer is read
 * on device 1.
 *
 * With the argument image, the three devices' writes go to a 2D image (one
 * row, one uint a pixel) instead.  Through VOCL an image gets no twins: a
 * write on one proxy waits for the others' writes and takes the image
 * whole, so no write can be lost, which the test shows with the same steps.
 *
 * Prints each part's values; run natively and under vocl-run, the two
 * outputs must be the same (compare.sh).
 */
#include <CL/cl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cl_check.h"

enum { PART = 64, PARTS = 4, N = PART * PARTS };

static const char *source =
    "__kernel void set(__global uint *x, uint lo, uint hi, uint v)\n"
    "{ for (uint i = lo; i < hi; i++) x[i] = v; }\n"
    "__kernel void seti(__write_only image2d_t x, uint lo, uint hi, uint v)\n"
    "{ for (uint i = lo; i < hi; i++) write_imageui(x, (int2)((int)i, 0), (uint4)(v, 0, 0, 0)); }\n"
    "__kernel void busy(__global uint *s, uint n)\n"
    "{ uint v = s[0]; for (uint i = 0; i < n; i++) v = v * 1664525u + 1013904223u; s[1] = v; }\n";

static void set(cl_command_queue q, cl_kernel k, cl_mem x, cl_uint part, cl_uint v, cl_uint nwl,
                const cl_event *wl)
{
    cl_uint lo = part * PART, hi = lo + PART;
    size_t one = 1;
    CHECK(clSetKernelArg(k, 0, sizeof(x), &x));
    CHECK(clSetKernelArg(k, 1, sizeof(lo), &lo));
    CHECK(clSetKernelArg(k, 2, sizeof(hi), &hi));
    CHECK(clSetKernelArg(k, 3, sizeof(v), &v));
    /* (No clFlush: through VOCL it may tell the host that writes ended.) */
    CHECK(clEnqueueNDRangeKernel(q, k, 1, NULL, &one, NULL, nwl, wl, NULL));
}

int main(int argc, char **argv)
{
    bool image = argc > 1 && !strcmp(argv[1], "image");
    cl_uint n = argc > 1 && argv[1][0] == '4' ? 4 : 3;
    /* Which device holds the buffer first, which joins second and last,
     * and where it is read (the one that joined last). */
    cl_uint first = n == 4 ? 2 : 0, second = n == 4 ? 0 : 1, last = n == 4 ? 1 : 2;
    cl_device_id devs[4];
    if (first_devices(devs, n) < n) {
        fprintf(stderr, "writers3: needs %u devices\n", n);
        return 1;
    }
    cl_int err;
    cl_context ctx = clCreateContext(NULL, n, devs, NULL, NULL, &err);
    CHECK(err);
    cl_command_queue q[4];
    for (cl_uint d = 0; d < n; d++) {
        q[d] = clCreateCommandQueueWithProperties(ctx, devs[d], NULL, &err);
        CHECK(err);
    }
    cl_program prog = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, n, devs, NULL, NULL, NULL));
    cl_kernel k = clCreateKernel(prog, image ? "seti" : "set", &err);
    CHECK(err);
    cl_kernel busy = clCreateKernel(prog, "busy", &err);
    CHECK(err);
    cl_mem scratch = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 2 * sizeof(cl_uint), NULL, &err);
    CHECK(err);
    cl_uint spins = 1u << 26; /* a tenth of a second or more */
    CHECK(clSetKernelArg(busy, 0, sizeof(scratch), &scratch));
    CHECK(clSetKernelArg(busy, 1, sizeof(spins), &spins));
    cl_uint x[N] = {0};
    const cl_image_format fmt = {CL_R, CL_UNSIGNED_INT32};
    const cl_image_desc desc = {.image_type = CL_MEM_OBJECT_IMAGE2D, .image_width = N,
                                .image_height = 1};
    const size_t origin[3] = {0, 0, 0}, region[3] = {N, 1, 1};
    cl_mem buf = image ? clCreateImage(ctx, CL_MEM_READ_WRITE, &fmt, &desc, NULL, &err)
                       : clCreateBuffer(ctx, CL_MEM_READ_WRITE, sizeof(x), NULL, &err);
    CHECK(err);
    if (image)
        CHECK(clEnqueueWriteImage(q[first], buf, CL_TRUE, origin, region, 0, 0, x, 0, NULL, NULL));
    else
        CHECK(clEnqueueWriteBuffer(q[first], buf, CL_TRUE, 0, sizeof(x), x, 0, NULL, NULL));
    CHECK(clFinish(q[first])); /* (VOCL: that write has ended; the next ones may not have) */
    size_t one = 1;
    struct timespec pause = {1, 500 * 1000 * 1000};
    if (n == 4) {
        set(q[first], k, buf, first, first + 1, 0, NULL);
        CHECK(clEnqueueNDRangeKernel(q[second], busy, 1, NULL, &one, NULL, 0, NULL, NULL));
        set(q[second], k, buf, second, 1, 0, NULL); /* runs after busy */
    } else {
        CHECK(clEnqueueNDRangeKernel(q[first], busy, 1, NULL, &one, NULL, 0, NULL, NULL));
        set(q[first], k, buf, first, 1, 0, NULL); /* runs after busy */
        set(q[second], k, buf, second, second + 1, 0, NULL);
    }
    /* The write of 1s ends meanwhile; nothing the host does observes it. */
    nanosleep(&pause, NULL);
    set(q[last], k, buf, last, last + 1, 0, NULL);
    cl_uint back = n == 4 ? second : first;
    set(q[back], k, buf, back, 0, 0, NULL); /* back to what it was */
    for (cl_uint d = 0; d < n; d++)
        CHECK(clFinish(q[d]));
    if (image)
        CHECK(clEnqueueReadImage(q[last], buf, CL_TRUE, origin, region, 0, 0, x, 0, NULL, NULL));
    else
        CHECK(clEnqueueReadBuffer(q[last], buf, CL_TRUE, 0, sizeof(x), x, 0, NULL, NULL));
    for (cl_uint p = 0; p < PARTS; p++) {
        cl_uint lo = x[p * PART], hi = lo, differ = 0;
        for (cl_uint i = p * PART; i < (p + 1) * PART; i++) {
            lo = x[i] < lo ? x[i] : lo;
            hi = x[i] > hi ? x[i] : hi;
            differ += x[i] != x[p * PART];
        }
        printf("part %u: %u..%u, %u values differ from its first\n", p, lo, hi, differ);
    }
    clReleaseMemObject(scratch);
    clReleaseKernel(busy);
    clReleaseMemObject(buf);
    clReleaseKernel(k);
    clReleaseProgram(prog);
    for (cl_uint d = 0; d < n; d++)
        clReleaseCommandQueue(q[d]);
    clReleaseContext(ctx);
    return 0;
}
