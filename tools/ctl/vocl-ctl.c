/*
 * vocl-ctl - moves running applications' virtual GPUs between proxies, and
 * drains daemons for maintenance.
 *
 * Each application under libvocl with two proxies or more listens on a Unix
 * socket, <dir>/<pid>.sock (libvocl/control.c), and each daemon on
 * <dir>/proxy-<name>.sock (proxyd/serve.c); this tool sends one request
 * line and prints the answer.  Moves work alike in job mode and in daemon
 * mode: the application holds what a migration needs.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl-ask.h"

#ifndef VOCL_VERSION
#define VOCL_VERSION "unknown"
#endif

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: vocl-ctl [--dir DIR] COMMAND\n"
            "Moves the virtual GPUs of running VOCL applications between proxies.\n"
            "\n"
            "  list                      every application reached, and its proxies\n"
            "  proxies PID               the proxies of application PID: number, name,\n"
            "                            node, devices, the objects it has there\n"
            "  migrate PID FROM TO       moves everything application PID has on proxy\n"
            "                            FROM to proxy TO (a number as 'proxies' gives, or\n"
            "                            in daemon mode a name)\n"
            "  migrate --all FROM TO     the same in every application reached\n"
            "  drain FROM --to TO        a daemon FROM of this user refuses new sessions,\n"
            "                            and every application is moved off FROM to TO\n"
            "  undrain NAME              daemon NAME takes new sessions again\n"
            "  balance [--watch S [--count N]]\n"
            "                            where a proxy serves several applications and\n"
            "                            another that one of them knows serves none, moves\n"
            "                            that one there: one move a pass, a pass every S\n"
            "                            seconds with --watch (N passes; default: until\n"
            "                            stopped)\n"
            "\n"
            "  --dir DIR   where applications and daemons listen (default: VOCL_CTL_DIR,\n"
            "              else $TMPDIR/vocl-ctl-UID, as libvocl and voclproxyd)\n"
            "  -h, --help  this help;  -V, --version  the version\n"
            "Exit status: 0 done, 1 an application or daemon refused (it says why;\n"
            "nothing of it moved), 2 a usage error or nothing reached.\n");
}

/* Prints an answer, each line after prefix. */
static void print(const char *prefix, char *ans)
{
    for (char *line = strtok(ans, "\n"); line; line = strtok(NULL, "\n"))
        printf("%s%s\n", prefix, line);
}

/* The applications listening in dir (their pids' names, malloc'd); how
 * many.  The sockets of processes that are gone are removed. */
static size_t apps_in(const char *dir, char (**who)[24])
{
    DIR *d = opendir(dir);
    size_t n = 0, cap = 0;
    *who = NULL;
    struct dirent *e;
    while (d && (e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (end == e->d_name || strcmp(end, ".sock") || pid <= 0)
            continue;
        if (kill((pid_t)pid, 0) && errno == ESRCH) {
            /* Left by a process that was killed: nobody listens there. */
            unlinkat(dirfd(d), e->d_name, 0);
            continue;
        }
        if (n == cap) {
            char(*nw)[24] = realloc(*who, (cap = cap ? 2 * cap : 16) * sizeof(*nw));
            if (!nw)
                break;
            *who = nw;
        }
        snprintf((*who)[n++], sizeof(**who), "%ld", pid);
    }
    if (d)
        closedir(d);
    return n;
}

/* Whether an application's 'proxies' answer (changed) shows objects on
 * proxy p, a number or a name. */
static bool has_objects_on(char *ans, const char *p)
{
    char num[64], name[160], *save;
    snprintf(num, sizeof(num), "proxy %s ", p);
    snprintf(name, sizeof(name), " name=%s ", p);
    for (char *l = strtok_r(ans, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        const char *o = strstr(l, " objects=");
        if ((strncmp(l, num, strlen(num)) == 0 || strstr(l, name)) && o && atoi(o + 9) > 0)
            return true;
    }
    return false;
}

/* req to every application in dir (with only: those with objects on that
 * proxy); the worst status. */
static int ask_apps(const char *dir, const char *req, const char *only)
{
    char(*who)[24], ans[65536], prefix[32];
    size_t n = apps_in(dir, &who);
    int worst = 0, reached = 0;
    for (size_t i = 0; i < n; i++) {
        if (only && (vocl_ctl_ask(dir, who[i], "proxies", ans, sizeof(ans)) ||
                     !has_objects_on(ans, only)))
            continue;
        int rc = vocl_ctl_ask(dir, who[i], req, ans, sizeof(ans));
        if (rc == 2) /* (it ended meanwhile) */
            continue;
        reached++;
        snprintf(prefix, sizeof(prefix), "%s: ", who[i]);
        print(prefix, ans);
        worst = rc > worst ? rc : worst;
    }
    free(who);
    if (!reached && !only) {
        fprintf(stderr, "vocl-ctl: no application listens in %s\n", dir);
        return 2;
    }
    if (!reached)
        printf("no application in %s has objects on proxy %s\n", dir, only);
    return worst;
}

static bool is_pid(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    return end != s && !*end && v > 0;
}

/* A proxy: a number, or a name (no space, no slash). */
static bool is_proxy(const char *s)
{
    return *s && strlen(s) < 128 && !strpbrk(s, " \t\n/");
}

static bool is_number(const char *s)
{
    return *s && strspn(s, "0123456789") == strlen(s);
}

/* drain or undrain daemon name; 0, 1 refused, 2 not reached. */
static int daemon_req(const char *dir, const char *name, const char *req)
{
    char who[160], ans[1024];
    snprintf(who, sizeof(who), "proxy-%s", name);
    int rc = vocl_ctl_ask(dir, who, req, ans, sizeof(ans));
    if (rc == 2)
        fprintf(stderr, "vocl-ctl: daemon %s: not reached (%s): is it this user's, "
                        "started with --listen --name %s?\n", name, ans, name);
    else
        print("", ans);
    return rc;
}

/* --- balance: one application off a device that several share, onto an idle one --- */

enum { MAX_APPS = 256, MAX_PROXIES = 64 };

struct app_view {
    char who[24];
    int n;
    struct {
        char name[128];
        int objects;
    } px[MAX_PROXIES];
};

/* An application's proxies, from its 'proxies' answer; false: not reached. */
static bool view(const char *dir, const char *who, struct app_view *v)
{
    char ans[65536], *save;
    if (vocl_ctl_ask(dir, who, "proxies", ans, sizeof(ans)))
        return false;
    snprintf(v->who, sizeof(v->who), "%s", who);
    v->n = 0;
    for (char *l = strtok_r(ans, "\n", &save); l && v->n < MAX_PROXIES;
         l = strtok_r(NULL, "\n", &save)) {
        int k;
        if (sscanf(l, "proxy %d name=%127s", &k, v->px[v->n].name) != 2)
            continue;
        const char *o = strstr(l, " objects=");
        v->px[v->n].objects = o && !strstr(l, " gone") ? atoi(o + 9) : -1;
        v->n++;
    }
    return true;
}

/* How many applications use the proxy named name (objects there). */
static int users_of(const struct app_view *apps, int napps, const char *name)
{
    int n = 0;
    for (int a = 0; a < napps; a++)
        for (int k = 0; k < apps[a].n; k++)
            n += apps[a].px[k].objects > 0 && !strcmp(apps[a].px[k].name, name);
    return n;
}

/* One pass: where a proxy serves several applications and another proxy
 * that one of them knows serves none, that one moves there (one move a
 * pass: the next pass sees the new loads). */
static void balance(const char *dir)
{
    static struct app_view apps[MAX_APPS];
    char(*who)[24], req[300], ans[1024];
    size_t n = apps_in(dir, &who);
    int napps = 0;
    for (size_t i = 0; i < n && napps < MAX_APPS; i++)
        napps += view(dir, who[i], &apps[napps]);
    free(who);
    for (int a = napps - 1; a >= 0; a--) { /* (the newest applications move first) */
        for (int k = 0; k < apps[a].n; k++) {
            const char *busy = apps[a].px[k].name;
            if (apps[a].px[k].objects <= 0 || users_of(apps, napps, busy) < 2)
                continue;
            for (int j = 0; j < apps[a].n; j++) {
                const char *idle = apps[a].px[j].name;
                if (apps[a].px[j].objects != 0 || users_of(apps, napps, idle) > 0)
                    continue;
                snprintf(req, sizeof(req), "migrate %d %d", k, j);
                int rc = vocl_ctl_ask(dir, apps[a].who, req, ans, sizeof(ans));
                printf("%s: %s (shared by %d applications) -> %s (idle): %s", apps[a].who, busy,
                       users_of(apps, napps, busy), idle, ans);
                if (rc == 0)
                    return;
            }
        }
    }
    printf("balanced: no proxy serves several applications while another idles\n");
}

int main(int argc, char **argv)
{
    const char *given = NULL, *to = NULL;
    double watch = 0;    /* balance: a pass every so many seconds */
    long watch_count = 0; /* that many passes (0: until stopped) */
    char *args[8];
    int nargs = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "-V") || !strcmp(argv[i], "--version")) {
            printf("vocl-ctl %s\n", VOCL_VERSION);
            return 0;
        }
        if (!strcmp(argv[i], "--watch") && i + 1 < argc) {
            watch = atof(argv[++i]);
            continue;
        }
        if (!strcmp(argv[i], "--count") && i + 1 < argc) {
            watch_count = atol(argv[++i]);
            continue;
        }
        if ((!strcmp(argv[i], "--dir") || !strcmp(argv[i], "--to")) && i + 1 < argc) {
            if (argv[i][2] == 'd')
                given = argv[i + 1];
            else
                to = argv[i + 1];
            i++;
            continue;
        }
        if (nargs == 8 || (argv[i][0] == '-' && strcmp(argv[i], "--all"))) {
            fprintf(stderr, "vocl-ctl: unexpected argument '%s' (see --help)\n", argv[i]);
            return 2;
        }
        args[nargs++] = argv[i];
    }
    char buf[256], req[300], ans[65536];
    const char *dir = vocl_ctl_dir_of(given, buf, sizeof(buf));
    const char *cmd = nargs ? args[0] : "";
    if (nargs == 1 && !strcmp(cmd, "list"))
        return ask_apps(dir, "proxies", NULL);
    if (nargs == 2 && !strcmp(cmd, "proxies") && is_pid(args[1])) {
        int rc = vocl_ctl_ask(dir, args[1], "proxies", ans, sizeof(ans));
        if (rc == 2)
            fprintf(stderr, "vocl-ctl: application %s: not reached (%s)\n", args[1], ans);
        else
            print("", ans);
        return rc;
    }
    if (nargs == 4 && !strcmp(cmd, "migrate") && is_proxy(args[2]) && is_proxy(args[3])) {
        snprintf(req, sizeof(req), "migrate %s %s", args[2], args[3]);
        if (!strcmp(args[1], "--all"))
            return ask_apps(dir, req, NULL);
        if (is_pid(args[1])) {
            int rc = vocl_ctl_ask(dir, args[1], req, ans, sizeof(ans));
            if (rc == 2)
                fprintf(stderr, "vocl-ctl: application %s: not reached (%s)\n", args[1], ans);
            else
                print("", ans);
            return rc;
        }
    }
    if (nargs == 2 && !strcmp(cmd, "drain") && is_proxy(args[1]) && to && is_proxy(to)) {
        /* A daemon first (no new sessions), then the open ones move. */
        int rc = is_number(args[1]) ? 0 : daemon_req(dir, args[1], "drain");
        snprintf(req, sizeof(req), "migrate %s %s", args[1], to);
        int moved = ask_apps(dir, req, args[1]);
        return rc > moved ? rc : moved;
    }
    if (nargs == 1 && !strcmp(cmd, "balance")) {
        /* Once; with --watch, a pass every so many seconds (--count of them). */
        for (long i = 0; watch <= 0 ? i < 1 : watch_count <= 0 || i < watch_count; i++) {
            if (i > 0)
                nanosleep(&(struct timespec){(time_t)watch,
                                             (long)((watch - (double)(time_t)watch) * 1e9)},
                          NULL);
            balance(dir);
            fflush(stdout);
        }
        return 0;
    }
    if (nargs == 2 && !strcmp(cmd, "undrain") && is_proxy(args[1]) && !is_number(args[1]))
        return daemon_req(dir, args[1], "undrain");
    fprintf(stderr, "vocl-ctl: %s (see --help)\n",
            nargs == 0 ? "no command given" : "a command with the wrong arguments");
    return 2;
}
