/*
 * record.c - VOCL_RECORD_REQUESTS=DIR: every request message the executor
 * runs is written, as it came, to DIR/<pid>-<n>.bin (n counts from 0 in each
 * process).  The seed corpus of the request fuzzer is recorded this way from
 * real traffic (tests/fuzz/README).  Off, it costs one branch per request.
 */
#include "internal.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static const char *record_dir;
static pthread_once_t record_once = PTHREAD_ONCE_INIT;
static atomic_uint record_n;
static atomic_bool record_warned;

static void record_init(void)
{
    const char *dir = getenv("VOCL_RECORD_REQUESTS");
    if (dir && *dir)
        record_dir = dir;
}

void exec_record(const void *msg, size_t len)
{
    pthread_once(&record_once, record_init);
    if (!record_dir)
        return;
    char path[4096];
    snprintf(path, sizeof(path), "%s/%ld-%06u.bin", record_dir, (long)getpid(),
             atomic_fetch_add(&record_n, 1));
    FILE *f = fopen(path, "wb");
    bool ok = f && fwrite(msg, 1, len, f) == len;
    if (f && fclose(f))
        ok = false;
    /* Recording is for tests: a full disk must not fail the requests. */
    if (!ok && !atomic_exchange(&record_warned, true))
        vocl_warn("VOCL_RECORD_REQUESTS: cannot write %s: not recording it (nor saying so again)",
                  path);
}
