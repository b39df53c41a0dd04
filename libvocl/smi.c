/*
 * smi.c - what vocl-smi asks of each proxy: its STATE (protocol.h).  The
 * one entry point libvocl exports besides the OpenCL API and MPI_Finalize
 * (libvocl.map); vocl-smi links libvocl and decodes the reply itself.
 */
#include "vocl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vocl_msg.h"

int vocl_smi_state(int i, char *name, size_t namelen, void **rep, size_t *len);

/*
 * Proxy i of the platform (0 up): its name into name (daemon mode: as the
 * user named it; job mode: "rank N"), and its STATE reply after the status
 * into *rep (malloc'd, *len bytes; vocl_dec_STATE_rep reads it).  0; 1 when
 * it does not answer (*rep NULL); -1 past the last proxy, or before
 * libvocl started (the first OpenCL call starts it).  Local passthrough
 * devices are no proxy's and are skipped.
 */
__attribute__((visibility("default"))) int vocl_smi_state(int i, char *name, size_t namelen,
                                                         void **rep, size_t *len)
{
    *rep = NULL;
    *len = 0;
    int k = -1;
    struct vocl_proxy *px = NULL;
    for (int j = 0; j < vocl.nproxies && k < i; j++)
        if (!vocl.proxies[j]->local && ++k == i)
            px = vocl.proxies[j];
    if (!px)
        return -1;
    if (px->name)
        snprintf(name, namelen, "%s", px->name);
    else
        snprintf(name, namelen, "rank %d", px->rank);
    struct vocl_call c;
    vocl_call_init(&c);
    c.px = px;
    bool answered = false;
    if (vocl_call_start(&c, VOCL_OP_STATE) == 0) {
        vocl_enc_STATE_req(c.w, &(struct vocl_msg_STATE_req){0});
        answered = vocl_call_send(&c) == 0 && c.err == CL_SUCCESS;
    }
    size_t n = answered ? (size_t)(c.r.end - c.r.p) : 0;
    if (answered && (*rep = malloc(n ? n : 1))) {
        memcpy(*rep, c.r.p, n);
        *len = n;
    }
    vocl_call_end(&c);
    return *rep ? 0 : 1;
}
