/*
 * metrics.h - voclproxyd --metrics-file: the daemon's figures in the
 * Prometheus text format, for node_exporter's textfile collector.
 *
 * Each process counts what it serves (a worker, its one client).  A
 * worker writes its figures to a file of its own beside its session file
 * (workers.c), every second and as it ends; the daemon adds those of its
 * live workers to its own, and folds a worker's last ones into its totals
 * when it reaps it, so that counters only grow.
 */
#ifndef VOCL_PROXYD_METRICS_H
#define VOCL_PROXYD_METRICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "executor.h"

/* Why a connection was refused: its count's name and its label. */
#define PROXYD_REFUSALS(X)                                                                        \
    X(TOKEN, "token")                 /* a wrong or missing token, or a worker's key */           \
    X(USER, "user")                   /* a user name not its own */                               \
    X(DRAINED, "drained")             /* vocl-ctl drain */                                        \
    X(HELLO_TIMEOUT, "hello_timeout") /* nothing, or no HELLO, in time */                         \
    X(GREETING, "greeting")           /* too many connections being greeted at once */            \
    X(WORKER, "worker")               /* no worker could take it */                               \
    X(OTHER, "other")                 /* another wire version, out of memory, no thread */

/* A process's counters (as a worker's file names them). */
#define PROXYD_COUNTERS(X)                                                                        \
    X(COMMANDS, "commands")                                                                       \
    X(BYTES_IN, "bytes_received")                                                                 \
    X(BYTES_OUT, "bytes_sent")                                                                    \
    X(ACCEPTED, "accepted")

enum proxyd_count {
#define PROXYD_X(name, text) PROXYD_##name,
    PROXYD_COUNTERS(PROXYD_X)
#undef PROXYD_X
#define PROXYD_X(name, text) PROXYD_REFUSED_##name,
    PROXYD_REFUSALS(PROXYD_X)
#undef PROXYD_X
    PROXYD_COUNTS
};

/* This process's counts (any thread adds). */
extern atomic_uint_fast64_t proxyd_counts[PROXYD_COUNTS];

static inline void proxyd_count(enum proxyd_count c, uint64_t n)
{
    atomic_fetch_add_explicit(&proxyd_counts[c], n, memory_order_relaxed);
}

/* What a process reports: counters, which only grow, and gauges. */
struct proxyd_figures {
    uint64_t count[PROXYD_COUNTS];
    uint64_t sessions, objects, memory; /* open sessions; what they hold */
    uint16_t busy[EXEC_BUSY_DEVS];      /* each device's busy share, in thousandths */
    bool busy_known;                    /* --busy-share: busy is measured */
};

/* This process's figures (on the serving thread): its counts and its
 * node's, sessions its open sessions. */
void proxyd_figures_own(struct exec_node *node, uint64_t sessions, struct proxyd_figures *f);
/* Adds f's counters to *to, and its gauges too if gauges (saturating). */
void proxyd_figures_add(struct proxyd_figures *to, const struct proxyd_figures *f, bool gauges);
/* Each counter of *to at least f's (a worker's file read again). */
void proxyd_figures_max(struct proxyd_figures *to, const struct proxyd_figures *f);
/* f into path, whole (written beside it and renamed); 0 or -1. */
int proxyd_figures_write(const char *path, const struct proxyd_figures *f);
/* A worker's file name (dir's entry) into *f, read as untrusted: a
 * regular file of at most 4 KiB, each line "NAME VALUE" (busy: "busy
 * DEVICE PERMILLE"), every name once; anything else rejects the file: 0
 * or -1 (*f then zero). */
int proxyd_figures_read(int dir, const char *name, struct proxyd_figures *f);

/* The daemon's metrics file: f and node's devices in Prometheus's text
 * format, written beside path and renamed; 0 or -1 (said once). */
int proxyd_metrics_write(const char *path, const struct proxyd_figures *f, struct exec_node *node);

#endif
