/* SEER dual-layer event queue: public C declarations.
 *
 * This header is plain C so that the cffi build (seer/_build.py) can read it
 * as its cdef after dropping the preprocessor lines.  Everything atomic lives
 * in seer_queue.c; callers only see an opaque handle.
 */
#ifndef SEER_QUEUE_H
#define SEER_QUEUE_H

#include <stdint.h>

/* The core defines the API's functions itself (see seer/seer.h). */
#define SEER_CORE_BUILD 1
#include "seer/seer.h"

typedef struct seer_queue seer_queue;

/* seer_event and the SEER_OK / SEER_E_* status codes: seer/seer_types.h. */

/* Returns NULL when memory cannot be had; sizes are checked by the caller. */
seer_queue *seer_queue_new(int32_t num_entities, int32_t num_kinds, uint32_t capacity);
void seer_queue_free(seer_queue *q);

/* Push n events.  sources/seqs may be NULL: the events are then external
 * (source -1) and numbered from one queue-wide counter.  All-or-nothing: on
 * an error nothing is pushed and *bad_index names the offending element
 * (-1 when the error concerns the whole batch, e.g. SEER_E_FULL). */
int seer_queue_push_many(seer_queue *q, const int32_t *entities, const double *times,
                         const int32_t *kinds, const int64_t *payloads,
                         const int32_t *sources, const uint32_t *seqs, int64_t n,
                         int64_t *bad_index);

/* Pop up to max_events events with time < horizon from entities nobody
 * holds, at most per_entity of each entity (<= 0 for no limit).  Output is
 * grouped by entity, each entity's events in (time, source, seq) order.
 * Every entity that contributed an event is claimed until released. */
int64_t seer_queue_pop(seer_queue *q, double horizon, seer_event *out, int64_t max_events,
                       int32_t per_entity);

/* End the claims on n entities (repeats next to each other count once, so
 * a popped batch's entity column can be passed as is).  Stops at the first entity that is not held
 * (SEER_E_NOT_CLAIMED, *bad_index set); the ones before it are released. */
int seer_queue_release(seer_queue *q, const int32_t *entities, int64_t n, int64_t *bad_index);

/* Make every entity with an event before horizon visible to pops. */
void seer_queue_advance(seer_queue *q, double horizon);

int64_t seer_queue_len(const seer_queue *q);
uint32_t seer_queue_capacity(const seer_queue *q);
int32_t seer_queue_num_entities(const seer_queue *q);
int32_t seer_queue_num_kinds(const seer_queue *q);
/* Smallest pending time (+inf when empty); exact when no entity is held. */
double seer_queue_min_time(const seer_queue *q);
/* Latest time handed out for entity (-inf before any pop). */
double seer_queue_floor(const seer_queue *q, int32_t entity);
int seer_queue_is_claimed(const seer_queue *q, int32_t entity);
/* Not thread-safe: drop every event and claim, reset floors and horizon. */
void seer_queue_clear(seer_queue *q);
/* Not thread-safe: rename entity e to new_of_old[e] (a permutation of
 * 0..num_entities-1), for the pending events' entity and source alike;
 * each entity keeps its events and floor under its new name, and ties
 * between an entity's simultaneous events follow the new source names.
 * SEER_E_ARG (not a permutation, or an entity is held) and SEER_E_NOMEM
 * change nothing. */
int seer_queue_relabel(seer_queue *q, const int32_t *new_of_old);
/* Bytes allocated by seer_queue_new for this queue. */
uint64_t seer_queue_footprint(const seer_queue *q);

#endif
