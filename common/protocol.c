/*
 * protocol.c - names and error codes shared by libvocl and voclproxyd.
 */
#include "protocol.h"

#include "vocl_cl.h"

const char *vocl_type_name(enum vocl_type t)
{
    switch (t) {
    case VOCL_T_PLATFORM: return "platform";
    case VOCL_T_DEVICE: return "device";
    case VOCL_T_CONTEXT: return "context";
    case VOCL_T_QUEUE: return "command queue";
    case VOCL_T_MEM: return "memory object";
    case VOCL_T_SAMPLER: return "sampler";
    case VOCL_T_PROGRAM: return "program";
    case VOCL_T_KERNEL: return "kernel";
    case VOCL_T_EVENT: return "event";
    case VOCL_T_NONE:
    case VOCL_T_COUNT: break;
    }
    return "object";
}

int vocl_type_invalid_err(enum vocl_type t)
{
    switch (t) {
    case VOCL_T_PLATFORM: return CL_INVALID_PLATFORM;
    case VOCL_T_DEVICE: return CL_INVALID_DEVICE;
    case VOCL_T_CONTEXT: return CL_INVALID_CONTEXT;
    case VOCL_T_QUEUE: return CL_INVALID_COMMAND_QUEUE;
    case VOCL_T_MEM: return CL_INVALID_MEM_OBJECT;
    case VOCL_T_SAMPLER: return CL_INVALID_SAMPLER;
    case VOCL_T_PROGRAM: return CL_INVALID_PROGRAM;
    case VOCL_T_KERNEL: return CL_INVALID_KERNEL;
    case VOCL_T_EVENT: return CL_INVALID_EVENT;
    case VOCL_T_NONE:
    case VOCL_T_COUNT: break;
    }
    return CL_INVALID_VALUE;
}

static size_t channel_count(cl_channel_order o)
{
    switch (o) {
    case CL_R: case CL_A: case CL_INTENSITY: case CL_LUMINANCE: case CL_DEPTH: case CL_Rx:
        return 1;
    case CL_RG: case CL_RA: case CL_RGx: case CL_DEPTH_STENCIL:
        return 2;
    case CL_RGB: case CL_RGBx: case CL_sRGB: case CL_sRGBx:
        return 3;
    default:
        return 4;
    }
}

size_t vocl_image_pixel_size(unsigned order, unsigned type)
{
    switch (type) {
    case CL_UNORM_SHORT_565: case CL_UNORM_SHORT_555: return 2;
    case CL_UNORM_INT_101010: case CL_UNORM_INT_101010_2: return 4;
    case CL_SNORM_INT8: case CL_UNORM_INT8: case CL_SIGNED_INT8: case CL_UNSIGNED_INT8:
        return channel_count(order);
    case CL_SNORM_INT16: case CL_UNORM_INT16: case CL_SIGNED_INT16: case CL_UNSIGNED_INT16:
    case CL_HALF_FLOAT:
        return 2 * channel_count(order);
    default: /* 32-bit channels */
        return 4 * channel_count(order);
    }
}

/* a * b, or SIZE_MAX where it overflows: no host memory is that large. */
static size_t mul_sat(size_t a, size_t b)
{
    size_t r;
    return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

/* Bytes of host memory an image of this description is created from. */
size_t vocl_image_host_size(const cl_image_format *f, const cl_image_desc *d)
{
    size_t elem = vocl_image_pixel_size(f->image_channel_order, f->image_channel_data_type);
    size_t row = d->image_row_pitch ? d->image_row_pitch : mul_sat(d->image_width, elem);
    size_t h = d->image_height ? d->image_height : 1;
    switch (d->image_type) {
    case CL_MEM_OBJECT_IMAGE1D_ARRAY:
        return mul_sat(d->image_slice_pitch ? d->image_slice_pitch : row, d->image_array_size);
    case CL_MEM_OBJECT_IMAGE2D_ARRAY:
        return mul_sat(d->image_slice_pitch ? d->image_slice_pitch : mul_sat(row, h),
                       d->image_array_size);
    case CL_MEM_OBJECT_IMAGE3D:
        return mul_sat(d->image_slice_pitch ? d->image_slice_pitch : mul_sat(row, h),
                       d->image_depth ? d->image_depth : 1);
    case CL_MEM_OBJECT_IMAGE2D:
        return mul_sat(row, h);
    default:
        return row;
    }
}

#define VOCL_ERRORS(X)                                                                             \
    X(CL_SUCCESS) X(CL_DEVICE_NOT_FOUND) X(CL_DEVICE_NOT_AVAILABLE) X(CL_COMPILER_NOT_AVAILABLE)   \
    X(CL_MEM_OBJECT_ALLOCATION_FAILURE) X(CL_OUT_OF_RESOURCES) X(CL_OUT_OF_HOST_MEMORY)            \
    X(CL_PROFILING_INFO_NOT_AVAILABLE) X(CL_MEM_COPY_OVERLAP) X(CL_IMAGE_FORMAT_MISMATCH)          \
    X(CL_IMAGE_FORMAT_NOT_SUPPORTED) X(CL_BUILD_PROGRAM_FAILURE) X(CL_MAP_FAILURE)                 \
    X(CL_MISALIGNED_SUB_BUFFER_OFFSET) X(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)             \
    X(CL_COMPILE_PROGRAM_FAILURE) X(CL_LINKER_NOT_AVAILABLE) X(CL_LINK_PROGRAM_FAILURE)            \
    X(CL_DEVICE_PARTITION_FAILED) X(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) X(CL_INVALID_VALUE)          \
    X(CL_INVALID_DEVICE_TYPE) X(CL_INVALID_PLATFORM) X(CL_INVALID_DEVICE) X(CL_INVALID_CONTEXT)    \
    X(CL_INVALID_QUEUE_PROPERTIES) X(CL_INVALID_COMMAND_QUEUE) X(CL_INVALID_HOST_PTR)              \
    X(CL_INVALID_MEM_OBJECT) X(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR) X(CL_INVALID_IMAGE_SIZE)        \
    X(CL_INVALID_SAMPLER) X(CL_INVALID_BINARY) X(CL_INVALID_BUILD_OPTIONS) X(CL_INVALID_PROGRAM)   \
    X(CL_INVALID_PROGRAM_EXECUTABLE) X(CL_INVALID_KERNEL_NAME) X(CL_INVALID_KERNEL_DEFINITION)     \
    X(CL_INVALID_KERNEL) X(CL_INVALID_ARG_INDEX) X(CL_INVALID_ARG_VALUE) X(CL_INVALID_ARG_SIZE)    \
    X(CL_INVALID_KERNEL_ARGS) X(CL_INVALID_WORK_DIMENSION) X(CL_INVALID_WORK_GROUP_SIZE)           \
    X(CL_INVALID_WORK_ITEM_SIZE) X(CL_INVALID_GLOBAL_OFFSET) X(CL_INVALID_EVENT_WAIT_LIST)         \
    X(CL_INVALID_EVENT) X(CL_INVALID_OPERATION) X(CL_INVALID_GL_OBJECT)                            \
    X(CL_INVALID_BUFFER_SIZE) X(CL_INVALID_MIP_LEVEL) X(CL_INVALID_GLOBAL_WORK_SIZE)               \
    X(CL_INVALID_PROPERTY) X(CL_INVALID_IMAGE_DESCRIPTOR) X(CL_INVALID_COMPILER_OPTIONS)           \
    X(CL_INVALID_LINKER_OPTIONS) X(CL_INVALID_DEVICE_PARTITION_COUNT) X(CL_INVALID_PIPE_SIZE)      \
    X(CL_INVALID_DEVICE_QUEUE) X(CL_INVALID_SPEC_ID) X(CL_MAX_SIZE_RESTRICTION_EXCEEDED)           \
    X(CL_PLATFORM_NOT_FOUND_KHR)

bool vocl_node_name_ok(const char *p, size_t n)
{
    if (n < 1 || n > VOCL_NODE_NAME_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] <= ' ' || p[i] > '~')
            return false;
    return true;
}

const char *vocl_err_name(int err)
{
#define VOCL_ERR_CASE(e) case e: return #e;
    switch (err) {
        VOCL_ERRORS(VOCL_ERR_CASE)
    default: return "unknown OpenCL error";
    }
#undef VOCL_ERR_CASE
}
