/*
 * linkmeter.h - what libvocl measures of the link to each proxy, and the chunk
 * size and pipeline depth it chooses from that for each transfer.
 *
 * Nothing is probed: the round trip is the shortest a blocking call to the
 * proxy took, and the bandwidth a moving average of its blocking chunked
 * transfers of 1 MiB or more (both include the proxy's own work, so they
 * err on the slow side).  Until both are known, chunks are the proxy's
 * staging buffer size, two in flight.
 */
#ifndef VOCL_LINKMETER_H
#define VOCL_LINKMETER_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct vocl_link {
    atomic_uint_fast64_t rtt_ns; /* 0: not measured yet */
    atomic_uint_fast64_t bps;    /* bytes per second; 0: not measured yet */
};

/* A transfer's chunks: their size and how many the proxy keeps in flight. */
struct vocl_chunking {
    size_t chunk;
    unsigned depth;
};

#define VOCL_LINK_CHUNK_MIN  (64u << 10)
#define VOCL_LINK_DEPTH_MAX  16u
#define VOCL_LINK_SAMPLE_MIN (1u << 20) /* transfers that say what the bandwidth is */

/* A blocking call took ns from its request to its reply. */
void vocl_link_round_trip(struct vocl_link *l, uint64_t ns);
/* A blocking transfer of n bytes took ns, request to reply. */
void vocl_link_transfer(struct vocl_link *l, uint64_t n, uint64_t ns);
/* How to cut a transfer of n bytes for a proxy whose staging buffers hold
 * max_chunk bytes (its largest chunk). */
struct vocl_chunking vocl_link_chunking(struct vocl_link *l, size_t n, size_t max_chunk);

#endif
