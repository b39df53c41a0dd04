/*
 * token.h - the shared secret of daemon mode.  A proxy that listens for
 * clients (voclproxyd --listen) serves only those whose HELLO carries the
 * bytes of its token file; job mode needs none (the job's ranks were all
 * started by one mpiexec).
 *
 * The file must be a regular file of the user's own, readable by nobody
 * else (mode 0600 or stricter), of VOCL_TOKEN_MIN..VOCL_TOKEN_MAX bytes; a
 * final newline is not part of the token.  Both sides find it the same way:
 * an explicit path, else VOCL_TOKEN_FILE, else $HOME/.vocl/token.
 *
 * A proxy shared by several users may hold a token per user instead
 * (voclproxyd --users DIR): the client names its user in HELLO, and must
 * present the bytes of DIR/USER, a file of the proxy's user as above.
 */
#ifndef VOCL_TOKEN_H
#define VOCL_TOKEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VOCL_TOKEN_MIN 16
#define VOCL_TOKEN_MAX 256

struct vocl_token {
    uint8_t bytes[VOCL_TOKEN_MAX + 1]; /* room for the final newline */
    size_t len;
    char path[4096];
};

/* Where the token file is: path if not NULL, else as above; -1 if no
 * HOME either. */
int vocl_token_path(struct vocl_token *t, const char *path);

/* Reads t->path into t; 0, or -1 with why in err (one line, no path). */
int vocl_token_read(struct vocl_token *t, char *err, size_t errlen);

/* Makes t->path (and its directory, mode 0700, if missing) with a new
 * random token, mode 0600, and reads it; an existing file is left alone.
 * *made: whether it was made now.  0, or -1 with why in err. */
int vocl_token_create(struct vocl_token *t, bool *made, char *err, size_t errlen);

/* A user name as it may name a file of --users DIR: 1 to 64 of
 * [A-Za-z0-9._-], not starting with a dot. */
bool vocl_user_name_ok(const char *p, size_t n);

/* The token of user (n bytes, not NUL-terminated) in dir: 0, or -1 with
 * why in err (a bad name, no such file, a file of the wrong mode). */
int vocl_token_of_user(struct vocl_token *t, const char *dir, const char *user, size_t n,
                       char *err, size_t errlen);

/* This process's user name (getpwuid), else $USER, else "": buf. */
const char *vocl_user_name(char *buf, size_t len);

/* In time that does not depend on where the bytes differ. */
bool vocl_token_equal(const struct vocl_token *t, const uint8_t *p, size_t n);

#endif
