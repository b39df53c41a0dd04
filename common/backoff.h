/*
 * backoff.h - waiting for MPI without taking the cores the work needs.
 *
 * MPI blocking calls spin in MPICH/UCX; the application, its proxies and the
 * devices' own threads share a node's cores, so every VOCL wait polls
 * briefly (latency), then yields, then sleeps in short steps.
 */
#ifndef VOCL_BACKOFF_H
#define VOCL_BACKOFF_H

#include <stdbool.h>
#include <stdint.h>

uint64_t vocl_now_ns(void);
/* Called between polls of a wait that began at start (vocl_now_ns()):
 * returns at once for 50 us, yields until 2 ms, then sleeps sleep_ns, or
 * 1/64 of the time waited so far once that is longer (at most 1 ms); on a
 * crowded node (vocl_backoff_setup) it returns at once for 5 us, then
 * sleeps; on a busy one it yields at once. */
void vocl_backoff(uint64_t start, long sleep_ns);
/* The same, but where it would sleep it returns how long (ns) instead,
 * for the caller to sleep on a descriptor that wakes it (ucx.c); 0 when it
 * polled or yielded. */
long vocl_backoff_step(uint64_t start, long sleep_ns);
/* The same for a proxy with no request to serve: it yields after 5 us,
 * and sleeps 20 us in place of every 16th yield.  The devices' own threads
 * share its node (on a CPU device, the threads that compute): the proxy
 * that ran a batch gives them its core at once. */
void vocl_backoff_idle(uint64_t start, long sleep_ns);
/* The same, but where it would sleep (or nap) it returns how long (ns)
 * instead, for the caller to nap on its bell (bell.h); 0 when it polled or
 * yielded. */
long vocl_backoff_idle_step(uint64_t start, long sleep_ns);
/* At start: how long waits of this process poll and yield.  On a node
 * where the job has more than twice as many ranks as this process has
 * cores (MPI_LOCALNRANKS, OMPI_COMM_WORLD_LOCAL_SIZE), a rank that polls or
 * yields takes a turn from one that works: there waits poll for 5 us and
 * then sleep.  Where it has more ranks than cores, but not twice as many,
 * waits yield at once: a rank that polls keeps another from its batch
 * (kmer-assemble through 2 proxies of 1 device on 2 cores: 0.31 s -> 0.28
 * s, medians).  VOCL_YIELD_US sets how long they yield.  Says what it
 * chose (log.h, info). */
void vocl_backoff_setup(void);
/* Whether vocl_backoff_setup found the node crowded. */
bool vocl_backoff_crowded(void);
/* Whether the job has more ranks on this node than this process has cores
 * (crowded or not); any time, without vocl_backoff_setup. */
bool vocl_backoff_node_busy(void);

#endif
