/* SEER dual-layer event queue.
 *
 * Layer 1, one lane per entity.  Producers push chains of pool nodes onto the
 * lane's inbox, a Treiber stack that is only ever pushed with CAS and emptied
 * whole with one exchange, so it has no ABA problem.  The thread that holds
 * the entity (its claimant) moves the inbox into a private list kept sorted by
 * (time, source, seq); nobody else touches that list.  A pop whose lane held
 * only the inbox hands the events out straight from the sorted inbox
 * (small_chain: a sorting network on the stack for up to 32 events).
 *
 * Layer 2, global: a ring of entity ids whose next event lies before the
 * queue's horizon.  A lane's state carries QUEUED (the id is in the ring,
 * so it is there at most once) and CLAIMED (one consumer holds it).  Pops take
 * ids from the ring and turn QUEUED into CLAIMED; releases clear CLAIMED and
 * put the id back if the lane still has work before the horizon.
 *
 * The inbox's top and the state share one 64-bit word (LANE_W), so that
 *   a push's CAS sees the state it pushes onto (and, for an idle lane whose
 *     event is before the horizon, queues it in the same CAS);
 *   a claim from the ring takes the inbox and sets CLAIMED in one exchange;
 *   an unclaim is one CAS that succeeds only on an empty inbox: a push
 *     that slips in after the drain makes it fail, and it drains again.
 * Per lane and round of push, pop and release that is four locked RMWs
 * (push CAS, next_key CAS-min, the claim's exchange, the unclaim's CAS)
 * where separate inbox and state words took six (bench/bench_queue.py).
 *
 * The lower bound lane->next_key of the lane's earliest pending time is what
 * links the two layers: pushers lower it with a CAS-min, the claimant sets it
 * exactly on release.  Times are stored as order-preserving uint64 keys so
 * that this min is an integer CAS.
 *
 * Handshakes (Dekker-shaped: each side writes, then reads what the other
 * writes; seq_cst, and every write an RMW, never a plain seq_cst store, see
 * csrc/tests/litmus_sb.c), commented where they occur:
 *   push/advance: push CAS, next_key CAS-min, load horizon; against raise
 *     horizon, load word, load next_key (lane_scan, in advance,
 *     advance_range and claim_range);
 *   unclaim/advance: unclaim CAS, load horizon; against the same scan;
 *   push/unclaim needs none: both are RMWs on the word.
 * The horizon only rises (clear and relabel aside, which no thread runs
 * beside), so a key before a horizon value once loaded stays ready: pushes
 * and unclaims that see that much queue the lane in their own CAS.
 *
 * The runtime's deferred windows use plain stores where no pusher can run
 * (seer_queue_push_private_many, seer_queue_unclaim_private; see the defer
 * field in seer_runtime.c).
 *
 * Release/acquire edges (the rest; the rings have their own, seer_ring.h):
 *   push:    the word CAS (release part) -> the exchange that takes the
 *            inbox (acquire): the node contents, and the pending count added
 *            before the push;
 *   claim:   unclaim's CAS on the word (release part), continued by the RMWs
 *            after it (pushes, mark_queued) -> the next claimant's acquire
 *            RMW on the word: the private list (head, tail, node links) and
 *            the next_key it stored pass to the next holder, and to every
 *            later pusher, whose CAS-min so comes after that store;
 *   recycle: a node's last reader frees it through the free ring (R0) ->
 *            the next pusher's acquire of the ring's tail (A1), so its
 *            writes to the node come after every read of the old event.
 *            (A node never used before comes from the fresh counter, and
 *            has no earlier reader: take_nodes.)
 *
 * Progress (csrc/README.md): lane pushes, drains and the claim flag are
 * lock-free; anything that goes through a ring (readying an entity, taking
 * one, allocating or freeing nodes) inherits the rings' blocking publish.
 */
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE */
#include "seer_queue.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "seer_queue_internal.h"
#include "seer_ring.h"

#define NIL UINT32_MAX
/* Nodes in the free ring at the start (take_nodes), 640 KiB of them: the
 * fewest the ring ever cycles, so a node one thread frees goes round that
 * many before the ring hands it to another (a queue of 2^20 nodes with
 * 4,096 in flight ran fastest cycling 2^14; at 2^16, in L3 only, it lost
 * most of the gain: bench/results/queue_fresh_nodes.md).  A pool this
 * small or smaller starts as every pool did before 2026-12. */
#ifndef RING_START
#define RING_START 16384u
#endif
#define ST_QUEUED 1u
#define ST_CLAIMED 2u
/* A lane's word: its inbox's top node in the low half, its state above. */
#define LANE_W(top, st) (((uint64_t)(st) << 32) | (uint32_t)(top))
#define W_TOP(w) ((uint32_t)(w))
#define W_ST(w) ((uint32_t)((w) >> 32))

typedef struct seer_node {
    seer_event ev;
    uint32_t next;
    uint32_t pad;
} seer_node;

/* 32 bytes, two lanes to a cache line.  Padded to a line each, the lanes
 * of a big env do not fit in L2 next to its own rows (4096 entities:
 * 256 KiB streamed every window); neighbouring ids share a line but mostly
 * a worker too, as each worker claims a contiguous range and other
 * workers' events reach those lanes through the owner (outboxes), so the
 * sharing costs less than the cache the padding took.  The A/B is in commit
 * 697f4ff; bench/bench_queue.py's lane-depth sweep (bench/results/queue.md)
 * and bench/bench_uav.py (uav_swarm.md) measure the current layout. */
typedef struct seer_lane {
    /* LANE_W(inbox, state): the top of the Treiber stack of pushed nodes,
     * and ST_QUEUED | ST_CLAIMED.  One word, so that a push sees the state
     * it pushes onto, an unclaim succeeds only on an empty inbox, and a
     * claim from the ring takes the inbox, all in one RMW each. */
    _Alignas(32) _Atomic uint64_t word;
    _Atomic uint64_t next_key;  /* lower bound of the earliest pending time (key)        */
    _Atomic uint64_t floor_key; /* latest time handed out (key); read by push validation */
    /* Owned by the claimant; handed from one claimant to the next through the
     * release RMW / acquire RMW on word. */
    uint32_t head, tail;
} seer_lane;
_Static_assert(sizeof(seer_lane) == 32, "a lane is half a cache line");

struct seer_queue {
    _Alignas(SEER_CACHELINE) seer_ring free_ring;  /* indices of unused nodes     */
    seer_ring ready_ring;                           /* layer 2: ids of ready lanes */
    _Alignas(SEER_CACHELINE) _Atomic uint64_t horizon_key;
    char pad0[SEER_CACHELINE - sizeof(uint64_t)];
    _Alignas(SEER_CACHELINE) _Atomic int64_t pending;
    char pad1[SEER_CACHELINE - sizeof(int64_t)];
    _Alignas(SEER_CACHELINE) _Atomic uint32_t ext_seq;
    char pad2[SEER_CACHELINE - sizeof(uint32_t)];
    /* Nodes [fresh, capacity) were never handed out; the free ring holds only
     * nodes used and freed since (see take_nodes).  Read and written only
     * when the ring runs short; a line of its own all the same, off the
     * read-mostly fields below. */
    _Alignas(SEER_CACHELINE) _Atomic uint32_t fresh;
    char pad3[SEER_CACHELINE - sizeof(uint32_t)];
    seer_node *nodes;
    seer_lane *lanes;
    uint32_t *free_slots;
    uint32_t *ready_slots;
    int32_t num_entities;
    int32_t num_kinds;
    uint32_t capacity;
    uint64_t footprint;
    int (*reclaim)(void *); /* see seer_queue_set_reclaim */
    void *reclaim_arg;
};

/* ---- time keys -------------------------------------------------------- */

/* Map a double to a uint64 whose unsigned order is the double's order. */
static inline uint64_t time_key(double t) {
    uint64_t u;
    memcpy(&u, &t, sizeof u);
    u = (u << 1) == 0 ? 0 : u; /* -0.0 and +0.0 are the same instant */
    /* negative: all bits flipped; otherwise the sign bit set (no branch) */
    return u ^ ((uint64_t)((int64_t)u >> 63) | (1ull << 63));
}

static inline double key_time(uint64_t k) {
    uint64_t u = (k >> 63) ? (k & ~(1ull << 63)) : ~k;
    double t;
    memcpy(&t, &u, sizeof t);
    return t;
}

#define KEY_INF time_key(INFINITY)
#define KEY_NEG_INF time_key(-INFINITY)

static inline int ev_less(const seer_event *a, const seer_event *b) {
    if (a->time != b->time) return a->time < b->time;
    if (a->source != b->source) return a->source < b->source;
    return a->seq < b->seq;
}

static uint32_t pow2_at_least(uint32_t n) {
    uint32_t p = 1;
    while (p < n) p <<= 1;
    return p;
}

/* Pools of 2 MiB and more (the nodes, the lanes of a big env) are asked
 * for transparent huge pages: a window touches lanes and nodes all over
 * them, and with 4 KiB pages nearly every such access also misses the TLB,
 * which showed in the step time of the big uav_swarm_v0 scenarios (the A/B
 * is in commit 25c028b).  Only a hint: where THP is off it changes nothing. */
#define HUGE_PAGE ((size_t)2 << 20)
static void *aligned_zalloc(size_t bytes, uint64_t *footprint) {
    size_t rounded = (bytes + SEER_CACHELINE - 1) / SEER_CACHELINE * SEER_CACHELINE;
    void *p;
    if (rounded >= HUGE_PAGE) {
        rounded = (rounded + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
        p = aligned_alloc(HUGE_PAGE, rounded);
#ifdef MADV_HUGEPAGE
        if (p) (void)madvise(p, rounded, MADV_HUGEPAGE);
#endif
    } else {
        p = aligned_alloc(SEER_CACHELINE, rounded ? rounded : SEER_CACHELINE);
    }
    if (p) {
        memset(p, 0, rounded);
        *footprint += rounded;
    }
    return p;
}

/* ---- construction ------------------------------------------------------ */

static void reset_state(seer_queue *q) {
    /* The ring starts with the first RING_START nodes (all of a smaller pool),
     * the rest fresh (take_nodes). */
    const uint32_t start = q->capacity < RING_START ? q->capacity : RING_START;
    for (uint32_t i = 0; i < start; i++) q->free_slots[i] = i;
    seer_ring_init(&q->free_ring, q->free_slots, q->free_ring.size);
    atomic_store_explicit(&q->free_ring.prod.head, start, memory_order_relaxed);
    atomic_store_explicit(&q->free_ring.prod.tail, start, memory_order_relaxed);
    atomic_init(&q->fresh, start);
    seer_ring_init(&q->ready_ring, q->ready_slots, q->ready_ring.size);
    for (int32_t e = 0; e < q->num_entities; e++) {
        seer_lane *l = &q->lanes[e];
        atomic_init(&l->word, LANE_W(NIL, 0));
        atomic_init(&l->next_key, KEY_INF);
        atomic_init(&l->floor_key, KEY_NEG_INF);
        l->head = l->tail = NIL;
    }
    atomic_init(&q->horizon_key, KEY_NEG_INF);
    atomic_init(&q->pending, 0);
    atomic_init(&q->ext_seq, 0);
}

seer_queue *seer_queue_new(int32_t num_entities, int32_t num_kinds, uint32_t capacity) {
    if (num_entities <= 0 || num_kinds <= 0 || capacity == 0 || capacity > (1u << 31)) return NULL;
    uint64_t fp = 0;
    seer_queue *q = aligned_zalloc(sizeof *q, &fp);
    if (!q) return NULL;
    q->num_entities = num_entities;
    q->num_kinds = num_kinds;
    q->capacity = capacity;
    q->free_ring.size = pow2_at_least(capacity);
    q->ready_ring.size = pow2_at_least((uint32_t)num_entities);
    q->nodes = aligned_zalloc((size_t)capacity * sizeof(seer_node), &fp);
    q->lanes = aligned_zalloc((size_t)num_entities * sizeof(seer_lane), &fp);
    q->free_slots = aligned_zalloc((size_t)q->free_ring.size * sizeof(uint32_t), &fp);
    q->ready_slots = aligned_zalloc((size_t)q->ready_ring.size * sizeof(uint32_t), &fp);
    q->footprint = fp;
    if (!q->nodes || !q->lanes || !q->free_slots || !q->ready_slots) {
        seer_queue_free(q);
        return NULL;
    }
    reset_state(q);
    return q;
}

void seer_queue_free(seer_queue *q) {
    if (!q) return;
    free(q->nodes);
    free(q->lanes);
    free(q->free_slots);
    free(q->ready_slots);
    free(q);
}

void seer_queue_clear(seer_queue *q) { reset_state(q); }

/* ---- layer 2 ------------------------------------------------------------ */

/* Enqueue into a ring that has room by construction: the ready ring holds
 * each entity at most once (QUEUED) and the free ring each node at most
 * once, and both are at least as big as what they hold.  The bound holds for
 * every thread's view only through the ring's R1 -> A0 edge and the claim and
 * recycle edges above: whoever re-enqueues an id has seen (happens-after)
 * the consumer's R0 that took its previous entry.  A failed enqueue would
 * silently lose a ready entity (a hang) or a node (a smaller pool), so a
 * stale view, should the bound ever be broken by one, is waited out rather
 * than dropped. */
static inline void ring_put(seer_ring *r, const uint32_t *ids, uint32_t n) {
    unsigned spins = 0;
    while (!seer_ring_enqueue_bulk(r, ids, n)) seer_backoff(&spins);
}

/* Up to max unused nodes into dst: those in the ring first, then fresh
 * ones.  With every node in the ring from the start (as until 2026-12), a
 * node went round the whole pool between two uses: with 2^20 nodes (40
 * MiB) and a few thousand in flight, every push wrote nodes last used out
 * of every cache.  Handing out fresh nodes only when the ring runs out
 * keeps the nodes in use as few as the most ever in flight, RING_START at
 * least, and warm (bench/results/queue_fresh_nodes.md).  relaxed: fresh
 * only makes each id one taker's; no data passes through it (a fresh
 * node's zeroed memory predates the queue's sharing). */
static uint32_t take_nodes(seer_queue *q, uint32_t *dst, uint32_t max) {
    uint32_t k = seer_ring_dequeue(&q->free_ring, dst, max, 0);
    if (k == max) return k;
    uint32_t f = atomic_load_explicit(&q->fresh, memory_order_relaxed), take;
    do {
        take = q->capacity - f < max - k ? q->capacity - f : max - k;
        if (take == 0) return k;
    } while (!atomic_compare_exchange_weak_explicit(&q->fresh, &f, f + take, memory_order_relaxed,
                                                    memory_order_relaxed));
    for (uint32_t i = 0; i < take; i++) dst[k + i] = f + i;
    return k + take;
}

/* Turn a lane just taken from the ready ring from QUEUED into CLAIMED and
 * empty its inbox, in one exchange; returns the inbox's chain (newest
 * first), NIL if it was empty.  A QUEUED lane's state has one writer, the
 * owner of its ring entry: pushers only move the top, and mark_queued and
 * claim_idle leave a lane that is not idle alone; a push that lands first
 * is in the chain, one that comes after sees CLAIMED.  acquire: pairs with
 * the previous claimant's unclaim RMW on word (release part), read through
 * the RMWs after it (pushes, mark_queued), which continue its release
 * sequence: its private list is ours to read now; and with every push's
 * CAS (release part) that the chain holds: their node writes are visible. */
static inline uint32_t claim_take(seer_lane *l) {
    return W_TOP(atomic_exchange_explicit(&l->word, LANE_W(NIL, ST_CLAIMED), memory_order_acquire));
}

/* Mark entity e QUEUED unless it is already queued or held; 1 if this call
 * did, and so owns e's one ring entry (the caller must put e in the ring). */
static inline int mark_queued(seer_queue *q, uint32_t e) {
    seer_lane *l = &q->lanes[e];
    uint64_t w = atomic_load_explicit(&l->word, memory_order_seq_cst);
    while (W_ST(w) == 0) {
        /* The winner of this CAS owns the one ring entry of e.  As an RMW it
         * continues the release sequence of the last claimant's unclaim, so
         * the next claimant's acquire still synchronizes with that unclaim.
         * seq_cst: the handshakes with advance (see there).  A failure is a
         * push that moved the top, or a claim: look again. */
        if (atomic_compare_exchange_weak_explicit(&l->word, &w, w | LANE_W(0, ST_QUEUED), memory_order_seq_cst,
                                                  memory_order_seq_cst))
            return 1;
    }
    return 0;
}

/* The state of lane l, then its next_key, for the scans that raised the
 * horizon (advance, claim_range): the Dekker handshakes with pushers and
 * unclaims (see seer_queue_unclaim_key).  seq_cst, and the word first: an
 * unclaim stores next_key with a plain store before its seq_cst CAS on
 * word, so a scan that reads that CAS (or an RMW after it) synchronizes
 * with it and sees the key; one that reads the word before it sees CLAIMED
 * and leaves the lane to that unclaim, which then sees the raised horizon. */
static inline uint64_t lane_scan(seer_lane *l, uint32_t *st) {
    *st = W_ST(atomic_load_explicit(&l->word, memory_order_seq_cst));
    return atomic_load_explicit(&l->next_key, memory_order_seq_cst);
}

/* Put entity e in the ready ring unless it is already there or held. */
static void make_ready(seer_queue *q, uint32_t e) {
    if (mark_queued(q, e)) ring_put(&q->ready_ring, &e, 1);
}

static inline void cas_min(_Atomic uint64_t *x, uint64_t v) {
    uint64_t cur = atomic_load_explicit(x, memory_order_seq_cst);
    while (v < cur &&
           !atomic_compare_exchange_weak_explicit(x, &cur, v, memory_order_seq_cst, memory_order_seq_cst)) {
    }
}

/* Raise the horizon to hk; 1 if this call raised it. */
static int raise_horizon(seer_queue *q, uint64_t hk) {
    uint64_t cur = atomic_load_explicit(&q->horizon_key, memory_order_seq_cst);
    while (hk > cur) {
        /* seq_cst (Dekker with pushers and unclaims): either a pusher or an
         * unclaim sees the new horizon and readies its entity itself, or our
         * loads of the word and next_key (after this RMW in the single total
         * order: lane_scan) see its CAS and key. */
        if (atomic_compare_exchange_weak_explicit(&q->horizon_key, &cur, hk, memory_order_seq_cst,
                                                  memory_order_seq_cst))
            return 1;
    }
    return 0;
}

void seer_queue_advance(seer_queue *q, double horizon) {
    uint64_t hk = time_key(horizon);
    if (!raise_horizon(q, hk)) return;
    for (int32_t e = 0; e < q->num_entities; e++) {
        uint32_t st;
        /* a lane queued or held is someone else's to run */
        if (lane_scan(&q->lanes[e], &st) < hk && st == 0) make_ready(q, (uint32_t)e);
    }
}

uint64_t seer_queue_advance_range(seer_queue *q, double t, int32_t lo, int32_t hi) {
    uint64_t hk = time_key(t), rest = KEY_INF;
    /* Every worker of the pool calls this for its own range with the same
     * t: the first raises the horizon, the others' CAS fails on it (a
     * seq_cst load of the raised value), so each caller's next_key loads
     * below come after a seq_cst access that saw hk: the Dekker argument
     * of seer_queue_advance holds range by range. */
    raise_horizon(q, hk);
    for (int32_t e = lo; e < hi; e++) {
        uint32_t st;
        uint64_t k = lane_scan(&q->lanes[e], &st);
        if (k < hk) {
            if (st == 0) make_ready(q, (uint32_t)e);
        } else if (k < rest) {
            rest = k;
        }
    }
    return rest;
}

/* Lane e, idle with an event before the horizon, claimed for the caller;
 * 0 if it is QUEUED or held (whoever takes it from the ring runs it). */
static inline int claim_idle(seer_lane *l, int priv) {
    if (priv) {
        /* Idle -> claimed is ours alone to make: only a pusher (none runs)
         * or an unclaim that readies (none here: the private unclaim does
         * not) turns an idle lane QUEUED.  acquire: pairs with the last
         * unclaim's release store, so the private list is ours (the
         * barrier already orders it; this costs nothing). */
        const uint64_t w = atomic_load_explicit(&l->word, memory_order_acquire);
        if (W_ST(w) != 0) return 0;
        atomic_store_explicit(&l->word, w | LANE_W(0, ST_CLAIMED), memory_order_relaxed);
        return 1;
    }
    uint64_t w = atomic_load_explicit(&l->word, memory_order_relaxed);
    while (W_ST(w) == 0) {
        /* seq_cst (acquire part): pairs with the last unclaim's RMW on word
         * (release part), as claim_take's does, so the private list is
         * ours; the inbox stays where it is (a drain takes it).  A failure
         * is a push that moved the top (look again) or a pusher or unclaim
         * that put the lane in the ready ring first (give up). */
        if (atomic_compare_exchange_weak_explicit(&l->word, &w, w | LANE_W(0, ST_CLAIMED), memory_order_seq_cst,
                                                  memory_order_relaxed))
            return 1;
    }
    return 0;
}

/* seer_queue_claim_range, and its private form (priv: no thread pushes to
 * the lanes meanwhile, so no handshake and no CAS). */
static int32_t claim_range(seer_queue *q, double t, int32_t lo, int32_t hi, uint32_t *out, uint64_t *rest,
                           int priv) {
    uint64_t hk = time_key(t), other = KEY_INF;
    int32_t n = 0;
    raise_horizon(q, hk); /* the same Dekker argument as advance_range */
    for (int32_t e = lo; e < hi; e++) {
        seer_lane *l = &q->lanes[e];
        /* relaxed when private: no pusher runs, and the keys were written
         * before the caller's synchronization. */
        uint32_t st;
        uint64_t k = priv ? atomic_load_explicit(&l->next_key, memory_order_relaxed) : lane_scan(l, &st);
        if (k < hk) {
            if (claim_idle(l, priv)) out[n++] = (uint32_t)e;
        } else if (k < other) {
            other = k;
        }
    }
    *rest = other;
    return n;
}

int32_t seer_queue_claim_range(seer_queue *q, double t, int32_t lo, int32_t hi, uint32_t *out, uint64_t *rest) {
    return claim_range(q, t, lo, hi, out, rest, 0);
}

int32_t seer_queue_claim_range_private(seer_queue *q, double t, int32_t lo, int32_t hi, uint32_t *out,
                                       uint64_t *rest) {
    return claim_range(q, t, lo, hi, out, rest, 1);
}

int32_t seer_queue_claim_range_flat(seer_queue *q, double t, int32_t lo, int32_t hi, uint32_t *out, uint64_t *rest) {
    const uint64_t hk = time_key(t);
    uint64_t other = KEY_INF;
    int32_t n = 0;
    raise_horizon(q, hk);
    for (int32_t e = lo; e < hi; e++) {
        seer_lane *l = &q->lanes[e];
        /* relaxed, acquire: as claim_range's private path and claim_idle's */
        const uint64_t k = atomic_load_explicit(&l->next_key, memory_order_relaxed);
        const uint64_t w = atomic_load_explicit(&l->word, memory_order_acquire);
        const int due = k < hk, take = due & (W_ST(w) == 0);
        /* written back unchanged where not taken: no other thread touches
         * the lanes (claim_idle) */
        atomic_store_explicit(&l->word, w | LANE_W(0, (uint32_t)take * ST_CLAIMED), memory_order_relaxed);
        out[n] = (uint32_t)e;
        n += take;
        other = !due && k < other ? k : other;
    }
    *rest = other;
    return n;
}

uint64_t seer_queue_min_key_range(const seer_queue *q, int32_t lo, int32_t hi) {
    uint64_t m = KEY_INF;
    for (int32_t e = lo; e < hi; e++) {
        /* relaxed: the caller is ordered after every unclaim and push of
         * the lanes (the runtime's barrier); nothing is read through it. */
        uint64_t k = atomic_load_explicit(&((seer_queue *)q)->lanes[e].next_key, memory_order_relaxed);
        if (k < m) m = k;
    }
    return m;
}

double seer_queue_key_time(uint64_t key) { return key_time(key); }

/* ---- push --------------------------------------------------------------- */

static uint64_t *group_scratch(size_t n);
static uint32_t *id_scratch(size_t n);

/* push_many groups a batch by entity (below) when it is big against the
 * entity count; its scratch then holds, per entity, the smallest key of its
 * events (uint64), then the group bounds (int32, E + 1), then the events'
 * order (int32, n). */
static inline int push_groups(const seer_queue *q, int64_t n) {
    return n >= 256 && (int64_t)q->num_entities <= 4 * n;
}
static inline size_t group_words(int32_t num_entities, int64_t n) { /* uint64 words */
    return (size_t)num_entities + ((size_t)num_entities + 1 + (size_t)n + 1) / 2;
}

/* The first bad event of a batch that scan_batch found bad: its status,
 * its index in *bad_index. */
static int first_bad(const seer_queue *q, const int32_t *entities, const double *times, const int32_t *kinds,
                     int64_t n, int64_t *bad_index) {
    for (int64_t i = 0; i < n; i++) {
        int32_t e = entities[i];
        if (e < 0 || e >= q->num_entities) return *bad_index = i, SEER_E_ENTITY;
        if (kinds[i] < 0 || kinds[i] >= q->num_kinds) return *bad_index = i, SEER_E_KIND;
        if (!isfinite(times[i])) return *bad_index = i, SEER_E_TIME;
        /* relaxed: validation against the claimant's floor is advisory; the
         * runtime's lookahead rule is what rules out races here. */
        if (time_key(times[i]) < atomic_load_explicit(&((seer_queue *)q)->lanes[e].floor_key, memory_order_relaxed))
            return *bad_index = i, SEER_E_PAST;
    }
    return SEER_OK;
}

/* Check a whole batch in one pass with no branch per event (first_bad
 * names the culprit only when there is one).  1 if every event is good. */
static int scan_batch(const seer_queue *q, const int32_t *entities, const double *times, const int32_t *kinds,
                      int64_t n) {
    const uint32_t E = (uint32_t)q->num_entities, K = (uint32_t)q->num_kinds;
    seer_lane *L = q->lanes;
    uint32_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t e = (uint32_t)entities[i];
        const uint32_t bad_e = e >= E;
        e = bad_e ? 0 : e; /* keeps the read below in range */
        uint64_t u;
        memcpy(&u, &times[i], sizeof u);
        /* relaxed, as in first_bad */
        const uint64_t floor = atomic_load_explicit(&L[e].floor_key, memory_order_relaxed);
        bad |= bad_e | ((uint32_t)kinds[i] >= K) | ((u & 0x7ff0000000000000ull) == 0x7ff0000000000000ull) |
               (time_key(times[i]) < floor);
    }
    return !bad;
}

/* scan_batch for a batch that push_many groups: counts each entity's
 * events into cnt[e + 1] and keeps the smallest key of each in kmin[e]
 * (KEY_INF and 0 on entry) on the way, and checks the floors once per
 * entity, on its smallest key, not once per event (a load from the lane,
 * all over the lanes in the batch's order). */
static int scan_grouped(const seer_queue *q, const int32_t *entities, const double *times, const int32_t *kinds,
                        int64_t n, uint64_t *kmin, int32_t *cnt) {
    const uint32_t E = (uint32_t)q->num_entities, K = (uint32_t)q->num_kinds;
    uint32_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t e = (uint32_t)entities[i];
        const uint32_t bad_e = e >= E;
        e = bad_e ? 0 : e; /* keeps the writes below in range */
        uint64_t u;
        memcpy(&u, &times[i], sizeof u);
        bad |= bad_e | ((uint32_t)kinds[i] >= K) | ((u & 0x7ff0000000000000ull) == 0x7ff0000000000000ull);
        const uint64_t k = time_key(times[i]);
        cnt[e + 1]++;
        kmin[e] = k < kmin[e] ? k : kmin[e];
    }
    seer_lane *L = q->lanes;
    for (uint32_t e = 0; e < E; e++) /* relaxed, as in first_bad */
        bad |= kmin[e] < atomic_load_explicit(&L[e].floor_key, memory_order_relaxed);
    return !bad;
}

/* Fill node ids[p] with event ord[p] for every slot p: the events grouped
 * by entity (ord, from a counting sort), each group in push order, each
 * node linked to the one before it (a group's first is linked at publish).
 * The nodes are written in the order of ids[], consecutive nodes where the
 * pool hands out a run of them, which the hardware's prefetcher follows;
 * scattered writes (the batch's own order) missed the cache one by one.
 * The flags are constants at the call sites, so each variant is its own
 * loop with no test per event. */
static inline __attribute__((always_inline)) void fill_grouped(seer_node *N, const uint32_t *ids, const int32_t *ord,
                                                               const int32_t *entities, const double *times,
                                                               const int32_t *kinds, const int64_t *payloads,
                                                               const int32_t *sources, const uint32_t *seqs,
                                                               uint32_t base_seq, int64_t n, int has_pay, int has_src,
                                                               int has_seq) {
    uint32_t prev = NIL;
    for (int64_t p = 0; p < n; p++) {
        if (p + 8 < n) __builtin_prefetch(&N[ids[p + 8]], 1);
        const int32_t i = ord[p];
        seer_node *nd = &N[ids[p]];
        uint64_t u;
        memcpy(&u, &times[i], sizeof u);
        u = (u << 1) == 0 ? 0 : u; /* -0.0 and +0.0 are the same instant */
        memcpy(&nd->ev.time, &u, sizeof u);
        nd->ev.payload = has_pay ? payloads[i] : 0;
        nd->ev.entity = entities[i];
        nd->ev.kind = kinds[i];
        nd->ev.source = has_src ? sources[i] : -1;
        nd->ev.seq = has_seq ? seqs[i] : base_seq + (uint32_t)i;
        nd->next = prev;
        prev = ids[p];
    }
}

/* Push a chain first .. last (newest first, last's next is set here) onto
 * lane e's inbox and lower its next_key to run_min; with ready, make e
 * ready if run_min is before the horizon.  1 if this call made e QUEUED,
 * so that the caller must put it in the ready ring.
 *
 * The CAS that pushes sees the state it pushes onto:
 *   CLAIMED: the holder's unclaim cannot succeed before it has drained
 *     this chain (its CAS expects an empty inbox), and then it sets
 *     next_key exactly: nothing more to do here;
 *   QUEUED: the lane is in the ring; only next_key is lowered;
 *   idle: next_key is lowered, and the lane readied if run_min is before
 *     the horizon.  The horizon only rises, so a run_min before the value
 *     loaded ahead of the CAS is ready for good, and the same CAS makes
 *     it QUEUED; otherwise the horizon is looked at again after the
 *     CAS-min (Dekker with advance and claim_range: either they see the
 *     lowered key, or we see their horizon) and mark_queued tries. */
static inline int push_chain(seer_queue *q, uint32_t e, uint32_t first, uint32_t last, uint64_t run_min,
                             int ready) {
    seer_lane *l = &q->lanes[e];
    /* relaxed: a value the horizon had, and it only rises; see above */
    const int before = ready && run_min < atomic_load_explicit(&q->horizon_key, memory_order_relaxed);
    /* relaxed: only a guess for the CAS; nothing is read through it. */
    uint64_t w = atomic_load_explicit(&l->word, memory_order_relaxed);
    uint64_t nw;
    do {
        q->nodes[last].next = W_TOP(w);
        nw = LANE_W(first, W_ST(w) | (before && W_ST(w) == 0 ? ST_QUEUED : 0));
        /* seq_cst (release part): the node writes before it happen-before
         * the claimant's acquire exchange of the word; seq_cst for the
         * handshake with advance below.  relaxed on failure: we only relink
         * and retry. */
    } while (!atomic_compare_exchange_weak_explicit(&l->word, &w, nw, memory_order_seq_cst, memory_order_relaxed));
    if (W_ST(w) & ST_CLAIMED) return 0;
    cas_min(&l->next_key, run_min);
    if (W_ST(w) != 0 || !ready) return 0; /* queued before us */
    if (W_ST(nw) != 0) return 1;          /* queued by our CAS */
    return run_min < atomic_load_explicit(&q->horizon_key, memory_order_seq_cst) && mark_queued(q, e);
}

int seer_queue_push_many(seer_queue *q, const int32_t *entities, const double *times,
                         const int32_t *kinds, const int64_t *payloads, const int32_t *sources,
                         const uint32_t *seqs, int64_t n, int64_t *bad_index) {
    *bad_index = -1;
    if (n <= 0) return n == 0 ? SEER_OK : SEER_E_ARG;
    const int32_t E = q->num_entities;
    /* Group the batch by entity (a stable counting sort) when it is big
     * against the entity count: each lane then gets one chain and one CAS
     * per batch, its nodes take consecutive slots of the reserved ids
     * (consecutive nodes, where the pool hands out a run of them), and the
     * lanes are published in entity order, so the claimant's drain walks
     * memory in order.  The validating pass also counts the groups and
     * their smallest keys; the filling pass reads the batch in push order
     * and writes each event to its group's next node. */
    uint64_t *kmin = NULL;
    int32_t *cnt = NULL;
    if (push_groups(q, n) && (kmin = group_scratch(group_words(E, n)))) {
        cnt = (int32_t *)(kmin + E);
        for (int32_t e = 0; e < E; e++) kmin[e] = KEY_INF;
        memset(cnt, 0, sizeof(int32_t) * ((size_t)E + 1));
    }
    if (!(cnt ? scan_grouped(q, entities, times, kinds, n, kmin, cnt) : scan_batch(q, entities, times, kinds, n)))
        return first_bad(q, entities, times, kinds, n, bad_index);
    if ((uint64_t)n > q->capacity) return SEER_E_FULL;

    uint32_t base_seq = 0;
    if (!seqs) base_seq = atomic_fetch_add_explicit(&q->ext_seq, (uint32_t)n, memory_order_relaxed);
    /* Reserve every node before publishing any, into this thread's scratch
     * array, so a failed push changes nothing.  (Chained through the nodes'
     * next fields instead, the publish loop below walked that chain one
     * dependent load after another over nodes in the free ring's order,
     * scattered over the pool once pops have recycled them out of order:
     * half of push_many's time at a lane depth of 256 with random times.) */
    uint32_t *ids = id_scratch((size_t)n);
    if (!ids) return SEER_E_NOMEM;
    int64_t got = 0;
    int reclaimed = 0;
    while (got < n) {
        uint32_t k = take_nodes(q, ids + got, (uint32_t)(n - got));
        if (k == 0 && !reclaimed && q->reclaim) {
            /* The free nodes may be in a runtime's worker caches. */
            reclaimed = 1;
            if (q->reclaim(q->reclaim_arg)) continue;
        }
        if (k == 0) { /* shortage: return what we took */
            if (got) ring_put(&q->free_ring, ids, (uint32_t)got);
            return SEER_E_FULL;
        }
        got += k;
    }

    /* Count before publishing so that a concurrent pop never drives the
     * pending count below zero.  relaxed is enough: the add is sequenced
     * before the push CAS on the word (release), the pop's subtract after
     * its exchange (acquire), so the add happens-before the subtract and
     * comes first in pending's modification order. */
    atomic_fetch_add_explicit(&q->pending, n, memory_order_relaxed);

    /* Entities readied by this push go into the ring in bulk (one ring
     * reservation per 256, not per lane); until then they are QUEUED, so
     * nobody else enqueues them, and a consumer simply cannot take them
     * yet.  All are in the ring before the call returns. */
    uint32_t readied[256];
    uint32_t nready = 0;
    if (cnt) {
        int32_t *ord = cnt + E + 1;
        for (int32_t e = 0; e < E; e++) cnt[e + 1] += cnt[e]; /* cnt[e]: group e's first slot */
        for (int64_t i = 0; i < n; i++) ord[cnt[entities[i]]++] = (int32_t)i;
        if (payloads && !sources && !seqs) /* push_many from Python, and the runtime's */
            fill_grouped(q->nodes, ids, ord, entities, times, kinds, payloads, sources, seqs, base_seq, n, 1, 0, 0);
        else
            fill_grouped(q->nodes, ids, ord, entities, times, kinds, payloads, sources, seqs, base_seq, n,
                         payloads != NULL, sources != NULL, seqs != NULL);
        /* cnt[e] is group e's end now, and group e starts where e - 1's ends */
        int32_t lo = 0;
        for (int32_t e = 0; e < E; e++) {
            const int32_t hi = cnt[e];
            if (hi == lo) continue;
            if (push_chain(q, (uint32_t)e, ids[hi - 1], ids[lo], kmin[e], 1)) {
                readied[nready++] = (uint32_t)e;
                if (nready == 256) {
                    ring_put(&q->ready_ring, readied, nready);
                    nready = 0;
                }
            }
            lo = hi;
        }
        if (nready) ring_put(&q->ready_ring, readied, nready);
        return SEER_OK;
    }

    int64_t j = 0;
    while (j < n) {
        const int32_t e = entities[j];
        /* A run of consecutive events for the same entity becomes one chain
         * pushed with one CAS.  The chain is linked newest-first, as if each
         * event had been pushed on the stack one by one. */
        uint32_t first = NIL, last = NIL;
        uint64_t run_min = KEY_INF;
        for (; j < n && entities[j] == e; j++) {
            const uint32_t id = ids[j];
            if (j + 8 < n) __builtin_prefetch(&q->nodes[ids[j + 8]], 1);
            seer_node *nd = &q->nodes[id];
            nd->ev.time = times[j] == 0.0 ? 0.0 : times[j];
            nd->ev.payload = payloads ? payloads[j] : 0;
            nd->ev.entity = e;
            nd->ev.kind = kinds[j];
            nd->ev.source = sources ? sources[j] : -1;
            nd->ev.seq = seqs ? seqs[j] : base_seq + (uint32_t)j;
            nd->next = first;
            if (last == NIL) last = id;
            first = id;
            uint64_t k = time_key(nd->ev.time);
            if (k < run_min) run_min = k;
        }
        if (push_chain(q, (uint32_t)e, first, last, run_min, 1)) {
            readied[nready++] = (uint32_t)e;
            if (nready == 256) {
                ring_put(&q->ready_ring, readied, nready);
                nready = 0;
            }
        }
    }
    if (nready) ring_put(&q->ready_ring, readied, nready);
    return SEER_OK;
}

/* Not thread-safe, like clear.  Every pending event is taken out (pop
 * hands them over grouped by entity), the queue is reset, and the events go
 * back in under their new names through push_many, which sorts each lane
 * by the new (time, source, seq) keys.  Everything that can fail is
 * checked or reserved before the first event is taken out: the permutation,
 * the buffers, this thread's push scratch. */
int seer_queue_relabel(seer_queue *q, const int32_t *new_of_old) {
    const int32_t E = q->num_entities;
    const int64_t n = seer_queue_len(q);
    uint8_t *seen = calloc((size_t)E, 1);
    uint64_t *floors = malloc(sizeof(uint64_t) * (size_t)E);
    const size_t m = n > 0 ? (size_t)n : 1;
    seer_event *evs = malloc(sizeof(seer_event) * m);
    int32_t *ent = malloc(sizeof(int32_t) * m), *kinds = malloc(sizeof(int32_t) * m);
    int32_t *srcs = malloc(sizeof(int32_t) * m);
    double *times = malloc(sizeof(double) * m);
    int64_t *payloads = malloc(sizeof(int64_t) * m);
    uint32_t *seqs = malloc(sizeof(uint32_t) * m);
    int rc = SEER_OK;
    if (!seen || !floors || !evs || !ent || !kinds || !srcs || !times || !payloads || !seqs || !id_scratch(m) ||
        (push_groups(q, (int64_t)m) && !group_scratch(group_words(E, (int64_t)m))))
        rc = SEER_E_NOMEM;
    for (int32_t e = 0; e < E && rc == SEER_OK; e++) {
        const int32_t v = new_of_old[e];
        if (v < 0 || v >= E || seen[v]) rc = SEER_E_ARG; /* not a permutation */
        else seen[v] = 1;
        if (seer_queue_is_claimed(q, e)) rc = SEER_E_ARG; /* its holder would lose it */
    }
    if (rc == SEER_OK && n > 0) {
        for (int32_t e = 0; e < E; e++) floors[e] = atomic_load_explicit(&q->lanes[e].floor_key, memory_order_relaxed);
        const uint32_t ext = atomic_load_explicit(&q->ext_seq, memory_order_relaxed);
        const int64_t got = seer_queue_pop(q, INFINITY, evs, n, 0);
        reset_state(q);
        /* the floors and the external numbering go on as if nothing moved */
        for (int32_t e = 0; e < E; e++)
            atomic_store_explicit(&q->lanes[new_of_old[e]].floor_key, floors[e], memory_order_relaxed);
        atomic_store_explicit(&q->ext_seq, ext, memory_order_relaxed);
        for (int64_t i = 0; i < got; i++) {
            const seer_event *ev = &evs[i];
            ent[i] = new_of_old[ev->entity];
            srcs[i] = ev->source >= 0 ? new_of_old[ev->source] : ev->source;
            times[i] = ev->time;
            kinds[i] = ev->kind;
            payloads[i] = ev->payload;
            seqs[i] = ev->seq;
        }
        int64_t bad;
        /* got == n: nothing is held (checked above) and nothing is in flight
         * (a runtime delivers its deferred events before a step returns) */
        rc = seer_queue_push_many(q, ent, times, kinds, payloads, srcs, seqs, got, &bad);
    }
    free(seen), free(floors), free(evs), free(ent), free(kinds), free(srcs), free(times), free(payloads), free(seqs);
    return rc;
}

/* ---- claimant-side lane maintenance -------------------------------------- */

static uint32_t merge_lists(seer_node *N, uint32_t a, uint32_t b, uint32_t *tail_out) {
    /* Stable: on equal keys the element of a (pushed earlier) goes first. */
    uint32_t head = NIL, *link = &head, tail = NIL;
    while (a != NIL && b != NIL) {
        if (ev_less(&N[b].ev, &N[a].ev)) {
            *link = b;
            tail = b;
            link = &N[b].next;
            b = N[b].next;
        } else {
            *link = a;
            tail = a;
            link = &N[a].next;
            a = N[a].next;
        }
    }
    *link = a != NIL ? a : b;
    uint32_t rest = a != NIL ? a : b;
    while (rest != NIL) {
        tail = rest;
        rest = N[rest].next;
    }
    if (tail_out) *tail_out = tail;
    return head;
}

/* The drain sorts in a flat array, not through the nodes: one pass gathers
 * (key, id) records from the inbox chain, the sort runs over contiguous
 * memory (a bucket sort, below, on the time key alone, stable; equal times
 * are then put in (source, seq) order), one pass relinks the nodes.  A
 * linked-list merge sort touches every node once per merge level, scattered
 * over the pool; with deep lanes (thousands of events) each level misses the
 * cache on every node, so the pop rate fell with lane depth and arrival
 * disorder. */
typedef struct sort_rec {
    uint64_t k; /* time key; ties keep push order here and are settled by ev_less after */
    uint32_t id;
    uint32_t pad;
} sort_rec;

static inline int rec_less(const sort_rec *a, const sort_rec *b) { return a->k < b->k; }

#define SORT_STACK 256 /* records on the stack; deeper drains use the thread's buffer */
#define SORT_RUN 16    /* runs sorted by insertion before merging */

/* A growing per-thread buffer for deep drains, freed when the thread ends.
 * Only the claimant of a lane drains it, and a thread drains one lane at a
 * time, so one buffer per thread suffices. */
static pthread_key_t sort_key;
static pthread_once_t sort_once = PTHREAD_ONCE_INIT;
typedef struct sort_buf {
    sort_rec *p;
    size_t cap; /* records */
    void *g; /* uint64: push_many's grouping */
    size_t gcap;
    void *ids; /* uint32: push_many's reserved nodes */
    size_t icap;
} sort_buf;
static void sort_buf_free(void *b) {
    if (b) {
        free(((sort_buf *)b)->p);
        free(((sort_buf *)b)->g);
        free(((sort_buf *)b)->ids);
    }
    free(b);
}
static void sort_key_init(void) { (void)pthread_key_create(&sort_key, sort_buf_free); }

/* This thread's scratch buffers, created on first use (NULL on failure). */
static sort_buf *thread_buf(void) {
    pthread_once(&sort_once, sort_key_init);
    sort_buf *b = pthread_getspecific(sort_key);
    if (!b) {
        b = calloc(1, sizeof *b);
        if (!b || pthread_setspecific(sort_key, b) != 0) {
            free(b);
            return NULL;
        }
    }
    return b;
}

/* This thread's buffer with room for 3n records, NULL on failure; grown
 * with realloc, so what it held is kept (sort_chain fills it as it walks). */
static sort_rec *sort_scratch(size_t n) {
    sort_buf *b = thread_buf();
    if (!b) return NULL;
    if (b->cap < 3 * n) {
        size_t cap = 3 * n < 4096 ? 4096 : 3 * n;
        sort_rec *p = realloc(b->p, cap * sizeof(sort_rec));
        if (!p) return NULL;
        b->p = p;
        b->cap = cap;
    }
    return b->p;
}

/* *buf with room for n elements of elem bytes (at least 4096), grown
 * without keeping what it held; NULL on failure. */
static void *scratch_room(void **buf, size_t *cap, size_t n, size_t elem) {
    if (*cap < n) {
        const size_t want = n < 4096 ? 4096 : n;
        void *p = malloc(want * elem);
        if (!p) return NULL;
        free(*buf);
        *buf = p;
        *cap = want;
    }
    return *buf;
}

/* Per-thread scratch for push_many's reserved node ids (NULL on failure). */
static uint32_t *id_scratch(size_t n) {
    sort_buf *b = thread_buf();
    return b ? scratch_room(&b->ids, &b->icap, n, sizeof(uint32_t)) : NULL;
}

/* Per-thread scratch of n uint64 words for push_many's grouping (NULL on
 * failure). */
static uint64_t *group_scratch(size_t n) {
    sort_buf *b = thread_buf();
    return b ? scratch_room(&b->g, &b->gcap, n, sizeof(uint64_t)) : NULL;
}

/* Stable sort of r[0..n); tmp has room for n records.  Returns the buffer
 * that holds the result (r or tmp). */
static sort_rec *sort_recs(sort_rec *r, sort_rec *tmp, size_t n) {
    for (size_t lo = 0; lo < n; lo += SORT_RUN) {
        size_t hi = lo + SORT_RUN < n ? lo + SORT_RUN : n;
        for (size_t i = lo + 1; i < hi; i++) {
            sort_rec x = r[i];
            size_t j = i;
            for (; j > lo && rec_less(&x, &r[j - 1]); j--) r[j] = r[j - 1];
            r[j] = x;
        }
    }
    sort_rec *src = r, *dst = tmp;
    for (size_t width = SORT_RUN; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t a = lo, b = mid, o = lo;
            if (mid < hi && !rec_less(&src[mid], &src[mid - 1])) { /* already in order */
                memcpy(dst + lo, src + lo, (hi - lo) * sizeof(sort_rec));
                continue;
            }
            /* Branch-free: on random input the comparison is a coin toss,
             * and a mispredicted branch per record cost more than the move. */
            while (a < mid && b < hi) {
                const int tb = rec_less(&src[b], &src[a]);
                const sort_rec *pick = tb ? &src[b] : &src[a];
                dst[o++] = *pick;
                b += (size_t)tb;
                a += (size_t)!tb;
            }
            while (a < mid) dst[o++] = src[a++];
            while (b < hi) dst[o++] = src[b++];
        }
        sort_rec *t = src;
        src = dst;
        dst = t;
    }
    return src;
}

/* Stable bucket sort of the drains that arrive out of order: one counting
 * pass spreads the records over about n buckets (at most BUCKET_MAX) by the
 * top bits of (key - smallest key), then each bucket, a handful of records
 * where the times are spread out, is put in order by insertion; a crowded
 * one, where they bunch up, by sort_recs.  Two linear passes instead of the
 * merges' log2(n / SORT_RUN) passes with a coin-toss comparison per record
 * (a branch the predictor cannot learn), or the 4-5 passes of an 11-bit
 * radix sort over the mantissa bits that differ.  bench/bench_queue.py
 * times pop with random arrival times (bench/results/queue.md, "pop" ns per
 * event); the A/B against the merges is in commit 70e5656. */
#define BUCKET_MIN 16   /* fewer records: insertion (sort_recs)       */
#define BUCKET_MAX 4096 /* most buckets (the counts live on the stack) */
#define BUCKET_CROWD 24 /* a bucket longer than this is merge-sorted  */
static sort_rec *bucket_recs(sort_rec *r, sort_rec *tmp, size_t n, uint64_t kmin, uint64_t kmax) {
    uint32_t cnt[BUCKET_MAX + 1];
    const uint64_t range = kmax - kmin;
    if (range == 0) return r; /* one time: push order is the order */
    int log_b = 0;
    while (((size_t)1 << log_b) < n && ((size_t)1 << log_b) < BUCKET_MAX) log_b++;
    const int bits = 64 - __builtin_clzll(range);
    const int shift = bits > log_b ? bits - log_b : 0;
    const size_t buckets = (size_t)(range >> shift) + 1;
    memset(cnt, 0, sizeof(uint32_t) * (buckets + 1));
    for (size_t i = 0; i < n; i++) cnt[((r[i].k - kmin) >> shift) + 1]++;
    for (size_t d = 0; d < buckets; d++) cnt[d + 1] += cnt[d];
    /* cnt[d] is bucket d's start; the fill moves it to bucket d's end */
    for (size_t i = 0; i < n; i++) tmp[cnt[(r[i].k - kmin) >> shift]++] = r[i];
    size_t lo = 0;
    for (size_t d = 0; d < buckets; d++) {
        const size_t hi = cnt[d];
        if (hi - lo > BUCKET_CROWD) {
            const sort_rec *s = sort_recs(tmp + lo, r + lo, hi - lo);
            if (s != tmp + lo) memcpy(tmp + lo, s, (hi - lo) * sizeof(sort_rec));
        } else {
            for (size_t i = lo + 1; i < hi; i++) {
                const sort_rec x = tmp[i];
                size_t j = i;
                for (; j > lo && rec_less(&x, &tmp[j - 1]); j--) tmp[j] = tmp[j - 1];
                tmp[j] = x;
            }
        }
        lo = hi;
    }
    return tmp;
}

static inline void fill_rec(sort_rec *r, const seer_node *nd, uint32_t id) {
    r->k = time_key(nd->ev.time);
    r->id = id;
}

/* Short chains, the usual case where pops keep up with pushes, skip the
 * records below: small_chain walks up to SMALL nodes into arrays on the
 * stack and sorts them there.  A chain pushed in time order (its walk,
 * newest first, descending) is simply reversed.  Otherwise the
 * nodes are sorted by a sorting network (4, 8, 16 or 32 inputs, padded) on
 * one 64-bit word each: the time's key with the node's place in the walk in
 * its low 3 or 5 bits, so a compare-exchange is a compare and two conditional
 * moves, with no branch to mispredict (an insertion sort of random times
 * mispredicts about once per node; bench/bench_queue.py, batch 4096 over
 * 1024 entities, about 4 events a lane).  The bits taken from the key
 * only matter for times that share the rest of it: those, like equal
 * times (settled by source and seq), are put right after the network by
 * an insertion sort on the full order (small_ties). */
#define SMALL 32
#define CE(a, b)                                          \
    do {                                                  \
        const uint64_t x_ = w[a], y_ = w[b];              \
        w[a] = x_ < y_ ? x_ : y_;                         \
        w[b] = x_ < y_ ? y_ : x_;                         \
    } while (0)
static inline void sort_net4(uint64_t *w) {
    CE(0, 1); CE(2, 3);
    CE(0, 2); CE(1, 3);
    CE(1, 2);
}
static inline void sort_net8(uint64_t *w) { /* the 19-exchange network of depth 6 */
    CE(0, 2); CE(1, 3); CE(4, 6); CE(5, 7);
    CE(0, 4); CE(1, 5); CE(2, 6); CE(3, 7);
    CE(0, 1); CE(2, 3); CE(4, 5); CE(6, 7);
    CE(2, 4); CE(3, 5);
    CE(1, 4); CE(3, 6);
    CE(1, 2); CE(3, 4); CE(5, 6);
}
static inline void sort_net16(uint64_t *w) { /* Batcher's odd-even merge sort: 63 exchanges */
    CE(0, 1); CE(2, 3); CE(0, 2); CE(1, 3); CE(1, 2); CE(4, 5); CE(6, 7); CE(4, 6); CE(5, 7); CE(5, 6);
    CE(0, 4); CE(2, 6); CE(2, 4); CE(1, 5); CE(3, 7); CE(3, 5); CE(1, 2); CE(3, 4); CE(5, 6); CE(8, 9);
    CE(10, 11); CE(8, 10); CE(9, 11); CE(9, 10); CE(12, 13); CE(14, 15); CE(12, 14); CE(13, 15); CE(13, 14);
    CE(8, 12); CE(10, 14); CE(10, 12); CE(9, 13); CE(11, 15); CE(11, 13); CE(9, 10); CE(11, 12); CE(13, 14);
    CE(0, 8); CE(4, 12); CE(4, 8); CE(2, 10); CE(6, 14); CE(6, 10); CE(2, 4); CE(6, 8); CE(10, 12); CE(1, 9);
    CE(5, 13); CE(5, 9); CE(3, 11); CE(7, 15); CE(7, 11); CE(3, 5); CE(7, 9); CE(11, 13); CE(1, 2); CE(3, 4);
    CE(5, 6); CE(7, 8); CE(9, 10); CE(11, 12); CE(13, 14);
}
static inline void sort_net32(uint64_t *w) { /* Batcher's odd-even merge sort: 191 exchanges */
    CE(0, 1); CE(2, 3); CE(0, 2); CE(1, 3); CE(1, 2); CE(4, 5); CE(6, 7); CE(4, 6); CE(5, 7); CE(5, 6); CE(0, 4);
    CE(2, 6); CE(2, 4); CE(1, 5); CE(3, 7); CE(3, 5); CE(1, 2); CE(3, 4); CE(5, 6); CE(8, 9); CE(10, 11);
    CE(8, 10); CE(9, 11); CE(9, 10); CE(12, 13); CE(14, 15); CE(12, 14); CE(13, 15); CE(13, 14); CE(8, 12);
    CE(10, 14); CE(10, 12); CE(9, 13); CE(11, 15); CE(11, 13); CE(9, 10); CE(11, 12); CE(13, 14); CE(0, 8);
    CE(4, 12); CE(4, 8); CE(2, 10); CE(6, 14); CE(6, 10); CE(2, 4); CE(6, 8); CE(10, 12); CE(1, 9); CE(5, 13);
    CE(5, 9); CE(3, 11); CE(7, 15); CE(7, 11); CE(3, 5); CE(7, 9); CE(11, 13); CE(1, 2); CE(3, 4); CE(5, 6);
    CE(7, 8); CE(9, 10); CE(11, 12); CE(13, 14); CE(16, 17); CE(18, 19); CE(16, 18); CE(17, 19); CE(17, 18);
    CE(20, 21); CE(22, 23); CE(20, 22); CE(21, 23); CE(21, 22); CE(16, 20); CE(18, 22); CE(18, 20); CE(17, 21);
    CE(19, 23); CE(19, 21); CE(17, 18); CE(19, 20); CE(21, 22); CE(24, 25); CE(26, 27); CE(24, 26); CE(25, 27);
    CE(25, 26); CE(28, 29); CE(30, 31); CE(28, 30); CE(29, 31); CE(29, 30); CE(24, 28); CE(26, 30); CE(26, 28);
    CE(25, 29); CE(27, 31); CE(27, 29); CE(25, 26); CE(27, 28); CE(29, 30); CE(16, 24); CE(20, 28); CE(20, 24);
    CE(18, 26); CE(22, 30); CE(22, 26); CE(18, 20); CE(22, 24); CE(26, 28); CE(17, 25); CE(21, 29); CE(21, 25);
    CE(19, 27); CE(23, 31); CE(23, 27); CE(19, 21); CE(23, 25); CE(27, 29); CE(17, 18); CE(19, 20); CE(21, 22);
    CE(23, 24); CE(25, 26); CE(27, 28); CE(29, 30); CE(0, 16); CE(8, 24); CE(8, 16); CE(4, 20); CE(12, 28);
    CE(12, 20); CE(4, 8); CE(12, 16); CE(20, 24); CE(2, 18); CE(10, 26); CE(10, 18); CE(6, 22); CE(14, 30);
    CE(14, 22); CE(6, 10); CE(14, 18); CE(22, 26); CE(2, 4); CE(6, 8); CE(10, 12); CE(14, 16); CE(18, 20);
    CE(22, 24); CE(26, 28); CE(1, 17); CE(9, 25); CE(9, 17); CE(5, 21); CE(13, 29); CE(13, 21); CE(5, 9);
    CE(13, 17); CE(21, 25); CE(3, 19); CE(11, 27); CE(11, 19); CE(7, 23); CE(15, 31); CE(15, 23); CE(7, 11);
    CE(15, 19); CE(23, 27); CE(3, 5); CE(7, 9); CE(11, 13); CE(15, 17); CE(19, 21); CE(23, 25); CE(27, 29);
    CE(1, 2); CE(3, 4); CE(5, 6); CE(7, 8); CE(9, 10); CE(11, 12); CE(13, 14); CE(15, 16); CE(17, 18); CE(19, 20);
    CE(21, 22); CE(23, 24); CE(25, 26); CE(27, 28); CE(29, 30);
}
#undef CE

/* Settle ties in dt/di (k nodes in time order, to within the low bits the
 * words gave up): an insertion sort by (time, source, seq), and on a full
 * tie push order, wi being each node's place in the walk (newest first:
 * the larger, the earlier pushed).  Out of line: equal times are the
 * exception in a random stream, though the rule in a lane that gets one
 * tick's messages from many senders. */
static __attribute__((noinline)) void small_ties(const seer_node *N, double *dt, uint32_t *di, uint8_t *wi, size_t k) {
    for (size_t i = 1; i < k; i++) {
        const double xt = dt[i];
        const uint32_t xi = di[i];
        const uint8_t xw = wi[i];
        const seer_event *x = &N[xi].ev;
        size_t j = i;
        for (; j > 0; j--) {
            const seer_event *y = &N[di[j - 1]].ev;
            const int less = ev_less(x, y) || (!ev_less(y, x) && xw > wi[j - 1]);
            if (!less) break;
            dt[j] = dt[j - 1], di[j] = di[j - 1], wi[j] = wi[j - 1];
        }
        dt[j] = xt, di[j] = xi, wi[j] = xw;
    }
}

/* The sorted words w[0..k) (k <= n) to dt/di, ties settled. */
static inline size_t small_out(const seer_node *N, const uint64_t *w, const double *t, const uint32_t *id, size_t k,
                               size_t n, double *dt, uint32_t *di) {
    int ties = 0;
    for (size_t j = 0; j + 1 < k; j++) {
        ties |= (w[j] ^ w[j + 1]) < n;
        const size_t i = w[j] & (n - 1);
        dt[j] = t[i], di[j] = id[i];
    }
    dt[k - 1] = t[w[k - 1] & (n - 1)], di[k - 1] = id[w[k - 1] & (n - 1)];
    if (ties) {
        uint8_t wi[SMALL];
        for (size_t j = 0; j < k && j < SMALL; j++) wi[j] = (uint8_t)(w[j] & (n - 1));
        small_ties(N, dt, di, wi, k);
    }
    return k;
}

/* Walk the chain top (newest first) up to n nodes (8 or 16) into t, id and
 * w (the padding set beforehand); returns the count, 0 if the chain goes
 * on.  *desc: push order was time order; *eq: two neighbours in it share a
 * time. */
static inline __attribute__((always_inline)) size_t walk_small(const seer_node *N, uint32_t top, size_t n,
                                                               double *t, uint32_t *id, uint64_t *w, int *desc,
                                                               int *eq) {
    size_t k = 0;
    uint32_t c = top;
    int d = 1, e = 0;
    uint64_t prev = UINT64_MAX;
    do {
        const double x = N[c].ev.time;
        const uint64_t key = time_key(x);
        d &= key <= prev; /* no branch: a coin toss on random times */
        e |= key == prev;
        prev = key;
        t[k] = x;
        id[k] = c;
        w[k] = (key & ~(uint64_t)(n - 1)) | k;
        c = N[c].next;
        k++;
    } while (c != NIL && k < n);
    *desc = d;
    *eq = e;
    return c == NIL ? k : 0;
}

/* A chain pushed in time order: reversed, then its ties settled. */
static inline size_t reverse_out(const seer_node *N, const double *t, const uint32_t *id, size_t k, int eq,
                                 double *dt, uint32_t *di) {
    for (size_t i = 0; i < k; i++) dt[i] = t[k - 1 - i], di[i] = id[k - 1 - i];
    if (eq) {
        uint8_t wi[SMALL];
        for (size_t j = 0; j < k && j < SMALL; j++) wi[j] = (uint8_t)(k - 1 - j);
        small_ties(N, dt, di, wi, k);
    }
    return k;
}

/* small_chain for a chain of 9 to SMALL nodes, out of line: the common
 * short chain's code stays small. */
static __attribute__((noinline)) size_t small_chain_long(const seer_node *N, uint32_t top, double *dt, uint32_t *di) {
    uint64_t w[SMALL];
    double t[SMALL];
    uint32_t id[SMALL];
    for (size_t i = 0; i < SMALL; i++) w[i] = UINT64_MAX; /* padding sorts last */
    int desc, eq;
    const size_t k = walk_small(N, top, SMALL, t, id, w, &desc, &eq);
    if (!k) return 0;
    if (desc) return reverse_out(N, t, id, k, eq, dt, di);
    if (k <= 16) { /* places below 16: bit 4 of every word is 0, so n = 16 reads them right */
        sort_net16(w);
        return small_out(N, w, t, id, k, 16, dt, di);
    }
    sort_net32(w);
    return small_out(N, w, t, id, k, SMALL, dt, di);
}

/* Walk the chain top (newest first) and, if it has at most SMALL nodes,
 * sort them into dt/di (room for SMALL) by (time, source, seq), push order
 * on full ties; returns their count, or 0 for a longer chain (the caller
 * sorts it with chain_sorted). */
static inline __attribute__((always_inline)) size_t small_chain(const seer_node *N, uint32_t top, double *dt,
                                                                 uint32_t *di) {
    uint64_t w[8] = {UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX,
                     UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX}; /* padding sorts last */
    double t[8];
    uint32_t id[8];
    int desc, eq;
    const size_t k = walk_small(N, top, 8, t, id, w, &desc, &eq);
    if (!k) return small_chain_long(N, top, dt, di);
    if (desc) return reverse_out(N, t, id, k, eq, dt, di);
    if (k <= 4) sort_net4(w);
    else sort_net8(w);
    return small_out(N, w, t, id, k, 8, dt, di);
}

/* Gather the chain top (newest first) into records and sort them by
 * (time, source, seq), push order on full ties.  Returns the sorted
 * records, in stack_buf (room for 3 * SORT_STACK) or this thread's buffer,
 * and their count in *kout; NULL (the chain untouched) when a chain deeper
 * than the stack finds no memory for the buffer.  One walk of the chain
 * gathers the records (a walk is one dependent cache miss per node where
 * the nodes are scattered; counting them first took a second one). */
static sort_rec *chain_sorted(const seer_node *N, uint32_t top, sort_rec *stack_buf, size_t *kout) {
    /* The usual short chain fills the stack's first third from its end
     * down, so r[] ends up in push order (what stability means) with no
     * reversal; a longer one continues forward in the thread's buffer and
     * is reversed once. */
    sort_rec *r = stack_buf;
    size_t k = 0;
    /* sorted: push order (the reverse of the walk) is already in time order;
     * and the key range, for the bucket sort */
    int unsorted = 0;
    uint64_t kmin = UINT64_MAX, kmax = 0;
    uint32_t c = top;
    for (; c != NIL && k < SORT_STACK; c = N[c].next, k++) {
        sort_rec *x = &stack_buf[SORT_STACK - 1 - k];
        fill_rec(x, &N[c], c);
        unsorted |= k > 0 && rec_less(x + 1, x); /* no branch: a coin toss on random times */
        kmin = x->k < kmin ? x->k : kmin;
        kmax = x->k > kmax ? x->k : kmax;
    }
    if (c == NIL) {
        r = stack_buf + SORT_STACK - k;
    } else { /* deeper than the stack */
        size_t room = 2 * SORT_STACK;
        r = sort_scratch(room);
        if (!r) return NULL;
        for (size_t i = 0; i < k; i++) r[i] = stack_buf[SORT_STACK - 1 - i]; /* back to walk order */
        for (; c != NIL; c = N[c].next, k++) {
            if (k == room) {
                room *= 2;
                if (!(r = sort_scratch(room))) return NULL;
            }
            fill_rec(&r[k], &N[c], c);
            unsorted |= rec_less(&r[k - 1], &r[k]);
            if (r[k].k < kmin) kmin = r[k].k;
            if (r[k].k > kmax) kmax = r[k].k;
        }
        for (size_t a = 0, b = k - 1; a < b; a++, b--) { /* into push order */
            const sort_rec t = r[a];
            r[a] = r[b];
            r[b] = t;
        }
    }
    *kout = k;
    sort_rec *s = r;
    if (unsorted) s = k >= BUCKET_MIN ? bucket_recs(r, r + k, k, kmin, kmax) : sort_recs(r, r + k, k);
    /* Equal times are in push order now (the sort is stable); put each run
     * of them in (source, seq) order with the same stable sort on a second
     * key gathered once per record (a lane often gets one time from many
     * senders: a broadcast's messages).  Looked for without a branch first:
     * with distinct times the run-by-run scan mispredicts at every record. */
    int ties = 0;
    for (size_t j = 1; j < k; j++) ties |= s[j].k == s[j - 1].k; /* no branch */
    if (!ties) return s;
    sort_rec *u = s == r ? r + k : r, *tmp = r + 2 * k;
    for (size_t lo = 0; lo < k;) {
        size_t hi = lo + 1;
        while (hi < k && s[hi].k == s[lo].k) hi++;
        if (hi - lo > 1) {
            int ordered = 1;
            for (size_t a = lo; a < hi; a++) {
                const seer_event *ev = &N[s[a].id].ev;
                u[a - lo].k = ((uint64_t)((uint32_t)ev->source ^ 0x80000000u) << 32) | ev->seq;
                u[a - lo].id = s[a].id;
                if (a > lo && u[a - lo].k < u[a - lo - 1].k) ordered = 0;
            }
            if (!ordered) {
                const sort_rec *t = sort_recs(u, tmp, hi - lo);
                for (size_t a = lo; a < hi; a++) s[a].id = t[a - lo].id;
            }
        }
        lo = hi;
    }
    return s;
}

/* Link the sorted records' nodes into a list; returns its head, its tail
 * in *tail_out. */
static uint32_t link_recs(seer_node *N, const sort_rec *s, size_t k, uint32_t *tail_out) {
    for (size_t j = 0; j + 1 < k; j++) N[s[j].id].next = s[j + 1].id;
    N[s[k - 1].id].next = NIL;
    *tail_out = s[k - 1].id;
    return s[0].id;
}

/* Sort a newest-first chain into a list, oldest-first on ties; returns its
 * head, its tail in *tail_out. */
static uint32_t sort_chain(seer_node *N, uint32_t top, uint32_t *tail_out) {
    double dt[SMALL];
    uint32_t di[SMALL];
    size_t k = small_chain(N, top, dt, di);
    if (k) {
        for (size_t j = 0; j + 1 < k; j++) N[di[j]].next = di[j + 1];
        N[di[k - 1]].next = NIL;
        *tail_out = di[k - 1];
        return di[0];
    }
    sort_rec stack_buf[3 * SORT_STACK];
    const sort_rec *s = chain_sorted(N, top, stack_buf, &k);
    if (s) return link_recs(N, s, k, tail_out);
    /* no memory for the buffer: reverse, then sort the list itself */
    uint32_t prev = NIL;
    while (top != NIL) {
        uint32_t nxt = N[top].next;
        N[top].next = prev;
        prev = top;
        top = nxt;
    }
    uint32_t parts[33];
    for (int i = 0; i < 33; i++) parts[i] = NIL;
    while (prev != NIL) {
        uint32_t cur = prev;
        prev = N[prev].next;
        N[cur].next = NIL;
        int i = 0;
        for (; parts[i] != NIL; i++) {
            cur = merge_lists(N, parts[i], cur, NULL);
            parts[i] = NIL;
        }
        parts[i] = cur;
    }
    uint32_t result = NIL;
    for (int i = 0; i < 33; i++)
        if (parts[i] != NIL) result = merge_lists(N, parts[i], result, NULL);
    return merge_lists(N, result, NIL, tail_out);
}

/* Put the chain top (an emptied inbox, newest first) into the held lane's
 * private sorted list. */
static void lane_take(seer_queue *q, seer_lane *l, uint32_t top) {
    seer_node *N = q->nodes;
    uint32_t list, tail;
    if (N[top].next == NIL) { /* one event: the usual case inside a window */
        list = tail = top;
    } else {
        list = sort_chain(N, top, &tail);
    }
    if (l->head == NIL) {
        l->head = list;
        l->tail = tail;
    } else if (!ev_less(&N[list].ev, &N[l->tail].ev)) {
        N[l->tail].next = list; /* the usual case: later events append */
        l->tail = tail;
    } else {
        l->head = merge_lists(N, l->head, list, &l->tail);
    }
}

/* Empty the held lane's inbox; returns its chain (newest first), NIL if
 * it was empty. */
static inline uint32_t inbox_take(seer_lane *l) {
    /* relaxed peek: an empty inbox needs no exchange (an RMW on a shared
     * line).  A push this load misses is one an exchange here could have
     * missed as well; unclaim's CAS fails on it. */
    if (W_TOP(atomic_load_explicit(&l->word, memory_order_relaxed)) == NIL) return NIL;
    /* An exchange can set the whole word: the state of a held lane is
     * CLAIMED and nobody else changes it (pushers move the top only;
     * mark_queued and claim_idle leave a lane that is not idle alone).
     * acquire: pairs with the pushers' CAS on the word (release part); as
     * every push is an RMW on it, one exchange synchronizes with all the
     * pushes it empties, and their node writes are visible from here. */
    return W_TOP(atomic_exchange_explicit(&l->word, LANE_W(NIL, ST_CLAIMED), memory_order_acquire));
}

/* Move the inbox into the private sorted list.  Caller holds the entity. */
static void lane_drain(seer_queue *q, seer_lane *l) {
    const uint32_t top = inbox_take(l);
    if (top != NIL) lane_take(q, l, top);
}

/* lane_drain for a claimant that no pusher can reach (see
 * seer_queue_unclaim_private): a load and a store where the exchange was a
 * full fence that waited for the handler's pending store misses. */
static void lane_drain_private(seer_queue *q, seer_lane *l) {
    /* relaxed: whoever filled the inbox is ordered before us by the
     * caller's synchronization (the runtime's barrier, or the release store
     * of the claimed list that a thief acquires). */
    const uint64_t w = atomic_load_explicit(&l->word, memory_order_relaxed);
    if (W_TOP(w) == NIL) return;
    atomic_store_explicit(&l->word, LANE_W(NIL, W_ST(w)), memory_order_relaxed);
    lane_take(q, l, W_TOP(w));
}

/* The key of the earliest event in the held lane's private list. */
static inline uint64_t head_key(const seer_queue *q, const seer_lane *l) {
    return l->head == NIL ? KEY_INF : time_key(q->nodes[l->head].ev.time);
}

/* End a claim: publish the exact earliest time, unclaim, re-ready if needed.
 *
 * One CAS on the word ends the claim, and only on an empty inbox: a push
 * that lands after the drain makes it fail, and the loop drains again.
 * next_key is stored before it with a plain store: a push whose CAS comes
 * after ours reads our CAS (or an RMW after it) and so synchronizes with
 * it; its CAS-min then comes after this store and is kept.  A push whose
 * CAS came before ours is in the drained list, and pushes onto a CLAIMED
 * lane leave next_key to us.  The same CAS queues the lane when its key is
 * before a horizon loaded ahead of it (the horizon only rises); if it does
 * not, the horizon is looked at again after it (Dekker with advance and
 * claim_range, which read the word before next_key: lane_scan). */
static inline uint64_t unclaim_lane(seer_queue *q, uint32_t e) {
    seer_lane *l = &q->lanes[e];
    uint64_t k, nw;
    for (;;) {
        lane_drain(q, l);
        k = head_key(q, l);
        /* relaxed: ordered by the CAS below (release part), see above */
        atomic_store_explicit(&l->next_key, k, memory_order_relaxed);
        /* relaxed: a value the horizon had; see above */
        nw = LANE_W(NIL, k < atomic_load_explicit(&q->horizon_key, memory_order_relaxed) ? ST_QUEUED : 0);
        uint64_t w = LANE_W(NIL, ST_CLAIMED);
        /* seq_cst (release part): our writes to the private list and to
         * next_key happen-before the next claimant's acquire RMW on word and
         * every later pusher's CAS; seq_cst for the handshake with advance.
         * A failure is a push: drain it. */
        if (atomic_compare_exchange_strong_explicit(&l->word, &w, nw, memory_order_seq_cst, memory_order_relaxed))
            break;
    }
    if (W_ST(nw) != 0)
        ring_put(&q->ready_ring, &e, 1);
    else if (k < atomic_load_explicit(&q->horizon_key, memory_order_seq_cst))
        make_ready(q, e);
    return k;
}

uint64_t seer_queue_unclaim_key(seer_queue *q, uint32_t e) { return unclaim_lane(q, e); }

void seer_queue_unclaim(seer_queue *q, uint32_t e) { (void)unclaim_lane(q, e); }

/* ---- pop / release --------------------------------------------------------- */

#define POP_BATCH 32

#define FREED 256 /* nodes freed by a pop go back to the pool this many at a time */

/* Give the nodes freed so far back to the pool. */
static inline void pop_flush(seer_queue *q, uint32_t *freed, uint32_t *nfreed, int64_t *uncounted) {
    /* Uncount before the nodes can be reused: a pusher that gets them
     * counts them again, and pending must never exceed the capacity.
     * relaxed: the free ring's R0 -> A1 edge orders this subtract before
     * the pusher's add. */
    atomic_fetch_sub_explicit(&q->pending, *uncounted, memory_order_relaxed);
    *uncounted = 0;
    ring_put(&q->free_ring, freed, *nfreed);
    *nfreed = 0;
}

/* Hand node id's event out, and free the node. */
static inline void pop_out(seer_queue *q, uint32_t id, seer_event *out, int64_t *n, uint32_t *freed,
                           uint32_t *nfreed, int64_t *uncounted) {
    out[(*n)++] = q->nodes[id].ev;
    ++*uncounted;
    freed[(*nfreed)++] = id;
    if (*nfreed == FREED) pop_flush(q, freed, nfreed, uncounted);
}

int64_t seer_queue_pop(seer_queue *q, double horizon, seer_event *out, int64_t max_events,
                       int32_t per_entity) {
    if (max_events <= 0) return 0;
    seer_queue_advance(q, horizon);
    seer_node *N = q->nodes;
    /* time < horizon as keys (nothing is before a NaN horizon) */
    const uint64_t hk = horizon != horizon ? 0 : time_key(horizon);
    uint32_t freed[FREED];
    uint32_t nfreed = 0;
    int64_t n = 0;
    /* Popped but not yet subtracted from pending: one subtract per FREED
     * nodes freed, not one per entity (an RMW on a shared line). */
    int64_t uncounted = 0;
    /* Each entity sits in the ring at most once, so num_entities dequeues
     * without progress mean every ready entity was looked at. */
    int64_t budget = q->num_entities;
    /* Ready entities are taken from the ring POP_BATCH at a time, one CAS
     * on its head instead of one per entity (a contended line when two
     * threads pop; bench/bench_queue.py measures it), but never more than
     * events are still wanted, so a concurrent pop is not starved of
     * entities this one will not run; those taken and not run go back to
     * the ring at the end. */
    uint32_t batch[POP_BATCH];
    uint32_t nbatch = 0, at = 0;
    sort_rec stack_buf[3 * SORT_STACK];
    while (n < max_events && budget > 0) {
        if (at == nbatch) {
            const int64_t want = max_events - n < budget ? max_events - n : budget;
            nbatch = seer_ring_dequeue(&q->ready_ring, batch, want < POP_BATCH ? (uint32_t)want : POP_BATCH, 0);
            at = 0;
            if (nbatch == 0) break;
        }
        budget--;
        const uint32_t e = batch[at++];
        seer_lane *l = &q->lanes[e];
        const uint32_t top = claim_take(l);
        /* most this lane may give */
        const int64_t room = per_entity > 0 && per_entity < max_events - n ? per_entity : max_events - n;
        int64_t took = 0;
        uint64_t last = 0;
        size_t k;
        const sort_rec *s;
        double dt[SMALL];
        uint32_t di[SMALL];
        if (top != NIL && l->head == NIL && (k = small_chain(N, top, dt, di))) {
            /* What was pushed is all the lane holds, at most SMALL events
             * (the usual case when pops keep up): they go out straight from
             * the sorted arrays, no list is linked and walked, and only those
             * left (after the horizon, or past room) become the private
             * list. */
            const size_t lim = (int64_t)k < room ? k : (size_t)room;
            /* room for the lot, and a free slot after it (pop_out's) */
            if (nfreed + k >= FREED) pop_flush(q, freed, &nfreed, &uncounted);
            size_t t = 0;
            for (; t < lim && dt[t] < horizon; t++) {
                out[n + (int64_t)t] = N[di[t]].ev;
                freed[nfreed + t] = di[t];
            }
            n += (int64_t)t;
            nfreed += (uint32_t)t;
            uncounted += (int64_t)t;
            if (t < k) {
                for (size_t j = t; j + 1 < k; j++) N[di[j]].next = di[j + 1];
                N[di[k - 1]].next = NIL;
                l->head = di[t];
                l->tail = di[k - 1];
            }
            took = (int64_t)t;
            if (t) last = time_key(dt[t - 1]);
        } else if (top != NIL && l->head == NIL && (s = chain_sorted(N, top, stack_buf, &k))) {
            /* The same for a longer inbox, sorted in records: what goes out
             * is a prefix, handed out in stretches that fit the free list. */
            const size_t lim = (int64_t)k < room ? k : (size_t)room;
            size_t t = 0;
            while (t < lim && s[t].k < hk) t++;
            for (size_t a = 0; a < t;) {
                if (nfreed + 1 >= FREED) pop_flush(q, freed, &nfreed, &uncounted);
                const size_t m = t - a < FREED - 1 - nfreed ? t - a : FREED - 1 - nfreed;
                for (size_t j = 0; j < m; j++) {
                    out[n + (int64_t)j] = N[s[a + j].id].ev;
                    freed[nfreed + j] = s[a + j].id;
                }
                n += (int64_t)m;
                nfreed += (uint32_t)m;
                uncounted += (int64_t)m;
                a += m;
            }
            if (t < k) l->head = link_recs(N, s + t, k - t, &l->tail);
            took = (int64_t)t;
            if (t) last = s[t - 1].k;
        } else {
            if (top != NIL) lane_take(q, l, top);
            while (l->head != NIL && took < room && time_key(N[l->head].ev.time) < hk) {
                const uint32_t id = l->head;
                last = time_key(N[id].ev.time);
                l->head = N[id].next;
                took++;
                pop_out(q, id, out, &n, freed, &nfreed, &uncounted);
            }
            if (l->head == NIL) l->tail = NIL;
        }
        if (took == 0) {
            seer_queue_unclaim(q, e);
        } else {
            /* relaxed: read only by push validation (see push_many). */
            atomic_store_explicit(&l->floor_key, last, memory_order_relaxed);
        }
    }
    if (uncounted) atomic_fetch_sub_explicit(&q->pending, uncounted, memory_order_relaxed);
    if (nfreed) ring_put(&q->free_ring, freed, nfreed);
    /* Still QUEUED, and no longer in the ring: put them back. */
    if (at < nbatch) ring_put(&q->ready_ring, batch + at, nbatch - at);
    return n;
}

int seer_queue_release(seer_queue *q, const int32_t *entities, int64_t n, int64_t *bad_index) {
    *bad_index = -1;
    for (int64_t i = 0; i < n; i++) {
        int32_t e = entities[i];
        if (e < 0 || e >= q->num_entities) return *bad_index = i, SEER_E_ENTITY;
        /* A popped batch lists an entity once per event, consecutively, so
         * releasing batch["entity"] directly is allowed. */
        if (i > 0 && entities[i - 1] == e) continue;
        /* acquire: only detects misuse (an entity nobody holds); a claim
         * handed to this thread by another is ordered by the caller's own
         * edge, and unclaim does its own ordering. */
        if (!(W_ST(atomic_load_explicit(&q->lanes[e].word, memory_order_acquire)) & ST_CLAIMED))
            return *bad_index = i, SEER_E_NOT_CLAIMED;
        (void)unclaim_lane(q, (uint32_t)e);
    }
    return SEER_OK;
}

/* ---- queries -------------------------------------------------------------- */

int64_t seer_queue_len(const seer_queue *q) {
    /* relaxed: a count, not a publication; exact once the pushes and pops
     * that changed it happen-before the call. */
    return atomic_load_explicit(&((seer_queue *)q)->pending, memory_order_relaxed);
}

uint32_t seer_queue_capacity(const seer_queue *q) { return q->capacity; }
int32_t seer_queue_num_entities(const seer_queue *q) { return q->num_entities; }
int32_t seer_queue_num_kinds(const seer_queue *q) { return q->num_kinds; }
uint64_t seer_queue_footprint(const seer_queue *q) { return q->footprint; }

double seer_queue_min_time(const seer_queue *q) {
    uint64_t m = KEY_INF;
    for (int32_t e = 0; e < q->num_entities; e++) {
        /* acquire is more than needed: "exact when no entity is held" means
         * the caller is already ordered after the unclaims (the runtime's
         * barrier, or the releasing thread itself); nothing is read through
         * the value. */
        uint64_t k = atomic_load_explicit(&((seer_queue *)q)->lanes[e].next_key, memory_order_acquire);
        if (k < m) m = k;
    }
    return key_time(m);
}

double seer_queue_floor(const seer_queue *q, int32_t entity) {
    return key_time(atomic_load_explicit(&((seer_queue *)q)->lanes[entity].floor_key, memory_order_relaxed));
}

int seer_queue_is_claimed(const seer_queue *q, int32_t entity) {
    return (W_ST(atomic_load_explicit(&((seer_queue *)q)->lanes[entity].word, memory_order_acquire)) & ST_CLAIMED) !=
           0;
}

/* ---- lane-level API for the runtime's worker loop (seer_queue_internal.h) -- */

int seer_queue_take(seer_queue *q, uint32_t *entity) {
    uint32_t e;
    if (!seer_ring_dequeue(&q->ready_ring, &e, 1, 1)) return 0;
    seer_lane *l = &q->lanes[e];
    const uint32_t top = claim_take(l); /* the claim takes the inbox too */
    if (top != NIL) lane_take(q, l, top);
    *entity = e;
    return 1;
}

/* The held lane's earliest event before horizon, after its inbox was moved
 * into the private list. */
static inline uint32_t lane_next(seer_queue *q, seer_lane *l, double horizon, seer_event *out) {
    uint32_t id = l->head;
    if (id == NIL || !(q->nodes[id].ev.time < horizon)) return NIL;
    *out = q->nodes[id].ev;
    l->head = q->nodes[id].next;
    if (l->head == NIL) l->tail = NIL;
    atomic_store_explicit(&l->floor_key, time_key(out->time), memory_order_relaxed);
    return id;
}

uint32_t seer_queue_next(seer_queue *q, uint32_t e, double horizon, seer_event *out) {
    seer_lane *l = &q->lanes[e];
    lane_drain(q, l);
    return lane_next(q, l, horizon, out);
}

uint32_t seer_queue_next_private(seer_queue *q, uint32_t e, double horizon, seer_event *out) {
    seer_lane *l = &q->lanes[e];
    lane_drain_private(q, l);
    return lane_next(q, l, horizon, out);
}

void seer_queue_set_reclaim(seer_queue *q, int (*fn)(void *), void *arg) {
    q->reclaim = fn;
    q->reclaim_arg = arg;
}

uint32_t seer_queue_alloc(seer_queue *q, seer_node_cache *c) {
    if (c->n == 0) {
        c->n = take_nodes(q, c->ids, c->limit / 2);
        if (c->n == 0) return NIL;
    }
    return c->ids[--c->n];
}

void seer_queue_recycle(seer_queue *q, seer_node_cache *c, uint32_t id) {
    if (c->n >= c->limit) { /* give back the older half; keep the hot one */
        const uint32_t half = c->n / 2;
        ring_put(&q->free_ring, c->ids, half);
        memmove(c->ids, c->ids + half, sizeof(uint32_t) * (c->n - half));
        c->n -= half;
    }
    c->ids[c->n++] = id;
}

void seer_queue_flush_cache(seer_queue *q, seer_node_cache *c) {
    if (c->n) ring_put(&q->free_ring, c->ids, c->n);
    c->n = 0;
}

seer_event *seer_queue_node_event(seer_queue *q, uint32_t id) { return &q->nodes[id].ev; }

void seer_queue_publish(seer_queue *q, uint32_t id) {
    const seer_node *nd = &q->nodes[id];
    const uint32_t e = (uint32_t)nd->ev.entity;
    if (push_chain(q, e, id, id, time_key(nd->ev.time), 1)) ring_put(&q->ready_ring, &e, 1);
}

void seer_queue_publish_quiet(seer_queue *q, uint32_t id) {
    const seer_node *nd = &q->nodes[id];
    (void)push_chain(q, (uint32_t)nd->ev.entity, id, id, time_key(nd->ev.time), 0);
}

static inline void push_private(seer_queue *q, uint32_t id) {
    seer_node *nd = &q->nodes[id];
    seer_lane *l = &q->lanes[nd->ev.entity];
    /* relaxed loads and stores, no RMW: the caller has the lane to itself
     * (see the header), and whoever accesses it next is ordered after us by
     * the caller's own synchronization (the runtime's barrier, or its
     * release store of the claimed list). */
    const uint64_t w = atomic_load_explicit(&l->word, memory_order_relaxed);
    nd->next = W_TOP(w);
    atomic_store_explicit(&l->word, LANE_W(id, W_ST(w)), memory_order_relaxed);
    /* the lane's earliest key, without a branch: whether an event comes
     * before the lane's others follows no pattern in a big swarm */
    const uint64_t k = time_key(nd->ev.time), nk = atomic_load_explicit(&l->next_key, memory_order_relaxed);
    atomic_store_explicit(&l->next_key, k < nk ? k : nk, memory_order_relaxed);
}

/* Each push reads its node (for the lane) and writes the lane: two misses
 * apart in a big swarm.  Fetch the nodes PRIVATE_AHEAD ahead and their
 * lanes half as far, so the misses overlap. */
#define PRIVATE_AHEAD 16
void seer_queue_push_private_many(seer_queue *q, const uint32_t *ids, int64_t n) {
    for (int64_t k = 0; k < n && k < PRIVATE_AHEAD; k++) __builtin_prefetch(&q->nodes[ids[k]]);
    for (int64_t k = 0; k < n && k < PRIVATE_AHEAD / 2; k++)
        __builtin_prefetch(&q->lanes[q->nodes[ids[k]].ev.entity], 1);
    for (int64_t k = 0; k < n; k++) {
        if (k + PRIVATE_AHEAD < n) __builtin_prefetch(&q->nodes[ids[k + PRIVATE_AHEAD]]);
        if (k + PRIVATE_AHEAD / 2 < n) __builtin_prefetch(&q->lanes[q->nodes[ids[k + PRIVATE_AHEAD / 2]].ev.entity], 1);
        push_private(q, ids[k]);
    }
}

void seer_queue_prefetch_ahead(const seer_queue *q, uint32_t lane, uint32_t held) {
    if (lane != NIL) __builtin_prefetch(&q->lanes[lane]);
    if (held == NIL) return;
    const seer_lane *l = &q->lanes[held];
    /* relaxed: only an address to prefetch; a stale one costs nothing. */
    const uint32_t top = W_TOP(atomic_load_explicit(&((seer_lane *)l)->word, memory_order_relaxed));
    if (top != NIL) __builtin_prefetch(&q->nodes[top]);
    if (l->head != NIL) __builtin_prefetch(&q->nodes[l->head]);
    if (l->tail != l->head) __builtin_prefetch(&q->nodes[l->tail]);
}

uint64_t seer_queue_unclaim_private(seer_queue *q, uint32_t e) {
    seer_lane *l = &q->lanes[e];
    lane_drain_private(q, l);
    const uint64_t k = head_key(q, l);
    /* No pusher can be between this store and a load of the inbox (none
     * runs), so no handshake: a plain store, and no second look. */
    atomic_store_explicit(&l->next_key, k, memory_order_relaxed);
    /* release: our writes to the private list happen-before the next
     * claimant's acquire RMW on word (as in seer_queue_unclaim_key).  The
     * inbox was just drained and nobody pushes; the state is CLAIMED alone:
     * QUEUED is only set on an idle lane. */
    atomic_store_explicit(&l->word, LANE_W(NIL, 0), memory_order_release);
    return k;
}

void seer_queue_insert_held(seer_queue *q, uint32_t id) {
    seer_node *N = q->nodes;
    seer_lane *l = &q->lanes[N[id].ev.entity];
    /* The caller holds the entity, so the private list is its own: plain
     * accesses, handed on by the unclaim's release like every other change
     * to the list.  Its next_key is set exactly at unclaim. */
    if (l->head == NIL) {
        N[id].next = NIL;
        l->head = l->tail = id;
    } else if (!ev_less(&N[id].ev, &N[l->tail].ev)) { /* the usual case: a later tick */
        N[id].next = NIL;
        N[l->tail].next = id;
        l->tail = id;
    } else {
        uint32_t *link = &l->head;
        while (*link != NIL && !ev_less(&N[id].ev, &N[*link].ev)) link = &N[*link].next;
        N[id].next = *link;
        *link = id;
    }
}

void seer_queue_add_pending(seer_queue *q, int64_t delta) {
    atomic_fetch_add_explicit(&q->pending, delta, memory_order_relaxed);
}
