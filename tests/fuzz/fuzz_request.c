/*
 * fuzz_request.c - libFuzzer target: the proxy executor's request decoding.
 *
 * One input is one client session: the request messages it sends, one
 * after another, as they travel (each a 16-byte header whose length field
 * says how many payload bytes follow; a last message cut short goes in as
 * it is, and the executor rejects it).  So a create and the requests that
 * use its object are one input, and the seeds, recorded from real traffic
 * (tests/fuzz/README.md), start with HELLO like every session.  Each
 * message is copied to memory of its exact size, so a decoder that reads
 * past its message is caught even when another message follows.
 *
 * The session ends as in voclproxyd (BYE, a message that ends it, or a
 * broken data channel), then exec_session_end releases what the client
 * left and the node is closed: memory the executor leaks shows in
 * LeakSanitizer, and OpenCL objects it leaks in the fake (fake_cl.c), which
 * stands in for the native library.
 *
 * Around the executor, everything is made not to block, and to be the same
 * on every run, so that a crash reproduces:
 *   - the data channel (chunked transfers) and the peer channel (migrations)
 *     carry zeros, up to DATA_BUDGET bytes an input, then fail as a lost
 *     peer would (the executor must cope with that too);
 *   - threads the executor starts (vocl_thread_detached: migrations, event
 *     links) run here, in the order started, once the request that started
 *     them has returned: as if each ran between two requests;
 *   - the node has no stream thread: chunks of reads are sent at once.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cl.h"
#include "internal.h"
#include "thread.h"

/* Bytes the data and peer channels carry in one input before failing. */
#define DATA_BUDGET (1u << 20)
/* The staging buffer size (HELLO's chunk size): the seeds are recorded with
 * VOCL_POOL_SIZE=64K, so that their chunked transfers are accepted. */
#define FUZZ_CHUNK (64u << 10)
/* Ranks the peer channel takes for other proxies of the job. */
#define FUZZ_PEERS 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static size_t budget;

static int take_budget(size_t n)
{
    if (n > budget)
        return -1;
    budget -= n;
    return 0;
}

static int fuzz_recv(struct exec_session *s, int tag, void *buf, size_t n)
{
    (void)s, (void)tag;
    if (take_budget(n))
        return -1;
    if (n)
        memset(buf, 0, n);
    return 0;
}

static int fuzz_send(struct exec_session *s, int tag, const void *buf, size_t n)
{
    (void)s, (void)tag;
    if (take_budget(n))
        return -1;
    fake_read(buf, n);
    return 0;
}

static bool fuzz_peer_ok(int rank)
{
    return rank > 0 && rank <= FUZZ_PEERS;
}

static int fuzz_peer_send(int rank, int tag, const void *buf, size_t n)
{
    (void)rank;
    return fuzz_send(NULL, tag, buf, n);
}

/* The peer sends just what was asked for (as MPI would, when the peer agrees). */
static int fuzz_peer_recv(int rank, int tag, void *buf, size_t n, size_t *got)
{
    (void)rank;
    if (fuzz_recv(NULL, tag, buf, n))
        return -1;
    *got = n;
    return 0;
}

static const struct exec_data_ops fuzz_data = {.recv = fuzz_recv,
                                               .send = fuzz_send,
                                               .peer_ok = fuzz_peer_ok,
                                               .peer_send = fuzz_peer_send,
                                               .peer_recv = fuzz_peer_recv};

/* --- the executor's threads, run in order between requests ------------------------------- */

struct job {
    struct job *next;
    void *(*fn)(void *);
    void *arg;
};

static struct job *jobs, **jobs_tail = &jobs;

/* Replaces common/thread.c in this program (see the file comment). */
int vocl_thread_detached(void *(*fn)(void *), void *arg)
{
    struct job *j = malloc(sizeof(*j));
    if (!j)
        return -1; /* the caller does the work itself */
    *j = (struct job){NULL, fn, arg};
    *jobs_tail = j;
    jobs_tail = &j->next;
    return 0;
}

static void run_jobs(void)
{
    while (jobs) {
        struct job *j = jobs;
        jobs = j->next;
        if (!jobs)
            jobs_tail = &jobs;
        j->fn(j->arg);
        free(j);
    }
}

/* --- one session an input ---------------------------------------------------------------- */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    vocl_log_level = -1; /* rejections are what the fuzzer provokes: not worth a line */
    return 0;
}

/* The length of the message at p (n bytes left): by its header's length field. */
static size_t message_len(const uint8_t *p, size_t n)
{
    if (n < VOCL_HDR_SIZE)
        return n;
    uint32_t len = (uint32_t)p[8] | (uint32_t)p[9] << 8 | (uint32_t)p[10] << 16 |
                   (uint32_t)p[11] << 24;
    return len <= n - VOCL_HDR_SIZE ? VOCL_HDR_SIZE + len : n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct exec_node node;
    struct exec_session s;
    struct vocl_wr reply;

    budget = DATA_BUDGET;
    fake_cl_begin();
    if (exec_node_open(&node, &fake_cl_api, CL_DEVICE_TYPE_ALL, NULL) || node.ndev == 0)
        abort();
    node.xfer.pool_size = FUZZ_CHUNK;
    exec_session_init(&s, &node, 0);
    s.data = &fuzz_data;
    vocl_wr_init(&reply);

    for (size_t off = 0; off < size;) {
        size_t n = message_len(data + off, size - off);
        uint8_t *msg = malloc(n);
        if (!msg)
            break;
        memcpy(msg, data + off, n);
        /* The first message's HELLO speaks this build's wire version: the
         * seeds were recorded with the version of their day, and a HELLO
         * of another is refused, which left every seed's session served
         * nothing past it once the version moved (1 to 2, unnoticed). */
        if (off == 0 && n >= VOCL_HDR_SIZE + 4 && msg[2] == (VOCL_OP_HELLO & 0xff) &&
            msg[3] == (VOCL_OP_HELLO >> 8))
            for (int b = 0; b < 4; b++)
                msg[VOCL_HDR_SIZE + b] = (uint8_t)(VOCL_WIRE_VERSION >> (8 * b));
        off += n;
        int rc = exec_request(&s, msg, n, &reply);
        /* A chunked write parks the session (inbound.c): stepped as the
         * serving loop would, a bounded number of times (the fake driver's
         * commands are done at once). */
        for (int k = 0; k < 64 && rc >= 0 && exec_session_parked(&s); k++) {
            bool moved = false;
            rc = exec_inbound_step(&s, &reply, &moved);
            run_jobs();
        }
        struct vocl_msg_hdr h;
        bool bye = vocl_hdr_get(msg, n, &h) && h.opcode == VOCL_OP_BYE;
        free(msg);
        run_jobs();
        if (bye || rc < 0 || s.broken)
            break;
    }

    exec_session_end(&s);
    run_jobs();
    exec_node_close(&node);
    run_jobs();
    vocl_wr_free(&reply);
    fake_cl_end();
    return 0;
}
