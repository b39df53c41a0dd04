/*
 * log.c - stderr logging shared by libvocl and voclproxyd.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int vocl_log_level = VOCL_LOG_WARN;
static char log_prefix[64] = "vocl";

void vocl_log_set_prefix(const char *prefix)
{
    snprintf(log_prefix, sizeof(log_prefix), "%s", prefix);
}

void vocl_log(enum vocl_log_level lvl, const char *fmt, ...)
{
    static const char *names[] = {"error", "warning", "info", "debug"};
    if ((int)lvl > vocl_log_level)
        return;
    /* One fprintf per line, so lines of several threads do not interleave. */
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s: %s\n", log_prefix, names[lvl], line);
}
