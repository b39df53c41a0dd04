/*
 * vocl-smi - the proxies an application would use, and who uses them: for
 * each proxy its devices, what it holds, and every open session (user,
 * process, how long, its objects and memory).  An ordinary program on
 * libvocl: it connects as an application does (VOCL_PROXIES, a proxies
 * file, or the names given), and asks each proxy its STATE.
 *
 *   vocl-smi [--json] [--watch SECONDS [--count N]] [PROXY...]
 *
 * --json: one JSON object a proxy, a line each, for programs.
 */
#include <CL/cl.h>

#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vocl_msg.h"
#include "wire.h"

/* libvocl's (smi.c). */
int vocl_smi_state(int i, char *name, size_t namelen, void **rep, size_t *len);

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: vocl-smi [OPTIONS] [PROXY...]\n"
            "List the VOCL proxies this user's applications would use, their devices and\n"
            "their open sessions (every user's): user, process, time connected, objects,\n"
            "memory objects, host memory the proxy holds for it.\n\n"
            "  PROXY...             these proxies (as VOCL_PROXIES names them); default:\n"
            "                       VOCL_PROXIES, VOCL_PROXIES_FILE, ~/.vocl/proxies,\n"
            "                       /etc/vocl/proxies, or the job's (under vocl-run)\n"
            "  -w, --watch SECONDS  again every SECONDS, until interrupted\n"
            "  -c, --count N        with --watch: N times, then exit\n"
            "  -j, --json           one JSON object per proxy, each on a line of its own\n"
            "  -h, --help           this help\n"
            "Exit status: 0; 1 when no proxy answers; 2 on bad usage.  See vocl-smi(1).\n");
}

static const char *size_text(uint64_t b, char *buf, size_t len)
{
    static const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int u = 0;
    while (v >= 1024 && u < 4)
        v /= 1024, u++;
    snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
    return buf;
}

/* Whether a listed session is this program's own (left out). */
static bool mine(const struct vocl_rec_session_state *s)
{
    return s->pid == (uint64_t)getpid();
}

/* s (n bytes, from a proxy) as a JSON string: quotes, backslashes and
 * control characters escaped, bytes that are not UTF-8 as U+FFFD. */
static void json_str(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    putchar('"');
    for (size_t i = 0; i < n; i++) {
        unsigned c = p[i];
        if (c == '"' || c == '\\') {
            printf("\\%c", c);
        } else if (c < 0x20 || c == 0x7f) {
            printf("\\u%04x", c);
        } else if (c < 0x80) {
            putchar((int)c);
        } else {
            /* A whole sequence (its lead byte's length, continuation bytes
             * after it; no overlong form, surrogate, or past U+10FFFF)
             * passes as it is. */
            size_t len = c >= 0xf5 ? 0 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
            unsigned c1 = i + 1 < n ? p[i + 1] : 0;
            bool range = c == 0xe0   ? c1 >= 0xa0
                         : c == 0xed ? c1 < 0xa0
                         : c == 0xf0 ? c1 >= 0x90
                         : c == 0xf4 ? c1 < 0x90
                                     : true;
            size_t k = 1;
            while (len && k < len && i + k < n && (p[i + k] & 0xc0) == 0x80)
                k++;
            if (len && k == len && range) {
                fwrite(p + i, 1, len, stdout);
                i += len - 1;
            } else {
                printf("\\ufffd");
            }
        }
    }
    putchar('"');
}

/* One proxy's STATE as one JSON object on a line (st: NULL when it does
 * not answer). */
static void show_json(const char *name, const struct vocl_msg_STATE_rep *st, time_t now)
{
    printf("{\"proxy\":");
    json_str(name, strlen(name));
    printf(",\"time\":%lld,\"answers\":%s", (long long)now, st ? "true" : "false");
    if (!st) {
        printf("}\n");
        return;
    }
    struct vocl_rd it;
    struct vocl_rec_device_state d;
    struct vocl_rec_session_state s;
    printf(",\"objects\":%" PRIu64 ",\"memory_bytes\":%" PRIu64 ",\"devices\":[", st->objects,
           st->bytes);
    vocl_rd_init(&it, st->devices.raw, st->devices.raw_len);
    for (uint32_t k = 0; vocl_next_device_state(&it, &d); k++) {
        printf("%s{\"device\":%" PRIu32 ",\"name\":", k ? "," : "", k);
        json_str(d.name.p, d.name.len);
        printf(",\"global_memory_bytes\":%" PRIu64 ",\"busy_share\":", d.global_mem);
        if (d.busy <= 1000) /* (else not measured: voclproxyd --busy-share) */
            printf("%" PRIu32 ".%03" PRIu32 "}", d.busy / 1000, d.busy % 1000);
        else
            printf("null}");
    }
    printf("],\"sessions\":[");
    vocl_rd_init(&it, st->sessions.raw, st->sessions.raw_len);
    for (bool first = true; vocl_next_session_state(&it, &s);) {
        if (mine(&s))
            continue;
        printf("%s{\"session\":%" PRIu32 ",\"user\":", first ? "" : ",", s.id);
        json_str(s.user.p, s.user.len);
        printf(",\"host\":");
        json_str(s.host.p, s.host.len);
        if (s.pid)
            printf(",\"pid\":%" PRIu64, s.pid);
        else
            printf(",\"pid\":null");
        printf(",\"seconds\":%" PRIu64 ",\"objects\":%" PRIu64 ",\"memory_bytes\":%" PRIu64
               ",\"host_memory_bytes\":%" PRIu64 "}",
               s.seconds, s.objects, s.bytes, s.host_mem);
        first = false;
    }
    printf("]}\n");
}

/* One proxy's STATE, as a table (json: as show_json); false past the
 * last proxy. */
static bool show(int i, int *shown, bool json)
{
    char name[256], a[32], b[32];
    void *rep;
    size_t len;
    int rc = vocl_smi_state(i, name, sizeof(name), &rep, &len);
    if (rc < 0)
        return false;
    (*shown)++;
    struct vocl_rd r;
    struct vocl_msg_STATE_rep st;
    vocl_rd_init(&r, rep, len);
    if (rc > 0 || vocl_dec_STATE_rep(&r, &st) || r.fail) {
        if (json)
            show_json(name, NULL, time(NULL));
        else
            printf("proxy %s: does not answer (it died, or refused this client)\n", name);
        free(rep);
        return true;
    }
    if (json) {
        show_json(name, &st, time(NULL));
        free(rep);
        return true;
    }
    struct vocl_rd it;
    struct vocl_rec_session_state s;
    uint32_t others = 0;
    vocl_rd_init(&it, st.sessions.raw, st.sessions.raw_len);
    while (vocl_next_session_state(&it, &s))
        others += !mine(&s);
    printf("proxy %s: %" PRIu32 " device%s, %" PRIu32 " session%s, %" PRIu64
           " objects, %s of memory objects\n",
           name, st.devices.n, st.devices.n == 1 ? "" : "s", others, others == 1 ? "" : "s",
           st.objects, size_text(st.bytes, a, sizeof(a)));
    struct vocl_rec_device_state d;
    vocl_rd_init(&it, st.devices.raw, st.devices.raw_len);
    for (uint32_t k = 0; vocl_next_device_state(&it, &d); k++) {
        char busy[16] = "  -  "; /* (not measured: voclproxyd --busy-share) */
        if (d.busy <= 1000)
            snprintf(busy, sizeof(busy), "%3" PRIu32 " %%", (d.busy + 5) / 10);
        printf("  device %" PRIu32 "  %-40.*s %10s  busy %s\n", k, (int)d.name.len, d.name.p,
               size_text(d.global_mem, a, sizeof(a)), busy);
    }
    if (others)
        printf("  %-8s %-12s %-16s %-9s %-10s %8s %11s %11s\n", "session", "user", "host",
               "process", "connected", "objects", "memory", "host mem");
    vocl_rd_init(&it, st.sessions.raw, st.sessions.raw_len);
    while (vocl_next_session_state(&it, &s)) {
        char pid[24], since[24];
        if (mine(&s))
            continue;
        if (s.pid)
            snprintf(pid, sizeof(pid), "%" PRIu64, s.pid);
        else
            snprintf(pid, sizeof(pid), "-");
        snprintf(since, sizeof(since), "%02" PRIu64 ":%02" PRIu64 ":%02" PRIu64,
                 s.seconds / 3600, s.seconds / 60 % 60, s.seconds % 60);
        printf("  %-8" PRIu32 " %-12.*s %-16.*s %-9s %-10s %8" PRIu64 " %11s %11s\n", s.id,
               (int)(s.user.len ? s.user.len : 1), s.user.len ? s.user.p : "-",
               (int)(s.host.len ? s.host.len : 1), s.host.len ? s.host.p : "-", pid, since,
               s.objects, size_text(s.bytes, a, sizeof(a)), size_text(s.host_mem, b, sizeof(b)));
    }
    free(rep);
    return true;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {{"watch", required_argument, NULL, 'w'},
                                             {"count", required_argument, NULL, 'c'},
                                             {"json", no_argument, NULL, 'j'},
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    double watch = 0;
    bool json = false;
    long count = -1;
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "w:c:jh", longopts, NULL)) != -1) {
        switch (c) {
        case 'w':
            watch = strtod(optarg, &end);
            if (end == optarg || *end || !(watch >= 0.001 && watch <= 86400)) {
                fprintf(stderr, "vocl-smi: --watch %s: seconds from 0.001 to 86400\n", optarg);
                return 2;
            }
            break;
        case 'c':
            count = strtol(optarg, &end, 10);
            if (end == optarg || *end || count < 1) {
                fprintf(stderr, "vocl-smi: --count %s: a number of rounds, 1 or more\n", optarg);
                return 2;
            }
            break;
        case 'j': json = true; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) { /* the names given, as VOCL_PROXIES */
        size_t n = 1;
        for (int i = optind; i < argc; i++)
            n += strlen(argv[i]) + 1;
        char *list = calloc(1, n);
        for (int i = optind; list && i < argc; i++)
            strcat(strcat(list, i > optind ? "," : ""), argv[i]);
        if (!list || setenv("VOCL_PROXIES", list, 1))
            return 1;
        free(list);
    }
    cl_uint np = 0;
    if (clGetPlatformIDs(0, NULL, &np) != CL_SUCCESS || np == 0) {
        fprintf(stderr, "vocl-smi: no proxy answers (libvocl says why above)\n");
        return 1;
    }
    for (long round = 0;; round++) {
        time_t now = time(NULL);
        char when[64];
        strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime(&now));
        if (!json)
            printf("vocl-smi  %s\n", when);
        int shown = 0;
        for (int i = 0; show(i, &shown, json); i++)
            ;
        if (!shown && !json)
            printf("no proxy (only devices of this node)\n");
        fflush(stdout);
        if (watch <= 0 || (count > 0 && round + 1 >= count))
            return shown ? 0 : 1;
        nanosleep(&(struct timespec){(time_t)watch, (long)((watch - (long)watch) * 1e9)},
                  NULL);
        if (!json)
            printf("\n");
    }
}
