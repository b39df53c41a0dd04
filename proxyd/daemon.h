/*
 * daemon.h - what voclproxyd's files share: main.c (options, start),
 * serve.c (the serving loop), and the MPI channels: channel.c (a
 * session's, and its data), replies.c, output.c (what kernels print) and
 * peers.c (between the proxies of one job).
 */
#ifndef VOCL_PROXYD_DAEMON_H
#define VOCL_PROXYD_DAEMON_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <mpi.h>

#include "chan.h"
#include "executor.h"
#include "wire.h"

struct options {
    cl_device_type type;
    bool listen;
    const char *port_file;
    const char *name; /* daemon mode: its name for vocl-ctl (default: the host name) */
    const char *address; /* daemon mode: the interface's address it listens on (NULL: all) */
    int port;            /* daemon mode: the port it listens on */
    const char *token_file;
    const char *users; /* daemon mode: --users DIR, a token per user (token.h) */
    struct exec_xfer_cfg xfer;
    struct exec_limits limits;
    uint64_t poll_ns;
    bool gate_batches; /* --no-batch-gate: false */
    bool sched_batch;  /* --no-sched-batch: false */
    bool isolate;  /* daemon mode: each client served by a worker process (workers.c) */
    bool busy_share; /* --busy-share: each device's busy share measured (executor/busy.c) */
    const char *metrics_file; /* daemon mode: its figures for Prometheus (metrics.h) */
    uint64_t metrics_ns;      /* how often they are written */
    int worker_fd; /* a worker: its port goes there (-1: not a worker) */
};

/* channel.c */

/* A session's channel (its transport): where its client speaks (job
 * mode: its rank of the job's communicator; daemon mode: its UCX
 * connection), and the client's number in liveness.h. */
struct proxyd_chan {
    struct vocl_chan ch;
    int live;
    bool job; /* job mode: a client's death ends the job (main) */
    /* Replies the client has not taken yet (a slow or stopped client):
     * kept, with their buffers, until it has; nothing waits for them. */
    pthread_mutex_t lock;
    struct unsent *unsent;
    atomic_size_t unsent_bytes; /* (read without the lock: 0, nothing kept) */
    /* A write's chunk being received into rx_buf (channel.c): the serving
     * thread's alone. */
    struct vocl_req rx;
    void *rx_buf;
};
/* Initialiser of a channel's fields after job. */
#define PROXYD_CHAN_REST                                                                           \
    .lock = PTHREAD_MUTEX_INITIALIZER, .unsent = NULL, .unsent_bytes = 0, .rx = VOCL_REQ_NULL,     \
    .rx_buf = NULL

/* A peer (client or proxy) stopped answering pings: the job ends with
 * MPI_Abort (main). */
extern atomic_bool proxyd_peer_died;
/* Clients that said BYE, told that a peer died or not (serve.c counts). */
extern int proxyd_left_told, proxyd_left_untold;
/* A session's data channel (chan.h: MPI or UCX). */
extern const struct exec_data_ops proxyd_chan_data;
/* Posts a send to s's client (*req: VOCL_REQ_NULL when it fails); waits
 * for one, not forever and not past the client's death; 0 or -1. */
int proxyd_chan_post(struct exec_session *s, int tag, const void *buf, size_t n,
                     struct vocl_req *req);
int proxyd_chan_sent(struct exec_session *s, struct vocl_req *req);

/* replies.c */

/* Sends w to s's client without waiting for it to take it (w's buffer
 * may be taken for that: w stays usable); 0 or -1. */
int proxyd_reply(struct exec_session *s, struct vocl_wr *w);
/* Lets go of the replies c's client has taken since; false when the
 * client has left too many untaken (its next requests should wait) or
 * one for too long (its session should end: *stuck). */
bool proxyd_chan_flowing(struct proxyd_chan *c, bool *stuck);
/* The session is over: replies not taken are cancelled. */
void proxyd_chan_drop(struct proxyd_chan *c);
/* Sends s's context notifications now, without a reply (none: nothing). */
void proxyd_notes_push(struct exec_session *s);
/* Tells s's client that its session was ended, and why (CLOSED). */
void proxyd_tell_closed(struct exec_session *s, const char *why);

/* output.c */

/* Kernel printf: stdout into a pipe, sent to clients with their replies. */
void proxyd_output_capture(void);
/* The proxy's own standard output (a copy of it, once captured). */
extern int proxyd_stdout;
/* What kernels printed since, as an OUTPUT message in msg posted to s's
 * client (*req; MPI_REQUEST_NULL: nothing to send); 0 or -1. */
int proxyd_output_post(struct exec_session *s, struct vocl_wr *msg, struct vocl_req *req);

/* peers.c */

/* Migrations go between the proxies of one job (set in job mode). */
extern MPI_Comm proxyd_peer_comm;
extern int proxyd_peer_self, proxyd_peer_size;
/* The data channel's peer operations (executor.h). */
bool proxyd_peer_ok(int rank);
int proxyd_peer_send(int rank, int tag, const void *buf, size_t n);
int proxyd_peer_recv(int rank, int tag, void *buf, size_t n, size_t *got);
bool proxyd_peer_gone(void);
/* The next message from src on tag of comm, into buf when it fits in n
 * bytes, else dropped (*got: its size), waited for while src lives (live:
 * its number in liveness.h) and *closed (if given) is false: 0, -1 (MPI
 * failed, or closed), or 1 (src died). */
int proxyd_recv_from(struct vocl_chan ch, int tag, int live, const atomic_bool *closed, void *buf,
                     size_t n, size_t *got);

/* workers.c (--isolate) */

/* The arguments and environment workers start with: main's, before MPI_Init. */
int proxyd_workers_init(int argc, char **argv);
/* Starts a worker ahead, if none is waiting for a client. */
void proxyd_workers_ahead(void);
/* A worker for client (one started ahead, or a new one), its port in port
 * (VOCL_LIVE_MOVED_MAX bytes: "PORT KEY"); another is started ahead.  Its pid, or -1 with a
 * message. */
pid_t proxyd_worker_take(int client, char *port);
/* How the worker that was given key ended, into out (n bytes): "signal N
 * (NAME)", "status N", "ended", or "unknown" (waits a second for it to be
 * reaped). */
void proxyd_worker_fate(uint64_t key, char *out, size_t n);
/* Reaps the workers that ended, saying how; the serving loop calls it. */
void proxyd_workers_reap(void);
/* The daemon stops: so do its workers (SIGTERM). */
void proxyd_workers_stop(void);
/* A worker's side: its port, to the daemon (on the pipe fd, kept open);
 * whether the daemon has handed it out (closed its end of fd); what its
 * session holds (NULL: none), for its siblings; and its siblings' sessions
 * (at most max, into out; their strings stay until the next call, the
 * serving thread's). */
int proxyd_worker_report(int fd, const char *port);
bool proxyd_worker_handed(int fd);
void proxyd_worker_publish(const struct exec_session_state *st, cl_uint ndev);
/* --metrics-file: a worker's figures, for its daemon; the daemon's sum of
 * its workers' (the reaped ones' counters too), added to *sum. */
struct proxyd_figures;
void proxyd_worker_figures(const struct proxyd_figures *f);
void proxyd_workers_figures(struct proxyd_figures *sum);
size_t proxyd_worker_siblings(struct exec_session_state *out, size_t max);

/* serve.c */

extern int proxyd_self_rank;
void proxyd_want_state(int sig);
void proxyd_want_stop(int sig); /* daemon mode: SIGTERM, SIGINT */
int proxyd_job_mode(struct exec_node *node, int nclients);
int proxyd_listen_mode(struct exec_node *node, const struct options *o);

#endif
