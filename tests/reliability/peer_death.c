/*
 * peer_death.c - an ordinary OpenCL program for the reliability suite: one
 * context and queue per device, a kernel round (write, add one, read, check)
 * on every device, then it stops at a gate while the test kills a proxy or
 * this process (peer_death.sh), then goes on: a round on a device of the
 * dead proxy must fail within 5 s, rounds on the others must still verify.
 *
 *   peer_death GATE DEAD_DEVICE
 * GATE: a path; GATE.ready.RANK is made at the gate (RANK: the MPI rank),
 * GATE.go is awaited.
 * DEAD_DEVICE: the index of a device whose proxy the test kills; -1: none
 * (another application rank is killed): then rounds go on for 8 s on every
 * device, while the proxies notice the death and clean up after it.
 *
 *   peer_death GATE -1 --killed-after-end
 * An MPI program that does its first round on every device, finalizes MPI
 * (its sessions end), prints PASS, then dies by SIGKILL: an application
 * killed at its very end.  The job must still end (vocl-run).
 *
 *   peer_death GATE DEAD_DEVICE --stream | --replies
 * Does not stop at the gate: once GATE.ready.RANK is made it streams 4 MiB
 * writes and reads to DEAD_DEVICE until one fails (the test kills that
 * proxy meanwhile; at most 30 s), then goes on as above.  --replies: the
 * same with 60 KiB, whose reads come back inside their replies, each
 * several of MPI's fragments.  And it is an MPI
 * program: it initialises MPI first, finalizes it when done with OpenCL,
 * then works on for 2 s (as one that writes its results would) before
 * its last line.
 */
#include <CL/cl.h>
#include <mpi.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../integration/cl_check.h"

#define N 4096
#define MAX_DEV 8

static const char *src = "__kernel void inc(__global int *a) { a[get_global_id(0)] += 1; }";

struct dev {
    cl_context ctx;
    cl_command_queue q;
    cl_mem buf;
    cl_kernel k;
};

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One round on d: CL_SUCCESS when it ran and the data came back right. */
static cl_int round_on(struct dev *d, int seed)
{
    static int in[N], out[N];
    size_t gsz = N;
    for (int i = 0; i < N; i++)
        in[i] = seed + i;
    cl_int rc = clEnqueueWriteBuffer(d->q, d->buf, CL_FALSE, 0, sizeof(in), in, 0, NULL, NULL);
    if (rc == CL_SUCCESS)
        rc = clEnqueueNDRangeKernel(d->q, d->k, 1, NULL, &gsz, NULL, 0, NULL, NULL);
    if (rc == CL_SUCCESS)
        rc = clEnqueueReadBuffer(d->q, d->buf, CL_TRUE, 0, sizeof(out), out, 0, NULL, NULL);
    for (int i = 0; rc == CL_SUCCESS && i < N; i++)
        if (out[i] != seed + i + 1) {
            fprintf(stderr, "wrong result at %d: %d, not %d\n", i, out[i], seed + i + 1);
            return CL_INVALID_VALUE;
        }
    return rc;
}

/* Writes and reads of n bytes (at most 4 MiB) on d until one fails: its
 * error (or CL_SUCCESS after 30 s); *streamed: the bytes moved. */
static cl_int stream_until_dead(struct dev *d, size_t n, double *streamed)
{
    enum { BIG = 4 << 20 };
    static unsigned char data[BIG], back[BIG];
    cl_int rc;
    cl_mem big = clCreateBuffer(d->ctx, CL_MEM_READ_WRITE, n, NULL, &rc);
    double until = now() + 30;
    for (int i = 0; rc == CL_SUCCESS && now() < until; i++) {
        memset(data, i, n);
        rc = clEnqueueWriteBuffer(d->q, big, CL_FALSE, 0, n, data, 0, NULL, NULL);
        if (rc == CL_SUCCESS)
            rc = clEnqueueReadBuffer(d->q, big, CL_TRUE, 0, n, back, 0, NULL, NULL);
        if (rc == CL_SUCCESS && memcmp(data, back, n)) {
            fprintf(stderr, "streamed data came back wrong\n");
            rc = CL_INVALID_VALUE;
        }
        if (rc == CL_SUCCESS)
            *streamed += 2.0 * (double)n;
    }
    if (big)
        clReleaseMemObject(big);
    return rc;
}

int main(int argc, char **argv)
{
    bool replies = argc == 4 && !strcmp(argv[3], "--replies");
    bool stream = replies || (argc == 4 && !strcmp(argv[3], "--stream"));
    bool killed = argc == 4 && !strcmp(argv[3], "--killed-after-end");
    if (argc != 3 && !stream && !killed) {
        fprintf(stderr,
                "usage: peer_death GATE DEAD_DEVICE [--stream | --replies | --killed-after-end]\n");
        return 2;
    }
    int provided = 0;
    if ((stream || killed) &&
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "MPI_Init_thread failed\n");
        return 2;
    }
    const char *gate = argv[1], *rank = getenv("PMI_RANK");
    int dead = atoi(argv[2]);
    cl_device_id ids[MAX_DEV];
    cl_uint n = first_devices(ids, MAX_DEV);
    if (dead >= (int)n) {
        fprintf(stderr, "device %d does not exist (%u devices)\n", dead, n);
        return 2;
    }
    struct dev d[MAX_DEV];
    for (cl_uint i = 0; i < n; i++) {
        cl_int rc;
        d[i].ctx = context_on(ids[i]);
        d[i].q = clCreateCommandQueue(d[i].ctx, ids[i], 0, &rc);
        CHECK(rc);
        d[i].buf = clCreateBuffer(d[i].ctx, CL_MEM_READ_WRITE, N * sizeof(int), NULL, &rc);
        CHECK(rc);
        d[i].k = build_kernel(d[i].ctx, ids[i], src, "inc");
        CHECK(clSetKernelArg(d[i].k, 0, sizeof(cl_mem), &d[i].buf));
        CHECK(round_on(&d[i], 100 * (int)i));
    }
    printf("before: %u devices verified\n", n);
    fflush(stdout);
    if (killed) {
        MPI_Finalize();
        printf("PASS\n");
        fflush(stdout);
        raise(SIGKILL);
    }

    char path[4096];
    snprintf(path, sizeof(path), "%s.ready.%s", gate, rank ? rank : "0");
    FILE *f = fopen(path, "w");
    if (!f || fclose(f)) {
        perror(path);
        return 2;
    }
    int bad = 0, rounds = 0;
    cl_int rc;
    if (stream && dead >= 0) {
        double streamed = 0, t0 = now();
        rc = stream_until_dead(&d[dead], replies ? 60 << 10 : 4 << 20, &streamed);
        /* Once failed, a round there must fail (at once) below. */
        printf("streaming to device %d: error %d after %.0f MiB\n", dead, rc, streamed / 1048576);
        fprintf(stderr, "streamed for %.2f s\n", now() - t0);
        if (rc == CL_SUCCESS)
            bad = 1;
    }
    snprintf(path, sizeof(path), "%s.go", gate);
    for (int i = 0; !stream && access(path, F_OK) != 0; i++) {
        if (i > 600) {
            fprintf(stderr, "no %s after 60 s\n", path);
            return 2;
        }
        usleep(100000);
    }

    if (dead >= 0) {
        double t0 = now();
        rc = round_on(&d[dead], 7);
        double took = now() - t0;
        printf("dead device %d: error %d after %.2f s\n", dead, rc, took);
        if (rc == CL_SUCCESS || took > 5.0)
            bad = 1;
        /* It stays failed, at once. */
        t0 = now();
        rc = round_on(&d[dead], 8);
        took = now() - t0;
        printf("dead device %d again: error %d after %.2f s\n", dead, rc, took);
        if (rc == CL_SUCCESS || took > 1.0)
            bad = 1;
    }
    double until = now() + (dead >= 0 ? 0 : 8.0);
    do {
        for (cl_uint i = 0; i < n; i++) {
            if ((int)i == dead)
                continue;
            rc = round_on(&d[i], 1000 * rounds + (int)i);
            if (rc != CL_SUCCESS) {
                printf("device %u: FAILED (%d) in round %d\n", i, rc, rounds);
                bad = 1;
            }
        }
        rounds++;
    } while (!bad && now() < until);
    printf("other devices: %d rounds, %s\n", rounds, bad ? "FAILED" : "verified");
    /* Releases on the dead proxy's objects must not hang either. */
    for (cl_uint i = 0; i < n; i++) {
        clReleaseKernel(d[i].k);
        clReleaseMemObject(d[i].buf);
        clReleaseCommandQueue(d[i].q);
        clReleaseContext(d[i].ctx);
    }
    if (stream) {
        /* libvocl knows a proxy died: this returns at once, unfinalized,
         * and the job must wait for the rest of the program. */
        MPI_Finalize();
        sleep(2);
        printf("2 s of work after MPI_Finalize\n");
    }
    printf("%s\n", bad ? "FAIL" : "PASS");
    fflush(stdout);
    return bad;
}
