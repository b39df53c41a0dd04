/*
 * workers.c - voclproxyd --listen --isolate: each client is served by a
 * process of its own, a worker, so that a tenant's kernel that crashes the
 * driver, or reads memory it was not given (on a CPU device the kernels run
 * in the serving process), reaches only its own session.
 *
 * The daemon accepts a client as before, then hands it the port of a
 * worker (vocl_live_move, in place of the link's hello): the client
 * connects there and its session is the worker's.  A worker is this same
 * program, started with the daemon's arguments and the environment it had
 * before MPI_Init, plus --worker FD: it opens a port of its own, writes it
 * to FD, serves one client and exits once that client's session is
 * released (serve.c).  One worker is kept started ahead, so that a client
 * waits for a worker's start (MPI_Init, the devices) only when several
 * come at once.  The daemon reaps its workers and says how each ended.
 *
 * vocl-smi asks a worker (it is a client too) for the node's sessions: each
 * worker writes what its session holds to a file of its own, every second,
 * in a directory the daemon made for them (VOCL_WORKERS_DIR, mode 0700),
 * and a worker asked reads its siblings' files.  With --metrics-file each
 * also writes its figures there (metrics.h), which the daemon adds to its
 * own, and folds into its totals as it reaps the worker.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "liveness.h"

#include "backoff.h"
#include "daemon.h"
#include "log.h"
#include "metrics.h"

extern char **environ;

/* How long a worker may take to give its port (MPI_Init, the devices). */
#define START_NS    (60ull * 1000000000u)
#define WORKERS_MAX 1024
#define DIR_ENV     "VOCL_WORKERS_DIR"

struct worker {
    pid_t pid;
    int fd;     /* its port comes on this pipe; -1 once read */
    int client; /* the daemon's number of the client it serves (0: the spare) */
    uint64_t key; /* what its client presents (its "PORT KEY") */
    struct proxyd_figures seen; /* its counters, as last read (metrics.h) */
};

/* How the last workers with a client ended, for a client that asks. */
#define FATES 64
struct fate {
    uint64_t key;
    char how[48];
};

static struct {
    pthread_mutex_t lock;
    char **argv, **envp; /* the daemon's, as they were before MPI_Init (and DIR_ENV) */
    char dir[PATH_MAX];  /* the workers' session files */
    struct worker w[WORKERS_MAX];
    int n;
    struct fate fates[FATES];
    unsigned nfates;
    struct proxyd_figures ended; /* the counters of the workers reaped */
} ws = {.lock = PTHREAD_MUTEX_INITIALIZER};

static char **copy_strings(char *const *v, int n, int extra)
{
    char **c = calloc((size_t)n + (size_t)extra + 1, sizeof(*c));
    for (int i = 0; c && i < n; i++)
        if (!(c[i] = strdup(v[i])))
            return NULL; /* (at start: the daemon gives up) */
    return c;
}

int proxyd_workers_init(int argc, char **argv)
{
    int nenv = 0;
    while (environ[nenv])
        nenv++;
    const char *tmp = getenv("TMPDIR");
    snprintf(ws.dir, sizeof(ws.dir), "%s/voclproxyd-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(ws.dir)) {
        vocl_error("--isolate: cannot make %s: %s", ws.dir, strerror(errno));
        return -1;
    }
    ws.argv = copy_strings(argv, argc, 2); /* (room for --worker FD) */
    ws.envp = copy_strings(environ, nenv, 1);
    if (!ws.argv || !ws.envp || asprintf(&ws.envp[nenv], DIR_ENV "=%s", ws.dir) < 0)
        return -1;
    return 0;
}

/* Starts a worker (under ws.lock); its index, or -1. */
static int start_locked(void)
{
    if (ws.n == WORKERS_MAX) {
        vocl_warn("--isolate: %d workers already: no more", WORKERS_MAX);
        return -1;
    }
    int fds[2];
    if (pipe2(fds, O_CLOEXEC)) {
        vocl_warn("--isolate: no pipe for a worker: %s", strerror(errno));
        return -1;
    }
    char fd_arg[16];
    snprintf(fd_arg, sizeof(fd_arg), "%d", fds[1]);
    int argc = 0;
    while (ws.argv[argc])
        argc++;
    ws.argv[argc] = "--worker";
    ws.argv[argc + 1] = fd_arg;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    /* The write end survives the exec (dup2 onto itself clears CLOEXEC). */
    posix_spawn_file_actions_adddup2(&fa, fds[1], fds[1]);
    pid_t pid;
    int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, ws.argv, ws.envp);
    posix_spawn_file_actions_destroy(&fa);
    ws.argv[argc] = ws.argv[argc + 1] = NULL;
    close(fds[1]);
    if (rc) {
        close(fds[0]);
        vocl_warn("--isolate: cannot start a worker: %s", strerror(rc));
        return -1;
    }
    ws.w[ws.n] = (struct worker){.pid = pid, .fd = fds[0]};
    return ws.n++;
}

/* Reads worker i's port within START_NS (no lock held: the accept thread's). */
static int read_port(struct worker *w, char *port)
{
    size_t got = 0;
    uint64_t start = vocl_now_ns();
    while (got < VOCL_LIVE_MOVED_MAX - 1) {
        struct pollfd p = {.fd = w->fd, .events = POLLIN};
        uint64_t spent = vocl_now_ns() - start;
        if (spent > START_NS)
            break;
        if (poll(&p, 1, (int)((START_NS - spent) / 1000000u) + 1) <= 0)
            continue;
        ssize_t r = read(w->fd, port + got, VOCL_LIVE_MOVED_MAX - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
        if (port[got - 1] == '\n') {
            port[got - 1] = 0;
            return 0;
        }
    }
    return -1;
}

/* A worker with no client yet (under ws.lock); its index, or -1. */
static int spare_locked(void)
{
    for (int i = 0; i < ws.n; i++)
        if (!ws.w[i].client)
            return i;
    return -1;
}

void proxyd_workers_ahead(void)
{
    pthread_mutex_lock(&ws.lock);
    if (spare_locked() < 0 && start_locked() < 0)
        vocl_warn("--isolate: no worker started ahead: the first client waits for one");
    pthread_mutex_unlock(&ws.lock);
}

pid_t proxyd_worker_take(int client, char *port)
{
    pthread_mutex_lock(&ws.lock);
    int i = spare_locked();
    if (i < 0)
        i = start_locked();
    struct worker w = i >= 0 ? ws.w[i] : (struct worker){0};
    if (i >= 0) {
        ws.w[i].client = client;
        ws.w[i].fd = -1;
    }
    if (start_locked() < 0) /* the next one, started ahead */
        vocl_warn("--isolate: no worker started ahead: the next client waits for one");
    pthread_mutex_unlock(&ws.lock);
    if (i < 0)
        return -1;
    int rc = read_port(&w, port);
    close(w.fd);
    unsigned long long key = 0;
    if (!rc && sscanf(port, "%*d %llu", &key) == 1) {
        pthread_mutex_lock(&ws.lock);
        for (int k = 0; k < ws.n; k++)
            if (ws.w[k].pid == w.pid)
                ws.w[k].key = key;
        pthread_mutex_unlock(&ws.lock);
    }
    if (rc) {
        vocl_warn("client %d: its worker (process %d) gave no port: killed", client, (int)w.pid);
        kill(w.pid, SIGKILL);
        return -1;
    }
    return w.pid;
}

/* A worker's figures file (metrics.h), beside its session file. */
static int figures_path(char *path, size_t n, pid_t pid)
{
    return snprintf(path, n, "%s/%d.figures", ws.dir, (int)pid) < (int)n ? 0 : -1;
}

/* A reaped worker's last counters go to the totals (under ws.lock): they
 * are its file's as it ended, or as it last wrote it, or at least those
 * read before. */
static void fold_locked(struct worker *w)
{
    char path[PATH_MAX];
    struct proxyd_figures last;
    if (figures_path(path, sizeof(path), w->pid))
        return;
    if (proxyd_figures_read(AT_FDCWD, path, &last) == 0)
        proxyd_figures_max(&w->seen, &last);
    unlink(path);
    proxyd_figures_add(&ws.ended, &w->seen, false);
}

void proxyd_workers_figures(struct proxyd_figures *sum)
{
    /* The files are read with no lock held: a worker reaped meanwhile
     * was folded with its last file, and what was read of it is dropped;
     * counters of those still there only grow (proxyd_figures_max). */
    struct {
        pid_t pid;
        struct proxyd_figures f;
        bool ok;
    } *got = NULL;
    pthread_mutex_lock(&ws.lock);
    int n = ws.n;
    if (n)
        got = calloc((size_t)n, sizeof(*got));
    for (int i = 0; got && i < n; i++)
        got[i].pid = ws.w[i].pid;
    pthread_mutex_unlock(&ws.lock);
    for (int i = 0; got && i < n; i++) {
        char path[PATH_MAX];
        got[i].ok = !figures_path(path, sizeof(path), got[i].pid) &&
                    proxyd_figures_read(AT_FDCWD, path, &got[i].f) == 0;
    }
    pthread_mutex_lock(&ws.lock);
    proxyd_figures_add(sum, &ws.ended, false);
    for (int i = 0; i < ws.n; i++) {
        struct worker *w = &ws.w[i];
        for (int k = 0; got && k < n; k++)
            if (got[k].pid == w->pid && got[k].ok) {
                proxyd_figures_max(&w->seen, &got[k].f);
                /* (Its gauges only: its counters are w->seen's.) */
                memset(got[k].f.count, 0, sizeof(got[k].f.count));
                proxyd_figures_add(sum, &got[k].f, true);
            }
        proxyd_figures_add(sum, &w->seen, false);
    }
    pthread_mutex_unlock(&ws.lock);
    free(got);
}

void proxyd_workers_reap(void)
{
    /* By pid: MPI may have children of its own (Open MPI's orted). */
    pthread_mutex_lock(&ws.lock);
    for (int i = 0; i < ws.n;) {
        struct worker w = ws.w[i];
        int status;
        if (waitpid(w.pid, &status, WNOHANG) != w.pid) {
            i++;
            continue;
        }
        if (w.fd >= 0)
            close(w.fd);
        fold_locked(&w);
        ws.w[i] = ws.w[--ws.n];
        char who[48] = "no client yet";
        if (w.client)
            snprintf(who, sizeof(who), "client %d", w.client);
        if (w.key) {
            struct fate *f = &ws.fates[ws.nfates++ % FATES];
            f->key = w.key;
            if (WIFSIGNALED(status))
                snprintf(f->how, sizeof(f->how), "signal %d (%s)", WTERMSIG(status),
                         strsignal(WTERMSIG(status)));
            else if (WEXITSTATUS(status))
                snprintf(f->how, sizeof(f->how), "status %d", WEXITSTATUS(status));
            else
                snprintf(f->how, sizeof(f->how), "ended");
        }
        if (WIFSIGNALED(status))
            vocl_warn("worker process %d (%s) was killed by signal %d (%s): only its session "
                      "ended",
                      (int)w.pid, who, WTERMSIG(status), strsignal(WTERMSIG(status)));
        else if (WEXITSTATUS(status))
            vocl_warn("worker process %d (%s) exited with status %d: only its session ended",
                      (int)w.pid, who, WEXITSTATUS(status));
        else
            vocl_info("worker process %d (%s) ended", (int)w.pid, who);
    }
    pthread_mutex_unlock(&ws.lock);
}

/* How long stopped workers have to end their sessions, before SIGKILL. */
#define STOP_NS (3ull * 1000000000u)

void proxyd_worker_fate(uint64_t key, char *out, size_t n)
{
    uint64_t start = vocl_now_ns();
    for (;;) {
        proxyd_workers_reap();
        pthread_mutex_lock(&ws.lock);
        bool found = false, alive = false;
        for (unsigned i = 0; key && i < FATES && !found; i++)
            if (ws.fates[i].key == key) {
                snprintf(out, n, "%s", ws.fates[i].how);
                found = true;
            }
        for (int i = 0; key && i < ws.n && !found; i++)
            alive |= ws.w[i].key == key;
        pthread_mutex_unlock(&ws.lock);
        if (found)
            return;
        if (!alive || vocl_now_ns() - start > 1000000000u) {
            snprintf(out, n, "unknown");
            return;
        }
        nanosleep(&(struct timespec){0, 20000000}, NULL);
    }
}

void proxyd_workers_stop(void)
{
    pthread_mutex_lock(&ws.lock);
    for (int i = 0; i < ws.n; i++)
        kill(ws.w[i].pid, SIGTERM); /* (each ends its session as the daemon would) */
    pthread_mutex_unlock(&ws.lock);
    /* The daemon ends with its workers, not before them. */
    uint64_t start = vocl_now_ns();
    for (bool left = true; left;) {
        proxyd_workers_reap();
        pthread_mutex_lock(&ws.lock);
        left = ws.n > 0;
        bool late = left && vocl_now_ns() - start > STOP_NS;
        for (int i = 0; late && i < ws.n; i++)
            kill(ws.w[i].pid, SIGKILL);
        pthread_mutex_unlock(&ws.lock);
        if (left)
            nanosleep(&(struct timespec){0, 10000000}, NULL);
    }
    DIR *d = opendir(ws.dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlinkat(dirfd(d), e->d_name, 0);
    if (d)
        closedir(d);
    rmdir(ws.dir);
}

/* --- a worker's side ------------------------------------------------------------------------- */

int proxyd_worker_report(int fd, const char *port)
{
    return dprintf(fd, "%s\n", port) > 0 ? 0 : -1;
}

bool proxyd_worker_handed(int fd)
{
    /* (The daemon closes its end once it read the port, as it hands the
     * worker out; or it died.) */
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

/* s as one word of out (65 bytes): "-" when empty, '?' for white space
 * (the client named them). */
static const char *word(char *out, const char *s)
{
    size_t n = 0;
    for (; s[n] && n < 64; n++)
        out[n] = s[n] <= ' ' || s[n] == 0x7f ? '?' : s[n];
    out[n] = 0;
    return n ? out : "-";
}

void proxyd_worker_figures(const struct proxyd_figures *f)
{
    const char *dir = getenv(DIR_ENV);
    char path[PATH_MAX];
    if (dir &&
        snprintf(path, sizeof(path), "%s/%d.figures", dir, (int)getpid()) < (int)sizeof(path))
        proxyd_figures_write(path, f); /* (not written: the daemon has the last one) */
}

void proxyd_worker_publish(const struct exec_session_state *st, cl_uint ndev)
{
    const char *dir = getenv(DIR_ENV);
    char path[PATH_MAX], tmp[PATH_MAX];
    if (!dir || snprintf(path, sizeof(path), "%s/%d", dir, (int)getpid()) >= (int)sizeof(path) ||
        snprintf(tmp, sizeof(tmp), "%s/.%d", dir, (int)getpid()) >= (int)sizeof(tmp))
        return;
    if (!st) {
        unlink(path);
        return;
    }
    FILE *f = fopen(tmp, "w");
    if (!f)
        return;
    char user[65], host[65];
    fprintf(f, "%lld %llu %llu %llu %llu %s %s\n", (long long)st->pid,
            (unsigned long long)st->since_ns, (unsigned long long)st->s->nobjs,
            (unsigned long long)st->s->bytes, (unsigned long long)exec_host_held(st->s),
            word(user, st->user), word(host, st->s->host));
    for (cl_uint d = 0; d < ndev && d < EXEC_BUSY_DEVS; d++) /* (thousandths) */
        fprintf(f, "%s%u", d ? " " : "busy ", (unsigned)st->busy[d]);
    fprintf(f, "\n");
    if (fclose(f) == 0)
        rename(tmp, path); /* (whole: a reader never sees half of it) */
}

size_t proxyd_worker_siblings(struct exec_session_state *out, size_t max)
{
    /* (The serving thread's: the strings stay until its next call.) */
    static char names[256][2][65];
    const char *dir = getenv(DIR_ENV);
    DIR *d = dir ? opendir(dir) : NULL;
    size_t n = 0;
    for (struct dirent *e; d && n < max && n < 256 && (e = readdir(d));) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0 || pid == getpid() || kill((pid_t)pid, 0))
            continue; /* (not a worker's, this one's, or one gone) */
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC);
        FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
        long long cpid;
        unsigned long long since, objects, bytes, host_mem;
        if (f && fscanf(f, "%lld %llu %llu %llu %llu %64s %64s", &cpid, &since, &objects, &bytes,
                        &host_mem, names[n][0], names[n][1]) == 7) {
            for (int k = 0; k < 2; k++)
                if (!strcmp(names[n][k], "-"))
                    names[n][k][0] = 0;
            out[n] = (struct exec_session_state){.id = (int)pid,
                                                 .user = names[n][0],
                                                 .pid = cpid,
                                                 .since_ns = since,
                                                 .host = names[n][1],
                                                 .objects = objects,
                                                 .bytes = bytes,
                                                 .host_mem = host_mem};
            unsigned v;
            int at = 0;
            if (fscanf(f, " busy%n", &at) != EOF && at) /* (each device's share) */
                for (int k = 0; k < EXEC_BUSY_DEVS && fscanf(f, "%u", &v) == 1; k++)
                    out[n].busy[k] = (uint16_t)(v > 1000 ? 1000 : v);
            n++;
        }
        if (f)
            fclose(f);
        else if (fd >= 0)
            close(fd);
    }
    if (d)
        closedir(d);
    return n;
}
