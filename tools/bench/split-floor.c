/*
 * split-floor.c - what a round of small commands costs when each device is
 * driven by a process of its own, as VOCL's proxies drive them, with
 * nothing between the processes but their messages: the floor under
 * `vocl-run -n P -d D` on this node, beside the same rounds in one process
 * (docs/report/split-floor).
 *
 * A round is kmer-assemble's traversal round (examples/kmer): for each
 * device, a write of 50 queries (400 bytes), a lookup kernel over a hash
 * table on the device, a read of 50 result bytes; then one wait for all
 * devices.  Every round's results are checked.
 *
 *   --native    one process, all the devices in one context;
 *   --fork P    P forked processes of D devices each, a socket to each: the
 *               application writes each its queries and reads its results;
 *               every wait sleeps in the kernel until its message comes;
 *   (mpiexec)   the same over MPI, rank 0 the application: MPICH's own
 *               waits, or with --yield waits that poll MPI_Test and yield.
 * A server waits for its devices with clWaitForEvents.  Nothing else: no
 * handles to translate, no batching, no threads besides the driver's.
 *
 * Prints one CSV line: mode,devices,rounds,seconds,us_per_round; exits 1 if
 * a round's results are wrong, 2 on bad arguments or an OpenCL error.
 */
#include <CL/cl.h>
#include <mpi.h>

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#define QUERIES  50        /* per device and round, as kmer's rounds */
#define SLOTS    (1u << 16) /* of each device's table */
#define MAX_DEVS 64
#define WARMUP   50

static const char *source =
    "__kernel void lookup(__global const ulong *keys, __global const ulong *q,\n"
    "                     __global uchar *out, uint n, uint mask) {\n"
    "    uint i = get_global_id(0);\n"
    "    if (i >= n) return;\n"
    "    ulong k = q[i];\n"
    "    uint h = (uint)((k * 0x9E3779B97F4A7C15UL) >> 40) & mask;\n"
    "    uchar r = 0;\n"
    "    for (uint p = 0; p < 64; p++) {\n"
    "        ulong v = keys[(h + p) & mask];\n"
    "        if (v == k) { r = 1; break; }\n"
    "        if (v == 0) break;\n"
    "    }\n"
    "    out[i] = r;\n"
    "}\n";

#define CHECK(x)                                                                                   \
    do {                                                                                           \
        cl_int err_ = (x);                                                                         \
        if (err_ != CL_SUCCESS) {                                                                  \
            fprintf(stderr, "split-floor: %s failed: %d\n", #x, err_);                             \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

struct dev {
    cl_command_queue q;
    cl_kernel k;
    cl_mem keys, queries, results;
};

static struct {
    cl_context ctx;
    struct dev d[MAX_DEVS];
    unsigned n;
    uint64_t table[SLOTS];
} cl;

static uint64_t hash_slot(uint64_t k)
{
    return ((k * 0x9E3779B97F4A7C15ull) >> 40) & (SLOTS - 1);
}

/* The same table on every device: the odd keys 1, 3, ... (half full). */
static void make_table(void)
{
    for (uint64_t i = 0; i < SLOTS / 2; i++) {
        uint64_t k = 2 * i + 1, h = hash_slot(k);
        while (cl.table[h])
            h = (h + 1) & (SLOTS - 1);
        cl.table[h] = k;
    }
}

static void open_devices(unsigned want)
{
    cl_platform_id plat;
    cl_device_id ids[MAX_DEVS];
    cl_uint n = 0;
    CHECK(clGetPlatformIDs(1, &plat, NULL));
    CHECK(clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, MAX_DEVS, ids, &n));
    if (n < want) {
        fprintf(stderr, "split-floor: %u devices wanted, %u found (POCL_DEVICES)\n", want, n);
        exit(2);
    }
    cl_int err;
    cl.ctx = clCreateContext(NULL, want, ids, NULL, NULL, &err);
    CHECK(err);
    cl_program prog = clCreateProgramWithSource(cl.ctx, 1, &source, NULL, &err);
    CHECK(err);
    CHECK(clBuildProgram(prog, want, ids, "", NULL, NULL));
    make_table();
    for (unsigned i = 0; i < want; i++) {
        struct dev *d = &cl.d[i];
        d->q = clCreateCommandQueue(cl.ctx, ids[i], 0, &err);
        CHECK(err);
        d->k = clCreateKernel(prog, "lookup", &err);
        CHECK(err);
        d->keys = clCreateBuffer(cl.ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                                 sizeof(cl.table), cl.table, &err);
        CHECK(err);
        d->queries = clCreateBuffer(cl.ctx, CL_MEM_READ_ONLY, QUERIES * 8, NULL, &err);
        CHECK(err);
        d->results = clCreateBuffer(cl.ctx, CL_MEM_WRITE_ONLY, QUERIES, NULL, &err);
        CHECK(err);
        cl_uint count = QUERIES, mask = SLOTS - 1;
        CHECK(clSetKernelArg(d->k, 0, sizeof(cl_mem), &d->keys));
        CHECK(clSetKernelArg(d->k, 1, sizeof(cl_mem), &d->queries));
        CHECK(clSetKernelArg(d->k, 2, sizeof(cl_mem), &d->results));
        CHECK(clSetKernelArg(d->k, 3, sizeof(cl_uint), &count));
        CHECK(clSetKernelArg(d->k, 4, sizeof(cl_uint), &mask));
    }
    cl.n = want;
    clReleaseProgram(prog);
}

/* Device i's commands for one round, not waited for. */
static void enqueue(unsigned i, const uint64_t *q, uint8_t *out, cl_event *done)
{
    struct dev *d = &cl.d[i];
    size_t global = 64, local = 64;
    CHECK(clEnqueueWriteBuffer(d->q, d->queries, CL_FALSE, 0, QUERIES * 8, q, 0, NULL, NULL));
    CHECK(clEnqueueNDRangeKernel(d->q, d->k, 1, NULL, &global, &local, 0, NULL, NULL));
    CHECK(clEnqueueReadBuffer(d->q, d->results, CL_FALSE, 0, QUERIES, out, 0, NULL, done));
    CHECK(clFlush(d->q));
}

/* Round r's queries for device i: keys 1..2*SLOTS, half of them odd. */
static void queries(unsigned r, unsigned i, uint64_t *q)
{
    uint64_t x = (uint64_t)r * 1000003u + i * 7919u + 1;
    for (unsigned j = 0; j < QUERIES; j++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        q[j] = (x >> 33) % SLOTS + 1;
    }
}

/* Whether out holds the answers to q (odd keys are in the table). */
static bool right(const uint64_t *q, const uint8_t *out)
{
    for (unsigned j = 0; j < QUERIES; j++)
        if (out[j] != (q[j] & 1))
            return false;
    return true;
}

/* --yield: MPI's waits poll MPI_Test and yield between polls (as a polite
 * MPI program does) in place of MPICH's own spinning wait. */
static bool yield_waits;

static void wait_all(int n, MPI_Request *req)
{
    static MPI_Status st[2 * MAX_DEVS]; /* (not MPI_STATUSES_IGNORE: GCC takes it for an array) */
    if (!yield_waits) {
        MPI_Waitall(n, req, st);
        return;
    }
    int done = 0;
    while (MPI_Testall(n, req, &done, st) == MPI_SUCCESS && !done)
        sched_yield();
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One round's queries and results, a row per device. */
typedef uint64_t query_rows[MAX_DEVS][QUERIES];
typedef uint8_t result_rows[MAX_DEVS][QUERIES];

/* Gets round's results for q into out, one way; false if it failed. */
typedef bool exchange_fn(query_rows q, result_rows out, void *how);

/* The application's rounds, timed after WARMUP, each checked; prints the
 * CSV line.  0, or 1 on a wrong or failed round. */
static int app_rounds(const char *mode, unsigned devices, unsigned rounds, exchange_fn *exchange,
                      void *how)
{
    static query_rows q;
    static result_rows out;
    double start = 0;
    for (unsigned r = 0; r < WARMUP + rounds; r++) {
        if (r == WARMUP)
            start = now();
        for (unsigned i = 0; i < devices; i++)
            queries(r, i, q[i]);
        if (!exchange(q, out, how))
            return 1;
        for (unsigned i = 0; i < devices; i++)
            if (!right(q[i], out[i])) {
                fprintf(stderr, "split-floor: round %u, device %u: wrong results\n", r, i);
                return 1;
            }
    }
    double sec = now() - start;
    printf("%s,%u,%u,%.6f,%.2f\n", mode, devices, rounds, sec, sec / rounds * 1e6);
    return 0;
}

/* A server's part of a round, or native's whole: n devices' commands for
 * q (a row each), waited for, their results in out. */
static void serve(unsigned n, const uint64_t *q, uint8_t *out)
{
    cl_event done[MAX_DEVS] = {0};
    for (unsigned i = 0; i < n; i++)
        enqueue(i, q + i * QUERIES, out + i * QUERIES, &done[i]);
    CHECK(clWaitForEvents(n, done));
    for (unsigned i = 0; i < n; i++)
        clReleaseEvent(done[i]);
}

static bool native_exchange(query_rows q, result_rows out, void *how)
{
    serve(*(const unsigned *)how, q[0], out[0]);
    return true;
}

/* MPI: rank 0 is the application, ranks 1..servers serve per_rank devices each. */
struct mpi_way {
    unsigned servers, per_rank;
};

static bool mpi_exchange(query_rows q, result_rows out, void *how)
{
    const struct mpi_way *m = how;
    MPI_Request req[2 * MAX_DEVS];
    for (unsigned s = 0; s < m->servers; s++) {
        MPI_Irecv(out[s * m->per_rank], (int)(m->per_rank * QUERIES), MPI_BYTE, (int)s + 1, 1,
                  MPI_COMM_WORLD, &req[2 * s]);
        MPI_Isend(q[s * m->per_rank], (int)(m->per_rank * QUERIES * 8), MPI_BYTE, (int)s + 1, 1,
                  MPI_COMM_WORLD, &req[2 * s + 1]);
    }
    wait_all((int)(2 * m->servers), req);
    return true;
}

static void mpi_server(unsigned per_rank)
{
    open_devices(per_rank);
    static uint64_t q[MAX_DEVS * QUERIES];
    static uint8_t out[MAX_DEVS * QUERIES];
    for (;;) {
        MPI_Status st;
        MPI_Request req;
        MPI_Irecv(q, (int)sizeof(q), MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &req);
        if (yield_waits) {
            int done = 0;
            while (MPI_Test(&req, &done, &st) == MPI_SUCCESS && !done)
                sched_yield();
        } else {
            MPI_Wait(&req, &st);
        }
        if (st.MPI_TAG == 2)
            return;
        serve(per_rank, q, out);
        MPI_Isend(out, (int)(per_rank * QUERIES), MPI_BYTE, 0, 1, MPI_COMM_WORLD, &req);
        wait_all(1, &req);
    }
}

/* --fork P: the same over sockets to forked processes, whose waits sleep in
 * the kernel until their message comes: no polling at all. */
static bool xfer(int fd, void *buf, size_t n, bool out)
{
    ssize_t got = out ? write(fd, buf, n) : read(fd, buf, n);
    if (got != (ssize_t)n && (out || got != 0))
        perror("split-floor: socket");
    return got == (ssize_t)n;
}

struct fork_way {
    unsigned servers, per_rank;
    int fds[MAX_DEVS]; /* the application's end of each server's socket */
};

static bool fork_exchange(query_rows q, result_rows out, void *how)
{
    const struct fork_way *f = how;
    bool ok = true;
    for (unsigned s = 0; s < f->servers && ok; s++)
        ok = xfer(f->fds[s], q[s * f->per_rank], f->per_rank * QUERIES * 8, true);
    for (unsigned s = 0; s < f->servers && ok; s++)
        ok = xfer(f->fds[s], out[s * f->per_rank], f->per_rank * QUERIES, false);
    return ok;
}

static void fork_server(int fd, unsigned per_rank)
{
    open_devices(per_rank);
    static uint64_t q[MAX_DEVS * QUERIES];
    static uint8_t out[MAX_DEVS * QUERIES];
    while (xfer(fd, q, per_rank * QUERIES * 8, false)) {
        serve(per_rank, q, out);
        if (!xfer(fd, out, per_rank * QUERIES, true))
            break;
    }
}

static int run_fork(unsigned servers, unsigned per_rank, unsigned rounds)
{
    struct fork_way f = {.servers = servers, .per_rank = per_rank};
    pid_t pids[MAX_DEVS];
    int rc = 0;
    unsigned made = 0;
    for (; made < servers; made++) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0) {
            perror("split-floor: socketpair");
            rc = 2;
            break;
        }
        pids[made] = fork();
        if (pids[made] == 0) {
            for (unsigned k = 0; k < made; k++)
                close(f.fds[k]); /* (the others' ends: their servers see EOF) */
            close(sv[0]);
            fork_server(sv[1], per_rank);
            _exit(0);
        }
        close(sv[1]);
        if (pids[made] < 0) {
            perror("split-floor: fork");
            close(sv[0]);
            rc = 2;
            break;
        }
        f.fds[made] = sv[0];
    }
    if (!rc)
        rc = app_rounds("fork", servers * per_rank, rounds, fork_exchange, &f);
    for (unsigned s = 0; s < made; s++) { /* (EOF ends each server) */
        close(f.fds[s]);
        waitpid(pids[s], NULL, 0);
    }
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f, "Usage: split-floor --native [--devices N] [--rounds N]\n"
               "       split-floor --fork P [--devices-per-rank D] [--rounds N]\n"
               "       mpiexec -n 1+P split-floor [--yield] [--devices-per-rank D] [--rounds N]\n"
               "kmer-assemble's round of small commands (a 400-byte write, a lookup, a\n"
               "50-byte read per device, one wait), natively over N devices of one\n"
               "process, or split: rank 0 sends each of P ranks its devices' queries and\n"
               "waits for their results, as the least a process per device costs;\n"
               "or --fork: the same over sockets to P forked processes, whose waits\n"
               "sleep until their message comes (no MPI, no polling).\n"
               "Prints mode,devices,rounds,seconds,us_per_round.  Defaults: 2 devices\n"
               "(--native), 1 per rank, 1500 rounds.\n");
}

int main(int argc, char **argv)
{
    bool native = false;
    unsigned forked = 0;
    unsigned devices = 2, per_rank = 1, rounds = 1500;
    for (int i = 1; i < argc; i++) {
        unsigned *v = !strcmp(argv[i], "--devices")            ? &devices
                      : !strcmp(argv[i], "--devices-per-rank") ? &per_rank
                      : !strcmp(argv[i], "--rounds")           ? &rounds
                                                               : NULL;
        if (!strcmp(argv[i], "--native")) {
            native = true;
        } else if (!strcmp(argv[i], "--yield")) {
            yield_waits = true;
        } else if (!strcmp(argv[i], "--fork") && i + 1 < argc) {
            forked = (unsigned)atoi(argv[++i]);
            if (forked < 1 || forked > MAX_DEVS) {
                fprintf(stderr, "split-floor: bad value for --fork: %s\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (v && i + 1 < argc) {
            char *end;
            long n = strtol(argv[++i], &end, 10);
            if (*end || n < 1 || n > (v == &rounds ? 10000000 : MAX_DEVS)) {
                fprintf(stderr, "split-floor: bad value for %s: %s\n", argv[i - 1], argv[i]);
                return 2;
            }
            *v = (unsigned)n;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (native) {
        open_devices(devices);
        return app_rounds("native", devices, rounds, native_exchange, &devices);
    }
    if (forked)
        return forked * per_rank > MAX_DEVS ? 2 : run_fork(forked, per_rank, rounds);
    int provided, rank, ranks;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    int rc = 0;
    if (ranks < 2 || (unsigned)(ranks - 1) * per_rank > MAX_DEVS) {
        if (rank == 0)
            fprintf(stderr, "split-floor: run it under mpiexec with 2 to %d ranks (or --native)\n",
                    MAX_DEVS + 1);
        rc = 2;
    } else if (rank == 0) {
        struct mpi_way m = {.servers = (unsigned)ranks - 1, .per_rank = per_rank};
        rc = app_rounds("split", m.servers * per_rank, rounds, mpi_exchange, &m);
        for (unsigned k = 0; k < m.servers; k++)
            MPI_Send(NULL, 0, MPI_BYTE, (int)k + 1, 2, MPI_COMM_WORLD); /* stop */
    } else {
        mpi_server(per_rank);
    }
    MPI_Finalize();
    return rc;
}
