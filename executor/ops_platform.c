/*
 * ops_platform.c - proxy handlers for the platform, devices and contexts.
 */
#include "internal.h"

#include <string.h>

void exec_op_clGetPlatformInfo(struct exec_req *q)
{
    struct vocl_msg_clGetPlatformInfo_req m;
    vocl_dec_clGetPlatformInfo_req(q->r, &m); /* (fixed fields: truncation is all that fails) */
    cl_platform_info param = (cl_platform_info)m.param_name;
    size_t size = (size_t)m.param_value_size;
    int want = m.want_value;
    void *value = NULL;
    size_t size_ret = 0;
    if (size > EXEC_INFO_MAX)
        size = EXEC_INFO_MAX;
    if (want)
        value = exec_tmp(q, size);
    if (!exec_req_begin(q))
        return;
    if (!q->s->node->platform) {
        vocl_wr_i32(q->w, CL_INVALID_PLATFORM);
        return;
    }
    cl_int rc = q->cl->clGetPlatformInfo(q->s->node->platform, param, size, value, &size_ret);
    vocl_wr_i32(q->w, rc);
    exec_put_info(q, rc, value, size, size_ret);
}

void exec_op_clCreateSubDevices(struct exec_req *q)
{
    struct vocl_msg_clCreateSubDevices_req m;
    const char *why = vocl_dec_clCreateSubDevices_req(q->r, &m);
    if (why)
        exec_fail(q, why);
    cl_device_id dev = exec_h(q, m.in_device, VOCL_T_DEVICE, 0);
    const cl_device_partition_property *props = exec_props(q, &m.properties);
    cl_uint num_devices = m.num_devices;
    uint32_t nids;
    const uint64_t *ids = exec_newids(q, &m.new_ids, &nids, 4096);
    cl_device_id *out = nids ? exec_tmp(q, nids * sizeof(*out)) : NULL;
    cl_uint num_ret = 0;

    if (nids && nids != num_devices)
        exec_fail(q, "sub-device ids do not match num_devices");
    if (!exec_req_begin(q))
        return;
    cl_int rc = q->cl->clCreateSubDevices(dev, props, num_devices, out, &num_ret);
    vocl_wr_i32(q->w, rc);
    if (rc != CL_SUCCESS)
        return;
    for (cl_uint i = 0; out && i < num_ret && i < nids; i++)
        exec_put_new(q, ids[i], VOCL_T_DEVICE, out[i]);
    vocl_enc_clCreateSubDevices_rep(q->w, &(struct vocl_msg_clCreateSubDevices_rep){
                                              .num_devices_ret = num_ret});
}

/* The client sends its platform as 0: it means this proxy's platform. */
static void fix_context_props(struct exec_req *q, const cl_context_properties *props)
{
    cl_context_properties *p = (cl_context_properties *)props;
    for (size_t i = 0; p && p[i]; i += 2) {
        if (p[i] == CL_CONTEXT_PLATFORM)
            p[i + 1] = (cl_context_properties)q->s->node->platform;
        if (!p[i + 1] && p[i] != CL_CONTEXT_INTEROP_USER_SYNC) {
            exec_fail(q, "odd context property list");
            return;
        }
    }
}

void exec_op_clCreateContext(struct exec_req *q)
{
    struct vocl_msg_clCreateContext_req m;
    const char *why = vocl_dec_clCreateContext_req(q->r, &m);
    if (why)
        exec_fail(q, why);
    const cl_context_properties *props = exec_props(q, &m.properties);
    cl_uint ndev;
    const cl_device_id *devs = exec_ha(q, VOCL_T_DEVICE, &m.devices, &ndev);
    uint64_t id = exec_newobj(q, m.new_id);
    cl_int err = CL_SUCCESS;

    fix_context_props(q, props);
    if (!exec_req_begin(q))
        return;
    void *tag = exec_notify_tag(q->s, id);
    cl_context ctx =
        q->cl->clCreateContext(props, ndev, devs, tag ? exec_notify_native : NULL, tag, &err);
    cl_int rc = ctx ? exec_put_new(q, id, VOCL_T_CONTEXT, ctx) : err;
    vocl_wr_i32(q->w, rc);
    if (rc == CL_SUCCESS && ndev)
        exec_ctx_pool_early(q->s, ctx, devs[0]);
}

void exec_op_clGetSupportedImageFormats(struct exec_req *q)
{
    struct vocl_msg_clGetSupportedImageFormats_req m;
    vocl_dec_clGetSupportedImageFormats_req(q->r, &m); /* (fixed fields: truncation is all that fails) */
    cl_context ctx = exec_h(q, m.context, VOCL_T_CONTEXT, 0);
    cl_mem_flags flags = m.flags;
    cl_mem_object_type type = (cl_mem_object_type)m.image_type;
    cl_uint num_entries = m.num_entries;
    cl_image_format *fmts = NULL;
    cl_uint num = 0;

    if (num_entries > 4096)
        num_entries = 4096;
    struct vocl_rec_image_format *recs = NULL;
    if (num_entries) {
        fmts = exec_tmp(q, num_entries * sizeof(*fmts));
        recs = exec_tmp(q, num_entries * sizeof(*recs));
    }
    if (!exec_req_begin(q))
        return;
    cl_int rc = q->cl->clGetSupportedImageFormats(ctx, flags, type, num_entries, fmts, &num);
    vocl_wr_i32(q->w, rc);
    if (rc != CL_SUCCESS)
        return;
    cl_uint n = fmts && recs ? (num < num_entries ? num : num_entries) : 0;
    for (cl_uint i = 0; i < n; i++)
        recs[i] = (struct vocl_rec_image_format){fmts[i].image_channel_order,
                                                 fmts[i].image_channel_data_type};
    vocl_enc_clGetSupportedImageFormats_rep(q->w, &(struct vocl_msg_clGetSupportedImageFormats_rep){
                                                      .num_image_formats = num,
                                                      .formats = {.n = n, .v = recs}});
}
