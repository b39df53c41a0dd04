/*
 * info.c - answers that cannot change, kept by the object they describe.
 *
 * Programs ask the same questions many times: PyOpenCL asks a kernel its
 * name and a device its limits before nearly every launch.  Natively each
 * answer is a function call; through a proxy it is a round trip, and on a
 * busy node (the device's threads on every core) a round trip waits for
 * the proxy's turn on a core, tens to hundreds of microseconds.  So an
 * answer that cannot change for the life of the object is kept with the
 * object, after the first time it was asked in full (value and size), and
 * given from there.
 *
 * Which answers cannot change is decided in one place, immutable().  A
 * program's build information changes with each build: clBuildProgram and
 * clCompileProgram forget the program's answers as they start and again as
 * they end, and each forgetting makes the answers of questions already on
 * their way not kept (the generation).
 */
#include "vocl.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* At most this many answers an object (each a few to a few hundred
 * bytes): enough for every device attribute, bounded for kernels with
 * very many arguments. */
#define KEPT_MAX 256

struct vocl_info {
    struct vocl_info *next;
    unsigned op;
    uint64_t param, key;
    size_t len;
    unsigned char value[];
};

/* Held for a walk of one object's list and a copy, never while waiting. */
static pthread_mutex_t info_lock = PTHREAD_MUTEX_INITIALIZER;

static bool immutable(unsigned op, uint64_t param)
{
    switch (op) {
    case VOCL_OP_clGetPlatformInfo:
        return true; /* the native platform's, asked of the first live proxy */
    case VOCL_OP_clGetDeviceInfo:
        /* (Availability is asked again: a proxy's death shows in it.) */
        return param != CL_DEVICE_REFERENCE_COUNT && param != CL_DEVICE_AVAILABLE;
    case VOCL_OP_clGetMemObjectInfo:
        return param == CL_MEM_TYPE || param == CL_MEM_SIZE || param == CL_MEM_OFFSET ||
               param == CL_MEM_USES_SVM_POINTER || param == CL_MEM_PROPERTIES;
    case VOCL_OP_clGetImageInfo:
    case VOCL_OP_clGetPipeInfo:
    case VOCL_OP_clGetKernelArgInfo:
        return true;
    case VOCL_OP_clGetKernelInfo:
        return param == CL_KERNEL_FUNCTION_NAME || param == CL_KERNEL_NUM_ARGS ||
               param == CL_KERNEL_ATTRIBUTES;
    case VOCL_OP_clGetKernelWorkGroupInfo:
        /* The local memory a kernel uses includes its __local arguments. */
        return param != CL_KERNEL_LOCAL_MEM_SIZE;
    case VOCL_OP_clGetCommandQueueInfo:
        return param == CL_QUEUE_PROPERTIES || param == CL_QUEUE_SIZE ||
               param == CL_QUEUE_PROPERTIES_ARRAY;
    case VOCL_OP_clGetSamplerInfo:
        return param != CL_SAMPLER_REFERENCE_COUNT;
    case VOCL_OP_clGetProgramBuildInfo:
        return true; /* until the next build (vocl_info_forget) */
    case VOCL_OP_clGetEventInfo:
        return param == CL_EVENT_COMMAND_TYPE;
    default:
        return false;
    }
}

bool vocl_info_cached(struct vocl_obj *o, unsigned op, uint64_t param, uint64_t key, size_t size,
                      void *value, size_t *size_ret, cl_int *err, uint32_t *gen)
{
    if (!o || !immutable(op, param))
        return false;
    bool found = false;
    pthread_mutex_lock(&info_lock);
    *gen = o->info_gen;
    for (struct vocl_info *i = o->info; i && !found; i = i->next)
        if (i->op == op && i->param == param && i->key == key) {
            *err = vocl_info_answer(i->value, i->len, size, value, size_ret);
            found = true;
        }
    pthread_mutex_unlock(&info_lock);
    return found;
}

/* gen: the generation the answer was asked in (NULL: it is known, now). */
static void keep(struct vocl_obj *o, unsigned op, uint64_t param, uint64_t key,
                 const uint32_t *gen, uint64_t n, const struct vocl_bytes *v)
{
    if (!o || !immutable(op, param) || v->len != n) /* only a whole answer */
        return;
    struct vocl_info *i = malloc(sizeof(*i) + v->len);
    if (!i)
        return;
    *i = (struct vocl_info){.op = op, .param = param, .key = key, .len = v->len};
    memcpy(i->value, v->p, v->len);
    unsigned count = 0;
    pthread_mutex_lock(&info_lock);
    for (struct vocl_info *j = o->info; j; j = j->next, count++)
        if (j->op == op && j->param == param && j->key == key)
            count = KEPT_MAX; /* another thread kept it first */
    if ((!gen || *gen == o->info_gen) && count < KEPT_MAX) {
        i->next = o->info;
        o->info = i;
        i = NULL;
    }
    pthread_mutex_unlock(&info_lock);
    free(i);
}

void vocl_info_keep(struct vocl_obj *o, unsigned op, uint64_t param, uint64_t key, uint32_t gen,
                    uint64_t n, const struct vocl_bytes *v)
{
    keep(o, op, param, key, &gen, n, v);
}

void vocl_info_know(struct vocl_obj *o, unsigned op, uint64_t param, const void *v, size_t n)
{
    keep(o, op, param, 0, NULL, n, &(struct vocl_bytes){v, n});
}

void vocl_info_forget(struct vocl_obj *o)
{
    pthread_mutex_lock(&info_lock);
    struct vocl_info *list = o->info;
    o->info = NULL;
    o->info_gen++;
    pthread_mutex_unlock(&info_lock);
    for (struct vocl_info *next; list; list = next) {
        next = list->next;
        free(list);
    }
}
