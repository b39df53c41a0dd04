/*
 * diff.c - the diffs of buffers written on several proxies at once: what
 * changed since a twin, as runs (ops_migrate.c sends them).
 *
 * A buffer written on several proxies with no order between the
 * writers (libvocl/coherence.c) has a twin on each: its bytes when that proxy
 * got them.  What changed since is sent to the proxy that merges, after a
 * u64 of its size (an empty message: the diff could not be made), as runs:
 * u64 offset, u64 length, a mask of length bits (set: the byte changed),
 * then the changed bytes.  Only changed bytes are written where they
 * arrive, so a diff never undoes another proxy's writes; a run spans up to
 * DIFF_GAP equal bytes rather than start another.
 */
#include "internal.h"

#include <string.h>

#define DIFF_GAP 32

/* The first byte from i on where a and b are equal (same) or differ (!same). */
static size_t skip(const uint8_t *a, const uint8_t *b, size_t i, size_t size, bool same)
{
    for (;;) {
        if (same) /* equal stretches go 64 bytes at a time */
            while (i + 64 <= size && !memcmp(a + i, b + i, 64))
                i += 64;
        size_t end = size - i > 64 ? i + 64 : size;
        while (i < end && (a[i] == b[i]) == same)
            i++;
        if (i < end || i == size)
            return i;
    }
}

/* The end of the run that starts at i (a byte that differs). */
static size_t run_end(const uint8_t *a, const uint8_t *b, size_t i, size_t size)
{
    size_t end = skip(a, b, i, size, false);
    for (size_t next; (next = skip(a, b, end, size, true)) < size && next - end <= DIFF_GAP;)
        end = skip(a, b, next, size, false);
    return end;
}

size_t exec_diff_encode(const uint8_t *now, const uint8_t *was, size_t size, uint8_t *out,
                        size_t *changed)
{
    size_t n = 0;
    *changed = 0;
    for (size_t i = skip(now, was, 0, size, true), j; i < size; i = skip(now, was, j, size, true)) {
        j = run_end(now, was, i, size);
        size_t len = j - i, nmask = (len + 7) / 8, c = 0;
        uint8_t *mask = out ? out + n + 16 : NULL, *data = mask ? mask + nmask : NULL;
        if (out) {
            exec_put_u64(out + n, i);
            exec_put_u64(out + n + 8, len);
            memset(mask, 0, nmask);
        }
        for (size_t k = 0; k < len; k++) {
            if (now[i + k] == was[i + k])
                continue;
            if (out) {
                mask[k / 8] |= (uint8_t)(1u << (k % 8));
                data[c] = now[i + k];
            }
            c++;
        }
        n += 16 + nmask + c;
        *changed += c;
    }
    return n;
}

uint64_t exec_diff_max(size_t size)
{
    return 2 * (uint64_t)size + 64;
}

int exec_diff_apply(uint8_t *buf, size_t size, const uint8_t *d, size_t n)
{
    for (size_t i = 0; i < n;) {
        if (n - i < 16)
            return -1;
        uint64_t off = exec_get_u64(d + i), len = exec_get_u64(d + i + 8);
        i += 16;
        if (!len || off > size || len > size - off || (len + 7) / 8 > n - i)
            return -1;
        const uint8_t *mask = d + i;
        i += (len + 7) / 8;
        for (uint64_t k = 0; k < len; k++) {
            if (!((mask[k / 8] >> (k % 8)) & 1))
                continue;
            if (i == n)
                return -1;
            buf[off + k] = d[i++];
        }
    }
    return 0;
}
