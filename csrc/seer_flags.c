/* Flags and bells in shared memory (see seer_flags.h).
 *
 * The header declares plain integers so that cffi can read it; here every
 * access goes through _Atomic views of them.  That is sound only for
 * always-lock-free atomics of the plain types' size: those are address-free
 * (C11 7.17.5), so two processes mapping the same page at different
 * addresses still synchronize.  The checks below refuse other targets.
 */
#define _GNU_SOURCE
#include "seer_flags.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <time.h>

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#if ATOMIC_LLONG_LOCK_FREE != 2 || ATOMIC_INT_LOCK_FREE != 2
#error "seer_flags needs always-lock-free 32- and 64-bit atomics (address-free across processes)"
#endif
_Static_assert(sizeof(_Atomic int64_t) == sizeof(int64_t), "an _Atomic flag must overlay its int64_t slot");
_Static_assert(sizeof(_Atomic uint32_t) == sizeof(uint32_t), "an _Atomic bell word must overlay its uint32_t");
_Static_assert(sizeof(seer_bell) == sizeof(int64_t), "a bell takes exactly one slot of the control area");

#define FLAG(p) ((_Atomic int64_t *)(p))
#define WORD(p) ((_Atomic uint32_t *)(p))

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int64_t seer_flag_load(const int64_t *flag) {
    /* acquire: pairs with the writer's release store (seer_flag_store,
     * seer_flags_publish), so the payload it wrote before is visible to our
     * reads after this load. */
    return atomic_load_explicit(FLAG(flag), memory_order_acquire);
}

void seer_flag_store(int64_t *flag, int64_t value) {
    /* release: our payload stores happen-before any acquire load that
     * reads this value. */
    atomic_store_explicit(FLAG(flag), value, memory_order_release);
}

int64_t seer_flag_add(int64_t *flag, int64_t delta) {
    /* acq_rel: releases our writes to whoever acquires a later value, and
     * acquires those released by earlier adders (one release sequence). */
    return atomic_fetch_add_explicit(FLAG(flag), delta, memory_order_acq_rel);
}

uint32_t seer_bell_read(const seer_bell *bell) {
    /* acquire: pairs with the ring's seq_cst increment, itself after the
     * ringer's release stores of its flags.  A flag check after this read
     * therefore sees every flag published before the ring we read; a flag
     * published after it comes with a later ring, which changes seq and
     * keeps seer_bell_wait from sleeping on the value we read. */
    return atomic_load_explicit(WORD(&bell->seq), memory_order_acquire);
}

void seer_bell_ring(seer_bell *bell) {
    /* seq_cst, with the load of waiters below, against the sleeper's
     * waiters increment and its futex's read of seq (store-buffer
     * pattern): either we see it counted and wake it, or the kernel sees
     * our new seq and does not put it to sleep.  Its release half also
     * orders the flags we published before this ring. */
    atomic_fetch_add_explicit(WORD(&bell->seq), 1, memory_order_seq_cst);
#ifdef __linux__
    if (atomic_load_explicit(WORD(&bell->waiters), memory_order_seq_cst) > 0)
        /* FUTEX_WAKE, not _PRIVATE: the sleeper may be another process. */
        syscall(SYS_futex, &bell->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
#endif
}

int seer_bell_wait(seer_bell *bell, uint32_t seen, double timeout_s) {
    if (atomic_load_explicit(WORD(&bell->seq), memory_order_acquire) != seen) return 0;
    if (timeout_s == 0.0) return 1;
    double deadline = timeout_s < 0 ? INFINITY : now_s() + timeout_s;
#ifdef __linux__
    /* seq_cst: the sleeper's half of the store-buffer pattern of
     * seer_bell_ring (count ourselves, then let the kernel read seq). */
    atomic_fetch_add_explicit(WORD(&bell->waiters), 1, memory_order_seq_cst);
    int rc = 0;
    for (;;) {
        if (atomic_load_explicit(WORD(&bell->seq), memory_order_seq_cst) != seen) break;
        struct timespec ts, *tsp = NULL;
        if (timeout_s >= 0) {
            double left = deadline - now_s();
            if (left <= 0) {
                rc = 1;
                break;
            }
            ts.tv_sec = (time_t)left;
            ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
            tsp = &ts;
        }
        /* FUTEX_WAIT, not _PRIVATE: the ringer may be another process.  The
         * kernel compares seq with `seen` atomically with queueing us. */
        long r = syscall(SYS_futex, &bell->seq, FUTEX_WAIT, seen, tsp, NULL, 0);
        if (r == 0 || errno == EAGAIN) break; /* woken, or seq already moved */
        if (errno == ETIMEDOUT) {
            rc = 1;
            break;
        }
        /* EINTR: a signal; loop to sleep the time that is left */
    }
    /* relaxed: no edge needed, the count only decides whether a ring makes
     * a system call; a ringer that still sees us counted wakes nobody. */
    atomic_fetch_sub_explicit(WORD(&bell->waiters), 1, memory_order_relaxed);
    return rc;
#else
    /* No futex: poll seq, sleeping 50 us to 1 ms between looks. */
    long ns = 50000;
    for (;;) {
        /* acquire: as in seer_bell_read. */
        if (atomic_load_explicit(WORD(&bell->seq), memory_order_acquire) != seen) return 0;
        double left = deadline - now_s();
        if (left <= 0) return 1;
        double nap = (double)ns * 1e-9 < left ? (double)ns * 1e-9 : left;
        struct timespec ts = {(time_t)nap, (long)((nap - (double)(time_t)nap) * 1e9)};
        nanosleep(&ts, NULL);
        if (ns < 1000000) ns *= 2;
    }
#endif
}

void seer_flags_publish(int64_t *base, const int64_t *index, const int64_t *value, int32_t n,
                        const int64_t *bells, int32_t nbells) {
    for (int32_t i = 0; i < n; i++)
        /* release: the payload (actions, command, message) written before
         * this call happens-before the reader's acquire load of this flag. */
        atomic_store_explicit(FLAG(base + index[i]), value[i], memory_order_release);
    for (int32_t j = 0; j < nbells; j++) seer_bell_ring((seer_bell *)(base + bells[j]));
}

static int32_t scan(const int64_t *base, const int64_t *index, const int64_t *value, int32_t n, int32_t mode,
                    uint8_t *hit) {
    int32_t hits = 0;
    for (int32_t i = 0; i < n; i++) {
        /* acquire: pairs with the flag writer's release store, so what it
         * wrote before the flag is visible to our caller once hit[i] says so. */
        int64_t v = atomic_load_explicit(FLAG(base + index[i]), memory_order_acquire);
        int ok = mode == SEER_FLAGS_EQ ? v == value[i] : v != value[i];
        if (hit) hit[i] = (uint8_t)ok;
        hits += ok;
    }
    return hits;
}

int32_t seer_flags_wait(int64_t *base, const int64_t *index, const int64_t *value, int32_t n, int32_t need,
                        int32_t mode, int64_t bell, int64_t abort, double spin_s, double timeout_s, uint8_t *hit) {
    seer_bell *b = (seer_bell *)(base + bell);
    double start = now_s();
    double deadline = timeout_s < 0 ? INFINITY : start + timeout_s;
    for (;;) {
        /* The bell first, the flags second: see seer_bell_read. */
        uint32_t seen = seer_bell_read(b);
        /* acquire: pairs with the release store of the abort flag, made
         * before the ring that woke us. */
        if (abort >= 0 && atomic_load_explicit(FLAG(base + abort), memory_order_acquire) != 0)
            return SEER_FLAGS_ABORTED;
        int32_t hits = scan(base, index, value, n, mode, hit);
        if (hits >= need) return hits;
        double now = now_s();
        if (now >= deadline) return hits;
        if (now - start < spin_s) {
            sched_yield(); /* small machines: hand the core to whoever we wait for */
            continue;
        }
        seer_bell_wait(b, seen, isinf(deadline) ? -1.0 : deadline - now);
    }
}
