/*
 * vocl-smi - the proxies an application would use, and who uses them: for
 * each proxy its devices, what it holds, and every open session (user,
 * process, how long, its objects and memory).  An ordinary program on
 * libvocl: it connects as an application does (VOCL_PROXIES, a proxies
 * file, or the names given), and asks each proxy its STATE.
 *
 *   vocl-smi [--watch SECONDS [--count N]] [PROXY...]
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

/* One proxy's STATE, as a table; false past the last proxy. */
static bool show(int i, int *shown)
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
        printf("proxy %s: does not answer (it died, or refused this client)\n", name);
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
                                             {"help", no_argument, NULL, 'h'},
                                             {NULL, 0, NULL, 0}};
    double watch = 0;
    long count = -1;
    int c;
    char *end;
    while ((c = getopt_long(argc, argv, "w:c:h", longopts, NULL)) != -1) {
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
        printf("vocl-smi  %s\n", when);
        int shown = 0;
        for (int i = 0; show(i, &shown); i++)
            ;
        if (!shown)
            printf("no proxy (only devices of this node)\n");
        fflush(stdout);
        if (watch <= 0 || (count > 0 && round + 1 >= count))
            return shown ? 0 : 1;
        nanosleep(&(struct timespec){(time_t)watch, (long)((watch - (long)watch) * 1e9)},
                  NULL);
        printf("\n");
    }
}
