/*
 * cl_ext_vocl.h - VOCL's OpenCL extension: where a device lives.
 *
 * cl_vocl_device_location.  A device whose CL_DEVICE_EXTENSIONS names it
 * answers two more clGetDeviceInfo queries:
 *
 *   CL_DEVICE_NODE_NAME_VOCL  char[]   the host name of the node the device
 *                                      is on (that of its proxy; for a device
 *                                      called in-process, this node's)
 *   CL_DEVICE_PROXY_VOCL      cl_uint  the proxy that serves it: devices with
 *                                      the same number share one proxy process
 *                                      (numbered from 0 in this process; the
 *                                      in-process devices have a number too)
 *
 * A device of another driver, without the extension, is on the
 * application's own node, as every native device is.  Programs ask for the
 * extension as they would for cl_khr_fp64 and stay ordinary OpenCL
 * programs.  The enumerants are VOCL's own, not registered with Khronos:
 * they lie outside every range the Khronos headers use.
 */
#ifndef CL_EXT_VOCL_H
#define CL_EXT_VOCL_H

#include <CL/cl.h>

#define cl_vocl_device_location 1
#define CL_VOCL_DEVICE_LOCATION_EXTENSION_NAME "cl_vocl_device_location"

/* cl_device_info */
#define CL_DEVICE_NODE_NAME_VOCL 0x5E00
#define CL_DEVICE_PROXY_VOCL 0x5E01

#endif
