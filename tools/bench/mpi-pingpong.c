/*
 * mpi-pingpong.c - raw MPI between ranks 0 and 1, the yardstick that
 * `vocl-bench --cluster` puts beside VOCL: the median round trip of a
 * 4-byte message, and the bandwidth of SIZE-byte messages sent one way
 * (rank 0 to 1: "write", 1 to 0: "read"), each a window of WINDOW
 * non-blocking sends ended by a 4-byte acknowledgement.  Ranks past 1 only
 * take part in MPI_Init and MPI_Finalize.  Prints the same CSV lines as
 * vocl-bench-worker (section,name,param,value,unit).
 *
 * With --accept or --connect there is no mpiexec: two processes, each MPI
 * alone (Open MPI singletons), meet through the MPI's name service
 * (ompi-server), as VOCL's daemon mode does.  The one with --accept NAME
 * publishes its port as NAME, says "listening on NAME" on stderr and
 * becomes rank 1; the one with --connect NAME looks it up, connects and
 * becomes rank 0.
 *
 *   mpi-pingpong [--sizes 512K,16M,64M] [--window N] [--reps N] [--rtt N]
 *                [--accept NAME | --connect NAME]
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pingpong.h"

/* One-way bandwidth from `from` to the other of ranks 0 and 1, in B/s:
 * the median of reps windows after a warm-up (as vocl-bench-worker). */
static double bandwidth(MPI_Comm comm, int rank, int from, char *buf, long size, int window,
                        int reps)
{
    int peer = 1 - rank, ack = 0;
    MPI_Request *req = malloc(sizeof(*req) * (size_t)window);
    /* (not MPI_STATUSES_IGNORE: GCC 12 takes it for a too-small array) */
    MPI_Status *st = malloc(sizeof(*st) * (size_t)window);
    double *t = malloc(sizeof(*t) * (size_t)reps);
    if (!req || !st || !t)
        MPI_Abort(comm, 1);
    for (int r = 0; r <= reps; r++) { /* r == 0: the warm-up */
        MPI_Barrier(comm);
        double t0 = MPI_Wtime();
        for (int w = 0; w < window; w++) {
            if (rank == from)
                MPI_Isend(buf, (int)size, MPI_BYTE, peer, 1, comm, &req[w]);
            else
                MPI_Irecv(buf, (int)size, MPI_BYTE, peer, 1, comm, &req[w]);
        }
        MPI_Waitall(window, req, st);
        if (rank == from)
            MPI_Recv(&ack, 1, MPI_INT, peer, 2, comm, MPI_STATUS_IGNORE);
        else
            MPI_Send(&ack, 1, MPI_INT, peer, 2, comm);
        if (r > 0)
            t[r - 1] = MPI_Wtime() - t0;
    }
    qsort(t, (size_t)reps, sizeof(*t), pingpong_cmp_double);
    double bw = (double)size * window / t[reps / 2];
    free(req);
    free(st);
    free(t);
    return bw;
}

/* --accept or --connect: the two processes joined in one communicator,
 * the acceptor rank 1.  Any error ends the process (MPI's default).  The
 * communicators are freed, not disconnected: with Open MPI 4.1.4 the
 * processes hung in MPI_Comm_disconnect (libvocl frees them too). */
static MPI_Comm join(const char *accept, const char *connect)
{
    char port[MPI_MAX_PORT_NAME];
    MPI_Comm inter, comm;
    if (accept) {
        MPI_Open_port(MPI_INFO_NULL, port);
        MPI_Publish_name(accept, MPI_INFO_NULL, port);
        fprintf(stderr, "mpi-pingpong: listening on %s\n", accept);
        MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter);
        MPI_Unpublish_name(accept, MPI_INFO_NULL, port);
        MPI_Close_port(port);
    } else {
        MPI_Lookup_name(connect, MPI_INFO_NULL, port);
        MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter);
    }
    MPI_Intercomm_merge(inter, accept != NULL, &comm);
    MPI_Comm_free(&inter);
    return comm;
}

int main(int argc, char **argv)
{
    const char *accept = NULL, *connect = NULL;
    const char *sizes = "512K,1M,2M,4M,8M,16M,32M,64M";
    int window = 8, reps = 5, rtt_n = 1000, rank, nranks;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--sizes"))
            sizes = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--window"))
            window = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--reps"))
            reps = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--rtt"))
            rtt_n = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--accept"))
            accept = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--connect"))
            connect = argv[++i];
        else {
            fprintf(stderr, "usage: mpi-pingpong [--sizes LIST] [--window N] [--reps N] [--rtt N]\n"
                            "                    [--accept NAME | --connect NAME]\n");
            return 2;
        }
    }
    if (window < 1 || reps < 1 || rtt_n < 1) {
        fprintf(stderr, "mpi-pingpong: --window, --reps and --rtt must be at least 1\n");
        return 2;
    }
    if (accept && connect) {
        fprintf(stderr, "mpi-pingpong: --accept or --connect, not both\n");
        return 2;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm comm = accept || connect ? join(accept, connect) : MPI_COMM_WORLD;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &nranks);
    if (nranks < 2) {
        fprintf(stderr, "mpi-pingpong: needs at least 2 ranks\n");
        MPI_Abort(comm, 2);
    }
    if (rank == 0) {
        char host[MPI_MAX_PROCESSOR_NAME];
        int len;
        MPI_Get_processor_name(host, &len);
        printf("info,host0,,%s,\n", host);
    }
    if (rank == 1) {
        char host[MPI_MAX_PROCESSOR_NAME];
        int len;
        MPI_Get_processor_name(host, &len);
        printf("info,host1,,%s,\n", host);
        fflush(stdout);
    }
    MPI_Barrier(comm);
    if (rank <= 1) {
        /* Round trip of 4 bytes: the median of rtt_n after rtt_n / 10 warm-ups. */
        int peer = 1 - rank, word = 0, warm = rtt_n / 10;
        double *t = malloc(sizeof(*t) * (size_t)rtt_n);
        if (!t)
            MPI_Abort(comm, 1);
        for (int i = -warm; i < rtt_n; i++) {
            double t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(&word, 1, MPI_INT, peer, 0, comm);
                MPI_Recv(&word, 1, MPI_INT, peer, 0, comm, MPI_STATUS_IGNORE);
            } else {
                MPI_Recv(&word, 1, MPI_INT, peer, 0, comm, MPI_STATUS_IGNORE);
                MPI_Send(&word, 1, MPI_INT, peer, 0, comm);
            }
            if (i >= 0)
                t[i] = MPI_Wtime() - t0;
        }
        qsort(t, (size_t)rtt_n, sizeof(*t), pingpong_cmp_double);
        if (rank == 0)
            printf("lat,rtt4,4,%.9g,s\n", t[rtt_n / 2]);
        free(t);
        for (const char *s = sizes; s && *s; s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL) {
            long size = pingpong_size(s);
            if (size < 0 || size > (1L << 30)) {
                if (rank == 0)
                    fprintf(stderr, "mpi-pingpong: bad size in '%s'\n", sizes);
                MPI_Abort(comm, 2);
            }
            char *buf = malloc((size_t)size);
            if (!buf)
                MPI_Abort(comm, 1);
            memset(buf, 1, (size_t)size);
            double w = bandwidth(comm, rank, 0, buf, size, window, reps);
            double r = bandwidth(comm, rank, 1, buf, size, window, reps);
            if (rank == 0) {
                printf("bw,write,%ld,%.6g,B/s\n", size, w);
                printf("bw,read,%ld,%.6g,B/s\n", size, r);
                fflush(stdout);
            }
            free(buf);
        }
    } else {
        /* The other ranks match the barriers of ranks 0 and 1. */
        int nsizes = 1;
        for (const char *c = sizes; *c; c++)
            nsizes += *c == ',';
        for (int i = 0; i < nsizes * 2 * (reps + 1); i++)
            MPI_Barrier(comm);
    }
    if (rank == 0)
        printf("end,ok,,,\n");
    if (comm != MPI_COMM_WORLD)
        MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
