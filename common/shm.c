/*
 * shm.c - what the proxy and the client agree on for shared buffers, and
 * the node key that liveness uses too (shm.h).
 */
#include "shm.h"

#include <fcntl.h>
#include <stddef.h>
#include <sys/time.h>
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

socklen_t vocl_shm_fd_socket(struct sockaddr_un *a, pid_t pid)
{
    memset(a, 0, sizeof(*a));
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "vocl-fd-%ld", (long)pid);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

int vocl_shm_fd_fetch(pid_t pid, uint64_t token)
{
    struct sockaddr_un a;
    socklen_t len = vocl_shm_fd_socket(&a, pid);
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -1;
    int fd = -1;
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){2, 0}, sizeof(struct timeval));
    /* The socket's name is anyone's to take: the process answering must be
     * pid itself (the kernel's word), or its descriptor is not taken. */
    struct ucred cred;
    socklen_t clen = sizeof(cred);
    if (connect(s, (struct sockaddr *)&a, len) == 0 &&
        getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0 && cred.pid == pid &&
        send(s, &token, sizeof(token), MSG_NOSIGNAL) == (ssize_t)sizeof(token)) {
        char byte;
        union {
            struct cmsghdr h;
            char buf[CMSG_SPACE(sizeof(int))];
        } ctl;
        struct iovec iov = {.iov_base = &byte, .iov_len = 1};
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                             .msg_controllen = sizeof(ctl.buf)};
        if (recvmsg(s, &msg, MSG_CMSG_CLOEXEC) == 1 && byte) {
            struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);
            if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
                cm->cmsg_len == CMSG_LEN(sizeof(int)))
                memcpy(&fd, CMSG_DATA(cm), sizeof(int));
        }
    }
    close(s);
    return fd;
}
