/*
 * clutil.h: what every OpenCL program of the project (examples/, the
 * benchmark worker in tools/bench) shares: the names of OpenCL error codes,
 * the CL_CHECK macros, strict number parsing, where a device is.
 */
#ifndef VOCL_EXAMPLES_CLUTIL_H
#define VOCL_EXAMPLES_CLUTIL_H

#include <CL/cl.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The name of an OpenCL error code, such as "CL_INVALID_VALUE". */
const char *app_cl_error_name(cl_int err);

/* Says that CALL failed with err at LINE, and exits.  Each program defines
 * its own: the message and exit status are the program's. */
_Noreturn void app_cl_fail(const char *call, cl_int err, int line);

/* CL_CHECK wraps calls that return a cl_int; CL_CHECK_ERR checks the
 * errcode_ret of the clCreate* calls. */
#define CL_CHECK(call)                                                                             \
    do {                                                                                           \
        cl_int check_err_ = (call);                                                                \
        if (check_err_ != CL_SUCCESS)                                                              \
            app_cl_fail(#call, check_err_, __LINE__);                                              \
    } while (0)

#define CL_CHECK_ERR(name, err)                                                                    \
    do {                                                                                           \
        if ((err) != CL_SUCCESS)                                                                   \
            app_cl_fail(name, err, __LINE__);                                                      \
    } while (0)

/* A progress line on stderr for a run of total units ("pairs", "events"):
 * a bar redrawn in place on a terminal, else a line every 10 %; *shown is
 * the percentage last shown (start at -1), last ends the line. */
void app_progress(const char *name, const char *unit, uint64_t done, uint64_t total, bool tty,
                  int *shown, bool last);

/* Strict unsigned parse: the whole string must be a decimal number (strtoull
 * alone would accept "-1", leading spaces and trailing junk). */
bool app_parse_u64(const char *s, uint64_t *out);

/* Whether the device's CL_DEVICE_EXTENSIONS names `name`: a whole token of
 * the space-separated list, so that "cl_khr_fp64" is not found in
 * "cl_khr_fp64_ext". */
bool app_device_has_extension(cl_device_id device, const char *name);

/* The proxy of a device without cl_vocl_device_location: none, it is
 * served by a driver in this process. */
#define APP_PROXY_NONE ((cl_uint)0xffffffffu)

/* Where a device is, from the cl_vocl_device_location extension
 * (CL/cl_ext_vocl.h) where its driver has it.  A device without it is on
 * this node, as every native device is: node "" and proxy APP_PROXY_NONE.
 * 256 bytes hold any DNS host name (at most 253 characters). */
struct app_location {
    bool known; /* the device has the extension */
    char node[256];
    cl_uint proxy;
};

/* Asks the device where it is.  A device without the extension is on this
 * node (loc->node is this host's name), as is one that names it but fails
 * to answer: so a native device and a VOCL device called in-process, side
 * by side, are one node. */
void app_device_location(cl_device_id device, struct app_location *loc);

/* Numbers the nodes of n devices: node[i] is the index of device i's node
 * among the distinct node names, in the order each first appears (so the
 * devices of the first device's node are node 0).  Devices without the
 * extension share this host's node. */
void app_number_nodes(const struct app_location *locs, size_t n, int *node);

#endif
