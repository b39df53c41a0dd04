/*
 * vocl-guard - how vocl-run starts every rank of a VOCL job:
 *   vocl-guard COMMAND [ARGS...]
 *
 * mpiexec (MPICH's hydra) reacts badly when a rank dies by a signal: it
 * tears the whole job down, or its process manager fails on the dead rank's
 * closed PMI socket.  Either way the survivors never get to notice the death
 * and go on, which is what VOCL promises (libvocl(7), "When a peer dies").
 * So each rank runs under a guard, which holds the rank's place: when the
 * command is killed, the guard says so on stderr and waits, holding the PMI
 * socket open, until the job ends (the application exits without
 * MPI_Finalize, which ends the job, or a proxy calls MPI_Abort: libvocl(7)).
 * A command that exits is answered by
 * the guard exiting with its status (an error status still ends the job:
 * a rank that never reached MPI_Init would leave the others waiting in it).
 * The command dies with its guard.
 *
 * VOCL_GUARD_PRELOAD, if set, becomes the command's LD_PRELOAD (libvocl
 * for application ranks: the guard itself must not load it).
 * VOCL_RANK_PID is set to the command's pid, and VOCL_RANK_CLAIM to a file
 * of VOCL_GUARD_STATUS: libvocl joins the job once a rank (libvocl(7)).
 * VOCL_GUARD_STATUS, if set, is a folder where the guard writes the
 * command's exit status (128 + signal when killed) as a file named after
 * the rank, before anything else: vocl-run exits with the application's
 * status, however the job ends after it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>

static pid_t child;
static volatile sig_atomic_t told; /* the signal mpiexec sent the guard */

static void pass_on(int sig)
{
    told = sig;
    kill(child, sig);
}

/* This rank's number, as the process manager says it (MPICH's hydra,
 * Open MPI's mpirun); NULL where none does. */
static const char *job_rank(void)
{
    const char *names[] = {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"};
    for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *r = getenv(names[i]);
        if (r && *r)
            return r;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        fprintf(argc < 2 ? stderr : stdout,
                "Usage: vocl-guard COMMAND [ARGS...]\n"
                "Runs one rank of a VOCL job for vocl-run(1): holds the rank's place when\n"
                "COMMAND is killed, so that the rest of the job notices and goes on.\n");
        return argc < 2 ? 2 : 0;
    }
    pid_t parent = getpid();
    child = fork();
    if (child < 0) {
        perror("vocl-guard: fork");
        return 1;
    }
    const char *rank = job_rank();
    if (child == 0) {
        /* The guard may be killed by mpiexec at the end of the job: the
         * command must not outlive it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(1);
        /* Which process is the rank, and where the first of its processes
         * to call OpenCL claims it: libvocl joins the job once a rank. */
        char pid[24], claim[4096];
        snprintf(pid, sizeof(pid), "%ld", (long)getpid());
        setenv("VOCL_RANK_PID", pid, 1);
        const char *dir = getenv("VOCL_GUARD_STATUS");
        if (dir && *dir) {
            snprintf(claim, sizeof(claim), "%s/rank.%s.joined", dir, rank ? rank : "0");
            setenv("VOCL_RANK_CLAIM", claim, 1);
        }
        const char *pre = getenv("VOCL_GUARD_PRELOAD");
        if (pre && *pre)
            setenv("LD_PRELOAD", pre, 1);
        unsetenv("VOCL_GUARD_PRELOAD");
        unsetenv("VOCL_GUARD_STATUS");
        execvp(argv[1], argv + 1);
        fprintf(stderr, "vocl-guard: cannot run %s: %s\n", argv[1], strerror(errno));
        _exit(127);
    }
    struct sigaction sa = {.sa_handler = pass_on};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    int st;
    while (waitpid(child, &st, 0) < 0)
        if (errno != EINTR) {
            perror("vocl-guard: waitpid");
            return 1;
        }
    int status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    const char *dir = getenv("VOCL_GUARD_STATUS");
    if (dir && *dir && !told) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/rank.%s", dir, rank ? rank : "0");
        FILE *f = fopen(path, "w");
        if (!f || fprintf(f, "%d\n", status) < 0 || fclose(f))
            fprintf(stderr, "vocl-guard: cannot write %s: %s\n", path, strerror(errno));
    }
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (told) {
        /* mpiexec is ending the job: go as told. */
        signal(told, SIG_DFL);
        raise(told);
        return 128 + told;
    }
    fprintf(stderr,
            "vocl-guard: rank %s (%s) was killed by signal %d; the rest of the job goes on "
            "without it\n",
            rank ? rank : "?", argv[1], WTERMSIG(st));
    while (!told)
        pause(); /* until mpiexec (or vocl-run) ends the job */
    signal(told, SIG_DFL);
    raise(told);
    return 128 + told;
}
