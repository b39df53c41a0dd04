/*
 * shm.c - what the proxy and the client agree on for shared buffers, and
 * the node key that liveness uses too (shm.h).
 */
#include "shm.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool vocl_shm_allowed(void)
{
    const char *e = getenv("VOCL_SHM");
    return !e || strcmp(e, "0") != 0;
}

/* FNV-1a over n bytes, on from h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ ((const uint8_t *)p)[i]) * 1099511628211u;
    return h;
}

uint64_t vocl_node_key(bool hostname)
{
    char boot[64] = {0}, ns[64] = {0}, host[256] = {0};
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, boot, sizeof(boot) - 1) : -1;
    if (fd >= 0)
        close(fd);
    ssize_t m = readlink("/proc/self/ns/pid", ns, sizeof(ns) - 1);
    if (n <= 0 || m <= 0 || (hostname && gethostname(host, sizeof(host) - 1) != 0))
        return 0;
    uint64_t h = fnv(fnv(14695981039346656037u, boot, (size_t)n), ns, (size_t)m);
    if (hostname)
        h = fnv(h, host, strlen(host));
    return h ? h : 1;
}

void vocl_shm_name(char *out, size_t size, uint64_t token)
{
    snprintf(out, size, "vocl-shm-%016" PRIx64, token);
}
