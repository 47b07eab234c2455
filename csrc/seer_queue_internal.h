/* Lane-level queue operations for the runtime's native worker loop.  They
 * skip the Python-facing validation (the runtime validates emits itself) and
 * keep per-worker node caches so that the hot path touches no shared counter.
 * Internal: not part of cffi's cdef. */
#ifndef SEER_QUEUE_INTERNAL_H
#define SEER_QUEUE_INTERNAL_H

#include "seer_queue.h"

#define SEER_NIL UINT32_MAX
#define SEER_KEY_INF 0xFFF0000000000000ull /* seer_queue_time_key(+inf) */

/* A worker's free nodes, used last-in first-out: the node it freed last is
 * the next it fills, while its line is still in this core's cache.  It
 * trades with the queue's free ring half a cache at a time, giving back
 * its older half, so a node that crosses to another core (and comes back
 * through the FIFO ring) has long left this core's cache.  limit: at most
 * SEER_NODE_CACHE, even, >= 2; seer_node_cache_limit sizes it to a pool.
 * Big enough to absorb what one window allocates beyond what it frees
 * (thousands of nodes in a big swarm's busiest tick), so that the nodes
 * stay hot across windows and steps. */
#define SEER_NODE_CACHE 16384
typedef struct seer_node_cache {
    uint32_t n;
    uint32_t limit;
    uint32_t ids[SEER_NODE_CACHE];
} seer_node_cache;

/* The cache limit for one of `workers` caches of a pool of `capacity`
 * nodes: up to SEER_NODE_CACHE, but all caches together hold at most a
 * sixteenth of the pool, so that nodes parked in other workers' caches
 * cannot make an emit find the pool empty while it is far from full.
 * (Pushes from outside a step take the caches back: seer_queue_set_reclaim.) */
static inline uint32_t seer_node_cache_limit(uint32_t capacity, int32_t workers) {
    uint64_t l = (uint64_t)capacity / (16u * (uint64_t)(workers > 0 ? workers : 1));
    if (l > SEER_NODE_CACHE) l = SEER_NODE_CACHE;
    if (l < 2) l = 2;
    return (uint32_t)(l & ~(uint64_t)1);
}

/* Take one ready entity from layer 2 and claim it; 0 when none is ready. */
int seer_queue_take(seer_queue *q, uint32_t *entity);
/* Hand out the held entity's earliest event if it is before horizon; returns
 * its node id (to recycle) or SEER_NIL.  Does not touch the pending count. */
uint32_t seer_queue_next(seer_queue *q, uint32_t entity, double horizon, seer_event *out);
/* The same for a claimant that no pusher can reach until its own later
 * synchronization (as for seer_queue_unclaim_private): no exchange. */
uint32_t seer_queue_next_private(seer_queue *q, uint32_t entity, double horizon, seer_event *out);
/* End the claim on a held entity (re-readies it if it has work left). */
void seer_queue_unclaim(seer_queue *q, uint32_t entity);
/* The same, returning the exact earliest pending time key it published
 * (later pushes can only lower the lane's key below it). */
uint64_t seer_queue_unclaim_key(seer_queue *q, uint32_t entity);
/* Put a node filled through seer_queue_node_event straight into the private
 * list of its entity, which the caller holds (a handler's event to its own
 * entity): no inbox CAS, no readying. */
void seer_queue_insert_held(seer_queue *q, uint32_t id);

/* Window bookkeeping split over lane ranges, so each worker of a pool does
 * its share (the runtime's parallel window decisions).  Keys: times mapped
 * to uint64 in the same order (SEER_KEY_INF: no event). */
static inline uint64_t seer_time_key(double t) { /* as seer_queue.c's time_key */
    uint64_t u;
    if (t == 0.0) t = 0.0;
    __builtin_memcpy(&u, &t, sizeof u);
    return (u >> 63) ? ~u : (u | (1ull << 63));
}
double seer_queue_key_time(uint64_t key);
/* Smallest next_key of lanes [lo, hi); exact when no lane there is held. */
uint64_t seer_queue_min_key_range(const seer_queue *q, int32_t lo, int32_t hi);
/* Raise the horizon to t and claim every idle lane of [lo, hi) with an
 * event before t, writing their ids to out (room for hi - lo) instead of
 * readying them: the caller runs them and unclaims them.  A lane that is
 * already in the ready ring is left there.  *rest: the smallest key of the
 * lanes not claimed.  Returns how many were claimed. */
int32_t seer_queue_claim_range(seer_queue *q, double t, int32_t lo, int32_t hi, uint32_t *out, uint64_t *rest);
/* seer_queue_claim_range for a caller that has the lanes of [lo, hi) to
 * itself (as for seer_queue_push_private_many: no thread pushes to any lane
 * until its own synchronization): a load and a store per lane where the
 * claim was a compare-and-swap, a locked RMW that waits for the store
 * buffer to drain. */
int32_t seer_queue_claim_range_private(seer_queue *q, double t, int32_t lo, int32_t hi, uint32_t *out,
                                       uint64_t *rest);
/* As claim_range_private, without a branch per lane: for lanes whose due
 * pattern no predictor learns (a big swarm's, in space order); where one
 * does, the branches cost less than the stores this makes to every lane. */
int32_t seer_queue_claim_range_flat(seer_queue *q, double t, int32_t lo, int32_t hi, uint32_t *out, uint64_t *rest);
/* Raise the horizon to t (never lowers it) and ready every lane of [lo, hi)
 * with an event before t; returns the smallest key of the others. */
uint64_t seer_queue_advance_range(seer_queue *q, double t, int32_t lo, int32_t hi);

uint32_t seer_queue_alloc(seer_queue *q, seer_node_cache *c); /* SEER_NIL when full */
/* fn(arg) gives back the free nodes its owner keeps outside the free ring
 * (a runtime's worker caches, kept from step to step) and returns nonzero
 * if it gave any; 0 when it may not now (a step is running).  push_many
 * calls it once before it reports SEER_E_FULL.  fn NULL: none.  Set before
 * the queue is shared; the owner clears it before it goes away. */
void seer_queue_set_reclaim(seer_queue *q, int (*fn)(void *), void *arg);
void seer_queue_recycle(seer_queue *q, seer_node_cache *c, uint32_t id);
void seer_queue_flush_cache(seer_queue *q, seer_node_cache *c);
seer_event *seer_queue_node_event(seer_queue *q, uint32_t id);
/* Push a node filled through seer_queue_node_event onto its entity's lane. */
void seer_queue_publish(seer_queue *q, uint32_t id);
/* The same without readying the lane, for a caller that claims or readies
 * it itself next: the runtime's owner of a lane range, which publishes the
 * events deferred to its lanes and then runs seer_queue_claim_range over
 * them (a lane held meanwhile by someone else is readied by its unclaim,
 * as after any push). */
void seer_queue_publish_quiet(seer_queue *q, uint32_t id);
/* Push n filled nodes onto their lanes with plain (relaxed) accesses,
 * neither readying the lanes nor doing any RMW, their cache misses
 * overlapped: only for a caller that has the lanes to itself, with no other
 * thread pushing to, draining or claiming them until the caller's own
 * synchronization orders them after this (the runtime's outbox delivery
 * between a window's end barrier and its claim). */
void seer_queue_push_private_many(seer_queue *q, const uint32_t *ids, int64_t n);
/* Start the cache misses of the entities a claimant runs next, so that
 * they overlap the handlers in between: lane's line, and the nodes that
 * held's drain and first pop read (its inbox top, its private list's head
 * and tail).  held must be a lane the caller holds; SEER_NIL: none. */
void seer_queue_prefetch_ahead(const seer_queue *q, uint32_t lane, uint32_t held);
/* seer_queue_unclaim_key for a claimant that knows no push can reach the
 * lane until a later synchronization (the runtime's deferred windows, where
 * every event for another entity waits in an outbox): no Dekker handshake,
 * no readying (its events are all at or after the window's end). */
uint64_t seer_queue_unclaim_private(seer_queue *q, uint32_t entity);
void seer_queue_add_pending(seer_queue *q, int64_t delta);

#endif
