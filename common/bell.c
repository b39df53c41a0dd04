/*
 * bell.c - the proxy's bell (bell.h): a futex in shared memory.
 */
#include "bell.h"

#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

bool vocl_bell_allowed(void)
{
    const char *e = getenv("VOCL_BELL");
    return !e || strcmp(e, "0") != 0;
}

/* (Not FUTEX_PRIVATE: the word is shared between processes.) */
static long futex(_Atomic uint32_t *word, int op, uint32_t val, const struct timespec *timeout)
{
    return syscall(SYS_futex, (uint32_t *)word, op, val, timeout, NULL, 0);
}

/*
 * A request and the word are read in opposite orders by the two sides (the
 * client sends, then reads the word; the proxy writes the word, then looks
 * for requests): each side's fence keeps one of them from missing both.
 */
void vocl_bell_ring(struct vocl_bell *b)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&b->word, memory_order_relaxed) == VOCL_BELL_NAPPING &&
        atomic_exchange(&b->word, VOCL_BELL_AWAKE) == VOCL_BELL_NAPPING)
        futex(&b->word, FUTEX_WAKE, 1, NULL);
}

void vocl_bell_arm(struct vocl_bell *b)
{
    atomic_store(&b->word, VOCL_BELL_NAPPING);
    atomic_thread_fence(memory_order_seq_cst);
}

bool vocl_bell_nap(struct vocl_bell *b, long ns)
{
    struct timespec t = {ns / 1000000000L, ns % 1000000000L};
    /* (At once if the word is no longer NAPPING: it rang.  A signal ends
     * the nap early.) */
    futex(&b->word, FUTEX_WAIT, VOCL_BELL_NAPPING, &t);
    return atomic_exchange(&b->word, VOCL_BELL_AWAKE) == VOCL_BELL_AWAKE;
}

void vocl_bell_disarm(struct vocl_bell *b)
{
    atomic_store(&b->word, VOCL_BELL_AWAKE);
}
