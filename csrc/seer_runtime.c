/* SEER runtime: conservative windows over the dual-layer queue.
 *
 * A step runs windows [T, min(T + L, horizon)) where T is the earliest
 * pending time and L the model's lookahead.  Every worker (worker 0 is the
 * caller of seer_rt_step) reports at a window's end barrier the earliest time
 * it left pending; after it, all combine the same reports into the same next
 * window, copy their share of the snapshots and claim or ready their share
 * of the lanes (run_step_parallel; SEER_RT_BOOK_SERIAL keeps the old way,
 * worker 0 deciding alone).  Inside a window a worker runs the entities it
 * claimed, then helps the others (native models), or takes ready entities
 * from layer 2 (Python handlers), running each entity's events one at a
 * time and re-reading its lane after each handler so that events the
 * handler sends to its own entity keep their order.  Events to other entities are at least L later, hence after
 * the window: workers never wait for each other inside a window.
 */
#define _GNU_SOURCE
#include "seer_runtime.h"

#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "seer_crash_internal.h"
#include "seer_queue_internal.h"
#include "seer_ring.h"

#define MAX_SNAPSHOTS 64

/* Built with -DSEER_NO_TRACE the tracing branches compile away; the runtime
 * benchmark builds that variant to measure what tracing costs when off. */
#ifdef SEER_NO_TRACE
#define TRACING(rt) 0
#else
#define TRACING(rt) ((rt)->tracing)
#endif
#define PY_BATCH 256

/* ---- futex-backed waiting ---------------------------------------------- */

static void wait_while_equal(_Atomic uint32_t *word, uint32_t old, int spin, _Atomic uint32_t *sleepers) {
    for (int i = 0; i < spin; i++) {
        /* acquire: pairs with the release increment of the waker, so what it
         * wrote before waking us is visible once we see the new value. */
        if (atomic_load_explicit(word, memory_order_acquire) != old) return;
        seer_cpu_relax();
    }
    while (atomic_load_explicit(word, memory_order_acquire) == old) {
#ifdef __linux__
        /* seq_cst (Dekker with wake_all): either the waker sees us counted
         * and calls FUTEX_WAKE, or the kernel sees the new value and does
         * not put us to sleep. */
        atomic_fetch_add_explicit(sleepers, 1, memory_order_seq_cst);
        if (atomic_load_explicit(word, memory_order_seq_cst) == old)
            syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, old, NULL, NULL, 0);
        atomic_fetch_sub_explicit(sleepers, 1, memory_order_seq_cst);
#else
        sched_yield();
#endif
    }
}

static void wake_all(_Atomic uint32_t *word, _Atomic uint32_t *sleepers) {
#ifdef __linux__
    if (atomic_load_explicit(sleepers, memory_order_seq_cst) > 0)
        syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
#else
    (void)word;
    (void)sleepers;
#endif
}

typedef struct seer_barrier {
    _Alignas(SEER_CACHELINE) _Atomic uint32_t count;
    _Alignas(SEER_CACHELINE) _Atomic uint32_t gen;
    _Atomic uint32_t sleepers;
} seer_barrier;

/* Generation barrier.  Edges: every arrival's count RMW (release part) ->
 * the last arrival's (acquire part), through the RMW chain of the round;
 * the last arrival's gen RMW (release part) -> each waiter's acquire load of
 * the new gen.  Together: everything any worker did before arriving
 * happens-before everything any worker does after leaving.  Blocking, as a
 * barrier must be. */
static void barrier_wait(seer_barrier *b, int32_t n, int spin) {
    if (n == 1) return;
    /* relaxed: only compared, nothing is read through it.  It must not see
     * this round's bump, and cannot: it is sequenced before our count RMW,
     * whose release part orders it before the last arrival's acquire and so
     * before the bump (read-write coherence). */
    uint32_t gen = atomic_load_explicit(&b->gen, memory_order_relaxed);
    /* acq_rel: each arrival releases its window's writes into the count's
     * release sequence; the last arrival acquires them all. */
    if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) + 1 == (uint32_t)n) {
        /* relaxed: the next round's arrivals come after the gen bump below
         * (release) -> their acquire of gen, so their count RMWs follow this
         * reset in count's modification order. */
        atomic_store_explicit(&b->count, 0, memory_order_relaxed);
        /* seq_cst: release part, everything all arrivals did happens-before
         * the waiters' acquire load of the new generation; seq_cst for the
         * Dekker handshake with a waiter's sleepers count (wake_all). */
        atomic_fetch_add_explicit(&b->gen, 1, memory_order_seq_cst);
        wake_all(&b->gen, &b->sleepers);
    } else {
        wait_while_equal(&b->gen, gen, spin, &b->sleepers);
    }
}

/* ---- the runtime --------------------------------------------------------- */

/* Ids of filled nodes waiting for their lane's owner (seer_worker.ob). */
typedef struct seer_outbox {
    uint32_t *ids;
    int32_t len, cap;
} seer_outbox;

typedef struct seer_worker {
    _Alignas(SEER_CACHELINE) seer_ctx ctx;
    int32_t held; /* the entity run_native runs (-1: none): what ctx->entity must name */
    seer_node_cache cache;
    int64_t pending_delta; /* pushed minus handed out, applied at window end */
    uint32_t decision;     /* window decisions seen; the same in every worker */
    int64_t events;
    seer_trace_event *trace_ev;
    int64_t trace_ev_cap, trace_ev_n;
    seer_trace_window *trace_win;
    int64_t trace_win_cap, trace_win_n;
    int64_t trace_dropped;
    seer_event batch[PY_BATCH];
    seer_event sorted[PY_BATCH];
    uint32_t batch_entity[PY_BATCH];
    /* Parallel window bookkeeping (run_step_parallel). */
    int32_t lane_lo, lane_hi; /* this worker's share of the lanes          */
    uint64_t window_key;      /* the window's end t1 as a key               */
    uint64_t min_key;         /* smallest key >= t1 this worker left behind */
    uint32_t win_seq;         /* windows run; the same in every worker      */
    seer_rt_stats stats;
    /* The step_gen of the last job this pool thread finished, its
     * accounting included (release).  A pool thread adds its step's time
     * after the step's last barrier, when worker 0 may already have
     * returned, so whoever reads or clears its stats between steps waits
     * for this to reach step_gen first (wait_accounted). */
    _Atomic uint32_t done_gen;
    /* Native windows: the lanes of this worker's share that have events in
     * the window, claimed at the window's start.  The owner runs them from the front;
     * an idle worker steals from the back while STEAL_MIN or more are left
     * (own_range = end << 32 | next, both moved by CAS).
     * own_tag = tag_seq << 32 | count, published with release after the
     * list is written, so a thief never reads another window's list (the
     * count never restarts: a step's first window must not match the last
     * step's first window). */
    uint32_t *own;
    uint32_t tag_seq; /* parallel windows run since creation, in every worker alike */
    _Alignas(SEER_CACHELINE) _Atomic uint64_t own_tag;
    _Atomic uint64_t own_range;
    /* This worker's home share of a parallel loop (seer_rt_parallel_for),
     * next | end << 32, moved by CAS: the owner takes slices from the front,
     * an idle worker steals from the back. */
    _Atomic uint64_t pf_range;
    /* Written before a window's end barrier, read by every worker after it.
     * Two slots by the parity of the barrier count (the same in every
     * worker): worker 0 may return and start the next step, writing its
     * next report, while a slower worker still reads this one. */
    _Alignas(SEER_CACHELINE) uint64_t report_key[2];
    int32_t report_abort[2];
    uint32_t phase; /* report barriers passed */
    /* Deferred publication (native windows of the parallel bookkeeping, all
     * but a step's last): an event for another entity is filled in a node
     * of ours, and its id goes to outbox[window parity][the worker whose
     * share holds its lane] instead of onto the lane; the owner pushes the
     * ids at the start of the next window (deliver_outboxes).  Such an event
     * is >= the window's end (the lookahead rule), so nothing needs it
     * sooner.  So inside a deferred window no thread pushes onto any lane,
     * and between the end barrier and its claim a worker has its share's
     * lanes to itself: it pushes with plain stores (seer_queue_push_private_many)
     * and unclaims without the push/unclaim handshake
     * (seer_queue_unclaim_private), no RMW and no fence per event where a
     * push cost a CAS, a CAS-min and a seq_cst load, and an unclaim an
     * exchange and a seq_cst reload.  A crossing event's lane line also no
     * longer moves between cores once per event.  The barrier between the
     * two windows orders the sender's writes before the owner's reads; the
     * parity keeps this window's appends off the list being delivered. */
    int defer;          /* this window defers (see above)        */
    seer_outbox *ob[2]; /* [window parity][destination worker]   */
} seer_worker;

typedef struct snapshot_region {
    void *live;
    void *snap;
    uint64_t nbytes;
} snapshot_region;

struct seer_runtime {
    seer_runtime_head head; /* first: plug-ins reach the API through it */
    seer_queue *q;
    int32_t num_workers;
    int32_t num_entities;
    int32_t num_kinds;
    int spin;
    double lookahead;
    int has_python;
    int32_t py_batch; /* entities per round for Python handlers */
    seer_handler_fn handlers[1024];
    unsigned char python_kind[1024];
    seer_dispatch_fn dispatch;
    void *dispatch_userdata;
    void *model;
    uint64_t seed;
    uint64_t *rng_counter; /* per entity */
    int32_t *stream_of;    /* per entity: whose random stream it draws from (its name at reset; relabel moves it) */
    uint32_t *emit_seq;    /* per entity */
    double *cur_time;      /* per entity: time of the event being handled */
    snapshot_region snaps[MAX_SNAPSHOTS];
    int num_snaps;
    int tracing;
    int32_t bookkeeping; /* SEER_RT_BOOK_PARALLEL (default) or _SERIAL (kept to measure against) */
    int32_t stats_on;

    /* Step control.  The window decision is written by worker 0 between the
     * two barriers of a window and read by all after the first; two slots so
     * a slow reader of the final "done" is never overwritten by the next
     * step's first decision. */
    _Alignas(SEER_CACHELINE) double horizon;
    double window_t0[2];
    double window_t1[2];
    int done[2];
    int last[2];  /* the window ends at the horizon: the step ends with it */
    int64_t windows_total;
    int64_t events_total;
    int64_t events_base; /* events run by the workers of pools before the last resize */
    seer_barrier barrier;
    /* What the pool does on the next step_gen bump: a step or a parallel
     * loop.  Written by the stepping thread before the bump (release), read
     * by each worker after it (acquire); rewritten only after a barrier that
     * every worker reaches after reading it. */
    int32_t job;
    seer_range_fn pf_fn;
    void *pf_arg;
    int64_t pf_n, pf_grain;
    _Alignas(SEER_CACHELINE) _Atomic int64_t pf_next;
    _Alignas(SEER_CACHELINE) _Atomic uint32_t step_gen;
    _Atomic uint32_t step_sleepers;
    _Atomic int shutdown;
    /* STEP_IDLE, STEP_RUNNING (seer_rt_step) or STEP_RECLAIMING (a push
     * from outside taking the worker caches back: reclaim_caches); the two
     * exclude each other. */
    _Atomic int stepping;
    _Alignas(SEER_CACHELINE) _Atomic int32_t err_code;
    _Atomic int32_t err_claim; /* the first failure owns err, then sets err_code */
    seer_error_info err;
    seer_worker *workers;
};

static inline int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *zalloc(size_t bytes) {
    size_t rounded = (bytes + SEER_CACHELINE - 1) / SEER_CACHELINE * SEER_CACHELINE;
    void *p = aligned_alloc(SEER_CACHELINE, rounded ? rounded : SEER_CACHELINE);
    if (p) memset(p, 0, rounded);
    return p;
}

static void free_workers(seer_worker *ws, int32_t n);

/* Every entity draws from the stream of its own name (until a relabel). */
static void own_streams(seer_runtime *rt) {
    for (int32_t e = 0; e < rt->num_entities; e++) rt->stream_of[e] = e;
}

#define STEP_IDLE 0
#define STEP_RUNNING 1
#define STEP_RECLAIMING 2

/* Give every worker's cached nodes back to the queue; 1 if there were any. */
static int flush_caches(seer_runtime *rt) {
    int any = 0;
    for (int32_t w = 0; w < rt->num_workers; w++) {
        any |= rt->workers[w].cache.n != 0;
        seer_queue_flush_cache(rt->q, &rt->workers[w].cache);
    }
    return any;
}

/* The queue's reclaim hook (seer_queue_set_reclaim): a native step leaves
 * each worker's node cache filled for the next step, so a push from
 * outside may find the free ring short while nodes are free.  Between
 * steps, hand them back; during a step, refuse (the caches are in use). */
static int reclaim_caches(void *arg) {
    seer_runtime *rt = arg;
    int idle = STEP_IDLE;
    /* acquire: synchronizes with the release store that ended the last
     * step, after every worker's last cache write (the step's end barrier). */
    if (!atomic_compare_exchange_strong_explicit(&rt->stepping, &idle, STEP_RECLAIMING, memory_order_acquire,
                                                 memory_order_relaxed))
        return 0;
    const int any = flush_caches(rt);
    /* release: the emptied caches happen-before the next step's acquire. */
    atomic_store_explicit(&rt->stepping, STEP_IDLE, memory_order_release);
    return any;
}

/* A fresh worker array for a pool of n: lanes cut evenly, every per-worker
 * counter at zero (the counters that must agree between workers, phase,
 * decision and tag_seq, all start together). */
static seer_worker *new_workers(seer_runtime *rt, int32_t n) {
    seer_worker *ws = zalloc(sizeof(seer_worker) * (size_t)n);
    if (!ws) return NULL;
    for (int32_t w = 0; w < n; w++) {
        ws[w].ctx.api = seer_api_table();
        ws[w].ctx.rt = rt;
        ws[w].ctx.worker = w;
        ws[w].ctx.model = rt->model;
        ws[w].held = -1;
        ws[w].cache.limit = seer_node_cache_limit(seer_queue_capacity(rt->q), n);
        ws[w].lane_lo = (int32_t)((int64_t)rt->num_entities * w / n);
        ws[w].lane_hi = (int32_t)((int64_t)rt->num_entities * (w + 1) / n);
        ws[w].own = zalloc(sizeof(uint32_t) * (size_t)(ws[w].lane_hi - ws[w].lane_lo + 1));
        ws[w].ob[0] = calloc((size_t)n, sizeof(seer_outbox));
        ws[w].ob[1] = calloc((size_t)n, sizeof(seer_outbox));
        if (!ws[w].own || !ws[w].ob[0] || !ws[w].ob[1]) {
            free_workers(ws, w + 1);
            return NULL;
        }
    }
    return ws;
}

static void free_workers(seer_worker *ws, int32_t n) {
    if (!ws) return;
    for (int32_t w = 0; w < n; w++) {
        free(ws[w].own);
        for (int p = 0; p < 2; p++) {
            for (int32_t d = 0; ws[w].ob[p] && d < n; d++) free(ws[w].ob[p][d].ids);
            free(ws[w].ob[p]);
        }
    }
    free(ws);
}

seer_runtime *seer_rt_new(seer_queue *q, int32_t num_workers, double lookahead, int32_t spin) {
    int32_t kinds = seer_queue_num_kinds(q);
    if (num_workers < 1 || !(lookahead > 0) || kinds > 1024) return NULL;
    seer_runtime *rt = zalloc(sizeof *rt);
    if (!rt) return NULL;
    rt->head.api = seer_api_table();
    rt->q = q;
    rt->num_workers = num_workers;
    rt->num_entities = seer_queue_num_entities(q);
    rt->num_kinds = kinds;
    rt->lookahead = lookahead;
    rt->spin = spin;
    rt->py_batch = PY_BATCH;
    rt->workers = new_workers(rt, num_workers);
    rt->rng_counter = zalloc(sizeof(uint64_t) * (size_t)rt->num_entities);
    rt->stream_of = zalloc(sizeof(int32_t) * (size_t)rt->num_entities);
    rt->emit_seq = zalloc(sizeof(uint32_t) * (size_t)rt->num_entities);
    rt->cur_time = zalloc(sizeof(double) * (size_t)rt->num_entities);
    if (!rt->workers || !rt->rng_counter || !rt->stream_of || !rt->emit_seq || !rt->cur_time) {
        seer_rt_free(rt);
        return NULL;
    }
    own_streams(rt);
    seer_queue_set_reclaim(q, reclaim_caches, rt);
    /* Parallel by default (5.8x the serial one per step at 4096 entities,
     * bench/results/runtime.md).  It was opt-in for a while after one state
     * difference under qemu-aarch64; that came from qemu letting a seq_cst
     * store pass a later seq_cst load in seer_queue_unclaim_key (both
     * bookkeepings hit it), fixed there and shown by csrc/tests/litmus_sb.c. */
    rt->bookkeeping = SEER_RT_BOOK_PARALLEL;
    return rt;
}

int seer_rt_resize(seer_runtime *rt, int32_t num_workers, int32_t spin) {
    if (num_workers < 1) return SEER_E_ARG;
    if (rt->tracing) return SEER_E_ARG; /* trace buffers are per worker */
    seer_worker *ws = new_workers(rt, num_workers);
    if (!ws) return SEER_E_FULL;
    /* Between steps every worker's pending count is settled (run_window
     * adds it before its end barrier); its node cache goes back to the
     * queue here, and only the event count outlives the worker. */
    flush_caches(rt);
    for (int32_t w = 0; w < rt->num_workers; w++) rt->events_base += rt->workers[w].events;
    free_workers(rt->workers, rt->num_workers);
    rt->workers = ws;
    rt->num_workers = num_workers;
    rt->spin = spin;
    /* relaxed: no pool thread runs (the caller joined them); the threads it
     * starts next synchronize with it through their creation. */
    atomic_store_explicit(&rt->step_gen, 0, memory_order_relaxed);
    atomic_store_explicit(&rt->step_sleepers, 0, memory_order_relaxed);
    atomic_store_explicit(&rt->shutdown, 0, memory_order_relaxed);
    atomic_store_explicit(&rt->barrier.count, 0, memory_order_relaxed);
    atomic_store_explicit(&rt->barrier.sleepers, 0, memory_order_relaxed);
    return SEER_OK;
}

void seer_rt_free(seer_runtime *rt) {
    if (!rt) return;
    if (rt->workers) { /* the queue outlives us: its nodes go back, its hook goes */
        flush_caches(rt);
        seer_queue_set_reclaim(rt->q, NULL, NULL);
    }
    free_workers(rt->workers, rt->num_workers);
    free(rt->rng_counter);
    free(rt->stream_of);
    free(rt->emit_seq);
    free(rt->cur_time);
    free(rt);
}

void seer_rt_set_handler(seer_runtime *rt, int32_t kind, seer_handler_fn fn) {
    rt->handlers[kind] = fn;
    rt->python_kind[kind] = fn == NULL;
    rt->has_python = 0;
    for (int32_t k = 0; k < rt->num_kinds; k++) rt->has_python |= rt->python_kind[k];
}

void seer_rt_set_dispatch(seer_runtime *rt, seer_dispatch_fn fn, void *userdata) {
    rt->dispatch = fn;
    rt->dispatch_userdata = userdata;
}

void seer_rt_set_python_batch(seer_runtime *rt, int32_t n) {
    rt->py_batch = n < 1 ? 1 : n > PY_BATCH ? PY_BATCH : n;
}

void seer_rt_set_model(seer_runtime *rt, void *model) {
    rt->model = model;
    for (int32_t w = 0; w < rt->num_workers; w++) rt->workers[w].ctx.model = model;
}

int seer_rt_add_snapshot(seer_runtime *rt, void *live, void *snapshot, uint64_t nbytes) {
    if (rt->num_snaps == MAX_SNAPSHOTS) return SEER_E_ARG;
    rt->snaps[rt->num_snaps++] = (snapshot_region){live, snapshot, nbytes};
    return SEER_OK;
}

void seer_rt_clear_snapshots(seer_runtime *rt) { rt->num_snaps = 0; }

void seer_rt_reset(seer_runtime *rt, uint64_t seed) {
    seer_queue_clear(rt->q);
    rt->seed = seed;
    memset(rt->rng_counter, 0, sizeof(uint64_t) * (size_t)rt->num_entities);
    own_streams(rt);
    memset(rt->emit_seq, 0, sizeof(uint32_t) * (size_t)rt->num_entities);
    memset(rt->cur_time, 0, sizeof(double) * (size_t)rt->num_entities);
    for (int32_t w = 0; w < rt->num_workers; w++) {
        rt->workers[w].cache.n = 0; /* the cleared queue owns every node again */
        rt->workers[w].pending_delta = 0;
        /* ids a failed step left undelivered: their nodes are free again */
        for (int p = 0; p < 2; p++)
            for (int32_t d = 0; d < rt->num_workers; d++) rt->workers[w].ob[p][d].len = 0;
    }
    /* relaxed: reset runs while no step does; the next step's step_gen /
     * barrier edges publish it. */
    atomic_store_explicit(&rt->err_code, 0, memory_order_relaxed);
    atomic_store_explicit(&rt->err_claim, 0, memory_order_relaxed);
    memset(&rt->err, 0, sizeof rt->err);
}

/* new[new_of_old[e]] = old[e] for n items of `size` bytes, through tmp. */
static void permute_items(void *items, void *tmp, size_t size, const int32_t *new_of_old, int32_t n) {
    for (int32_t e = 0; e < n; e++)
        memcpy((char *)tmp + size * (size_t)new_of_old[e], (const char *)items + size * (size_t)e, size);
    memcpy(items, tmp, size * (size_t)n);
}

int seer_rt_relabel(seer_runtime *rt, const int32_t *new_of_old) {
    const int32_t n = rt->num_entities;
    void *tmp = malloc(sizeof(uint64_t) * (size_t)(n > 0 ? n : 1));
    if (!tmp) return SEER_E_NOMEM;
    int idle = STEP_IDLE;
    /* acquire: as reclaim_caches, which this excludes the same way (the
     * caches are flushed: the queue's relabel makes every node free). */
    if (!atomic_compare_exchange_strong_explicit(&rt->stepping, &idle, STEP_RECLAIMING, memory_order_acquire,
                                                 memory_order_relaxed)) {
        free(tmp);
        return SEER_E_ARG;
    }
    flush_caches(rt);
    const int rc = seer_queue_relabel(rt->q, new_of_old);
    if (rc == SEER_OK) {
        permute_items(rt->rng_counter, tmp, sizeof(uint64_t), new_of_old, n);
        permute_items(rt->stream_of, tmp, sizeof(int32_t), new_of_old, n);
        permute_items(rt->emit_seq, tmp, sizeof(uint32_t), new_of_old, n);
        permute_items(rt->cur_time, tmp, sizeof(double), new_of_old, n);
    }
    /* release: what moved happens-before the next step's acquire. */
    atomic_store_explicit(&rt->stepping, STEP_IDLE, memory_order_release);
    free(tmp);
    return rc;
}

/* ---- errors --------------------------------------------------------------- */

static void fail(seer_runtime *rt, int32_t code, int32_t worker, const seer_event *ev, int32_t target,
                 int32_t target_kind, double target_time) {
    int32_t expected = 0;
    /* Only the first failure is recorded.  relaxed: the claim only picks
     * the writer of err; it publishes nothing. */
    if (!atomic_compare_exchange_strong_explicit(&rt->err_claim, &expected, 1, memory_order_relaxed,
                                                 memory_order_relaxed))
        return;
    rt->err = (seer_error_info){code, worker, ev ? ev->entity : -1, ev ? ev->kind : -1,
                                ev ? ev->time : NAN, target, target_kind, target_time};
    /* release: the record above happens-before any acquire load that sees
     * the code (seer_rt_step's return value, seer_rt_last_error).  A worker's
     * failure is also ordered by the window's end barrier, but an interrupt
     * comes from a thread outside the pool, which has only this edge. */
    atomic_store_explicit(&rt->err_code, code, memory_order_release);
}

static inline int aborted(seer_runtime *rt) {
    /* relaxed: a late view only costs a few more events before stopping;
     * nothing is read through it. */
    return atomic_load_explicit(&rt->err_code, memory_order_relaxed) != 0;
}

void seer_rt_last_error(const seer_runtime *rt, seer_error_info *out) {
    /* acquire: pairs with fail()'s release store; a record still being
     * written (claimed, code not yet set) reads as no error. */
    if (atomic_load_explicit(&((seer_runtime *)rt)->err_code, memory_order_acquire) == 0)
        memset(out, 0, sizeof *out);
    else
        *out = rt->err;
}
int64_t seer_rt_events_total(const seer_runtime *rt) { return rt->events_total; }
int64_t seer_rt_windows_total(const seer_runtime *rt) { return rt->windows_total; }

void seer_rt_set_bookkeeping(seer_runtime *rt, int32_t mode) {
    rt->bookkeeping = mode == SEER_RT_BOOK_SERIAL ? SEER_RT_BOOK_SERIAL : SEER_RT_BOOK_PARALLEL;
}

/* Between steps, from the stepping thread: wait until pool thread w has
 * finished the last job it was woken for, its accounting included.
 * step_gen does not move between steps (only seer_rt_step, seer_rt_parallel_for
 * and seer_rt_shutdown move it, all from this thread), and a pool thread
 * stores done_gen after every job and before it returns at shutdown, so
 * this ends as soon as that thread gets a core.  Worker 0 is this thread. */
static void wait_accounted(seer_runtime *rt, int32_t w) {
    if (w == 0) return;
    /* relaxed: our own last write of step_gen (or the pool's creation). */
    const uint32_t gen = atomic_load_explicit(&rt->step_gen, memory_order_relaxed);
    unsigned spins = 0;
    /* acquire: pairs with the release store of done_gen in worker_main, so
     * the thread's stats writes before it are visible (and done) here. */
    while (atomic_load_explicit(&rt->workers[w].done_gen, memory_order_acquire) != gen) seer_backoff(&spins);
}

void seer_rt_set_stats(seer_runtime *rt, int32_t on) {
    for (int32_t i = 0; i < rt->num_workers; i++) wait_accounted(rt, i);
    /* Plain stores: every pool thread is idle now, and reads stats_on only
     * in its next job, after the step_gen RMW that publishes these. */
    rt->stats_on = on != 0;
    for (int32_t i = 0; i < rt->num_workers; i++) memset(&rt->workers[i].stats, 0, sizeof(seer_rt_stats));
}

void seer_rt_take_stats(seer_runtime *rt, int32_t worker, seer_rt_stats *out) {
    wait_accounted(rt, worker);
    *out = rt->workers[worker].stats;
    memset(&rt->workers[worker].stats, 0, sizeof(seer_rt_stats));
}
double seer_rt_window_end(const seer_runtime *rt, int32_t worker) { return rt->workers[worker].ctx.window_end; }

/* ---- random streams ---------------------------------------------------------- */

static inline uint64_t mix64(uint64_t z) { /* SplitMix64's finalizer */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline uint64_t counter_u64(uint64_t seed, int32_t entity, uint64_t counter) {
    uint64_t k = mix64(seed ^ 0x9e3779b97f4a7c15ull) ^ mix64(((uint64_t)(uint32_t)entity << 1) | 1ull);
    return mix64(k + counter * 0x9e3779b97f4a7c15ull);
}

double seer_counter_uniform(uint64_t seed, int32_t entity, uint64_t counter) {
    return (double)(counter_u64(seed, entity, counter) >> 11) * 0x1.0p-53;
}

/* The worker whose handler has ctx, if ctx->entity still names the entity
 * it runs; NULL for a ctx a handler rewrote (another entity's stream or
 * sequence counter belongs to whichever worker holds that entity). */
static seer_worker *holder_of(seer_ctx *ctx) {
    seer_runtime *rt = ctx->rt;
    int32_t wid = ctx->worker;
    if (wid < 0 || wid >= rt->num_workers) return NULL;
    seer_worker *w = &rt->workers[wid];
    return w->held == ctx->entity && ctx->entity >= 0 ? w : NULL;
}

uint64_t seer_random_u64(seer_ctx *ctx) {
    seer_runtime *rt = ctx->rt;
    if (!holder_of(ctx)) { /* no draw to return an error with: the step fails */
        seer_event cur = {ctx->now, 0, ctx->entity, -1, -1, 0};
        fail(rt, SEER_E_ENTITY, ctx->worker, &cur, ctx->entity, -1, NAN);
        return 0;
    }
    return counter_u64(rt->seed, rt->stream_of[ctx->entity], rt->rng_counter[ctx->entity]++);
}

double seer_uniform(seer_ctx *ctx) { return (double)(seer_random_u64(ctx) >> 11) * 0x1.0p-53; }

void seer_rt_uniform_many(seer_runtime *rt, const int32_t *entities, double *out, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        int32_t e = entities[i];
        out[i] = seer_counter_uniform(rt->seed, rt->stream_of[e], rt->rng_counter[e]++);
    }
}

/* ---- emits -------------------------------------------------------------------- */

static inline void note_key(seer_worker *w, uint64_t k) {
    /* Keys below the window's end belong to events this window still runs
     * (self-sent ones); what is left after the window is >= t1. */
    if (k >= w->window_key && k < w->min_key) w->min_key = k;
}

/* The worker whose share of the lanes holds entity e (new_workers' cut). */
static inline int32_t owner_of(const seer_runtime *rt, int32_t e) {
    int32_t d = (int32_t)((int64_t)e * rt->num_workers / rt->num_entities);
    while (d + 1 < rt->num_workers && rt->workers[d + 1].lane_lo <= e) d++;
    while (rt->workers[d].lane_lo > e) d--;
    return d;
}

/* Put node id, filled for target, in this window's outbox for the owner of
 * target's lane (ourselves included); 0: no memory to grow the outbox (the
 * emit fails: publishing it now would break the window's no-pusher rule). */
static int defer_publish(seer_runtime *rt, seer_worker *w, int32_t target, uint32_t id) {
    const int32_t d = owner_of(rt, target);
    seer_outbox *ob = &w->ob[w->win_seq & 1][d];
    if (ob->len == ob->cap) {
        int32_t cap = ob->cap ? 2 * ob->cap : 256;
        uint32_t *ids = realloc(ob->ids, sizeof(uint32_t) * (size_t)cap);
        if (!ids) return 0;
        ob->ids = ids;
        ob->cap = cap;
    }
    ob->ids[ob->len++] = id;
    return 1;
}

/* How deliver_outboxes pushes (see run_step_parallel): with plain stores
 * (the lanes are ours until the claim), with the full push but without
 * readying (claim_range claims them next), or with the full push. */
typedef enum { PUSH_PRIVATE, PUSH_QUIET, PUSH_PUBLISH } push_mode;

/* Push what the workers deferred to our lanes in the window of this
 * parity.  The ids' nodes and pending counts are the senders'; only the
 * lanes are ours. */
static void deliver_outboxes(seer_runtime *rt, seer_worker *w, uint32_t parity, push_mode how) {
    for (int32_t i = 0; i < rt->num_workers; i++) {
        seer_outbox *ob = &rt->workers[i].ob[parity][w->ctx.worker];
        if (how == PUSH_PRIVATE)
            seer_queue_push_private_many(rt->q, ob->ids, ob->len);
        else
            for (int32_t k = 0; k < ob->len; k++)
                (how == PUSH_QUIET ? seer_queue_publish_quiet : seer_queue_publish)(rt->q, ob->ids[k]);
        ob->len = 0;
    }
}

/* held: target == source is held by this worker (a native handler's own
 * entity), so the event goes straight into its private list. */
static int emit_one(seer_runtime *rt, seer_worker *w, int32_t source, int32_t target, double time,
                    int32_t kind, int64_t payload, int held) {
    if (target < 0 || target >= rt->num_entities) return SEER_E_ENTITY;
    if (kind < 0 || kind >= rt->num_kinds) return SEER_E_KIND;
    if (!isfinite(time)) return SEER_E_TIME;
    double now = rt->cur_time[source];
    if (target != source ? time < now + rt->lookahead : time < now)
        return target != source ? SEER_E_CAUSALITY : SEER_E_PAST;
    uint32_t id = seer_queue_alloc(rt->q, &w->cache);
    if (id == SEER_NIL) return SEER_E_FULL;
    seer_event *ev = seer_queue_node_event(rt->q, id);
    *ev = (seer_event){time == 0.0 ? 0.0 : time, payload, target, kind, source, rt->emit_seq[source]++};
    if (held && target == source) {
        seer_queue_insert_held(rt->q, id);
    } else if (!w->defer) {
        seer_queue_publish(rt->q, id);
    } else if (!defer_publish(rt, w, target, id)) {
        seer_queue_recycle(rt->q, &w->cache, id);
        return SEER_E_NOMEM;
    }
    note_key(w, seer_time_key(ev->time));
    w->pending_delta++;
    return SEER_OK;
}

int seer_emit(seer_ctx *ctx, int32_t target, double time, int32_t kind, int64_t payload) {
    seer_runtime *rt = ctx->rt;
    seer_worker *w = holder_of(ctx);
    int rc = w ? emit_one(rt, w, ctx->entity, target, time, kind, payload, 1) : SEER_E_ENTITY;
    if (rc != SEER_OK) {
        seer_event cur = {ctx->now, 0, ctx->entity, -1, -1, 0};
        fail(rt, rc, ctx->worker, &cur, target, kind, time);
    }
    return rc;
}

int seer_rt_emit_many(seer_runtime *rt, int32_t worker, const int32_t *sources, const int32_t *targets,
                      const double *times, const int32_t *kinds, const int64_t *payloads, int64_t n,
                      int64_t *bad_index) {
    seer_worker *w = &rt->workers[worker];
    *bad_index = -1;
    for (int64_t i = 0; i < n; i++) {
        if (sources[i] < 0 || sources[i] >= rt->num_entities) return *bad_index = i, SEER_E_ENTITY;
        int rc = emit_one(rt, w, sources[i], targets[i], times[i], kinds[i], payloads ? payloads[i] : 0, 0);
        if (rc != SEER_OK) return *bad_index = i, rc;
    }
    return SEER_OK;
}

/* ---- tracing ------------------------------------------------------------------ */

void seer_rt_set_trace(seer_runtime *rt, int32_t worker, seer_trace_event *events, int64_t event_cap,
                       seer_trace_window *windows, int64_t window_cap) {
    seer_worker *w = &rt->workers[worker];
    w->trace_ev = events;
    w->trace_ev_cap = events ? event_cap : 0;
    w->trace_win = windows;
    w->trace_win_cap = windows ? window_cap : 0;
    w->trace_ev_n = w->trace_win_n = w->trace_dropped = 0;
    rt->tracing = 0;
    for (int32_t i = 0; i < rt->num_workers; i++) rt->tracing |= rt->workers[i].trace_ev != NULL;
}

void seer_rt_take_trace(seer_runtime *rt, int32_t worker, int64_t *n_events, int64_t *n_windows,
                        int64_t *dropped) {
    seer_worker *w = &rt->workers[worker];
    *n_events = w->trace_ev_n;
    *n_windows = w->trace_win_n;
    *dropped = w->trace_dropped;
    w->trace_ev_n = w->trace_win_n = w->trace_dropped = 0;
}

/* ---- one window ------------------------------------------------------------------ */

typedef struct window_stats {
    int64_t busy_ns, python_ns, events, empty_polls;
} window_stats;

static int run_native(seer_runtime *rt, seer_worker *w, const seer_event *ev, window_stats *st,
                      int32_t window) {
    seer_ctx *ctx = &w->ctx;
    ctx->entity = w->held = ev->entity;
    ctx->now = ev->time;
    rt->cur_time[ev->entity] = ev->time;
    int rc;
    const seer_event *outer_event = seer_crash_event; /* a copy step's runtime runs inside another's */
    seer_crash_event = ev;
    if (TRACING(rt)) {
        int64_t t0 = now_ns();
        rc = rt->handlers[ev->kind](ctx, ev);
        int64_t t1 = now_ns();
        st->busy_ns += t1 - t0;
        if (w->trace_ev_n < w->trace_ev_cap)
            w->trace_ev[w->trace_ev_n++] =
                (seer_trace_event){t0, t1, ev->time, ev->entity, ev->kind, ctx->worker, window};
        else
            w->trace_dropped++;
    } else {
        rc = rt->handlers[ev->kind](ctx, ev);
    }
    seer_crash_event = outer_event;
    w->held = -1;
    st->events++;
    /* target: the handler's own code, for HandlerError.code (42 and SEER_E_ARG read differently) */
    if (rc != SEER_OK) fail(rt, rc == SEER_E_CAUSALITY ? rc : SEER_E_HANDLER, ctx->worker, ev, rc, -1, NAN);
    return rc;
}

/* Run every window event of entity e, which this worker holds, then
 * unclaim it; the exact key it leaves goes into this worker's report. */
static inline void run_entity(seer_runtime *rt, seer_worker *w, uint32_t e, double t1, window_stats *st,
                              int32_t window) {
    seer_event ev;
    uint32_t id;
    /* a deferred window has no pusher to shake hands with (see defer) */
    uint32_t (*next)(seer_queue *, uint32_t, double, seer_event *) =
        w->defer ? seer_queue_next_private : seer_queue_next;
    while ((id = next(rt->q, e, t1, &ev)) != SEER_NIL) {
        seer_queue_recycle(rt->q, &w->cache, id);
        w->pending_delta--;
        if (run_native(rt, w, &ev, st, window) != SEER_OK || aborted(rt)) break;
    }
    note_key(w, w->defer ? seer_queue_unclaim_private(rt->q, e) : seer_queue_unclaim_key(rt->q, e));
}

/* Native-only models: hold one entity and run all its window events. */
static void window_native(seer_runtime *rt, seer_worker *w, double t1, window_stats *st, int32_t window) {
    uint32_t e;
    for (;;) {
        if (aborted(rt)) return;
        if (!seer_queue_take(rt->q, &e)) {
            st->empty_polls++;
            return;
        }
        run_entity(rt, w, e, t1, st, window);
    }
}

/* Take `take` indices of a range packed as next | end << 32 (own_range,
 * pf_range) off its front (the owner) or its back (a helper): a CAS from
 * *r, its last value.  1 and the first index in *first, or 0 with *r
 * reloaded.  relaxed: the CAS only hands out distinct indices; what they
 * index came with the edges that published the range. */
static inline int range_take(_Atomic uint64_t *range, uint64_t *r, uint32_t take, int back, uint32_t *first) {
    const uint32_t next = (uint32_t)*r, end = (uint32_t)(*r >> 32);
    const uint64_t want = back ? ((uint64_t)(end - take) << 32 | next) : *r + take;
    if (!atomic_compare_exchange_weak_explicit(range, r, want, memory_order_relaxed, memory_order_relaxed))
        return 0;
    *first = back ? end - take : next;
    *r = want;
    return 1;
}

/* A thief leaves a list alone once fewer entries than this are left: the
 * owner is about to finish them, and a stolen entity's rows (its tables,
 * its lane, the nodes it frees) move to the thief's cache and back.  On
 * uav_swarm_v0 'large' (some 110 entities per worker and window, 10 us of
 * work) a pool of two stealing one entry at a time from the front, as the
 * owner takes them, ran its events 1.25x slower than with no stealing at
 * all; from the back with STEAL_MIN 8, 1.2x; with 32, as fast.  Stealing
 * stays for what it is for: a worker the OS holds back. */
#define STEAL_MIN 32

/* The owner takes its list's entries in shrinking chunks, a 2W-th of
 * what is left but at least OWNER_CHUNK, and all that is left once fewer
 * than STEAL_MIN are (no thief may take any of them then), as OpenMP's
 * guided schedule does: a pool of two takes some 110 entries in 6 CASes
 * instead of 70.  Each CAS on own_range is a locked RMW, a full fence that
 * waits for the handlers' pending store misses; perf put 70% of
 * run_claimed on it on uav_swarm_v0 'large', 2 workers. */
#define OWNER_CHUNK 8

/* Take entries of worker o's claimed list for window `seq` until none is
 * left (the owner, from the front) or fewer than STEAL_MIN (a thief, from
 * the back), through range_take; the list's contents came with the
 * acquire load of own_tag. */
static void run_claimed(seer_runtime *rt, seer_worker *w, seer_worker *o, uint32_t seq, double t1,
                        window_stats *st, int32_t window) {
    /* acquire: pairs with the owner's release store of the tag, after it
     * wrote the list and reset own_range. */
    uint64_t tag = atomic_load_explicit(&o->own_tag, memory_order_acquire);
    if ((uint32_t)(tag >> 32) != seq) return; /* not published yet: its owner runs it */
    const int thief = o != w;
    uint64_t r = atomic_load_explicit(&o->own_range, memory_order_relaxed);
    for (;;) {
        const uint32_t next = (uint32_t)r, end = (uint32_t)(r >> 32);
        if (next >= end || (thief && end - next < STEAL_MIN)) return;
        const uint32_t left = end - next, guided = left / (2u * (uint32_t)rt->num_workers);
        const uint32_t take = thief                                      ? 1
                              : rt->num_workers == 1 || left < STEAL_MIN ? left
                              : guided > OWNER_CHUNK                     ? guided
                                                                         : OWNER_CHUNK;
        uint32_t first;
        if (!range_take(&o->own_range, &r, take, thief, &first)) continue;
        const uint32_t last = first + take;
        if (take > 1) seer_queue_prefetch_ahead(rt->q, SEER_NIL, o->own[first]);
        for (uint32_t i = first; i < last; i++) {
            /* In a big swarm the next entities' lanes and nodes are cache
             * misses: start them while this one runs (only of entries we
             * took: a thief may hold the others). */
            if (i + 1 < last)
                seer_queue_prefetch_ahead(rt->q, i + 2 < last ? o->own[i + 2] : SEER_NIL, o->own[i + 1]);
            if (aborted(rt)) /* give the claim back unrun (it is readied if it still has events) */
                seer_queue_unclaim(rt->q, o->own[i]);
            else
                run_entity(rt, w, o->own[i], t1, st, window);
        }
    }
}

/* Native-only models, parallel bookkeeping: the window's lanes were claimed
 * by the workers that own them; run our own list, then help the others,
 * then whatever sits in the ready ring (lanes that were queued already). */
static void window_native_claimed(seer_runtime *rt, seer_worker *w, uint32_t seq, double t1, window_stats *st,
                                  int32_t window) {
    run_claimed(rt, w, w, seq, t1, st, window);  /* seq: tag_seq of this window */
    for (int32_t i = 1; i < rt->num_workers; i++)
        run_claimed(rt, w, &rt->workers[(w->ctx.worker + i) % rt->num_workers], seq, t1, st, window);
    window_native(rt, w, t1, st, window);
}

/* Models with Python handlers: take one event from each of up to PY_BATCH
 * entities, group them by kind (stable), and hand each Python kind over in
 * one call.  One event per entity per round keeps each entity's order even
 * though a handler may send its own entity an event inside the window. */
static void window_batched(seer_runtime *rt, seer_worker *w, double t1, window_stats *st, int32_t window) {
    uint32_t count[1025];
    for (;;) {
        if (aborted(rt)) return;
        int32_t n = 0, held = 0;
        uint32_t e;
        while (held < rt->py_batch && seer_queue_take(rt->q, &e)) {
            w->batch_entity[held++] = e;
            uint32_t id = seer_queue_next(rt->q, e, t1, &w->batch[n]);
            if (id == SEER_NIL) continue;
            seer_queue_recycle(rt->q, &w->cache, id);
            w->pending_delta--;
            rt->cur_time[e] = w->batch[n].time;
            n++;
        }
        if (held == 0) {
            st->empty_polls++;
            return;
        }
        memset(count, 0, sizeof(uint32_t) * (size_t)(rt->num_kinds + 1));
        for (int32_t i = 0; i < n; i++) count[w->batch[i].kind + 1]++;
        for (int32_t k = 0; k < rt->num_kinds; k++) count[k + 1] += count[k];
        for (int32_t i = 0; i < n; i++) w->sorted[count[w->batch[i].kind]++] = w->batch[i];
        for (int32_t i = 0; i < n && !aborted(rt);) {
            int32_t kind = w->sorted[i].kind, j = i;
            while (j < n && w->sorted[j].kind == kind) j++;
            if (rt->python_kind[kind]) {
                int64_t t0 = now_ns();
                int rc = rt->dispatch(rt->dispatch_userdata, w->ctx.worker, kind, &w->sorted[i], j - i);
                int64_t dt = now_ns() - t0;
                st->busy_ns += dt;
                st->python_ns += dt;
                st->events += j - i;
                if (TRACING(rt)) {
                    for (int32_t m = i; m < j; m++) {
                        if (w->trace_ev_n < w->trace_ev_cap)
                            w->trace_ev[w->trace_ev_n++] = (seer_trace_event){
                                t0, t0 + dt, w->sorted[m].time, w->sorted[m].entity, kind, w->ctx.worker, window};
                        else
                            w->trace_dropped++;
                    }
                }
                if (rc != SEER_OK) {
                    /* The dispatcher says which event failed through rc >= 0
                     * offsets; a negative rc blames the first. */
                    int32_t at = rc > 0 && rc <= j - i ? rc - 1 : 0;
                    fail(rt, SEER_E_HANDLER, w->ctx.worker, &w->sorted[i + at], 0, -1, NAN);
                }
            } else {
                for (int32_t m = i; m < j; m++)
                    if (run_native(rt, w, &w->sorted[m], st, window) != SEER_OK) break;
            }
            i = j;
        }
        for (int32_t i = 0; i < held; i++) note_key(w, seer_queue_unclaim_key(rt->q, w->batch_entity[i]));
    }
}

/* ---- steps ------------------------------------------------------------------------- */

static void decide_window(seer_runtime *rt) {
    uint32_t slot = rt->workers[0].decision & 1; /* worker 0 increments it after the barrier */
    double t0 = seer_queue_min_time(rt->q);
    if (aborted(rt) || !(t0 < rt->horizon)) {
        rt->done[slot] = 1;
        return;
    }
    double t1 = t0 + rt->lookahead;
    if (!(t1 < rt->horizon)) t1 = rt->horizon;
    for (int i = 0; i < rt->num_snaps; i++) memcpy(rt->snaps[i].snap, rt->snaps[i].live, rt->snaps[i].nbytes);
    seer_queue_advance(rt->q, t1);
    rt->window_t0[slot] = t0;
    rt->window_t1[slot] = t1;
    rt->done[slot] = 0;
    /* No event before the horizon can outlive a window that ends there
     * (workers drain every event before t1, self-sent ones included, before
     * the end barrier), so the step ends with it: one barrier fewer. */
    rt->last[slot] = !(t1 < rt->horizon);
    rt->windows_total++;
}

static inline void timed_barrier(seer_runtime *rt, seer_worker *w);
static void run_window(seer_runtime *rt, seer_worker *w, int32_t wid, double t0, double t1, int32_t window,
                       int claimed);

/* The serial bookkeeping (SEER_RT_BOOK_SERIAL, kept to measure against):
 * worker 0 alone scans every lane for the next time, copies the snapshots
 * and scans again to advance, while the others wait at the barrier. */
static void run_step_serial(seer_runtime *rt, int32_t wid) {
    seer_worker *w = &rt->workers[wid];
    for (;;) {
        if (wid == 0) {
            int64_t b0 = rt->stats_on ? now_ns() : 0;
            decide_window(rt);
            if (rt->stats_on) {
                int64_t d = now_ns() - b0;
                w->stats.bookkeeping_ns += d;
                w->stats.serial_ns += d;
            }
        }
        timed_barrier(rt, w);
        /* Every worker counts decisions itself, so all read the same slot. */
        uint32_t slot = w->decision++ & 1;
        if (rt->done[slot]) break;
        double t0 = rt->window_t0[slot], t1 = rt->window_t1[slot];
        w->ctx.window_end = t1;
        w->window_key = seer_time_key(t1);
        w->min_key = SEER_KEY_INF;
        w->stats.windows++;
        int32_t window = (int32_t)rt->windows_total;
        run_window(rt, w, wid, t0, t1, window, 0);
        timed_barrier(rt, w);
        if (rt->last[slot]) break;
    }
}


static inline void timed_barrier(seer_runtime *rt, seer_worker *w) {
    if (rt->stats_on) {
        int64_t t0 = now_ns();
        barrier_wait(&rt->barrier, rt->num_workers, rt->spin);
        w->stats.barrier_ns += now_ns() - t0;
    } else {
        barrier_wait(&rt->barrier, rt->num_workers, rt->spin);
    }
}

/* This worker's share of every snapshot region, cut at cache lines. */
static void copy_snapshots(seer_runtime *rt, int32_t wid) {
    const uint64_t W = (uint64_t)rt->num_workers;
    for (int i = 0; i < rt->num_snaps; i++) {
        const snapshot_region *r = &rt->snaps[i];
        uint64_t lo = r->nbytes * (uint64_t)wid / W, hi = r->nbytes * (uint64_t)(wid + 1) / W;
        lo = wid == 0 ? 0 : lo / SEER_CACHELINE * SEER_CACHELINE;
        hi = (uint64_t)wid + 1 == W ? r->nbytes : hi / SEER_CACHELINE * SEER_CACHELINE;
        if (hi <= lo) continue;
        /* A plain copy, also in pools of two and more.  Writing only the
         * 64-byte blocks that differ spares the other cores' cached copies
         * of the blocks that did not change, but reads both sides of every
         * block; once the O(N) phases ran on each worker's home share, the
         * copy was faster (uav_swarm_v0 on 2 workers: 'large' 0.178 against
         * 0.196 ms per step, 'xlarge' 2.86 against 2.98, 'xxlarge' even). */
        memcpy((char *)r->snap + lo, (const char *)r->live + lo, hi - lo);
    }
}

/* Run one window's events (both bookkeeping modes). */
static void run_window(seer_runtime *rt, seer_worker *w, int32_t wid, double t0, double t1, int32_t window,
                       int claimed) {
    window_stats st = {0, 0, 0, 0};
    int64_t start = TRACING(rt) ? now_ns() : 0;
    if (rt->has_python)
        window_batched(rt, w, t1, &st, window);
    else if (claimed)
        window_native_claimed(rt, w, w->tag_seq, t1, &st, window);
    else
        window_native(rt, w, t1, &st, window);
    /* Settle shared counts before the barrier: after it, worker 0 may
     * return to Python, which may push or reset. */
    if (w->pending_delta) {
        seer_queue_add_pending(rt->q, w->pending_delta);
        w->pending_delta = 0;
    }
    /* Native windows keep the worker's node cache from window to window
     * and step to step, so it refills the nodes it freed itself, lines its
     * own core still holds.  Flushed every window, every node went round
     * the whole FIFO free ring between two uses, a cold line each time once
     * the pool outgrew L2 (uav_swarm_v0 xlarge: 11 MB).  Pushes from
     * outside a step take the caches back (reclaim_caches).  The modes that
     * run Python handlers or decide on worker 0 alone still flush. */
    if (!claimed) seer_queue_flush_cache(rt->q, &w->cache);
    w->events += st.events;
    if (TRACING(rt)) {
        if (w->trace_win_n < w->trace_win_cap)
            w->trace_win[w->trace_win_n++] = (seer_trace_window){
                start, now_ns(), st.busy_ns, st.python_ns, st.events, st.empty_polls, t0, t1, window, wid};
        else
            w->trace_dropped++;
    }
}

/* Parallel bookkeeping: no worker decides alone.  Each worker reports at
 * the end barrier the smallest time it left pending (the exact keys of the
 * lanes it unclaimed, the events it sent, the lanes of its share that the
 * window did not reach); after the barrier every worker combines the same
 * reports into the same next window, copies its share of the snapshots and
 * readies its share of the lanes.  A second barrier keeps handlers off the
 * snapshots until every share is copied (models without snapshots skip it:
 * a worker that finds the ready ring empty early just waits at the end).
 *
 * Why the reports give the exact minimum: after a window every pending
 * event is >= t1 (cross-entity events by the lookahead rule, self-sent ones
 * are run inside it).  A lane either was held in the window, and its last
 * unclaim published its exact earliest key, which later pushes can only
 * lower; or it was not, and its key at the window's start (>= t1, read by
 * advance_range) was only lowered by pushes.  Pushes are noted by their
 * senders.  So min(reports) is the smallest pending time: the same value,
 * hence the same windows, for every pool size and interleaving. */
static void run_step_parallel(seer_runtime *rt, int32_t wid) {
    seer_worker *w = &rt->workers[wid];
    const int stats = rt->stats_on;
    /* Read once: worker 0 sets the next step's horizon and window count as
     * soon as it leaves this step's last barrier, which may be before we
     * are done reading.  Both were written before the step_gen RMW that
     * started this step (or by this thread, for worker 0). */
    const double horizon = rt->horizon;
    const int64_t window_base = rt->windows_total;
    int64_t b0 = stats ? now_ns() : 0;
    w->win_seq = 0;
    /* Step start: anything may have been pushed or changed from outside. */
    w->report_key[w->phase & 1] = seer_queue_min_key_range(rt->q, w->lane_lo, w->lane_hi);
    w->report_abort[w->phase & 1] = aborted(rt);
    if (stats) w->stats.bookkeeping_ns += now_ns() - b0;
    for (;;) {
        timed_barrier(rt, w);
        if (stats) b0 = now_ns();
        const uint32_t slot = w->phase++ & 1;
        uint64_t m = SEER_KEY_INF;
        int stop = 0;
        for (int32_t i = 0; i < rt->num_workers; i++) {
            const seer_worker *o = &rt->workers[i];
            if (o->report_key[slot] < m) m = o->report_key[slot];
            stop |= o->report_abort[slot];
        }
        double t0 = seer_queue_key_time(m);
        if (stop || !(t0 < horizon)) {
            /* Nothing left before the horizon, but the window just run
             * (not the step's last, or we would have left) may have
             * deferred events: publish them before the step returns. */
            if (!rt->has_python && w->win_seq > 0) {
                deliver_outboxes(rt, w, w->win_seq & 1, PUSH_PUBLISH);
                if (rt->num_workers > 1) timed_barrier(rt, w);
            }
            w->defer = 0;
            if (stats) w->stats.bookkeeping_ns += now_ns() - b0;
            break;
        }
        double t1 = t0 + rt->lookahead;
        if (!(t1 < horizon)) t1 = horizon;
        copy_snapshots(rt, wid);
        w->window_key = seer_time_key(t1);
        w->ctx.window_end = t1;
        w->win_seq++;
        w->stats.windows++;
        const int32_t window = (int32_t)(window_base + w->win_seq);
        if (!rt->has_python) {
            w->defer = t1 < horizon; /* a step's last window publishes at once */
            /* The last window's; claim_range below claims them.  With plain
             * stores only if this window defers too: otherwise another
             * worker's handlers may push onto our lanes as soon as they run,
             * which (with no snapshot barrier) can be before we are done. */
            deliver_outboxes(rt, w, (w->win_seq - 1) & 1, w->defer ? PUSH_PRIVATE : PUSH_QUIET);
        }
        if (rt->has_python) {
            w->min_key = seer_queue_advance_range(rt->q, t1, w->lane_lo, w->lane_hi);
        } else {
            /* Claim our share's lanes ourselves: no ready ring, so no ring
             * traffic between the workers inside the window. */
            uint64_t rest;
            int32_t n = (w->defer ? seer_queue_claim_range_private : seer_queue_claim_range)(
                rt->q, t1, w->lane_lo, w->lane_hi, w->own, &rest);
            w->min_key = rest;
            /* relaxed: published by the release store of the tag below. */
            atomic_store_explicit(&w->own_range, (uint64_t)(uint32_t)n << 32, memory_order_relaxed);
            /* release: the list and the reset above happen-before a thief's
             * acquire load of this tag (run_claimed).  The window seq keeps
             * a thief from taking a list of another window. */
            w->tag_seq++;
            atomic_store_explicit(&w->own_tag, ((uint64_t)w->tag_seq << 32) | (uint32_t)n, memory_order_release);
        }
        if (stats) w->stats.bookkeeping_ns += now_ns() - b0;
        if (rt->num_snaps) timed_barrier(rt, w);
        run_window(rt, w, wid, t0, t1, window, !rt->has_python);
        w->report_key[w->phase & 1] = w->min_key;
        w->report_abort[w->phase & 1] = aborted(rt);
        if (!(t1 < horizon)) { /* the step ends with this window */
            timed_barrier(rt, w);
            break;
        }
    }
}

static void run_step(seer_runtime *rt, int32_t wid) {
    seer_worker *w = &rt->workers[wid];
    w->defer = 0; /* only run_step_parallel's windows set it */
    int64_t t0 = rt->stats_on ? now_ns() : 0;
    if (rt->bookkeeping == SEER_RT_BOOK_SERIAL)
        run_step_serial(rt, wid);
    else
        run_step_parallel(rt, wid);
    if (rt->stats_on) {
        w->stats.step_ns += now_ns() - t0;
        w->stats.steps++;
    }
}

#define JOB_STEP 0
#define JOB_FOR 1

/* Run slices of worker o's home share of the loop: from the front if it is
 * ours, from the back if we help (range_take).  The loop's inputs came with
 * the step_gen edge, its outputs go out through the barrier after it. */
static void pfor_take(seer_runtime *rt, seer_worker *o, int32_t wid, uint32_t g, int thief) {
    uint64_t r = atomic_load_explicit(&o->pf_range, memory_order_relaxed);
    for (;;) {
        const uint32_t next = (uint32_t)r, end = (uint32_t)(r >> 32);
        if (next >= end) return;
        const uint32_t take = end - next < g ? end - next : g;
        uint32_t lo;
        if (!range_take(&o->pf_range, &r, take, thief, &lo)) continue;
        rt->pf_fn(rt->pf_arg, lo, (int64_t)lo + take, wid);
    }
}

/* A parallel loop runs each worker's home share [n w / W, n (w + 1) / W)
 * on that worker first, and only then helps the others, from the back.
 * Loops over entities (uav_swarm_v0's readout and candidate lists) so cut
 * them as the step's windows cut the lanes, and a row stays in the cache of
 * the core that wrote it during the windows.  With slices handed out first
 * come, first served, half of them went to the other core: on 'large' (256
 * UAVs, ids in space order) perf put 3.0x the CPU time of one worker on
 * observe_one (the readout) with 2 workers, and 1.6x on cand_slice; with
 * home shares, 1.1x and 1.0x.  Loops too long for the 32-bit ranges are
 * handed out first come, first served. */
/* A loop is cut into home shares if its ranges fit range_take's 32 bits. */
static inline int pf_home(int64_t n, int64_t grain) { return n <= (int64_t)UINT32_MAX && grain <= (int64_t)UINT32_MAX; }

static void pfor_run(seer_runtime *rt, int32_t wid) {
    const int64_t n = rt->pf_n, g = rt->pf_grain;
    if (!pf_home(n, g)) {
        for (;;) {
            int64_t lo = atomic_fetch_add_explicit(&rt->pf_next, g, memory_order_relaxed);
            if (lo >= n) return;
            rt->pf_fn(rt->pf_arg, lo, lo + g < n ? lo + g : n, wid);
        }
    }
    const int32_t W = rt->num_workers;
    pfor_take(rt, &rt->workers[wid], wid, (uint32_t)g, 0);
    for (int32_t i = 1; i < W; i++) pfor_take(rt, &rt->workers[(wid + i) % W], wid, (uint32_t)g, 1);
}

int seer_rt_parallel_for(seer_runtime *rt, int64_t n, int64_t grain, seer_range_fn fn, void *arg) {
    if (n <= 0) return SEER_OK;
    if (grain < 1) grain = 1;
    if (rt->num_workers == 1 || n <= grain) {
        fn(arg, 0, n, 0);
        return SEER_OK;
    }
    rt->job = JOB_FOR;
    rt->pf_fn = fn;
    rt->pf_arg = arg;
    rt->pf_n = n;
    rt->pf_grain = grain;
    /* relaxed: published by the step_gen RMW below; every worker's last
     * fetch_add of the previous loop came before the barrier that ended it. */
    atomic_store_explicit(&rt->pf_next, 0, memory_order_relaxed);
    for (int32_t w = 0; pf_home(n, grain) && w < rt->num_workers; w++) {
        const uint64_t lo = (uint64_t)(n * w / rt->num_workers), hi = (uint64_t)(n * (w + 1) / rt->num_workers);
        atomic_store_explicit(&rt->workers[w].pf_range, hi << 32 | lo, memory_order_relaxed); /* (as pf_next) */
    }
    /* seq_cst (release part): the job and the loop's inputs happen-before
     * the pool's acquire load of the new generation; seq_cst for the
     * sleepers handshake (wake_all). */
    atomic_fetch_add_explicit(&rt->step_gen, 1, memory_order_seq_cst);
    wake_all(&rt->step_gen, &rt->step_sleepers);
    pfor_run(rt, 0);
    /* Every slice's writes happen-before our return (the barrier's edges). */
    barrier_wait(&rt->barrier, rt->num_workers, rt->spin);
    return SEER_OK;
}

int32_t seer_rt_num_workers(const seer_runtime *rt) { return rt->num_workers; }

int seer_rt_step(seer_runtime *rt, double horizon) {
    /* Wait out a reclaim in progress (a push from another thread taking
     * the caches back; it is short).  acquire: its cache writes happen-
     * before this step, and through step_gen before the pool's. */
    unsigned spins = 0;
    for (int idle = STEP_IDLE;; idle = STEP_IDLE) {
        if (atomic_compare_exchange_weak_explicit(&rt->stepping, &idle, STEP_RUNNING, memory_order_acquire,
                                                  memory_order_relaxed))
            break;
        if (idle == STEP_RUNNING) break; /* a step inside a step: the callers' guards report that misuse */
        seer_backoff(&spins);
    }
    rt->horizon = horizon;
    rt->job = JOB_STEP;
    if (rt->num_workers > 1) {
        /* seq_cst (release part): the horizon and the pushed actions happen-
         * before the pool's acquire load of the new generation. */
        atomic_fetch_add_explicit(&rt->step_gen, 1, memory_order_seq_cst);
        wake_all(&rt->step_gen, &rt->step_sleepers);
    }
    run_step(rt, 0);
    if (rt->bookkeeping != SEER_RT_BOOK_SERIAL) rt->windows_total += rt->workers[0].win_seq;
    /* Pool workers add their counts before each window's end barrier, whose
     * edges order them before this read. */
    int64_t events = rt->events_base;
    for (int32_t i = 0; i < rt->num_workers; i++) events += rt->workers[i].events;
    rt->events_total = events;
    /* release: the workers' cache writes (ordered before us by the end
     * barrier) happen-before a reclaim's acquire. */
    atomic_store_explicit(&rt->stepping, STEP_IDLE, memory_order_release);
    /* acquire: pairs with fail()'s release store, so a nonzero code comes
     * with its record (seer_rt_last_error). */
    return atomic_load_explicit(&rt->err_code, memory_order_acquire);
}

void seer_rt_worker_main(seer_runtime *rt, int32_t wid) {
    /* Start from the generation the runtime was created with, not from what
     * is there now: a step may already have begun before this thread ran. */
    uint32_t seen = 0;
    for (;;) {
        /* acquire (inside): pairs with the step_gen RMW (release part) of
         * seer_rt_step or seer_rt_shutdown: the horizon, the pushed actions
         * and the shutdown flag written before it are visible after it. */
        wait_while_equal(&rt->step_gen, seen, rt->spin, &rt->step_sleepers);
        seen = atomic_load_explicit(&rt->step_gen, memory_order_acquire);
        /* acquire: see seer_rt_shutdown (the step_gen edge above already
         * carries the flag; this pair is belt and braces). */
        if (atomic_load_explicit(&rt->shutdown, memory_order_acquire)) {
            /* release: see done_gen; a joined thread needs no wait, but the
             * count has to match step_gen for wait_accounted all the same. */
            atomic_store_explicit(&rt->workers[wid].done_gen, seen, memory_order_release);
            return;
        }
        if (rt->job == JOB_FOR) {
            pfor_run(rt, wid);
            barrier_wait(&rt->barrier, rt->num_workers, rt->spin);
        } else {
            run_step(rt, wid);
        }
        /* release: this job's writes, its stats after the last barrier
         * among them, happen-before wait_accounted's acquire load. */
        atomic_store_explicit(&rt->workers[wid].done_gen, seen, memory_order_release);
    }
}

void seer_rt_shutdown(seer_runtime *rt) {
    /* release: pairs with the acquire load in worker_main after waking; the
     * flag is also carried by the step_gen RMW below (release part), which
     * is what the waking worker synchronizes with first. */
    atomic_store_explicit(&rt->shutdown, 1, memory_order_release);
    /* seq_cst: release part as said; seq_cst for the sleepers handshake. */
    atomic_fetch_add_explicit(&rt->step_gen, 1, memory_order_seq_cst);
    wake_all(&rt->step_gen, &rt->step_sleepers);
}

void seer_rt_interrupt(seer_runtime *rt) {
    /* The same first-failure record a handler error takes: workers poll it
     * between events (aborted()), worker 0 ends the step at its next window
     * decision, and seer_rt_step returns the code. */
    fail(rt, SEER_E_CLOSED, -1, NULL, -1, -1, NAN);
}

/* ---- the public API's function table ------------------------------------------------ */

int seer_rt_push(seer_runtime *rt, int32_t entity, double time, int32_t kind, int64_t payload) {
    int64_t bad;
    return seer_queue_push_many(rt->q, &entity, &time, &kind, &payload, NULL, NULL, 1, &bad);
}

static const seer_api API = {
    .version = SEER_API_VERSION,
    .size = sizeof(seer_api),
    .emit = seer_emit,
    .random_u64 = seer_random_u64,
    .uniform = seer_uniform,
    .counter_uniform = seer_counter_uniform,
    .rt_push = seer_rt_push,
    .rt_step = seer_rt_step,
    .rt_reset = seer_rt_reset,
    .rt_events_total = seer_rt_events_total,
    .rt_parallel_for = seer_rt_parallel_for,
    .rt_num_workers = seer_rt_num_workers,
    .rt_relabel = seer_rt_relabel,
};

const seer_api *seer_api_table(void) { return &API; }
