/*
 * native.h - the native OpenCL library, reached through a function table so
 * that code linked into libvocl never calls libvocl's own exports by mistake.
 */
#ifndef VOCL_NATIVE_H
#define VOCL_NATIVE_H

#include "vocl_api.h"

/* Fills api from an already dlopen()ed library. */
void vocl_native_bind(struct vocl_native_api *api, void *lib);
/* dlopen()s the native library (VOCL_NATIVE_LIB, default libOpenCL.so.1)
 * once and returns its table, or NULL with a message on stderr. */
const struct vocl_native_api *vocl_native_get(void);

#endif
