/* Bounded multi-producer multi-consumer ring of uint32 values with bulk
 * operations, in the style of DPDK's rte_ring (c11 variant): a thread
 * reserves a range of slots with one CAS on the head, fills or reads it, then
 * publishes by moving the tail once the threads that reserved before it have
 * published theirs.
 *
 * Progress: the reservation CAS is lock-free, but publishing is blocking: a
 * thread preempted between its reservation and its publish holds back every
 * thread that reserved after it on the same side (they wait in publish), and
 * the other side sees none of their slots until it runs again
 * (csrc/README.md).
 *
 * Happens-before edges, named in the comments below ("side" is prod or
 * cons, "other" the opposite one):
 *   R0 -> A1  side.tail release store (publish) -> the other side's acquire
 *             load of that tail: our slot writes (prod) or slot reads (cons)
 *             are done before the other side reads or overwrites the slots.
 *   R0 -> A2  side.tail release store -> the next publisher's acquire spin
 *             on the same tail, so the chain of publishers carries along.
 *   R1 -> A0  head CAS (release part) -> a later thread's acquire load of
 *             that head, or its failed CAS (acquire): the tail the head's
 *             mover had read happens-before our tail load (why, below).
 *
 * Internal header: included by the C sources, never by cffi's cdef.
 */
#ifndef SEER_RING_H
#define SEER_RING_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#define SEER_CACHELINE 64

#if defined(__x86_64__) || defined(__i386__)
#define seer_cpu_relax() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define seer_cpu_relax() __asm__ __volatile__("yield")
#else
#define seer_cpu_relax() ((void)0)
#endif

/* Spin politely: on an oversubscribed machine (more threads than cores) the
 * thread we wait for may be descheduled, so yield the core after a while. */
static inline void seer_backoff(unsigned *spins) {
    if (++*spins < 64) {
        seer_cpu_relax();
    } else {
        sched_yield();
    }
}

typedef struct seer_ring_end {
    _Atomic uint32_t head; /* next slot to reserve                    */
    _Atomic uint32_t tail; /* slots before this one are published     */
    char pad[SEER_CACHELINE - 2 * sizeof(uint32_t)];
} seer_ring_end;

typedef struct seer_ring {
    /* Producers and consumers each get their own cache line so that a
     * producer's CAS does not invalidate the line consumers spin on. */
    _Alignas(SEER_CACHELINE) seer_ring_end prod;
    _Alignas(SEER_CACHELINE) seer_ring_end cons;
    _Alignas(SEER_CACHELINE) uint32_t size; /* power of two */
    uint32_t mask;
    uint32_t *slots;
} seer_ring;

static inline void seer_ring_init(seer_ring *r, uint32_t *slots, uint32_t size) {
    atomic_init(&r->prod.head, 0);
    atomic_init(&r->prod.tail, 0);
    atomic_init(&r->cons.head, 0);
    atomic_init(&r->cons.tail, 0);
    r->size = size;
    r->mask = size - 1;
    r->slots = slots;
}

/* Wait until the threads that reserved before us have published, then
 * publish [old, old + n). */
static inline void seer_ring_publish(seer_ring_end *end, uint32_t old, uint32_t n) {
    unsigned spins = 0;
    /* A2, acquire: pairs with the predecessor's R0 on this tail.  Our R0
     * below is a plain store, not an RMW, so it does not continue the
     * predecessor's release sequence: without this acquire, a thread that
     * acquires our tail would not synchronize with the predecessor, and its
     * slot writes (or reads) would race with the other side (C11 and TSan). */
    while (atomic_load_explicit(&end->tail, memory_order_acquire) != old) seer_backoff(&spins);
    /* R0, release: our slot writes (producer) or slot reads (consumer), and
     * through A2 every predecessor's, happen-before the other side's A1. */
    atomic_store_explicit(&end->tail, old + n, memory_order_release);
}

/* Why A0/R1.  free = size - (prod.head - cons.tail) and
 * avail = prod.tail - cons.head are only in range if the tail we read is at
 * least the tail read by the thread that moved the head to the value we
 * hold.  A relaxed head load gives no such guarantee: a weakly ordered CPU
 * (ARM, POWER) may satisfy the tail load before it, or serve a tail older
 * than the one the head's mover saw.  A fresh head with a stale tail makes
 * the unsigned difference wrap: a consumer hands out slots nobody has filled
 * yet (a duplicate or stale entity id, so two holders), a producer
 * overwrites slots not yet read (a lost ready entity, a lost free node).
 * DPDK's rte_ring_c11_pvt.h had an acquire fence between the two loads
 * ("ensure the head is read before tail") and now uses an acquire head load
 * plus a release/acquire head CAS, as here; the edge is the same.  We avoid
 * the fence because ThreadSanitizer does not model fences (gcc -Wtsan), so
 * the TSan build would lack the edge.  The argument: the mover's tail load
 * is sequenced before its R1; our A0 reads R1's value or a later RMW in its
 * release sequence, so R1 synchronizes with A0, the mover's tail load
 * happens-before ours, and read-read coherence gives us that tail or a newer
 * one.  On x86 all of it compiles to plain loads and lock cmpxchg. */

/* Bulks of at least this many values are copied with memcpy (below, the
 * call costs more than the masked loop it saves). */
#define SEER_RING_MEMCPY 16

/* Copy n values from src to the ring slots from at on (room: the slots up to
 * the ring's end), wrapping to slots: two memcpy instead of a masked index
 * per value (a bulk of 4096 was ten instructions a value). */
static inline void seer_ring_copy(uint32_t *at, const uint32_t *src, uint32_t room, uint32_t *slots, uint32_t n) {
    const uint32_t first = room < n ? room : n;
    memcpy(at, src, first * sizeof *src);
    memcpy(slots, src + first, (n - first) * sizeof *src);
}

/* Enqueue exactly n values or none; returns n or 0. */
static inline uint32_t seer_ring_enqueue_bulk(seer_ring *r, const uint32_t *src, uint32_t n) {
    /* A0, acquire: pairs with R1 of the thread that moved the head here,
     * and orders this load before the cons.tail load below. */
    uint32_t head = atomic_load_explicit(&r->prod.head, memory_order_acquire);
    for (;;) {
        /* A1, acquire: pairs with the consumers' R0 on cons.tail, so their
         * reads of the slots we are about to overwrite are complete. */
        uint32_t cons_tail = atomic_load_explicit(&r->cons.tail, memory_order_acquire);
        if (r->size - (head - cons_tail) < n) return 0;
        /* R1 on success (release part): our cons.tail load happens-before
         * the A0 of whoever reads this head next.  A0 on failure (acquire):
         * the head it reloads is ordered like the first one.  (acq_rel, not
         * release, on success: C11 wants it no weaker than the failure.) */
        if (atomic_compare_exchange_weak_explicit(&r->prod.head, &head, head + n,
                                                  memory_order_acq_rel, memory_order_acquire))
            break;
    }
    if (n < SEER_RING_MEMCPY)
        for (uint32_t i = 0; i < n; i++) r->slots[(head + i) & r->mask] = src[i];
    else
        seer_ring_copy(r->slots + (head & r->mask), src, r->size - (head & r->mask), r->slots, n);
    seer_ring_publish(&r->prod, head, n);
    return n;
}

/* Dequeue up to max values (exactly max when bulk); returns how many. */
static inline uint32_t seer_ring_dequeue(seer_ring *r, uint32_t *dst, uint32_t max, int bulk) {
    /* A0, acquire: as in enqueue, pairs with R1 of the head's mover and
     * orders this load before the prod.tail load below. */
    uint32_t head = atomic_load_explicit(&r->cons.head, memory_order_acquire);
    uint32_t n;
    for (;;) {
        /* A1, acquire: pairs with the producers' R0 on prod.tail, so the
         * slot values written before it are visible to our reads below. */
        uint32_t prod_tail = atomic_load_explicit(&r->prod.tail, memory_order_acquire);
        uint32_t avail = prod_tail - head;
        n = avail < max ? avail : max;
        if (n == 0 || (bulk && n < max)) return 0;
        /* R1 / A0: as in enqueue (our prod.tail load is released to the
         * next A0; a failed CAS acquires the head it reloads). */
        if (atomic_compare_exchange_weak_explicit(&r->cons.head, &head, head + n,
                                                  memory_order_acq_rel, memory_order_acquire))
            break;
    }
    if (n < SEER_RING_MEMCPY) {
        for (uint32_t i = 0; i < n; i++) dst[i] = r->slots[(head + i) & r->mask];
    } else {
        const uint32_t at = head & r->mask, first = r->size - at < n ? r->size - at : n;
        memcpy(dst, r->slots + at, first * sizeof *dst);
        memcpy(dst + first, r->slots, (n - first) * sizeof *dst);
    }
    seer_ring_publish(&r->cons, head, n);
    return n;
}

/* Values in the ring; exact only while no operation is in flight. */
static inline uint32_t seer_ring_count(const seer_ring *r) {
    /* cons.tail first.  A1 on it pairs with the last consumer's R0, and
     * that consumer had read a prod.tail at least this cons.tail, so our
     * prod.tail load (ordered after by the acquire) sees at least that much
     * and the difference cannot wrap.  In the other order it can even under
     * sequential consistency: read prod.tail, both sides move on, read a
     * cons.tail beyond the prod.tail we hold. */
    uint32_t cons_tail = atomic_load_explicit(&r->cons.tail, memory_order_acquire);
    uint32_t prod_tail = atomic_load_explicit(&r->prod.tail, memory_order_acquire);
    return prod_tail - cons_tail;
}

#endif
