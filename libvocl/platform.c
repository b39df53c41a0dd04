/*
 * platform.c - the one VOCL platform and its devices.
 *
 * The platform is libvocl's own: it lists the devices of every proxy in a
 * stable order (local passthrough devices first, then proxy rank, then each
 * proxy's native order).  It tells one story about itself: its name, vendor
 * and ICD suffix say VOCL, and its version is "OpenCL X.Y VOCL <version>
 * over <the native platform's version>", X.Y being what the first proxy's
 * native platform supports (so a client that recognises a driver by name,
 * vendor or version sees VOCL, never half of PoCL).  Its other info
 * (profile, extensions, numeric version) is that native platform's; device
 * info comes from the real device, which keeps its own identity.
 *
 * To both lists of extensions VOCL adds its own, cl_vocl_device_location
 * (CL/cl_ext_vocl.h): each device's node (the name its proxy gave in HELLO)
 * and proxy, for runtimes that place work by where devices are.
 */
#include "vocl.h"

#include <CL/cl_ext_vocl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void vocl_warn_once_unsupported(const char *fn)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char seen[16][64];
    static int nseen;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < nseen; i++)
        if (!strcmp(seen[i], fn)) {
            pthread_mutex_unlock(&lock);
            return;
        }
    if (nseen < 16)
        snprintf(seen[nseen++], sizeof(seen[0]), "%s", fn);
    pthread_mutex_unlock(&lock);
    vocl_warn("%s is not available through VOCL (no shared address space, window "
              "system or host-side code across the network): returning its error",
              fn);
}

static cl_int platform_ids(cl_uint num_entries, cl_platform_id *platforms, cl_uint *num_platforms)
{
    if ((num_entries == 0 && platforms) || (!platforms && !num_platforms))
        return CL_INVALID_VALUE;
    cl_int err = vocl_init();
    if (err != CL_SUCCESS)
        return err;
    cl_uint n = vocl.ndevices ? 1 : 0;
    if (num_platforms)
        *num_platforms = n;
    if (platforms && n)
        platforms[0] = (cl_platform_id)vocl.platform;
    return n ? CL_SUCCESS : CL_PLATFORM_NOT_FOUND_KHR;
}

cl_int CL_API_CALL vocl_hand_clGetPlatformIDs(cl_uint num_entries, cl_platform_id *platforms,
                                                 cl_uint *num_platforms)
{
    if (vocl_initialising()) {
        /* hwloc inside MPI_Init: answer from the native library. */
        const struct vocl_native_api *cl = vocl_native_get();
        return cl ? cl->clGetPlatformIDs(num_entries, platforms, num_platforms)
                  : CL_PLATFORM_NOT_FOUND_KHR;
    }
    return platform_ids(num_entries, platforms, num_platforms);
}

CL_API_ENTRY cl_int CL_API_CALL clIcdGetPlatformIDsKHR(cl_uint num_entries,
                                                       cl_platform_id *platforms,
                                                       cl_uint *num_platforms);
CL_API_ENTRY cl_int CL_API_CALL clIcdGetPlatformIDsKHR(cl_uint num_entries,
                                                       cl_platform_id *platforms,
                                                       cl_uint *num_platforms)
{
    if (vocl_initialising())
        return CL_PLATFORM_NOT_FOUND_KHR; /* never hand the loader back to itself */
    return platform_ids(num_entries, platforms, num_platforms);
}

static bool is_our_platform(cl_platform_id p)
{
    return p == NULL || vocl_lookup(p, VOCL_T_PLATFORM) != NULL;
}

static struct vocl_proxy *first_live_proxy(void)
{
    for (int i = 0; i < vocl.nproxies; i++)
        if (!vocl.proxies[i]->dead && vocl.proxies[i]->ndev)
            return vocl.proxies[i];
    return NULL;
}

/* The first live proxy's native platform info, kept with VOCL's platform
 * once known: applications ask for it often (PyOpenCL hundreds of times). */
static cl_int native_platform_info(cl_platform_info param_name, size_t param_value_size,
                                   void *param_value, size_t *param_value_size_ret)
{
    struct vocl_call c;
    cl_int err;
    uint32_t gen;
    if (vocl_info_cached(vocl.platform, VOCL_OP_clGetPlatformInfo, param_name, 0, param_value_size,
                         param_value, param_value_size_ret, &err, &gen))
        return err;
    vocl_call_init(&c);
    c.px = first_live_proxy();
    if (!c.px) {
        vocl_call_end(&c);
        return CL_INVALID_PLATFORM;
    }
    if (vocl_call_start(&c, VOCL_OP_clGetPlatformInfo) == 0) {
        vocl_enc_clGetPlatformInfo_req(c.w, &(struct vocl_msg_clGetPlatformInfo_req){
                                                .param_name = param_name,
                                                .param_value_size = param_value_size,
                                                .want_value = param_value != NULL});
        if (vocl_call_send(&c) == 0)
            vocl_call_get_info_kept(&c, vocl.platform, VOCL_OP_clGetPlatformInfo, param_name, gen,
                                    param_value_size, param_value, param_value_size_ret);
    }
    vocl_call_end(&c);
    return c.err;
}

/* Set while this thread asks the driver a device query that the hook below
 * answers itself (the lists of extensions): the hook lets it through. */
static _Thread_local bool asking_driver;

/* The driver's whole answer to a query of device d (NULL: of the native
 * platform), into *out (malloc'd, *len bytes): its size, then its value. */
static cl_int native_answer(struct vocl_obj *d, cl_uint param, void **out, size_t *len)
{
    *out = NULL;
    asking_driver = true;
    cl_int err = d ? clGetDeviceInfo((cl_device_id)d, param, 0, NULL, len)
                   : native_platform_info(param, 0, NULL, len);
    if (err == CL_SUCCESS && !(*out = malloc(*len ? *len : 1)))
        err = CL_OUT_OF_HOST_MEMORY;
    if (err == CL_SUCCESS)
        err = d ? clGetDeviceInfo((cl_device_id)d, param, *len, *out, NULL)
                : native_platform_info(param, *len, *out, NULL);
    asking_driver = false;
    if (err != CL_SUCCESS) {
        free(*out);
        *out = NULL;
    }
    return err;
}

/* An extensions answer with cl_vocl_device_location added, into *out
 * (malloc'd; *len in and out): a string of names separated by spaces, or,
 * versioned (the _WITH_VERSION queries), an array of cl_name_version. */
static cl_int with_location(bool versioned, const void *native, size_t *len, void **out)
{
    static const char name[] = CL_VOCL_DEVICE_LOCATION_EXTENSION_NAME;
    if (versioned) {
        size_t n = *len / sizeof(cl_name_version);
        cl_name_version *v = malloc((n + 1) * sizeof(*v));
        if (!v)
            return CL_OUT_OF_HOST_MEMORY;
        memcpy(v, native, n * sizeof(*v));
        v[n] = (cl_name_version){.version = CL_MAKE_VERSION(1, 0, 0)};
        memcpy(v[n].name, name, sizeof(name));
        *out = v;
        *len = (n + 1) * sizeof(*v);
        return CL_SUCCESS;
    }
    size_t k = strnlen(native, *len);
    while (k && ((const char *)native)[k - 1] == ' ')
        k--;
    char *t = malloc(k + 1 + sizeof(name));
    if (!t)
        return CL_OUT_OF_HOST_MEMORY;
    memcpy(t, native, k);
    if (k)
        t[k++] = ' ';
    memcpy(t + k, name, sizeof(name));
    *out = t;
    *len = k + sizeof(name);
    return CL_SUCCESS;
}

/* "OpenCL X.Y VOCL <version> over <native version>" (the spec's form:
 * "OpenCL", the version it supports, then anything). */
static cl_int version_string(char *out, size_t size)
{
    char native[512];
    cl_int err = native_platform_info(CL_PLATFORM_VERSION, sizeof(native), native, NULL);
    if (err != CL_SUCCESS)
        return err;
    native[sizeof(native) - 1] = '\0';
    int major = 1, minor = 2, used = 0;
    if (sscanf(native, "OpenCL %d.%d %n", &major, &minor, &used) < 2)
        used = 0;
    snprintf(out, size, "OpenCL %d.%d VOCL " VOCL_VERSION " over %s", major, minor,
             native + used);
    return CL_SUCCESS;
}

cl_int CL_API_CALL vocl_hand_clGetPlatformInfo(cl_platform_id platform,
                                                  cl_platform_info param_name,
                                                  size_t param_value_size, void *param_value,
                                                  size_t *param_value_size_ret)
{
    cl_int err = vocl_init();
    if (err != CL_SUCCESS)
        return err;
    if (!is_our_platform(platform))
        return CL_INVALID_PLATFORM;
    char version[640];
    const char *own = NULL;
    switch (param_name) {
    case CL_PLATFORM_EXTENSIONS:
    case CL_PLATFORM_EXTENSIONS_WITH_VERSION: {
        void *native, *ours = NULL;
        size_t len;
        err = native_answer(NULL, param_name, &native, &len);
        if (err == CL_SUCCESS)
            err = with_location(param_name == CL_PLATFORM_EXTENSIONS_WITH_VERSION, native, &len,
                                &ours);
        free(native);
        if (err == CL_SUCCESS)
            err = vocl_info_answer(ours, len, param_value_size, param_value, param_value_size_ret);
        free(ours);
        return err;
    }
    case CL_PLATFORM_NAME:
    case CL_PLATFORM_ICD_SUFFIX_KHR: own = "VOCL"; break;
    case CL_PLATFORM_VENDOR: own = "The VOCL project"; break;
    case CL_PLATFORM_VERSION:
        if ((err = version_string(version, sizeof(version))) != CL_SUCCESS)
            return err;
        own = version;
        break;
    default:
        return native_platform_info(param_name, param_value_size, param_value,
                                    param_value_size_ret);
    }
    return vocl_info_answer(own, strlen(own) + 1, param_value_size, param_value,
                            param_value_size_ret);
}

cl_int CL_API_CALL vocl_hand_clGetDeviceIDs(cl_platform_id platform, cl_device_type device_type,
                                               cl_uint num_entries, cl_device_id *devices,
                                               cl_uint *num_devices)
{
    cl_int err = vocl_init();
    if (err != CL_SUCCESS)
        return err;
    if (!is_our_platform(platform))
        return CL_INVALID_PLATFORM;
    if ((num_entries == 0 && devices) || (!devices && !num_devices))
        return CL_INVALID_VALUE;
    const cl_device_type known = CL_DEVICE_TYPE_DEFAULT | CL_DEVICE_TYPE_CPU |
                                 CL_DEVICE_TYPE_GPU | CL_DEVICE_TYPE_ACCELERATOR |
                                 CL_DEVICE_TYPE_CUSTOM;
    if (device_type != CL_DEVICE_TYPE_ALL && (device_type & ~known))
        return CL_INVALID_DEVICE_TYPE;

    cl_uint n = 0;
    for (cl_uint i = 0; i < vocl.ndevices; i++) {
        struct vocl_obj *d = vocl.devices[i];
        bool match = device_type == CL_DEVICE_TYPE_ALL ||
                     (vocl_as_device(d)->dev_type & device_type) ||
                     ((device_type & CL_DEVICE_TYPE_DEFAULT) && n == 0);
        if (!match || d->px->dead)
            continue;
        if (devices && n < num_entries)
            devices[n] = (cl_device_id)d;
        n++;
        if (device_type == CL_DEVICE_TYPE_DEFAULT)
            break;
    }
    if (num_devices)
        *num_devices = n;
    return n ? CL_SUCCESS : CL_DEVICE_NOT_FOUND;
}

/* A device's extensions with VOCL's own added; kept (under a key of its
 * own: the driver's answer is kept under key 0 by the generated path). */
static cl_int device_extensions(struct vocl_obj *d, cl_device_info param, size_t size, void *value,
                                size_t *size_ret)
{
    enum { OURS = 1 };
    cl_int err;
    uint32_t gen;
    if (vocl_info_cached(d, VOCL_OP_clGetDeviceInfo, param, OURS, size, value, size_ret, &err,
                         &gen))
        return err;
    void *native, *ours = NULL;
    size_t len;
    err = native_answer(d, param, &native, &len);
    if (err == CL_SUCCESS)
        err = with_location(param == CL_DEVICE_EXTENSIONS_WITH_VERSION, native, &len, &ours);
    free(native);
    if (err != CL_SUCCESS)
        return err;
    vocl_info_keep(d, VOCL_OP_clGetDeviceInfo, param, OURS, gen, len,
                   &(struct vocl_bytes){ours, len});
    err = vocl_info_answer(ours, len, size, value, size_ret);
    free(ours);
    return err;
}

int vocl_hook_clGetDeviceInfo(cl_device_id device, cl_device_info param_name,
                              size_t param_value_size, void *param_value,
                              size_t *param_value_size_ret, cl_int *ret)
{
    struct vocl_obj *d = vocl_lookup(device, VOCL_T_DEVICE);
    if (!d || asking_driver)
        return 0; /* the generated path reports the invalid handle, or asks */
    const void *h;
    cl_device_svm_capabilities none = 0;
    switch (param_name) {
    case CL_DEVICE_EXTENSIONS:
    case CL_DEVICE_EXTENSIONS_WITH_VERSION:
        *ret = device_extensions(d, param_name, param_value_size, param_value,
                                 param_value_size_ret);
        return 1;
    case CL_DEVICE_NODE_NAME_VOCL:
        *ret = vocl_info_answer(d->px->node, strlen(d->px->node) + 1, param_value_size,
                                param_value, param_value_size_ret);
        return 1;
    case CL_DEVICE_PROXY_VOCL: {
        cl_uint proxy = (cl_uint)d->px->index;
        *ret = vocl_info_answer(&proxy, sizeof(proxy), param_value_size, param_value,
                                param_value_size_ret);
        return 1;
    }
    case CL_DEVICE_PLATFORM:
        h = vocl.platform;
        break;
    case CL_DEVICE_PARENT_DEVICE:
        h = d->parent;
        break;
    case CL_DEVICE_SVM_CAPABILITIES:
        /* No shared virtual memory across the network (see cl_api.def). */
        *ret = vocl_info_answer(&none, sizeof(none), param_value_size, param_value,
                                param_value_size_ret);
        return 1;
    case CL_DEVICE_EXECUTION_CAPABILITIES: {
        /* OpenCL kernels only: a native kernel is a host function pointer,
         * which means nothing in the proxy (clEnqueueNativeKernel). */
        cl_device_exec_capabilities caps = CL_EXEC_KERNEL;
        *ret = vocl_info_answer(&caps, sizeof(caps), param_value_size, param_value,
                                param_value_size_ret);
        return 1;
    }
    default:
        return 0;
    }
    *ret = vocl_info_answer(&h, sizeof(h), param_value_size, param_value, param_value_size_ret);
    return 1;
}

/* Partition property lists: 0-terminated, except BY_COUNTS, whose counts
 * end with CL_DEVICE_PARTITION_BY_COUNTS_LIST_END before the final 0. */
static size_t partition_props_len(const cl_device_partition_property *p)
{
    size_t n = 0;
    if (!p)
        return 0;
    while (p[n] && n < 250) {
        if (p[n] == CL_DEVICE_PARTITION_BY_COUNTS) {
            n++;
            while (p[n] != CL_DEVICE_PARTITION_BY_COUNTS_LIST_END && n < 250)
                n++;
            n++;
        } else {
            n += 2;
        }
    }
    return n + 1;
}

cl_int CL_API_CALL vocl_hand_clCreateSubDevices(cl_device_id in_device,
                                                   const cl_device_partition_property *properties,
                                                   cl_uint num_devices, cl_device_id *out_devices,
                                                   cl_uint *num_devices_ret)
{
    struct vocl_call c;
    vocl_call_init(&c);
    struct vocl_obj *d = vocl_call_h(&c, in_device, VOCL_T_DEVICE, 0);
    if (!c.err && (!properties || (out_devices && num_devices == 0)))
        vocl_call_error(&c, CL_INVALID_VALUE);
    uint64_t first = 0;
    cl_uint nids = out_devices ? num_devices : 0;
    if (vocl_call_start(&c, VOCL_OP_clCreateSubDevices) == 0) {
        size_t n = partition_props_len(properties);
        first = atomic_fetch_add(&c.px->next_id, nids);
        uint64_t *vals = malloc((n + nids) * sizeof(*vals) + 1);
        if (!vals)
            vocl_call_error(&c, CL_OUT_OF_HOST_MEMORY);
        for (size_t i = 0; vals && i < n; i++)
            vals[i] = i + 1 == n ? 0 : (uint64_t)properties[i];
        for (cl_uint i = 0; vals && i < nids; i++)
            vals[n + i] = first + i;
        if (vals)
            vocl_enc_clCreateSubDevices_req(
                c.w, &(struct vocl_msg_clCreateSubDevices_req){
                         .in_device = d->id,
                         .properties = {.n = (uint32_t)n, .v = vals},
                         .num_devices = num_devices,
                         .new_ids = {.n = nids, .v = vals + n}});
        free(vals);
        vocl_call_send(&c);
    }
    if (c.err == CL_SUCCESS) {
        struct vocl_msg_clCreateSubDevices_rep rep;
        vocl_dec_clCreateSubDevices_rep(&c.r, &rep);
        cl_uint got = rep.num_devices_ret;
        if (num_devices_ret)
            *num_devices_ret = got;
        for (cl_uint i = 0; i < got && i < nids; i++) {
            struct vocl_obj *sd = vocl_call_new_obj(&c, VOCL_T_DEVICE, first + i, NULL, d);
            if (sd)
                vocl_as_device(sd)->dev_type = vocl_as_device(d)->dev_type;
            out_devices[i] = (cl_device_id)sd;
        }
    }
    vocl_call_end(&c);
    return c.err;
}

void * CL_API_CALL vocl_hand_clGetExtensionFunctionAddressForPlatform(cl_platform_id platform,
                                                                        const char *func_name)
{
    typedef void (*fn_t)(void);
    static const struct {
        const char *name;
        fn_t fn;
    } table[] = {
        {"clIcdGetPlatformIDsKHR", (fn_t)clIcdGetPlatformIDsKHR},
        {"clGetKernelSubGroupInfoKHR", (fn_t)clGetKernelSubGroupInfoKHR},
    };
    if (!func_name || !is_our_platform(platform))
        return NULL;
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (!strcmp(func_name, table[i].name)) {
            void *p; /* POSIX (dlsym) lets function pointers travel as void * */
            memcpy(&p, &table[i].fn, sizeof(p));
            return p;
        }
    return NULL;
}

void * CL_API_CALL vocl_hand_clGetExtensionFunctionAddress(const char *func_name)
{
    return clGetExtensionFunctionAddressForPlatform(NULL, func_name);
}

cl_int CL_API_CALL vocl_hand_clUnloadCompiler(void)
{
    return CL_SUCCESS;
}

cl_int CL_API_CALL vocl_hand_clUnloadPlatformCompiler(cl_platform_id platform)
{
    return platform && is_our_platform(platform) ? CL_SUCCESS : CL_INVALID_PLATFORM;
}
