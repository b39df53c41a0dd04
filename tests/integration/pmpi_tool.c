/*
 * pmpi_tool.c - the smallest MPI profiling tool: its MPI_Finalize says it
 * ran, then calls PMPI_Finalize.  Preloaded before libvocl (mpi_app.sh),
 * whose own MPI_Finalize must call it rather than go around it.
 */
#include <mpi.h>
#include <stdio.h>

int MPI_Finalize(void)
{
    printf("pmpi_tool: MPI_Finalize\n");
    fflush(stdout);
    return PMPI_Finalize();
}
