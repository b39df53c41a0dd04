/*
 * test_kmer.c: unit tests of kmer.c, the part of kmer-assemble without
 * OpenCL: the 2-bit encoding, the k-mer file reader, the CPU assembler and
 * the genome's unique-k-mer segments, on inputs small enough to check by
 * hand.
 */
#include "kmer.h"

#include <setjmp.h> /* cmocka needs these first */
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Writes `text` to a new temporary file; the caller unlinks it. */
static char *temp_file(const char *text)
{
    char *path = strdup("/tmp/test_kmer_XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return path;
}

static void test_encoding(void **state)
{
    (void)state;
    uint64_t kmer;
    assert_true(kmer_encode("ACGT", 4, &kmer));
    assert_int_equal(kmer, 0x1b); /* 00 01 10 11 */
    char out[4];
    kmer_decode(kmer, 4, out);
    assert_memory_equal(out, "ACGT", 4);
    assert_false(kmer_encode("ACNT", 4, &kmer));
    assert_false(kmer_encode("ACFT", 4, &kmer)); /* F is an extension, not a base */

    /* k = 32 uses all 64 bits, and the next k-mer drops the first base. */
    const char *t32 = "TTTTTTTTTTTTTTTTTTTTTTTTTTTTTTTA";
    assert_true(kmer_encode(t32, 32, &kmer));
    uint64_t next = kmer_next(kmer, 1, 32); /* append C */
    char out32[32];
    kmer_decode(next, 32, out32);
    assert_memory_equal(out32, "TTTTTTTTTTTTTTTTTTTTTTTTTTTTTTAC", 32);

    for (int b = 0; b <= KMER_NONE; b++) {
        for (int f = 0; f <= KMER_NONE; f++) {
            uint8_t ext = kmer_ext_pack(b, f);
            assert_true(ext != KMER_NOT_FOUND);
            assert_int_equal(kmer_ext_backward(ext), b);
            assert_int_equal(kmer_ext_forward(ext), f);
        }
    }
    assert_int_equal(kmer_base_code('F'), KMER_NONE);
    assert_int_equal(kmer_base_code('a'), -1);
}

/* Genome AACGTTACGGA, k = 3: ACG occurs at 1 and 6, every other 3-mer once,
 * so the segments are AAC, CGTTAC and CGGA. */
static const char genome[] = "AACGTTACGGA";
static const char genome_kmers[] = "CGT FT\n"
                                   "GGA CF\r\n" /* a Windows line end is fine */
                                   "AAC FF\n"
                                   "TTA\t\tGC\n"
                                   "TAC TF \n"
                                   "GTT CA\n"
                                   "CGG FA"; /* no final line end */

static void test_segments(void **state)
{
    (void)state;
    struct contig_set segments = {0};
    kmer_genome_segments(genome, strlen(genome), 3, &segments);
    contig_set_sort(&segments);
    assert_int_equal(segments.count, 3);
    assert_string_equal(segments.seqs[0], "AAC");
    assert_string_equal(segments.seqs[1], "CGGA");
    assert_string_equal(segments.seqs[2], "CGTTAC");
    contig_set_free(&segments);
}

static void test_cpu_assembler(void **state)
{
    (void)state;
    char *path = temp_file(genome_kmers);
    char error[256] = "";
    struct kmer_input in;
    assert_true(kmer_read_file(path, 0, &in, error, sizeof(error)));
    assert_int_equal(in.k, 3);
    assert_int_equal(in.count, 7);
    /* TTA: G before it, C after it. */
    assert_int_equal(kmer_ext_backward(in.exts[3]), kmer_base_code('G'));
    assert_int_equal(kmer_ext_forward(in.exts[3]), kmer_base_code('C'));

    struct contig_set contigs = {0}, segments = {0};
    struct kmer_stats stats;
    assert_true(kmer_cpu_assemble(&in, &contigs, &stats, error, sizeof(error)));
    contig_set_sort(&contigs);
    kmer_genome_segments(genome, strlen(genome), 3, &segments);
    contig_set_sort(&segments);
    assert_true(contig_set_equal(&contigs, &segments, error, sizeof(error)));
    assert_int_equal(stats.inserts, 7);
    assert_int_equal(stats.lookups, 4); /* CGT->GTT->TTA->TAC, CGG->GGA */
    assert_int_equal(stats.rounds, 3);
    assert_int_equal(stats.dangling, 0);
    assert_int_equal(kmer_uncovered(&in, &contigs), 0);

    contig_set_free(&contigs);
    contig_set_free(&segments);
    kmer_input_free(&in);
    unlink(path);
    free(path);
}

/* A forward extension to a k-mer that is not there ends the contig. */
static void test_dangling(void **state)
{
    (void)state;
    char *path = temp_file("AAC FG\nCGT AF\n");
    char error[256] = "";
    struct kmer_input in;
    assert_true(kmer_read_file(path, 3, &in, error, sizeof(error)));
    struct contig_set contigs = {0};
    struct kmer_stats stats;
    assert_true(kmer_cpu_assemble(&in, &contigs, &stats, error, sizeof(error)));
    assert_int_equal(contigs.count, 1);
    assert_string_equal(contigs.seqs[0], "AAC");
    assert_int_equal(stats.dangling, 1);
    assert_int_equal(kmer_uncovered(&in, &contigs), 1); /* CGT */
    contig_set_free(&contigs);
    kmer_input_free(&in);
    unlink(path);
    free(path);
}

/* Each bad file fails with the line and the problem named. */
static void test_bad_files(void **state)
{
    (void)state;
    static const struct {
        const char *text, *message;
    } cases[] = {
        {"AAC FF\nAACG FF\n", ":2: k mismatch"},
        {"AAC FF\nAXC FF\n", ":2: malformed line"},
        {"AAC FF\nACG F\n", ":2: malformed line"},
        {"AAC FF\nACG FFF\n", ":2: malformed line"},
        {"AAC FF\n\nACG FF\n", ":2: malformed line"},
        {" AAC FF\n", ":1: malformed line"},
        {"", "no k-mers"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *path = temp_file(cases[i].text);
        char error[256] = "";
        struct kmer_input in;
        assert_false(kmer_read_file(path, 0, &in, error, sizeof(error)));
        if (!strstr(error, cases[i].message))
            fail_msg("case %zu: '%s' does not say '%s'", i, error, cases[i].message);
        assert_null(in.kmers);
        unlink(path);
        free(path);
    }
    char error[256] = "";
    struct kmer_input in;
    assert_false(kmer_read_file("/nonexistent/k.txt", 0, &in, error, sizeof(error)));
    assert_non_null(strstr(error, "cannot open /nonexistent/k.txt"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encoding),      cmocka_unit_test(test_segments),
        cmocka_unit_test(test_cpu_assembler), cmocka_unit_test(test_dangling),
        cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
