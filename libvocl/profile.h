/*
 * profile.h - built-in profiling of the OpenCL calls an application makes.
 *
 * VOCL_PROFILE=1 prints, at exit, a table of every entry point called: count,
 * total and mean time, bytes moved.  VOCL_TRACE=FILE writes a timeline in
 * the Chrome trace format (chrome://tracing, ui.perfetto.dev) of the
 * application's calls and of its proxies' work.  Off, each entry point pays
 * one predictable branch.
 */
#ifndef VOCL_PROFILE_H
#define VOCL_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vocl_api.h"

extern bool vocl_prof_on;    /* VOCL_PROFILE or VOCL_TRACE */
extern bool vocl_trace_on;   /* VOCL_TRACE */

/* Around an entry point: only the outermost call of a thread is counted
 * (libvocl implements some calls with others). */
uint64_t vocl_prof_enter(void);
void vocl_prof_leave(enum vocl_fn fn, uint64_t start_ns);
/* The current call's request left, its reply came (VOCL_TRACE: the
 * trace says when, for vocl-bench --breakdown). */
void vocl_prof_posted(void);
void vocl_prof_replied(void);
/* Bytes a transfer of the current call moves. */
void vocl_prof_bytes(size_t n);
/* A transfer done in memory shared with a proxy of this node (memory.c). */
void vocl_prof_shared(size_t n);
/* At exit, before the proxies are told BYE: the table, the trace file. */
void vocl_prof_report(void);

#endif
