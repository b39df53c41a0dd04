/*
 * log.h - one logging idiom for libvocl and voclproxyd: lines on stderr,
 * prefixed with who speaks, filtered by a verbosity level.
 */
#ifndef VOCL_LOG_H
#define VOCL_LOG_H

/* NOTE: what a daemon's operator wants at the default level (a
 * connection, a refusal): shown with warnings, named "note". */
enum vocl_log_level {
    VOCL_LOG_ERROR = 0,
    VOCL_LOG_WARN = 1,
    VOCL_LOG_INFO = 2,
    VOCL_LOG_DEBUG = 3,
    VOCL_LOG_NOTE = 4
};

extern int vocl_log_level;
/* Lines begin with the time (UTC, ms): a daemon's log, read weeks later. */
extern int vocl_log_stamp;
void vocl_log_set_prefix(const char *prefix);
void vocl_log(enum vocl_log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define vocl_error(...) vocl_log(VOCL_LOG_ERROR, __VA_ARGS__)
#define vocl_warn(...)  vocl_log(VOCL_LOG_WARN, __VA_ARGS__)
#define vocl_info(...)  vocl_log(VOCL_LOG_INFO, __VA_ARGS__)
#define vocl_note(...)  vocl_log(VOCL_LOG_NOTE, __VA_ARGS__)
#define vocl_debug(...)                                                                            \
    do {                                                                                           \
        if (vocl_log_level >= VOCL_LOG_DEBUG)                                                      \
            vocl_log(VOCL_LOG_DEBUG, __VA_ARGS__);                                                 \
    } while (0)

#endif
