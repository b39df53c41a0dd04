/*
 * liveness.h - noticing that a peer process died.
 *
 * MPICH over UCX never reports a killed rank: a receive from it neither
 * completes nor fails.  So liveness is VOCL's own business.  Every VOCL
 * process of a job (the application's libvocl and each voclproxyd) answers
 * pings on a thread of its own, and every wait on a peer goes through
 * vocl_live_ok: once the peer has been silent for VOCL_LIVE_PING_NS, it is
 * pinged.  A peer on this node (the same kernel and PID namespace: the
 * ranks tell each other their pids at start) is dead when a ping is
 * unanswered and its process is gone: a starved peer is slow, not dead
 * (silent for 10 timeouts, it is named in a warning: that wait may never
 * end).
 * A peer elsewhere is dead when a ping is unanswered for the timeout
 * (VOCL_PEER_TIMEOUT seconds, default 3, counted until this process's own
 * thread looked for the answer: a starved process does not take its peers
 * for dead).  A long kernel is no silence: the
 * peer's liveness thread answers while its main thread waits on the device.
 *
 * Peers are numbered.  In job mode a peer's number is its rank on the
 * job's communicator.  In daemon mode each client and proxy pair has a UCX
 * connection of its own (ucx.h), and both sides link it (vocl_live_link)
 * right after connecting: the link's number names the peer from then on.
 * A linked peer is also dead as soon as UCX says its connection failed.
 */
#ifndef VOCL_LIVENESS_H
#define VOCL_LIVENESS_H

#include <stdbool.h>
#include <stdint.h>

#include <mpi.h>

struct vocl_conn; /* ucx.h */

/* A wait silent this long pings its peer. */
#define VOCL_LIVE_PING_NS (500ull * 1000000u)

/* Starts answering pings on comm (which must stay valid until
 * vocl_live_stop).  Collective: every rank of comm calls it, right after
 * making comm.  MPI_COMM_NULL: daemon mode, peers linked later.  0, or -1
 * when the thread cannot start. */
int vocl_live_start(MPI_Comm comm);
/* Daemon mode: both sides of connection c call this right after
 * connecting; they tell each other where they run (*pid: the far side's
 * process) and a word (*far_word: the far side's; a client's is the key a
 * worker expects of it, 0 for a daemon).
 * The peer's number, or -1 when the other side said nothing within
 * VOCL_CONNECT_TIMEOUT (or too many are linked).  A client (moved_to: VOCL_LIVE_MOVED_MAX bytes)
 * may instead be told to connect elsewhere (vocl_live_move):
 * VOCL_LIVE_MOVED, where in moved_to, and nothing linked. */
#define VOCL_LIVE_MOVED (-2)
#define VOCL_LIVE_MOVED_MAX 256
int vocl_live_link(struct vocl_conn *c, int64_t word, int64_t *pid, int64_t *far_word,
                   char *moved_to);
/* The daemon's side of a link that hands the client on (a worker of
 * voclproxyd --isolate): the hellos (*pid: the client's process,
 * *far_word: its word), then what it is told (vocl_live_tell: "PORT KEY"
 * of its worker, or the answer to a VOCL_LIVE_WHY).  0 or -1. */
int vocl_live_greet_moved(struct vocl_conn *c, int64_t *pid, int64_t *far_word);
int vocl_live_tell(struct vocl_conn *c, const char *text);
/* How long a client waits for a daemon's answer (at least 30 s): a worker
 * it was handed to waits for it as long. */
uint64_t vocl_live_answer_ns(void);
/* A client's word asking a daemon how the worker of key ended (the
 * answer comes as a hand-off's would: VOCL_LIVE_MOVED, its text). */
#define VOCL_LIVE_WHY ((int64_t)1 << 62)
/* A linked peer's process if it runs on this node, else 0; and whether such
 * a process is gone (or a zombie). */
int64_t vocl_live_local_pid(int peer);
bool vocl_live_pid_gone(int64_t pid);
/* Before its connection is closed: the peer is no longer pinged. */
void vocl_live_unlink(int peer);
/* Stops the liveness thread, before comm goes. */
void vocl_live_stop(void);
/* After vocl_live_stop: takes pings and pongs still queued off the queue. */
void vocl_live_drain(void);

/* One wait on a peer. */
struct vocl_live {
    int rank; /* the peer's number */
    uint64_t since; /* when the wait began, or the peer last spoke in it */
};

void vocl_live_begin(struct vocl_live *w, int rank);
/* Between polls of the wait: pings the peer when due; false once it is dead. */
bool vocl_live_ok(struct vocl_live *w);
/* Pings every rank of ranks[0..n) at once and waits for their answers:
 * how many are dead (dead[i] set for those), within the timeout. */
int vocl_live_roll_call(const int *ranks, int n, bool *dead);
/* Why rank, which vocl_live_ok gave up on, is taken for dead (for messages). */
const char *vocl_live_why(int rank);

#endif
