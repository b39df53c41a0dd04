/*
 * token.c - the shared secret of connect mode (token.h).
 */
#include "token.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

int vocl_token_path(struct vocl_token *t, const char *path)
{
    const char *env = getenv("VOCL_TOKEN_FILE"), *home = getenv("HOME");
    int n;
    t->len = 0;
    if (path && *path)
        n = snprintf(t->path, sizeof(t->path), "%s", path);
    else if (env && *env)
        n = snprintf(t->path, sizeof(t->path), "%s", env);
    else if (home && *home)
        n = snprintf(t->path, sizeof(t->path), "%s/.vocl/token", home);
    else
        return -1;
    return n > 0 && (size_t)n < sizeof(t->path) ? 0 : -1;
}

bool vocl_user_name_ok(const char *p, size_t n)
{
    if (n < 1 || n > 64 || p[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)p[i]) && p[i] != '.' && p[i] != '_' && p[i] != '-')
            return false;
    return true;
}

int vocl_token_of_user(struct vocl_token *t, const char *dir, const char *user, size_t n,
                       char *err, size_t errlen)
{
    t->len = 0;
    if (!vocl_user_name_ok(user, n)) {
        snprintf(err, errlen, "not a user name");
        return -1;
    }
    int len = snprintf(t->path, sizeof(t->path), "%s/%.*s", dir, (int)n, user);
    if (len < 0 || (size_t)len >= sizeof(t->path)) {
        snprintf(err, errlen, "path too long");
        return -1;
    }
    return vocl_token_read(t, err, errlen);
}

const char *vocl_user_name(char *buf, size_t len)
{
    struct passwd pw, *found = NULL;
    char work[1024];
    const char *env = getenv("USER");
    if (getpwuid_r(getuid(), &pw, work, sizeof(work), &found) == 0 && found)
        snprintf(buf, len, "%s", found->pw_name);
    else
        snprintf(buf, len, "%s", env ? env : "");
    return buf;
}

int vocl_token_read(struct vocl_token *t, char *err, size_t errlen)
{
    t->len = 0;
    int fd = open(t->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "cannot open it (%s)", strerror(errno));
        return -1;
    }
    struct stat st;
    const char *bad = NULL;
    if (fstat(fd, &st))
        bad = "cannot stat it";
    else if (!S_ISREG(st.st_mode))
        bad = "not a regular file";
    else if (st.st_uid != geteuid())
        bad = "not owned by this user";
    else if (st.st_mode & (S_IRWXG | S_IRWXO))
        bad = "group or others may read or write it (chmod 600)";
    else if (st.st_size > VOCL_TOKEN_MAX + 1)
        bad = "longer than 256 bytes";
    ssize_t n = bad ? -1 : read(fd, t->bytes, sizeof(t->bytes));
    close(fd);
    if (!bad && n != st.st_size)
        bad = "cannot read it";
    if (!bad) {
        t->len = (size_t)n;
        if (t->len && t->bytes[t->len - 1] == '\n')
            t->len--;
        if (t->len < VOCL_TOKEN_MIN)
            bad = "shorter than 16 bytes";
        else if (t->len > VOCL_TOKEN_MAX)
            bad = "longer than 256 bytes";
    }
    if (bad) {
        t->len = 0;
        snprintf(err, errlen, "%s", bad);
        return -1;
    }
    return 0;
}

int vocl_token_create(struct vocl_token *t, bool *made, char *err, size_t errlen)
{
    *made = false;
    char dir[sizeof(t->path)];
    snprintf(dir, sizeof(dir), "%s", t->path);
    char *slash = strrchr(dir, '/');
    if (slash && slash != dir) {
        *slash = '\0';
        if (mkdir(dir, 0700) && errno != EEXIST) {
            snprintf(err, errlen, "cannot make its directory (%s)", strerror(errno));
            return -1;
        }
    }
    if (access(t->path, F_OK) == 0)
        return vocl_token_read(t, err, errlen);
    /* Written whole under a name of its own, then linked into place: two
     * daemons started at once never read a token half written, and the
     * one whose link fails reads the other's. */
    char tmp[sizeof(t->path) + 32];
    snprintf(tmp, sizeof(tmp), "%s.%ld.new", t->path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "cannot make it (%s)", strerror(errno));
        return -1;
    }
    /* 32 random bytes, as hex: a line that can be copied by hand. */
    uint8_t raw[32];
    char hex[2 * sizeof(raw) + 1];
    bool ok = getrandom(raw, sizeof(raw), 0) == (ssize_t)sizeof(raw);
    for (size_t i = 0; i < sizeof(raw); i++)
        snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    hex[2 * sizeof(raw)] = '\n';
    ok = ok && write(fd, hex, sizeof(hex)) == (ssize_t)sizeof(hex);
    ok = close(fd) == 0 && ok;
    int linked = ok ? link(tmp, t->path) : -1, why = errno;
    unlink(tmp);
    if (!ok || (linked && why != EEXIST)) {
        snprintf(err, errlen, "cannot write a new token into it (%s)",
                 ok ? strerror(why) : "the file it is written to first");
        return -1;
    }
    *made = linked == 0;
    return vocl_token_read(t, err, errlen);
}

bool vocl_token_equal(const struct vocl_token *t, const uint8_t *p, size_t n)
{
    if (!p || n != t->len)
        return false;
    uint8_t diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= t->bytes[i] ^ p[i];
    return diff == 0;
}
