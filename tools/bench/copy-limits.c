/*
 * copy-limits - what one cross-process copy costs on this node, next to a
 * plain memcpy: the ceiling of any forwarding layer's bandwidth.
 *
 * A remote write moves the application's bytes into another process's
 * memory; natively the driver does one memcpy.  The cheapest cross-process
 * move (one copy, as MPICH/UCX's CMA path and voclproxyd's direct path do)
 * is process_vm_readv(2), which must also pin every page it touches.  This
 * prints both, per size, best of 10.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void)
{
    static const size_t sizes[] = {512u << 10, 4u << 20, 16u << 20, 64u << 20};
    printf("%10s %14s %22s %7s\n", "bytes", "memcpy GB/s", "process_vm_readv GB/s", "ratio");
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k];
        char *src = malloc(n), *dst = malloc(n);
        int go[2];
        if (!src || !dst || pipe(go))
            return 1;
        memset(src, 3, n);
        memset(dst, 0, n);
        pid_t child = fork(); /* its copy of src is the remote memory */
        if (child == 0) {
            char c;
            _exit(read(go[0], &c, 1) == 1 ? 0 : 1);
        }
        double best_mc = 1e9, best_pv = 1e9;
        for (int i = 0; i < 10; i++) {
            double t = now();
            memcpy(dst, src, n);
            t = now() - t;
            best_mc = t < best_mc ? t : best_mc;
            struct iovec local = {dst, n}, remote = {src, n};
            t = now();
            if (process_vm_readv(child, &local, 1, &remote, 1, 0) != (ssize_t)n) {
                perror("process_vm_readv");
                return 1;
            }
            t = now() - t;
            best_pv = t < best_pv ? t : best_pv;
        }
        if (write(go[1], "x", 1) != 1)
            return 1;
        waitpid(child, NULL, 0);
        printf("%10zu %14.2f %22.2f %7.2f\n", n, n / best_mc * 1e-9, n / best_pv * 1e-9,
               best_mc / best_pv);
        free(src);
        free(dst);
        close(go[0]);
        close(go[1]);
    }
    return 0;
}
