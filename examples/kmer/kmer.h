/*
 * kmer.h: the host side of the k-mer programs (kmer-assemble, kmer-gen)
 * that needs no OpenCL: 2-bit k-mer encoding, the hash that places a k-mer
 * in the table, the chunked reader of k-mer files, the single-threaded CPU
 * assembler (the reference every device run is checked against), the
 * unique-k-mer segments of a genome, and sets of contigs (compare, FASTA).
 *
 * A k-mer file has one k-mer a line, as in the data sets of the UPC++
 * hash-table report: the k bases, white space, then two letters, the
 * backward extension (the base before the k-mer) and the forward extension
 * (the base after it), each A, C, G, T or F where there is none.  A contig
 * starts at a k-mer whose backward extension is F and follows forward
 * extensions until one is F.
 */
#ifndef VOCL_EXAMPLES_KMER_H
#define VOCL_EXAMPLES_KMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Bases are packed 2 bits each into a uint64_t, so k is at most 32. */
#define KMER_MAX_K 32

/* Extension codes: 0..3 are A, C, G, T; KMER_NONE is the letter F. */
#define KMER_NONE 4

/* The two extensions of a k-mer in one byte, as the device table stores
 * them: backward * 5 + forward (0..24).  KMER_NOT_FOUND is what a lookup of
 * an absent k-mer returns. */
#define KMER_NOT_FOUND 0xff
static inline uint8_t kmer_ext_pack(int backward, int forward)
{
    return (uint8_t)(backward * 5 + forward);
}
static inline int kmer_ext_backward(uint8_t ext)
{
    return ext / 5;
}
static inline int kmer_ext_forward(uint8_t ext)
{
    return ext % 5;
}

/* 0..3 for A, C, G, T; KMER_NONE for F; -1 for anything else. */
int kmer_base_code(char c);
/* "ACGTF"[code]. */
char kmer_base_letter(int code);

/* The bits a k-mer of length k uses. */
static inline uint64_t kmer_mask(unsigned k)
{
    return k >= 32 ? UINT64_MAX : (UINT64_C(1) << (2 * k)) - 1;
}

/* The k-mer that follows `kmer` when `base` (0..3) is appended. */
static inline uint64_t kmer_next(uint64_t kmer, int base, unsigned k)
{
    return ((kmer << 2) | (uint64_t)base) & kmer_mask(k);
}

/* Packs k letters of ACGT; false if one is something else. */
bool kmer_encode(const char *bases, unsigned k, uint64_t *kmer);
/* Writes the k letters of `kmer` to out (no terminating NUL). */
void kmer_decode(uint64_t kmer, unsigned k, char *out);

/* The 64-bit finaliser of MurmurHash3: spreads k-mers that differ in a few
 * bases over the whole table.  The kernels compute the same function. */
static inline uint64_t kmer_hash(uint64_t kmer)
{
    kmer ^= kmer >> 33;
    kmer *= UINT64_C(0xff51afd7ed558ccd);
    kmer ^= kmer >> 33;
    kmer *= UINT64_C(0xc4ceb9fe1a85ec53);
    kmer ^= kmer >> 33;
    return kmer;
}

/* A string that grows one base at a time (a contig being walked). */
struct kmer_string {
    char *s;
    size_t len, capacity;
};
void kmer_string_add(struct kmer_string *str, char c);
/* Starts `str` with the k letters of `kmer`. */
void kmer_string_start(struct kmer_string *str, uint64_t kmer, unsigned k);

/* ---- k-mer files ---- */

/* The k-mers of a file, in file order (k-mer i is on line i + 1). */
struct kmer_input {
    unsigned k;
    size_t count;
    uint64_t *kmers;
    uint8_t *exts; /* kmer_ext_pack() */
};

/* Reads a k-mer file in chunks, printing progress on stderr.  `k` is the
 * expected k, or 0 to take it from the first line.  On any error (missing
 * file, malformed line, a k-mer of another length, k above KMER_MAX_K, no
 * k-mers at all) it writes "FILE:LINE: what" to `error` and returns false;
 * *in is then empty. */
bool kmer_read_file(const char *path, unsigned k, struct kmer_input *in, char *error,
                    size_t error_size);
void kmer_input_free(struct kmer_input *in);

/* ---- contigs ---- */

/* A set of contigs, each a NUL-terminated string of ACGT. */
struct contig_set {
    size_t count, capacity;
    char **seqs;
};

void contig_set_add(struct contig_set *set, char *seq); /* takes ownership */
void contig_set_free(struct contig_set *set);
/* Sorts the contigs, so that two sets compare by position. */
void contig_set_sort(struct contig_set *set);
/* Whether two sorted sets hold the same contigs; if not, describes the first
 * difference in `why`. */
bool contig_set_equal(const struct contig_set *a, const struct contig_set *b, char *why,
                      size_t why_size);
/* Total bases. */
size_t contig_set_bases(const struct contig_set *set);
/* Writes the set as FASTA (">contig_N length=L", 80 bases a line); false
 * (errno set) on a write error. */
bool contig_set_write_fasta(const struct contig_set *set, FILE *out);

/* ---- the CPU assembler ---- */

/* What an assembly measured. */
struct kmer_stats {
    double insert_seconds, traverse_seconds;
    uint64_t inserts, lookups; /* lookups: successor queries, found or not */
    uint64_t rounds;           /* steps of the longest contig */
    uint64_t dangling;         /* contigs that ended at a missing k-mer, not at an F */
};

/* Assembles `in` single-threaded: inserts every k-mer into one open-address
 * table (linear probing), then walks from every start k-mer, one contig
 * after the other.  False (with a message in `error`) if a k-mer appears
 * twice or a contig runs into a cycle. */
bool kmer_cpu_assemble(const struct kmer_input *in, struct contig_set *contigs,
                       struct kmer_stats *stats, char *error, size_t error_size);

/* How many k-mers of `in` lie on no contig (they form cycles with no start,
 * or hang off a k-mer whose forward extension points elsewhere). */
size_t kmer_uncovered(const struct kmer_input *in, const struct contig_set *contigs);

/* ---- genomes ---- */

/* A genome read from FASTA: all records concatenated, bases only. */
bool kmer_read_genome(const char *path, char **bases, size_t *length, char *error,
                      size_t error_size);

/* For every start position i of a k-mer in `genome`, whether that k-mer
 * occurs exactly once in it (unique[i], length - k + 1 entries). */
bool *kmer_unique_positions(const char *genome, size_t length, unsigned k);

/* The genome's unique-k-mer segments: the maximal runs of consecutive
 * unique k-mers, each as the stretch of genome they cover.  They are the
 * contigs that the k-mers of the genome made by kmer-gen assemble to. */
void kmer_genome_segments(const char *genome, size_t length, unsigned k,
                          struct contig_set *segments);

#endif
