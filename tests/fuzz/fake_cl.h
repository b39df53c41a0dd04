/*
 * fake_cl.h - a fake native OpenCL library for the request fuzzer: the
 * table the executor calls instead of PoCL's (fake_cl.c says why and how).
 */
#ifndef FAKE_CL_H
#define FAKE_CL_H

#include <stdbool.h>
#include <stddef.h>

#include "fake_gen.h"
#include "protocol.h"
#include "vocl_api.h"

/* Every entry of the table: hand-written (fake_cl.c) or generated (fake_gen.c). */
extern const struct vocl_native_api fake_cl_api;

/* Before an input: one platform with two root devices, and nothing else. */
void fake_cl_begin(void);
/* After an input: runs the commands still pending, aborts naming every
 * object the executor left alive (a leak in a proxy that runs for days),
 * and forgets everything. */
void fake_cl_end(void);

/* --- what the fakes share (the generated ones included) --------------------------------- */

/* Names the entry being called, for the messages of the checks below. */
void fake_enter(const char *fn);
/* An entry the fake does not model: the executor was not expected to call it. */
_Noreturn void fake_unexpected(const char *fn);
/* Checks handle h (aborts unless the fake made it, of type t, and it is
 * still alive); NULL is an error code unless nullable.  Returns err, or the
 * first error met. */
cl_int fake_use(cl_int err, const void *h, enum vocl_type t, bool nullable);
/* The same for an array of n handles (an event wait list: n 0 and NULL agree). */
cl_int fake_use_list(cl_int err, const void *list, cl_uint n, enum vocl_type t);
/* Reads n bytes at p, or a C string, as a driver would (the sanitizers
 * check the reads). */
void fake_read(const void *p, size_t n);
void fake_read_str(const char *s);
/* Walks a 0-terminated property list of (name, value) pairs. */
cl_int fake_read_props(cl_int err, const void *props);
/* Answers an info query with n bytes of data (NULL: zeros). */
cl_int fake_info(cl_int err, size_t size, void *value, size_t *size_ret, const void *data,
                 size_t n);
/* A new object holding a reference to parent (and dev). */
void *fake_new(enum vocl_type t, const void *parent, const void *dev);
/* A command on queue without host memory, after the nwl events of wl
 * (checked already): returns its event. */
void *fake_command(const void *queue, cl_uint nwl, const void *wl);
cl_int fake_retain(const void *h, enum vocl_type t);
cl_int fake_release(const void *h, enum vocl_type t);

#endif
