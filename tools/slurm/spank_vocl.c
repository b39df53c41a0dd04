/*
 * spank_vocl.c - Slurm hands out VOCL's virtual GPUs (vocl-slurm(8)).
 *
 * slurmctld counts the pool as a licence (Licenses=vgpu:32); this plugin
 * gives users `--vocl-gpus=N` (which VOCL's cli_filter.lua turns into
 * that licence request) and gives each job concrete devices:
 *
 *   sbatch/salloc/srun (allocator, local): checks N against the pool, so
 *       that a job asking more than exists is refused at submission;
 *   the job prolog (slurmd, as root, before the job starts): picks N free
 *       devices of the pool, under a lock of the state directory, and
 *       writes them down there (job.ID);
 *   each step of the job (slurmstepd, user_init): VOCL_PROXIES names those
 *       daemons and devices (HOST:PORT@0-7, connect.c), so libvocl lists
 *       only them;
 *   the job epilog (also after scancel, a time limit or a node's reboot of
 *       the job): deletes job.ID, and the devices are free.
 *
 * plugstack.conf:  required /usr/lib/.../spank_vocl.so pool=FILE state=DIR [share=K]
 *   pool=FILE  the daemons, one "HOST[:PORT] DEVICES" a line ('#' comments)
 *   state=DIR  where assignments are kept: one directory that every node
 *              of the cluster sees (NFS, or the node's own for one node)
 *   share=K    jobs that may hold one device at once (default 1: none share);
 *              Licenses= is then K times the devices
 *
 * The prolog never fails a job: a failed prolog drains the node.  A job
 * that got no devices fails in its first step, saying why.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dirent.h>
#include <slurm/spank.h>

SPANK_PLUGIN(vocl, 1)

#define POOL_MAX 4096       /* daemons in a pool */
#define DEV_MAX 4096        /* devices of a daemon (what libvocl accepts) */
#define NAME_MAX_LEN 256

struct daemon {
    char name[NAME_MAX_LEN]; /* HOST[:PORT], as VOCL_PROXIES names it */
    int ndev;
    unsigned short *use; /* jobs holding each device */
    bool *mine;          /* given to the job being assigned (never twice) */
};

struct pool {
    struct daemon *d;
    int n;
    long total; /* devices, all daemons */
};

#define POOL_DEFAULT "/etc/vocl/pool"
#define STATE_DEFAULT "/var/lib/vocl/slurm"
static char pool_path[PATH_MAX] = POOL_DEFAULT;
static char state_dir[PATH_MAX] = STATE_DEFAULT;
static int share = 1;
static long asked; /* --vocl-gpus in sbatch/salloc/srun; 0: not given */

static int parse_count(const char *s, long *n)
{
    char *end;
    errno = 0;
    long v = s && *s ? strtol(s, &end, 10) : -1;
    if (v <= 0 || errno || *end || v > (long)POOL_MAX * DEV_MAX)
        return -1;
    *n = v;
    return 0;
}

static int opt_gpus(int val, const char *optarg, int remote)
{
    (void)val;
    if (remote)
        return 0; /* (checked where it was given) */
    if (parse_count(optarg, &asked)) {
        slurm_error("vocl: --vocl-gpus=%s: give a number of virtual GPUs, 1 or more",
                    optarg ? optarg : "");
        return -1;
    }
    return 0;
}

static struct spank_option gpus_option = {
    "vocl-gpus", "N",
    "Virtual GPUs (VOCL daemons' devices) for the job, named to it in VOCL_PROXIES",
    1, 0, opt_gpus,
};

static void pool_free(struct pool *p)
{
    for (int i = 0; i < p->n; i++) {
        free(p->d[i].use);
        free(p->d[i].mine);
    }
    free(p->d);
    p->d = NULL;
    p->n = 0;
}

/* The pool file into *p: 0, or -1 with *why said. */
static int pool_read(struct pool *p, char *why, size_t wn)
{
    memset(p, 0, sizeof(*p));
    FILE *f = fopen(pool_path, "r");
    if (!f) {
        snprintf(why, wn, "pool file %s: %s", pool_path, strerror(errno));
        return -1;
    }
    p->d = calloc(POOL_MAX, sizeof(*p->d));
    if (!p->d) {
        fclose(f);
        snprintf(why, wn, "out of memory");
        return -1;
    }
    char line[1024];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof(line), f)) {
        lineno++;
        line[strcspn(line, "#\n")] = 0;
        char name[NAME_MAX_LEN], count[32], extra[2];
        int got = sscanf(line, "%255s %31s %1s", name, count, extra);
        if (got <= 0)
            continue;
        long ndev;
        if (got != 2 || parse_count(count, &ndev) || ndev > DEV_MAX || strchr(name, '@') ||
            strchr(name, ',')) {
            snprintf(why, wn, "pool file %s, line %d: not \"HOST[:PORT] DEVICES\" (1-%d devices)",
                     pool_path, lineno, DEV_MAX);
            rc = -1;
        } else if (p->n == POOL_MAX) {
            snprintf(why, wn, "pool file %s: more than %d daemons", pool_path, POOL_MAX);
            rc = -1;
        } else {
            struct daemon *d = &p->d[p->n++];
            snprintf(d->name, sizeof(d->name), "%s", name);
            d->ndev = (int)ndev;
            d->use = calloc((size_t)ndev, sizeof(*d->use));
            d->mine = calloc((size_t)ndev, sizeof(*d->mine));
            p->total += ndev;
            if (!d->use || !d->mine) {
                snprintf(why, wn, "out of memory");
                rc = -1;
            }
        }
    }
    fclose(f);
    if (rc == 0 && p->n == 0) {
        snprintf(why, wn, "pool file %s names no daemon", pool_path);
        rc = -1;
    }
    if (rc)
        pool_free(p);
    return rc;
}

static struct daemon *pool_find(struct pool *p, const char *name)
{
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->d[i].name, name))
            return &p->d[i];
    return NULL;
}

/* Counts in p what job file PATH holds: its lines after the first are
 * "HOST[:PORT] DEVICE".  (Devices of daemons no longer in the pool are
 * no one's concern.) */
static void pool_count(struct pool *p, const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[1024];
    if (fgets(line, sizeof(line), f)) /* (VOCL_PROXIES) */
        while (fgets(line, sizeof(line), f)) {
            char name[NAME_MAX_LEN];
            int dev;
            struct daemon *d;
            if (sscanf(line, "%255s %d", name, &dev) == 2 && (d = pool_find(p, name)) &&
                dev >= 0 && dev < d->ndev)
                d->use[dev]++;
        }
    fclose(f);
}

static void job_path(char *out, size_t n, uint32_t job)
{
    snprintf(out, n, "%s/job.%u", state_dir, job);
}

/* The state directory's lock (fcntl: NFS has it): its fd, or -1. */
static int state_lock(void)
{
    char path[PATH_MAX + 8];
    snprintf(path, sizeof(path), "%s/lock", state_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        slurm_error("vocl: %s: %s", path, strerror(errno));
        return -1;
    }
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
    while (fcntl(fd, F_SETLKW, &fl) < 0) {
        if (errno != EINTR) {
            slurm_error("vocl: cannot lock %s: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
    }
    return fd;
}

static void state_unlock(int fd)
{
    close(fd); /* (drops the lock) */
}

/* Appends device dev of d to the VOCL_PROXIES value being built: a range
 * is extended where it goes on ("vc1:7010@0-7,vc2@3"). */
static void proxies_add(char *out, size_t n, const struct daemon *d, int dev, const struct daemon **last,
                        int *first, int *prev)
{
    size_t len = strlen(out);
    if (*last == d && dev == *prev + 1) {
        /* Rewrite the range's end. */
        char *tail = strrchr(out, '+');
        char *at = strrchr(out, '@');
        char *start = tail && tail > at ? tail + 1 : at + 1;
        snprintf(start, n - (size_t)(start - out), "%d-%d", *first, dev);
    } else if (*last == d) {
        snprintf(out + len, n - len, "+%d", dev);
        *first = dev;
    } else {
        snprintf(out + len, n - len, "%s%s@%d", len ? "," : "", d->name, dev);
        *first = dev;
    }
    *last = d;
    *prev = dev;
}

/* The prolog's work: N devices of the pool for job, written down.  0, or
 * -1 with a message. */
static int assign(uint32_t job, long n)
{
    char why[PATH_MAX + 128], path[PATH_MAX + 32];
    struct pool p;
    if (pool_read(&p, why, sizeof(why))) {
        slurm_error("vocl: job %u: %s", job, why);
        return -1;
    }
    if (n > p.total * share) { /* (slurmctld's licence count should have refused it) */
        slurm_error("vocl: job %u: %ld virtual GPUs asked, the pool has %ld (%s)", job, n,
                    p.total * share, pool_path);
        pool_free(&p);
        return -1;
    }
    int rc = -1, lock = state_lock();
    if (lock < 0)
        goto out_pool;
    job_path(path, sizeof(path), job);
    if (access(path, F_OK) == 0) { /* another node of the job was first */
        rc = 0;
        goto out_unlock;
    }
    DIR *dir = opendir(state_dir);
    if (!dir) {
        slurm_error("vocl: job %u: state directory %s: %s", job, state_dir, strerror(errno));
        goto out_unlock;
    }
    struct dirent *e;
    while ((e = readdir(dir)))
        if (!strncmp(e->d_name, "job.", 4)) {
            char other[PATH_MAX + 300];
            snprintf(other, sizeof(other), "%s/%s", state_dir, e->d_name);
            pool_count(&p, other);
        }
    closedir(dir);
    /* The least shared devices first, in the pool's order (a job's devices
     * on as few daemons as can be). */
    size_t cap = (size_t)n * (NAME_MAX_LEN + 16) + 64;
    char *proxies = calloc(1, cap), *lines = calloc(1, cap);
    if (!proxies || !lines) {
        slurm_error("vocl: job %u: out of memory", job);
        goto out_free;
    }
    const struct daemon *last = NULL;
    int first = 0, prev = 0;
    long got = 0;
    size_t llen = 0;
    for (int level = 0; level < share && got < n; level++)
        for (int i = 0; i < p.n && got < n; i++)
            for (int k = 0; k < p.d[i].ndev && got < n; k++)
                if (p.d[i].use[k] == level && !p.d[i].mine[k]) {
                    p.d[i].use[k]++;
                    p.d[i].mine[k] = true;
                    proxies_add(proxies, cap, &p.d[i], k, &last, &first, &prev);
                    llen += (size_t)snprintf(lines + llen, cap - llen, "%s %d\n", p.d[i].name, k);
                    got++;
                }
    if (got < n) {
        slurm_error("vocl: job %u: %ld virtual GPUs asked, %ld free in the pool (%s, %ld devices"
                    "%s): does Licenses= in slurm.conf count the pool?", job, n, got, pool_path,
                    p.total, share > 1 ? ", shared" : "");
        goto out_free;
    }
    /* Whole, or not at all: a step must never read half a file. */
    char tmp[PATH_MAX + 48];
    snprintf(tmp, sizeof(tmp), "%s/.job.%u.new", state_dir, job);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%s\n%s", proxies, lines) < 0 || fchmod(fileno(f), 0644) ||
        fclose(f) || rename(tmp, path)) {
        slurm_error("vocl: job %u: cannot write %s: %s", job, tmp, strerror(errno));
        unlink(tmp);
        goto out_free;
    }
    slurm_info("vocl: job %u: %ld virtual GPUs: %s", job, n, proxies);
    rc = 0;
out_free:
    free(proxies);
    free(lines);
out_unlock:
    state_unlock(lock);
out_pool:
    pool_free(&p);
    return rc;
}

/* The job's id, in a job script (prolog, epilog) or a step. */
static int job_id(spank_t sp, uint32_t *job)
{
    if (spank_get_item(sp, S_JOB_ID, job) == ESPANK_SUCCESS)
        return 0;
    const char *v = getenv("SLURM_JOB_ID");
    long id;
    if (v && parse_count(v, &id) == 0) {
        *job = (uint32_t)id;
        return 0;
    }
    slurm_error("vocl: no job id");
    return -1;
}

/* --vocl-gpus of the job (in prolog, epilog and steps): 0 if not given. */
static long job_gpus(spank_t sp)
{
    char *arg = NULL;
    long n = 0;
    if (spank_option_getopt(sp, &gpus_option, &arg) != ESPANK_SUCCESS)
        return 0;
    return parse_count(arg, &n) ? 0 : n;
}

static int plugin_args(int ac, char **av)
{
    snprintf(pool_path, sizeof(pool_path), "%s", POOL_DEFAULT);
    snprintf(state_dir, sizeof(state_dir), "%s", STATE_DEFAULT);
    share = 1;
    for (int i = 0; i < ac; i++) {
        const char *a = av[i];
        long k;
        if (!strncmp(a, "pool=", 5) && a[5]) {
            snprintf(pool_path, sizeof(pool_path), "%s", a + 5);
        } else if (!strncmp(a, "state=", 6) && a[6]) {
            snprintf(state_dir, sizeof(state_dir), "%s", a + 6);
        } else if (!strncmp(a, "share=", 6) && !parse_count(a + 6, &k) && k <= 65535) {
            share = (int)k;
        } else {
            slurm_error("vocl: plugstack.conf: unknown argument '%s' (pool=FILE state=DIR "
                        "share=K)", a);
            return -1;
        }
    }
    return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    if (plugin_args(ac, av))
        return -1;
    spank_context_t ctx = spank_context();
    if (ctx == S_CTX_LOCAL || ctx == S_CTX_ALLOCATOR || ctx == S_CTX_REMOTE ||
        ctx == S_CTX_JOB_SCRIPT)
        return spank_option_register(sp, &gpus_option) == ESPANK_SUCCESS ? 0 : -1;
    return 0;
}

/* At submission: more than the pool has is refused here, with the pool's
 * size (slurmctld would refuse the licence too, less clearly). */
int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
    (void)sp;
    if (plugin_args(ac, av))
        return -1;
    spank_context_t ctx = spank_context();
    if ((ctx != S_CTX_LOCAL && ctx != S_CTX_ALLOCATOR) || asked == 0)
        return 0;
    if (ctx == S_CTX_LOCAL && getenv("SLURM_JOB_ID"))
        return 0; /* srun within a job: the job's devices */
    struct pool p;
    char why[PATH_MAX + 128];
    if (pool_read(&p, why, sizeof(why))) {
        /* (A submit host that does not see the pool: slurmctld counts.) */
        slurm_debug("vocl: %s", why);
        return 0;
    }
    long total = p.total * share;
    int n = p.n;
    pool_free(&p);
    if (asked > total) {
        slurm_error("vocl: --vocl-gpus=%ld: the pool has %ld virtual GPUs (%d daemons, %s): "
                    "ask for %ld or fewer", asked, total, n, pool_path, total);
        return -1;
    }
    return 0;
}

int slurm_spank_job_prolog(spank_t sp, int ac, char **av)
{
    uint32_t job;
    if (plugin_args(ac, av)) /* (each context is a process of its own) */
        return 0;
    long n = job_gpus(sp);
    if (n > 0 && job_id(sp, &job) == 0)
        assign(job, n); /* (never fails the prolog: that would drain the node) */
    return 0;
}

/* Each step of the job: VOCL_PROXIES from the job's file. */
int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
    uint32_t job;
    if (plugin_args(ac, av))
        return -1;
    long n = job_gpus(sp);
    if (n == 0)
        return 0;
    if (job_id(sp, &job))
        return -1;
    char path[PATH_MAX + 32], line[65536];
    job_path(path, sizeof(path), job);
    FILE *f = fopen(path, "r");
    bool ok = f && fgets(line, sizeof(line), f) && strchr(line, '\n');
    if (f)
        fclose(f);
    if (!ok) {
        slurm_error("vocl: job %u asked %ld virtual GPUs but was given none (%s: %s; the "
                    "node's slurmd log says why)", job, n, path, f ? "unreadable" : strerror(errno));
        return -1;
    }
    line[strcspn(line, "\n")] = 0;
    char count[32];
    snprintf(count, sizeof(count), "%ld", n);
    if (spank_setenv(sp, "VOCL_PROXIES", line, 1) != ESPANK_SUCCESS ||
        spank_setenv(sp, "VOCL_GPUS", count, 1) != ESPANK_SUCCESS) {
        slurm_error("vocl: job %u: cannot set VOCL_PROXIES", job);
        return -1;
    }
    return 0;
}

/* The job is over (ended, cancelled, timed out): its devices are free. */
int slurm_spank_job_epilog(spank_t sp, int ac, char **av)
{
    uint32_t job;
    if (plugin_args(ac, av))
        return 0;
    if (job_gpus(sp) == 0 || job_id(sp, &job))
        return 0;
    char path[PATH_MAX + 32];
    job_path(path, sizeof(path), job);
    int lock = state_lock();
    if (unlink(path) == 0)
        slurm_info("vocl: job %u: its virtual GPUs are free", job);
    else if (errno != ENOENT)
        slurm_error("vocl: job %u: cannot delete %s: %s", job, path, strerror(errno));
    if (lock >= 0)
        state_unlock(lock);
    return 0;
}
