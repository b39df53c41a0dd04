/*
 * test_rng.c: the random words on the devices, through the whole runtime
 * (tests/apps runs it on two PoCL devices).  Propositions keep an event
 * only if (1) Philox-4x32-10 compiled for the device gives Random123's
 * known answers, and (2) every word of the event's buffer equals the word
 * computed on the spot from the event's id; then every event must be
 * selected, in batches that do not divide the events, with reordering.
 */
#include "hep.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char source[] =
    "int known_answers(HEP_PARAMS, uint e)\n"
    "{\n"
    "    uint ctr[4] = {0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u};\n"
    "    uint key[2] = {0xa4093822u, 0x299f31d0u}, out[4];\n"
    "    hep_philox4x32(ctr, key, out);\n"
    "    return out[0] == 0xd16cfe09u && out[1] == 0x94fdccebu && out[2] == 0x5001e420u &&\n"
    "           out[3] == 0x24126ea1u && x[e] == (float)(HEP_EVENT_ID(e) % 1000u);\n"
    "}\n"
    "int words(HEP_PARAMS, uint e)\n"
    "{\n"
    "    for (uint u = 0; u < HEP_RNG_PER_EVENT; u++)\n"
    "        if (HEP_RANDOM(e, u) != hep_random_word(HEP_SEED, HEP_EVENT_ID(e), u))\n"
    "            return 0;\n"
    "    return 1;\n"
    "}\n";

static const struct hep_column columns[] = {{"x", HEP_F32, 1, false}};
static const struct hep_prop props[] = {
    {"words", "words", NULL},
    {"known_answers", "known_answers", NULL},
};

#define N 5000

int main(void)
{
    char error[HEP_ERROR_SIZE], dir[] = "/tmp/hep-test-rng-XXXXXX", path[64];
    if (!mkdtemp(dir))
        return 2;
    snprintf(path, sizeof(path), "%s/events.h5", dir);
    hep_file *f = hep_file_create(path, columns, 1, 500, 1, error);
    static uint64_t ids[N];
    static float x[N];
    for (int i = 0; i < N; i++) {
        ids[i] = 0x100000000ull * (uint64_t)(i % 3) + 17u * (uint64_t)i;
        x[i] = (float)(ids[i] % 1000u);
    }
    void *data[1] = {x};
    if (!f || hep_file_append(f, N, ids, data, error) || hep_file_close(f, error)) {
        fprintf(stderr, "test_rng: %s\n", error);
        return 2;
    }
    struct hep_analysis an = {
        .name = "test-rng",
        .source = source,
        .columns = columns,
        .num_columns = 1,
        .props = props,
        .num_props = 2,
        .rng_per_event = 12,
        .seed = 0xfeedface12345678ull,
    };
    struct hep_options o;
    hep_options_default(&o);
    o.input = path;
    o.batch = 333;
    o.progress = false;
    o.checkpoint = 1;
    struct hep_result res;
    int rc = hep_run(&an, &o, &res, error);
    unlink(path);
    rmdir(dir);
    if (rc) {
        fprintf(stderr, "test_rng: %s\n", error);
        return 2;
    }
    int bad = 0;
    if (res.selected != N) {
        fprintf(stderr, "test_rng: %" PRIu64 " of %d events have the right words\n",
                res.selected, N);
        bad = 1;
    }
    for (int i = 1; i < N && !bad; i++)
        if (res.ids[i] <= res.ids[i - 1])
            bad = fprintf(stderr, "test_rng: ids out of order\n") > 0;
    printf("test_rng: %" PRIu64 " of %d events on %u devices, %u checkpoints\n", res.selected, N,
           res.devices, res.checkpoints);
    hep_result_free(&res);
    return bad;
}
