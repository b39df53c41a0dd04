/*
 * ucx.h - daemon mode's connections: UCX's client-server API (a listener
 * on HOST:PORT), which any user's process can reach with no name server,
 * idle for months, many at once (../shared/daemon-transport.md has the
 * figures that chose it over MPI's dynamic processes).
 *
 * Each connection has a UCX worker of its own (chan.h says why).  Its
 * errors are PEER mode: a peer that dies, or closes, fails its connection
 * (vocl_conn_dead), never the process.
 *
 * Transports: UCX's own choice (InfiniBand's RDMA where there is one, TCP
 * else; UCX_NET_DEVICES, UCX_TLS pick), less its shared-memory ones, which
 * fail between processes of two users (a same-node client's buffers go
 * through a memfd instead: executor/shm.c).
 */
#ifndef VOCL_UCX_H
#define VOCL_UCX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct vocl_conn;
struct vocl_listener;

/* The port a daemon listens on unless told another (voclproxyd --port,
 * HOST:PORT in VOCL_PROXIES). */
#define VOCL_DEFAULT_PORT 7010

/* Connects to host:port, waiting at most timeout_ns for the connection to
 * be made, or busy_ns once the port has taken the TCP connection (a daemon
 * that is up and busy: many clients at once).  The connection, or NULL
 * with the reason in err. */
struct vocl_conn *vocl_conn_dial(const char *host, int port, uint64_t timeout_ns,
                                 uint64_t busy_ns, char *err, size_t errlen);
/* Closes c (its requests fail) and frees it. */
void vocl_conn_close(struct vocl_conn *c);
/* The same, once the peer has closed its side, or after timeout_ns: the
 * side that closes first keeps the connection's port in TIME_WAIT, which
 * should be the client's, not the daemon's listening port (a daemon
 * restarted at once could not listen there again). */
void vocl_conn_close_after_peer(struct vocl_conn *c, uint64_t timeout_ns);
/* Moves c's traffic on (progress): whether anything happened. */
bool vocl_conn_progress(struct vocl_conn *c);
/* Whether c's peer is gone (died, closed, unreachable); why, for messages. */
bool vocl_conn_dead(struct vocl_conn *c);
const char *vocl_conn_why(struct vocl_conn *c);
/* The peer's address, "HOST:PORT" (for messages and logs). */
const char *vocl_conn_peer(struct vocl_conn *c);
/* An accepted connection's client: the uid its socket belongs to, where
 * the client runs on this node (the kernel's own record, which the client
 * cannot choose); -1 elsewhere. */
long vocl_conn_peer_uid(struct vocl_conn *c);
/* A descriptor that becomes readable when c has something to progress,
 * after vocl_conn_arm returned true (false: progress first); -1: none. */
int vocl_conn_fd(struct vocl_conn *c);
bool vocl_conn_arm(struct vocl_conn *c);

/* Listens on addr (NULL: every interface) and port (0: one the kernel
 * picks): the listener, or NULL with the reason in err (*in_use: the port
 * is taken, by another process or by connections still closing). */
struct vocl_listener *vocl_listen(const char *addr, int port, bool *in_use, char *err,
                                  size_t errlen);
/* The port it listens on. */
int vocl_listener_port(struct vocl_listener *l);
/* The next connection asked for, accepted, within timeout_ns (0: only one
 * already asked for); NULL: none. */
struct vocl_conn *vocl_accept(struct vocl_listener *l, uint64_t timeout_ns);
/* Stops listening (connections asked for and not accepted are refused). */
void vocl_listener_close(struct vocl_listener *l);

/* Between two polls of a wait on c that began at start: vocl_backoff's
 * step (backoff.h), but where that sleeps, c's worker is armed and the
 * thread sleeps on its descriptor, woken by what comes for c. */
void vocl_conn_backoff(struct vocl_conn *c, uint64_t start);

/* Tells the message layer (chan.c) about a UCX request. */
struct vocl_req;
void *vocl_conn_worker(struct vocl_conn *c);
void *vocl_conn_ep(struct vocl_conn *c);
/* Marks c failed (a send given up on): its endpoint is closed by force. */
void vocl_conn_fail(struct vocl_conn *c, const char *why);

#endif
