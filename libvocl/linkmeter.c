/*
 * linkmeter.c - the chunk size and pipeline depth of transfers, chosen from what
 * was measured of the link (linkmeter.h).
 *
 * A transfer's chunks go through a pipeline: the network, then on the
 * proxy the device copy of each from its staging buffer.  Smaller chunks
 * fill and drain the pipeline sooner; each chunk also costs about half a
 * round trip of its own (matching, posting, the proxy's turn).  The rules:
 *
 *   chunk  a quarter of the transfer, but no smaller than what keeps a
 *          chunk's own cost within about 3 % of its time on the link: 16
 *          bandwidth-delay products (round trip times bandwidth), rounded
 *          up to a power of two; at least 64 KiB, at most the proxy's
 *          staging buffers.  Until the link is measured: the staging
 *          buffer size, as before there was a rule.
 *   depth  how many chunks of a read the proxy sends at once: enough to
 *          cover the bandwidth-delay product, and one more, so that the
 *          link does not idle while the client takes each chunk.  (A
 *          write's chunks are received one at a time: with two receives
 *          posted ahead, writes of 64 MiB measured 0.86-0.91 of MPI's
 *          bandwidth on the harness's link, with one 0.95-1.02.)
 *
 * So a fast link with a short round trip (MPI's shared memory on one node,
 * the harness's 25 Gbit/s TCP: about 75 KB in flight) cuts only transfers
 * of 8 MiB and more, in quarters; a slow one (1 Gbit/s, 100 us) cuts a
 * 1 MiB transfer in four; a long, fast one (1 ms at 3 GB/s) takes the
 * largest chunks and more of them in flight.  Measured on one node,
 * quarters of 128-512 KiB transfers (64-128 KiB chunks) were 5-50 %
 * slower than one chunk (docs/report/cluster).
 */
#include "linkmeter.h"

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

/* The smallest power of two not below n (n > 0). */
static size_t pow2_ceil(size_t n)
{
    size_t p = pow2_floor(n);
    return p < n ? 2 * p : p;
}

struct vocl_chunking vocl_link_chunking(struct vocl_link *l, size_t n, size_t max_chunk)
{
    uint64_t rtt = atomic_load_explicit(&l->rtt_ns, memory_order_relaxed);
    uint64_t bps = atomic_load_explicit(&l->bps, memory_order_relaxed);
    if (!rtt || !bps)
        return (struct vocl_chunking){.chunk = max_chunk, .depth = 2};
    double bdp = (double)rtt * 1e-9 * (double)bps; /* bytes in flight over a round trip */
    size_t chunk = max_chunk;
    if (16 * bdp < (double)max_chunk) {
        size_t least = pow2_ceil(16 * (size_t)bdp);
        if (least < VOCL_LINK_CHUNK_MIN)
            least = VOCL_LINK_CHUNK_MIN;
        size_t quarter = n / 4 ? pow2_floor(n / 4) : 1;
        chunk = quarter > least ? quarter : least;
        if (chunk > max_chunk)
            chunk = max_chunk;
    }
    double depth = bdp / (double)chunk + 2; /* rounded up, plus one */
    return (struct vocl_chunking){.chunk = chunk,
                                  .depth = depth >= VOCL_LINK_DEPTH_MAX ? VOCL_LINK_DEPTH_MAX
                                                                        : (unsigned)depth};
}
