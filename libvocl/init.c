/*
 * init.c - setting libvocl up on the first OpenCL call, and tearing it down
 * at exit.
 *
 * Job mode: vocl-run starts one MPI job whose first VOCL_APP_RANKS ranks run
 * the application and whose other ranks are voclproxyd.  libvocl initialises
 * MPI if the application did not, duplicates MPI_COMM_WORLD (the proxies do
 * the same, collectively) and greets every proxy.
 *
 * MPI_Init loads hwloc, whose OpenCL plugin calls clGetPlatformIDs: under
 * LD_PRELOAD that lands back here, in the middle of initialisation.
 * vocl_mpi_start keeps the plugin out; should it come anyway, the
 * initialising thread is marked, and such calls go to the native library.
 */
#include "backoff.h"
#include "vocl.h"
#include "shm.h"
#include "profile.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "bell.h"
#include "got.h"
#include "liveness.h"
#include "mpi_start.h"
#include "token.h"
#include "executor.h"

struct vocl_state vocl;

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static _Thread_local bool in_init;
static bool init_done;
static cl_int init_result;

bool vocl_initialising(void)
{
    return in_init;
}

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    long x = strtol(v, &end, 0);
    if (*end) {
        vocl_warn("%s=%s is not a number: using %ld", name, v, dflt);
        return dflt;
    }
    return x;
}

struct vocl_proxy *vocl_proxy_alloc(int rank, bool local)
{
    struct vocl_proxy *px = calloc(1, sizeof(*px));
    if (!px)
        return NULL;
    px->index = vocl.nproxies;
    px->rank = rank;
    px->comm = vocl.comm;
    px->live = rank;
    px->local = local;
    pthread_mutex_init(&px->lock, NULL);
    atomic_init(&px->next_id, VOCL_ID_CLIENT_MIN);
    vocl_wr_init(&px->rx);
    return px;
}

struct vocl_proxy *vocl_proxy_new(int rank, bool local)
{
    struct vocl_proxy *px = vocl_proxy_alloc(rank, local);
    if (!px)
        return NULL;
    struct vocl_proxy **np = realloc(vocl.proxies, (vocl.nproxies + 1) * sizeof(*np));
    if (!np) {
        free(px);
        return NULL;
    }
    vocl.proxies = np;
    vocl.proxies[vocl.nproxies++] = px;
    return px;
}

/* A proxy of this node: its bell (bell.h), which isend rings.  Without one
 * (an older proxy, VOCL_BELL=0 on either side, a proxy of another user)
 * requests wait for the end of its naps, as before. */
static void open_bell(struct vocl_proxy *px)
{
    if (!px->shm || !vocl_bell_allowed())
        return;
    struct vocl_call c;
    memset(&c, 0, sizeof(c)); /* (vocl_call_init would wait for this initialisation) */
    c.px = px;
    if (vocl_call_start(&c, VOCL_OP_BELL) == 0) {
        vocl_enc_BELL_req(c.w, &(struct vocl_msg_BELL_req){0});
        vocl_call_send(&c);
    }
    if (c.err == CL_SUCCESS) {
        struct vocl_msg_BELL_rep rep;
        vocl_dec_BELL_rep(&c.r, &rep);
        if (!c.r.fail && rep.fd != UINT32_MAX)
            px->bell = vocl_map_memfd((long)rep.pid, rep.fd, VOCL_BELL_SIZE, rep.token);
        vocl_info("proxy %d: %s", px->rank,
                  px->bell ? "its bell wakes it for each request" : "no bell: it takes its naps");
    }
    vocl_call_end(&c);
}

/* HELLO: learn the proxy's devices and add them to the platform's list. */
int vocl_greet(struct vocl_proxy *px)
{
    struct vocl_call c;
    memset(&c, 0, sizeof(c));
    c.px = px;
    /* A proxy of this node may share large buffers (shm.h). */
    /* (Not with failover: the dead proxy's memory would hold the data.) */
    uint64_t node = !px->local && vocl_shm_allowed() && !vocl.failover ? vocl_node_key(true) : 0;
    if (vocl_call_start(&c, VOCL_OP_HELLO) == 0) {
        struct vocl_msg_HELLO_req hello = {
            .version = VOCL_WIRE_VERSION,
            .features = node ? VOCL_FEAT_SHM : VOCL_FEAT_NONE,
            .flags = (vocl_trace_on ? VOCL_HELLO_TRACE : 0) | (vocl.token ? VOCL_HELLO_TOKEN : 0),
            .node_key = node,
        };
        if (vocl.token)
            hello.token = (struct vocl_bytes){vocl.token->bytes, vocl.token->len};
        char host[256] = "";
        if (vocl.user && vocl_user_name_ok(vocl.user, strlen(vocl.user))) {
            gethostname(host, sizeof(host) - 1);
            hello.flags |= VOCL_HELLO_USER;
            hello.user = (struct vocl_str){vocl.user, strlen(vocl.user), 0};
            hello.host = (struct vocl_str){host, strlen(host), 0};
        }
        vocl_enc_HELLO_req(c.w, &hello);
        vocl_call_send(&c);
    }
    struct vocl_msg_HELLO_rep rep = {0};
    if (c.err == CL_SUCCESS) {
        const char *why = vocl_dec_HELLO_rep(&c.r, &rep);
        px->shm = rep.features & VOCL_FEAT_SHM;
        px->chunk = (size_t)rep.chunk;
        if (rep.features & VOCL_FEAT_LIMITS) {
            px->mem_limit = rep.mem_limit;
            px->obj_limit = rep.obj_limit;
        }
        if (why || rep.devices.n > 4096 || c.r.fail || px->chunk < (4u << 10) ||
            px->chunk > (64u << 20) || !vocl_node_name_ok(rep.node.p, rep.node.len))
            c.err = CL_OUT_OF_RESOURCES;
        else
            memcpy(px->node, rep.node.p, rep.node.len); /* (px->node was zeroed) */
    }
    uint32_t ndev = c.err == CL_SUCCESS ? rep.devices.n : 0;
    struct vocl_obj **devs = NULL;
    /* (Not for a spare, whose devices nobody lists: it may be greeted amid
     * the application's work, while clGetDeviceIDs reads the array.) */
    if (c.err == CL_SUCCESS && ndev && !px->spare) {
        devs = realloc(vocl.devices, (vocl.ndevices + ndev) * sizeof(*devs));
        if (!devs)
            c.err = CL_OUT_OF_HOST_MEMORY;
        else
            vocl.devices = devs;
    }
    struct vocl_rd it;
    struct vocl_rec_hello_device rec;
    vocl_rd_init(&it, rep.devices.raw, rep.devices.raw_len);
    for (uint32_t i = 0; c.err == CL_SUCCESS && i < ndev && vocl_next_hello_device(&it, &rec);
         i++) {
        struct vocl_obj *d = vocl_obj_new(VOCL_T_DEVICE, px, i + 1, NULL, NULL);
        if (!d) {
            c.err = CL_OUT_OF_HOST_MEMORY;
            break;
        }
        vocl_as_device(d)->dev_type = rec.type;
        vocl_as_device(d)->max_alloc = rec.max_alloc;
        px->ndev++;
        /* A spare's are listed by none (a migration makes its own,
         * migrate.c); nor are devices left out by HOST@DEVICES. */
        if (px->spare || (px->only && (i >= px->only_n || !px->only[i])))
            vocl_obj_forget(d);
        else
            vocl.devices[vocl.ndevices++] = d;
    }
    vocl_call_end(&c);
    if (c.err == CL_SUCCESS)
        open_bell(px);
    for (uint32_t i = px->ndev; c.err == CL_SUCCESS && px->only && i < px->only_n; i++)
        if (px->only[i]) {
            vocl_error("proxy %s has %u devices (0-%u): device %u, named in VOCL_PROXIES, "
                       "is not there", px->name, px->ndev, px->ndev ? px->ndev - 1 : 0, i);
            break;
        }
    if (c.err == CL_DEVICE_NOT_AVAILABLE && px->name)
        vocl_error("proxy %s is drained (for maintenance): it takes no new sessions",
                   px->name);
    else if (c.err == CL_INVALID_OPERATION && vocl.token)
        vocl_error("the proxy refused this client: the token in %s is not the proxy's",
                   vocl.token->path);
    else if (c.err != CL_SUCCESS && px->name)
        vocl_error("proxy %s did not answer HELLO (%s)", px->name, vocl_err_name(c.err));
    else if (c.err != CL_SUCCESS)
        vocl_error("proxy rank %d did not answer HELLO (%s)", px->rank, vocl_err_name(c.err));
    return c.err == CL_SUCCESS ? 0 : -1;
}

static int no_data(struct exec_session *s, int tag, void *buf, size_t n)
{
    (void)s, (void)tag, (void)buf, (void)n;
    return -1;
}

static int no_data_out(struct exec_session *s, int tag, const void *buf, size_t n)
{
    (void)s, (void)tag, (void)buf, (void)n;
    return -1;
}

/* In-process transfers use host pointers: the data channel is never used. */
static const struct exec_data_ops in_process_data = {.recv = no_data, .send = no_data_out};

/* Local passthrough: the node's own devices, served by the in-process executor. */
static void open_local(void)
{
    const struct vocl_native_api *cl = vocl_native_get();
    if (!cl)
        return;
    struct exec_node *node = calloc(1, sizeof(*node));
    struct exec_session *s = calloc(1, sizeof(*s));
    if (!node || !s || exec_node_open(node, cl, CL_DEVICE_TYPE_ALL, &vocl_dispatch) ||
        node->ndev == 0) {
        vocl_warn("VOCL_LOCAL: no native OpenCL device on this node");
        free(node);
        free(s);
        return;
    }
    exec_session_init(s, node, -1);
    s->in_process = true;
    s->data = &in_process_data;
    struct vocl_proxy *px = vocl_proxy_new(-1, true);
    if (!px)
        return;
    vocl_xport_local(px, s);
    vocl.local_node = node;
    vocl_greet(px);
}

static void leave(void);

/* After a peer of the job died (a proxy, or a client a proxy told us of),
 * MPI_Finalize would wait for it forever (MPICH/UCX). */
static bool peer_lost(void)
{
    return atomic_load(&vocl.proxies_lost) || vocl.peer_died;
}

/* Where MPI_Finalize must go on (ICD mode: at_finalize), the job ends with
 * MPI_Abort instead. */
static void abort_if_lost(void)
{
    if (!peer_lost())
        return;
    vocl_warn("a peer of the job died, and MPI_Finalize would wait for it: ending the job "
              "with MPI_Abort");
    vocl_mpi_abort(MPI_COMM_WORLD, 1);
}

/*
 * MPI_Finalize begins by freeing the attributes of MPI_COMM_SELF (MPI 4.0,
 * 11.2.4): libvocl takes its leave there where nothing did before, that is
 * where the application's calls of MPI_Finalize could not be redirected to
 * libvocl's (take_mpi_finalize).  Too late for MPICH, which by then no
 * longer locks; better than not at all.
 */
static int at_finalize(MPI_Comm comm, int key, void *val, void *extra)
{
    (void)comm, (void)key, (void)val, (void)extra;
    leave();
    abort_if_lost();
    return MPI_SUCCESS;
}

/*
 * libvocl must take its leave before MPICH's MPI_Finalize begins: at its
 * start MPICH stops locking (it deems the process single-threaded from then
 * on), so a call that libvocl's liveness thread is in just then keeps
 * MPICH's lock, and MPI_Finalize aborts on it.  Under LD_PRELOAD the
 * application's MPI_Finalize is libvocl's; loaded as an ICD (or preloaded
 * after a profiling tool's MPI_Finalize), libvocl redirects the
 * application's calls to its own.
 */
static int (*finalize_next)(void); /* what the redirected calls went to */

static void take_mpi_finalize(void)
{
    int (*ours_fn)(void) = MPI_Finalize;
    void *ours, *found = dlsym(RTLD_DEFAULT, "MPI_Finalize");
    memcpy(&ours, &ours_fn, sizeof(ours));
    if (found == ours)
        return; /* (preloaded) */
    /* libvocl's then calls what they called: MPI's, or a profiling tool's. */
    memcpy(&finalize_next, &found, sizeof(found));
    int failed = 0;
    int n = vocl_got_redirect("MPI_Finalize", ours, ours, &failed);
    Dl_info next;
    const char *name = found && dladdr(found, &next) && next.dli_fname ? next.dli_fname : "MPI";
    if (n == 0 || failed)
        vocl_warn("libvocl could not redirect the application's MPI_Finalize (%s's) to its own "
                  "(%d of %d references): it takes its leave inside it, where a rare abort is "
                  "possible; load libvocl with LD_PRELOAD, first, to avoid it",
                  name, failed, n + failed);
    else
        vocl_info("%d reference%s to MPI_Finalize redirected to libvocl's, which then calls "
                  "%s's", n, n == 1 ? "" : "s", name);
}

int vocl_open_mpi(void)
{
    int inited = 0, provided = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        setenv("HWLOC_COMPONENTS", "-opencl", 0); /* (for this process's life) */
        if (vocl_mpi_start(NULL, NULL, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
            vocl.init_error = "MPI_Init_thread failed";
            return -1;
        }
        vocl.mpi_ours = true;
    } else {
        MPI_Query_thread(&provided);
        if (provided < MPI_THREAD_MULTIPLE) {
            /* libvocl's liveness thread calls MPI whenever it likes: below
             * MPI_THREAD_MULTIPLE that races with every other call, inside
             * MPI (and UCX aborts the process, sooner or later). */
            vocl_error("the application initialised MPI below MPI_THREAD_MULTIPLE, and libvocl's "
                       "own threads call MPI: initialise it with MPI_Init_thread and "
                       "MPI_THREAD_MULTIPLE, or, where it calls MPI_Init, set "
                       "MPIR_CVAR_DEFAULT_THREAD_LEVEL=MPI_THREAD_MULTIPLE (MPICH; vocl-run "
                       "does); ending the job");
            vocl_mpi_abort(MPI_COMM_WORLD, 1);
        }
        take_mpi_finalize();
    }
    vocl.mpi_used = true;
    if (MPI_Comm_dup(MPI_COMM_WORLD, &vocl.comm) != MPI_SUCCESS) {
        vocl.init_error = "MPI_Comm_dup failed";
        return -1;
    }
    MPI_Comm_set_errhandler(vocl.comm, MPI_ERRORS_RETURN);
    int key;
    if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_finalize, &key, NULL) == MPI_SUCCESS)
        MPI_Comm_set_attr(MPI_COMM_SELF, key, NULL);
    return 0;
}

static void open_job(void)
{
    if (vocl_open_mpi())
        return;
    int size = 0, rank = 0;
    MPI_Comm_size(vocl.comm, &size);
    MPI_Comm_rank(vocl.comm, &rank);
    vocl.app_rank = rank;
    if (vocl.app_ranks >= size) {
        vocl.init_error = "the MPI job has no proxy ranks (vocl-run -n PROXIES)";
        return;
    }
    int *tag_ub, flag = 0;
    MPI_Comm_get_attr(vocl.comm, MPI_TAG_UB, &tag_ub, &flag);
    if (flag)
        vocl_data_tag_ub(*tag_ub); /* as the proxies do, on the same communicator */
    vocl_live_start(vocl.comm); /* answer the proxies' pings, notice their deaths */
    for (int r = vocl.app_ranks; r < size; r++) {
        struct vocl_proxy *px = vocl_proxy_new(r, false);
        if (px)
            px->spare = r >= size - vocl.spares;
        if (px && vocl_greet(px))
            px->dead = true;
        else if (px)
            vocl_failover_watch(px);
    }
}

/*
 * Under LD_PRELOAD every process a rank starts loads libvocl too (a
 * script's commands, a launcher's helpers, `timeout APP`), and the rank
 * must join the job once.  The first of them to call OpenCL claims it
 * (VOCL_RANK_CLAIM, a file vocl-guard names, made with O_EXCL); at exit,
 * only the process vocl-guard started (VOCL_RANK_PID) joins, and only if
 * none did.  Without vocl-guard, every process may.
 */
static bool rank_process(void)
{
    const char *pid = getenv("VOCL_RANK_PID");
    return !pid || !*pid || strtol(pid, NULL, 10) == (long)getpid();
}

/* The rank's claim file; NULL without vocl-guard. */
static const char *claim_path(void)
{
    const char *path = getenv("VOCL_RANK_CLAIM");
    return path && *path ? path : NULL;
}

static bool rank_claimed(void)
{
    return claim_path() && access(claim_path(), F_OK) == 0;
}

static bool claim_rank(void)
{
    const char *path = claim_path();
    if (!path)
        return true;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno != EEXIST; /* (a claim that cannot be made is no other's) */
    close(fd);
    return true;
}

static cl_int do_init(void)
{
    uint64_t start = vocl_now_ns();
    vocl_log_set_prefix("libvocl");
    vocl_log_level = (int)env_long("VOCL_VERBOSE", VOCL_LOG_WARN);
#ifdef VOCL_TEST_HOOKS
    vocl.post_delay_us = env_long("VOCL_TEST_POST_DELAY_US", 0);
#endif
    long batch = env_long("VOCL_BATCH", 64), batch_us = env_long("VOCL_BATCH_US", 500);
    vocl.batch_max = batch > 0 ? (unsigned)(batch < 4096 ? batch : 4096) : 0;
    vocl.batch_us = batch_us > 0 ? (batch_us < 1000000 ? batch_us : 1000000) : 1;
    vocl.migrate_wait_ms = env_long("VOCL_MIGRATE_WAIT_MS", 10000);
    long spares = env_long("VOCL_SPARE", 0);
    vocl.spares = spares > 0 ? (int)(spares < 4096 ? spares : 4096) : 0;
    vocl_failover_setup();
    vocl_backoff_setup();
    vocl.platform = vocl_obj_new(VOCL_T_PLATFORM, NULL, 0, NULL, NULL);
    if (!vocl.platform)
        return CL_OUT_OF_HOST_MEMORY;

    if (getenv("VOCL_IN_PROXY")) {
        /* Loaded by a proxy's ICD loader: no platform, and no noise. */
        return CL_SUCCESS;
    }
    if (env_long("VOCL_LOCAL", 0))
        open_local();
    vocl.app_ranks = (int)env_long("VOCL_APP_RANKS", 0);
    if (vocl.app_ranks > 0 && !claim_rank())
        vocl.init_error = "another process of this application rank (one that started "
                          "this one, or it started) joined the job first, and a rank joins "
                          "once: call OpenCL from one process of each rank";
    else if (vocl.app_ranks > 0) {
        vocl.job_mode = true;
        open_job();
    } else if (!vocl_connect_mode() && !vocl.local_node) {
        vocl.init_error = "no proxies: run the application with vocl-run, or name running "
                          "proxies in VOCL_PROXIES or ~/.vocl/proxies (or set VOCL_LOCAL=1 "
                          "for this node's own devices)";
    }
    if (vocl.ndevices == 0 && !vocl.init_error)
        vocl.init_error = "the proxies serve no devices";
    if (vocl.ndevices == 0)
        vocl_error("%s", vocl.init_error);
    vocl_info("%d proxies, %u devices (in %.0f ms)", vocl.nproxies, vocl.ndevices,
              (double)(vocl_now_ns() - start) / 1e6);
    if (vocl.ndevices)
        vocl_control_start();
    return CL_SUCCESS;
}

cl_int vocl_init(void)
{
    if (in_init)
        return CL_INVALID_OPERATION; /* a call from inside MPI_Init: not for us */
    pthread_mutex_lock(&init_lock);
    if (!init_done) {
        in_init = true;
        init_result = do_init();
        in_init = false;
        init_done = true;
    }
    pthread_mutex_unlock(&init_lock);
    return init_result;
}

/* A proxy that died unnoticed would hold MPI_Finalize forever: ask them all. */
static void roll_call(void)
{
    int *ranks = calloc((size_t)vocl.nproxies + 1, sizeof(*ranks));
    bool *dead = calloc((size_t)vocl.nproxies + 1, sizeof(*dead));
    struct vocl_proxy **asked = calloc((size_t)vocl.nproxies + 1, sizeof(*asked));
    int n = 0;
    for (int i = 0; ranks && dead && asked && i < vocl.nproxies; i++)
        if (!vocl.proxies[i]->local && !vocl.proxies[i]->dead) {
            asked[n] = vocl.proxies[i];
            ranks[n++] = vocl.proxies[i]->live;
        }
    if (n && vocl_live_roll_call(ranks, n, dead))
        for (int i = 0; i < n; i++)
            if (dead[i])
                vocl_xport_fail(asked[i], "no answer at exit: it died");
    free(ranks);
    free(dead);
    free(asked);
}

/*
 * Says BYE to every proxy so it frees what this process left, stops the
 * liveness thread and frees the communicator: once, at exit or in the
 * application's own MPI_Finalize.  Calls made later (destructors of other
 * libraries) fail fast: MPI is gone.
 */
static void leave(void)
{
    static bool left;
    if (left)
        return;
    left = true;
    vocl_control_stop(); /* (a migration under way ends first) */
    vocl_prof_report();
    /* From here on a proxy's death is final: what this process waited for
     * has come, and a failover would run its work again only to say
     * goodbye.  (One under way ends first: vocl_failover_settle.) */
    for (int i = 0; i < vocl.nproxies; i++) {
        pthread_mutex_lock(&vocl.proxies[i]->lock);
        vocl.proxies[i]->leaving = true;
        pthread_mutex_unlock(&vocl.proxies[i]->lock);
    }
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin)
        roll_call();
    if (!fin)
        vocl_xport_stop(); /* (the BYE would send what waits; the thread must go) */
    vocl_relay_stop();     /* (its sessions end with the BYE) */
    for (int i = 0; i < vocl.nproxies; i++) {
        struct vocl_proxy *px = vocl.proxies[i];
        if (px->local) {
            /* Under the lock: a thread of a callback may still be in a call;
             * after it, its calls fail (the proxy is dead to them). */
            pthread_mutex_lock(&px->lock);
            exec_session_end(px->session);
            px->dead = true;
            pthread_mutex_unlock(&px->lock);
            continue;
        }
        if (px->dead || fin)
            continue;
        /* Whatever is still in flight must land before the proxy forgets us
         * (on a spare: after what the replay of its log sends). */
        vocl_failover_settle(px);
        vocl_xport_land(px, NULL, 0, UINT64_MAX);
        /* Answered: whatever the proxy sent before (a ping) is here by then. */
        struct vocl_call c;
        memset(&c, 0, sizeof(c));
        c.px = px;
        if (vocl_call_start(&c, VOCL_OP_BYE) == 0) {
            vocl_enc_BYE_req(c.w, &(struct vocl_msg_BYE_req){
                                      .peer_died = atomic_load(&vocl.proxies_lost) ? 1 : 0});
            /* The reply's byte: a peer died (a client, or a proxy this
             * process did not use), and MPI_Finalize would wait for it. */
            struct vocl_msg_BYE_rep rep;
            if (vocl_call_send(&c) == 0 && !vocl_dec_BYE_rep(&c.r, &rep) && !c.r.fail &&
                rep.peer_died)
                vocl.peer_died = true;
        }
        vocl_call_end(&c);
        pthread_mutex_lock(&px->lock);
        px->dead = true;
        pthread_mutex_unlock(&px->lock);
    }
    vocl_output_write();
    vocl_live_stop();
    /* Unreceived pings would make UCX complain at exit, on stdout. */
    vocl_live_drain();
    vocl_connect_close();
    if (vocl.mpi_used && !fin && vocl.comm != MPI_COMM_NULL)
        MPI_Comm_free(&vocl.comm);
}

/*
 * In job mode the proxies wait in MPI_Comm_dup for every application rank,
 * so even a process that never called OpenCL must get that far once, before
 * MPI is finalized.  (A rank that speaks to the proxies without libvocl sets
 * VOCL_IN_PROXY, as the proxies do: tests/reliability/hostile.c.)
 */
static void join_job(void)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (!init_done && !fin && env_long("VOCL_APP_RANKS", 0) > 0 && !getenv("VOCL_CONNECT") &&
        !getenv("VOCL_IN_PROXY") && rank_process() && !rank_claimed())
        vocl_init();
}

/*
 * An application that uses MPI itself finalizes it before our destructor
 * runs (the MPI profiling interface): a rank that never called OpenCL joins
 * the job first.  at_finalize then takes the leave.
 */
__attribute__((visibility("default"))) int MPI_Finalize(void)
{
    join_job();
    if (init_done) {
        leave();
        if (peer_lost()) {
            /* The process then exits with the application's status, and
             * mpiexec ends the job (a rank that exits unfinalized ends it). */
            vocl_warn("a peer of the job died: MPI_Finalize returns without finalizing, "
                      "which would wait for it");
            return MPI_SUCCESS;
        }
    }
    return finalize_next ? finalize_next() : PMPI_Finalize();
}

/* At exit: take leave of the proxies (also where no MPI is used), then
 * leave MPI as we found it. */
__attribute__((destructor)) static void vocl_fini(void)
{
    join_job();
    if (!init_done)
        return;
    leave();
    int fin = 0;
    MPI_Finalized(&fin);
    if (!vocl.mpi_ours || fin)
        return;
    if (peer_lost()) {
        /* Leave MPI as it is, so the process ends with the application's
         * own status: vocl-guard reports it, and the job ends with it. */
        vocl_warn("a peer of the job died: leaving without MPI_Finalize, with the "
                  "application's exit status");
        return;
    }
    PMPI_Finalize(); /* (at_finalize: MPI_Abort if a proxy died meanwhile) */
}
