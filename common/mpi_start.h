/*
 * mpi_start.h - MPI_Init_thread for libvocl and voclproxyd, with hwloc kept
 * from what they do not need.
 *
 * MPI_Init loads hwloc.  Its OpenCL plugin would call clGetPlatformIDs from
 * inside MPI_Init (under LD_PRELOAD, libvocl itself, half set up).  Under
 * MPICH its I/O discovery is left out too (components pci and linuxio,
 * which read the sysfs files and configuration space of every PCI device):
 * in an MPI job of two ranks on this 2-core machine, idle, MPI_Init took a
 * median 29 ms with it and 19 ms without (6 runs each), and a job's
 * MPI_Init waits for its slowest rank; libvocl's start under vocl-run (the
 * first OpenCL call of a PyOpenCL script) went from 43 to 37 ms (8 runs
 * each).  MPICH's UCX network module picks its devices without
 * hwloc; Open MPI places traffic by hwloc's PCI distances, so there only
 * the OpenCL plugin is left out.  The plugins left out are not even loaded
 * (HWLOC_PLUGINS_BLACKLIST): the GL plugin would try ten X displays, over
 * sockets, and the XML one loads libxml2 and ICU, 2-4 ms of MPI_Init.  A
 * HWLOC_COMPONENTS (anything but "-opencl", which vocl-run sets) or
 * HWLOC_PLUGINS_BLACKLIST of the user's own is kept as it is, and the
 * values before are put back after MPI_Init, for the process's own hwloc.
 */
#ifndef VOCL_MPI_START_H
#define VOCL_MPI_START_H

#include <mpi.h>

/* As MPI_Init_thread (argc and argv may be NULL). */
int vocl_mpi_start(int *argc, char ***argv, int required, int *provided);

/* The last line of MPI's message for the error code rc (MPICH's are
 * stacks of lines), written into buf: for a message of one line. */
const char *vocl_mpi_why(int rc, char buf[MPI_MAX_ERROR_STRING]);

/* As MPI_Abort, after a message that must reach the user: MPICH's process
 * manager tears the job down at once, and may drop what the process wrote
 * last to stderr on its way (an error line got lost in 3 of 15 runs of
 * mpi_app.sh, none in 20 with this).  So the process first flushes its
 * output and gives the forwarding 200 ms. */
_Noreturn void vocl_mpi_abort(MPI_Comm comm, int code);

#endif
