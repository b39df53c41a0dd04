/*
 * pattern.c: DCR pattern detection, the binomial tree and DHDCR's cover of
 * a write by reads; see pattern.h.
 */
#include "pattern.h"

#include <stdbool.h>
#include <stdlib.h>

enum dcr_pattern dcr_detect(const struct dcr_transfer *t, size_t n)
{
    if (n < 2)
        return DCR_NONE;
    bool same_dir = true, same = true, contiguous = true;
    for (size_t i = 0; i + 1 < n; i++) {
        same_dir &= t[i].dir == t[i + 1].dir;
        same &= t[i].host == t[i + 1].host && t[i].size == t[i + 1].size;
        contiguous &= t[i].host + t[i].size == t[i + 1].host;
    }
    for (size_t i = 0; i < n; i++) {
        if (t[i].size == 0)
            return DCR_NONE;
    }
    if (!same_dir)
        return DCR_NONE;
    /* Reads of one host region by several devices would race: no pattern. */
    if (t[0].dir == DCR_WRITE && same)
        return DCR_BROADCAST;
    if (contiguous)
        return t[0].dir == DCR_WRITE ? DCR_SCATTER : DCR_GATHER;
    return DCR_NONE;
}

const char *dcr_pattern_name(enum dcr_pattern pattern)
{
    switch (pattern) {
    case DCR_BROADCAST:
        return "broadcast";
    case DCR_SCATTER:
        return "scatter";
    case DCR_GATHER:
        return "gather";
    case DCR_NONE:
        break;
    }
    return "none";
}

/* Rank r holds the data of ranks r .. r+n-1: it sends the upper half to the
 * rank where that half starts, then goes on with the lower half, so each
 * round halves every subtree. */
static void tree(size_t r, size_t n, size_t *parent, size_t *child, size_t *span, size_t *count)
{
    /* The edges of r come first, then the subtrees in turn, which keeps
     * every parent's receiving edge before its sending ones. */
    size_t sizes[64], starts[64], k = 0;
    while (n > 1) {
        size_t low = (n + 1) / 2;
        parent[*count] = r;
        child[*count] = r + low;
        span[*count] = n - low;
        starts[k] = r + low;
        sizes[k++] = n - low;
        (*count)++;
        n = low;
    }
    for (size_t i = 0; i < k; i++)
        tree(starts[i], sizes[i], parent, child, span, count);
}

size_t dcr_tree(size_t n, size_t *parent, size_t *child, size_t *span)
{
    size_t count = 0;
    if (n > 1)
        tree(0, n, parent, child, span, &count);
    return count;
}

size_t dcr_node_tree(size_t n, const int *node, size_t *parent, size_t *child, size_t *span,
                     bool *consecutive)
{
    *consecutive = true;
    size_t *order = malloc((n ? n : 1) * sizeof(*order)); /* position -> rank */
    size_t *start = malloc((n + 1) * sizeof(*start));     /* node g's first position */
    if (!order || !start) {
        free(order);
        free(start);
        return dcr_tree(n, parent, child, span);
    }
    /* Positions: the ranks node by node.  Rank 0 stays at position 0, the
     * root, as every tree here is rooted at rank 0. */
    size_t m = 0, k = 0;
    for (size_t r = 0; r < n; r++) {
        bool seen = false;
        for (size_t q = 0; q < r && !seen; q++)
            seen = node[q] == node[r];
        if (seen)
            continue;
        start[m++] = k;
        for (size_t q = r; q < n; q++) {
            if (node[q] == node[r])
                order[k++] = q;
        }
    }
    start[m] = n;
    /* Between nodes: a tree over the node indices, then each edge moved to
     * the nodes' first positions, its span counted in positions. */
    size_t count = 0;
    if (m > 1)
        tree(0, m, parent, child, span, &count);
    for (size_t e = 0; e < count; e++) {
        size_t g = child[e], last = child[e] + span[e];
        parent[e] = start[parent[e]];
        child[e] = start[g];
        span[e] = start[last] - start[g];
    }
    /* Inside each node, from its first position. */
    for (size_t g = 0; g < m; g++) {
        if (start[g + 1] - start[g] > 1)
            tree(start[g], start[g + 1] - start[g], parent, child, span, &count);
    }
    for (size_t e = 0; e < count; e++) {
        parent[e] = order[parent[e]];
        child[e] = order[child[e]];
    }
    for (size_t p = 0; p < n; p++)
        *consecutive &= order[p] == p;
    free(order);
    free(start);
    return count;
}

static int by_host(const void *a, const void *b, const struct dhdcr_read *reads)
{
    uintptr_t x = reads[*(const size_t *)a].host, y = reads[*(const size_t *)b].host;
    return x < y ? -1 : x > y;
}

int dhdcr_cover(uintptr_t host, size_t size, const struct dhdcr_read *reads, size_t n,
                struct dhdcr_piece *pieces)
{
    if (size == 0 || n == 0)
        return -1;
    size_t *order = malloc(n * sizeof(*order));
    if (!order)
        return -1;
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    /* Insertion sort by host address (n is small; qsort has no context). */
    for (size_t i = 1; i < n; i++) {
        for (size_t j = i; j > 0 && by_host(&order[j - 1], &order[j], reads) > 0; j--) {
            size_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    }
    uintptr_t at = host, end = host + size;
    int count = 0;
    for (size_t k = 0; k < n; k++) {
        const struct dhdcr_read *r = &reads[order[k]];
        uintptr_t r_end = r->host + r->size;
        if (r->size == 0 || r_end <= host || r->host >= end)
            continue; /* not part of the write */
        if (r->host < at && at > host)
            goto fail; /* a second read of bytes already covered */
        if (r->host > at)
            goto fail; /* a gap before this read */
        uintptr_t piece_end = r_end < end ? r_end : end;
        pieces[count++] = (struct dhdcr_piece){
            .read = order[k], .src = at - r->host, .dst = at - host, .size = piece_end - at};
        at = piece_end;
    }
    if (at < end)
        goto fail;
    free(order);
    return count;
fail:
    free(order);
    return -1;
}
