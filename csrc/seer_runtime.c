/* SEER runtime: conservative windows over the dual-layer queue.
 *
 * A step runs windows [T, min(T + L, horizon)) where T is the earliest
 * pending time and L the model's lookahead.  Worker 0 (the caller of
 * seer_rt_step) decides each window; all workers meet at a barrier before and
 * after it.  Inside a window a worker takes a ready entity from layer 2,
 * which claims it, and runs its events one at a time, re-reading its lane
 * after each handler so that events the handler sends to its own entity keep
 * their order.  Events to other entities are at least L later, hence after
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

typedef struct seer_worker {
    _Alignas(SEER_CACHELINE) seer_ctx ctx;
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
    uint32_t *emit_seq;    /* per entity */
    double *cur_time;      /* per entity: time of the event being handled */
    snapshot_region snaps[MAX_SNAPSHOTS];
    int num_snaps;
    int tracing;

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
    seer_barrier barrier;
    _Alignas(SEER_CACHELINE) _Atomic uint32_t step_gen;
    _Atomic uint32_t step_sleepers;
    _Atomic int shutdown;
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
    rt->workers = zalloc(sizeof(seer_worker) * (size_t)num_workers);
    rt->rng_counter = zalloc(sizeof(uint64_t) * (size_t)rt->num_entities);
    rt->emit_seq = zalloc(sizeof(uint32_t) * (size_t)rt->num_entities);
    rt->cur_time = zalloc(sizeof(double) * (size_t)rt->num_entities);
    if (!rt->workers || !rt->rng_counter || !rt->emit_seq || !rt->cur_time) {
        seer_rt_free(rt);
        return NULL;
    }
    for (int32_t w = 0; w < num_workers; w++) {
        rt->workers[w].ctx.api = seer_api_table();
        rt->workers[w].ctx.rt = rt;
        rt->workers[w].ctx.worker = w;
    }
    return rt;
}

void seer_rt_free(seer_runtime *rt) {
    if (!rt) return;
    free(rt->workers);
    free(rt->rng_counter);
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
    memset(rt->emit_seq, 0, sizeof(uint32_t) * (size_t)rt->num_entities);
    memset(rt->cur_time, 0, sizeof(double) * (size_t)rt->num_entities);
    for (int32_t w = 0; w < rt->num_workers; w++) {
        rt->workers[w].cache.n = 0; /* the cleared queue owns every node again */
        rt->workers[w].pending_delta = 0;
    }
    /* relaxed: reset runs while no step does; the next step's step_gen /
     * barrier edges publish it. */
    atomic_store_explicit(&rt->err_code, 0, memory_order_relaxed);
    atomic_store_explicit(&rt->err_claim, 0, memory_order_relaxed);
    memset(&rt->err, 0, sizeof rt->err);
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

uint64_t seer_random_u64(seer_ctx *ctx) {
    seer_runtime *rt = ctx->rt;
    return counter_u64(rt->seed, ctx->entity, rt->rng_counter[ctx->entity]++);
}

double seer_uniform(seer_ctx *ctx) { return (double)(seer_random_u64(ctx) >> 11) * 0x1.0p-53; }

void seer_rt_uniform_many(seer_runtime *rt, const int32_t *entities, double *out, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        int32_t e = entities[i];
        out[i] = seer_counter_uniform(rt->seed, e, rt->rng_counter[e]++);
    }
}

/* ---- emits -------------------------------------------------------------------- */

static int emit_one(seer_runtime *rt, seer_worker *w, int32_t source, int32_t target, double time,
                    int32_t kind, int64_t payload) {
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
    seer_queue_publish(rt->q, id);
    w->pending_delta++;
    return SEER_OK;
}

int seer_emit(seer_ctx *ctx, int32_t target, double time, int32_t kind, int64_t payload) {
    seer_runtime *rt = ctx->rt;
    seer_worker *w = &rt->workers[ctx->worker];
    int rc = emit_one(rt, w, ctx->entity, target, time, kind, payload);
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
        int rc = emit_one(rt, w, sources[i], targets[i], times[i], kinds[i], payloads ? payloads[i] : 0);
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
    ctx->entity = ev->entity;
    ctx->now = ev->time;
    rt->cur_time[ev->entity] = ev->time;
    int rc;
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
    st->events++;
    if (rc != SEER_OK) fail(rt, rc == SEER_E_CAUSALITY ? rc : SEER_E_HANDLER, ctx->worker, ev, -1, -1, NAN);
    return rc;
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
        seer_event ev;
        uint32_t id;
        while ((id = seer_queue_next(rt->q, e, t1, &ev)) != SEER_NIL) {
            seer_queue_recycle(rt->q, &w->cache, id);
            w->pending_delta--;
            if (run_native(rt, w, &ev, st, window) != SEER_OK || aborted(rt)) break;
        }
        seer_queue_unclaim(rt->q, e);
    }
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
                    fail(rt, SEER_E_HANDLER, w->ctx.worker, &w->sorted[i + at], -1, -1, NAN);
                }
            } else {
                for (int32_t m = i; m < j; m++)
                    if (run_native(rt, w, &w->sorted[m], st, window) != SEER_OK) break;
            }
            i = j;
        }
        for (int32_t i = 0; i < held; i++) seer_queue_unclaim(rt->q, w->batch_entity[i]);
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

static void run_step(seer_runtime *rt, int32_t wid) {
    seer_worker *w = &rt->workers[wid];
    for (;;) {
        if (wid == 0) decide_window(rt);
        barrier_wait(&rt->barrier, rt->num_workers, rt->spin);
        /* Every worker counts decisions itself, so all read the same slot. */
        uint32_t slot = w->decision++ & 1;
        if (rt->done[slot]) break;
        double t0 = rt->window_t0[slot], t1 = rt->window_t1[slot];
        w->ctx.window_end = t1;
        int32_t window = (int32_t)rt->windows_total;
        window_stats st = {0, 0, 0, 0};
        int64_t start = TRACING(rt) ? now_ns() : 0;
        if (rt->has_python)
            window_batched(rt, w, t1, &st, window);
        else
            window_native(rt, w, t1, &st, window);
        /* Settle shared counts and give cached nodes back before the barrier:
         * after it, worker 0 may return to Python, which may push or reset. */
        if (w->pending_delta) {
            seer_queue_add_pending(rt->q, w->pending_delta);
            w->pending_delta = 0;
        }
        seer_queue_flush_cache(rt->q, &w->cache);
        w->events += st.events;
        if (TRACING(rt)) {
            if (w->trace_win_n < w->trace_win_cap)
                w->trace_win[w->trace_win_n++] = (seer_trace_window){
                    start, now_ns(), st.busy_ns, st.python_ns, st.events, st.empty_polls, t0, t1, window, wid};
            else
                w->trace_dropped++;
        }
        barrier_wait(&rt->barrier, rt->num_workers, rt->spin);
        if (rt->last[slot]) break;
    }
}

int seer_rt_step(seer_runtime *rt, double horizon) {
    rt->horizon = horizon;
    if (rt->num_workers > 1) {
        /* seq_cst (release part): the horizon and the pushed actions happen-
         * before the pool's acquire load of the new generation. */
        atomic_fetch_add_explicit(&rt->step_gen, 1, memory_order_seq_cst);
        wake_all(&rt->step_gen, &rt->step_sleepers);
    }
    run_step(rt, 0);
    /* Pool workers add their counts before each window's end barrier, whose
     * edges order them before this read. */
    int64_t events = 0;
    for (int32_t i = 0; i < rt->num_workers; i++) events += rt->workers[i].events;
    rt->events_total = events;
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
        if (atomic_load_explicit(&rt->shutdown, memory_order_acquire)) return;
        run_step(rt, wid);
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
};

const seer_api *seer_api_table(void) { return &API; }
