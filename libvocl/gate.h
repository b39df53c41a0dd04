/*
 * gate.h - the door every exported entry point goes through, so that a
 * migration (migrate.c) can find a moment when no thread of the
 * application is inside libvocl.
 *
 * Each thread has a slot of its own: entering sets its flag, leaving
 * clears it, and only a thread's outermost call does either (libvocl
 * implements some calls with others).  A migration shuts the gate and then
 * waits for every other slot's flag to clear.  Each side stores its flag,
 * then loads the other's: one of them must see the other's store.  The
 * entering thread's store is a plain one; the migration pays for both
 * with membarrier(2), which makes every thread of the process pass a full
 * memory barrier.  So, open, an entry costs a plain store and a load, no
 * locked instruction.  (Where membarrier is missing, entries store
 * sequentially consistent, an xchg: about 10 ns more a call here.)
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
extern bool vocl_gate_fenced; /* membarrier(2) is there: entries store plainly */
/* initial-exec: one load from the thread pointer, not a call of
 * __tls_get_addr (libvocl is preloaded, or loaded by the ICD loader, where
 * glibc keeps room for so small a variable). */
extern _Thread_local struct vocl_gate_slot *vocl_gate_mine
    __attribute__((tls_model("initial-exec")));

/* The thread's slot, made on its first call. */
struct vocl_gate_slot *vocl_gate_slot(void);
/* Waits, outside, while the gate is shut; then is inside again. */
void vocl_gate_wait(struct vocl_gate_slot *s);

/* Enters; what vocl_gate_leave takes. */
static inline struct vocl_gate_slot *vocl_gate_enter(void)
{
    struct vocl_gate_slot *s = vocl_gate_mine ? vocl_gate_mine : vocl_gate_slot();
    if (!s || s->depth++ > 0)
        return s;
    if (vocl_gate_fenced) {
        atomic_store_explicit(&s->in, 1, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst); /* (the load stays after the store) */
    } else {
        atomic_store(&s->in, 1);
    }
    if (atomic_load_explicit(&vocl_gate_shut, memory_order_acquire))
        vocl_gate_wait(s);
    return s;
}

static inline void vocl_gate_leave(struct vocl_gate_slot *s)
{
    if (s && --s->depth == 0)
        atomic_store_explicit(&s->in, 0, memory_order_release);
}

/* Shuts the gate and waits up to wait_ms for every other thread to be out
 * (the caller counts as inside from here on); false: some thread stayed
 * in, and the gate is open again. */
bool vocl_gate_close(long wait_ms);
void vocl_gate_open(void);

#endif
