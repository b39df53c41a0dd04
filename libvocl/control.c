/*
 * control.c - what vocl-ctl(1) asks of a running application, on its
 * control socket (common/ctlsock.h), <pid>.sock.  A request is one line;
 * the answer is lines, the first "ok ..." or "error ...":
 *   proxies           one line per proxy: its number, name, node, devices,
 *                     the objects the application has there, spare or gone
 *   migrate FROM TO   everything on proxy FROM moves to proxy TO (migrate.c);
 *                     a proxy by its number, or in daemon mode its name
 */
#include "vocl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctlsock.h"

/* A proxy as the request names it: its number, or its name; NULL: none such. */
static struct vocl_proxy *proxy_arg(const char *s)
{
    char *end;
    long i = strtol(s, &end, 10);
    if (end != s && !*end)
        return i >= 0 && i < vocl.nproxies ? vocl.proxies[i] : NULL;
    for (int k = 0; k < vocl.nproxies; k++)
        if (vocl.proxies[k]->name && strcmp(vocl.proxies[k]->name, s) == 0)
            return vocl.proxies[k];
    return NULL;
}

static void list_proxies(int fd)
{
    vocl_ctl_say(fd, "ok %d proxies\n", vocl.nproxies);
    for (int i = 0; i < vocl.nproxies; i++) {
        struct vocl_proxy *px = vocl.proxies[i];
        size_t n = 0, objs = 0;
        struct vocl_obj **o = vocl_objs_on(px, &n);
        for (size_t k = 0; k < n; k++) {
            objs += o[k]->type != VOCL_T_DEVICE;
            vocl_obj_drop(o[k]);
        }
        free(o);
        char name[64];
        if (px->local)
            snprintf(name, sizeof(name), "local");
        else if (px->name)
            snprintf(name, sizeof(name), "%.63s", px->name);
        else
            snprintf(name, sizeof(name), "rank%d", px->rank);
        vocl_ctl_say(fd, "proxy %d name=%s node=%s devices=%u objects=%zu%s%s\n", i, name,
                     px->node[0] ? px->node : "-", px->ndev, objs, px->spare ? " spare" : "",
                     atomic_load(&px->dead) ? " gone" : "");
    }
}

static void handle(int fd, const char *req, void *arg)
{
    (void)arg;
    char a[128] = "", b[128] = "";
    if (strcmp(req, "proxies") == 0) {
        list_proxies(fd);
    } else if (sscanf(req, "migrate %127s %127s", a, b) == 2) {
        struct vocl_proxy *from = proxy_arg(a), *to = proxy_arg(b);
        struct vocl_migration st;
        char why[512];
        int rc;
        if (!from || !to)
            vocl_ctl_say(fd, "error no proxy %s here (there are %d: 0 to %d)\n", from ? b : a,
                         vocl.nproxies, vocl.nproxies - 1);
        else if ((rc = vocl_migrate(from, to, &st, why, sizeof(why))) < 0)
            vocl_ctl_say(fd, "error %s; everything stays on proxy %s\n", why, a);
        else if (rc > 0)
            vocl_ctl_say(fd, "ok %s\n", why);
        else
            vocl_ctl_say(fd, "ok objects=%zu bytes=%llu seconds=%.6f pause=%.6f copy=%.6f\n",
                         st.objects, (unsigned long long)st.bytes, (double)st.total_ns / 1e9,
                         (double)st.pause_ns / 1e9, (double)st.copy_ns / 1e9);
    } else {
        vocl_ctl_say(fd, "error unknown request \"%.64s\" (proxies, migrate FROM TO)\n", req);
    }
}

void vocl_control_start(void)
{
    const char *v = getenv("VOCL_CTL");
    if ((v && strcmp(v, "0") == 0) || vocl.nproxies < 2)
        return; /* nowhere to move to */
    char name[32];
    snprintf(name, sizeof(name), "%ld", (long)getpid());
    vocl_ctl_listen(name, handle, NULL);
}

void vocl_control_stop(void)
{
    vocl_ctl_close(); /* (a migration under way ends first) */
}
