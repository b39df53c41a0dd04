/*
 * vocl-ctl - moves running applications' virtual GPUs between proxies.
 *
 * Each application under libvocl with two proxies or more listens on a Unix
 * socket, <dir>/<pid>.sock (libvocl/control.c); this tool sends it one
 * request line and prints the answer.  It works alike in job mode and in
 * daemon mode: the application holds what a migration needs.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef VOCL_VERSION
#define VOCL_VERSION "unknown"
#endif

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: vocl-ctl [--dir DIR] COMMAND\n"
            "Moves the virtual GPUs of running VOCL applications between proxies.\n"
            "\n"
            "  list                        every application that can be reached, and\n"
            "                              its proxies\n"
            "  proxies PID                 the proxies of application PID: number, name,\n"
            "                              node, devices, the objects it has there\n"
            "  migrate PID FROM TO         moves everything application PID has on proxy\n"
            "                              FROM to proxy TO (numbers as 'proxies' gives)\n"
            "  migrate --all FROM TO       the same in every application reached\n"
            "  drain FROM --to TO          every application off proxy FROM, to TO\n"
            "\n"
            "  --dir DIR   where applications listen (default: VOCL_CTL_DIR, else\n"
            "              $TMPDIR/vocl-ctl-UID, as libvocl)\n"
            "  -h, --help  this help;  -V, --version  the version\n"
            "Exit status: 0 done, 1 an application refused (it says why; nothing of\n"
            "it moved), 2 a usage error or no application reached.\n");
}

static const char *dir_of(const char *given, char *buf, size_t n)
{
    if (given)
        return given;
    const char *d = getenv("VOCL_CTL_DIR");
    if (d && *d)
        return d;
    const char *tmp = getenv("TMPDIR");
    snprintf(buf, n, "%s/vocl-ctl-%u", tmp && *tmp ? tmp : "/tmp", (unsigned)geteuid());
    return buf;
}

/* Sends req to application pid and copies its answer to out (prefixed);
 * 0 ok, 1 the application said error, 2 not reached. */
static int ask(const char *dir, long pid, const char *req, const char *prefix)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (snprintf(a.sun_path, sizeof(a.sun_path), "%s/%ld.sock", dir, pid) >=
        (int)sizeof(a.sun_path)) {
        fprintf(stderr, "vocl-ctl: %s: too long a path\n", dir);
        return 2;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
        fprintf(stderr, "vocl-ctl: application %ld: %s (%s)\n", pid, strerror(errno),
                a.sun_path);
        if (fd >= 0)
            close(fd);
        return 2;
    }
    if (write(fd, req, strlen(req)) != (ssize_t)strlen(req) || write(fd, "\n", 1) != 1) {
        fprintf(stderr, "vocl-ctl: application %ld: %s\n", pid, strerror(errno));
        close(fd);
        return 2;
    }
    /* The answer is short (a line per proxy): read whole, then printed. */
    char buf[65536];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof(buf) - 1 && (r = read(fd, buf + n, sizeof(buf) - 1 - n)) > 0)
        n += (size_t)r;
    buf[n] = '\0';
    close(fd);
    if (n < 2) {
        fprintf(stderr, "vocl-ctl: application %ld: no answer\n", pid);
        return 2;
    }
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"))
        printf("%s%s\n", prefix, line);
    return strncmp(buf, "ok", 2) == 0 ? 0 : 1;
}

/* The pids listening in dir (in *pids, malloc'd); their count. */
static size_t listeners(const char *dir, long **pids)
{
    DIR *d = opendir(dir);
    size_t n = 0, cap = 0;
    *pids = NULL;
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (end == e->d_name || strcmp(end, ".sock") || pid <= 0)
            continue;
        if (n == cap) {
            long *np = realloc(*pids, (cap = cap ? 2 * cap : 16) * sizeof(*np));
            if (!np)
                break;
            *pids = np;
        }
        (*pids)[n++] = pid;
    }
    closedir(d);
    return n;
}

static bool is_pid(const char *s, long *pid)
{
    char *end;
    *pid = strtol(s, &end, 10);
    return end != s && !*end && *pid > 0;
}

static bool is_proxy(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    return end != s && !*end && v >= 0;
}

/* req to every application in dir; the worst status. */
static int ask_all(const char *dir, const char *req)
{
    long *pids;
    size_t n = listeners(dir, &pids);
    int worst = n ? 0 : 2;
    if (!n)
        fprintf(stderr, "vocl-ctl: no application listens in %s\n", dir);
    for (size_t i = 0; i < n; i++) {
        char prefix[32];
        snprintf(prefix, sizeof(prefix), "%ld: ", pids[i]);
        int rc = ask(dir, pids[i], req, prefix);
        worst = rc > worst ? rc : worst;
    }
    free(pids);
    return worst;
}

int main(int argc, char **argv)
{
    const char *given = NULL, *to = NULL;
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
        if ((!strcmp(argv[i], "--dir") || !strcmp(argv[i], "--to")) && i + 1 < argc) {
            *(argv[i][2] == 'd' ? &given : &to) = argv[i + 1];
            i++;
            continue;
        }
        if (nargs == 8 || (argv[i][0] == '-' && argv[i][1] == '-' && strcmp(argv[i], "--all"))) {
            fprintf(stderr, "vocl-ctl: unexpected argument '%s' (see --help)\n", argv[i]);
            return 2;
        }
        args[nargs++] = argv[i];
    }
    char buf[256], req[128];
    const char *dir = dir_of(given, buf, sizeof(buf));
    long pid;
    if (nargs == 1 && !strcmp(args[0], "list"))
        return ask_all(dir, "proxies");
    if (nargs == 2 && !strcmp(args[0], "proxies") && is_pid(args[1], &pid))
        return ask(dir, pid, "proxies", "");
    if (nargs == 4 && !strcmp(args[0], "migrate") && is_proxy(args[2]) && is_proxy(args[3])) {
        snprintf(req, sizeof(req), "migrate %s %s", args[2], args[3]);
        if (!strcmp(args[1], "--all"))
            return ask_all(dir, req);
        if (is_pid(args[1], &pid))
            return ask(dir, pid, req, "");
    }
    if (nargs == 2 && !strcmp(args[0], "drain") && is_proxy(args[1]) && to && is_proxy(to)) {
        snprintf(req, sizeof(req), "migrate %s %s", args[1], to);
        return ask_all(dir, req);
    }
    fprintf(stderr, "vocl-ctl: %s (see --help)\n",
            nargs == 0 ? "no command given" : "a command with the wrong arguments");
    return 2;
}
