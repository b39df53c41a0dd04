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

    cl_device_id dev;
    cl_int rc;
    first_devices(&dev, 1);
    cl_context ctx = context_on(dev);
    cl_command_queue q = clCreateCommandQueue(ctx, dev, 0, &rc);
    CHECK(rc);
    cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, N * sizeof(int), NULL, &rc);
    CHECK(rc);
    cl_kernel k = build_kernel(ctx, dev, INC_SRC, "inc");
    CHECK(clSetKernelArg(k, 0, sizeof(cl_mem), &buf));
    static int in[N], out[N];
    for (int r = 0; r < rounds; r++) {
        if (inc_round(q, k, buf, in, out, N, r, "mpi_app"))
            return 1;
        /* The application's own MPI, between its OpenCL calls. */
        int flag = 0;
        MPI_Iprobe(MPI_ANY_SOURCE, 99, MPI_COMM_SELF, &flag, MPI_STATUS_IGNORE);
    }
    CHECK(clReleaseKernel(k));
    CHECK(clReleaseMemObject(buf));
    CHECK(clReleaseCommandQueue(q));
    CHECK(clReleaseContext(ctx));
    printf("rank %d: %d rounds verified\n", rank, rounds);
    MPI_Finalize();
    return 0;
}
