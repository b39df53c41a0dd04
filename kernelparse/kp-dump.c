/*
 * kp-dump.c - prints the kernels and arguments that kernelparse finds in an
 * OpenCL C file, to check what the client will believe about a program.
 */
#include "kernelparse.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The whole of f, read in chunks because stdin cannot be measured first. */
static char *read_all(FILE *f, size_t *len)
{
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    for (;;) {
        if (n == cap) {
            char *nb = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!nb)
                goto out_free_buf;
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        if (!got)
            break;
        n += got;
    }
    if (ferror(f))
        goto out_free_buf;
    *len = n;
    return buf;

out_free_buf:
    free(buf);
    return NULL;
}

static void print_kernel(const struct kp_kernel *k)
{
    printf("kernel %s (%u argument%s)\n", k->name, k->nargs, k->nargs == 1 ? "" : "s");
    for (unsigned i = 0; i < k->nargs; i++) {
        const struct kp_arg *a = &k->args[i];
        printf("  %u %s: kind=%s type='%s' access=%s%s%s%s\n", i,
               a->name[0] ? a->name : "(unnamed)", kp_arg_kind_name(a->kind), a->type_name,
               kp_access_name(a->access), a->is_const ? " const" : "",
               a->is_restrict ? " restrict" : "", a->is_volatile ? " volatile" : "");
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s FILE.cl   (\"-\" reads stdin)\n", argv[0]);
        return 2;
    }
    int use_stdin = strcmp(argv[1], "-") == 0;
    FILE *f = use_stdin ? stdin : fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    size_t len = 0;
    char *src = read_all(f, &len);
    if (!use_stdin)
        fclose(f);
    if (!src) {
        fprintf(stderr, "%s: cannot read the file\n", argv[1]);
        return 2;
    }

    struct kp_program *prog;
    char err[256];
    int rc = kp_parse(src, len, &prog, err, sizeof(err));
    free(src);
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", argv[1], err);
        return 1;
    }
    for (unsigned i = 0; i < prog->nkernels; i++)
        print_kernel(&prog->kernels[i]);
    kp_free(prog);
    return 0;
}
