/* Flags and bells in memory shared between processes: the handshake of
 * seer.vector's process backend (seer/vector/_process.py).
 *
 * A flag is an int64_t with one writer.  The writer fills a payload with
 * plain stores, then publishes it with a release store of the flag; a
 * reader that sees the new value through an acquire load sees the payload.
 * A bell is how a reader sleeps until some flag changes: the writer rings
 * it after publishing, the reader reads it before looking at the flags and
 * sleeps only while it still reads the same.  On Linux a bell is a futex
 * word (FUTEX_WAIT / FUTEX_WAKE without _PRIVATE: the mapping is shared by
 * several processes); elsewhere the sleep is a short sleep loop.
 *
 * Flags and bells live in an int64_t array in a shared mapping (the
 * control area), 8-byte aligned; a bell takes one 8-byte slot.  A slot
 * used as a flag or a bell is only ever accessed through these functions;
 * other slots may hold plain payload (ordered by the flags).
 *
 * Plain declarations: this header is read by cffi's cdef.  Through cffi
 * every call releases the GIL, so a wait never blocks other threads. */
#ifndef SEER_FLAGS_H
#define SEER_FLAGS_H

#include <stdint.h>

/* One slot of the control area.  seq counts rings; waiters counts sleepers
 * so that a ring with nobody asleep makes no system call. */
typedef struct seer_bell {
    uint32_t seq;
    uint32_t waiters;
} seer_bell;

/* seer_flags_wait's conditions on flag i: equal to value[i], or different. */
#define SEER_FLAGS_EQ 0
#define SEER_FLAGS_NE 1
/* seer_flags_wait's return when the abort flag was set. */
#define SEER_FLAGS_ABORTED -1

/* Acquire load of one flag. */
int64_t seer_flag_load(const int64_t *flag);

/* Release store of one flag (its writer only). */
void seer_flag_store(int64_t *flag, int64_t value);

/* Atomic add (acq_rel); returns the value before. */
int64_t seer_flag_add(int64_t *flag, int64_t delta);

/* Acquire load of a bell's count: read it before checking the flags, pass
 * it to seer_bell_wait. */
uint32_t seer_bell_read(const seer_bell *bell);

/* Ring: count one more and wake every sleeper. */
void seer_bell_ring(seer_bell *bell);

/* Sleep while the bell still counts `seen`, at most timeout_s seconds
 * (< 0: no limit).  Returns 0 once it counts something else (or on a
 * signal or spurious wake-up), 1 on timeout: either way recheck. */
int seer_bell_wait(seer_bell *bell, uint32_t seen, double timeout_s);

/* Publish n flags, then ring nbells bells.  Flag i is base[index[i]] and
 * gets value[i] (release); bell j is the slot base[bells[j]]. */
void seer_flags_publish(int64_t *base, const int64_t *index, const int64_t *value, int32_t n,
                        const int64_t *bells, int32_t nbells);

/* Wait until at least `need` of the n flags base[index[i]] meet `mode`
 * against value[i], spinning (sched_yield) for spin_s seconds, then
 * sleeping on the bell base[bell], at most timeout_s seconds in all
 * (< 0: no limit).  hit[i] (if not NULL) says which flags met it; those
 * were read with acquire loads.  Returns how many met it (< need after a
 * timeout), or SEER_FLAGS_ABORTED as soon as base[abort] != 0 (abort < 0:
 * no abort flag). */
int32_t seer_flags_wait(int64_t *base, const int64_t *index, const int64_t *value, int32_t n, int32_t need,
                        int32_t mode, int64_t bell, int64_t abort, double spin_s, double timeout_s, uint8_t *hit);

#endif
