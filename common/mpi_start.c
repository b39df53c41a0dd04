/* mpi_start.c: see mpi_start.h. */
#include "mpi_start.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#ifdef MPICH_VERSION
#define FOR_MPI_INIT "-opencl,-pci,-linuxio"
#else
#define FOR_MPI_INIT "-opencl"
#endif

int vocl_mpi_start(int *argc, char ***argv, int required, int *provided)
{
    const char *now = getenv("HWLOC_COMPONENTS");
    char *was = NULL;
    bool ours = !now || (strcmp(now, "-opencl") == 0 && (was = strdup(now)));
    if (ours)
        setenv("HWLOC_COMPONENTS", FOR_MPI_INIT, 1);
    int rc = MPI_Init_thread(argc, argv, required, provided);
    if (ours && was)
        setenv("HWLOC_COMPONENTS", was, 1);
    else if (ours)
        unsetenv("HWLOC_COMPONENTS");
    free(was);
    return rc;
}
