/* Lane-level queue operations for the runtime's native worker loop.  They
 * skip the Python-facing validation (the runtime validates emits itself) and
 * keep per-worker node caches so that the hot path touches no shared counter.
 * Internal: not part of cffi's cdef. */
#ifndef SEER_QUEUE_INTERNAL_H
#define SEER_QUEUE_INTERNAL_H

#include "seer_queue.h"

#define SEER_NODE_CACHE 128
#define SEER_NIL UINT32_MAX

typedef struct seer_node_cache {
    uint32_t n;
    uint32_t ids[SEER_NODE_CACHE];
} seer_node_cache;

/* Take one ready entity from layer 2 and claim it; 0 when none is ready. */
int seer_queue_take(seer_queue *q, uint32_t *entity);
/* Hand out the held entity's earliest event if it is before horizon; returns
 * its node id (to recycle) or SEER_NIL.  Does not touch the pending count. */
uint32_t seer_queue_next(seer_queue *q, uint32_t entity, double horizon, seer_event *out);
/* End the claim on a held entity (re-readies it if it has work left). */
void seer_queue_unclaim(seer_queue *q, uint32_t entity);

uint32_t seer_queue_alloc(seer_queue *q, seer_node_cache *c); /* SEER_NIL when full */
void seer_queue_recycle(seer_queue *q, seer_node_cache *c, uint32_t id);
void seer_queue_flush_cache(seer_queue *q, seer_node_cache *c);
seer_event *seer_queue_node_event(seer_queue *q, uint32_t id);
/* Push a node filled through seer_queue_node_event onto its entity's lane. */
void seer_queue_publish(seer_queue *q, uint32_t id);
void seer_queue_add_pending(seer_queue *q, int64_t delta);

#endif
