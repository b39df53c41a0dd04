/*
 * racing.c - two threads use one buffer of a context over two devices, with
 * no order between them: one adds 1 to it on the first device while the
 * other reads it on the last.  Natively the reader sees the old or the new
 * values (a race the program allows), but once both commands have ended the
 * buffer holds the write wherever it is read.  Under VOCL the two devices
 * are in different proxies, and the read moves the data; the write must not
 * be lost when that move is decided while the write is still on its way.
 *
 *   racing [-r ROUNDS]
 *
 * Run with VOCL_TEST_POST_DELAY_US set (libvocl waits that long between a
 * command's coherence decision and its request's post) to make that window
 * wide enough to hit every time.  Exits 1 on a lost write.
 */
#include <CL/cl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl_check.h"

#define N 4096

static const char *src = "__kernel void add(__global int *a, int v) { a[get_global_id(0)] += v; }\n";

static cl_command_queue qa, qb;
static cl_kernel add;
static cl_mem buf;
static pthread_barrier_t go;
static int seen[N];

static void *writer(void *arg)
{
    (void)arg;
    size_t n = N;
    pthread_barrier_wait(&go);
    CHECK(clEnqueueNDRangeKernel(qa, add, 1, NULL, &n, NULL, 0, NULL, NULL));
    CHECK(clFlush(qa));
    return NULL;
}

static void *reader(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&go);
    /* After the writer's enqueue has begun: inside libvocl's window. */
    nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    CHECK(clEnqueueReadBuffer(qb, buf, CL_TRUE, 0, sizeof(seen), seen, 0, NULL, NULL));
    return NULL;
}

int main(int argc, char **argv)
{
    int rounds = 5;
    if (argc == 3 && !strcmp(argv[1], "-r"))
        rounds = atoi(argv[2]);
    else if (argc != 1) {
        fprintf(stderr, "usage: racing [-r ROUNDS]\n");
        return 2;
    }
    cl_device_id dev[64];
    cl_uint ndev = first_devices(dev, 64);
    if (ndev < 2) {
        fprintf(stderr, "racing: needs 2 devices, has %u\n", ndev);
        return 1;
    }
    cl_int err;
    cl_device_id two[2] = {dev[0], dev[ndev - 1]};
    cl_context ctx = clCreateContext(NULL, 2, two, NULL, NULL, &err);
    CHECK(err);
    qa = clCreateCommandQueue(ctx, two[0], 0, &err);
    CHECK(err);
    qb = clCreateCommandQueue(ctx, two[1], 0, &err);
    CHECK(err);
    cl_program prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, 0, NULL, NULL, NULL, NULL));
    add = clCreateKernel(prog, "add", &err);
    CHECK(err);
    buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(int), NULL, &err);
    CHECK(err);
    int one = 1;
    CHECK(clSetKernelArg(add, 0, sizeof(buf), &buf));
    CHECK(clSetKernelArg(add, 1, sizeof(one), &one));

    int failures = 0;
    static int init[N], after[N];
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < N; i++)
            init[i] = r * N + i;
        /* The first device holds the latest data. */
        CHECK(clEnqueueWriteBuffer(qa, buf, CL_TRUE, 0, sizeof(init), init, 0, NULL, NULL));
        pthread_barrier_init(&go, NULL, 2);
        pthread_t tw, tr;
        if (pthread_create(&tw, NULL, writer, NULL) || pthread_create(&tr, NULL, reader, NULL)) {
            fprintf(stderr, "racing: cannot start threads\n");
            return 1;
        }
        pthread_join(tw, NULL);
        pthread_join(tr, NULL);
        pthread_barrier_destroy(&go);
        CHECK(clFinish(qa));
        CHECK(clFinish(qb));
        CHECK(clEnqueueReadBuffer(qb, buf, CL_TRUE, 0, sizeof(after), after, 0, NULL, NULL));
        int lost = 0, odd = 0;
        for (int i = 0; i < N; i++) {
            lost += after[i] != init[i] + 1;
            odd += seen[i] != init[i] && seen[i] != init[i] + 1;
        }
        printf("round %d: read during the write %s; after both: %s\n", r,
               odd ? "WRONG (neither old nor new)" : "old or new",
               lost ? "WRONG (the write is lost)" : "the write");
        failures += lost || odd;
    }
    clReleaseMemObject(buf);
    clReleaseKernel(add);
    clReleaseProgram(prog);
    clReleaseCommandQueue(qa);
    clReleaseCommandQueue(qb);
    clReleaseContext(ctx);
    return failures ? 1 : 0;
}
