/*
 * shm.h - large buffers a proxy shares with a client of its own node.
 *
 * A proxy whose client runs on its node (HELLO: the same node key, which
 * includes the hostname, so the test cluster's hosts count as different
 * nodes) gives each buffer of at least VOCL_SHM_MIN bytes in a context of
 * one device memory of a memfd, as CL_MEM_USE_HOST_PTR, once it has seen
 * that the device reads and writes such memory in place.  The client maps
 * the memfd (SHM_MAP, protocol.h): a blocking transfer is then one memcpy
 * (memory.c).  VOCL_SHM=0 turns it off on either side.
 */
#ifndef VOCL_SHM_H
#define VOCL_SHM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#define VOCL_SHM_MIN ((size_t)1 << 20)

/* Whether VOCL_SHM allows it (anything but "0"). */
bool vocl_shm_allowed(void);
/* This node: its kernel's boot and PID namespace (where a pid names the
 * same process: liveness.c), and with hostname its hostname too (where
 * memory may be shared: the test cluster's hosts share a kernel but not a
 * hostname), hashed; 0 when unknown. */
uint64_t vocl_node_key(bool hostname);
/* The memfd's name for token ("vocl-shm-" and 16 hex digits). */
void vocl_shm_name(char *out, size_t size, uint64_t token);
/* Where process pid hands its memfds to clients of other users (an
 * abstract Unix socket, executor/shm.c): into *a, its length. */
socklen_t vocl_shm_fd_socket(struct sockaddr_un *a, pid_t pid);
/* The memfd of token from process pid, over that socket: a descriptor, or
 * -1 (not given: another user's, gone, or no such socket). */
int vocl_shm_fd_fetch(pid_t pid, uint64_t token);

#endif
