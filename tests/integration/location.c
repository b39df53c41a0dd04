/*
 * location.c - what cl_vocl_device_location says (CL/cl_ext_vocl.h): a
 * line per device of the first platform, "device I: node NAME proxy P", or
 * "device I: no cl_vocl_device_location".  Exits 1 where the answers do
 * not hold together: the platform lists the extension exactly when its
 * devices do, the versioned lists name it too, size queries give the
 * answers' sizes, and a buffer one byte short is refused.
 */
#include <CL/cl.h>
#include <CL/cl_ext_vocl.h>
#include <stdbool.h>
#include <string.h>

#include "cl_check.h"

#define FAIL(...) (fprintf(stderr, "location: " __VA_ARGS__), fputc('\n', stderr), exit(1))

/* Whether a space-separated list of names has this one (not as a prefix). */
static bool has_name(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; (p = strstr(p, name)) != NULL; p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return true;
    return false;
}

static bool versioned_has(const cl_name_version *v, size_t bytes, const char *name)
{
    for (size_t i = 0; i < bytes / sizeof(*v); i++)
        if (!strcmp(v[i].name, name))
            return true;
    return false;
}

int main(void)
{
    const char *ext = CL_VOCL_DEVICE_LOCATION_EXTENSION_NAME;
    cl_platform_id platform;
    cl_device_id devs[64];
    cl_uint n = first_devices(devs, 64);
    CHECK(clGetPlatformIDs(1, &platform, NULL));
    char list[8192];
    cl_name_version versioned[256];
    size_t bytes;
    size_t len = 0;
    CHECK(clGetPlatformInfo(platform, CL_PLATFORM_EXTENSIONS, sizeof(list), list, &len));
    bool platform_has = has_name(list, ext);
    if (len != strlen(list) + 1 ||
        clGetPlatformInfo(platform, CL_PLATFORM_EXTENSIONS, len - 1, list, NULL) !=
            CL_INVALID_VALUE)
        FAIL("the platform's extensions: size %zu for %zu characters, or a buffer one byte "
             "short was not refused", len, strlen(list));
    if (clGetPlatformInfo(platform, CL_PLATFORM_EXTENSIONS_WITH_VERSION, sizeof(versioned),
                          versioned, &bytes) == CL_SUCCESS &&
        versioned_has(versioned, bytes, ext) != platform_has)
        FAIL("the platform's two lists of extensions disagree on %s", ext);
    for (cl_uint i = 0; i < n; i++) {
        CHECK(clGetDeviceInfo(devs[i], CL_DEVICE_EXTENSIONS, sizeof(list), list, &len));
        if (len != strlen(list) + 1 ||
            clGetDeviceInfo(devs[i], CL_DEVICE_EXTENSIONS, len - 1, list, NULL) !=
                CL_INVALID_VALUE)
            FAIL("device %u's extensions: size %zu for %zu characters, or a buffer one byte "
                 "short was not refused", i, len, strlen(list));
        CHECK(clGetDeviceInfo(devs[i], CL_DEVICE_EXTENSIONS, sizeof(list), list, NULL));
        if (!has_name(list, ext)) {
            if (platform_has)
                FAIL("device %u lacks %s, which its platform lists", i, ext);
            printf("device %u: no %s\n", i, ext);
            continue;
        }
        if (!platform_has)
            FAIL("device %u lists %s, its platform does not", i, ext);
        if (clGetDeviceInfo(devs[i], CL_DEVICE_EXTENSIONS_WITH_VERSION, sizeof(versioned),
                            versioned, &bytes) == CL_SUCCESS &&
            !versioned_has(versioned, bytes, ext))
            FAIL("device %u: %s is not in CL_DEVICE_EXTENSIONS_WITH_VERSION", i, ext);
        char node[256];
        size_t size = 0;
        cl_uint proxy;
        CHECK(clGetDeviceInfo(devs[i], CL_DEVICE_NODE_NAME_VOCL, 0, NULL, &size));
        CHECK(clGetDeviceInfo(devs[i], CL_DEVICE_NODE_NAME_VOCL, sizeof(node), node, NULL));
        if (size != strlen(node) + 1 || size < 2)
            FAIL("device %u: node \"%s\", but a size query says %zu bytes", i, node, size);
        if (clGetDeviceInfo(devs[i], CL_DEVICE_NODE_NAME_VOCL, size - 1, node, NULL) !=
            CL_INVALID_VALUE)
            FAIL("device %u: a buffer one byte short was not refused", i);
        CHECK(clGetDeviceInfo(devs[i], CL_DEVICE_PROXY_VOCL, sizeof(proxy), &proxy, &size));
        if (size != sizeof(cl_uint))
            FAIL("device %u: CL_DEVICE_PROXY_VOCL is %zu bytes", i, size);
        printf("device %u: node %s proxy %u\n", i, node, proxy);
    }
    return 0;
}
