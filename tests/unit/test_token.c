/*
 * test_token.c - the token file of daemon mode (common/token.c): only a
 * private regular file of the user's own, of sensible length, is accepted;
 * a new one is made private and random, and whole even when several are
 * made at once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "token.h"
#include "scratch.h"

static char dir[] = "/tmp/vocl-token-XXXXXX";

static int make_dir(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
    (void)state;
    return scratch_remove(dir);
}

/* Writes text into dir/name with mode; the token's path set to it. */
static void put(struct vocl_token *t, const char *name, const char *text, mode_t mode)
{
    snprintf(t->path, sizeof(t->path), "%s/%s", dir, name);
    unlink(t->path);
    FILE *f = fopen(t->path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(t->path, mode), 0);
}

/* Reading: the error's text when refused, NULL when read. */
static const char *try_read(struct vocl_token *t)
{
    static char why[256];
    return vocl_token_read(t, why, sizeof(why)) ? why : NULL;
}

static void private_files_only(void **state)
{
    (void)state;
    struct vocl_token t;
    put(&t, "good", "0123456789abcdef\n", 0600);
    assert_null(try_read(&t));
    assert_int_equal(t.len, 16); /* without the newline */
    assert_memory_equal(t.bytes, "0123456789abcdef", 16);

    put(&t, "readable", "0123456789abcdef\n", 0640);
    assert_non_null(strstr(try_read(&t), "chmod 600"));
    assert_int_equal(t.len, 0);
    put(&t, "world", "0123456789abcdef\n", 0604);
    assert_non_null(try_read(&t));
    put(&t, "short", "0123456789\n", 0600);
    assert_non_null(strstr(try_read(&t), "shorter"));
    char big[400];
    memset(big, 'x', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    put(&t, "long", big, 0600);
    assert_non_null(strstr(try_read(&t), "longer"));
    big[256] = '\n', big[257] = '\0'; /* 256 bytes and a newline: the largest */
    put(&t, "largest", big, 0600);
    assert_null(try_read(&t));
    assert_int_equal(t.len, 256);

    snprintf(t.path, sizeof(t.path), "%s/missing", dir);
    assert_non_null(strstr(try_read(&t), "cannot open"));
    snprintf(t.path, sizeof(t.path), "%s", dir);
    assert_non_null(try_read(&t)); /* a directory */
    put(&t, "target", "0123456789abcdef\n", 0600);
    char target[sizeof(t.path)];
    memcpy(target, t.path, sizeof(target));
    snprintf(t.path, sizeof(t.path), "%s/link", dir);
    assert_int_equal(symlink(target, t.path), 0);
    assert_non_null(try_read(&t)); /* not followed */
}

static void created_private_and_random(void **state)
{
    (void)state;
    struct vocl_token a, b;
    char why[256];
    bool made;
    snprintf(a.path, sizeof(a.path), "%s/sub/token", dir);
    assert_int_equal(vocl_token_create(&a, &made, why, sizeof(why)), 0);
    assert_true(made);
    struct stat st;
    assert_int_equal(stat(a.path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    snprintf(why, sizeof(why), "%s/sub", dir);
    assert_int_equal(stat(why, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(a.len, 64);

    /* An existing file is read, not replaced. */
    b = a;
    assert_int_equal(vocl_token_create(&b, &made, why, sizeof(why)), 0);
    assert_false(made);
    assert_true(vocl_token_equal(&a, b.bytes, b.len));
    /* Another file has another token. */
    snprintf(b.path, sizeof(b.path), "%s/other", dir);
    assert_int_equal(vocl_token_create(&b, &made, why, sizeof(why)), 0);
    assert_false(vocl_token_equal(&a, b.bytes, b.len));
    assert_false(vocl_token_equal(&a, a.bytes, a.len - 1));
    assert_false(vocl_token_equal(&a, NULL, 0));
}

/* Daemons started at once on a fresh HOME: each makes a token, none may
 * read another's half written, and exactly one's is the file. */
static void made_at_once(void **state)
{
    (void)state;
    enum { RUNS = 30, MAKERS = 6 };
    for (int run = 0; run < RUNS; run++) {
        char path[200];
        snprintf(path, sizeof(path), "%s/race%d/token", dir, run);
        int gate[2];
        assert_int_equal(pipe(gate), 0);
        pid_t kids[MAKERS];
        for (int k = 0; k < MAKERS; k++) {
            kids[k] = fork();
            assert_true(kids[k] >= 0);
            if (kids[k] == 0) {
                char c;
                close(gate[1]);
                if (read(gate[0], &c, 1) != 0) /* (all go when the gate closes) */
                    _exit(1);
                struct vocl_token t;
                char why[256];
                bool made;
                snprintf(t.path, sizeof(t.path), "%s", path);
                if (vocl_token_create(&t, &made, why, sizeof(why))) {
                    fprintf(stderr, "maker %d of run %d: %s\n", k, run, why);
                    _exit(1);
                }
                _exit(made ? 2 : 0);
            }
        }
        close(gate[0]);
        close(gate[1]);
        int made = 0, failed = 0;
        for (int k = 0; k < MAKERS; k++) {
            int st = 0;
            assert_int_equal(waitpid(kids[k], &st, 0), kids[k]);
            failed += !WIFEXITED(st) || WEXITSTATUS(st) == 1;
            made += WIFEXITED(st) && WEXITSTATUS(st) == 2;
        }
        assert_int_equal(failed, 0);
        assert_int_equal(made, 1);
    }
}

static void where_the_file_is(void **state)
{
    (void)state;
    struct vocl_token t;
    setenv("HOME", "/home/someone", 1);
    unsetenv("VOCL_TOKEN_FILE");
    assert_int_equal(vocl_token_path(&t, NULL), 0);
    assert_string_equal(t.path, "/home/someone/.vocl/token");
    setenv("VOCL_TOKEN_FILE", "/etc/vocl/token", 1);
    assert_int_equal(vocl_token_path(&t, NULL), 0);
    assert_string_equal(t.path, "/etc/vocl/token");
    assert_int_equal(vocl_token_path(&t, "/given"), 0);
    assert_string_equal(t.path, "/given");
    unsetenv("VOCL_TOKEN_FILE");
    unsetenv("HOME");
    assert_int_equal(vocl_token_path(&t, NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(private_files_only),
        cmocka_unit_test(created_private_and_random),
        cmocka_unit_test(made_at_once),
        cmocka_unit_test(where_the_file_is),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
