/*
 * event.c - waiting on events (of several proxies at once), event
 * callbacks, and the info the client answers about queues, events and
 * samplers.
 */
#include "vocl.h"

#include "thread.h"

#include <stdlib.h>
#include <string.h>

cl_int CL_API_CALL vocl_hand_clWaitForEvents(cl_uint num_events, const cl_event *event_list)
{
    cl_int err = vocl_init();
    if (err != CL_SUCCESS)
        return err;
    if (num_events == 0 || !event_list)
        return CL_INVALID_VALUE;
    struct vocl_obj *first = NULL;
    for (cl_uint i = 0; i < num_events; i++) {
        struct vocl_obj *e = vocl_lookup(event_list[i], VOCL_T_EVENT);
        if (!e)
            return CL_INVALID_EVENT;
        if (!first)
            first = e;
        else if (e->context != first->context)
            return CL_INVALID_CONTEXT;
    }
    /* The data of non-blocking reads lands first. */
    for (cl_uint i = 0; i < num_events; i++) {
        err = vocl_event_data_wait(vocl_lookup(event_list[i], VOCL_T_EVENT));
        if (err != CL_SUCCESS)
            return CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST;
    }
    /* One request per proxy the events live in (a user event of a context
     * spanning proxies: its first replica, which is set with the others). */
    err = CL_SUCCESS;
    for (cl_uint i = 0; i < num_events && err == CL_SUCCESS; i++) {
        struct vocl_proxy *px = ((struct vocl_obj *)event_list[i])->px;
        bool seen = false;
        for (cl_uint j = 0; j < i && !seen; j++)
            seen = ((struct vocl_obj *)event_list[j])->px == px;
        if (seen)
            continue;
        struct vocl_call c;
        vocl_call_init(&c);
        c.px = px;
        if (vocl_call_start(&c, VOCL_OP_clWaitForEvents) == 0) {
            cl_uint n = 0;
            for (cl_uint j = i; j < num_events; j++)
                n += ((struct vocl_obj *)event_list[j])->px == px;
            vocl_wr_u32(c.w, n);
            for (cl_uint j = i; j < num_events; j++)
                if (((struct vocl_obj *)event_list[j])->px == px)
                    vocl_wr_u64(c.w, ((struct vocl_obj *)event_list[j])->id);
            vocl_call_send(&c);
        }
        vocl_call_end(&c);
        err = c.err;
    }
    return err;
}

struct event_cb {
    cl_event event;
    cl_int type;
    void (CL_CALLBACK *fn)(cl_event, cl_int, void *);
    void *user_data;
};

/* Waits for the event on a thread of libvocl, then calls back, as the spec
 * allows for every callback type (the status passed is the one reached). */
static void *event_cb_thread(void *arg)
{
    struct event_cb *cb = arg;
    cl_int status = CL_COMPLETE;
    clWaitForEvents(1, &cb->event);
    clGetEventInfo(cb->event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(status), &status, NULL);
    cb->fn(cb->event, status < 0 ? status : cb->type, cb->user_data);
    clReleaseEvent(cb->event);
    free(cb);
    return NULL;
}

cl_int CL_API_CALL vocl_hand_clSetEventCallback(
    cl_event event, cl_int command_exec_callback_type,
    void (CL_CALLBACK *pfn_notify)(cl_event event, cl_int event_command_status, void *user_data),
    void *user_data)
{
    if (!vocl_lookup(event, VOCL_T_EVENT))
        return CL_INVALID_EVENT;
    if (!pfn_notify || (command_exec_callback_type != CL_COMPLETE &&
                        command_exec_callback_type != CL_RUNNING &&
                        command_exec_callback_type != CL_SUBMITTED))
        return CL_INVALID_VALUE;
    struct event_cb *cb = malloc(sizeof(*cb));
    if (!cb)
        return CL_OUT_OF_HOST_MEMORY;
    *cb = (struct event_cb){event, command_exec_callback_type, pfn_notify, user_data};
    clRetainEvent(event);
    if (vocl_thread_detached(event_cb_thread, cb)) {
        clReleaseEvent(event);
        free(cb);
        return CL_OUT_OF_HOST_MEMORY;
    }
    return CL_SUCCESS;
}

static int answer_handle(const void *h, size_t size, void *value, size_t *size_ret, cl_int *ret)
{
    *ret = vocl_info_answer(&h, sizeof(h), size, value, size_ret);
    return 1;
}

/* The execution status of e's command as its proxy's driver has it. */
static cl_int device_status(struct vocl_obj *e, cl_int *st)
{
    struct vocl_call c;
    vocl_call_init(&c);
    vocl_call_h(&c, e, VOCL_T_EVENT, 0);
    if (vocl_call_start(&c, VOCL_OP_clGetEventInfo) == 0) {
        vocl_wr_u64(c.w, vocl_id_on(e, c.px));
        vocl_wr_u64(c.w, CL_EVENT_COMMAND_EXECUTION_STATUS);
        vocl_wr_u64(c.w, sizeof(*st));
        vocl_wr_u8(c.w, 1);
        if (vocl_call_send(&c) == 0)
            vocl_call_get_info(&c, sizeof(*st), st, NULL);
    }
    vocl_call_end(&c);
    return c.err;
}

int vocl_hook_clGetEventInfo(cl_event event, cl_event_info param_name, size_t param_value_size,
                             void *param_value, size_t *param_value_size_ret, cl_int *ret)
{
    struct vocl_obj *e = vocl_lookup(event, VOCL_T_EVENT);
    if (!e)
        return 0;
    if (param_name == CL_EVENT_COMMAND_QUEUE)
        return answer_handle(e->parent, param_value_size, param_value, param_value_size_ret, ret);
    if (param_name == CL_EVENT_CONTEXT)
        return answer_handle(e->context, param_value_size, param_value, param_value_size_ret, ret);
    if (param_name == CL_EVENT_COMMAND_EXECUTION_STATUS && vocl_event_data_pending(e)) {
        /* A read is not complete until its data is in the application's
         * memory: the device's word, but running where it says complete. */
        cl_int st = CL_RUNNING;
        *ret = device_status(e, &st);
        if (*ret == CL_SUCCESS) {
            if (st == CL_COMPLETE)
                st = CL_RUNNING;
            *ret = vocl_info_answer(&st, sizeof(st), param_value_size, param_value,
                                    param_value_size_ret);
        }
        return 1;
    }
    return 0;
}

int vocl_hook_clGetCommandQueueInfo(cl_command_queue command_queue,
                                    cl_command_queue_info param_name, size_t param_value_size,
                                    void *param_value, size_t *param_value_size_ret, cl_int *ret)
{
    struct vocl_obj *q = vocl_lookup(command_queue, VOCL_T_QUEUE);
    if (!q)
        return 0;
    switch (param_name) {
    case CL_QUEUE_CONTEXT:
        return answer_handle(q->context, param_value_size, param_value, param_value_size_ret, ret);
    case CL_QUEUE_DEVICE:
        return answer_handle(q->parent, param_value_size, param_value, param_value_size_ret, ret);
    case CL_QUEUE_DEVICE_DEFAULT:
        /* Device-side queues are not forwarded: no default device queue. */
        return answer_handle(NULL, param_value_size, param_value, param_value_size_ret, ret);
    default:
        return 0;
    }
}

int vocl_hook_clGetSamplerInfo(cl_sampler sampler, cl_sampler_info param_name,
                               size_t param_value_size, void *param_value,
                               size_t *param_value_size_ret, cl_int *ret)
{
    struct vocl_obj *s = vocl_lookup(sampler, VOCL_T_SAMPLER);
    if (!s || param_name != CL_SAMPLER_CONTEXT)
        return 0;
    return answer_handle(s->context, param_value_size, param_value, param_value_size_ret, ret);
}
