/*
 * native.c - finding the native OpenCL library.
 */
#include "native.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

#include "log.h"

static struct vocl_native_api native_api;
static const struct vocl_native_api *native_ok;
static pthread_once_t native_once = PTHREAD_ONCE_INIT;

static void native_load(void)
{
    const char *name = getenv("VOCL_NATIVE_LIB");
    if (!name || !*name)
        name = "libOpenCL.so.1";
    void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        vocl_error("cannot load the native OpenCL library %s: %s", name, dlerror());
        return;
    }
    vocl_native_bind(&native_api, lib);
    if (!native_api.clGetPlatformIDs || !native_api.clGetDeviceIDs) {
        vocl_error("%s is not an OpenCL library", name);
        return;
    }
    native_ok = &native_api;
}

const struct vocl_native_api *vocl_native_get(void)
{
    pthread_once(&native_once, native_load);
    return native_ok;
}
