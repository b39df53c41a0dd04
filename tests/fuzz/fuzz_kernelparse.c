/*
 * fuzz_kernelparse.c - libFuzzer target: kernelparse, on any bytes as
 * OpenCL C source.  libvocl runs it on every clCreateProgramWithSource, on
 * sources it did not write.
 *
 * Each input is parsed as kp_parse's contract has it (kernelparse.h): from
 * memory of exactly its size, with no NUL after it; then the promises of
 * the contract are checked (abort() when one is broken): on success a
 * program whose kernels kp_find_kernel finds by their names, each argument
 * with a name, a type name and kinds in range; on failure no program and a
 * one-line message starting "line N: ".  The message is asked for in a
 * buffer of full size, in one of 8 bytes (truncated, still terminated) and
 * in none, and the three parses must agree.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernelparse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void broken(const char *what)
{
    fprintf(stderr, "kernelparse broke its contract: %s\n", what);
    abort();
}

static void check_program(const struct kp_program *prog)
{
    if (!prog)
        broken("KP_OK without a program");
    for (unsigned i = 0; i < prog->nkernels; i++) {
        const struct kp_kernel *k = &prog->kernels[i];
        if (!k->name || !k->name[0])
            broken("a kernel without a name");
        const struct kp_kernel *found = kp_find_kernel(prog, k->name);
        if (!found || strcmp(found->name, k->name))
            broken("kp_find_kernel does not find a kernel by its name");
        if (k->nargs && !k->args)
            broken("arguments without an array");
        for (unsigned a = 0; a < k->nargs; a++) {
            const struct kp_arg *arg = &k->args[a];
            if (!arg->name || !arg->type_name)
                broken("an argument without a name or a type name");
            (void)strlen(arg->name);
            (void)strlen(arg->type_name);
            if (!strcmp(kp_arg_kind_name(arg->kind), "unknown") ||
                !strcmp(kp_access_name(arg->access), "unknown"))
                broken("an argument kind or access out of range");
        }
    }
}

static void check_error(int rc, const struct kp_program *prog, const char *err)
{
    if (rc != KP_ERR_SYNTAX && rc != KP_ERR_LIMIT && rc != KP_ERR_NOMEM)
        broken("an error code out of range");
    if (prog)
        broken("a program with an error");
    unsigned line;
    if (sscanf(err, "line %u:", &line) != 1)
        broken("a message not starting \"line N:\"");
    if (strchr(err, '\n'))
        broken("a message of more than one line");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *src = malloc(size ? size : 1);
    if (!src)
        return 0;
    memcpy(src, data, size);

    struct kp_program *prog = (struct kp_program *)src; /* must be replaced */
    char err[256];
    int rc = kp_parse(src, size, &prog, err, sizeof(err));
    if (rc == KP_OK)
        check_program(prog);
    else
        check_error(rc, prog, err);

    struct kp_program *prog2 = NULL;
    char small[8];
    memset(small, 'x', sizeof(small));
    int rc2 = kp_parse(src, size, &prog2, small, sizeof(small));
    if (rc2 != rc)
        broken("a parse with a short message buffer ends otherwise");
    if (!memchr(small, '\0', sizeof(small)))
        broken("a truncated message not terminated");
    if (rc2 != KP_OK && strncmp(small, err, sizeof(small) - 1))
        broken("a truncated message differs");
    kp_free(prog2);

    struct kp_program *prog3 = NULL;
    if (kp_parse(src, size, &prog3, NULL, 0) != rc)
        broken("a parse without a message buffer ends otherwise");
    kp_free(prog3);

    if (rc == KP_OK && prog->nkernels && kp_find_kernel(prog, "") != NULL)
        broken("kp_find_kernel finds a kernel without a name");
    kp_free(prog);
    free(src);
    return 0;
}
