/* Validation program for close() from another thread, in C: the protocol
 * seer.Runtime follows (seer/runtime.py, seer/guard.py) around
 * seer_rt_interrupt, seer_rt_step, seer_rt_resize, the pool's stats and
 * seer_rt_free, without Python.
 *
 *   stress_close [rounds] [entities] [max_workers] [seed]
 *
 * Each round: a driver thread holds the runtime (a mutex, as CallGuard)
 * for each call and steps, turns the stats on and off and takes them,
 * resizes the pool, and resets after an interrupted step; an interrupter
 * thread calls seer_rt_interrupt at random moments (Runtime.interrupt());
 * a closer thread, at a random moment, marks the runtime closing,
 * interrupts it, takes the runtime once the driver lets go, stops the pool
 * and frees it (Runtime.close()).  Interrupts and the free take turns
 * through a second mutex (_Core.free_lock), as do interrupts and resets.
 * Checks: every step returns SEER_OK or SEER_E_CLOSED; a reset step runs;
 * the driver stops at its next call after the close; nothing hangs (the
 * script's timeout); under TSan no data race, under ASan no use after free.
 * Also: a handler that rewrites ctx->entity to an entity it does not run
 * gets SEER_E_ENTITY from seer_emit, and the step fails with it.
 * Prints "stress_close: OK ..." and exits 0, or names the broken invariant.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "seer_queue.h"
#include "seer_runtime.h"

#define TICK 0
#define MSG 1
#define DELAY 0.05

static _Atomic int failures;

#define CHECK(cond, ...)                                 \
    do {                                                 \
        if (!(cond)) {                                   \
            if (atomic_fetch_add(&failures, 1) < 5) {    \
                fprintf(stderr, "stress_close: FAIL: "); \
                fprintf(stderr, __VA_ARGS__);            \
                fprintf(stderr, "\n");                   \
            }                                            \
        }                                                \
    } while (0)

typedef struct model {
    int32_t n;
    int32_t forge; /* on_tick of entity 0 acts as entity 1 */
    _Atomic int forged_rc;
    double *value, *snap;
} model;

static int on_tick(seer_ctx *ctx, const seer_event *ev) {
    model *m = ctx->model;
    int32_t e = ev->entity;
    if (m->forge && e == 0 && ev->time > 0.2) {
        ctx->entity = 1;
        int rc = seer_emit(ctx, 1, ev->time + 1.0, MSG, 0);
        atomic_store(&m->forged_rc, rc);
        return rc;
    }
    m->value[e] += 0.5 * m->snap[(e + 1) % m->n];
    int32_t to = (int32_t)(seer_random_u64(ctx) % (uint64_t)m->n);
    if (seer_emit(ctx, to, ev->time + DELAY, MSG, e) != SEER_OK) return 1;
    return seer_emit(ctx, e, ev->time + 0.02, TICK, 0);
}

static int on_msg(seer_ctx *ctx, const seer_event *ev) {
    model *m = ctx->model;
    m->value[ev->entity] = m->value[ev->entity] * 0.5 + (double)ev->payload;
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

/* One runtime's life: what seer.Runtime keeps beside the C struct. */
typedef struct life {
    seer_runtime *rt; /* NULL once freed (under free_lock)                 */
    seer_queue *q;
    model m;
    pthread_mutex_t guard;     /* one call at a time (CallGuard's lock)    */
    pthread_mutex_t free_lock; /* interrupts vs reset and free             */
    _Atomic int closing;       /* close() has begun (CallGuard.closing)    */
    _Atomic int done;          /* the driver has stopped                   */
    int32_t workers, max_workers;
    pthread_t threads[64];
    pool_arg args[64];
    uint64_t seed;
    int64_t steps_ok, steps_interrupted, resizes, closed_seen;
} life;

static uint64_t next_rand(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void sleep_us(long us) {
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static void start_pool(life *L) {
    for (int32_t w = 1; w < L->workers; w++) {
        L->args[w] = (pool_arg){L->rt, w};
        pthread_create(&L->threads[w], NULL, pool_main, &L->args[w]);
    }
}

static void stop_pool(life *L) {
    seer_rt_shutdown(L->rt);
    for (int32_t w = 1; w < L->workers; w++) pthread_join(L->threads[w], NULL);
}

static void interrupt(life *L) {
    pthread_mutex_lock(&L->free_lock);
    if (L->rt) seer_rt_interrupt(L->rt);
    pthread_mutex_unlock(&L->free_lock);
}

static void reset(life *L, uint64_t seed) {
    pthread_mutex_lock(&L->free_lock);
    seer_rt_reset(L->rt, seed);
    pthread_mutex_unlock(&L->free_lock);
    for (int32_t e = 0; e < L->m.n; e++) {
        double t = (e % 5) * 0.004;
        int32_t kind = TICK;
        int64_t bad;
        CHECK(seer_queue_push_many(L->q, &e, &t, &kind, NULL, NULL, NULL, 1, &bad) == SEER_OK, "initial push");
    }
}

static void *driver(void *p) {
    life *L = p;
    uint64_t r = L->seed | 1;
    double now = 0.0;
    int stats_on = 0;
    for (int64_t k = 0;; k++) {
        pthread_mutex_lock(&L->guard);
        if (atomic_load(&L->closing)) { /* ClosedError */
            pthread_mutex_unlock(&L->guard);
            L->closed_seen++;
            break;
        }
        const uint64_t op = next_rand(&r) % 8;
        if (op == 0) { /* resize() */
            stop_pool(L);
            int32_t w = 1 + (int32_t)(next_rand(&r) % (uint64_t)L->max_workers);
            CHECK(seer_rt_resize(L->rt, w, 20) == SEER_OK, "resize to %d failed", w);
            L->workers = w;
            start_pool(L);
            L->resizes++;
        } else if (op == 1) { /* a pool_stats() block starts or ends */
            if (stats_on) {
                seer_rt_stats st;
                for (int32_t w = 0; w < L->workers; w++) seer_rt_take_stats(L->rt, w, &st);
            }
            stats_on = !stats_on;
            seer_rt_set_stats(L->rt, stats_on);
        } else { /* step() */
            int rc = seer_rt_step(L->rt, now + 0.03);
            CHECK(rc == SEER_OK || rc == SEER_E_CLOSED, "step to %g returned %d", now + 0.03, rc);
            if (rc == SEER_OK) {
                now += 0.03;
                L->steps_ok++;
                if (stats_on) {
                    seer_rt_stats st;
                    seer_rt_take_stats(L->rt, 0, &st);
                    CHECK(st.steps >= 1, "worker 0 counted %lld steps", (long long)st.steps);
                }
            } else { /* interrupted: the runtime needs a reset */
                L->steps_interrupted++;
                reset(L, k);
                now = 0.0;
            }
        }
        pthread_mutex_unlock(&L->guard);
    }
    atomic_store(&L->done, 1);
    return NULL;
}

static void *interrupter(void *p) {
    life *L = p;
    uint64_t r = L->seed * 3 + 1;
    while (!atomic_load(&L->done)) {
        sleep_us(200 + (long)(next_rand(&r) % 3000));
        interrupt(L);
    }
    return NULL;
}

static void *closer(void *p) {
    life *L = p;
    uint64_t r = L->seed * 7 + 1;
    sleep_us((long)(next_rand(&r) % 40000));
    atomic_store(&L->closing, 1);
    if (pthread_mutex_trylock(&L->guard) != 0) {
        interrupt(L); /* the running call returns SEER_E_CLOSED soon */
        pthread_mutex_lock(&L->guard);
    }
    stop_pool(L);
    pthread_mutex_lock(&L->free_lock);
    seer_runtime *rt = L->rt;
    L->rt = NULL;
    seer_rt_free(rt);
    pthread_mutex_unlock(&L->free_lock);
    pthread_mutex_unlock(&L->guard);
    return NULL;
}

static void round_trip(int32_t n, int32_t max_workers, uint64_t seed, int64_t totals[4]) {
    life *L = calloc(1, sizeof *L);
    L->q = seer_queue_new(n, 2, (uint32_t)n * 64 + 4096);
    L->workers = 1 + (int32_t)(seed % (uint64_t)max_workers);
    L->max_workers = max_workers;
    L->rt = seer_rt_new(L->q, L->workers, DELAY, 20);
    if (!L->q || !L->rt) {
        fprintf(stderr, "stress_close: allocation failed\n");
        exit(2);
    }
    L->seed = seed;
    L->m.n = n;
    L->m.value = calloc((size_t)n, sizeof(double));
    L->m.snap = calloc((size_t)n, sizeof(double));
    pthread_mutex_init(&L->guard, NULL);
    pthread_mutex_init(&L->free_lock, NULL);
    seer_rt_set_handler(L->rt, TICK, on_tick);
    seer_rt_set_handler(L->rt, MSG, on_msg);
    seer_rt_set_model(L->rt, &L->m);
    seer_rt_add_snapshot(L->rt, L->m.value, L->m.snap, sizeof(double) * (size_t)n);
    reset(L, seed);
    start_pool(L);
    pthread_t d, i, c;
    pthread_create(&d, NULL, driver, L);
    pthread_create(&i, NULL, interrupter, L);
    pthread_create(&c, NULL, closer, L);
    pthread_join(c, NULL);
    pthread_join(d, NULL);
    pthread_join(i, NULL);
    CHECK(L->rt == NULL && L->closed_seen == 1, "the driver did not stop at its first call after close");
    totals[0] += L->steps_ok;
    totals[1] += L->steps_interrupted;
    totals[2] += L->resizes;
    totals[3] += 1;
    seer_queue_free(L->q);
    pthread_mutex_destroy(&L->guard);
    pthread_mutex_destroy(&L->free_lock);
    free(L->m.value);
    free(L->m.snap);
    free(L);
}

/* A handler acting as an entity it does not run: an error code, not
 * another worker's sequence counter. */
static void forged_entity(int32_t n, int32_t workers) {
    seer_queue *q = seer_queue_new(n, 2, (uint32_t)n * 64 + 4096);
    seer_runtime *rt = seer_rt_new(q, workers, DELAY, 20);
    model m = {.n = n, .forge = 1, .value = calloc((size_t)n, sizeof(double)),
               .snap = calloc((size_t)n, sizeof(double))};
    seer_rt_set_handler(rt, TICK, on_tick);
    seer_rt_set_handler(rt, MSG, on_msg);
    seer_rt_set_model(rt, &m);
    seer_rt_reset(rt, 1);
    for (int32_t e = 0; e < n; e++) {
        double t = 0.0;
        int32_t kind = TICK;
        int64_t bad;
        seer_queue_push_many(q, &e, &t, &kind, NULL, NULL, NULL, 1, &bad);
    }
    pthread_t threads[64];
    pool_arg args[64];
    for (int32_t w = 1; w < workers; w++) {
        args[w] = (pool_arg){rt, w};
        pthread_create(&threads[w], NULL, pool_main, &args[w]);
    }
    int rc = seer_rt_step(rt, 1.0);
    seer_error_info info;
    seer_rt_last_error(rt, &info);
    CHECK(atomic_load(&m.forged_rc) == SEER_E_ENTITY, "workers=%d: a forged emit returned %d", workers,
          atomic_load(&m.forged_rc));
    CHECK(rc == SEER_E_ENTITY && info.code == SEER_E_ENTITY && info.entity == 1,
          "workers=%d: the step returned %d (error %d at entity %d), expected SEER_E_ENTITY at entity 1", workers,
          rc, info.code, info.entity);
    seer_rt_shutdown(rt);
    for (int32_t w = 1; w < workers; w++) pthread_join(threads[w], NULL);
    seer_rt_free(rt);
    seer_queue_free(q);
    free(m.value);
    free(m.snap);
}

int main(int argc, char **argv) {
    int32_t rounds = argc > 1 ? atoi(argv[1]) : 40;
    int32_t n = argc > 2 ? atoi(argv[2]) : 64;
    int32_t max_workers = argc > 3 ? atoi(argv[3]) : 3;
    uint64_t seed = argc > 4 ? strtoull(argv[4], NULL, 10) : 12345;
    if (max_workers < 1 || max_workers > 64 || n < 2 || rounds < 1) {
        fprintf(stderr, "stress_close: bad arguments\n");
        return 2;
    }
    int64_t totals[4] = {0, 0, 0, 0};
    for (int32_t k = 0; k < rounds; k++) round_trip(n, max_workers, seed + (uint64_t)k * 0x9e3779b9u, totals);
    for (int32_t w = 1; w <= max_workers; w++) forged_entity(n, w);
    if (atomic_load(&failures)) return 1;
    printf("stress_close: OK rounds=%d entities=%d workers=1..%d steps=%lld interrupted=%lld resizes=%lld\n", rounds,
           n, max_workers, (long long)totals[0], (long long)totals[1], (long long)totals[2]);
    return 0;
}
