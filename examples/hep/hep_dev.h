/*
 * hep_dev.h: the code that must give the same bits on the host and on a
 * device: Philox-4x32-10 (Salmon et al., SC'11, "Parallel random numbers: as
 * easy as 1, 2, 3") and the histogram binning.  It compiles as C11 and as
 * OpenCL C; the runtime pastes it before every analysis source, and the CPU
 * references include it, so both sides run the same arithmetic.
 */
#ifndef HEP_DEV_H
#define HEP_DEV_H

#ifdef __OPENCL_C_VERSION__
typedef uint hep_u32;
typedef ulong hep_u64;
#define HEP_INLINE static inline
#else
#include <stdint.h>
typedef uint32_t hep_u32;
typedef uint64_t hep_u64;
#define HEP_INLINE static inline
#endif

/* Philox-4x32 with 10 rounds: a counter of four words and a key of two
 * give four words that look random; nothing is carried from call to call,
 * so any number can be made anywhere, in any order. */
#define HEP_PHILOX_M0 0xD2511F53u
#define HEP_PHILOX_M1 0xCD9E8D57u
#define HEP_PHILOX_W0 0x9E3779B9u
#define HEP_PHILOX_W1 0xBB67AE85u

HEP_INLINE void hep_philox4x32(const hep_u32 ctr[4], const hep_u32 key[2], hep_u32 out[4])
{
    hep_u32 c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    hep_u32 k0 = key[0], k1 = key[1];
    for (int round = 0; round < 10; round++) {
        hep_u64 p0 = (hep_u64)HEP_PHILOX_M0 * c0;
        hep_u64 p1 = (hep_u64)HEP_PHILOX_M1 * c2;
        hep_u32 n0 = (hep_u32)(p1 >> 32) ^ c1 ^ k0;
        hep_u32 n1 = (hep_u32)p1;
        hep_u32 n2 = (hep_u32)(p0 >> 32) ^ c3 ^ k1;
        hep_u32 n3 = (hep_u32)p0;
        c0 = n0, c1 = n1, c2 = n2, c3 = n3;
        k0 += HEP_PHILOX_W0;
        k1 += HEP_PHILOX_W1;
    }
    out[0] = c0, out[1] = c1, out[2] = c2, out[3] = c3;
}

/* Random word number `use` of event `event_id` under `seed`: block use / 4
 * of the counter (event id, block), keyed by the seed.  The numbering is
 * the contract between the device buffers and the CPU reference. */
HEP_INLINE hep_u32 hep_random_word(hep_u64 seed, hep_u64 event_id, hep_u32 use)
{
    hep_u32 ctr[4] = {(hep_u32)event_id, (hep_u32)(event_id >> 32), use >> 2, 0x48455031u};
    hep_u32 key[2] = {(hep_u32)seed, (hep_u32)(seed >> 32)};
    hep_u32 out[4];
    hep_philox4x32(ctr, key, out);
    return out[use & 3u];
}

/* A word as a double in [0, 1): exact, 32 bits of mantissa. */
HEP_INLINE double hep_unit(hep_u32 word)
{
    return (double)word * (1.0 / 4294967296.0);
}

/* Bin of value v in a histogram of `bins` bins from lo with `scale` =
 * bins / (hi - lo): 0 is the underflow (and NaN), bins + 1 the overflow. */
HEP_INLINE hep_u32 hep_bin(double v, double lo, double scale, hep_u32 bins)
{
    double x = (v - lo) * scale;
    if (!(x >= 0.0))
        return 0;
    if (x >= (double)bins)
        return bins + 1;
    return 1 + (hep_u32)x;
}

#endif
