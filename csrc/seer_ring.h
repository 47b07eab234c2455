/* Bounded multi-producer multi-consumer ring of uint32 values with bulk
 * operations, in the style of DPDK's rte_ring (c11 variant): a thread
 * reserves a range of slots with one CAS on the head, fills or reads it, then
 * publishes by moving the tail once the threads that reserved before it have
 * published theirs.
 *
 * Internal header: included by the C sources, never by cffi's cdef.
 */
#ifndef SEER_RING_H
#define SEER_RING_H

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

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
 * publish [old, old + n).  The release store is the edge that makes our slot
 * writes (producer) or slot reads (consumer) happen-before the other side's
 * acquire load of this tail. */
static inline void seer_ring_publish(seer_ring_end *end, uint32_t old, uint32_t n) {
    unsigned spins = 0;
    /* acquire: pairs with the predecessor's release store of this tail.  Our
     * release below is a plain store, not an RMW, so it does not continue the
     * predecessor's release sequence: without this acquire, a thread that
     * acquires our tail would not synchronize with the predecessor, and its
     * slot writes (or reads) would race with the other side (C11 and TSan). */
    while (atomic_load_explicit(&end->tail, memory_order_acquire) != old) seer_backoff(&spins);
    atomic_store_explicit(&end->tail, old + n, memory_order_release);
}

/* Enqueue exactly n values or none; returns n or 0. */
static inline uint32_t seer_ring_enqueue_bulk(seer_ring *r, const uint32_t *src, uint32_t n) {
    uint32_t head = atomic_load_explicit(&r->prod.head, memory_order_relaxed);
    for (;;) {
        /* acquire: pairs with the consumers' release of cons.tail, so their
         * reads of the slots we are about to overwrite are complete. */
        uint32_t cons_tail = atomic_load_explicit(&r->cons.tail, memory_order_acquire);
        if (r->size - (head - cons_tail) < n) return 0;
        /* relaxed CAS: it only reserves slots; nothing is published yet. */
        if (atomic_compare_exchange_weak_explicit(&r->prod.head, &head, head + n,
                                                  memory_order_relaxed, memory_order_relaxed))
            break;
    }
    for (uint32_t i = 0; i < n; i++) r->slots[(head + i) & r->mask] = src[i];
    seer_ring_publish(&r->prod, head, n);
    return n;
}

/* Dequeue up to max values (exactly max when bulk); returns how many. */
static inline uint32_t seer_ring_dequeue(seer_ring *r, uint32_t *dst, uint32_t max, int bulk) {
    uint32_t head = atomic_load_explicit(&r->cons.head, memory_order_relaxed);
    uint32_t n;
    for (;;) {
        /* acquire: pairs with the producers' release of prod.tail, so the
         * slot values written before it are visible to our reads below. */
        uint32_t prod_tail = atomic_load_explicit(&r->prod.tail, memory_order_acquire);
        uint32_t avail = prod_tail - head;
        n = avail < max ? avail : max;
        if (n == 0 || (bulk && n < max)) return 0;
        if (atomic_compare_exchange_weak_explicit(&r->cons.head, &head, head + n,
                                                  memory_order_relaxed, memory_order_relaxed))
            break;
    }
    for (uint32_t i = 0; i < n; i++) dst[i] = r->slots[(head + i) & r->mask];
    seer_ring_publish(&r->cons, head, n);
    return n;
}

static inline uint32_t seer_ring_count(const seer_ring *r) {
    uint32_t prod_tail = atomic_load_explicit(&r->prod.tail, memory_order_acquire);
    uint32_t cons_tail = atomic_load_explicit(&r->cons.tail, memory_order_acquire);
    return prod_tail - cons_tail;
}

#endif
