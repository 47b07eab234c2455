/* SEER runtime: conservative windows over the dual-layer queue.
 *
 * A step runs windows [T, min(T + L, horizon)) where T is the earliest
 * pending time and L the model's lookahead.  Native models run each
 * step as a chain of *phases* whose work is cut into units that any thread
 * of the pool may claim (chunked phases, below): a scan of the lanes at the
 * step's start, then per window the snapshot copies, outbox deliveries
 * and lane claims of each chunk of lanes, and the chunk's entities'
 * events; a phase ends when its last unit is
 * done, not when every worker has arrived, and whoever completes that unit
 * publishes the next phase.  The next window's start comes from an atomic
 * minimum that every unit folds its pending keys into, so it is the same
 * whichever thread ran which unit.  The stepping thread (worker 0) can run
 * a whole step alone; a pool thread that the OS parks holds back at most
 * the unit it holds, and one that wakes late finds its phase gone and joins
 * the current one.  Models with Python handlers run as barrier jobs, every
 * worker at every window's barrier (run_step_parallel).
 * Inside a window a thread runs the entities it claimed, each entity's
 * events one at a time, re-reading its lane after each handler so that
 * events the handler sends to its own entity keep their order.  Events to
 * other entities are at least L later, hence after the window: threads never
 * wait for each other inside a window.
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
#define MAX_DEBUG_ROWS 64

/* Built with -DSEER_NO_TRACE the tracing branches compile away; the runtime
 * benchmark builds that variant to measure what tracing costs when off. */
#ifdef SEER_NO_TRACE
#define TRACING(rt) 0
#else
#define TRACING(rt) ((rt)->tracing)
#endif
#define PY_BATCH 256
/* relaxed: written between steps only; the epoch edges order the write
 * before every read in the next step. */
#define STATS_ON(rt) atomic_load_explicit(&(rt)->stats_on, memory_order_relaxed)

/* ---- futex-backed waiting ---------------------------------------------- */

static inline int64_t now_ns(void);

/* Adds the time past its spins to *slept (seer_spin: time asleep is not
 * time lost to other threads). */
static void wait_while_equal(_Atomic uint32_t *word, uint32_t old, int spin, _Atomic uint32_t *sleepers,
                             int64_t *slept) {
    for (int i = 0; i < spin; i++) {
        /* acquire: pairs with the release increment of the waker, so what it
         * wrote before waking us is visible once we see the new value. */
        if (atomic_load_explicit(word, memory_order_acquire) != old) return;
        seer_cpu_relax();
    }
    const int64_t t0 = now_ns();
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
    *slept += now_ns() - t0;
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

/* Spin-then-park, with spin budgets learnt from what the waits observe.
 * A wait spins up to its budget of pauses, then sleeps on the futex.  Two
 * budgets per thread: waits inside a step (for a phase's last unit, a few
 * microseconds when every thread has a core) and waits between steps (as
 * long as the model's own work between two steps, tens of microseconds).
 * They follow two observations:
 *  - the cores are busy: a thread of the pool spent LOST_BUSY_PERCENT or
 *    more of its recent time in the pool (decayed, LOST_TAU_NS) runnable
 *    but off its core, i.e. neither running (its CPU time) nor asleep in a
 *    wait (slept_ns): a pool thread over its time between two checks, the
 *    stepping thread over its steps (not the caller's code between them),
 *    each at most once a CHECK_NS; a pool that runs Python handlers, whose
 *    threads also wait for the GIL, does not measure.  More
 *    runnable threads than cores, so a spinner holds a core that the
 *    thread it waits for, or the process beside us, needs.  Both budgets of
 *    every thread of the pool drop to their minimum and stay there until
 *    CALM_NS pass without a thread finding the cores busy again:
 *    STEP_SPIN_MIN, a few microseconds (a phase's completer deciding and
 *    publishing the next, or an env's C code between its step and its
 *    parallel loops, which a thread that slept at once would miss every
 *    time).  The whole pool: beside a busy process the stepping thread
 *    loses most of the time, while a pool thread that slept through it
 *    would spin on.  Time lost, not the number of preemptions: a VM's host
 *    and the kernel's own threads preempt a thread now and then with
 *    nothing else running (a 2-core KVM guest: one involuntary switch in
 *    30-40 ms, of microseconds each), and backing off at each of them, as
 *    this did until 2026-12, kept a quiet pool parked between steps nearly
 *    all the time; beside a busy process a thread loses a third of its
 *    time and more (bench/results/spin_busy_rule.md).
 *  - an in-step wait slept but was woken within WAKE_NS (a futex wake-up
 *    costs about that): spinning longer would have caught it, so its budget
 *    doubles; one that slept longer halves it.  (Not the waits between
 *    steps: the caller's code there often lasts longer than WAKE_NS and
 *    less than the idle budget, which would halve it down to nothing; a
 *    2-worker 'large' ParallelEnv.step ran 1.05x its 1-worker time with
 *    that rule, against 1.37x for the C step alone in the same minute.)
 * Spinning is time taken from others either way, so each thread counts the
 * time it spun and the times it slept (seer_rt_stats spin_ns, parks). */
#define SPIN_MIN 16u
#define STEP_SPIN_MIN 512u  /* pauses, some 5 us at the cost of a pause here */
#define STEP_SPIN_MAX 4096u /* pauses, some 40 us at the cost of a pause here */
#define WAKE_NS 100000
#define CALM_NS 200000000
#define LOST_TAU_NS 50000000
#define LOST_BUSY_PERCENT 10
/* A thread's CPU time costs a system call here (some 0.5 us; the vDSO has
 * no thread clocks): the check runs at most this often.  On the stepping
 * thread a check at every step was 0.5% of a 'large' uav_swarm_v0 step
 * (0.13 ms), and a pool thread paid it each time a parallel loop of the
 * step ended, on its way to the next one. */
#define CHECK_NS 1000000

typedef struct seer_spin {
    uint32_t step_limit, idle_limit; /* pauses before sleeping */
    uint32_t idle_max;               /* the runtime's spin setting */
    int64_t cpu_ns;                  /* this thread's CPU time at the last check (-1: none yet) */
    int64_t slept_ns, slept_seen;    /* its sleeps in wait_change, all told, and at the last check */
    double lost_avg, span_avg;       /* time it was runnable but off its core, and time, decayed */
    int64_t contended_ns;            /* the busy time its budgets are down for (0: they are not) */
    int64_t checked_ns;              /* the last check, or the start of the span measured (0: none yet) */
    int measuring;                   /* the stepping thread: a step's span is being measured */
    _Atomic int64_t *pool_busy_ns;   /* the runtime's: when a thread of its pool last found the cores busy */
} seer_spin;

static void spin_init(seer_spin *sp, int spin, _Atomic int64_t *pool_busy_ns) {
    sp->idle_max = spin > (int)SPIN_MIN ? (uint32_t)spin : SPIN_MIN;
    sp->idle_limit = sp->idle_max;
    sp->step_limit = STEP_SPIN_MAX < sp->idle_max ? STEP_SPIN_MAX : sp->idle_max;
    sp->cpu_ns = -1;
    sp->slept_ns = sp->slept_seen = 0;
    sp->lost_avg = sp->span_avg = 0.0;
    sp->contended_ns = 0;
    sp->checked_ns = 0;
    sp->measuring = 0;
    sp->pool_busy_ns = pool_busy_ns;
}

#if defined(__linux__) && defined(CLOCK_THREAD_CPUTIME_ID)
#define SPIN_MEASURES 1
static inline int64_t thread_cpu_ns(void) {
    struct timespec ts;
    return clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0 ? (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec : -1;
}
#else
#define SPIN_MEASURES 0
#endif

/* Fold a span of this thread's own (dt ns of wall time, CPU time from cpu0
 * to cpu1, sleeps since slept0) into its lost time, and say to the pool
 * when the cores look busy. */
static void spin_measure(seer_spin *sp, int64_t now, int64_t dt, int64_t cpu0, int64_t cpu1, int64_t slept0) {
    if (dt <= 0 || cpu0 < 0 || cpu1 < 0) return;
    /* the rest of the span: runnable, but another thread had the core */
    int64_t lost = dt - (cpu1 - cpu0) - (sp->slept_ns - slept0);
    if (lost < 0) lost = 0;
    /* decayed by tau / (tau + dt), the first-order step of exp(-dt / tau) */
    const double keep = (double)LOST_TAU_NS / (double)(LOST_TAU_NS + dt);
    sp->lost_avg = sp->lost_avg * keep + (double)lost;
    sp->span_avg = sp->span_avg * keep + (double)dt;
    /* relaxed, here and in spin_follow: a hint between the pool's threads,
     * ordered by nothing */
    if (100.0 * sp->lost_avg >= LOST_BUSY_PERCENT * sp->span_avg)
        atomic_store_explicit(sp->pool_busy_ns, now, memory_order_relaxed);
}

/* This thread's budgets, from whether a thread of its pool found the cores
 * busy within CALM_NS. */
static void spin_follow(seer_spin *sp, int64_t now) {
    const int64_t busy = atomic_load_explicit(sp->pool_busy_ns, memory_order_relaxed);
    if (busy && now - busy <= CALM_NS) {
        sp->contended_ns = busy;
        sp->idle_limit = sp->step_limit = STEP_SPIN_MIN < sp->idle_max ? STEP_SPIN_MIN : sp->idle_max;
    } else if (sp->contended_ns) {
        sp->contended_ns = 0;
        sp->idle_limit = sp->idle_max;
        sp->step_limit = STEP_SPIN_MAX < sp->idle_max ? STEP_SPIN_MAX : sp->idle_max;
    }
}

/* A pool thread, between steps, unless it checked less than CHECK_NS ago:
 * its span since the last check is all the pool's (work, waits), none of it
 * the caller's code.  measure: 0 for a pool that runs Python handlers, whose
 * threads also wait for the GIL (a wait, not a busy core), which is not
 * told apart: they only follow the pool's flag. */
static void spin_check_load(seer_spin *sp, int measure) {
#if SPIN_MEASURES
    const int64_t now = now_ns();
    if (!measure) {
        spin_follow(sp, now);
        return;
    }
    if (sp->checked_ns && now - sp->checked_ns < CHECK_NS) return;
    const int64_t cpu = thread_cpu_ns();
    if (sp->checked_ns) spin_measure(sp, now, now - sp->checked_ns, sp->cpu_ns, cpu, sp->slept_seen);
    sp->checked_ns = now;
    sp->cpu_ns = cpu;
    sp->slept_seen = sp->slept_ns;
    spin_follow(sp, now);
#else
    (void)sp;
    (void)measure;
#endif
}

/* The stepping thread, around a step, at most once a CHECK_NS: only the
 * step's own span, as between steps it runs the caller's code, which may
 * sleep (a learner waiting for its GPU, say) without the cores being busy.
 * measure: as spin_check_load's. */
static void spin_step_begin(seer_spin *sp, int measure) {
#if SPIN_MEASURES
    const int64_t now = now_ns();
    spin_follow(sp, now);
    if (!measure || (sp->checked_ns && now - sp->checked_ns < CHECK_NS)) return;
    sp->checked_ns = now;
    sp->cpu_ns = thread_cpu_ns();
    sp->slept_seen = sp->slept_ns;
    sp->measuring = 1;
#else
    (void)sp;
    (void)measure;
#endif
}

static void spin_step_end(seer_spin *sp) {
#if SPIN_MEASURES
    if (!sp->measuring) return;
    sp->measuring = 0;
    const int64_t now = now_ns();
    spin_measure(sp, now, now - sp->checked_ns, sp->cpu_ns, thread_cpu_ns(), sp->slept_seen);
#else
    (void)sp;
#endif
}

/* Wait until *word differs from old; returns the new value.  idle: a wait
 * between steps (the idle budget), else an in-step one.  Adds the time spun
 * to *spin_ns and the sleeps to *parks. */
static uint32_t wait_change(_Atomic uint32_t *word, uint32_t old, seer_spin *sp, int idle,
                            _Atomic uint32_t *sleepers, int64_t *spin_ns, int64_t *parks) {
    uint32_t *limit = idle ? &sp->idle_limit : &sp->step_limit;
    const int64_t t0 = now_ns();
    uint32_t v;
    for (uint32_t i = 0; i < *limit; i++) {
        /* acquire: pairs with the publisher's seq_cst RMW of the word (its
         * release part), so what it wrote before publishing is visible. */
        if ((v = atomic_load_explicit(word, memory_order_acquire)) != old) {
            *spin_ns += now_ns() - t0;
            return v;
        }
        seer_cpu_relax();
    }
    const int64_t t1 = now_ns();
    *spin_ns += t1 - t0;
    /* acquire: as above */
    while ((v = atomic_load_explicit(word, memory_order_acquire)) == old) {
#ifdef __linux__
        /* seq_cst (Dekker with wake_all): either the waker sees us counted
         * and calls FUTEX_WAKE, or the kernel sees the new value and does
         * not put us to sleep. */
        atomic_fetch_add_explicit(sleepers, 1, memory_order_seq_cst);
        if (atomic_load_explicit(word, memory_order_seq_cst) == old) {
            syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, old, NULL, NULL, 0);
            (*parks)++;
        }
        atomic_fetch_sub_explicit(sleepers, 1, memory_order_seq_cst);
#else
        sched_yield();
#endif
    }
    const int64_t slept = now_ns() - t1;
    sp->slept_ns += slept;
    if (!idle && !sp->contended_ns) {
        const uint32_t max = STEP_SPIN_MAX < sp->idle_max ? STEP_SPIN_MAX : sp->idle_max;
        if (slept < WAKE_NS)
            *limit = *limit * 2 > max ? max : *limit * 2;
        else
            *limit = *limit / 2 < STEP_SPIN_MIN ? (STEP_SPIN_MIN < max ? STEP_SPIN_MIN : max) : *limit / 2;
    }
    return v;
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
static void barrier_wait(seer_barrier *b, int32_t n, int spin, int64_t *slept) {
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
        wait_while_equal(&b->gen, gen, spin, &b->sleepers, slept);
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
    /* &seer_crash_event of the thread running this worker's events, taken
     * where a run of them starts (crash_note_here): in a shared object each
     * access to a thread-local variable calls the dynamic linker's
     * resolver, some 1% of a native step when run_native made it per event
     * (a parameter would not do: the compiler propagates the constant
     * address into run_native, and the call with it) */
    const seer_event **crash_ev;
    seer_node_cache cache;
    int64_t pending_delta; /* pushed minus handed out; settled at window end (barrier jobs) or step end */
    int64_t events;
    seer_trace_event *trace_ev;
    int64_t trace_ev_cap, trace_ev_n;
    seer_trace_window *trace_win;
    int64_t trace_win_cap, trace_win_n;
    int64_t trace_dropped;
    seer_event batch[PY_BATCH];
    seer_event sorted[PY_BATCH];
    uint32_t batch_entity[PY_BATCH];
    int32_t lane_lo, lane_hi; /* this worker's home share of the lanes      */
    uint64_t window_key;      /* the window's end t1 as a key               */
    uint64_t min_key;         /* smallest key >= t1 left behind by the unit (or, barrier jobs, the window) */
    uint32_t win_seq;         /* windows of this step begun (outbox parity) */
    seer_rt_stats stats;
    seer_spin spin;
    /* Chunked phases: the home chunks of this worker, [chunk_base,
     * chunk_base + chunk_count), claimed from `range` (see publish_phase). */
    int32_t chunk_base, chunk_count;
    int64_t seen_step, seen_window; /* the last step and window this pool thread took part in (its counts) */
    int64_t trace_window;           /* the window of the open trace record (-1: none) */
    seer_trace_window trace_open;
    _Alignas(SEER_CACHELINE) _Atomic uint64_t range;
    /* Units of this home done in the open phase, and the smallest key they
     * left: on the range's line, which the owner's claims hold in its
     * cache, so that only the thread that finishes a home touches the
     * phase's shared count and minimum (see run_unit). */
    _Atomic uint32_t home_done;
    _Atomic uint64_t home_min;
    /* The epoch this pool thread last went to wait at, its accounting
     * done (release).  Whoever reads or clears its stats or traces between
     * steps waits for it to reach the current epoch first (wait_accounted). */
    _Atomic uint32_t idle_epoch;
    /* Barrier jobs (run_step_parallel for Python handlers): written before
     * a window's end barrier, read by every worker after it.  Two slots by
     * the parity of the barrier count (the same in every worker). */
    _Alignas(SEER_CACHELINE) uint64_t report_key[2];
    int32_t report_abort[2];
    uint32_t phase; /* report barriers passed (barrier jobs) */
    /* Deferred publication (native windows but a step's last): an event for
     * another entity is filled in a node of ours, and its id goes to
     * ob[window parity][the chunk that holds its lane] instead of onto the
     * lane; whoever prepares that chunk in the next window pushes the ids
     * (deliver_chunk).  Such an event is >= the window's end (the lookahead
     * rule), so nothing needs it sooner.  So inside a deferred window no
     * thread pushes onto any lane, and between the window's end and its
     * claim a chunk's lanes belong to the unit that prepares it: it pushes
     * with plain stores (seer_queue_push_private_many) and the window's
     * unclaims skip the push/unclaim handshake (seer_queue_unclaim_private),
     * no RMW and no fence per event where a push cost a CAS, a CAS-min and a
     * seq_cst load, and an unclaim an exchange and a seq_cst reload.  The
     * end of the window's run phase orders the sender's writes before the
     * deliverer's reads; the parity keeps this window's appends off the
     * lists being delivered. */
    int defer;          /* this window defers (see above)        */
    seer_outbox *ob[2]; /* [window parity][destination chunk]    */
    /* A tiled step's events for other entities, pushed at the end of each
     * seer_rt_tiled_run (see there) */
    seer_outbox tile_ob;
    /* A pool's tiled step: the lanes a seer_rt_tiled_run_on of this worker
     * claimed (num_entities; worker 0 uses the runtime's claimed) */
    uint32_t *tile_claimed;
} seer_worker;

typedef struct snapshot_region {
    void *live;
    void *snap;
    uint64_t nbytes;
} snapshot_region;

/* Chunked phases.  The epoch word says what the pool does: EP_IDLE
 * (nothing: between steps), EP_WORK (claim units of the open phase),
 * EP_BARRIER (every worker runs run_step: a barrier job), EP_SHUTDOWN. */
#define EP_IDLE 0u
#define EP_WORK 1u
#define EP_BARRIER 2u
#define EP_SHUTDOWN 3u
#define EP_STATE(e) ((e) & 3u)

/* What a phase's units do.  SCAN: fold a chunk's lanes' keys (a step's
 * start).  PREP: copy the chunk's share of the snapshots, deliver the
 * events deferred to its lanes, claim its lanes with events in the window.
 * RUN: run the chunk's claimed lanes.  PREPRUN: both in one unit (models
 * without snapshots, or whose snapshots next_window copied: no handler
 * reads what another unit's PREP writes).
 * DELIVER: publish the last window's deferred events (a step that ends
 * early).  FOR: slices of seer_rt_parallel_for. */
typedef enum { PH_SCAN, PH_PREP, PH_RUN, PH_PREPRUN, PH_DELIVER, PH_FOR } phase_kind;

typedef struct seer_phase {
    int32_t kind;
    uint32_t units;   /* in all homes */
    uint32_t homes;   /* homes with units */
    int64_t step;     /* steps_begun of this step */
    double horizon;
    uint32_t win;     /* windows of this step begun, this one included: parity of outboxes and next_key */
    int64_t window;   /* the window's index over the runtime's life */
    double t0, t1;
    int defer;        /* the window defers cross-entity events */
    int32_t deliver;  /* how PREP delivers the last window's outboxes (push_mode) */
    seer_range_fn fn; /* FOR */
    void *arg;
    int64_t n, grain;
} seer_phase;

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
    uint64_t snap_bytes; /* of every region */
    /* debug mode (seer_rt_set_debug_rows): per-entity arrays and their copies */
    int32_t dbg_n;
    unsigned char *dbg_live[MAX_DEBUG_ROWS];
    unsigned char *dbg_shadow[MAX_DEBUG_ROWS];
    uint64_t dbg_row[MAX_DEBUG_ROWS];
    _Atomic int32_t dbg_lock; /* one native handler (and its check) at a time */
    int tracing;
    _Atomic int32_t stats_on; /* written between steps (set_stats); relaxed: the epoch edges order it */
    /* When a thread of the pool last found the cores busy (see seer_spin;
     * 0: never): written at most once a CHECK_NS per thread. */
    _Alignas(SEER_CACHELINE) _Atomic int64_t busy_ns;

    /* Barrier jobs (Python handlers): the step's horizon, written by worker
     * 0 before the epoch RMW that starts the step. */
    _Alignas(SEER_CACHELINE) double horizon;
    int64_t windows_total;
    int64_t events_total;
    int64_t events_base; /* events run by the workers of pools before the last resize */
    int64_t steps_begun; /* steps started since creation: the step a pool thread's counts belong to */
    seer_barrier barrier;

    /* Chunked phases (see publish_phase).  The lanes are cut into chunks
     * inside each worker's home share; chunk c holds lanes
     * [chunk_lo[c], chunk_lo[c + 1]) and its claimed lanes go to
     * claimed[chunk_lo[c] ..] (chunk_n[c] of them).  chunk_of[e]: the chunk
     * of lane e, where events for e are deferred to. */
    int32_t num_chunks;
    int32_t *chunk_lo;  /* num_chunks + 1 */
    int32_t *chunk_n;   /* num_chunks */
    int32_t *chunk_of;  /* num_entities */
    uint32_t *claimed;  /* num_entities */
    /* The open phase: written by its publisher before the release stores of
     * the range words, read by a claimant only after its acquire CAS took a
     * unit, so never while it is rewritten (the next publisher writes it
     * after every unit of this phase is done, each unit's reads sequenced
     * before its done RMW). */
    seer_phase ph;
    uint32_t ph_seq; /* phases published; written by the publisher only (the same rule as ph) */
    /* A loop seer_rt_parallel_for_begin opened that no call has ended yet:
     * until one does, its completer may publish (stepping thread only). */
    int loop_open;
    _Alignas(SEER_CACHELINE) _Atomic uint32_t epoch; /* seq << 2 | EP_* state; the futex word */
    _Atomic uint32_t epoch_sleepers;
    _Alignas(SEER_CACHELINE) _Atomic uint32_t units_done; /* homes of the open phase whose units are all done */
    _Alignas(SEER_CACHELINE) _Atomic uint64_t next_key[2]; /* by window parity: min of what the units left */
    _Alignas(SEER_CACHELINE) _Atomic int shutdown;
    /* STEP_IDLE, STEP_RUNNING (seer_rt_step) or STEP_RECLAIMING (a push
     * from outside taking the worker caches back: reclaim_caches); the two
     * exclude each other. */
    _Atomic int stepping;
    _Alignas(SEER_CACHELINE) _Atomic int32_t err_code;
    _Atomic int32_t err_claim; /* the first failure owns err, then sets err_code */
    seer_error_info err;
    seer_worker *workers;
    /* A tiled step (seer_rt_tiled_begin .. seer_rt_tiled_end): its window
     * ends, and per entity the windows it has run so far (allocated on the
     * first tiled step). */
    int tiled;
    int tile_pool; /* opened by seer_rt_tiled_begin_pool: any worker may run windows */
    int32_t tile_k;
    int64_t tile_t0; /* its start (ns), when the stats are on */
    const double *tile_end;
    int32_t *tile_win;
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

static void free_workers(seer_worker *ws, int32_t n, int32_t chunks);

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

/* Chunks of the lanes for a pool of n: each worker's home share is cut
 * into about UNITS_PER_HOME chunks of at least CHUNK_MIN_LANES lanes (one
 * chunk for a pool of one: no one to share with).  Small enough that a
 * parked worker holds back little, big enough that the claim, done and
 * minimum RMWs of a unit stay small beside its work.  Results do not depend
 * on the cut (see publish_phase), so it may follow the pool size. */
#define UNITS_PER_HOME 8
/* Snapshots of at most this many bytes in all are copied by the thread that
 * opens a window (next_window), not in a phase of their own. */
#ifndef SNAP_ALONE_BYTES
#define SNAP_ALONE_BYTES 16384u
#endif
#define CHUNK_MIN_LANES 32

typedef struct pool_geom {
    int32_t num_chunks;
    int32_t *chunk_lo, *chunk_n, *chunk_of;
    uint32_t *claimed;
} pool_geom;

static void free_geom(pool_geom *g) {
    free(g->chunk_lo);
    free(g->chunk_n);
    free(g->chunk_of);
    free(g->claimed);
    memset(g, 0, sizeof *g);
}

/* A fresh worker array for a pool of n, with its chunks in *g: lanes cut
 * evenly, every per-worker counter at zero (the counters that must agree
 * between workers in barrier jobs, phase, start together). */
static seer_worker *new_workers(seer_runtime *rt, int32_t n, pool_geom *g) {
    const int32_t E = rt->num_entities;
    memset(g, 0, sizeof *g);
    seer_worker *ws = zalloc(sizeof(seer_worker) * (size_t)n);
    if (!ws) return NULL;
    int32_t chunks = 0;
    for (int32_t w = 0; w < n; w++) {
        ws[w].ctx.api = seer_api_table();
        ws[w].ctx.rt = rt;
        ws[w].ctx.worker = w;
        ws[w].ctx.model = rt->model;
        ws[w].held = -1;
        ws[w].cache.limit = seer_node_cache_limit(seer_queue_capacity(rt->q), n);
        ws[w].lane_lo = (int32_t)((int64_t)E * w / n);
        ws[w].lane_hi = (int32_t)((int64_t)E * (w + 1) / n);
        ws[w].seen_step = ws[w].seen_window = ws[w].trace_window = -1;
        spin_init(&ws[w].spin, rt->spin, &rt->busy_ns);
        const int32_t len = ws[w].lane_hi - ws[w].lane_lo;
        int32_t ch = n == 1 ? (len > 0 ? len : 1) : (len + UNITS_PER_HOME - 1) / UNITS_PER_HOME;
        if (n > 1 && ch < CHUNK_MIN_LANES) ch = CHUNK_MIN_LANES;
        ws[w].chunk_base = chunks;
        ws[w].chunk_count = len > 0 ? (len + ch - 1) / ch : 0;
        chunks += ws[w].chunk_count;
    }
    g->num_chunks = chunks;
    g->chunk_lo = malloc(sizeof(int32_t) * (size_t)(chunks + 1));
    g->chunk_n = calloc((size_t)chunks + 1, sizeof(int32_t));
    g->chunk_of = malloc(sizeof(int32_t) * (size_t)E);
    g->claimed = malloc(sizeof(uint32_t) * (size_t)E);
    int ok = g->chunk_lo && g->chunk_n && g->chunk_of && g->claimed;
    for (int32_t w = 0; ok && w < n; w++) {
        const int32_t len = ws[w].lane_hi - ws[w].lane_lo, k = ws[w].chunk_count;
        for (int32_t j = 0; j < k; j++) {
            const int32_t lo = ws[w].lane_lo + (int32_t)((int64_t)len * j / k);
            const int32_t hi = ws[w].lane_lo + (int32_t)((int64_t)len * (j + 1) / k);
            g->chunk_lo[ws[w].chunk_base + j] = lo;
            for (int32_t e = lo; e < hi; e++) g->chunk_of[e] = ws[w].chunk_base + j;
        }
    }
    if (ok) g->chunk_lo[chunks] = E;
    for (int32_t w = 0; ok && w < n; w++) {
        ws[w].ob[0] = calloc((size_t)chunks + 1, sizeof(seer_outbox));
        ws[w].ob[1] = calloc((size_t)chunks + 1, sizeof(seer_outbox));
        ok = ws[w].ob[0] && ws[w].ob[1];
    }
    if (!ok) {
        free_workers(ws, n, chunks);
        free_geom(g);
        return NULL;
    }
    return ws;
}

static void free_workers(seer_worker *ws, int32_t n, int32_t chunks) {
    if (!ws) return;
    for (int32_t w = 0; w < n; w++) {
        for (int p = 0; p < 2; p++) {
            for (int32_t d = 0; ws[w].ob[p] && d < chunks; d++) free(ws[w].ob[p][d].ids);
            free(ws[w].ob[p]);
        }
        free(ws[w].tile_ob.ids);
        free(ws[w].tile_claimed);
    }
    free(ws);
}

static void set_geom(seer_runtime *rt, const pool_geom *g) {
    rt->num_chunks = g->num_chunks;
    rt->chunk_lo = g->chunk_lo;
    rt->chunk_n = g->chunk_n;
    rt->chunk_of = g->chunk_of;
    rt->claimed = g->claimed;
}

static void take_geom(seer_runtime *rt, pool_geom *g) {
    *g = (pool_geom){rt->num_chunks, rt->chunk_lo, rt->chunk_n, rt->chunk_of, rt->claimed};
}

static void drive(seer_runtime *rt, seer_worker *w);

/* End the loop seer_rt_parallel_for_begin left open, if any: run its
 * slices left here, and return when every slice is done (drive's acquire
 * load of the epoch that its completer published).  Every call of the
 * stepping thread that publishes, reads the epoch or the workers' state,
 * or lets the caller change what the slices read does this first, so an
 * open loop is invisible to all but the thread that ends it. */
static void end_open_loop(seer_runtime *rt) {
    if (!rt->loop_open) return;
    rt->loop_open = 0;
    drive(rt, &rt->workers[0]);
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
    pool_geom g;
    rt->workers = new_workers(rt, num_workers, &g);
    set_geom(rt, &g);
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
    return rt;
}

int seer_rt_resize(seer_runtime *rt, int32_t num_workers, int32_t spin) {
    if (num_workers < 1) return SEER_E_ARG;
    rt->loop_open = 0; /* seer_rt_shutdown ended it before the caller joined the pool */
    if (rt->tracing) return SEER_E_ARG; /* trace buffers are per worker */
    const int spin_was = rt->spin;
    rt->spin = spin; /* new_workers sets the spin budgets from it */
    pool_geom g, old;
    seer_worker *ws = new_workers(rt, num_workers, &g);
    if (!ws) {
        rt->spin = spin_was;
        return SEER_E_FULL;
    }
    /* Between steps every worker's pending count is settled (a step's end
     * adds them); its node cache goes back to the queue here, and only the
     * event count outlives the worker. */
    flush_caches(rt);
    for (int32_t w = 0; w < rt->num_workers; w++) rt->events_base += rt->workers[w].events;
    free_workers(rt->workers, rt->num_workers, rt->num_chunks);
    take_geom(rt, &old);
    free_geom(&old);
    rt->workers = ws;
    rt->num_workers = num_workers;
    set_geom(rt, &g);
    /* relaxed: no pool thread runs (the caller joined them); the threads it
     * starts next synchronize with it through their creation. */
    atomic_store_explicit(&rt->epoch, rt->ph_seq << 2 | EP_IDLE, memory_order_relaxed); /* epochs only grow */
    for (int32_t w = 0; w < num_workers; w++) /* idle until started: nothing to account for */
        atomic_store_explicit(&ws[w].idle_epoch, rt->ph_seq << 2 | EP_IDLE, memory_order_relaxed);
    atomic_store_explicit(&rt->epoch_sleepers, 0, memory_order_relaxed);
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
    free_workers(rt->workers, rt->num_workers, rt->num_chunks);
    pool_geom g;
    take_geom(rt, &g);
    free_geom(&g);
    free(rt->rng_counter);
    free(rt->stream_of);
    free(rt->emit_seq);
    free(rt->cur_time);
    free(rt->tile_win);
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
    rt->snap_bytes += nbytes;
    return SEER_OK;
}

void seer_rt_clear_snapshots(seer_runtime *rt) {
    rt->num_snaps = 0;
    rt->snap_bytes = 0;
}

void seer_rt_reset(seer_runtime *rt, uint64_t seed) {
    end_open_loop(rt);
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
            for (int32_t d = 0; d < rt->num_chunks; d++) rt->workers[w].ob[p][d].len = 0;
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
    end_open_loop(rt);
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

/* Between steps, from the stepping thread: wait until pool thread w has
 * gone to wait at the current epoch, its accounting (stats, trace records)
 * done.  The epoch does not move between steps (only the stepping thread
 * opens a step, a loop or a shutdown, and a phase's completer publishes
 * only inside one), and a pool thread stores idle_epoch before every wait
 * and before it returns at shutdown, so this ends as soon as that thread
 * gets a core.  Worker 0 is this thread. */
static void wait_accounted(seer_runtime *rt, int32_t w) {
    end_open_loop(rt);
    if (w == 0) return;
    /* relaxed: the stepping thread saw the step's last epoch with acquire
     * (or wrote it), and nothing moves it until this thread does. */
    const uint32_t e = atomic_load_explicit(&rt->epoch, memory_order_relaxed);
    unsigned spins = 0;
    /* acquire: pairs with the release store of idle_epoch in worker_main, so
     * the thread's stats and trace writes before it are visible (and done). */
    while (atomic_load_explicit(&rt->workers[w].idle_epoch, memory_order_acquire) != e) seer_backoff(&spins);
}

void seer_rt_set_stats(seer_runtime *rt, int32_t on) {
    for (int32_t i = 0; i < rt->num_workers; i++) wait_accounted(rt, i);
    /* relaxed: every pool thread is waiting now, and reads stats_on only
     * after the epoch RMW that opens its next work, which publishes these. */
    atomic_store_explicit(&rt->stats_on, on != 0, memory_order_relaxed);
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

/* Put node id, filled for target, in this window's outbox for the chunk
 * that holds target's lane; 0: no memory to grow the outbox (the emit
 * fails: publishing it now would break the window's no-pusher rule). */
static int defer_publish(seer_runtime *rt, seer_worker *w, int32_t target, uint32_t id) {
    seer_outbox *ob = rt->tiled ? &w->tile_ob : &w->ob[w->win_seq & 1][rt->chunk_of[target]];
    if (ob->len == ob->cap) {
        int32_t cap = ob->cap ? 2 * ob->cap : 64;
        uint32_t *ids = realloc(ob->ids, sizeof(uint32_t) * (size_t)cap);
        if (!ids) return 0;
        ob->ids = ids;
        ob->cap = cap;
    }
    ob->ids[ob->len++] = id;
    return 1;
}

/* How deliver_chunk pushes: with plain stores (the lanes are the unit's
 * until its claim), with the full push but without readying (the claim
 * comes next), or with the full push. */
typedef enum { PUSH_PRIVATE, PUSH_QUIET, PUSH_PUBLISH } push_mode;

/* Push what the workers deferred to chunk c's lanes in the window of this
 * parity.  The ids' nodes and pending counts are the senders'; only the
 * lanes are the unit's. */
static void deliver_chunk(seer_runtime *rt, int32_t c, uint32_t parity, push_mode how) {
    for (int32_t i = 0; i < rt->num_workers; i++) {
        seer_outbox *ob = &rt->workers[i].ob[parity][c];
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
    if (rt->tiled && target != source) {
        /* A tiled step: an event for another entity must fall after the
         * window being run, and into a window its target has not run yet
         * (a plan that lets a target run ahead of its senders is caught
         * here, at the first event that comes too late). */
        const int32_t done = rt->tile_win[target];
        /* one branch, never taken in a good plan (whether the target has
         * run a window yet follows none) */
        const double ran_to = rt->tile_end[done > 0 ? done - 1 : 0];
        if ((time < w->ctx.window_end) | ((done > 0) & (time < ran_to))) return SEER_E_CAUSALITY;
    }
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
    wait_accounted(rt, worker);
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

/* Debug mode: the one debug lock.  acquire/release: the handler and the
 * check inside see every row the previous holder's handler wrote. */
static void dbg_lock(seer_runtime *rt) {
    unsigned spins = 0;
    int32_t free_ = 0;
    while (!atomic_compare_exchange_weak_explicit(&rt->dbg_lock, &free_, 1, memory_order_acquire,
                                                  memory_order_relaxed)) {
        free_ = 0;
        seer_backoff(&spins);
    }
}

static void dbg_unlock(seer_runtime *rt) { atomic_store_explicit(&rt->dbg_lock, 0, memory_order_release); }

/* Debug mode, under the lock, after the handler of entity e: the first row
 * of another entity that differs from its copy fails the step; e's own
 * rows become the copy's. */
static void dbg_check_rows(seer_runtime *rt, seer_worker *w, const seer_event *ev, uint32_t e) {
    for (int32_t i = 0; i < rt->dbg_n; i++) {
        const uint64_t rb = rt->dbg_row[i], own = (uint64_t)e * rb, all = (uint64_t)rt->num_entities * rb;
        const unsigned char *live = rt->dbg_live[i];
        unsigned char *shadow = rt->dbg_shadow[i];
        if (memcmp(live, shadow, own) != 0 || memcmp(live + own + rb, shadow + own + rb, all - own - rb) != 0) {
            uint64_t at = 0;
            while (at < all && (at / rb == e || live[at] == shadow[at])) at++;
            fail(rt, SEER_RT_E_OTHER_ROW, w->ctx.worker, ev, (int32_t)(at / rb), i, NAN);
            memcpy(shadow, live, all); /* report once */
            return;
        }
        memcpy(shadow + own, live + own, rb);
    }
}

static void dbg_refresh(seer_runtime *rt) {
    for (int32_t i = 0; i < rt->dbg_n; i++)
        memcpy(rt->dbg_shadow[i], rt->dbg_live[i], (size_t)(rt->dbg_row[i] * (uint64_t)rt->num_entities));
}

int seer_rt_set_debug_rows(seer_runtime *rt, int32_t n, void *const *live, void *const *shadow,
                           const uint64_t *row_bytes) {
    end_open_loop(rt);
    if (n < 0 || n > MAX_DEBUG_ROWS || (n > 0 && (!live || !shadow || !row_bytes))) return SEER_E_ARG;
    for (int32_t i = 0; i < n; i++)
        if (!live[i] || !shadow[i] || row_bytes[i] == 0) return SEER_E_ARG;
    for (int32_t i = 0; i < n; i++) {
        rt->dbg_live[i] = live[i];
        rt->dbg_shadow[i] = shadow[i];
        rt->dbg_row[i] = row_bytes[i];
    }
    rt->dbg_n = n;
    dbg_refresh(rt);
    return SEER_OK;
}

/* Before a run of worker w's events on this thread (see seer_worker.crash_ev). */
static inline void crash_note_here(seer_worker *w) { w->crash_ev = &seer_crash_event; }

static int run_native(seer_runtime *rt, seer_worker *w, const seer_event *ev, window_stats *st,
                      int32_t window) {
    const seer_event **crash_ev = w->crash_ev;
    seer_ctx *ctx = &w->ctx;
    ctx->entity = w->held = ev->entity;
    ctx->now = ev->time;
    rt->cur_time[ev->entity] = ev->time;
    int rc;
    const seer_event *outer_event = *crash_ev; /* a copy step's runtime runs inside another's */
    *crash_ev = ev;
    const int32_t debug = rt->dbg_n;
    if (debug) dbg_lock(rt);
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
    if (debug) {
        dbg_check_rows(rt, w, ev, (uint32_t)ev->entity);
        dbg_unlock(rt);
    }
    *crash_ev = outer_event;
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
                /* debug mode: Python handlers check their own writes (seer._debug); their
                 * entities' rows become the copy's, so native handlers' checks skip them */
                if (rt->dbg_n) dbg_lock(rt);
                int rc = rt->dispatch(rt->dispatch_userdata, w->ctx.worker, kind, &w->sorted[i], j - i);
                if (rt->dbg_n) {
                    for (int32_t m = i; m < j; m++)
                        for (int32_t a = 0; a < rt->dbg_n; a++) {
                            const uint64_t rb = rt->dbg_row[a], at = (uint64_t)w->sorted[m].entity * rb;
                            memcpy(rt->dbg_shadow[a] + at, rt->dbg_live[a] + at, rb);
                        }
                    dbg_unlock(rt);
                }
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
                crash_note_here(w);
                for (int32_t m = i; m < j; m++)
                    if (run_native(rt, w, &w->sorted[m], st, window) != SEER_OK) break;
            }
            i = j;
        }
        for (int32_t i = 0; i < held; i++) note_key(w, seer_queue_unclaim_key(rt->q, w->batch_entity[i]));
    }
}

/* ---- steps ------------------------------------------------------------------------- */

static inline void timed_barrier(seer_runtime *rt, seer_worker *w) {
    if (STATS_ON(rt)) {
        int64_t t0 = now_ns();
        barrier_wait(&rt->barrier, rt->num_workers, rt->spin, &w->spin.slept_ns);
        w->stats.barrier_ns += now_ns() - t0;
    } else {
        barrier_wait(&rt->barrier, rt->num_workers, rt->spin, &w->spin.slept_ns);
    }
}

/* Part k of n of every snapshot region, cut at cache lines: a barrier
 * job's worker share (k = worker), or a chunked PREP unit's (k = chunk). */
static void copy_snapshots(seer_runtime *rt, uint64_t k, uint64_t n) {
    for (int i = 0; i < rt->num_snaps; i++) {
        const snapshot_region *r = &rt->snaps[i];
        uint64_t lo = r->nbytes * k / n, hi = r->nbytes * (k + 1) / n;
        lo = k == 0 ? 0 : lo / SEER_CACHELINE * SEER_CACHELINE;
        hi = k + 1 == n ? r->nbytes : hi / SEER_CACHELINE * SEER_CACHELINE;
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

/* Run one window's events (barrier jobs: Python handlers). */
static void run_window(seer_runtime *rt, seer_worker *w, int32_t wid, double t0, double t1, int32_t window) {
    window_stats st = {0, 0, 0, 0};
    int64_t start = TRACING(rt) ? now_ns() : 0;
    window_batched(rt, w, t1, &st, window);
    /* Settle shared counts before the barrier: after it, worker 0 may
     * return to Python, which may push or reset. */
    if (w->pending_delta) {
        seer_queue_add_pending(rt->q, w->pending_delta);
        w->pending_delta = 0;
    }
    /* The chunked phases keep the worker's node cache from window to window
     * and step to step (see run_unit); the barrier jobs flush it. */
    seer_queue_flush_cache(rt->q, &w->cache);
    w->events += st.events;
    if (TRACING(rt)) {
        if (w->trace_win_n < w->trace_win_cap)
            w->trace_win[w->trace_win_n++] = (seer_trace_window){
                start, now_ns(), st.busy_ns, st.python_ns, st.events, st.empty_polls, t0, t1, window, wid};
        else
            w->trace_dropped++;
    }
}

/* Window bookkeeping of a barrier job (Python handlers): no worker
 * decides alone.  Each worker reports at the end barrier the smallest time
 * it left pending (the exact keys of the lanes it unclaimed, the events it
 * sent, the lanes of its share that the window did not reach); after the
 * barrier every worker combines the same reports into the same next
 * window, copies its share of the snapshots and readies its share of the
 * lanes.  A second barrier keeps handlers off the snapshots until every
 * share is copied.
 *
 * Why the reports give the exact minimum: after a window every pending
 * event is >= t1 (cross-entity events by the lookahead rule, self-sent ones
 * are run inside it).  A lane either was held in the window, and its last
 * unclaim published its exact earliest key, which later pushes can only
 * lower; or it was not, and its key at the window's start (>= t1, read by
 * advance_range) was only lowered by pushes.  Pushes are noted by their
 * senders.  So min(reports) is the smallest pending time: the same value,
 * hence the same windows, for every pool size and interleaving.  The
 * chunked phases rest on the same argument, unit by unit (publish_phase). */
static void run_step_parallel(seer_runtime *rt, int32_t wid) {
    seer_worker *w = &rt->workers[wid];
    const int stats = STATS_ON(rt);
    /* Read once: worker 0 sets the next step's horizon and window count as
     * soon as it leaves this step's last barrier, which may be before we
     * are done reading.  Both were written before the epoch RMW that
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
            if (stats) w->stats.bookkeeping_ns += now_ns() - b0;
            break;
        }
        double t1 = t0 + rt->lookahead;
        if (!(t1 < horizon)) t1 = horizon;
        copy_snapshots(rt, (uint64_t)wid, (uint64_t)rt->num_workers);
        w->window_key = seer_time_key(t1);
        w->ctx.window_end = t1;
        w->win_seq++;
        w->stats.windows++;
        const int32_t window = (int32_t)(window_base + w->win_seq);
        w->min_key = seer_queue_advance_range(rt->q, t1, w->lane_lo, w->lane_hi);
        if (stats) w->stats.bookkeeping_ns += now_ns() - b0;
        if (rt->num_snaps) timed_barrier(rt, w);
        run_window(rt, w, wid, t0, t1, window);
        w->report_key[w->phase & 1] = w->min_key;
        w->report_abort[w->phase & 1] = aborted(rt);
        if (!(t1 < horizon)) { /* the step ends with this window */
            timed_barrier(rt, w);
            break;
        }
    }
}

/* A barrier job's step, on every worker of the pool. */
static void run_step(seer_runtime *rt, int32_t wid) {
    seer_worker *w = &rt->workers[wid];
    w->defer = 0; /* barrier jobs publish every event at once */
    int64_t t0 = STATS_ON(rt) ? now_ns() : 0;
    run_step_parallel(rt, wid);
    if (STATS_ON(rt)) {
        w->stats.step_ns += now_ns() - t0;
        w->stats.steps++;
    }
}

/* ---- chunked phases ---------------------------------------------------------------- *
 *
 * A native step (and a parallel loop) is a chain of phases.  A phase's work
 * is cut into units, each worker's home share into its own units, and any
 * thread may claim any unit: the owner of a home takes its units from the
 * front, a helper from the back, one at a time, with a CAS on the home's
 * range word (tag = the phase's epoch, end, next).  A unit is done when
 * its home's done count's RMW says so; the thread that finishes a home
 * counts it in the phase's done count, and the thread whose RMW makes that
 * count reach the phase's homes is the phase's completer, which decides and
 * publishes the next phase itself (complete_phase): so nothing waits for a
 * particular thread, only for the units claimed, and a pool thread the OS
 * parks holds back at most the unit it holds.  The stepping thread claims
 * like any other and may run every unit of a step alone.
 *
 * Edges.  Publishing (publish_phase): the descriptor rt->ph, the reset of
 * the done count and of the next window's minimum are written, then each
 * range word is stored with release; a claimant's CAS (acquire; the
 * other claimants' CASes continue the store's release sequence) makes them
 * visible before it reads the descriptor, so a unit reads the descriptor of
 * the phase it claimed from.  Each unit's writes (the lanes it ran, the
 * outboxes it filled, the claimed lists of PREP, the keys folded into the
 * home's minimum) come before its home's done RMW (acq_rel); the thread
 * that finishes the home has read through that RMW chain, folds the home's
 * minimum into the window's and does the phase's done RMW (acq_rel); the
 * completer's RMW reads the last value of that chain, so every unit of the
 * phase happens-before the completer, which then publishes the next phase: every
 * unit of a phase happens-before every unit of the next.  The epoch RMW
 * (seq_cst) wakes the waiters and carries the same edge to threads that
 * only wait on it (the stepping thread at a step's end, pool threads
 * deciding what the epoch says).
 *
 * Why the results do not depend on who ran what: every unit folds the keys
 * it left pending into next_key (through its home's minimum) with atomic
 * minima, and min is the same
 * in any order, so the windows are those of the barrier jobs' argument
 * (run_step_parallel) for every pool size and interleaving; each entity's
 * events run one at a time in its lane's order; an entity's random stream,
 * emit sequence and clock are per entity; node ids (per-worker caches) and
 * outbox order affect no order (a lane sorts by time, source and seq). */

#define UNITS_MAX 0xffffu /* per home: 16 bits of a range word */

static inline uint64_t range_word(uint32_t tag, uint32_t next, uint32_t end) {
    return (uint64_t)tag << 32 | (uint64_t)end << 16 | next;
}

/* Units of home w in the phase rt->ph describes. */
static uint32_t home_units(const seer_runtime *rt, int32_t w) {
    const seer_phase *ph = &rt->ph;
    if (ph->kind != PH_FOR) return (uint32_t)rt->workers[w].chunk_count;
    const int64_t W = rt->num_workers, lo = ph->n * w / W, hi = ph->n * (w + 1) / W;
    return (uint32_t)((hi - lo + ph->grain - 1) / ph->grain);
}

static inline void trace_close(seer_worker *w) {
    if (w->trace_window < 0) return;
    if (w->trace_win_n < w->trace_win_cap)
        w->trace_win[w->trace_win_n++] = w->trace_open;
    else
        w->trace_dropped++;
    w->trace_window = -1;
}

/* Publish what the epoch says next: for EP_WORK the phase rt->ph (written
 * by the caller), whose units go into the range words.  The caller is the
 * one thread allowed to: the completer of the last phase, or the stepping
 * thread between jobs (see above for the edges that make it the only one).
 *
 * Once the last range word with units is stored, other threads may claim
 * and finish every unit and publish the phase after it while we are still
 * here.  So that store is the last thing we do with the phase: the homes
 * without units are stored first (a store of ours after their next phase's
 * would take its units away), nothing reads rt->ph after it, and the epoch
 * only ever moves forward (a CAS that leaves a newer epoch alone: ours
 * would otherwise overwrite, say, the step's end with this phase). */
static void publish_phase(seer_runtime *rt, uint32_t state) {
    const uint32_t e = ++rt->ph_seq << 2 | state;
    if (state == EP_WORK) {
        uint32_t units = 0, homes = 0;
        /* relaxed: published by the release stores of the range words, and
         * no RMW of the last phase is left (its completer is us). */
        atomic_store_explicit(&rt->units_done, 0, memory_order_relaxed);
        for (int32_t w = 0; w < rt->num_workers; w++) {
            const uint32_t n = home_units(rt, w);
            units += n;
            homes += n > 0;
        }
        rt->ph.units = units;
        rt->ph.homes = homes;
        for (int pass = 0; pass < 2; pass++) {
            for (int32_t w = 0; w < rt->num_workers; w++) {
                const uint32_t n = home_units(rt, w);
                if ((n > 0) != pass) continue;
                /* relaxed: published by the release store below */
                atomic_store_explicit(&rt->workers[w].home_done, 0, memory_order_relaxed);
                atomic_store_explicit(&rt->workers[w].home_min, SEER_KEY_INF, memory_order_relaxed);
                /* release: the descriptor, the done count's reset and what
                 * every unit of the last phase wrote (ordered before us by
                 * its done RMWs) happen-before the acquire CAS of whoever
                 * claims a unit. */
                atomic_store_explicit(&rt->workers[w].range, range_word(e, 0, n), memory_order_release);
            }
        }
    }
    /* seq_cst: release part, as above for the threads that wait on the
     * epoch instead of claiming (a step's end, a barrier job, shutdown);
     * seq_cst for the Dekker handshake with the sleepers count (wake_all).
     * Epochs compare by their sequence (wrapping): a newer one stays. */
    uint32_t cur = atomic_load_explicit(&rt->epoch, memory_order_relaxed);
    while ((int32_t)(e - cur) > 0 &&
           !atomic_compare_exchange_weak_explicit(&rt->epoch, &cur, e, memory_order_seq_cst, memory_order_relaxed)) {
    }
    wake_all(&rt->epoch, &rt->epoch_sleepers);
}

/* Claim one unit of the open phase, our home first: 1 with its home and
 * index, 0 when every unit of the phase whose range words we read is
 * claimed.
 *
 * A helper takes a unit of another home from its end, so that the owner,
 * claiming from the front, keeps the run of lanes it began on in its cache.
 * It takes it as soon as it has nothing else to do, also while the owner is
 * at work on that home: a phase ends when its units are done, so a unit
 * left to a slow owner is waited for.  A helper used to leave such units to
 * their owner for 50 us, to keep their rows in its cache.  On the 2-core
 * EPYC guest, whose pool thread ran half again slower than the stepping
 * thread for minutes at a time, that made the stepping thread wait 70-90 us
 * a step at 'large' on 2 workers (a 2-worker step as slow as a 1-worker
 * one; taking the units: 1.07-1.17x), while with both threads at speed the
 * two rules are even (bench/results/steal_at_once.md). */
static int claim_unit(seer_runtime *rt, const seer_worker *w, int32_t *home, uint32_t *unit) {
    const int32_t W = rt->num_workers;
    for (int32_t i = 0; i < W; i++) {
        const int32_t h = (w->ctx.worker + i) % W;
        _Atomic uint64_t *range = &rt->workers[h].range;
        /* relaxed: only a guess for the CAS, which acquires */
        uint64_t r = atomic_load_explicit(range, memory_order_relaxed);
        for (;;) {
            const uint32_t next = (uint32_t)r & 0xffffu, end = (uint32_t)(r >> 16) & 0xffffu;
            if (next >= end) break;
            const uint64_t want = i ? range_word((uint32_t)(r >> 32), next, end - 1) : r + 1;
            /* acquire: pairs with publish_phase's release store of the word
             * (through the release sequence of the claims before ours) */
            if (atomic_compare_exchange_weak_explicit(range, &r, want, memory_order_acquire, memory_order_relaxed)) {
                *home = h;
                *unit = i ? end - 1 : next;
                return 1;
            }
        }
    }
    return 0;
}

/* Fold a smallest pending key into a minimum (a home's, the window's).
 * relaxed: the done RMW after it orders it before the read, and the
 * minimum is the same in any order. */
static inline void fold_min(_Atomic uint64_t *x, uint64_t k) {
    uint64_t cur = atomic_load_explicit(x, memory_order_relaxed);
    while (k < cur && !atomic_compare_exchange_weak_explicit(x, &cur, k, memory_order_relaxed,
                                                             memory_order_relaxed)) {
    }
}

static void complete_phase(seer_runtime *rt);

/* Run unit j of home h of the open phase. */
static void run_unit(seer_runtime *rt, seer_worker *w, int32_t h, uint32_t j) {
    const seer_phase *ph = &rt->ph;
    const int stats = STATS_ON(rt);
    const int32_t wid = w->ctx.worker;
    const int64_t u0 = stats ? now_ns() : 0;
    int64_t book = -1; /* a unit that runs events: its bookkeeping time before them */
    if (stats && wid != 0 && ph->step != w->seen_step && ph->kind != PH_FOR) {
        w->seen_step = ph->step;
        w->stats.steps++;
    }
    const int32_t c = rt->workers[h].chunk_base + (int32_t)j;
    const uint32_t parity = ph->win & 1;
    uint64_t min_key = SEER_KEY_INF;
    switch (ph->kind) {
    case PH_FOR: {
        const int64_t W = rt->num_workers, lo = ph->n * h / W, hi = ph->n * (h + 1) / W;
        const int64_t a = lo + (int64_t)j * ph->grain, b = a + ph->grain < hi ? a + ph->grain : hi;
        ph->fn(ph->arg, a, b, wid);
        break;
    }
    case PH_SCAN:
        /* relaxed loads (see seer_queue_min_key_range): the step's start
         * ordered every earlier unclaim and push before this unit */
        min_key = seer_queue_min_key_range(rt->q, rt->chunk_lo[c], rt->chunk_lo[c + 1]);
        break;
    case PH_DELIVER:
        deliver_chunk(rt, c, parity, PUSH_PUBLISH);
        break;
    default: {
        const int32_t lo = rt->chunk_lo[c], hi = rt->chunk_lo[c + 1];
        w->defer = ph->defer;
        w->win_seq = ph->win;
        if (ph->kind != PH_RUN) {
            if (ph->kind == PH_PREP) copy_snapshots(rt, (uint64_t)c, (uint64_t)rt->num_chunks);
            /* The last window's outboxes; the claim below claims their lanes.
             * With plain stores only if this window defers too: otherwise a
             * handler of another unit may push onto these lanes as soon as
             * it runs, which (with no snapshot phase) can be now. */
            deliver_chunk(rt, c, (ph->win - 1) & 1, (push_mode)ph->deliver);
            uint64_t rest;
            rt->chunk_n[c] = (ph->defer ? seer_queue_claim_range_private : seer_queue_claim_range)(
                rt->q, ph->t1, lo, hi, &rt->claimed[lo], &rest);
            min_key = rest;
        }
        if (ph->kind == PH_PREP) break;
        if (stats) {
            book = now_ns() - u0;
            if (wid != 0 && w->seen_window != ph->window) {
                w->seen_window = ph->window;
                w->stats.windows++;
            }
        }
        window_stats st = {0, 0, 0, 0};
        if (TRACING(rt) && w->trace_window != ph->window) {
            trace_close(w);
            w->trace_window = ph->window;
            w->trace_open = (seer_trace_window){now_ns(), 0, 0, 0, 0, 0, ph->t0, ph->t1, (int32_t)ph->window, wid};
        }
        w->window_key = seer_time_key(ph->t1);
        w->ctx.window_end = ph->t1;
        w->min_key = min_key;
        const uint32_t *own = &rt->claimed[lo];
        const int32_t n = rt->chunk_n[c];
        crash_note_here(w);
        if (n > 1) seer_queue_prefetch_ahead(rt->q, SEER_NIL, own[0]);
        for (int32_t i = 0; i < n; i++) {
            /* In a big swarm the next entities' lanes and nodes are cache
             * misses: start them while this one runs. */
            if (i + 1 < n) seer_queue_prefetch_ahead(rt->q, i + 2 < n ? own[i + 2] : SEER_NIL, own[i + 1]);
            if (aborted(rt)) /* give the claim back unrun (it is readied if it still has events) */
                seer_queue_unclaim(rt->q, own[i]);
            else
                run_entity(rt, w, own[i], ph->t1, &st, (int32_t)ph->window);
        }
        min_key = w->min_key;
        w->events += st.events;
        if (TRACING(rt)) {
            w->trace_open.end_ns = now_ns();
            w->trace_open.busy_ns += st.busy_ns;
            w->trace_open.events += st.events;
        }
        if (book < 0) book = 0;
        break;
    }
    }
    /* Read before the done RMWs: after them, ph may be rewritten. */
    const uint32_t homes = ph->homes, here = home_units(rt, h);
    seer_worker *o = &rt->workers[h];
    if (min_key != SEER_KEY_INF) fold_min(&o->home_min, min_key);
    if (stats && ph->kind != PH_FOR) {
        const int64_t t = now_ns();
        w->stats.bookkeeping_ns += book >= 0 ? book : t - u0;
        if (wid != 0) w->stats.step_ns += t - u0;
    }
    /* acq_rel: release, this unit's writes (and its reads of ph) happen-
     * before whoever finishes the home; acquire, for that thread, every
     * other unit of the home.  It then folds the home's minimum into the
     * window's and counts the home done (acq_rel the same way: the thread
     * that finishes the last home has every unit of the phase behind it,
     * and completes it). */
    if (atomic_fetch_add_explicit(&o->home_done, 1, memory_order_acq_rel) + 1 != here) return;
    /* relaxed: the home's folds came before their units' done RMWs */
    const uint64_t hm = atomic_load_explicit(&o->home_min, memory_order_relaxed);
    if (hm != SEER_KEY_INF) fold_min(&rt->next_key[parity], hm);
    if (atomic_fetch_add_explicit(&rt->units_done, 1, memory_order_acq_rel) + 1 == homes) complete_phase(rt);
}

/* The last window's minimum, and what follows from it: the next window,
 * or the step's end (after a DELIVER phase if that window deferred). */
static void next_window(seer_runtime *rt) {
    seer_phase *ph = &rt->ph;
    /* relaxed: every fold came before its unit's done RMW, which the
     * completer (us) has read through */
    const uint64_t m = atomic_load_explicit(&rt->next_key[ph->win & 1], memory_order_relaxed);
    const double t0 = seer_queue_key_time(m);
    if (aborted(rt) || !(t0 < ph->horizon)) {
        if (ph->win > 0 && ph->defer) { /* the last window deferred: publish its events before returning */
            ph->kind = PH_DELIVER;
            publish_phase(rt, EP_WORK);
        } else {
            publish_phase(rt, EP_IDLE);
        }
        return;
    }
    double t1 = t0 + rt->lookahead;
    if (!(t1 < ph->horizon)) t1 = ph->horizon;
    ph->win++;
    ph->window++;
    ph->t0 = t0;
    ph->t1 = t1;
    ph->defer = t1 < ph->horizon; /* a step's last window publishes at once */
    ph->deliver = ph->defer ? PUSH_PRIVATE : PUSH_QUIET;
    if (rt->num_snaps && rt->snap_bytes > SNAP_ALONE_BYTES) {
        ph->kind = PH_PREP;
    } else {
        /* Small snapshots are copied here, by the one thread that completed
         * the last phase, and the window is one phase: a phase's end costs a
         * pool more (the last unit's wait, a wake-up, a claim) than copying a
         * few kilobytes does.  Every unit of the last phase happened-before
         * us (the done RMWs); the copy happens-before every handler of the
         * window through the release stores of publish_phase. */
        copy_snapshots(rt, 0, 1);
        ph->kind = PH_PREPRUN;
    }
    /* relaxed: published with the phase (release stores of the ranges) */
    atomic_store_explicit(&rt->next_key[ph->win & 1], SEER_KEY_INF, memory_order_relaxed);
    publish_phase(rt, EP_WORK);
}

/* On the completer of the open phase (see above): open the next one. */
static void complete_phase(seer_runtime *rt) {
    seer_phase *ph = &rt->ph;
    switch (ph->kind) {
    case PH_PREP:
        ph->kind = PH_RUN;
        publish_phase(rt, EP_WORK);
        return;
    case PH_RUN:
    case PH_PREPRUN:
        if (!(ph->t1 < ph->horizon)) { /* the step ends with this window */
            publish_phase(rt, EP_IDLE);
            return;
        }
        next_window(rt);
        return;
    case PH_SCAN:
        next_window(rt);
        return;
    default: /* PH_DELIVER, PH_FOR */
        publish_phase(rt, EP_IDLE);
        return;
    }
}

/* Claim and run units until the epoch says EP_IDLE: the stepping thread's
 * part of a native step or a parallel loop it opened. */
static void drive(seer_runtime *rt, seer_worker *w) {
    int32_t h;
    uint32_t j;
    for (;;) {
        if (claim_unit(rt, w, &h, &j)) {
            run_unit(rt, w, h, j);
            continue;
        }
        /* acquire: pairs with the epoch RMW of the phase's publisher (a
         * step's end: every unit of the step happens-before our return) */
        const uint32_t e = atomic_load_explicit(&rt->epoch, memory_order_acquire);
        if (EP_STATE(e) != EP_WORK) return;
        /* Again, now that the ranges of epoch e are visible (they were
         * stored before it): a phase published after our first try would
         * otherwise wait for its units' claimants while we sleep. */
        if (claim_unit(rt, w, &h, &j)) {
            run_unit(rt, w, h, j);
            continue;
        }
        trace_close(w);
        int64_t spin = 0, parks = 0, t0 = STATS_ON(rt) ? now_ns() : 0;
        wait_change(&rt->epoch, e, &w->spin, 0, &rt->epoch_sleepers, &spin, &parks);
        if (STATS_ON(rt)) {
            w->stats.barrier_ns += now_ns() - t0;
            w->stats.spin_ns += spin;
            w->stats.parks += parks;
        }
    }
}

/* Publish a loop of fn over [0, n) (1), or run it here when it is one
 * slice or the pool one thread (0). */
static int open_loop(seer_runtime *rt, int64_t n, int64_t grain, seer_range_fn fn, void *arg) {
    if (n <= 0) return 0;
    if (grain < 1) grain = 1;
    if (rt->num_workers == 1 || n <= grain) {
        fn(arg, 0, n, 0);
        return 0;
    }
    /* A home of more than UNITS_MAX slices takes bigger slices. */
    const int64_t home = n / rt->num_workers + 1;
    if ((home + grain - 1) / grain > (int64_t)UNITS_MAX) grain = (home + UNITS_MAX - 1) / UNITS_MAX;
    seer_phase *ph = &rt->ph;
    ph->kind = PH_FOR;
    ph->fn = fn;
    ph->arg = arg;
    ph->n = n;
    ph->grain = grain;
    publish_phase(rt, EP_WORK);
    return 1;
}

int seer_rt_parallel_for(seer_runtime *rt, int64_t n, int64_t grain, seer_range_fn fn, void *arg) {
    end_open_loop(rt);
    if (open_loop(rt, n, grain, fn, arg))
        drive(rt, &rt->workers[0]); /* every slice's writes happen-before our return */
    return SEER_OK;
}

/* The same loop, left to the pool: the caller goes on at once, and a pool
 * thread waiting between steps claims the slices (a home whose owner has
 * not begun is helped at once, so one pool thread can run them all).
 * Edges: the caller's writes before it -> publish_phase's release stores
 * of the range words -> each claimant's acquire CAS; every slice's writes
 * -> its done RMWs -> the completer's publication of EP_IDLE (seq_cst RMW
 * of the epoch) -> drive's acquire load in end_open_loop. */
int seer_rt_parallel_for_begin(seer_runtime *rt, int64_t n, int64_t grain, seer_range_fn fn, void *arg) {
    end_open_loop(rt);
    rt->loop_open = open_loop(rt, n, grain, fn, arg);
    return SEER_OK;
}

int seer_rt_parallel_for_end(seer_runtime *rt) {
    end_open_loop(rt);
    return SEER_OK;
}

int32_t seer_rt_num_workers(const seer_runtime *rt) { return rt->num_workers; }

/* Lanes the stepping thread scans alone at a step's start (more: a SCAN
 * phase). */
#define SCAN_ALONE_MAX 1024

/* A native step on the chunked phases: a scan of the lanes, then windows. */
static void run_chunked_step(seer_runtime *rt, double horizon) {
    seer_worker *w = &rt->workers[0];
    /* Lanes that a push from outside readied between steps are in the
     * ready ring, which the chunked phases do not read (inside them no lane
     * is readied: cross-entity events are at least a window later, the
     * deliveries do not ready, and the unclaims find nothing left before
     * the window's end).  No other thread touches the queue now (the pool
     * threads find no unit to claim), so make them idle lanes again, which
     * the claims then take. */
    uint32_t e;
    while (seer_queue_take(rt->q, &e)) (void)seer_queue_unclaim_private(rt->q, e);
    seer_phase *ph = &rt->ph;
    ph->kind = PH_SCAN;
    ph->step = ++rt->steps_begun;
    ph->horizon = horizon;
    ph->win = 0;
    ph->window = rt->windows_total;
    ph->defer = 0;
    ph->t0 = ph->t1 = horizon;
    if (rt->num_entities <= SCAN_ALONE_MAX || rt->num_workers == 1) {
        /* A few lanes: scanning them here costs less than a phase (its
         * publication, claims and wake-ups).  relaxed: as a SCAN unit's
         * loads; no phase is open, so we are the one to publish next. */
        atomic_store_explicit(&rt->next_key[0], seer_queue_min_key_range(rt->q, 0, rt->num_entities),
                              memory_order_relaxed);
        next_window(rt);
    } else {
        /* relaxed: published with the phase */
        atomic_store_explicit(&rt->next_key[0], SEER_KEY_INF, memory_order_relaxed);
        publish_phase(rt, EP_WORK);
    }
    drive(rt, w);
    trace_close(w);
    rt->windows_total += ph->win;
    if (STATS_ON(rt)) w->stats.windows += ph->win;
    /* Every unit happened-before the step's end, which we acquired (drive),
     * and no pool thread writes these again before the next step opens. */
    int64_t delta = 0;
    for (int32_t i = 0; i < rt->num_workers; i++) {
        delta += rt->workers[i].pending_delta;
        rt->workers[i].pending_delta = 0;
    }
    if (delta) seer_queue_add_pending(rt->q, delta);
}

int seer_rt_step(seer_runtime *rt, double horizon) {
    end_open_loop(rt); /* a loop the caller began between steps */
    /* Wait out a reclaim in progress (a push from another thread taking
     * the caches back; it is short).  acquire: its cache writes happen-
     * before this step, and through the epoch before the pool's. */
    unsigned spins = 0;
    for (int idle = STEP_IDLE;; idle = STEP_IDLE) {
        if (atomic_compare_exchange_weak_explicit(&rt->stepping, &idle, STEP_RUNNING, memory_order_acquire,
                                                  memory_order_relaxed))
            break;
        if (idle == STEP_RUNNING) break; /* a step inside a step: the callers' guards report that misuse */
        seer_backoff(&spins);
    }
    seer_worker *w0 = &rt->workers[0];
    if (rt->num_workers > 1) spin_step_begin(&w0->spin, !rt->has_python); /* a pool of one never waits */
    if (rt->dbg_n) dbg_refresh(rt); /* what changed between steps is no handler's doing */
    rt->horizon = horizon;
    if (rt->has_python) {
        /* a barrier job: every pool thread runs run_step; the epoch RMW
         * (release part) publishes the horizon and the pushed actions */
        if (rt->num_workers > 1) publish_phase(rt, EP_BARRIER);
        run_step(rt, 0);
        rt->windows_total += w0->win_seq;
    } else {
        const int64_t t0 = STATS_ON(rt) ? now_ns() : 0;
        run_chunked_step(rt, horizon);
        if (STATS_ON(rt)) {
            w0->stats.step_ns += now_ns() - t0;
            w0->stats.steps++;
        }
        if (rt->num_workers > 1) spin_step_end(&w0->spin);
    }
    /* Every worker's counts were written before the step's end (the last
     * barrier, or the epoch RMW that ended the phases), ordered before us. */
    int64_t events = rt->events_base;
    for (int32_t i = 0; i < rt->num_workers; i++) events += rt->workers[i].events;
    rt->events_total = events;
    /* release: the workers' cache writes (ordered before us by the step's
     * end) happen-before a reclaim's acquire. */
    atomic_store_explicit(&rt->stepping, STEP_IDLE, memory_order_release);
    /* acquire: pairs with fail()'s release store, so a nonzero code comes
     * with its record (seer_rt_last_error). */
    return atomic_load_explicit(&rt->err_code, memory_order_acquire);
}

/* ---- tiled steps ---------------------------------------------------------------------
 *
 * A step whose windows the caller runs entity set by entity set (see
 * seer_rt_tiled_begin in seer/seer.h): the caller may run a group of
 * entities through several windows before it moves on to the next group,
 * so that the rows of a group stay in cache from one window to the next
 * instead of every window sweeping all entities.  Opened with
 * seer_rt_tiled_begin, one thread does it all: the stepping thread of a
 * runtime with one worker.  Opened with seer_rt_tiled_begin_pool, the
 * caller runs groups on the pool's workers too (seer_rt_tiled_run_on,
 * from a seer_rt_parallel_for's slices), each worker with its own node
 * cache, outbox and claimed list.  Either way a lane is touched by one
 * thread at a time: the caller's plan never has two threads run, or send
 * to, the same entity at once, and orders each group after the groups
 * that send to it with its own synchronization (a release store of a
 * group's progress, an acquire load before the next: uav_swarm_v0's bands).
 * So a cross-entity event goes onto its target's lane with plain stores
 * (seer_queue_push_private_many, when the run that sent it returns:
 * tiled_deliver) and claims and unclaims need no handshake (the private
 * variants), as in a deferred window; the plain stores reach the target's
 * next runner through the caller's edges.  Whether the caller's order respects
 * the events' causality is checked at every emit (emit_one): an event for
 * another entity must fall after the window being run and into a window
 * its target has not run yet; the first that does not fails the step
 * (SEER_E_CAUSALITY).  What a handler reads of other entities' rows is the
 * caller's to order: a tiled step takes no snapshots. */

static int begin_stepping(seer_runtime *rt) {
    unsigned spins = 0;
    for (int idle = STEP_IDLE;; idle = STEP_IDLE) {
        /* acquire: as in seer_rt_step */
        if (atomic_compare_exchange_weak_explicit(&rt->stepping, &idle, STEP_RUNNING, memory_order_acquire,
                                                  memory_order_relaxed))
            return 1;
        if (idle == STEP_RUNNING) return 0;
        seer_backoff(&spins);
    }
}

static int tiled_open(seer_runtime *rt, int32_t num_windows, const double *window_end, int pool) {
    end_open_loop(rt);
    if ((!pool && rt->num_workers != 1) || rt->has_python || TRACING(rt)) return SEER_E_UNSUPPORTED;
    if (num_windows < 1 || !window_end || rt->tiled) return SEER_E_ARG;
    for (int32_t k = 0; k < num_windows; k++)
        if (isnan(window_end[k]) || (k > 0 && !(window_end[k] > window_end[k - 1]))) return SEER_E_ARG;
    if (!rt->tile_win) {
        rt->tile_win = malloc(sizeof(int32_t) * (size_t)rt->num_entities);
        if (!rt->tile_win) return SEER_E_NOMEM;
    }
    for (int32_t i = 1; pool && i < rt->num_workers; i++)
        if (!rt->workers[i].tile_claimed) {
            rt->workers[i].tile_claimed = malloc(sizeof(uint32_t) * (size_t)(rt->num_entities > 0 ? rt->num_entities : 1));
            if (!rt->workers[i].tile_claimed) return SEER_E_NOMEM;
        }
    if (!begin_stepping(rt)) return SEER_E_ARG; /* a step inside a step */
    if (rt->dbg_n) dbg_refresh(rt);
    /* as at a chunked step's start: lanes readied from outside go idle again */
    uint32_t e;
    while (seer_queue_take(rt->q, &e)) (void)seer_queue_unclaim_private(rt->q, e);
    memset(rt->tile_win, 0, sizeof(int32_t) * (size_t)rt->num_entities);
    rt->horizon = window_end[num_windows - 1];
    rt->tile_end = window_end;
    rt->tile_k = num_windows;
    rt->tiled = 1;
    rt->tile_pool = pool;
    rt->steps_begun++;
    /* The pool's threads read these after the caller's parallel loop is
     * published (its release stores), so plain writes do. */
    for (int32_t i = 0; i < (pool ? rt->num_workers : 1); i++) {
        seer_worker *w = &rt->workers[i];
        w->defer = 1; /* the private next and unclaim in run_entity */
        w->win_seq = 0;
    }
    rt->tile_t0 = STATS_ON(rt) ? now_ns() : 0;
    return SEER_OK;
}

int seer_rt_tiled_begin(seer_runtime *rt, int32_t num_windows, const double *window_end) {
    return tiled_open(rt, num_windows, window_end, 0);
}

int seer_rt_tiled_begin_pool(seer_runtime *rt, int32_t num_windows, const double *window_end) {
    return tiled_open(rt, num_windows, window_end, 1);
}

/* Push the events the last run sent to other entities (emit_one put them
 * in tile_ob): none is due before the end of the window it was sent in
 * (emit_one checks), so none is needed before the next run; pushed
 * together, their lanes' misses overlap (seer_queue_push_private_many)
 * instead of stalling each handler that sends one. */
static void tiled_deliver(seer_runtime *rt, seer_worker *w) {
    if (w->tile_ob.len) seer_queue_push_private_many(rt->q, w->tile_ob.ids, w->tile_ob.len);
    w->tile_ob.len = 0;
}

/* Run window k of the n claimed lanes own[], which have all run windows
 * 0 .. k - 1 (and are marked as having run k): one loop over all of a
 * call's runs, their lanes in cache from the claim, their first nodes
 * fetched TILED_AHEAD lanes ahead. */
#define TILED_AHEAD 4
static void tiled_claimed(seer_runtime *rt, seer_worker *w, int32_t k, const uint32_t *own, int32_t n,
                          window_stats *st) {
    const double t1 = rt->tile_end[k];
    const int32_t window = (int32_t)(rt->windows_total + k + 1);
    crash_note_here(w);
    for (int32_t i = 0; i < n && i < TILED_AHEAD; i++) seer_queue_prefetch_ahead(rt->q, SEER_NIL, own[i]);
    for (int32_t i = 0; i < n; i++) {
        if (i + TILED_AHEAD < n) seer_queue_prefetch_ahead(rt->q, SEER_NIL, own[i + TILED_AHEAD]);
        if (aborted(rt))
            (void)seer_queue_unclaim_private(rt->q, own[i]); /* given back unrun */
        else
            run_entity(rt, w, own[i], t1, st, window);
    }
}

/* Window `window` of the listed entities, on worker `wid` (see seer_rt_tiled_run). */
static int tiled_run(seer_runtime *rt, int32_t wid, int32_t window, const int32_t *entities, int32_t n) {
    seer_worker *w = &rt->workers[wid];
    uint32_t *claimed_ids = wid == 0 ? rt->claimed : w->tile_claimed;
    const double t1 = rt->tile_end[window];
    w->window_key = seer_time_key(t1);
    w->ctx.window_end = t1;
    w->min_key = SEER_KEY_INF;
    window_stats st = {0, 0, 0, 0};
    const uint32_t N = (uint32_t)rt->num_entities;
    int32_t *done = rt->tile_win;
    int rc = SEER_OK;
    int32_t claimed = 0, bad = 0;
    int wrong = 0; /* the plan lists bad, which is not an entity or not at this window */
    for (int32_t i = 0; i < n && !aborted(rt);) {
        /* a run of consecutive entities: one claim over their lanes.  Each
         * is marked as having run the window as it joins the run (no event
         * of this window can be for this window: emit_one).  The run is
         * found first, then checked and marked without a branch per
         * entity; one that is not all at this window is taken entity by
         * entity, up to the first that is not. */
        const int32_t lo = entities[i];
        int32_t len = 1;
        while (i + len < n && entities[i + len] == lo + len) len++;
        int32_t hi = lo;
        if (lo >= 0 && (int64_t)lo + len <= (int64_t)N) {
            int32_t off = 0;
            for (int32_t q = lo; q < lo + len; q++) off |= done[q] ^ window;
            if (off == 0) {
                for (int32_t q = lo; q < lo + len; q++) done[q] = window + 1;
                hi = lo + len;
                i += len;
            }
        }
        if (hi == lo)
            while (i < n && entities[i] == hi && (uint32_t)hi < N && done[hi] == window) done[hi++] = window + 1, i++;
        if (hi == lo) { /* not an entity, or not at this window: the caller's plan is wrong */
            bad = lo, wrong = 1;
            break;
        }
        uint64_t rest;
        claimed += seer_queue_claim_range_flat(rt->q, t1, lo, hi, claimed_ids + claimed, &rest);
    }
    /* the runs claimed, in order, before any of them runs: what they send
     * goes to the outbox until the call's end, so no claim sees it */
    tiled_claimed(rt, w, window, claimed_ids, claimed, &st);
    if (wrong) {
        seer_event cur = {t1, 0, bad, -1, -1, 0};
        fail(rt, SEER_E_ARG, wid, &cur, bad, -1, NAN);
        rc = SEER_E_ARG;
    }
    tiled_deliver(rt, w);
    w->events += st.events;
    if (rc == SEER_OK) rc = atomic_load_explicit(&rt->err_code, memory_order_relaxed);
    return rc;
}

int seer_rt_tiled_run(seer_runtime *rt, int32_t window, const int32_t *entities, int32_t n) {
    if (!rt->tiled || window < 0 || window >= rt->tile_k || n < 0 || (n > 0 && !entities)) return SEER_E_ARG;
    return tiled_run(rt, 0, window, entities, n);
}

int seer_rt_tiled_run_on(seer_runtime *rt, int32_t worker, int32_t window, const int32_t *entities, int32_t n) {
    if (!rt->tiled || worker < 0 || worker >= (rt->tile_pool ? rt->num_workers : 1) || window < 0 ||
        window >= rt->tile_k || n < 0 || (n > 0 && !entities))
        return SEER_E_ARG;
    return tiled_run(rt, worker, window, entities, n);
}

int seer_rt_tiled_end(seer_runtime *rt) {
    if (!rt->tiled) return SEER_E_ARG;
    seer_worker *w = &rt->workers[0];
    const int32_t K = rt->tile_k, N = rt->num_entities;
    /* The entities the caller did not run through every window (with no
     * events to share, as lost UAVs): the rest of their windows now, in
     * window order, their ids listed in claimed (free scratch here). */
    int32_t m = 0;
    for (int32_t e = N - 1; e >= 0; e--)
        if (rt->tile_win[e] < K) rt->claimed[N - 1 - m++] = (uint32_t)e;
    window_stats st = {0, 0, 0, 0};
    crash_note_here(w);
    for (int32_t k = 0; k < K && m > 0 && !aborted(rt); k++) {
        const double t1 = rt->tile_end[k];
        w->window_key = seer_time_key(t1);
        w->ctx.window_end = t1;
        for (int32_t i = N - m; i < N && !aborted(rt); i++) {
            const int32_t e = (int32_t)rt->claimed[i];
            if (rt->tile_win[e] != k) continue;
            uint64_t rest;
            uint32_t own;
            if (seer_queue_claim_range_private(rt->q, t1, e, e + 1, &own, &rest))
                run_entity(rt, w, own, t1, &st, (int32_t)(rt->windows_total + k + 1));
            rt->tile_win[e] = k + 1;
        }
        tiled_deliver(rt, w);
    }
    tiled_deliver(rt, w); /* (an aborted step's too: its nodes go back to the lanes) */
    w->events += st.events;
    const int32_t ran = rt->tile_pool ? rt->num_workers : 1;
    for (int32_t i = 0; i < ran; i++) {
        seer_worker *o = &rt->workers[i];
        o->ctx.window_end = rt->horizon;
        o->defer = 0;
        if (o->pending_delta) {
            seer_queue_add_pending(rt->q, o->pending_delta);
            o->pending_delta = 0;
        }
    }
    rt->tiled = 0;
    rt->tile_pool = 0;
    rt->tile_end = NULL;
    rt->windows_total += K;
    if (STATS_ON(rt)) {
        w->stats.windows += K;
        w->stats.steps++;
        w->stats.step_ns += now_ns() - rt->tile_t0;
    }
    int64_t events = rt->events_base;
    for (int32_t i = 0; i < rt->num_workers; i++) events += rt->workers[i].events;
    rt->events_total = events;
    /* release: as at seer_rt_step's end */
    atomic_store_explicit(&rt->stepping, STEP_IDLE, memory_order_release);
    return atomic_load_explicit(&rt->err_code, memory_order_acquire);
}

void seer_rt_worker_main(seer_runtime *rt, int32_t wid) {
    seer_worker *w = &rt->workers[wid];
    uint32_t barrier_done = EP_IDLE; /* the epoch of the last barrier job run (never an EP_BARRIER one at start) */
    int32_t h;
    uint32_t j;
    for (;;) {
        /* acquire: pairs with the epoch RMW (release part) of its publisher:
         * a barrier job's horizon and the pushed actions, the shutdown flag,
         * are visible after it. */
        const uint32_t e = atomic_load_explicit(&rt->epoch, memory_order_acquire);
        const uint32_t state = EP_STATE(e);
        if (state == EP_SHUTDOWN) {
            trace_close(w);
            /* release: see idle_epoch; a joined thread needs no wait, but
             * wait_accounted must find it all the same. */
            atomic_store_explicit(&w->idle_epoch, e, memory_order_release);
            return;
        }
        if (state == EP_BARRIER && e != barrier_done) {
            run_step(rt, wid);
            barrier_done = e;
            continue;
        }
        /* the ranges of epoch e (stored before it) or later ones */
        if (state == EP_WORK && claim_unit(rt, w, &h, &j)) {
            run_unit(rt, w, h, j);
            continue;
        }
        trace_close(w);
        if (state != EP_WORK) spin_check_load(&w->spin, !rt->has_python); /* once per step, between steps */
        /* release: this thread's stats and trace records happen-before
         * wait_accounted's acquire load. */
        atomic_store_explicit(&w->idle_epoch, e, memory_order_release);
        int64_t spin = 0, parks = 0;
        const int64_t t0 = now_ns();
        wait_change(&rt->epoch, e, &w->spin, state != EP_WORK, &rt->epoch_sleepers, &spin, &parks);
        if (STATS_ON(rt)) { /* read after the new epoch: see set_stats */
            w->stats.spin_ns += spin;
            w->stats.parks += parks;
            if (state == EP_WORK) {
                const int64_t d = now_ns() - t0;
                w->stats.barrier_ns += d;
                w->stats.step_ns += d;
            }
        }
    }
}

void seer_rt_shutdown(seer_runtime *rt) {
    end_open_loop(rt); /* its slices may read what the caller frees after the join */
    /* release: pairs with an acquire load after the epoch's; the flag is
     * also carried by the epoch RMW below (release part), which is what a
     * waking worker synchronizes with first. */
    atomic_store_explicit(&rt->shutdown, 1, memory_order_release);
    publish_phase(rt, EP_SHUTDOWN);
}

void seer_rt_interrupt(seer_runtime *rt) {
    /* The same first-failure record a handler error takes: workers poll it
     * between events (aborted()), a phase's completer ends the step at its
     * next window decision, and seer_rt_step returns the code. */
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
    .rt_tiled_begin = seer_rt_tiled_begin,
    .rt_tiled_run = seer_rt_tiled_run,
    .rt_tiled_end = seer_rt_tiled_end,
    .rt_parallel_for_begin = seer_rt_parallel_for_begin,
    .rt_parallel_for_end = seer_rt_parallel_for_end,
    .rt_tiled_begin_pool = seer_rt_tiled_begin_pool,
    .rt_tiled_run_on = seer_rt_tiled_run_on,
};

const seer_api *seer_api_table(void) { return &API; }
