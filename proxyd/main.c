/*
 * main.c - voclproxyd: serves this node's OpenCL devices to VOCL clients.
 *
 * Job mode (default): the proxy is a rank of the application's MPI job; the
 * first VOCL_APP_RANKS ranks are clients, each with its own session.  The
 * proxy exits when every client has said BYE.
 *
 * Daemon mode (--listen): the proxy listens on HOST:PORT over UCX
 * (common/ucx.h) and accepts the clients of any user on an accept thread,
 * each in a worker process of its own by default; no MPI is started.
 *
 * This file has the options and the start; the serving loop is in serve.c,
 * a session's channel (MPI or UCX) in channel.c.
 */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <unistd.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "backoff.h"
#include "daemon.h"
#include "executor.h"
#include "log.h"
#include "ucx.h"
#include "mpi_start.h"
#include "native.h"
#include "protocol.h"
#include "thread.h"
#include "wire.h"

#define VOCLPROXYD_VERSION "0.1.0"
#define LIMIT_UNSET UINT64_MAX  /* a limit not given: its mode's default */
#define LISTEN_MAX_OBJECTS 65536u
/* How often --metrics-file is written, by default: 5 s. */
#define METRICS_NS (5ull * 1000000000u)

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: voclproxyd [OPTIONS]\n"
            "Serve this node's OpenCL devices to applications running under VOCL.\n"
            "Normally started by vocl-run as ranks of the application's MPI job.\n\n"
            "  -t, --device-type TYPE  devices to serve: all (default), gpu, cpu,\n"
            "                          accelerator, custom, default\n"
            "  -l, --listen            daemon mode: serve the applications of any user\n"
            "                          that connect (over UCX), until stopped\n"
            "      --port PORT         daemon mode: the port to listen on (default %d;\n"
            "                          0: one the kernel picks)\n"
            "  -a, --address ADDR      daemon mode: listen on this address only (default:\n"
            "                          every interface)\n"
            "  -p, --port-file FILE    daemon mode: write HOST:PORT to FILE\n"
            "  -n, --name NAME         daemon mode: its name for vocl-ctl (default: the\n"
            "                          host name)\n"
            "  -k, --token-file FILE   daemon mode: the secret clients must present\n"
            "                          (default $VOCL_TOKEN_FILE, else ~/.vocl/token;\n"
            "                          made, mode 0600, if missing)\n"
            "  -u, --users DIR         daemon mode: a token per user instead, each in\n"
            "                          DIR/USER (mode 0600); clients name their user\n"
            "      --isolate           daemon mode: serve each client in a process of\n"
            "                          its own (a worker), so that a kernel that crashes\n"
            "                          the driver ends only its own client's session\n"
            "                          (the default with --listen)\n"
            "      --no-isolate        daemon mode: serve every client in this process\n"
            "      --busy-share        measure each device's busy share (vocl-smi)\n"
            "      --metrics-file PATH daemon mode: write its figures to PATH for\n"
            "                          Prometheus (node_exporter's textfile collector),\n"
            "                          rewritten whole every few seconds\n"
            "      --metrics-interval SECONDS  how often (default %g)\n"
            "  -b, --pool-buffers N    staging buffers for transfers (default %u)\n"
            "  -s, --pool-size BYTES   bytes per staging buffer, also the chunk size of\n"
            "                          transfers; K and M suffixes (default %uM)\n"
            "      --no-pipeline       one staging buffer, stages one after the other\n"
            "      --no-direct         always stage, even where device memory is host memory\n"
            "      --no-driver-staging stage in the proxy's own locked memory, not in a\n"
            "                          pinned buffer of each context (the driver's)\n"
            "      --max-session-mem BYTES      memory objects one client may hold, in\n"
            "                          bytes with K, M or G; 0: no limit (default: none\n"
            "                          in job mode; with --listen, what the largest\n"
            "                          device holds)\n"
            "      --max-session-objects N      OpenCL objects one client may hold, events\n"
            "                          aside (default: none; with --listen, %u)\n"
            "      --max-session-host BYTES     host memory the proxy may hold for one\n"
            "                          client: staged spans, copies of non-blocking\n"
            "                          writes (default: none; with --listen, a quarter\n"
            "                          of this node's memory)\n"
            "      --poll-us N         how long a command a client waits for is polled\n"
            "                          before its reply is left to the driver's\n"
            "                          callback; 0: never (default %u)\n"
            "      --no-batch-gate     start each command of a client's batch as it is\n"
            "                          run, not all together once the batch has run\n"
            "      --no-sched-batch    with several CPU devices (or one, with more ranks\n"
            "                          than cores), leave the driver's threads in the\n"
            "                          default scheduling class (SCHED_OTHER), not\n"
            "                          SCHED_BATCH\n"
            "  -v, --verbose           more messages on stderr (repeat for more)\n"
            "  -q, --quiet             errors only\n"
            "  -h, --help              this help\n"
            "  -V, --version           the version\n\n"
            "Environment: VOCL_APP_RANKS (set by vocl-run): ranks below it are clients;\n"
            "VOCL_NATIVE_LIB: the native OpenCL library (default libOpenCL.so.1);\n"
            "VOCL_PIPELINE=0, VOCL_DIRECT=0 and VOCL_DRIVER_STAGING=0: as --no-pipeline,\n"
            "--no-direct and --no-driver-staging;\n"
            "VOCL_POOL_BUFFERS and VOCL_POOL_SIZE: defaults of -b and -s;\n"
            "VOCL_MAX_SESSION_MEM, _OBJECTS and _HOST: defaults of the limits;\n"
            "VOCL_POLL_US: default of --poll-us; VOCL_BATCH_GATE=0: as --no-batch-gate;\n"
            "VOCL_SCHED_BATCH=0: as --no-sched-batch;\n"
            "VOCL_PEER_TIMEOUT: seconds a silent client or proxy has to answer a ping\n"
            "before it counts as dead (default 3);\n"
            "VOCL_PROXY_RUSAGE=FILE: append this proxy's peak memory to FILE at exit.\n"
            "See voclproxyd(8).\n",
            VOCL_DEFAULT_PORT, METRICS_NS / 1e9, EXEC_POOL_N, EXEC_POOL_SIZE >> 20,
            LISTEN_MAX_OBJECTS, EXEC_POLL_NS / 1000);
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

/* A byte count with an optional K or M suffix; 0 when malformed. */
static size_t parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s)
        return 0;
    if (*end == 'K' || *end == 'k')
        v <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
        v <<= 20, end++;
    else if (*end == 'G' || *end == 'g')
        v <<= 30, end++;
    return *end || v > SIZE_MAX ? 0 : (size_t)v;
}

/* A whole decimal number in [lo, hi]. */
static bool number_in(const char *arg, long lo, long hi, long *v)
{
    char *end;
    *v = strtol(arg, &end, 10);
    return end != arg && !*end && *v >= lo && *v <= hi;
}

static int set_pool_n(struct options *o, const char *arg)
{
    long n;
    if (!number_in(arg, 1, 64, &n)) {
        fprintf(stderr, "voclproxyd: pool buffers must be 1..64, not '%s'\n", arg);
        return -1;
    }
    o->xfer.pool_n = (unsigned)n;
    return 0;
}

static int set_pool_size(struct options *o, const char *arg)
{
    size_t sz = parse_size(arg);
    if (sz < EXEC_CHUNK_MIN || sz > EXEC_CHUNK_MAX) {
        fprintf(stderr, "voclproxyd: pool buffer size must be 4K..64M, not '%s'\n", arg);
        return -1;
    }
    o->xfer.pool_size = sz;
    return 0;
}

static int set_poll(struct options *o, const char *what, const char *arg)
{
    long us;
    if (!number_in(arg, 0, 1000000, &us)) {
        fprintf(stderr, "voclproxyd: %s must be 0..1000000 microseconds, not '%s'\n", what, arg);
        return -1;
    }
    o->poll_ns = (uint64_t)us * 1000;
    return 0;
}

/* A limit: a size (K, M, G) or a count; 0: none. */
static int set_limit(uint64_t *limit, const char *what, const char *arg, bool size)
{
    char *end;
    uint64_t v = !strcmp(arg, "0") ? 0 : size ? parse_size(arg) : strtoull(arg, &end, 10);
    if (strcmp(arg, "0") && (v == 0 || (!size && *end))) {
        fprintf(stderr, "voclproxyd: %s must be a %s, or 0 for none, not '%s'\n", what,
                size ? "size (K, M, G)" : "count", arg);
        return -1;
    }
    *limit = v;
    return 0;
}

/*
 * The limits not given (LIMIT_UNSET): none in job mode, whose clients are
 * one application; in daemon mode, where strangers share the node, what
 * keeps one from taking it all: the memory of its largest device, 65536
 * objects, a quarter of its host memory.
 */
static void default_limits(struct exec_limits *l, bool listen, const struct exec_node *node)
{
    uint64_t dev_mem = 0;
    for (cl_uint d = 0; listen && d < node->ndev; d++) {
        cl_ulong m = 0;
        if (node->cl->clGetDeviceInfo(node->devs[d], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(m), &m,
                                      NULL) == CL_SUCCESS && m > dev_mem)
            dev_mem = m;
    }
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    uint64_t host = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 4 : 0;
    if (l->mem == LIMIT_UNSET)
        l->mem = listen ? dev_mem : 0;
    if (l->objects == LIMIT_UNSET)
        l->objects = listen ? LISTEN_MAX_OBJECTS : 0;
    if (l->host == LIMIT_UNSET)
        l->host = listen ? host : 0;
}

static bool env_off(const char *name)
{
    const char *v = getenv(name);
    return v && !strcmp(v, "0");
}

static int parse_args(int argc, char **argv, struct options *o)
{
    enum {
        OPT_NO_PIPELINE = 256,
        OPT_NO_DIRECT,
        OPT_NO_DRIVER_STAGING,
        OPT_MAX_MEM,
        OPT_MAX_OBJS,
        OPT_MAX_HOST,
        OPT_POLL,
        OPT_NO_BATCH_GATE,
        OPT_NO_SCHED_BATCH,
        OPT_PORT,
        OPT_ISOLATE,
        OPT_NO_ISOLATE,
        OPT_BUSY,
        OPT_METRICS,
        OPT_METRICS_INTERVAL,
        OPT_WORKER
    };
    static const struct option longopts[] = {
        {"device-type", required_argument, NULL, 't'},
        {"listen", no_argument, NULL, 'l'},
        {"port-file", required_argument, NULL, 'p'},
        {"name", required_argument, NULL, 'n'},
        {"port", required_argument, NULL, OPT_PORT},
        {"address", required_argument, NULL, 'a'},
        {"token-file", required_argument, NULL, 'k'},
        {"users", required_argument, NULL, 'u'},
        {"isolate", no_argument, NULL, OPT_ISOLATE},
        {"no-isolate", no_argument, NULL, OPT_NO_ISOLATE},
        {"busy-share", no_argument, NULL, OPT_BUSY},
        {"metrics-file", required_argument, NULL, OPT_METRICS},
        {"metrics-interval", required_argument, NULL, OPT_METRICS_INTERVAL},
        {"worker", required_argument, NULL, OPT_WORKER},
        {"pool-buffers", required_argument, NULL, 'b'},
        {"pool-size", required_argument, NULL, 's'},
        {"no-pipeline", no_argument, NULL, OPT_NO_PIPELINE},
        {"no-direct", no_argument, NULL, OPT_NO_DIRECT},
        {"no-driver-staging", no_argument, NULL, OPT_NO_DRIVER_STAGING},
        {"max-session-mem", required_argument, NULL, OPT_MAX_MEM},
        {"max-session-objects", required_argument, NULL, OPT_MAX_OBJS},
        {"max-session-host", required_argument, NULL, OPT_MAX_HOST},
        {"poll-us", required_argument, NULL, OPT_POLL},
        {"no-batch-gate", no_argument, NULL, OPT_NO_BATCH_GATE},
        {"no-sched-batch", no_argument, NULL, OPT_NO_SCHED_BATCH},
        {"verbose", no_argument, NULL, 'v'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    int c, isolate = -1; /* -1: not said */
    o->type = CL_DEVICE_TYPE_ALL;
    o->worker_fd = -1;
    o->xfer = (struct exec_xfer_cfg){.pool_n = EXEC_POOL_N,
                                     .pool_size = EXEC_POOL_SIZE,
                                     .pipeline = !env_off("VOCL_PIPELINE"),
                                     .direct = !env_off("VOCL_DIRECT"),
                                     .driver_staging = !env_off("VOCL_DRIVER_STAGING")};
    /* The environment gives defaults (vocl-run passes it to every rank). */
    const char *n = getenv("VOCL_POOL_BUFFERS"), *sz = getenv("VOCL_POOL_SIZE");
    if (n && *n && set_pool_n(o, n))
        return 2;
    if (sz && *sz && set_pool_size(o, sz))
        return 2;
    o->limits = (struct exec_limits){LIMIT_UNSET, LIMIT_UNSET, LIMIT_UNSET};
    const char *mm = getenv("VOCL_MAX_SESSION_MEM"), *mo = getenv("VOCL_MAX_SESSION_OBJECTS"),
               *mh = getenv("VOCL_MAX_SESSION_HOST");
    if (mm && *mm && set_limit(&o->limits.mem, "VOCL_MAX_SESSION_MEM", mm, true))
        return 2;
    if (mo && *mo && set_limit(&o->limits.objects, "VOCL_MAX_SESSION_OBJECTS", mo, false))
        return 2;
    if (mh && *mh && set_limit(&o->limits.host, "VOCL_MAX_SESSION_HOST", mh, true))
        return 2;
    const char *poll = getenv("VOCL_POLL_US");
    o->poll_ns = EXEC_POLL_NS;
    o->gate_batches = !env_off("VOCL_BATCH_GATE");
    o->sched_batch = !env_off("VOCL_SCHED_BATCH");
    if (poll && *poll && set_poll(o, "VOCL_POLL_US", poll))
        return 2;
    o->port = VOCL_DEFAULT_PORT;
    while ((c = getopt_long(argc, argv, "t:lp:n:a:k:u:b:s:vqhV", longopts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (parse_type(optarg, &o->type)) {
                fprintf(stderr, "voclproxyd: unknown device type '%s'\n", optarg);
                return 2;
            }
            break;
        case 'l': o->listen = true; break;
        case 'p': o->port_file = optarg; break;
        case 'n': o->name = optarg; break;
        case OPT_PORT: {
            char *end;
            long p = strtol(optarg, &end, 10);
            if (*end || p < 0 || p > 65535) {
                fprintf(stderr, "voclproxyd: --port %s: not a port (0 to 65535)\n", optarg);
                return 2;
            }
            o->port = (int)p;
            break;
        }
        case 'a': o->address = optarg; break;
        case 'k': o->token_file = optarg; break;
        case 'u': o->users = optarg; break;
        case OPT_ISOLATE:
            isolate = 1;
            break;
        case OPT_NO_ISOLATE:
            isolate = 0;
            break;
        case OPT_BUSY:
            o->busy_share = true;
            break;
        case OPT_METRICS: o->metrics_file = optarg; break;
        case OPT_METRICS_INTERVAL: {
            char *end;
            double sec = strtod(optarg, &end);
            if (end == optarg || *end || !(sec >= 0.1 && sec <= 3600)) {
                fprintf(stderr, "voclproxyd: --metrics-interval %s: seconds from 0.1 to 3600\n",
                        optarg);
                return 2;
            }
            o->metrics_ns = (uint64_t)(sec * 1e9);
            break;
        }
        case OPT_WORKER: o->worker_fd = atoi(optarg); break;
        case 'b':
            if (set_pool_n(o, optarg))
                return 2;
            break;
        case 's':
            if (set_pool_size(o, optarg))
                return 2;
            break;
        case OPT_NO_PIPELINE: o->xfer.pipeline = false; break;
        case OPT_NO_DIRECT: o->xfer.direct = false; break;
        case OPT_NO_DRIVER_STAGING: o->xfer.driver_staging = false; break;
        case OPT_NO_BATCH_GATE:
            o->gate_batches = false;
            break;
        case OPT_NO_SCHED_BATCH:
            o->sched_batch = false;
            break;
        case OPT_MAX_MEM:
            if (set_limit(&o->limits.mem, "--max-session-mem", optarg, true))
                return 2;
            break;
        case OPT_MAX_OBJS:
            if (set_limit(&o->limits.objects, "--max-session-objects", optarg, false))
                return 2;
            break;
        case OPT_MAX_HOST:
            if (set_limit(&o->limits.host, "--max-session-host", optarg, true))
                return 2;
            break;
        case OPT_POLL:
            if (set_poll(o, "--poll-us", optarg))
                return 2;
            break;
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
    if ((isolate >= 0 || o->worker_fd >= 0) && !o->listen) {
        fprintf(stderr, "voclproxyd: --isolate and --no-isolate are for daemon mode (--listen)\n");
        return 2;
    }
    if ((o->metrics_file || o->metrics_ns) && !o->listen) {
        fprintf(stderr, "voclproxyd: --metrics-file is for daemon mode (--listen)\n");
        return 2;
    }
    if (!o->metrics_ns)
        o->metrics_ns = METRICS_NS;
    /* A daemon shared by tenants isolates them unless told not to. */
    o->isolate = o->listen && isolate != 0;
    return -1;
}

/* VOCL_PROXY_RUSAGE=FILE: one line with this proxy's peak resident memory. */
static void report_rusage(int rank)
{
    const char *path = getenv("VOCL_PROXY_RUSAGE");
    struct rusage ru;
    if (!path || !*path || getrusage(RUSAGE_SELF, &ru))
        return;
    FILE *f = fopen(path, "a");
    if (!f) {
        vocl_warn("cannot write %s", path);
        return;
    }
    fprintf(f, "voclproxyd rank %d maxrss_kb %ld\n", rank, ru.ru_maxrss);
    fclose(f);
}

/*
 * A CPU device's driver runs the kernels on threads of its own, beside the
 * thread that serves the clients, on the same cores.  Woken by a command
 * (this thread's enqueue, a gate it opens), one takes that thread's core at
 * once, before it has read the requests that follow.  With several devices
 * that costs: measured on 2 cores, a client's batches for the two devices
 * of one proxy then ran one after the other, with some 20 switches between
 * threads a round of kmer-assemble.  Under SCHED_BATCH a woken thread waits
 * for the running one's turn to end, and gets the same share of the
 * processor.  With one device the same wake-up keeps the device busy while
 * this thread reads on, and is kept where the node has a core for each
 * rank: under SCHED_BATCH a stream of launches to one device took 1.24x as
 * long (PoCL's threads ran 50 % more).  Where it has more ranks than cores
 * (vocl_backoff_node_busy) there is no core to spare, and the woken thread
 * keeps this one from the rest of the batch, hence from the gate's opening:
 * kmer's round through 2 proxies of 1 device on 2 cores (split-floor) took
 * 146 us against 183 us without it, medians of 7 alternating runs.
 * Only where every device is a CPU: a GPU driver's threads call back the
 * ends of commands, and those should run at once.  The driver's threads
 * are those that came while the devices were opened (before: the list
 * from before).
 */
static void batch_driver_threads(const struct exec_node *node, const struct vocl_threads *before)
{
    if (node->ndev < 2 && !vocl_backoff_node_busy())
        return;
    for (unsigned i = 0; i < node->ndev; i++)
        if (!(node->types[i] & CL_DEVICE_TYPE_CPU))
            return;
    int n = vocl_threads_batch(before);
    if (n < 0)
        vocl_warn("cannot list this process's threads: the driver's stay in SCHED_OTHER");
    else
        vocl_info("%d thread(s) of the driver (CPU devices) run under SCHED_BATCH", n);
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
    if (o.worker_fd >= 0) {
        /* A worker: nothing of the daemon's but the pipe of its port (nor
         * its service manager: the daemon speaks to it). */
        unsetenv("NOTIFY_SOCKET");
        unsetenv("WATCHDOG_USEC");
        if (o.worker_fd > 3)
            close_range(3, (unsigned)o.worker_fd - 1, 0);
        close_range((unsigned)o.worker_fd + 1, ~0u, 0);
        char prefix[64];
        snprintf(prefix, sizeof(prefix), "voclproxyd[worker %d]", (int)getpid());
        vocl_log_set_prefix(prefix);
    } else if (o.isolate && proxyd_workers_init(argc, argv)) {
        vocl_error("--isolate: out of memory");
        return 1;
    }

    int provided;
    /* hwloc's OpenCL plugin stays out of this process for its life;
     * MPI_Init leaves out more (mpi_start.h). */
    setenv("HWLOC_COMPONENTS", "-opencl", 0);
    /* If libvocl is registered as an ICD, the native loader loads it here too:
     * tell it that it is inside a proxy, where it must stay out of the way. */
    setenv("VOCL_IN_PROXY", "1", 1);
    /* The devices first: MPI_Init waits for the application's rank, which
     * may take its time to get there (a Python interpreter loading its
     * modules), and the application's first call waits for the devices. */
    struct vocl_threads before;
    bool listed = o.sched_batch && vocl_threads_list(&before);
    const struct vocl_native_api *cl = vocl_native_get();
    struct exec_node node;
    bool opened = cl && exec_node_open(&node, cl, o.type, NULL) == 0;
    if (listed && opened)
        batch_driver_threads(&node, &before);
    if (listed)
        vocl_threads_free(&before);
    /* Daemon mode speaks UCX only (common/ucx.h): no MPI at all. */
    bool mpi = !o.listen;
    if (mpi && vocl_mpi_start(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        vocl_error("MPI_Init_thread failed");
        return 1;
    }
    /* No MPI error ends the proxy.  A message it drops is received cut
     * short (MPI_Mrecv into a small buffer), which MPICH reports on
     * MPI_COMM_WORLD's handler, not on the communicator's. */
    int rank = 0, size = 0;
    if (mpi) {
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        MPI_Comm_size(MPI_COMM_WORLD, &size);
    } else {
        vocl_log_stamp = 1; /* (a daemon's log is read long after) */
    }
    if (o.worker_fd < 0 && mpi) {
        char prefix[64];
        snprintf(prefix, sizeof(prefix), "voclproxyd[%d]", rank);
        vocl_log_set_prefix(prefix);
    }
    vocl_backoff_setup();
    proxyd_self_rank = rank;
    if (!getenv("VOCL_PROXY_STDOUT"))
        proxyd_output_capture();

    if (!opened) {
        vocl_error("no native OpenCL library");
        if (mpi)
            MPI_Finalize();
        return 1;
    }
    if (node.ndev == 0)
        vocl_warn("no OpenCL device of the requested type on this node");
    node.xfer = o.xfer;
    default_limits(&o.limits, o.listen, &node);
    node.limits = o.limits;
    node.poll_ns = o.poll_ns;
    node.gate_batches = o.gate_batches;
    node.busy_share = o.busy_share;
    /* Even serial (one staging buffer) reads are sent by the stream thread,
     * which may wait for a device: this thread never must.  Without it, or
     * the threads that answer later, build and watch, the serving thread
     * would do their waiting: the proxy does not start. */
    if (!(node.stream = exec_stream_start(cl)) || !exec_replies_start() || !exec_builds_start() ||
        !exec_watch_start()) {
        vocl_error("cannot start the proxy's threads (out of memory, or ulimit -u): it would "
                   "serve its clients on one thread that waits");
        if (mpi)
            MPI_Finalize();
        return 1;
    }
    vocl_log(o.listen && o.worker_fd < 0 ? VOCL_LOG_NOTE : VOCL_LOG_INFO, "serving %u devices; staging %u x %zu KiB%s%s%s", node.ndev,
              o.xfer.pipeline ? o.xfer.pool_n : 1, o.xfer.pool_size >> 10,
              o.xfer.driver_staging ? " per context" : "",
              o.xfer.pipeline ? ", pipelined" : ", not pipelined",
              o.xfer.direct ? ", direct where possible" : "");
    if (o.listen && o.worker_fd < 0)
        vocl_note("per session at most: %" PRIu64 " MiB of memory objects, %" PRIu64
                  " objects, %" PRIu64 " MiB of host memory (0: no limit; --max-session-*)",
                  o.limits.mem >> 20, o.limits.objects, o.limits.host >> 20);

    /* After the native library is loaded: PoCL's LLVM puts its own handler there. */
    sigaction(SIGUSR1, &(struct sigaction){.sa_handler = proxyd_want_state, .sa_flags = SA_RESTART},
              NULL);
    if (o.listen) {
        struct sigaction stop = {.sa_handler = proxyd_want_stop};
        sigaction(SIGTERM, &stop, NULL);
        sigaction(SIGINT, &stop, NULL);
        rc = proxyd_listen_mode(&node, &o);
    } else {
        const char *apps = getenv("VOCL_APP_RANKS");
        int nclients = apps ? atoi(apps) : 0;
        if (nclients <= 0 || nclients >= size || rank < nclients) {
            vocl_error("job mode needs VOCL_APP_RANKS (1..%d) with this rank above it: "
                       "start proxies with vocl-run",
                       size - 1);
            rc = 1;
        } else {
            rc = proxyd_job_mode(&node, nclients);
        }
    }
    exec_stream_stop(node.stream);
    exec_node_close(&node);
    report_rusage(rank);
    if (!mpi)
        return rc;
    if (atomic_load(&proxyd_peer_died)) {
        /* (await_exits says why.)  A client that left before the death
         * waits in MPI_Finalize: only MPI_Abort ends it.  The others get a
         * second to end by themselves first. */
        vocl_warn("a client or a proxy died, and MPI_Finalize would wait for it: ending "
                  "the job with MPI_Abort");
        if (proxyd_left_told || proxyd_left_untold)
            nanosleep(&(struct timespec){1, 0}, NULL);
        vocl_mpi_abort(MPI_COMM_WORLD, 1);
    }
    MPI_Finalize();
    return rc;
}
