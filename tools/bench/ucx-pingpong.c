/*
 * ucx-pingpong.c - raw UCX between two programs started alone, the
 * yardstick that `vocl-bench --daemons` puts beside daemon mode: the same
 * connection VOCL's daemon mode makes (common/ucx.h, a worker of its own,
 * UCX's transports less shared memory) and the same messages as
 * mpi-pingpong (the median round trip of 4 bytes; SIZE-byte messages sent
 * one way in windows of WINDOW, each ended by a 4-byte acknowledgement).
 * Prints mpi-pingpong's CSV lines.
 *
 *   ucx-pingpong --accept ADDR --port-file FILE [--sizes LIST] [--window N] [--reps N] [--rtt N]
 *   ucx-pingpong --connect HOST:PORT|@FILE [the same]
 *
 * The acceptor writes HOST:PORT to FILE, says "listening on" on stderr,
 * serves one client and exits.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


#include "backoff.h"
#include "chan.h"
#include "pingpong.h"
#include "ucx.h"

enum { TAG_RTT = 1, TAG_DATA = 2, TAG_ACK = 3, TAG_SYNC = 4 };

static struct vocl_chan ch;

static void die(const char *what)
{
    fprintf(stderr, "ucx-pingpong: %s\n", what);
    exit(1);
}

static void wait_req(struct vocl_req *r)
{
    int done;
    while ((done = vocl_test(r, NULL)) == 0)
        ;
    if (done < 0)
        die("the connection failed");
}

static void send_n(int tag, const void *buf, size_t n)
{
    struct vocl_req r;
    if (vocl_isend(ch, tag, buf, n, &r))
        die("send failed");
    wait_req(&r);
}

static void recv_n(int tag, void *buf, size_t n)
{
    struct vocl_req r;
    if (vocl_irecv(ch, tag, buf, n, &r))
        die("receive failed");
    wait_req(&r);
}

/* Both sides here before either goes on. */
static void sync_both(void)
{
    int w = 0;
    send_n(TAG_SYNC, &w, sizeof(w));
    recv_n(TAG_SYNC, &w, sizeof(w));
}

static double now(void)
{
    return (double)vocl_now_ns() / 1e9;
}

/* One-way bandwidth from the side `from` (0: the client), in B/s. */
static double bandwidth(int me, int from, char *buf, long size, int window, int reps)
{
    struct vocl_req *req = malloc(sizeof(*req) * (size_t)window);
    double *t = malloc(sizeof(*t) * (size_t)reps);
    int ack = 0;
    if (!req || !t)
        die("out of memory");
    for (int r = 0; r <= reps; r++) { /* r == 0: the warm-up */
        sync_both();
        double t0 = now();
        for (int w = 0; w < window; w++)
            if (me == from ? vocl_isend(ch, TAG_DATA, buf, (size_t)size, &req[w])
                           : vocl_irecv(ch, TAG_DATA, buf, (size_t)size, &req[w]))
                die("transfer failed");
        for (int w = 0; w < window; w++)
            wait_req(&req[w]);
        if (me == from)
            recv_n(TAG_ACK, &ack, sizeof(ack));
        else
            send_n(TAG_ACK, &ack, sizeof(ack));
        if (r > 0)
            t[r - 1] = now() - t0;
    }
    qsort(t, (size_t)reps, sizeof(*t), pingpong_cmp_double);
    double bw = (double)size * window / t[reps / 2];
    free(req);
    free(t);
    return bw;
}

int main(int argc, char **argv)
{
    const char *accept = NULL, *connect = NULL, *port_file = NULL;
    const char *sizes = "512K,1M,2M,4M,8M,16M,32M,64M";
    int window = 8, reps = 5, rtt_n = 1000;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--sizes"))
            sizes = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--window"))
            window = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--reps"))
            reps = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--rtt"))
            rtt_n = atoi(argv[++i]);
        else if (i + 1 < argc && !strcmp(argv[i], "--accept"))
            accept = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--port-file"))
            port_file = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--connect"))
            connect = argv[++i];
        else {
            fprintf(stderr, "usage: ucx-pingpong [--sizes LIST] [--window N] [--reps N] [--rtt N]\n"
                            "                    --accept ADDR --port-file FILE | --connect HOST:PORT\n");
            return 2;
        }
    }
    if (window < 1 || reps < 1 || rtt_n < 1 || !accept == !connect || (accept && !port_file)) {
        fprintf(stderr, "ucx-pingpong: --accept ADDR with --port-file, or --connect HOST:PORT; "
                        "--window, --reps and --rtt at least 1\n");
        return 2;
    }
    char err[160];
    struct vocl_conn *conn;
    int me = accept ? 1 : 0;
    if (accept) {
        bool in_use;
        struct vocl_listener *l = vocl_listen(accept, 0, &in_use, err, sizeof(err));
        if (!l)
            die(err);
        char host[256] = "localhost", tmp[4200];
        if (strcmp(accept, "0.0.0.0") && strcmp(accept, "::"))
            snprintf(host, sizeof(host), "%s", accept);
        else
            gethostname(host, sizeof(host) - 1);
        /* (Written beside it and renamed: the client never reads half of it.) */
        snprintf(tmp, sizeof(tmp), "%s.tmp", port_file);
        FILE *f = fopen(tmp, "w");
        if (!f || fprintf(f, "%s:%d\n", host, vocl_listener_port(l)) < 0 || fclose(f) ||
            rename(tmp, port_file))
            die("cannot write the port file");
        fprintf(stderr, "ucx-pingpong: listening on %s:%d\n", accept, vocl_listener_port(l));
        while (!(conn = vocl_accept(l, 1000000000u)))
            ;
        vocl_listener_close(l);
    } else {
        char host[256], text[300];
        int port;
        if (connect[0] == '@') { /* (@FILE: the acceptor's port file, once it is there) */
            FILE *f = NULL;
            for (int i = 0; i < 300 && !(f = fopen(connect + 1, "r")); i++)
                nanosleep(&(struct timespec){0, 100000000}, NULL);
            if (!f || !fgets(text, sizeof(text), f))
                die("no port file");
            fclose(f);
            connect = text;
        }
        if (sscanf(connect, "%255[^:]:%d", host, &port) != 2)
            die("--connect HOST:PORT");
        if (!(conn = vocl_conn_dial(host, port, 10000000000u, 0, err, sizeof(err))))
            die(err);
    }
    ch = VOCL_CHAN_UCX(conn);
    sync_both();
    int word = 0, warm = rtt_n / 10;
    double *t = malloc(sizeof(*t) * (size_t)rtt_n);
    if (!t)
        die("out of memory");
    for (int i = -warm; i < rtt_n; i++) {
        double t0 = now();
        if (me == 0) {
            send_n(TAG_RTT, &word, sizeof(word));
            recv_n(TAG_RTT, &word, sizeof(word));
        } else {
            recv_n(TAG_RTT, &word, sizeof(word));
            send_n(TAG_RTT, &word, sizeof(word));
        }
        if (i >= 0)
            t[i] = now() - t0;
    }
    qsort(t, (size_t)rtt_n, sizeof(*t), pingpong_cmp_double);
    if (me == 0)
        printf("lat,rtt4,4,%.9g,s\n", t[rtt_n / 2]);
    free(t);
    for (const char *s = sizes; s && *s; s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL) {
        long size = pingpong_size(s);
        if (size < 0 || size > (1L << 30))
            die("a bad size in --sizes");
        char *buf = malloc((size_t)size);
        if (!buf)
            die("out of memory");
        memset(buf, 1, (size_t)size);
        double w = bandwidth(me, 0, buf, size, window, reps);
        double r = bandwidth(me, 1, buf, size, window, reps);
        if (me == 0)
            printf("bw,write,%ld,%.6g,B/s\nbw,read,%ld,%.6g,B/s\n", size, w, size, r);
        fflush(stdout);
        free(buf);
    }
    sync_both(); /* (neither closes before the other is done) */
    if (me == 0)
        printf("end,ok,,,\n");
    vocl_conn_close(conn);
    return 0;
}
