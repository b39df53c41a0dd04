/*
 * test_spank.c - the Slurm plugin (tools/slurm/spank_vocl.c), its SPANK
 * calls stubbed: which devices a job's prolog gives it (the least shared
 * first, in the pool's order, as ranges), that no device goes to two jobs
 * unless share= allows, that a job finds none where none are free and
 * says so, that the epilog frees them, that VOCL_PROXIES is what the
 * prolog wrote, and that bad --vocl-gpus values, pool files and plugin
 * arguments are refused with a message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../../tools/slurm/spank_vocl.c"
#include "scratch.h"

/* The stubs' world: the context, the job, its --vocl-gpus, what was set
 * and said. */
static spank_context_t ctx = S_CTX_JOB_SCRIPT;
static uint32_t cur_job;
static const char *cur_gpus;
static char env_proxies[4096], env_gpus[32], said[4096];

spank_context_t spank_context(void)
{
    return ctx;
}

spank_err_t spank_option_register(spank_t sp, struct spank_option *opt)
{
    (void)sp, (void)opt;
    return ESPANK_SUCCESS;
}

spank_err_t spank_get_item(spank_t sp, spank_item_t item, ...)
{
    (void)sp;
    if (item != S_JOB_ID)
        return ESPANK_BAD_ARG;
    va_list ap;
    va_start(ap, item);
    *va_arg(ap, uint32_t *) = cur_job;
    va_end(ap);
    return ESPANK_SUCCESS;
}

spank_err_t spank_option_getopt(spank_t sp, struct spank_option *opt, char **optarg)
{
    (void)sp, (void)opt;
    if (!cur_gpus)
        return ESPANK_ERROR;
    *optarg = (char *)cur_gpus;
    return ESPANK_SUCCESS;
}

spank_err_t spank_setenv(spank_t sp, const char *var, const char *val, int overwrite)
{
    (void)sp, (void)overwrite;
    if (!strcmp(var, "VOCL_PROXIES"))
        snprintf(env_proxies, sizeof(env_proxies), "%s", val);
    else if (!strcmp(var, "VOCL_GPUS"))
        snprintf(env_gpus, sizeof(env_gpus), "%s", val);
    else
        return ESPANK_BAD_ARG;
    return ESPANK_SUCCESS;
}

static void say(const char *fmt, va_list ap)
{
    size_t len = strlen(said);
    vsnprintf(said + len, sizeof(said) - len, fmt, ap);
    len = strlen(said);
    snprintf(said + len, sizeof(said) - len, "\n");
}

#define STUB_LOG(name)                      \
    void name(const char *fmt, ...)         \
    {                                       \
        va_list ap;                         \
        va_start(ap, fmt);                  \
        say(fmt, ap);                       \
        va_end(ap);                         \
    }
STUB_LOG(slurm_error)
STUB_LOG(slurm_info)
STUB_LOG(slurm_debug)

static char dir[] = "/tmp/vocl-spank-XXXXXX";
static char pool_arg[64], state_arg[64];

static int make_dir(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(pool_arg, sizeof(pool_arg), "pool=%s/pool", dir);
    snprintf(state_arg, sizeof(state_arg), "state=%s", dir);
    return 0;
}

static int remove_dir(void **state)
{
    (void)state;
    return scratch_remove(dir);
}

/* A fresh pool file (and no job's assignment left). */
static void pool(const char *text)
{
    char path[128], cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -f %s/job.*", dir);
    assert_int_equal(system(cmd), 0);
    snprintf(path, sizeof(path), "%s/pool", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* The plugin's callbacks with its plugstack.conf arguments (share=K or
 * nothing more). */
static int call(int (*fn)(spank_t, int, char **), const char *extra)
{
    char *av[] = {pool_arg, state_arg, (char *)extra};
    return fn(NULL, extra ? 3 : 2, av);
}

/* Job job's prolog for gpus; then what its steps get as VOCL_PROXIES ("" when
 * the step fails). */
static const char *prolog(uint32_t job, const char *gpus, const char *extra)
{
    cur_job = job;
    cur_gpus = gpus;
    ctx = S_CTX_JOB_SCRIPT;
    said[0] = 0;
    assert_int_equal(call(slurm_spank_job_prolog, extra), 0); /* (never fails: a node drains) */
    ctx = S_CTX_REMOTE;
    env_proxies[0] = 0;
    if (call(slurm_spank_user_init, extra) != 0)
        assert_string_equal(env_proxies, "");
    else
        assert_string_equal(env_gpus, gpus);
    return env_proxies;
}

static void epilog(uint32_t job)
{
    cur_job = job;
    cur_gpus = "1";
    ctx = S_CTX_JOB_SCRIPT;
    assert_int_equal(call(slurm_spank_job_epilog, NULL), 0);
    char path[128];
    snprintf(path, sizeof(path), "%s/job.%u", dir, job);
    assert_int_equal(access(path, F_OK), -1);
}

static void jobs_get_free_devices_in_pool_order(void **state)
{
    (void)state;
    pool("# two daemons\nvc1 8\n\nvc2:7011 4  # the small one\n");
    assert_string_equal(prolog(1, "6", NULL), "vc1@0-5");
    assert_string_equal(prolog(2, "5", NULL), "vc1@6-7,vc2:7011@0-2");
    /* One left: a job of two gets none, and its step says why. */
    assert_string_equal(prolog(3, "2", NULL), "");
    assert_non_null(strstr(said, "2 virtual GPUs asked, 1 free in the pool"));
    assert_non_null(strstr(said, "job 3 asked 2 virtual GPUs but was given none"));
    epilog(1);
    epilog(3); /* (nothing to free: no error) */
    assert_string_equal(prolog(4, "2", NULL), "vc1@0-1");
    /* A second node of a job finds the job's devices, not new ones. */
    assert_string_equal(prolog(4, "2", NULL), "vc1@0-1");
    epilog(2);
    epilog(4);
}

static void holes_make_lists_of_ranges(void **state)
{
    (void)state;
    pool("vc1 8\nvc2 8\n");
    assert_string_equal(prolog(1, "2", NULL), "vc1@0-1");
    assert_string_equal(prolog(2, "2", NULL), "vc1@2-3");
    assert_string_equal(prolog(3, "3", NULL), "vc1@4-6");
    epilog(2);
    assert_string_equal(prolog(4, "5", NULL), "vc1@2-3+7,vc2@0-1");
    epilog(1);
    assert_string_equal(prolog(5, "1", NULL), "vc1@0");
    epilog(3);
    epilog(4);
    epilog(5);
}

static void no_device_shared_unless_allowed(void **state)
{
    (void)state;
    pool("vc1 2\nvc2 2\n");
    assert_string_equal(prolog(1, "3", "share=2"), "vc1@0-1,vc2@0");
    /* Those no job holds first, then the least shared. */
    assert_string_equal(prolog(2, "2", "share=2"), "vc2@1,vc1@0");
    assert_string_equal(prolog(3, "3", "share=2"), "vc1@1,vc2@0-1");
    assert_string_equal(prolog(4, "1", "share=2"), "");
    assert_non_null(strstr(said, "1 virtual GPUs asked, 0 free in the pool"));
    assert_string_equal(prolog(8, "9", "share=2"), "");
    assert_non_null(strstr(said, "9 virtual GPUs asked, the pool has 8"));
    /* Without share=, a device held by one job is taken. */
    epilog(1);
    epilog(2);
    assert_string_equal(prolog(5, "1", NULL), "vc1@0");
    assert_string_equal(prolog(6, "1", NULL), "");
    epilog(3);
    epilog(5);
    /* Nor is one device given twice to one job. */
    pool("vc1 2\n");
    assert_string_equal(prolog(7, "3", "share=2"), "");
    assert_non_null(strstr(said, "3 virtual GPUs asked, 2 free in the pool"));
    assert_string_equal(prolog(7, "2", "share=2"), "vc1@0-1");
    epilog(7);
}

static void submission_checks_the_count(void **state)
{
    (void)state;
    pool("vc1 8\nvc2 8\nvc3 8\nvc4 8\n");
    ctx = S_CTX_ALLOCATOR;
    said[0] = 0;
    assert_int_equal(opt_gpus(0, "40", 0), 0);
    assert_int_equal(call(slurm_spank_init_post_opt, NULL), -1);
    assert_non_null(strstr(said, "--vocl-gpus=40: the pool has 32 virtual GPUs (4 daemons"));
    assert_int_equal(opt_gpus(0, "32", 0), 0);
    assert_int_equal(call(slurm_spank_init_post_opt, NULL), 0);
    assert_int_equal(call(slurm_spank_init_post_opt, "share=2"), 0); /* (64 with sharing) */
    static const char *bad[] = {"0", "-1", "eight", "8x", "", "99999999999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        said[0] = 0;
        assert_int_equal(opt_gpus(0, bad[i], 0), -1);
        assert_non_null(strstr(said, "give a number of virtual GPUs, 1 or more"));
    }
    asked = 0;
}

static void bad_pool_and_arguments_refused(void **state)
{
    (void)state;
    pool("vc1 8\nvc2 eight\n");
    assert_string_equal(prolog(1, "1", NULL), "");
    assert_non_null(strstr(said, "line 2: not \"HOST[:PORT] DEVICES\""));
    pool("vc1@0 8\n");
    assert_string_equal(prolog(1, "1", NULL), "");
    assert_non_null(strstr(said, "line 1: not"));
    pool("# nothing\n");
    assert_string_equal(prolog(1, "1", NULL), "");
    assert_non_null(strstr(said, "names no daemon"));
    said[0] = 0;
    char *av[] = {"pool=/x", "color=blue"};
    assert_int_equal(slurm_spank_init(NULL, 2, av), -1);
    assert_non_null(strstr(said, "unknown argument 'color=blue'"));
    char *av2[] = {"share=0"};
    assert_int_equal(slurm_spank_init(NULL, 1, av2), -1);
    /* A job without --vocl-gpus: nothing done, nothing set. */
    pool("vc1 8\n");
    cur_gpus = NULL;
    env_proxies[0] = 0;
    ctx = S_CTX_REMOTE;
    assert_int_equal(call(slurm_spank_user_init, NULL), 0);
    assert_string_equal(env_proxies, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(jobs_get_free_devices_in_pool_order),
        cmocka_unit_test(holes_make_lists_of_ranges),
        cmocka_unit_test(no_device_shared_unless_allowed),
        cmocka_unit_test(submission_checks_the_count),
        cmocka_unit_test(bad_pool_and_arguments_refused),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
