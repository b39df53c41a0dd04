/*
 * vocl_cl.h - the OpenCL headers, included one way everywhere in VOCL.
 *
 * The build defines CL_TARGET_OPENCL_VERSION=300 and the CL_USE_DEPRECATED_*
 * macros, so every entry point of OpenCL 1.0 to 3.0 is declared.
 */
#ifndef VOCL_CL_H
#define VOCL_CL_H

/* libvocl is built with hidden visibility; the OpenCL entry points are its
 * exports (and the version script keeps everything else local). */
#ifndef CL_API_ENTRY
#define CL_API_ENTRY __attribute__((visibility("default")))
#endif

#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <CL/cl_gl.h>
#include <CL/cl_icd.h>

struct exec_req;

#endif
