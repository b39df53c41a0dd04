/*
 * thread.h - a detached thread, for work that outlives the call that starts
 * it (event callbacks, migrations, the proxy's stdout reader).
 */
#ifndef VOCL_THREAD_H
#define VOCL_THREAD_H

/* 0, or pthread_create's error (nothing was started). */
int vocl_thread_detached(void *(*fn)(void *), void *arg);

#endif
