/* mpi_start.c: see mpi_start.h. */
#include "mpi_start.h"

#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#ifdef MPICH_VERSION
#define COMPONENTS "-opencl,-pci,-linuxio"
#define PLUGINS "hwloc_opencl,hwloc_pci,hwloc_gl,hwloc_xml_libxml"
#else
#define COMPONENTS "-opencl"
#define PLUGINS "hwloc_opencl"
#endif

/* Sets name to value for MPI_Init unless the user set it (vocl-run's
 * "-opencl" is ours to change): what to put back after, in *was. */
static bool for_init(const char *name, const char *value, const char *ours, char **was)
{
    const char *now = getenv(name);
    *was = NULL;
    if (now && !(ours && strcmp(now, ours) == 0))
        return false;
    if (now && !(*was = strdup(now)))
        return false;
    setenv(name, value, 1);
    return true;
}

static void after_init(const char *name, bool set, char *was)
{
    if (set && was)
        setenv(name, was, 1);
    else if (set)
        unsetenv(name);
    free(was);
}

const char *vocl_mpi_why(int rc, char buf[MPI_MAX_ERROR_STRING])
{
    int len = 0;
    buf[0] = 0;
    MPI_Error_string(rc, buf, &len);
    char *last = strrchr(buf, '\n');
    return last ? last + 1 : buf;
}

int vocl_mpi_start(int *argc, char ***argv, int required, int *provided)
{
    char *components_was, *plugins_was;
    bool components = for_init("HWLOC_COMPONENTS", COMPONENTS, "-opencl", &components_was);
    bool plugins = for_init("HWLOC_PLUGINS_BLACKLIST", PLUGINS, NULL, &plugins_was);
    int rc = MPI_Init_thread(argc, argv, required, provided);
    after_init("HWLOC_COMPONENTS", components, components_was);
    after_init("HWLOC_PLUGINS_BLACKLIST", plugins, plugins_was);
    return rc;
}

void vocl_mpi_abort(MPI_Comm comm, int code)
{
    fflush(stdout);
    fflush(stderr);
    nanosleep(&(struct timespec){0, 200 * 1000000L}, NULL);
    MPI_Abort(comm, code);
    _Exit(code); /* (MPI_Abort does not return) */
}
