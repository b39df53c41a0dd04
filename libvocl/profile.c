/*
 * profile.c - per-call counts and times (VOCL_PROFILE), and a timeline of
 * the client's calls and its proxies' work (VOCL_TRACE).  See profile.h.
 */
#include "profile.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backoff.h"
#include "vocl.h"

bool vocl_prof_on;
bool vocl_trace_on;

static struct {
    atomic_uint_fast64_t count, ns, bytes;
} stats[VOCL_FN_COUNT];

static atomic_uint_fast64_t shared_count, shared_bytes;

static _Thread_local int depth;
static _Thread_local uint64_t call_bytes;
static _Thread_local uint64_t call_posted, call_replied; /* (0: not) */

/* Client trace events, kept in memory until exit. */
struct tev {
    uint16_t fn;
    uint32_t tid;
    uint64_t start, dur, bytes;
    uint64_t posted, replied; /* after start; 0: not */
};
#define TRACE_MAX (1u << 20)
static struct tev *tevs;
static size_t ntev, captev, dropped;
static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static const char *trace_path;

__attribute__((constructor)) static void prof_setup(void)
{
    const char *p = getenv("VOCL_PROFILE");
    trace_path = getenv("VOCL_TRACE");
    vocl_trace_on = trace_path && *trace_path;
    vocl_prof_on = (p && *p && strcmp(p, "0")) || vocl_trace_on;
}

uint64_t vocl_prof_enter(void)
{
    if (depth++ == 0)
        call_bytes = call_posted = call_replied = 0;
    return vocl_now_ns();
}

void vocl_prof_posted(void)
{
    if (vocl_trace_on && depth > 0)
        call_posted = vocl_now_ns();
}

void vocl_prof_replied(void)
{
    if (vocl_trace_on && depth > 0)
        call_replied = vocl_now_ns();
}

static void trace_add(enum vocl_fn fn, uint64_t start, uint64_t dur, uint64_t bytes)
{
    uint64_t posted = call_posted > start ? call_posted - start : 0;
    uint64_t replied = call_replied > start ? call_replied - start : 0;
    pthread_mutex_lock(&trace_lock);
    if (ntev == captev && captev < TRACE_MAX) {
        size_t cap = captev ? 2 * captev : 4096;
        struct tev *t = realloc(tevs, cap * sizeof(*t));
        if (t) {
            tevs = t;
            captev = cap;
        }
    }
    if (ntev < captev)
        tevs[ntev++] = (struct tev){(uint16_t)fn, (uint32_t)syscall(SYS_gettid), start, dur, bytes,
                                    posted, replied};
    else
        dropped++;
    pthread_mutex_unlock(&trace_lock);
}

void vocl_prof_leave(enum vocl_fn fn, uint64_t start_ns)
{
    if (--depth > 0)
        return;
    uint64_t dur = vocl_now_ns() - start_ns;
    atomic_fetch_add_explicit(&stats[fn].count, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&stats[fn].ns, dur, memory_order_relaxed);
    atomic_fetch_add_explicit(&stats[fn].bytes, call_bytes, memory_order_relaxed);
    if (vocl_trace_on)
        trace_add(fn, start_ns, dur, call_bytes);
}

void vocl_prof_bytes(size_t n)
{
    call_bytes += n;
}

/* --- the table ------------------------------------------------------------------------------------ */

static int by_time(const void *a, const void *b)
{
    uint64_t x = stats[*(const int *)a].ns, y = stats[*(const int *)b].ns;
    return x < y ? 1 : x > y ? -1 : 0;
}

static void print_table(void)
{
    int order[VOCL_FN_COUNT], n = 0;
    uint64_t total = 0;
    for (int i = 0; i < VOCL_FN_COUNT; i++)
        if (stats[i].count) {
            order[n++] = i;
            total += stats[i].ns;
        }
    qsort(order, (size_t)n, sizeof(order[0]), by_time);
    fprintf(stderr, "\nVOCL profile (pid %d): %d entry points called, %.3f s in OpenCL calls\n",
            (int)getpid(), n, total * 1e-9);
    fprintf(stderr, "%-36s %10s %12s %12s %6s %14s\n", "call", "count", "total ms", "mean us",
            "%time", "bytes");
    for (int k = 0; k < n; k++) {
        int i = order[k];
        uint64_t c = stats[i].count, ns = stats[i].ns;
        fprintf(stderr, "%-36s %10llu %12.3f %12.2f %6.1f %14llu\n", vocl_fn_names[i],
                (unsigned long long)c, ns * 1e-6, ns * 1e-3 / (double)c,
                total ? 100.0 * (double)ns / (double)total : 0.0,
                (unsigned long long)stats[i].bytes);
    }
    if (shared_count)
        fprintf(stderr, "of them in memory shared with a proxy of this node: %llu transfers, "
                        "%llu bytes\n",
                (unsigned long long)shared_count, (unsigned long long)shared_bytes);
}

void vocl_prof_shared(size_t n)
{
    vocl_prof_bytes(n);
    atomic_fetch_add(&shared_count, 1);
    atomic_fetch_add(&shared_bytes, n);
}

/* --- the trace ------------------------------------------------------------------------------------ */

/* The trace's process id of daemon i (VOCL_PROXIES' i-th name); a job's
 * ranks are their MPI ranks. */
#define TRACE_DAEMON_PID 1000000

/* A proxy's events (protocol.h, TRACE). */
static void write_proxy_events(FILE *f, struct vocl_proxy *px, bool *first)
{
    struct vocl_call c;
    vocl_call_init(&c);
    c.px = px;
    bool answered = false;
    if (vocl_call_start(&c, VOCL_OP_TRACE) == 0) {
        vocl_enc_TRACE_req(c.w, &(struct vocl_msg_TRACE_req){0});
        answered = vocl_call_send(&c) == 0;
    }
    if (answered) {
        struct vocl_msg_TRACE_rep rep;
        const char *why = vocl_dec_TRACE_rep(&c.r, &rep);
        /* A daemon's rank is its own world's (0, as the application's may
         * be): it is told apart by the proxy's index. */
        int pid = px->name ? TRACE_DAEMON_PID + px->index : px->rank;
        char name[96];
        if (px->name)
            snprintf(name, sizeof(name), "voclproxyd %s", px->name);
        else
            snprintf(name, sizeof(name), "voclproxyd rank %d", px->rank);
        for (char *ch = name; *ch; ch++) /* (a user's name, inside a JSON string) */
            if (*ch == '"' || *ch == '\\' || (unsigned char)*ch < ' ')
                *ch = '_';
        fprintf(f, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,"
                   "\"args\":{\"name\":\"%s\"}}",
                *first ? "" : ",\n", pid, name);
        *first = false;
        struct vocl_rd it;
        struct vocl_rec_trace_event e;
        vocl_rd_init(&it, rep.events.raw, rep.events.raw_len);
        while (!why && vocl_next_trace_event(&it, &e))
            fprintf(f, ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%u,"
                       "\"ts\":%.3f,\"dur\":%.3f,\"args\":{\"bytes\":%llu}}",
                    e.thread ? "send chunk" : vocl_op_name(e.op), pid, (unsigned)e.thread,
                    e.start * 1e-3, e.dur * 1e-3, (unsigned long long)e.bytes);
    }
    vocl_call_end(&c);
}

static void write_trace(void)
{
    FILE *f = fopen(trace_path, "w");
    if (!f) {
        vocl_warn("VOCL_TRACE: cannot write %s", trace_path);
        return;
    }
    int me = 0;
    int inited = 0, fin = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&fin);
    if (vocl.mpi_used && inited && !fin)
        MPI_Comm_rank(vocl.comm, &me);
    bool first = true;
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", f);
    for (int i = 0; i < vocl.nproxies; i++)
        if (!vocl.proxies[i]->local && !vocl.proxies[i]->dead)
            write_proxy_events(f, vocl.proxies[i], &first);
    fprintf(f, "%s{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,"
               "\"args\":{\"name\":\"application rank %d\"}}",
            first ? "" : ",\n", me, me);
    pthread_mutex_lock(&trace_lock);
    for (size_t i = 0; i < ntev; i++)
        fprintf(f, ",\n{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"ts\":%.3f,"
                   "\"dur\":%.3f,\"args\":{\"bytes\":%llu,\"posted\":%.3f,\"replied\":%.3f}}",
                vocl_fn_names[tevs[i].fn], me, tevs[i].tid, tevs[i].start * 1e-3,
                tevs[i].dur * 1e-3, (unsigned long long)tevs[i].bytes, tevs[i].posted * 1e-3,
                tevs[i].replied * 1e-3);
    if (dropped)
        vocl_warn("VOCL_TRACE: %zu calls after the first %u not traced", dropped, TRACE_MAX);
    free(tevs);
    tevs = NULL;
    ntev = captev = 0;
    pthread_mutex_unlock(&trace_lock);
    fputs("\n]}\n", f);
    if (fclose(f))
        vocl_warn("VOCL_TRACE: error writing %s", trace_path);
}

void vocl_prof_report(void)
{
    if (!vocl_prof_on)
        return;
    vocl_prof_on = false; /* what runs from here is not the application's */
    if (vocl_trace_on)
        write_trace();
    const char *p = getenv("VOCL_PROFILE");
    if (p && *p && strcmp(p, "0"))
        print_table();
}
