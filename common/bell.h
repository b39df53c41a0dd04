/*
 * bell.h - a word of memory a proxy shares with the clients of its node, so
 * that a request wakes a napping proxy at once.
 *
 * A proxy with nothing to serve polls, yields, then naps (backoff.h): up to
 * 1 ms between looks once it has been idle a while.  An application that
 * thinks between its calls (PyOpenCL between two kernels) then found every
 * request that waits for its reply waiting for the end of such a nap: 0.1 to
 * 1 ms each.  So the proxy says in the bell when it naps, looks once more for
 * requests, and naps on a futex of the word; a client of its node that sends
 * it a request rings the bell (one load of the word when the proxy is awake,
 * a FUTEX_WAKE when it naps).  The nap keeps its length: a client of another
 * node, which cannot ring, waits no longer than before, and a missed ring
 * costs what it did before the bell (a spurious one: a return to polling).
 *
 * The word is in a memfd the client maps through /proc (BELL, protocol.h),
 * as shared buffers are (shm.h): only a client that may read the proxy's
 * descriptors (its own user's proxy) can ring.  VOCL_BELL=0 turns it off on
 * either side.
 */
#ifndef VOCL_BELL_H
#define VOCL_BELL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define VOCL_BELL_SIZE 4096 /* its memfd: a page */

struct vocl_bell {
    _Atomic uint32_t word; /* VOCL_BELL_AWAKE or VOCL_BELL_NAPPING */
};

enum { VOCL_BELL_AWAKE = 0, VOCL_BELL_NAPPING = 1 };

/* Whether VOCL_BELL allows it (anything but "0"). */
bool vocl_bell_allowed(void);
/* A client, after sending a request: wakes the proxy if it naps. */
void vocl_bell_ring(struct vocl_bell *b);
/* The proxy, before its last look for requests ahead of a nap. */
void vocl_bell_arm(struct vocl_bell *b);
/* The proxy, having found none: naps up to ns, unless the bell rings (or
 * rang since vocl_bell_arm).  Returns whether it rang. */
bool vocl_bell_nap(struct vocl_bell *b, long ns);
/* The proxy, having found one after all: no nap, no ring wanted. */
void vocl_bell_disarm(struct vocl_bell *b);

#endif
