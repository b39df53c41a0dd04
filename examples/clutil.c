/* clutil.c: see clutil.h. */
#undef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#include "clutil.h"

#include <CL/cl_ext.h> /* CL_PLATFORM_NOT_FOUND_KHR */
#include <CL/cl_ext_vocl.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *app_cl_error_name(cl_int err)
{
#define ERR_CASE(e)                                                                                \
    case e:                                                                                        \
        return #e;
    switch (err) {
        ERR_CASE(CL_SUCCESS)
        ERR_CASE(CL_DEVICE_NOT_FOUND)
        ERR_CASE(CL_DEVICE_NOT_AVAILABLE)
        ERR_CASE(CL_COMPILER_NOT_AVAILABLE)
        ERR_CASE(CL_MEM_OBJECT_ALLOCATION_FAILURE)
        ERR_CASE(CL_OUT_OF_RESOURCES)
        ERR_CASE(CL_OUT_OF_HOST_MEMORY)
        ERR_CASE(CL_PROFILING_INFO_NOT_AVAILABLE)
        ERR_CASE(CL_MEM_COPY_OVERLAP)
        ERR_CASE(CL_IMAGE_FORMAT_MISMATCH)
        ERR_CASE(CL_IMAGE_FORMAT_NOT_SUPPORTED)
        ERR_CASE(CL_BUILD_PROGRAM_FAILURE)
        ERR_CASE(CL_MAP_FAILURE)
        ERR_CASE(CL_MISALIGNED_SUB_BUFFER_OFFSET)
        ERR_CASE(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        ERR_CASE(CL_COMPILE_PROGRAM_FAILURE)
        ERR_CASE(CL_LINKER_NOT_AVAILABLE)
        ERR_CASE(CL_LINK_PROGRAM_FAILURE)
        ERR_CASE(CL_DEVICE_PARTITION_FAILED)
        ERR_CASE(CL_KERNEL_ARG_INFO_NOT_AVAILABLE)
        ERR_CASE(CL_INVALID_VALUE)
        ERR_CASE(CL_INVALID_DEVICE_TYPE)
        ERR_CASE(CL_INVALID_PLATFORM)
        ERR_CASE(CL_INVALID_DEVICE)
        ERR_CASE(CL_INVALID_CONTEXT)
        ERR_CASE(CL_INVALID_QUEUE_PROPERTIES)
        ERR_CASE(CL_INVALID_COMMAND_QUEUE)
        ERR_CASE(CL_INVALID_HOST_PTR)
        ERR_CASE(CL_INVALID_MEM_OBJECT)
        ERR_CASE(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
        ERR_CASE(CL_INVALID_IMAGE_SIZE)
        ERR_CASE(CL_INVALID_SAMPLER)
        ERR_CASE(CL_INVALID_BINARY)
        ERR_CASE(CL_INVALID_BUILD_OPTIONS)
        ERR_CASE(CL_INVALID_PROGRAM)
        ERR_CASE(CL_INVALID_PROGRAM_EXECUTABLE)
        ERR_CASE(CL_INVALID_KERNEL_NAME)
        ERR_CASE(CL_INVALID_KERNEL_DEFINITION)
        ERR_CASE(CL_INVALID_KERNEL)
        ERR_CASE(CL_INVALID_ARG_INDEX)
        ERR_CASE(CL_INVALID_ARG_VALUE)
        ERR_CASE(CL_INVALID_ARG_SIZE)
        ERR_CASE(CL_INVALID_KERNEL_ARGS)
        ERR_CASE(CL_INVALID_WORK_DIMENSION)
        ERR_CASE(CL_INVALID_WORK_GROUP_SIZE)
        ERR_CASE(CL_INVALID_WORK_ITEM_SIZE)
        ERR_CASE(CL_INVALID_GLOBAL_OFFSET)
        ERR_CASE(CL_INVALID_EVENT_WAIT_LIST)
        ERR_CASE(CL_INVALID_EVENT)
        ERR_CASE(CL_INVALID_OPERATION)
        ERR_CASE(CL_INVALID_GL_OBJECT)
        ERR_CASE(CL_INVALID_BUFFER_SIZE)
        ERR_CASE(CL_INVALID_MIP_LEVEL)
        ERR_CASE(CL_INVALID_GLOBAL_WORK_SIZE)
        ERR_CASE(CL_INVALID_PROPERTY)
        ERR_CASE(CL_INVALID_IMAGE_DESCRIPTOR)
        ERR_CASE(CL_INVALID_COMPILER_OPTIONS)
        ERR_CASE(CL_INVALID_LINKER_OPTIONS)
        ERR_CASE(CL_INVALID_DEVICE_PARTITION_COUNT)
        ERR_CASE(CL_PLATFORM_NOT_FOUND_KHR)
    /* Defined by cl.h only for targets above 1.2, which the examples are
     * not, but a newer runtime may still return them. */
    case -69:
        return "CL_INVALID_PIPE_SIZE";
    case -70:
        return "CL_INVALID_DEVICE_QUEUE";
    case -71:
        return "CL_INVALID_SPEC_ID";
    case -72:
        return "CL_MAX_SIZE_RESTRICTION_EXCEEDED";
    default:
        return "unknown OpenCL error";
    }
#undef ERR_CASE
}

bool app_parse_u64(const char *s, uint64_t *out)
{
    if (s[0] < '0' || s[0] > '9')
        return false;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

void app_progress(const char *name, const char *unit, uint64_t done, uint64_t total, bool tty,
                  int *shown, bool last)
{
    double frac = total ? (double)done / (double)total : 1.0;
    int percent = (int)(frac * 100.0);
    if (tty) {
        char bar[41];
        int full = (int)(frac * 40.0);
        for (int k = 0; k < 40; k++)
            bar[k] = k < full ? '#' : ' ';
        bar[40] = '\0';
        fprintf(stderr, "\r%s: [%s] %3d%% %" PRIu64 "/%" PRIu64 " %s%s", name, bar, percent, done,
                total, unit, last ? "\n" : "");
    } else if (percent / 10 > *shown / 10 || last) {
        fprintf(stderr, "%s: %d%% of %" PRIu64 " %s\n", name, percent, total, unit);
    }
    *shown = percent;
}

bool app_device_has_extension(cl_device_id device, const char *name)
{
    size_t size = 0;
    if (clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, 0, NULL, &size) != CL_SUCCESS || size == 0)
        return false;
    char *list = malloc(size + 1);
    if (!list)
        return false;
    bool found = false;
    if (clGetDeviceInfo(device, CL_DEVICE_EXTENSIONS, size, list, NULL) == CL_SUCCESS) {
        list[size] = '\0';
        size_t len = strlen(name);
        /* Tokens are separated by spaces; drivers differ in leading and
         * trailing ones. */
        for (const char *at = list; *at && !found;) {
            at += strspn(at, " ");
            size_t token = strcspn(at, " ");
            found = token == len && len > 0 && memcmp(at, name, len) == 0;
            at += token;
        }
    }
    free(list);
    return found;
}

/* This host's name: the node of every device without the extension. */
static void this_node(char *node, size_t size)
{
    if (gethostname(node, size - 1) != 0)
        node[0] = '\0';
    node[size - 1] = '\0';
}

void app_device_location(cl_device_id device, struct app_location *loc)
{
    *loc = (struct app_location){.known = false, .proxy = APP_PROXY_NONE};
    this_node(loc->node, sizeof(loc->node));
    if (!app_device_has_extension(device, CL_VOCL_DEVICE_LOCATION_EXTENSION_NAME))
        return;
    size_t size = 0;
    cl_uint proxy = 0;
    if (clGetDeviceInfo(device, CL_DEVICE_NODE_NAME_VOCL, 0, NULL, &size) != CL_SUCCESS ||
        size == 0 || size > sizeof(loc->node) ||
        clGetDeviceInfo(device, CL_DEVICE_NODE_NAME_VOCL, size, loc->node, NULL) != CL_SUCCESS ||
        clGetDeviceInfo(device, CL_DEVICE_PROXY_VOCL, sizeof(proxy), &proxy, NULL) !=
            CL_SUCCESS) {
        this_node(loc->node, sizeof(loc->node));
        return;
    }
    loc->node[size - 1] = '\0'; /* the answer counts its terminator */
    loc->proxy = proxy;
    loc->known = true;
}

void app_number_nodes(const struct app_location *locs, size_t n, int *node)
{
    int distinct = 0;
    for (size_t i = 0; i < n; i++) {
        node[i] = -1;
        /* Quadratic, but over a device list: tens, not thousands. */
        for (size_t j = 0; j < i && node[i] < 0; j++) {
            if (strcmp(locs[j].node, locs[i].node) == 0)
                node[i] = node[j];
        }
        if (node[i] < 0)
            node[i] = distinct++;
    }
}
