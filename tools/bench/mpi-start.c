/*
 * mpi-start.c - an MPI program that does nothing: MPI_Init_thread as
 * libvocl and voclproxyd call it (vocl_mpi_start: the same hwloc
 * settings, MPI_THREAD_MULTIPLE), then MPI_Finalize.  The wall time of
 * `mpiexec -n N mpi-start` is the least any job of N ranks costs to start
 * and end on this node, VOCL or not: the floor under each process that
 * `vocl-run -n N-1` starts (docs/report/cts, "what a sub-test's start
 * costs").
 */
#include <stdio.h>

#include "mpi_start.h"

int main(int argc, char **argv)
{
    int provided;
    int rc = vocl_mpi_start(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    if (rc != MPI_SUCCESS) {
        char why[MPI_MAX_ERROR_STRING];
        fprintf(stderr, "mpi-start: MPI_Init_thread: %s\n", vocl_mpi_why(rc, why));
        return 1;
    }
    MPI_Finalize();
    return 0;
}
