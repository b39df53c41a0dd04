/*
 * main.c - voclproxyd: serves this node's OpenCL devices to VOCL clients.
 *
 * Job mode (default): the proxy is a rank of the application's MPI job; the
 * first VOCL_APP_RANKS ranks are clients, each with its own session.  The
 * proxy exits when every client has said BYE.
 *
 * Connect mode (--listen): the proxy opens an MPI port and accepts clients
 * on an accept thread.  That needs an MPI with dynamic processes; MPICH's
 * ch4:ucx (Debian 12) has none, and the proxy says so and exits at once.
 */
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "proxyd.h"

#define VOCLPROXYD_VERSION "0.1.0"

struct options {
    cl_device_type type;
    bool listen;
    const char *port_file;
};

static MPI_Comm comm = MPI_COMM_NULL;

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: voclproxyd [OPTIONS]\n"
            "Serve this node's OpenCL devices to applications running under VOCL.\n"
            "Normally started by vocl-run as ranks of the application's MPI job.\n\n"
            "  -t, --device-type TYPE  devices to serve: all (default), gpu, cpu,\n"
            "                          accelerator, custom, default\n"
            "  -l, --listen            connect mode: open an MPI port for clients\n"
            "                          (needs an MPI with dynamic processes)\n"
            "  -p, --port-file FILE    connect mode: write the port name to FILE\n"
            "  -v, --verbose           more messages on stderr (repeat for more)\n"
            "  -q, --quiet             errors only\n"
            "  -h, --help              this help\n"
            "  -V, --version           the version\n\n"
            "Environment: VOCL_APP_RANKS (set by vocl-run): ranks below it are clients;\n"
            "VOCL_NATIVE_LIB: the native OpenCL library (default libOpenCL.so.1).\n"
            "See voclproxyd(8).\n");
}

static int parse_type(const char *s, cl_device_type *t)
{
    static const struct {
        const char *name;
        cl_device_type type;
    } types[] = {{"all", CL_DEVICE_TYPE_ALL},       {"gpu", CL_DEVICE_TYPE_GPU},
                 {"cpu", CL_DEVICE_TYPE_CPU},       {"accelerator", CL_DEVICE_TYPE_ACCELERATOR},
                 {"custom", CL_DEVICE_TYPE_CUSTOM}, {"default", CL_DEVICE_TYPE_DEFAULT}};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
        if (!strcmp(s, types[i].name)) {
            *t = types[i].type;
            return 0;
        }
    return -1;
}

static int parse_args(int argc, char **argv, struct options *o)
{
    static const struct option longopts[] = {
        {"device-type", required_argument, NULL, 't'}, {"listen", no_argument, NULL, 'l'},
        {"port-file", required_argument, NULL, 'p'},   {"verbose", no_argument, NULL, 'v'},
        {"quiet", no_argument, NULL, 'q'},             {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},           {NULL, 0, NULL, 0}};
    int c;
    o->type = CL_DEVICE_TYPE_ALL;
    while ((c = getopt_long(argc, argv, "t:lp:vqhV", longopts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (parse_type(optarg, &o->type)) {
                fprintf(stderr, "voclproxyd: unknown device type '%s'\n", optarg);
                return 2;
            }
            break;
        case 'l': o->listen = true; break;
        case 'p': o->port_file = optarg; break;
        case 'v': vocl_log_level++; break;
        case 'q': vocl_log_level = VOCL_LOG_ERROR; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("voclproxyd " VOCLPROXYD_VERSION "\n"); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "voclproxyd: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return 2;
    }
    return -1;
}

/* --- the MPI data channel ---------------------------------------------------------------------- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A chunk the client promised: wait for it, but not forever. */
#define DATA_TIMEOUT_NS (30ull * 1000000000u)

static int mpi_recv(struct proxyd_session *s, void *buf, size_t n)
{
    MPI_Message msg;
    MPI_Status st;
    int flag = 0, count = 0;
    uint64_t start = now_ns();
    while (!flag) {
        if (MPI_Improbe(s->peer, VOCL_TAG_DATA, comm, &flag, &msg, &st) != MPI_SUCCESS)
            return -1;
        if (!flag && now_ns() - start > DATA_TIMEOUT_NS) {
            vocl_warn("rank %d: data chunk did not arrive in 30 s", s->peer);
            return -1;
        }
        if (!flag && now_ns() - start > 100000)
            sched_yield();
    }
    MPI_Get_count(&st, MPI_BYTE, &count);
    if ((size_t)count != n) {
        /* Out of step: take the message off the queue and give up on the session. */
        char dummy;
        MPI_Mrecv(&dummy, 0, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
        vocl_warn("rank %d: data chunk of %d bytes where %zu were due", s->peer, count, n);
        return -1;
    }
    return MPI_Mrecv(buf, count, MPI_BYTE, &msg, MPI_STATUS_IGNORE) == MPI_SUCCESS ? 0 : -1;
}

static int mpi_send(struct proxyd_session *s, const void *buf, size_t n)
{
    return MPI_Send(buf, (int)n, MPI_BYTE, s->peer, VOCL_TAG_DATA, comm) == MPI_SUCCESS ? 0 : -1;
}

static int mpi_reply(struct proxyd_session *s, struct vocl_wr *w)
{
    return MPI_Send(w->buf, (int)w->len, MPI_BYTE, s->peer, VOCL_TAG_REP, comm) == MPI_SUCCESS
               ? 0
               : -1;
}

static const struct proxyd_data_ops mpi_data = {mpi_recv, mpi_send, mpi_reply};

/* --- job mode ---------------------------------------------------------------------------------------- */

static int serve(struct proxyd_node *node, int nclients)
{
    struct proxyd_session *sessions = calloc((size_t)nclients, sizeof(*sessions));
    bool *gone = calloc((size_t)nclients, sizeof(*gone));
    struct vocl_wr reply;
    uint8_t *buf = NULL;
    size_t cap = 0;
    int live = nclients;

    if (!sessions || !gone) {
        vocl_error("out of memory");
        return 1;
    }
    vocl_wr_init(&reply);
    for (int i = 0; i < nclients; i++) {
        proxyd_session_init(&sessions[i], node, i);
        sessions[i].data = &mpi_data;
    }
    uint64_t idle_since = now_ns();
    while (live > 0) {
        MPI_Message msg;
        MPI_Status st;
        int flag = 0, count = 0;
        MPI_Improbe(MPI_ANY_SOURCE, VOCL_TAG_REQ, comm, &flag, &msg, &st);
        if (!flag) {
            /* Idle: spin briefly for latency, then yield, then sleep. */
            uint64_t idle = now_ns() - idle_since;
            if (idle > 2000000) {
                struct timespec ts = {0, 100000};
                nanosleep(&ts, NULL);
            } else if (idle > 50000) {
                sched_yield();
            }
            continue;
        }
        MPI_Get_count(&st, MPI_BYTE, &count);
        int src = st.MPI_SOURCE;
        if (count < 0 || (size_t)count > VOCL_MSG_MAX || src >= nclients || gone[src]) {
            char dummy;
            MPI_Mrecv(&dummy, 0, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
            vocl_warn("rank %d: dropped a message of %d bytes (too large or not a client)", src,
                      count);
            continue;
        }
        if ((size_t)count > cap) {
            uint8_t *nb = realloc(buf, (size_t)count);
            if (!nb) {
                char dummy;
                MPI_Mrecv(&dummy, 0, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
                continue;
            }
            buf = nb;
            cap = (size_t)count;
        }
        MPI_Mrecv(buf, count, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
        struct proxyd_session *s = &sessions[src];
        int rc = proxyd_execute(s, buf, (size_t)count, &reply);
        if (rc > 0)
            mpi_reply(s, &reply);
        struct vocl_msg_hdr h;
        bool bye = vocl_hdr_get(buf, (size_t)count, &h) && h.opcode == VOCL_OP_BYE;
        if (bye || rc < 0 || s->broken) {
            if (!bye)
                vocl_warn("rank %d: session ended after a protocol error", src);
            proxyd_session_end(s);
            gone[src] = true;
            live--;
            vocl_info("rank %d: session closed (%d left)", src, live);
        }
        idle_since = now_ns();
    }
    vocl_wr_free(&reply);
    free(buf);
    free(sessions);
    free(gone);
    return 0;
}

/* --- connect mode ---------------------------------------------------------------------------------- */

static int listen_mode(const struct options *o)
{
    char port[MPI_MAX_PORT_NAME];
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Open_port(MPI_INFO_NULL, port);
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING];
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        char *last = strrchr(msg, '\n');
        vocl_error("--listen: this MPI does not support dynamic processes (MPI_Open_port: %s). "
                   "Use job mode instead: vocl-run -n PROXIES -- APP",
                   last ? last + 1 : msg);
        return 1;
    }
    if (o->port_file) {
        FILE *f = fopen(o->port_file, "w");
        if (!f || fprintf(f, "%s\n", port) < 0 || fclose(f)) {
            vocl_error("cannot write %s", o->port_file);
            MPI_Close_port(port);
            return 1;
        }
    }
    printf("%s\n", port);
    fflush(stdout);
    vocl_info("listening on %s", port);
    /* Clients one after the other: each on its own intercommunicator. */
    for (;;) {
        MPI_Comm client;
        if (MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &client) != MPI_SUCCESS)
            break;
        (void)client;
        vocl_error("connect mode sessions are not implemented beyond accepting");
        MPI_Comm_disconnect(&client);
    }
    MPI_Close_port(port);
    return 1;
}

int main(int argc, char **argv)
{
    struct options o = {0};
    vocl_log_set_prefix("voclproxyd");
    const char *v = getenv("VOCL_VERBOSE");
    if (v && *v)
        vocl_log_level = atoi(v);
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;

    int provided;
    setenv("HWLOC_COMPONENTS", "-opencl", 0);
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        vocl_error("MPI_Init_thread failed");
        return 1;
    }
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char prefix[64];
    snprintf(prefix, sizeof(prefix), "voclproxyd[%d]", rank);
    vocl_log_set_prefix(prefix);

    const struct vocl_native_api *cl = vocl_native_get();
    struct proxyd_node node;
    if (!cl || proxyd_node_open(&node, cl, o.type, NULL)) {
        vocl_error("no native OpenCL library");
        MPI_Finalize();
        return 1;
    }
    if (node.ndev == 0)
        vocl_warn("no OpenCL device of the requested type on this node");
    vocl_info("serving %u devices", node.ndev);

    if (o.listen) {
        rc = listen_mode(&o);
    } else {
        const char *apps = getenv("VOCL_APP_RANKS");
        int nclients = apps ? atoi(apps) : 0;
        if (nclients <= 0 || nclients >= size || rank < nclients) {
            vocl_error("job mode needs VOCL_APP_RANKS (1..%d) with this rank above it: "
                       "start proxies with vocl-run",
                       size - 1);
            rc = 1;
        } else {
            MPI_Comm_dup(MPI_COMM_WORLD, &comm);
            MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
            rc = serve(&node, nclients);
            MPI_Comm_free(&comm);
        }
    }
    proxyd_node_close(&node);
    MPI_Finalize();
    return rc;
}
