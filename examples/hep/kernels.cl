/*
 * kernels.cl: the runtime's own kernels, pasted after hep_dev.h and the
 * analysis source: random words ahead of the propositions, and the stream
 * compaction of the survivors.  counts[k] is the number of events alive
 * before the proposition at position k; counts[k + 1] after it.
 */
#define HEP_WG 64

/* One Philox block (four words) per work-item: block b of event e. */
__kernel void hep_rng_fill(__global const ulong *ids, __global uint *rng, uint n, uint seed_lo,
                           uint seed_hi)
{
    size_t g = get_global_id(0);
    uint blocks = HEP_RNG_PER_EVENT / 4;
    if (blocks == 0 || g >= (size_t)n * blocks)
        return;
    size_t e = g / blocks;
    uint b = (uint)(g % blocks);
    ulong id = ids[e];
    uint ctr[4] = {(uint)id, (uint)(id >> 32), b, 0x48455031u};
    uint key[2] = {seed_lo, seed_hi};
    uint out[4];
    hep_philox4x32(ctr, key, out);
    for (int j = 0; j < 4; j++)
        rng[e * HEP_RNG_PER_EVENT + 4 * b + j] = out[j];
}

__kernel void hep_init(__global const uint *counts, __global uint *idx)
{
    uint g = get_global_id(0);
    if (g < counts[0])
        idx[g] = g;
}

/* Survivors per work-group of the flags at position k. */
__kernel __attribute__((reqd_work_group_size(HEP_WG, 1, 1))) void
hep_count(__global const uint *counts, uint k, __global const uchar *flag, __global uint *groups)
{
    __local uint sum[HEP_WG];
    uint g = get_global_id(0), l = get_local_id(0);
    sum[l] = g < counts[k] ? flag[g] : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = HEP_WG / 2; s > 0; s /= 2) {
        if (l < s)
            sum[l] += sum[l + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0)
        groups[get_group_id(0)] = sum[0];
}

/* One work-item: the groups' counts become their first output slots. */
__kernel void hep_offsets(__global uint *counts, uint k, __global uint *groups)
{
    uint ng = (counts[k] + HEP_WG - 1) / HEP_WG, acc = 0;
    for (uint i = 0; i < ng; i++) {
        uint c = groups[i];
        groups[i] = acc;
        acc += c;
    }
    counts[k + 1] = acc;
}

/* Survivors keep their order: the batch's selected list is sorted. */
__kernel __attribute__((reqd_work_group_size(HEP_WG, 1, 1))) void
hep_scatter(__global const uint *counts, uint k, __global const uchar *flag,
            __global const uint *groups, __global const uint *in, __global uint *out)
{
    __local uint f[HEP_WG];
    uint g = get_global_id(0), l = get_local_id(0);
    uint alive = g < counts[k];
    f[l] = alive ? flag[g] : 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (alive && f[l]) {
        uint before = 0;
        for (uint i = 0; i < l; i++)
            before += f[i];
        out[groups[get_group_id(0)] + before] = in[g];
    }
}

/* Histogram of a derived column over the survivors after position k. */
__kernel void hep_hist(__global const uint *counts, uint k, __global const uint *idx,
                       __global const double *col, __global uint *bins, uint base, double lo,
                       double scale, uint nbins)
{
    uint g = get_global_id(0);
    if (g >= counts[k])
        return;
    atomic_inc(&bins[base + hep_bin(col[idx[g]], lo, scale, nbins)]);
}
