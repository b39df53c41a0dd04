/*
 * log.c - stderr logging shared by libvocl and voclproxyd.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int vocl_log_level = VOCL_LOG_WARN;
int vocl_log_stamp;
static char log_prefix[64] = "vocl";

void vocl_log_set_prefix(const char *prefix)
{
    snprintf(log_prefix, sizeof(log_prefix), "%s", prefix);
}

void vocl_log(enum vocl_log_level lvl, const char *fmt, ...)
{
    static const char *names[] = {"error", "warning", "info", "debug", "note"};
    if ((int)(lvl == VOCL_LOG_NOTE ? VOCL_LOG_WARN : lvl) > vocl_log_level)
        return;
    /* One fprintf per line, so lines of several threads do not interleave. */
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    char stamp[40] = "";
    if (vocl_log_stamp) {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        size_t n = strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(stamp + n, sizeof(stamp) - n, ".%03ldZ ", ts.tv_nsec / 1000000);
    }
    fprintf(stderr, "%s%s: %s: %s\n", stamp, log_prefix, names[lvl], line);
}
