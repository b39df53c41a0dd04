/*
 * pattern.h: the pure parts of the DAG runtime's two optimisations, kept
 * apart from OpenCL so that unit tests can exercise them.
 *
 * DCR (dynamic collective replacement): the transfers of the window, one
 * list per device, are compared position by position; the i-th transfers of
 * all devices form a broadcast (writes of the same host region), a scatter
 * (writes of contiguous host slices, in device order) or a gather (reads
 * into contiguous host slices).  A collective then moves along a binomial
 * tree of device-to-device copies.
 *
 * DHDCR (device-host-device copy removal): a write of a host range that
 * earlier reads of the window filled is covered by those reads; each piece
 * becomes a direct copy from the device the read came from.
 */
#ifndef DAG_PATTERN_H
#define DAG_PATTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum dcr_dir { DCR_WRITE, DCR_READ };
enum dcr_pattern { DCR_NONE, DCR_BROADCAST, DCR_SCATTER, DCR_GATHER };

/* One transfer between the host and a device. */
struct dcr_transfer {
    enum dcr_dir dir;
    uintptr_t host; /* address of the host region */
    size_t size;
};

/* The pattern that transfers t[0..n-1] (one per device, in device order)
 * form; DCR_NONE for fewer than 2 or none of the three. */
enum dcr_pattern dcr_detect(const struct dcr_transfer *t, size_t n);
const char *dcr_pattern_name(enum dcr_pattern pattern);

/* Binomial tree over ranks 0..n-1 rooted at 0: the `count` edges in the
 * order they may run (a parent's edges before its children's), as
 * parent[i] -> child[i]; span[i] is the number of ranks of child[i]'s
 * subtree (child[i] .. child[i] + span[i] - 1).  Arrays need n - 1 slots.
 * The depth is ceil(log2 n). */
size_t dcr_tree(size_t n, size_t *parent, size_t *child, size_t *span);

/* The same kind of tree, made to cross from one node to another as little
 * as possible: node[r] is rank r's node (any numbers; equal means one
 * node).  A binomial tree over the nodes joins each node's first rank, and
 * one binomial tree inside each node spreads from there, so every node is
 * entered once (n - 1 edges, of which nodes - 1 between nodes; those come
 * first).  The ranks are taken node by node, in the order of each node's
 * first rank: when a node's ranks are not consecutive (0 and 2 on one
 * node, 1 on another), neither are a subtree's, and *consecutive is set
 * false: span[] still counts a subtree's ranks, but they are not child[i]
 * .. child[i] + span[i] - 1, which a scatter or a gather needs.  With one
 * node, or one rank per node, it is dcr_tree's tree.  Arrays need n - 1
 * slots. */
size_t dcr_node_tree(size_t n, const int *node, size_t *parent, size_t *child, size_t *span,
                     bool *consecutive);

/* A host range that a read filled. */
struct dhdcr_read {
    uintptr_t host;
    size_t size;
};

/* A piece of a write served by one read: `size` bytes from byte `src` of
 * that read's range to byte `dst` of the write's range. */
struct dhdcr_piece {
    size_t read; /* index into the reads */
    size_t src, dst, size;
};

/* Covers the host range [host, host + size) of a write with reads[0..n-1]
 * (those that filled parts of it before it).  Returns the number of pieces
 * written to pieces[] (room for n), in host order, or -1 if some byte is
 * covered by no read or by two (the write then stays as it is). */
int dhdcr_cover(uintptr_t host, size_t size, const struct dhdcr_read *reads, size_t n,
                struct dhdcr_piece *pieces);

#endif
