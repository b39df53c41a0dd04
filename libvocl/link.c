/*
 * link.c - the chunk size and pipeline depth of transfers, chosen from what
 * was measured of the link (link.h).
 *
 * A transfer's chunks go through a pipeline: the network, then on the
 * proxy the device copy of each from its staging buffer.  The rules:
 *
 *   chunk  a quarter of the transfer, so that the device copy of one chunk
 *          overlaps the network of the next and the pipeline fills and
 *          drains in a quarter of the time; but no smaller than what the
 *          link carries in one round trip (its bandwidth-delay product),
 *          so that a chunk's matching and posting cost is small beside
 *          its bytes, and no larger than the proxy's staging buffers;
 *   depth  how many chunks of a read the proxy sends at once: enough to
 *          cover the bandwidth-delay product, and one more, so that the
 *          link does not idle while the client takes each chunk.  (A
 *          write's chunks are received one at a time: with two receives
 *          posted ahead, writes of 64 MiB measured 0.86-0.91 of MPI's
 *          bandwidth on the harness's link, with one 0.95-1.02.)
 *
 * Measured on the harness's 25 Gbit/s link (docs/report/cluster):
 * of 256 KiB, 1 MiB and 4 MiB fixed chunks, 256 KiB was fastest for 1 MiB
 * transfers and 4 MiB for 16 and 64 MiB, which the quarter rule gives.  A
 * link with a larger bandwidth-delay product (a longer or faster one) gets
 * larger chunks and more of them in flight.
 */
#include "link.h"

void vocl_link_round_trip(struct vocl_link *l, uint64_t ns)
{
    uint_fast64_t was = atomic_load_explicit(&l->rtt_ns, memory_order_relaxed);
    while ((was == 0 || ns < was) && ns > 0 &&
           !atomic_compare_exchange_weak_explicit(&l->rtt_ns, &was, ns, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

void vocl_link_transfer(struct vocl_link *l, uint64_t n, uint64_t ns)
{
    if (n < VOCL_LINK_SAMPLE_MIN || ns == 0)
        return;
    uint64_t bps = (uint64_t)((double)n * 1e9 / (double)ns);
    uint_fast64_t was = atomic_load_explicit(&l->bps, memory_order_relaxed);
    /* A moving average over about four transfers; a lost race loses a sample. */
    uint64_t now = was ? was - was / 4 + bps / 4 : bps;
    atomic_compare_exchange_strong_explicit(&l->bps, &was, now, memory_order_relaxed,
                                            memory_order_relaxed);
}

/* The largest power of two not above n (n > 0). */
static size_t pow2_floor(size_t n)
{
    size_t p = 1;
    while (p <= n / 2)
        p *= 2;
    return p;
}

struct vocl_chunking vocl_link_chunking(struct vocl_link *l, size_t n, size_t max_chunk)
{
    uint64_t rtt = atomic_load_explicit(&l->rtt_ns, memory_order_relaxed);
    uint64_t bps = atomic_load_explicit(&l->bps, memory_order_relaxed);
    /* Bytes in flight over one round trip; 0 while either is unknown. */
    double bdp = (double)rtt * 1e-9 * (double)bps;
    size_t floor = VOCL_LINK_CHUNK_MIN;
    if (bdp > (double)floor)
        floor = bdp >= (double)max_chunk ? max_chunk : 2 * pow2_floor((size_t)bdp);
    size_t chunk = n / 4 > floor ? pow2_floor(n / 4) : floor;
    if (chunk > max_chunk)
        chunk = max_chunk;
    double depth = bdp / (double)chunk + 2; /* rounded up, plus one being landed */
    return (struct vocl_chunking){.chunk = chunk,
                                  .depth = depth >= VOCL_LINK_DEPTH_MAX ? VOCL_LINK_DEPTH_MAX
                                                                        : (unsigned)depth};
}
