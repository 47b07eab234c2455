/* Stress and validation program for the SEER event queue (csrc/seer_queue.c).
 *
 * In the style of concurrencykit's validation programs: several producer
 * threads push canary-tagged events with seer_queue_push_many, several
 * consumer threads pop, check and release them, and every invariant the queue
 * promises is asserted on the way; the first violation prints what broke and
 * exits 1.
 *
 *   build:  cc -std=c11 -O2 -pthread -Icsrc csrc/tests/stress_queue.c csrc/seer_queue.c -lm
 *   run:    ./stress_queue [producers consumers entities events_per_producer [capacity [rounds [seed]]]]
 *           defaults 3 3 509 1000000, capacity 0 = the least the protocol
 *           below needs + 25% (smaller than the total, so SEER_E_FULL and
 *           the free ring get exercised), 2 rounds, seed from the clock.
 *           sanitize.sh and tests/test_queue_stress_c.py pass smaller sizes.
 *
 * Invariants checked
 *   - no loss, no duplicate: every (producer, entity) pair numbers its events
 *     0, 1, 2, ...; a consumer must pop exactly the next number, and at the end
 *     of a round each pair's popped count equals its pushed count;
 *   - canary: the payload is a hash of (producer, entity, seq) xor the bits of
 *     the time xor a magic constant, so a torn or misrouted event is caught;
 *     kind, entity and source are checked too;
 *   - per-entity order: an entity's popped events are strictly increasing in
 *     (time, source, seq) across all pops of all consumers.  The last key seen
 *     per entity lives in a plain array that only the entity's current holder
 *     touches, so under ThreadSanitizer this also checks that the queue's
 *     release -> claim hand-off orders one holder's writes before the next
 *     holder's reads (the test itself adds no synchronisation between
 *     consumers: its own counters are relaxed atomics);
 *   - one holder: a per-entity atomic counter goes 0 -> 1 right after a pop and
 *     1 -> 0 right before the release; any other transition is a double claim;
 *   - batch shape: events have time < horizon, entities come in contiguous
 *     groups, at most per_entity per group and max_events per batch, and every
 *     returned entity reports seer_queue_is_claimed;
 *   - after each round: seer_queue_len == 0, seer_queue_min_time == +inf, no
 *     entity claimed, floors equal the last popped times, and the whole pool
 *     is free again (capacity events fit, one more gives SEER_E_FULL);
 *   - seer_queue_clear drops pending events and claims and resets floors (the
 *     next round restarts time at 0, which would be "past" without it), and
 *     the error paths of push/release return the documented codes.
 *
 * Why ordering is checkable with several producers per entity: producers
 * follow a conservative-window protocol like the runtime's.  Producer p keeps
 * a clock that only grows, pushes only events with time >= clock, and
 * publishes low[p] = clock (release) after each push.  Consumers pop with
 * horizon H <= min_p low[p] (acquire), so every event with time < H was pushed
 * before the pop and no later push can go below a popped time.  Producers stay
 * within LEAD of the slowest one, which bounds the events waiting beyond the
 * horizon, so a pool smaller than the total (SEER_E_FULL is retried after a
 * yield) cannot deadlock.  When a producer is done it publishes +inf, so the
 * consumers finish the round with horizon +INFINITY.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../seer_queue_internal.h"

#define MAGIC 0x5eE7C0FFEE15DEADull
#define NUM_KINDS 16
#define MAX_BATCH 1024 /* events per push_many (half the batches: 256) */
#define MAX_POP 512   /* biggest max_events a consumer asks for     */
#define LEAD 8.0      /* producers stay this close to the slowest one */
#define MAX_OFFSET 2.0

/* ---- failure reporting ------------------------------------------------------ */

static atomic_flag failing = ATOMIC_FLAG_INIT;
static unsigned long long g_seed; /* printed with a failure, to replay the run */

static void fail(const char *fmt, ...) {
    va_list ap;
    if (atomic_flag_test_and_set(&failing))
        for (;;) pause(); /* another thread is already reporting; it exits */
    fflush(stdout);
    fprintf(stderr, "stress_queue: FAIL ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (seed=%llu)\n", g_seed);
    fflush(stderr);
    _exit(1);
}

#define CHECK(cond, ...)                   \
    do {                                   \
        if (!(cond)) fail(__VA_ARGS__);    \
    } while (0)

/* ---- small helpers ------------------------------------------------------------ */

static uint64_t rng_next(uint64_t *s) { /* xorshift64* */
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static uint64_t time_bits(double t) {
    uint64_t u;
    memcpy(&u, &t, sizeof u);
    return u;
}

static int64_t canary(int32_t p, int32_t e, uint32_t seq, double t) {
    uint64_t h = ((uint64_t)seq * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)(uint32_t)e << 21) ^
                 ((uint64_t)(uint32_t)p << 3);
    return (int64_t)(h ^ time_bits(t) ^ MAGIC);
}

static int32_t kind_of(int32_t p, uint32_t seq) { return (int32_t)((seq ^ (uint32_t)p * 7u) % NUM_KINDS); }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Wait politely: the machine may have fewer cores than threads, so yield,
 * then sleep a little, rather than spin against the thread we wait for. */
static void pause_a_little(unsigned tries) {
    if (tries < 4) {
        sched_yield();
    } else {
        struct timespec ts = {0, tries < 16 ? 10 * 1000 : 50 * 1000};
        nanosleep(&ts, NULL);
    }
}

typedef struct key {
    double time;
    int32_t source;
    uint32_t seq;
} key;

static int key_less(key a, key b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.source != b.source) return a.source < b.source;
    return a.seq < b.seq;
}

/* ---- shared state ---------------------------------------------------------------- */

typedef struct {
    seer_queue *q;
    int P, C, E;
    int64_t per_producer;
    uint32_t capacity;
    uint64_t seed;
    int round;

    /* low[p]: producer p will never again push a time below this. */
    _Atomic double *low;
    /* Per entity, touched only by its holder (no atomics on purpose). */
    key *last;          /* [E] last popped key                      */
    uint8_t *has_last;  /* [E]                                      */
    uint32_t *expect;   /* [E * P] next seq expected from producer p */
    /* Per producer, touched only by that producer. */
    uint32_t *pushed;   /* [P * E] events pushed per (p, e)          */
    /* Relaxed atomics: counters only, they order nothing. */
    _Atomic int *holder;  /* [E] */
    _Atomic int64_t popped_total;
    _Atomic int64_t pushed_total;
    _Atomic int64_t full_retries;
    _Atomic int64_t pops;
    _Atomic int64_t empty_pops;
    _Atomic int64_t lowered_horizons;
    _Atomic int64_t double_holds;
    _Atomic int64_t max_pending;
} shared;

typedef struct {
    shared *S;
    int id;
} thread_arg;

static double min_low(shared *S) {
    double m = INFINITY;
    for (int p = 0; p < S->P; p++) {
        /* acquire: pairs with the producer's release store of low[p], so its
         * pushes of every event below that value happen-before our pop. */
        double v = atomic_load_explicit(&S->low[p], memory_order_acquire);
        if (v < m) m = v;
    }
    return m;
}

static void swap_event(int32_t *ents, double *times, int32_t *kinds, int64_t *pays, uint32_t *seqs, int i, int j) {
    int32_t e = ents[i], k = kinds[i];
    double t = times[i];
    int64_t pl = pays[i];
    uint32_t s = seqs[i];
    ents[i] = ents[j], kinds[i] = kinds[j], times[i] = times[j], pays[i] = pays[j], seqs[i] = seqs[j];
    ents[j] = e, kinds[j] = k, times[j] = t, pays[j] = pl, seqs[j] = s;
}

/* ---- producers ----------------------------------------------------------------------- */

static void *producer(void *argp) {
    thread_arg *a = argp;
    shared *S = a->S;
    const int p = a->id;
    uint64_t rng = S->seed * 0x100000001B3ull + 77 + (uint64_t)p * 1315423911ull + (uint64_t)S->round;
    if (!rng) rng = 1;
    int32_t ents[MAX_BATCH], kinds[MAX_BATCH], srcs[MAX_BATCH];
    double times[MAX_BATCH];
    int64_t pays[MAX_BATCH];
    uint32_t seqs[MAX_BATCH];
    double *last_time = calloc((size_t)S->E, sizeof(double)); /* per (p, e), times start at 0 */
    uint32_t *seq = &S->pushed[(size_t)p * S->E];
    static const double offsets[8] = {0.0, 0.0, 0.0, 0.25, 0.5, 0.5, 1.0, MAX_OFFSET};
    double clock = 0.0;
    int64_t sent = 0, retries = 0;
    int32_t prev_e = 0;
    while (sent < S->per_producer) {
        /* Stay within LEAD of the slowest producer (see the header). */
        for (unsigned w = 0; clock >= min_low(S) + LEAD; w++) pause_a_little(w);
        int64_t left = S->per_producer - sent;
        /* Half the batches are big enough that push_many groups them by
         * entity (at least 256 events, and entities <= 4 * events). */
        int n = 1 + (int)(rng_next(&rng) % ((rng & 1) ? 256 : MAX_BATCH));
        if (n > left) n = (int)left;
        for (int i = 0; i < n; i++) {
            uint64_t r = rng_next(&rng);
            int32_t e;
            if (i > 0 && (r & 1)) e = prev_e; /* runs: one chain, one CAS */
            else if ((r & 6) == 0) e = (int32_t)((r >> 8) % (S->E < 8 ? S->E : 8)); /* hot lanes */
            else e = (int32_t)((r >> 8) % (uint64_t)S->E);
            prev_e = e;
            double t = clock + offsets[(r >> 40) & 7];
            if (t < last_time[e]) t = last_time[e]; /* non-decreasing per (p, e) */
            last_time[e] = t;
            uint32_t s = seq[e]++;
            ents[i] = e;
            times[i] = t;
            srcs[i] = p;
            seqs[i] = s;
            kinds[i] = kind_of(p, s);
            pays[i] = canary(p, e, s, t);
        }
        /* Push order need not be seq order: the queue must sort by (time,
         * source, seq).  Half the batches are reversed or shuffled, so equal
         * (time, source) events arrive with their seqs out of order. */
        uint64_t how = rng_next(&rng) & 3;
        if (how == 0) {
            for (int i = 0, j = n - 1; i < j; i++, j--) swap_event(ents, times, kinds, pays, seqs, i, j);
        } else if (how == 1) {
            for (int i = n - 1; i > 0; i--) {
                int j = (int)(rng_next(&rng) % (uint64_t)(i + 1));
                swap_event(ents, times, kinds, pays, seqs, i, j);
            }
        }
        for (unsigned tries = 0;;) {
            int64_t bad = 12345;
            int rc = seer_queue_push_many(S->q, ents, times, kinds, pays, srcs, seqs, n, &bad);
            if (rc == SEER_OK) break;
            CHECK(rc == SEER_E_FULL, "push_many: unexpected status %d at index %lld (producer %d)", rc,
                  (long long)bad, p);
            CHECK(bad == -1, "push_many: SEER_E_FULL must set bad_index to -1, got %lld", (long long)bad);
            /* Let the consumers free some nodes: yield, and on an
             * oversubscribed machine sleep a little after a few tries. */
            retries++;
            pause_a_little(tries++);
        }
        sent += n;
        atomic_fetch_add_explicit(&S->pushed_total, n, memory_order_relaxed);
        int64_t pend = seer_queue_len(S->q);
        CHECK(pend >= 0 && pend <= (int64_t)S->capacity, "seer_queue_len=%lld outside [0, %u]",
              (long long)pend, S->capacity);
        int64_t mp = atomic_load_explicit(&S->max_pending, memory_order_relaxed);
        while (pend > mp && !atomic_compare_exchange_weak_explicit(&S->max_pending, &mp, pend,
                                                                    memory_order_relaxed, memory_order_relaxed)) {
        }
        clock += (rng_next(&rng) & 3) ? 1.0 : 0.5;
        /* release: every event pushed above (all below the new clock) is
         * visible to a consumer whose acquire load sees this value. */
        atomic_store_explicit(&S->low[p], sent == S->per_producer ? INFINITY : clock, memory_order_release);
    }
    atomic_store_explicit(&S->low[p], INFINITY, memory_order_release);
    atomic_fetch_add_explicit(&S->full_retries, retries, memory_order_relaxed);
    free(last_time);
    return NULL;
}

/* ---- consumers ------------------------------------------------------------------------ */

/* Claim-side checks of one popped batch (the caller holds its entities). */
static void check_batch(shared *S, const seer_event *buf, int64_t n, double horizon, int64_t max_events,
                        int32_t per_entity, uint64_t *stamp, uint64_t pop_id, int cid) {
    CHECK(n >= 0 && n <= max_events, "pop returned %lld events for max_events=%lld", (long long)n,
          (long long)max_events);
    int64_t i = 0;
    while (i < n) {
        int32_t e = buf[i].entity;
        CHECK(e >= 0 && e < S->E, "popped entity %d out of range [0, %d)", e, S->E);
        CHECK(stamp[e] != pop_id, "grouping: entity %d appears in two groups of one batch (consumer %d)", e, cid);
        stamp[e] = pop_id;
        /* One holder: 0 -> 1 exactly.  Relaxed on purpose (see the header). */
        int h = atomic_fetch_add_explicit(&S->holder[e], 1, memory_order_relaxed);
        CHECK(h == 0, "two holders: entity %d popped by consumer %d while held (holder count was %d)", e, cid, h);
        CHECK(seer_queue_is_claimed(S->q, e), "entity %d returned by a pop but not claimed", e);
        int64_t g = i;
        for (; i < n && buf[i].entity == e; i++) {
            const seer_event *ev = &buf[i];
            CHECK(ev->time < horizon, "horizon: entity %d event at time %.17g returned for horizon %.17g", e,
                  ev->time, horizon);
            int32_t p = ev->source;
            CHECK(p >= 0 && p < S->P, "canary: entity %d event has source %d outside [0, %d)", e, p, S->P);
            CHECK(ev->payload == canary(p, e, ev->seq, ev->time),
                  "canary: entity %d source %d seq %u time %.17g has payload %lld, expected %lld", e, p, ev->seq,
                  ev->time, (long long)ev->payload, (long long)canary(p, e, ev->seq, ev->time));
            CHECK(ev->kind == kind_of(p, ev->seq), "canary: entity %d source %d seq %u has kind %d, expected %d",
                  e, p, ev->seq, ev->kind, kind_of(p, ev->seq));
            uint32_t *want = &S->expect[(size_t)e * S->P + p];
            CHECK(ev->seq >= *want, "duplicate: entity %d source %d seq %u popped again (next expected %u)", e, p,
                  ev->seq, *want);
            CHECK(ev->seq == *want, "loss: entity %d source %d popped seq %u but seq %u was never popped", e, p,
                  ev->seq, *want);
            (*want)++;
            key k = {ev->time, p, ev->seq};
            if (S->has_last[e])
                CHECK(key_less(S->last[e], k),
                      "order: entity %d popped (%.17g, %d, %u) after (%.17g, %d, %u)", e, k.time, k.source, k.seq,
                      S->last[e].time, S->last[e].source, S->last[e].seq);
            S->last[e] = k;
            S->has_last[e] = 1;
        }
        CHECK(per_entity <= 0 || i - g <= per_entity, "per_entity: entity %d got %lld events for per_entity=%d", e,
              (long long)(i - g), per_entity);
    }
}

/* Drop the holder marks, then release the batch's entities. */
static void release_batch(shared *S, const seer_event *buf, int64_t n, uint64_t *rng, int cid) {
    int32_t ents[MAX_POP];
    int64_t m = 0;
    int as_is = (int)(rng_next(rng) & 1); /* the entity column as is, repeats and all */
    for (int64_t i = 0; i < n; i++) {
        int32_t e = buf[i].entity;
        if (i == 0 || buf[i - 1].entity != e) {
            int h = atomic_fetch_sub_explicit(&S->holder[e], 1, memory_order_relaxed);
            CHECK(h == 1, "two holders: entity %d released by consumer %d with holder count %d", e, cid, h);
            ents[m++] = e;
        } else if (as_is) {
            ents[m++] = e;
        }
    }
    int64_t bad = 12345;
    int rc = seer_queue_release(S->q, ents, m, &bad);
    CHECK(rc == SEER_OK, "release of %lld held entities failed with status %d at index %lld (consumer %d)",
          (long long)m, rc, (long long)bad, cid);
    CHECK(bad == -1, "release succeeded but set bad_index=%lld", (long long)bad);
}

static void *consumer(void *argp) {
    thread_arg *a = argp;
    shared *S = a->S;
    const int cid = a->id;
    const int64_t total = (int64_t)S->P * S->per_producer;
    uint64_t rng = S->seed * 0x9E3779B97F4A7C15ull + 12345 + (uint64_t)cid * 2654435761ull + (uint64_t)S->round;
    if (!rng) rng = 1;
    seer_event *buf = malloc(sizeof(seer_event) * MAX_POP);
    seer_event *buf2 = malloc(sizeof(seer_event) * MAX_POP);
    uint64_t *stamp = calloc((size_t)S->E, sizeof(uint64_t));
    static const int64_t maxes[4] = {1, 7, 64, MAX_POP};
    static const int32_t pers[4] = {0, 1, 4, 16};
    uint64_t pop_id = 0;
    int64_t pops = 0, empty = 0, lowered = 0, doubles = 0;
    unsigned idle = 0;
    while (atomic_load_explicit(&S->popped_total, memory_order_relaxed) < total) {
        uint64_t r = rng_next(&rng);
        double horizon = min_low(S); /* +inf once every producer is done */
        if ((r & 7) == 0 && isfinite(horizon)) {
            horizon -= 1.0; /* an older horizon: lanes in [h - 1, h) are dequeued and put back */
            lowered++;
        } else if ((r & 63) == 1) {
            horizon = -INFINITY; /* nothing is before -inf */
        }
        int64_t mx = maxes[(r >> 8) & 3];
        int32_t pe = pers[(r >> 10) & 3];
        int64_t n = seer_queue_pop(S->q, horizon, buf, mx, pe);
        pops++;
        if (n == 0) {
            empty++;
            pause_a_little(idle++);
            continue;
        }
        idle = 0;
        check_batch(S, buf, n, horizon, mx, pe, stamp, ++pop_id, cid);
        int64_t n2 = 0;
        if (((r >> 16) & 7) == 0) {
            /* Keep holding the first batch and pop again: the second batch
             * must not contain anything we hold (the holder counter would go
             * 1 -> 2). */
            n2 = seer_queue_pop(S->q, horizon, buf2, MAX_POP, 0);
            pops++;
            if (n2) {
                doubles++;
                check_batch(S, buf2, n2, horizon, MAX_POP, 0, stamp, ++pop_id, cid);
            }
        }
        release_batch(S, buf, n, &rng, cid);
        if (n2) release_batch(S, buf2, n2, &rng, cid);
        atomic_fetch_add_explicit(&S->popped_total, n + n2, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&S->pops, pops, memory_order_relaxed);
    atomic_fetch_add_explicit(&S->empty_pops, empty, memory_order_relaxed);
    atomic_fetch_add_explicit(&S->lowered_horizons, lowered, memory_order_relaxed);
    atomic_fetch_add_explicit(&S->double_holds, doubles, memory_order_relaxed);
    free(buf);
    free(buf2);
    free(stamp);
    return NULL;
}

/* ---- single-threaded checks ---------------------------------------------------------------- */

/* After a round: everything popped, nothing held, nothing leaked. */
static void check_quiescent(shared *S) {
    seer_queue *q = S->q;
    int64_t total = (int64_t)S->P * S->per_producer;
    CHECK(atomic_load(&S->popped_total) == total, "loss: popped %lld of %lld events",
          (long long)atomic_load(&S->popped_total), (long long)total);
    CHECK(seer_queue_len(q) == 0, "seer_queue_len=%lld at the end of a round, expected 0", (long long)seer_queue_len(q));
    CHECK(isinf(seer_queue_min_time(q)) && seer_queue_min_time(q) > 0,
          "seer_queue_min_time=%.17g at the end of a round, expected +inf", seer_queue_min_time(q));
    for (int e = 0; e < S->E; e++) {
        CHECK(atomic_load(&S->holder[e]) == 0, "entity %d still has holder count %d", e, atomic_load(&S->holder[e]));
        CHECK(!seer_queue_is_claimed(q, e), "entity %d still claimed at the end of a round", e);
        for (int p = 0; p < S->P; p++) {
            uint32_t got = S->expect[(size_t)e * S->P + p], put = S->pushed[(size_t)p * S->E + e];
            CHECK(got == put, "loss: entity %d source %d: %u pushed, %u popped", e, p, put, got);
        }
        double fl = seer_queue_floor(q, e);
        if (S->has_last[e])
            CHECK(fl == S->last[e].time, "floor of entity %d is %.17g, last popped time %.17g", e, fl,
                  S->last[e].time);
        else
            CHECK(isinf(fl) && fl < 0, "floor of entity %d is %.17g before any pop, expected -inf", e, fl);
    }
    /* The whole pool is free again: capacity events fit, one more does not. */
    uint32_t cap = S->capacity;
    int32_t *ents = malloc(sizeof(int32_t) * ((size_t)cap + 1));
    int32_t *kinds = calloc((size_t)cap + 1, sizeof(int32_t));
    double *times = malloc(sizeof(double) * ((size_t)cap + 1));
    for (uint32_t i = 0; i <= cap; i++) {
        ents[i] = (int32_t)(i % (uint32_t)S->E);
        times[i] = 1e9 + i;
    }
    int64_t bad = 0;
    int rc = seer_queue_push_many(q, ents, times, kinds, NULL, NULL, NULL, (int64_t)cap + 1, &bad);
    CHECK(rc == SEER_E_FULL && bad == -1, "pushing capacity+1=%u events: status %d bad_index %lld, expected SEER_E_FULL",
          cap + 1, rc, (long long)bad);
    CHECK(seer_queue_len(q) == 0, "failed push changed seer_queue_len to %lld", (long long)seer_queue_len(q));
    rc = seer_queue_push_many(q, ents, times, kinds, NULL, NULL, NULL, cap, &bad);
    CHECK(rc == SEER_OK, "leak: pushing capacity=%u events into an empty queue gave status %d", cap, rc);
    CHECK(seer_queue_len(q) == (int64_t)cap, "seer_queue_len=%lld after pushing %u", (long long)seer_queue_len(q), cap);
    CHECK(seer_queue_min_time(q) == 1e9, "seer_queue_min_time=%.17g, expected 1e9", seer_queue_min_time(q));
    rc = seer_queue_push_many(q, ents, times, kinds, NULL, NULL, NULL, 1, &bad);
    CHECK(rc == SEER_E_FULL, "push into a full pool gave status %d, expected SEER_E_FULL", rc);
    free(ents);
    free(kinds);
    free(times);
    seer_queue_clear(q);
}

/* seer_queue_clear with events pending and entities held, and error codes. */
static void check_clear_and_errors(seer_queue *q, int E) {
    int32_t ents[8] = {0, 0, 1, 2, 2, 2, 3 % E, 1};
    double times[8] = {5.0, 1.0, 2.0, 3.0, 3.0, 0.5, 4.0, 9.0};
    int32_t kinds[8] = {0};
    int64_t bad = 0;
    int rc = seer_queue_push_many(q, ents, times, kinds, NULL, NULL, NULL, 8, &bad);
    CHECK(rc == SEER_OK, "clear check: push gave %d", rc);
    CHECK(seer_queue_len(q) == 8, "clear check: len %lld, expected 8", (long long)seer_queue_len(q));
    CHECK(seer_queue_min_time(q) == 0.5, "clear check: min_time %.17g, expected 0.5", seer_queue_min_time(q));
    seer_event out[16];
    int64_t n = seer_queue_pop(q, 4.0, out, 16, 0);
    CHECK(n >= 4, "clear check: pop before 4.0 returned %lld events", (long long)n);
    for (int64_t i = 0; i < n; i++) CHECK(out[i].time < 4.0, "clear check: time %.17g >= horizon 4", out[i].time);
    CHECK(seer_queue_is_claimed(q, 0), "clear check: entity 0 not claimed after pop");
    /* Error codes, each leaving the queue as it was. */
    int64_t len0 = seer_queue_len(q);
    int32_t bad_ent[2] = {0, E};
    double ok_times[2] = {10.0, 10.0};
    rc = seer_queue_push_many(q, bad_ent, ok_times, kinds, NULL, NULL, NULL, 2, &bad);
    CHECK(rc == SEER_E_ENTITY && bad == 1, "entity %d: status %d index %lld, expected SEER_E_ENTITY at 1", E, rc,
          (long long)bad);
    int32_t good_ent[2] = {0, 1}, bad_kind[2] = {0, NUM_KINDS};
    rc = seer_queue_push_many(q, good_ent, ok_times, bad_kind, NULL, NULL, NULL, 2, &bad);
    CHECK(rc == SEER_E_KIND && bad == 1, "kind %d: status %d index %lld, expected SEER_E_KIND", NUM_KINDS, rc,
          (long long)bad);
    double nan_times[2] = {10.0, NAN}, inf_times[2] = {INFINITY, 10.0};
    rc = seer_queue_push_many(q, good_ent, nan_times, kinds, NULL, NULL, NULL, 2, &bad);
    CHECK(rc == SEER_E_TIME && bad == 1, "NaN time: status %d index %lld, expected SEER_E_TIME", rc, (long long)bad);
    rc = seer_queue_push_many(q, good_ent, inf_times, kinds, NULL, NULL, NULL, 2, &bad);
    CHECK(rc == SEER_E_TIME && bad == 0, "inf time: status %d index %lld, expected SEER_E_TIME", rc, (long long)bad);
    double past_times[2] = {10.0, 0.25}; /* entity 1 was handed 2.0 */
    rc = seer_queue_push_many(q, good_ent, past_times, kinds, NULL, NULL, NULL, 2, &bad);
    CHECK(rc == SEER_E_PAST && bad == 1, "past time: status %d index %lld, expected SEER_E_PAST", rc, (long long)bad);
    CHECK(seer_queue_len(q) == len0, "a failed push changed seer_queue_len from %lld to %lld", (long long)len0,
          (long long)seer_queue_len(q));
    int32_t not_held[1] = {E - 1 > 3 ? E - 1 : 3 % E};
    if (!seer_queue_is_claimed(q, not_held[0])) {
        rc = seer_queue_release(q, not_held, 1, &bad);
        CHECK(rc == SEER_E_NOT_CLAIMED && bad == 0, "release of unclaimed entity: status %d", rc);
    }
    int32_t out_of_range[1] = {-1};
    rc = seer_queue_release(q, out_of_range, 1, &bad);
    CHECK(rc == SEER_E_ENTITY && bad == 0, "release of entity -1: status %d", rc);

    seer_queue_clear(q);
    CHECK(seer_queue_len(q) == 0, "after clear: len %lld", (long long)seer_queue_len(q));
    CHECK(isinf(seer_queue_min_time(q)) && seer_queue_min_time(q) > 0, "after clear: min_time %.17g",
          seer_queue_min_time(q));
    for (int e = 0; e < E; e++) {
        CHECK(!seer_queue_is_claimed(q, e), "after clear: entity %d still claimed", e);
        CHECK(isinf(seer_queue_floor(q, e)) && seer_queue_floor(q, e) < 0, "after clear: floor of %d is %.17g", e,
              seer_queue_floor(q, e));
    }
    int32_t zero[1] = {0};
    rc = seer_queue_release(q, zero, 1, &bad);
    CHECK(rc == SEER_E_NOT_CLAIMED, "after clear: releasing a formerly held entity gave %d", rc);
    CHECK(seer_queue_pop(q, INFINITY, out, 16, 0) == 0, "after clear: pop returned events");
    /* Floors were reset: an earlier time than was handed before is fine now. */
    double early[2] = {0.125, 0.0};
    int32_t two[2] = {1, 1};
    rc = seer_queue_push_many(q, two, early, kinds, NULL, NULL, NULL, 2, &bad);
    CHECK(rc == SEER_OK, "after clear: push at time 0.125 gave %d", rc);
    n = seer_queue_pop(q, INFINITY, out, 16, 0);
    CHECK(n == 2 && out[0].time == 0.0 && out[1].time == 0.125 && out[0].entity == 1,
          "after clear: pop returned %lld events, expected entity 1 at 0 then 0.125", (long long)n);
    /* Pushed as (0.125, 0.0): numbered in push order from one counter. */
    CHECK(out[0].source == -1 && out[1].source == -1 && out[0].seq == out[1].seq + 1,
          "external events: sources %d %d seqs %u %u", out[0].source, out[1].source, out[0].seq, out[1].seq);
    rc = seer_queue_release(q, two, 2, &bad);
    CHECK(rc == SEER_OK, "after clear: release gave %d", rc);
    CHECK(seer_queue_len(q) == 0 && isinf(seer_queue_min_time(q)), "after clear: queue not empty at the end");
    seer_queue_clear(q);
}

/* seer_queue_claim_range_flat (no branch per lane) against
 * seer_queue_claim_range_private on twin queues: the same lanes claimed, in
 * the same order, the same earliest key left, lanes already claimed left
 * alone, over random ranges and horizons. */
static void check_claim_flat(int E, uint64_t seed) {
    seer_queue *a = seer_queue_new(E, NUM_KINDS, (uint32_t)(4 * E + 16));
    seer_queue *b = seer_queue_new(E, NUM_KINDS, (uint32_t)(4 * E + 16));
    CHECK(a && b, "claim check: seer_queue_new(%d) failed", E);
    uint64_t rng = seed | 1;
    int32_t *ents = malloc(sizeof(int32_t) * (size_t)E * 2), *kinds = calloc((size_t)E * 2, sizeof(int32_t));
    double *times = malloc(sizeof(double) * (size_t)E * 2);
    uint32_t *oa = malloc(sizeof(uint32_t) * (size_t)E), *ob = malloc(sizeof(uint32_t) * (size_t)E);
    CHECK(ents && kinds && times && oa && ob, "claim check: out of memory");
    int64_t n = 0, bad = 0;
    for (int e = 0; e < E; e++)
        for (int k = (int)(rng_next(&rng) % 3); k > 0; k--) { /* 0, 1 or 2 events */
            ents[n] = e;
            times[n++] = (double)(rng_next(&rng) % 64) * 0.25;
        }
    CHECK(seer_queue_push_many(a, ents, times, kinds, NULL, NULL, NULL, n, &bad) == SEER_OK &&
              seer_queue_push_many(b, ents, times, kinds, NULL, NULL, NULL, n, &bad) == SEER_OK,
          "claim check: push failed");
    for (int round = 0; round < 64; round++) {
        const int32_t lo = (int32_t)(rng_next(&rng) % (uint64_t)E);
        const int32_t hi = lo + (int32_t)(rng_next(&rng) % (uint64_t)(E - lo + 1));
        const double t = (double)(rng_next(&rng) % 72) * 0.25;
        uint64_t ra = 0, rb = 0;
        const int32_t na = seer_queue_claim_range_private(a, t, lo, hi, oa, &ra);
        const int32_t nb = seer_queue_claim_range_flat(b, t, lo, hi, ob, &rb);
        CHECK(na == nb && ra == rb, "claim check: [%d, %d) before %g: %d lanes, rest %llx (private) against %d, %llx",
              lo, hi, t, na, (unsigned long long)ra, nb, (unsigned long long)rb);
        for (int32_t i = 0; i < na; i++) CHECK(oa[i] == ob[i], "claim check: lane %d: %u against %u", i, oa[i], ob[i]);
        for (int e = 0; e < E; e++)
            CHECK(seer_queue_is_claimed(a, e) == seer_queue_is_claimed(b, e), "claim check: lane %d claimed apart", e);
        /* give back some (the rest stay claimed into the next round) */
        for (int32_t i = 0; i < na; i++)
            if (rng_next(&rng) & 1) {
                CHECK(seer_queue_unclaim_private(a, oa[i]) == seer_queue_unclaim_private(b, ob[i]),
                      "claim check: unclaim of lane %u apart", oa[i]);
            }
    }
    seer_queue_free(a);
    seer_queue_free(b);
    free(ents);
    free(kinds);
    free(times);
    free(oa);
    free(ob);
}

/* ---- main ----------------------------------------------------------------------------------- */

static long long arg(int argc, char **argv, int i, long long dflt) {
    if (argc <= i) return dflt;
    char *end;
    long long v = strtoll(argv[i], &end, 10);
    if (*end || v < 0) {
        fprintf(stderr, "stress_queue: bad argument %d: '%s'\n", i, argv[i]);
        exit(2);
    }
    return v;
}

int main(int argc, char **argv) {
    if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        printf("usage: %s [producers consumers entities events_per_producer [capacity [rounds [seed]]]]\n", argv[0]);
        return 0;
    }
    int P = (int)arg(argc, argv, 1, 3);
    int C = (int)arg(argc, argv, 2, 3);
    int E = (int)arg(argc, argv, 3, 509);
    int64_t N = arg(argc, argv, 4, 1000000);
    long long cap_arg = arg(argc, argv, 5, 0);
    int rounds = (int)arg(argc, argv, 6, 2);
    uint64_t seed = (uint64_t)arg(argc, argv, 7, (long long)time(NULL) ^ ((long long)getpid() << 16));
    g_seed = (unsigned long long)seed;
    if (P < 1 || C < 1 || E < 4 || N < 1 || rounds < 1 || N > UINT32_MAX) {
        fprintf(stderr, "stress_queue: need producers, consumers, events, rounds >= 1 and entities >= 4\n");
        return 2;
    }
    /* The smallest pool that cannot deadlock under the protocol above: the
     * events at or past the horizon, plus one batch in flight per producer. */
    uint64_t need = (uint64_t)P * MAX_BATCH * (uint64_t)(LEAD / 0.5 + MAX_OFFSET / 0.5 + 2) + (uint64_t)P * MAX_BATCH;
    uint64_t cap = cap_arg ? (uint64_t)cap_arg : need + need / 4;
    if (cap < need) {
        printf("stress_queue: capacity %llu raised to %llu, the least this protocol needs\n",
               (unsigned long long)cap, (unsigned long long)need);
        cap = need;
    }
    if (cap > (1u << 31)) cap = 1u << 31;

    seer_queue *q = seer_queue_new(E, NUM_KINDS, (uint32_t)cap);
    CHECK(q, "seer_queue_new(%d, %d, %llu) returned NULL", E, NUM_KINDS, (unsigned long long)cap);
    CHECK(seer_queue_capacity(q) == cap && seer_queue_num_entities(q) == E && seer_queue_num_kinds(q) == NUM_KINDS,
          "queue reports the wrong sizes");
    CHECK(seer_queue_footprint(q) >= cap * sizeof(seer_event), "footprint %llu smaller than the pool",
          (unsigned long long)seer_queue_footprint(q));
    CHECK(seer_queue_len(q) == 0 && isinf(seer_queue_min_time(q)), "a new queue is not empty");

    shared S;
    memset(&S, 0, sizeof S);
    S.q = q;
    S.P = P;
    S.C = C;
    S.E = E;
    S.per_producer = N;
    S.capacity = (uint32_t)cap;
    S.seed = seed;
    S.low = calloc((size_t)P, sizeof(_Atomic double));
    S.last = calloc((size_t)E, sizeof(key));
    S.has_last = calloc((size_t)E, 1);
    S.expect = calloc((size_t)E * P, sizeof(uint32_t));
    S.pushed = calloc((size_t)E * P, sizeof(uint32_t));
    S.holder = calloc((size_t)E, sizeof(_Atomic int));
    pthread_t *th = malloc(sizeof(pthread_t) * (size_t)(P + C));
    thread_arg *args = malloc(sizeof(thread_arg) * (size_t)(P + C));

    int64_t events = 0, pops = 0, empty = 0, retries = 0, lowered = 0, doubles = 0, max_pending = 0;
    double t0 = now_s(), stall_limit = 30.0;
    for (int round = 0; round < rounds; round++) {
        S.round = round;
        for (int p = 0; p < P; p++) atomic_init(&S.low[p], 0.0);
        for (int e = 0; e < E; e++) atomic_init(&S.holder[e], 0);
        memset(S.last, 0, sizeof(key) * (size_t)E);
        memset(S.has_last, 0, (size_t)E);
        memset(S.expect, 0, sizeof(uint32_t) * (size_t)E * P);
        memset(S.pushed, 0, sizeof(uint32_t) * (size_t)E * P);
        atomic_init(&S.popped_total, 0);
        atomic_init(&S.pushed_total, 0);
        atomic_init(&S.full_retries, 0);
        atomic_init(&S.pops, 0);
        atomic_init(&S.empty_pops, 0);
        atomic_init(&S.lowered_horizons, 0);
        atomic_init(&S.double_holds, 0);
        atomic_init(&S.max_pending, 0);
        for (int i = 0; i < P + C; i++) {
            args[i].S = &S;
            args[i].id = i < P ? i : i - P;
            CHECK(pthread_create(&th[i], NULL, i < P ? producer : consumer, &args[i]) == 0, "pthread_create");
        }
        /* Watchdog: a lost event or a leaked node shows up as a stall. */
        int64_t last_progress = -1;
        double last_change = now_s();
        for (;;) {
            int64_t done = atomic_load_explicit(&S.popped_total, memory_order_relaxed);
            int64_t progress = done + atomic_load_explicit(&S.pushed_total, memory_order_relaxed);
            if (done >= (int64_t)P * N) break;
            int64_t pushed = atomic_load_explicit(&S.pushed_total, memory_order_relaxed);
            if (pushed == (int64_t)P * N && seer_queue_len(q) == 0 && progress == last_progress &&
                now_s() - last_change > 2.0) {
                /* Every event pushed, none pending, nothing popped for a while. */
                fail("loss: round %d: all %lld events pushed, seer_queue_len=0, but only %lld popped", round,
                     (long long)pushed, (long long)done);
            }
            if (progress != last_progress) {
                last_progress = progress;
                last_change = now_s();
            } else if (now_s() - last_change > stall_limit) {
                fail("stall: no progress for %.0f s in round %d: pushed %lld, popped %lld of %lld, "
                     "seer_queue_len=%lld, min_time=%.17g (lost events or leaked pool nodes)",
                     stall_limit, round, (long long)atomic_load(&S.pushed_total), (long long)done,
                     (long long)P * N, (long long)seer_queue_len(q), seer_queue_min_time(q));
            }
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        for (int i = 0; i < P + C; i++) pthread_join(th[i], NULL);
        check_quiescent(&S); /* ends with seer_queue_clear */
        events += atomic_load(&S.popped_total);
        pops += atomic_load(&S.pops);
        empty += atomic_load(&S.empty_pops);
        retries += atomic_load(&S.full_retries);
        lowered += atomic_load(&S.lowered_horizons);
        doubles += atomic_load(&S.double_holds);
        if (atomic_load(&S.max_pending) > max_pending) max_pending = atomic_load(&S.max_pending);
        if (round == 0) check_clear_and_errors(q, E);
        if (round == 0) check_claim_flat(E, seed);
    }
    double dt = now_s() - t0;
    CHECK(seer_queue_len(q) == 0, "final seer_queue_len=%lld", (long long)seer_queue_len(q));
    CHECK(isinf(seer_queue_min_time(q)) && seer_queue_min_time(q) > 0, "final min_time %.17g", seer_queue_min_time(q));
    seer_queue_free(q);
    printf("stress_queue: OK events=%lld producers=%d consumers=%d entities=%d rounds=%d capacity=%llu "
           "full_retries=%lld max_pending=%lld pops=%lld empty_pops=%lld lowered_horizons=%lld double_holds=%lld "
           "seed=%llu time=%.2fs rate=%.2fM/s\n",
           (long long)events, P, C, E, rounds, (unsigned long long)cap, (long long)retries, (long long)max_pending,
           (long long)pops, (long long)empty, (long long)lowered, (long long)doubles, (unsigned long long)seed, dt,
           events / dt / 1e6);
    free(th);
    free(args);
    free((void *)S.low);
    free(S.last);
    free(S.has_last);
    free(S.expect);
    free(S.pushed);
    free((void *)S.holder);
    return 0;
}
