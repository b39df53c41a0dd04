/*
 * mpi_app.c - an MPI program that uses OpenCL, as users write them: it
 * calls plain MPI_Init, then works on one device while it also makes MPI
 * calls of its own.  Under libvocl, whose own threads call MPI too, that
 * takes MPI_THREAD_MULTIPLE; vocl-run asks MPICH for it (mpi_app.sh).
 *
 *   mpi_app [ROUNDS]   prints the thread level it got, then "verified"
 */
#include <CL/cl.h>
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>

#include "cl_check.h"

#define N 1024

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 200, provided = 0, rank = 0;
    MPI_Init(&argc, &argv);
    MPI_Query_thread(&provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    printf("rank %d: MPI thread level %s\n", rank,
           provided == MPI_THREAD_MULTIPLE ? "multiple" : "below multiple");

    struct inc t;
    inc_open(&t, N);
    static int in[N], out[N];
    for (int r = 0; r < rounds; r++) {
        if (inc_round(&t, in, out, r, "mpi_app"))
            return 1;
        /* The application's own MPI, between its OpenCL calls. */
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
    }
    inc_close(&t);
    printf("rank %d: %d rounds verified\n", rank, rounds);
    MPI_Finalize();
    return 0;
}
