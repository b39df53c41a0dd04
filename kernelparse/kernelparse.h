/*
 * kernelparse.h - reads the kernel signatures out of OpenCL C source, so the
 * client knows which clSetKernelArg values are object handles to translate
 * without asking the server.
 */
#ifndef VOCL_KERNELPARSE_H
#define VOCL_KERNELPARSE_H

#include <stddef.h>

enum kp_arg_kind {
    KP_ARG_VALUE,        /* by value: scalar, vector, struct, union, enum, typedef */
    KP_ARG_GLOBAL_PTR,   /* __global T *: a buffer (cl_mem) */
    KP_ARG_CONSTANT_PTR, /* __constant T *: a buffer (cl_mem) */
    KP_ARG_LOCAL_PTR,    /* __local T *: only a size, the value is NULL */
    KP_ARG_PRIVATE_PTR,  /* pointer to __private, __generic or no address space */
    KP_ARG_IMAGE,        /* any image*_t: an image (cl_mem) */
    KP_ARG_SAMPLER,      /* sampler_t: a cl_sampler */
    KP_ARG_PIPE,         /* pipe T: a pipe (cl_mem) */
    KP_ARG_QUEUE,        /* queue_t: a device-side cl_command_queue */
};

enum kp_access {
    KP_ACCESS_NONE,
    KP_ACCESS_READ_ONLY, /* also the default for images and pipes */
    KP_ACCESS_WRITE_ONLY,
    KP_ACCESS_READ_WRITE,
};

/* Return values of kp_parse. */
enum kp_error {
    KP_OK = 0,
    KP_ERR_SYNTAX = -1,  /* a kernel signature (or the source around it) is malformed */
    KP_ERR_LIMIT = -2,   /* a size or nesting limit was hit */
    KP_ERR_NOMEM = -3,   /* out of memory */
    KP_ERR_INVALID = -4, /* bad arguments to kp_parse itself */
};

struct kp_arg {
    char *name;      /* "" when a prototype leaves it out */
    char *type_name; /* base type as written: "float4", "unsigned int", "struct foo" */
    enum kp_arg_kind kind;
    enum kp_access access;
    /* const and volatile on the value, or on the pointed-to type for pointers
     * (as CL_KERNEL_ARG_TYPE_QUALIFIER has it); restrict anywhere. */
    unsigned is_const : 1, is_restrict : 1, is_volatile : 1;
};

struct kp_kernel {
    char *name;
    unsigned nargs;
    struct kp_arg *args;
};

struct kp_program {
    unsigned nkernels; /* in order of first appearance in the source */
    struct kp_kernel *kernels;
};

/*
 * Parses src[0..len) (need not be NUL-terminated, may hold NUL bytes) and
 * stores a new program in *out.  Returns KP_OK, or a negative enum kp_error
 * with *out set to NULL and a one-line message starting "line N: " in err
 * (when err is not NULL and errlen > 0).  Keeps no global state, so it may be
 * called from several threads at once.
 *
 * It is not a preprocessor: object-like #defines are expanded, function-like
 * ones are not, #include is not followed, and #if conditions other than a
 * literal 0 or 1 are not evaluated (every branch is read).  A kernel it could
 * not see is simply absent, so a NULL from kp_find_kernel means "unknown".
 */
int kp_parse(const char *src, size_t len, struct kp_program **out, char *err, size_t errlen);

/* Frees a program from kp_parse; NULL is fine. */
void kp_free(struct kp_program *prog);

/* The kernel called name, or NULL. */
const struct kp_kernel *kp_find_kernel(const struct kp_program *prog, const char *name);

/* Short constant names ("global_ptr", "read_only"), "unknown" when out of range. */
const char *kp_arg_kind_name(enum kp_arg_kind kind);
const char *kp_access_name(enum kp_access access);

#endif
