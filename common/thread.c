/* thread.c - see thread.h. */
#include "thread.h"

#include <pthread.h>

int vocl_thread_detached(void *(*fn)(void *), void *arg)
{
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return rc;
}
