/* Validation program for the runtime's worker pool (seer_runtime.c over
 * seer_queue.c), without Python.
 *
 *   stress_runtime [entities] [steps] [max_workers] [fanout] [delay_workers]
 *
 * Runs one message-passing model with 1 worker, then with 2..max_workers
 * pthreads, and checks:
 *   - one holder per entity: a per-entity atomic "inside a handler" flag must
 *     go 0 -> 1 on entry (never 1 -> 2);
 *   - per-entity order: each entity's handled events are non-decreasing in
 *     (time, source, seq);
 *   - no loss, no duplicate: every emitted message is handled exactly once
 *     (per-entity sums of sent and received message ids match at the end);
 *   - determinism: the final state is bit-identical for every pool size,
 *     and for a pool resized between steps (seer_rt_resize) to every size
 *     from 1 to max_workers in turn;
 *   - the same with one pool thread held back on purpose (delay_worker: it
 *     sleeps or yields inside handlers now and then, as a thread the OS
 *     parks would), for pools of 2..delay_workers: the other threads take
 *     over its units, and neither the results nor the invariants change.
 * Prints "stress_runtime: OK ..." and exits 0, or names the broken invariant.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seer_queue.h"
#include "seer_runtime.h"

#define TICK 0
#define MSG 1
#define PERIOD 0.1
#define DELAY 0.05

#define FAR_DELAY 0.3 /* messages of the far runs (see run) */
#define PAD_BYTES 65536u

typedef struct model {
    int32_t n;
    int32_t fanout;
    double msg_delay;       /* DELAY, or FAR_DELAY (see run's far)   */
    double *value;          /* order-sensitive state                 */
    double *snap;
    _Atomic int *inside;    /* one holder per entity                 */
    double *last_time;      /* per-entity order: last (time, src, seq) */
    int32_t *last_src;
    uint32_t *last_seq;
    int64_t *sent_sum;      /* sum of message ids sent by entity     */
    int64_t *recv_sum;      /* sum of message ids received by entity */
    int64_t *sent_count, *recv_count;
    int64_t *self_pending;  /* self messages sent, not yet handled */
} model;

static _Atomic int failures;

/* The pool thread held back (-1: none), and how: 1 sleeps 200 us in one of
 * DELAY_EVERY of its handler calls, 2 yields the core in one of them. */
static int delay_worker = -1, delay_kind = 1;
#define DELAY_EVERY 97

/* Debug-mode runs (seer_rt_set_debug_rows over value and recv_sum): 1 checks
 * rows, rogue_entity >= 0 also makes that entity's message handler write
 * its neighbour's value once its clock passes ROGUE_TIME. */
static int debug_rows = 0, rogue_entity = -1;
#define ROGUE_TIME 1.0

static void hold_back(const seer_ctx *ctx, const seer_event *ev) {
    if (ctx->worker != delay_worker) return;
    if ((uint32_t)(ev->seq * 2654435761u + (uint32_t)ev->entity) % DELAY_EVERY != 0) return;
    if (delay_kind == 1) {
        struct timespec ts = {0, 200000};
        nanosleep(&ts, NULL);
    } else {
        sched_yield();
    }
}

#define CHECK(cond, ...)                                   \
    do {                                                   \
        if (!(cond)) {                                     \
            if (atomic_fetch_add(&failures, 1) < 5) {      \
                fprintf(stderr, "stress_runtime: FAIL: "); \
                fprintf(stderr, __VA_ARGS__);              \
                fprintf(stderr, "\n");                     \
            }                                              \
        }                                                  \
    } while (0)

static void enter(model *m, const seer_event *ev) {
    int32_t e = ev->entity;
    int was = atomic_fetch_add(&m->inside[e], 1);
    CHECK(was == 0, "entity %d held by two workers at time %g", e, ev->time);
    int ordered = ev->time > m->last_time[e] ||
                  (ev->time == m->last_time[e] &&
                   (ev->source > m->last_src[e] || (ev->source == m->last_src[e] && ev->seq > m->last_seq[e])));
    CHECK(ordered, "entity %d got (%g,%d,%u) after (%g,%d,%u)", e, ev->time, ev->source, ev->seq,
          m->last_time[e], m->last_src[e], m->last_seq[e]);
    m->last_time[e] = ev->time;
    m->last_src[e] = ev->source;
    m->last_seq[e] = ev->seq;
}

static void leave(model *m, const seer_event *ev) { atomic_fetch_sub(&m->inside[ev->entity], 1); }

static int on_tick(seer_ctx *ctx, const seer_event *ev) {
    model *m = ctx->model;
    int32_t e = ev->entity;
    enter(m, ev);
    hold_back(ctx, ev);
    m->value[e] = m->value[e] * 0.75 + 0.01 * m->snap[(e + 1) % m->n];
    for (int32_t f = 0; f < m->fanout; f++) {
        int32_t to = (int32_t)(seer_random_u64(ctx) % (uint64_t)m->n);
        int64_t id = ((int64_t)e << 32) | (int64_t)(m->sent_count[e] & 0xffffffff);
        if (seer_emit(ctx, to, ev->time + m->msg_delay, MSG, id) != 0) return 1;
        m->sent_count[e]++;
        m->sent_sum[e] += id;
    }
    /* An event to itself inside the window: must run before later events. */
    seer_emit(ctx, e, ev->time + 0.001, MSG, -1);
    m->self_pending[e]++;
    seer_emit(ctx, e, ev->time + PERIOD, TICK, 0);
    leave(m, ev);
    return 0;
}

static int on_msg(seer_ctx *ctx, const seer_event *ev) {
    model *m = ctx->model;
    int32_t e = ev->entity;
    enter(m, ev);
    hold_back(ctx, ev);
    if (ev->payload >= 0) {
        m->recv_sum[e] += ev->payload;
        m->recv_count[e]++;
    } else {
        m->self_pending[e]--;
    }
    m->value[e] = m->value[e] * 0.5 + (double)(ev->payload & 0xff) * 1e-3;
    if (e == rogue_entity && ev->time >= ROGUE_TIME) m->value[(e + 1) % m->n] += 1.0;
    leave(m, ev);
    return 0;
}

typedef struct pool_arg {
    seer_runtime *rt;
    int32_t worker;
} pool_arg;

static void *pool_main(void *p) {
    pool_arg *a = p;
    seer_rt_worker_main(a->rt, a->worker);
    return NULL;
}

/* seer_rt_parallel_for between steps: every index visited exactly once,
 * slices written by whichever worker took them, all visible on return. */
typedef struct pfor_check {
    int64_t n;
    int32_t workers;
    uint32_t *visits;
    int32_t *by;
} pfor_check;

static void pfor_body(void *arg, int64_t lo, int64_t hi, int32_t worker) {
    pfor_check *c = arg;
    CHECK(lo >= 0 && lo < hi && hi <= c->n && worker >= 0 && worker < c->workers, "bad slice [%lld, %lld) on %d",
          (long long)lo, (long long)hi, worker);
    for (int64_t i = lo; i < hi; i++) {
        c->visits[i]++;
        c->by[i] = worker;
    }
}

static void check_visits(const pfor_check *c, uint32_t loops, const char *how) {
    for (int64_t i = 0; i < c->n; i++)
        CHECK(c->visits[i] == loops, "index %lld visited %u times after %u loops (%s)", (long long)i, c->visits[i],
              loops, how);
}

static void free_check(pfor_check *c) {
    free(c->visits);
    free(c->by);
    free(c);
}

/* Three loops, then the same left to the pool (seer_rt_parallel_for_begin)
 * while this thread goes on: ended by seer_rt_parallel_for_end, by the
 * next begin, and once more left open for the caller's next call on the
 * runtime to end (a step, or the shutdown before a resize): returned, to
 * be checked for PFOR_OPEN_LOOPS loops after that call. */
#define PFOR_OPEN_LOOPS 7u
static pfor_check *check_parallel_for(seer_runtime *rt, int32_t workers, int64_t n, int64_t grain) {
    pfor_check *c = malloc(sizeof *c);
    *c = (pfor_check){n, workers, calloc((size_t)n, sizeof(uint32_t)), calloc((size_t)n, sizeof(int32_t))};
    for (uint32_t rep = 0; rep < 3; rep++) {
        CHECK(seer_rt_parallel_for(rt, n, grain, pfor_body, c) == SEER_OK, "parallel_for failed");
        check_visits(c, rep + 1, "parallel_for");
    }
    CHECK(seer_rt_parallel_for_begin(rt, n, grain, pfor_body, c) == SEER_OK, "parallel_for_begin failed");
    for (volatile int spin = 0; spin < 2000; spin++) {
    } /* this thread's own work meanwhile: the pool may be anywhere in the loop */
    CHECK(seer_rt_parallel_for_end(rt) == SEER_OK, "parallel_for_end failed");
    check_visits(c, 4, "begin, end");
    CHECK(seer_rt_parallel_for_end(rt) == SEER_OK, "a second parallel_for_end failed");
    CHECK(seer_rt_parallel_for_begin(rt, n, grain, pfor_body, c) == SEER_OK, "parallel_for_begin failed");
    CHECK(seer_rt_parallel_for_begin(rt, n, grain, pfor_body, c) == SEER_OK, "parallel_for_begin failed");
    CHECK(seer_rt_parallel_for_end(rt) == SEER_OK, "parallel_for_end failed");
    check_visits(c, 6, "begin, begin, end");
    CHECK(seer_rt_parallel_for_begin(rt, n, grain, pfor_body, c) == SEER_OK, "parallel_for_begin failed");
    return c;
}

static void start_pool(seer_runtime *rt, int32_t workers, pthread_t *threads, pool_arg *args) {
    for (int32_t w = 1; w < workers; w++) {
        args[w] = (pool_arg){rt, w};
        pthread_create(&threads[w], NULL, pool_main, &args[w]);
    }
}

static void stop_pool(seer_runtime *rt, int32_t workers, pthread_t *threads) {
    seer_rt_shutdown(rt);
    for (int32_t w = 1; w < workers; w++) pthread_join(threads[w], NULL);
}

/* resize: every third step the pool is stopped and resized to the next
 * size of 1..workers in turn (the canary of seer_rt_resize).  far: every
 * entity ticks at 0, PERIOD, 2 PERIOD, ..., its messages take FAR_DELAY,
 * and a last step ends 3/4 of a period after a tick: its last window (the
 * tick's; not the step's last, as its end is before the horizon) sends
 * messages past the horizon, and then nothing is left before it.  A pool
 * publishes such messages to their lanes' owners after the window
 * (seer_runtime.c's outboxes); they must be in the queue when the step
 * returns, or the drain below misses them. */
static double *run(int32_t n, int32_t steps, int32_t workers, int32_t fanout, int32_t snaps, int32_t resize,
                   int32_t far, int64_t *events_out) {
    seer_queue *q = seer_queue_new(n, 2, (uint32_t)n * 64 + 4096);
    seer_runtime *rt = seer_rt_new(q, workers, DELAY, workers <= 2 ? 2000 : 20);
    if (!q || !rt) {
        fprintf(stderr, "stress_runtime: allocation failed\n");
        exit(2);
    }
    model m = {.n = n, .fanout = fanout, .msg_delay = far ? FAR_DELAY : DELAY};
    const double step_len = 0.25;
    m.value = calloc((size_t)n, sizeof(double));
    m.snap = calloc((size_t)n, sizeof(double));
    m.inside = calloc((size_t)n, sizeof(_Atomic int));
    m.last_time = calloc((size_t)n, sizeof(double));
    m.last_src = calloc((size_t)n, sizeof(int32_t));
    m.last_seq = calloc((size_t)n, sizeof(uint32_t));
    m.sent_sum = calloc((size_t)n, sizeof(int64_t));
    m.recv_sum = calloc((size_t)n, sizeof(int64_t));
    m.sent_count = calloc((size_t)n, sizeof(int64_t));
    m.recv_count = calloc((size_t)n, sizeof(int64_t));
    m.self_pending = calloc((size_t)n, sizeof(int64_t));
    for (int32_t e = 0; e < n; e++) {
        m.value[e] = e % 5;
        m.last_time[e] = -INFINITY;
        m.last_src[e] = -2;
    }
    seer_rt_set_handler(rt, TICK, on_tick);
    seer_rt_set_handler(rt, MSG, on_msg);
    seer_rt_set_model(rt, &m);
    /* Without snapshots the runtime skips the barrier between the window's
     * bookkeeping and its events (m.snap then stays all zeros). */
    if (snaps) seer_rt_add_snapshot(rt, m.value, m.snap, sizeof(double) * (size_t)n);
    /* snaps == 2: a second region of 64 KiB, past what the window's opener
     * copies alone (SNAP_ALONE_BYTES), so the copies take a phase of their
     * own, cut into every chunk's share */
    char *pad = snaps == 2 ? calloc(2, PAD_BYTES) : NULL;
    if (pad) seer_rt_add_snapshot(rt, pad, pad + PAD_BYTES, PAD_BYTES);
    void *dbg_live[2] = {m.value, m.recv_sum};
    void *dbg_shadow[2] = {malloc(sizeof(double) * (size_t)n), malloc(sizeof(int64_t) * (size_t)n)};
    const uint64_t dbg_rows[2] = {sizeof(double), sizeof(int64_t)};
    if (debug_rows && seer_rt_set_debug_rows(rt, 2, dbg_live, dbg_shadow, dbg_rows) != SEER_OK) exit(2);
    seer_rt_reset(rt, 1234);
    for (int32_t e = 0; e < n; e++) {
        double t = far ? 0.0 : (e % 7) * (PERIOD / 7);
        int32_t kind = TICK;
        int64_t bad;
        if (seer_queue_push_many(q, &e, &t, &kind, NULL, NULL, NULL, 1, &bad) != SEER_OK) exit(2);
    }
    pthread_t *threads = calloc((size_t)workers, sizeof(pthread_t));
    pool_arg *args = calloc((size_t)workers, sizeof(pool_arg));
    const int32_t max_workers = workers;
    start_pool(rt, workers, threads, args);
    seer_rt_set_stats(rt, 1);
    int rogue_seen = 0;
    pfor_check *open_loop = NULL; /* a loop check_parallel_for left open for this loop's next call to end */
    for (int32_t s = 1; s <= steps; s++) {
        if (resize && s % 3 == 0) {
            stop_pool(rt, workers, threads);
            workers = 1 + (s / 3) % max_workers;
            CHECK(seer_rt_resize(rt, workers, workers <= 2 ? 2000 : 20) == SEER_OK, "resize to %d failed", workers);
            CHECK(seer_rt_num_workers(rt) == workers, "resized to %d, runtime says %d", workers,
                  seer_rt_num_workers(rt));
            start_pool(rt, workers, threads, args);
        }
        int rc = seer_rt_step(rt, s * step_len);
        if (open_loop) { /* ended by the step, or by the shutdown before a resize */
            check_visits(open_loop, PFOR_OPEN_LOOPS, "begin, then a step or a resize");
            free_check(open_loop);
            open_loop = NULL;
        }
        if (rogue_entity >= 0) {
            /* the write is found after the handler that made it, in the step it happened, once */
            seer_error_info info;
            seer_rt_last_error(rt, &info);
            if (s * step_len <= ROGUE_TIME) {
                CHECK(rc == SEER_OK, "debug: step %d failed with %d before entity %d wrote", s, rc, rogue_entity);
                continue;
            }
            CHECK(rc == SEER_RT_E_OTHER_ROW && info.entity == rogue_entity &&
                  info.target == (rogue_entity + 1) % n && info.target_kind == 0 && info.kind == MSG,
                  "debug: step %d returned %d (entity %d, row %d of array %d, kind %d), expected the rogue write "
                  "of entity %d", s, rc, info.entity, info.target, info.target_kind, info.kind, rogue_entity);
            rogue_seen = 1;
            break;
        }
        CHECK(rc == SEER_OK, "step %d failed with %d", s, rc);
        /* Each worker's accounting of the step is complete once
         * seer_rt_take_stats returns, though a pool thread may add to it
         * after the step's end, when this thread may be back already (the
         * idle_epoch handshake; TSan checks the ordering).  Worker 0 counts
         * every step and window; in the chunked phases a pool thread counts
         * those it took part in. */
        seer_rt_stats st0, st;
        seer_rt_take_stats(rt, 0, &st0);
        CHECK(st0.steps == 1 && st0.windows > 0 && st0.spin_ns >= 0 && st0.parks >= 0,
              "step %d: worker 0 counted %lld steps, %lld windows", s, (long long)st0.steps,
              (long long)st0.windows);
        for (int32_t w = 1; w < workers; w++) {
            seer_rt_take_stats(rt, w, &st);
            CHECK(st.steps <= 1 && st.windows <= st0.windows && st.step_ns >= 0 && st.barrier_ns >= 0 && st.spin_ns >= 0 && st.parks >= 0,
                  "step %d: worker %d counted %lld steps and %lld windows, worker 0 1 and %lld", s, w,
                  (long long)st.steps, (long long)st.windows, (long long)st0.windows);
        }
        /* between steps every pending event is in the queue (a message
         * left in an outbox would be missing): each entity's next tick and
         * self message, and every message sent but not yet handled */
        int64_t in_flight = 0;
        for (int32_t e = 0; e < n; e++) in_flight += m.sent_count[e] - m.recv_count[e] + m.self_pending[e];
        CHECK(seer_queue_min_time(q) >= s * step_len, "step %d left an event at %g", s, seer_queue_min_time(q));
        CHECK(seer_queue_len(q) == in_flight + n, "step %d: %lld events queued, expected %lld messages + %d ticks",
              s, (long long)seer_queue_len(q), (long long)in_flight, n);
        if (s % 8 == 0) open_loop = check_parallel_for(rt, workers, (int64_t)n * 13 + s, 1 + s % 17);
    }
    if (rogue_entity >= 0) {
        /* a failed step's queue is the next reset's to clear: no drain invariants */
        CHECK(rogue_seen, "debug: entity %d wrote its neighbour's row and no step failed", rogue_entity);
        goto done;
    }
    if (far) {
        double tick = 0.0; /* the ticks' times, summed as the handlers sum them */
        while (tick < steps * step_len) tick += PERIOD;
        CHECK(seer_rt_step(rt, tick + 0.75 * PERIOD) == SEER_OK, "far: the last step failed");
    }
    /* No loss, no duplicate: messages handled plus messages still queued
     * equal messages sent, id for id (sums per receiver and in total). */
    int64_t sent = 0, recv = 0, queued = 0, queued_sum = 0, sent_sum = 0, recv_sum = 0;
    seer_event buf[512];
    int64_t got;
    while ((got = seer_queue_pop(q, INFINITY, buf, 512, 0)) > 0) {
        for (int64_t i = 0; i < got; i++) {
            if (buf[i].kind == MSG && buf[i].payload >= 0) {
                queued++;
                queued_sum += buf[i].payload;
            }
            int64_t bad;
            seer_queue_release(q, &buf[i].entity, 1, &bad);
        }
    }
    for (int32_t e = 0; e < n; e++) {
        sent += m.sent_count[e];
        recv += m.recv_count[e];
        sent_sum += m.sent_sum[e];
        recv_sum += m.recv_sum[e];
    }
    CHECK(recv + queued == sent && recv_sum + queued_sum == sent_sum,
          "messages: sent %lld, handled %lld + queued %lld (id sums %lld vs %lld + %lld)", (long long)sent,
          (long long)recv, (long long)queued, (long long)sent_sum, (long long)recv_sum, (long long)queued_sum);
    CHECK(seer_queue_len(q) == 0, "queue not empty after draining: %lld", (long long)seer_queue_len(q));
    /* The whole pool is free again, the nodes the workers keep cached from
     * step to step included: a push from outside takes them back (the
     * queue's reclaim hook), here while the pool threads are still parked. */
    const uint32_t cap = seer_queue_capacity(q);
    for (uint32_t k = 0; k < cap; k += 256) {
        int32_t ents[256], kinds[256];
        double times[256];
        const int64_t b = cap - k < 256 ? cap - k : 256;
        for (int64_t i = 0; i < b; i++) {
            ents[i] = (int32_t)((k + i) % (uint32_t)n);
            kinds[i] = TICK;
            times[i] = 1e9;
        }
        int64_t bad;
        const int rc = seer_queue_push_many(q, ents, times, kinds, NULL, NULL, NULL, b, &bad);
        CHECK(rc == SEER_OK, "pushing events %u..%lld of a free pool of %u failed with %d", k, (long long)(k + b),
              cap, rc);
    }
    {
        int32_t e = 0, kind = TICK;
        double t = 1e9;
        int64_t bad;
        CHECK(seer_queue_push_many(q, &e, &t, &kind, NULL, NULL, NULL, 1, &bad) == SEER_E_FULL,
              "a pool of %u took one event more", cap);
    }
done:
    stop_pool(rt, workers, threads);
    if (open_loop) { /* ended by the shutdown */
        check_visits(open_loop, PFOR_OPEN_LOOPS, "begin, then the shutdown");
        free_check(open_loop);
    }
    free(dbg_shadow[0]);
    free(dbg_shadow[1]);
    *events_out = seer_rt_events_total(rt);
    double *out = malloc(sizeof(double) * (size_t)n * 2);
    memcpy(out, m.value, sizeof(double) * (size_t)n);
    for (int32_t e = 0; e < n; e++) out[n + e] = (double)m.recv_sum[e];
    seer_rt_free(rt);
    seer_queue_free(q);
    free(m.value); free(m.snap); free((void *)m.inside); free(m.last_time); free(m.last_src);
    free(m.last_seq); free(m.sent_sum); free(m.recv_sum); free(m.sent_count); free(m.recv_count);
    free(m.self_pending);
    free(pad);
    free(threads); free(args);
    return out;
}

/* Pools of 2..max_workers end in the same state, after the same events,
 * as 1 worker; so does one pool of max_workers resized between steps
 * through every size, if resize.  Returns the events 1 worker handled. */
static int64_t pools_agree(int32_t n, int32_t steps, int32_t max_workers, int32_t fanout, int32_t snaps,
                           int32_t far, int32_t resize, const char *what) {
    int64_t ev1 = 0;
    double *ref = run(n, steps, 1, fanout, snaps, 0, far, &ev1);
    for (int32_t w = 2; w <= max_workers; w++) {
        int64_t events = 0;
        double *got = run(n, steps, w, fanout, snaps, 0, far, &events);
        CHECK(events == ev1, "workers=%d, %s: handled %lld events, 1 worker %lld", w, what, (long long)events,
              (long long)ev1);
        CHECK(memcmp(ref, got, sizeof(double) * (size_t)n * 2) == 0, "workers=%d, %s: state differs from 1 worker",
              w, what);
        free(got);
    }
    if (resize && max_workers > 1) {
        int64_t events = 0;
        double *got = run(n, steps, max_workers, fanout, snaps, 1, far, &events);
        CHECK(events == ev1 && memcmp(ref, got, sizeof(double) * (size_t)n * 2) == 0,
              "a pool resized between steps, %s: differs from 1 worker", what);
        free(got);
    }
    free(ref);
    return ev1;
}

int main(int argc, char **argv) {
    int32_t n = argc > 1 ? atoi(argv[1]) : 257;
    int32_t steps = argc > 2 ? atoi(argv[2]) : 40;
    int32_t max_workers = argc > 3 ? atoi(argv[3]) : 4;
    int32_t fanout = argc > 4 ? atoi(argv[4]) : 3;
    const int64_t events1 = pools_agree(n, steps, max_workers, fanout, 1, 0, 1, "with snapshots");
    pools_agree(n, steps, max_workers, fanout, 2, 0, 0, "with snapshots copied in a phase of their own");
    { /* the two ways of copying the snapshots: the same states (handlers read them) */
        int64_t ev_opener = 0, ev_phase = 0;
        double *by_opener = run(n, steps, max_workers, fanout, 1, 0, 0, &ev_opener);
        double *in_phase = run(n, steps, max_workers, fanout, 2, 0, 0, &ev_phase);
        CHECK(ev_opener == ev_phase && memcmp(by_opener, in_phase, sizeof(double) * (size_t)n * 2) == 0,
              "snapshots copied by the window's opener and in a phase of their own: the states differ");
        free(by_opener);
        free(in_phase);
    }
    /* no snapshots: workers start stealing while others still claim */
    pools_agree(n, steps, max_workers, fanout, 0, 0, 0, "without snapshots");
    /* messages sent past the horizon by a step's windows that end early */
    pools_agree(n, steps, max_workers, fanout, 1, 1, 0, "messages past the horizon");
    /* one pool thread held back (sleeping, then yielding) in pools of
     * 2..delay_workers: the same state and events as 1 worker */
    int32_t delay_workers = argc > 5 ? atoi(argv[5]) : 0;
    for (int kind = 1; kind <= 2 && delay_workers > 1; kind++) {
        delay_kind = kind;
        for (int32_t w = 2; w <= delay_workers; w++) {
            delay_worker = 1 + (w + kind) % (w - 1); /* a different pool thread each time */
            int64_t events = 0, ev1 = 0;
            double *ref1 = run(n, steps, 1, fanout, 1, 0, 0, &ev1);
            double *got = run(n, steps, w, fanout, 1, 0, kind == 2, &events);
            double *ref2 = kind == 2 ? run(n, steps, 1, fanout, 1, 0, 1, &ev1) : NULL;
            CHECK(events == ev1 && memcmp(ref2 ? ref2 : ref1, got, sizeof(double) * (size_t)n * 2) == 0,
                  "workers=%d with worker %d held back (%s): differs from 1 worker", w, delay_worker,
                  kind == 1 ? "sleeping" : "yielding");
            free(ref1);
            free(ref2);
            free(got);
        }
        delay_worker = -1;
    }
    /* debug mode: rows checked after every native handler, handlers one at
     * a time; the same results, no false alarm, and a write to another
     * entity's row found at any pool size */
    debug_rows = 1;
    pools_agree(n < 65 ? n : 65, steps < 12 ? steps : 12, max_workers, fanout, 1, 0, 0, "debug mode");
    for (int32_t w = 1; w <= max_workers; w++) {
        int64_t events = 0;
        rogue_entity = (w * 7) % n;
        free(run(n < 65 ? n : 65, 8, w, fanout, 1, 0, 0, &events));
    }
    rogue_entity = -1;
    debug_rows = 0;
    if (atomic_load(&failures)) return 1;
    printf("stress_runtime: OK entities=%d steps=%d workers=1..%d events=%lld (with snapshots copied by a window's "
           "opener and in a phase of their own, without snapshots, messages past the horizon, parallel_for, "
           "resized pools, debug mode's row checks%s)\n",
           n, steps, max_workers, (long long)events1, delay_workers > 1 ? ", a pool thread held back in pools of 2..N" : "");
    return 0;
}
