/*
 * sched_batch: finds every device (so that the proxies have opened theirs),
 * says so on stdout, then stays for the seconds given, or until the file
 * STOP exists, for sched_batch.sh to look at the proxies' threads
 * meanwhile.
 *   sched_batch SECONDS [STOP]
 */
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int seconds = argc > 1 ? atoi(argv[1]) : 0;
    cl_platform_id platform;
    cl_uint n = 0;
    if (clGetPlatformIDs(1, &platform, NULL) != CL_SUCCESS ||
        clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, NULL, &n) != CL_SUCCESS || n == 0) {
        fprintf(stderr, "sched_batch: no device\n");
        return 1;
    }
    printf("devices %u\n", n);
    fflush(stdout);
    const char *stop = argc > 2 ? argv[2] : NULL;
    for (int i = 0; i < seconds * 10 && !(stop && access(stop, F_OK) == 0); i++)
        usleep(100000);
    return 0;
}
