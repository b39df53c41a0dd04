/*
 * gate.h - the door every exported entry point goes through, so that a
 * migration (migrate.c) can find a moment when no thread of the
 * application is inside libvocl.
 *
 * Each thread has a slot of its own: entering sets its flag, leaving
 * clears it, and only a thread's outermost call does either (libvocl
 * implements some calls with others).  A migration shuts the gate and then
 * waits for every other slot's flag to clear.  The two sides store, then
 * load the other's flag, both sequentially consistent, so one of them
 * always sees the other.  Open, an entry costs a store and a load.
 */
#ifndef VOCL_GATE_H
#define VOCL_GATE_H

#include <stdatomic.h>
#include <stdbool.h>

struct vocl_gate_slot {
    atomic_int in;   /* the thread is inside libvocl */
    unsigned depth;  /* its calls, nested */
    bool taken;      /* by a thread that still runs */
    struct vocl_gate_slot *next;
};

extern atomic_bool vocl_gate_shut;
extern _Thread_local struct vocl_gate_slot *vocl_gate_mine;

/* The thread's slot, made on its first call. */
struct vocl_gate_slot *vocl_gate_slot(void);
/* Waits, outside, while the gate is shut; then is inside again. */
void vocl_gate_wait(struct vocl_gate_slot *s);

static inline void vocl_gate_enter(void)
{
    struct vocl_gate_slot *s = vocl_gate_mine ? vocl_gate_mine : vocl_gate_slot();
    if (!s || s->depth++ > 0)
        return;
    atomic_store(&s->in, 1);
    if (atomic_load(&vocl_gate_shut))
        vocl_gate_wait(s);
}

static inline void vocl_gate_leave(void)
{
    struct vocl_gate_slot *s = vocl_gate_mine;
    if (s && --s->depth == 0)
        atomic_store_explicit(&s->in, 0, memory_order_release);
}

/* Shuts the gate and waits up to wait_ms for every other thread to be out
 * (the caller counts as inside from here on); false: some thread stayed
 * in, and the gate is open again. */
bool vocl_gate_close(long wait_ms);
void vocl_gate_open(void);

#endif
