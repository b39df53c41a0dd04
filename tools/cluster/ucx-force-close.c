/*
 * ucx-force-close.c - preloaded into every MPI process on a vocl-cluster:
 * MPICH 4.0.2 (ch4:ucx) closes each endpoint in MPI_Finalize with
 * ucp_disconnect_nb, a flushing close that with UCX 1.13's TCP transport
 * waits for the peer to progress; a peer that has already closed its own
 * endpoints waits in PMI's barrier and never does, so jobs of 3 or more
 * ranks on different hosts hang in MPI_Finalize (openucx/ucx#8738; seen
 * here in most runs, also without namespaces, with UCX_TLS=tcp).  MPICH
 * flushes the worker before it disconnects, so nothing is left to send:
 * closing in force mode loses nothing and does not wait for the peer.
 * Resolved at the call, so the library costs nothing in processes without
 * UCX.
 */
#include <dlfcn.h>
#include <stddef.h>

typedef void *(*close_fn)(void *ep, unsigned mode);

void *ucp_disconnect_nb(void *ep);

void *ucp_disconnect_nb(void *ep)
{
    /* ucp_ep_close_nb(ep, UCP_EP_CLOSE_MODE_FORCE), from libucp. */
    close_fn close_nb = (close_fn)(size_t)dlsym(RTLD_NEXT, "ucp_ep_close_nb");
    void *req = close_nb ? close_nb(ep, 0) : NULL;
    /* An endpoint without error handling may refuse a forced close (an
     * error status, -1 to -255, in the pointer): the process is about to
     * exit, so the endpoint is left to the exit, and done is what MPICH
     * hears. */
    if ((size_t)req >= (size_t)-255)
        return NULL;
    return req;
}
