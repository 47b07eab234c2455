/* SEER's public C API: the types and constants (plain declarations, so that
 * cffi's cdef can read this file: seer.capi.cdef() hands it to a plug-in's build).
 * Include <seer/seer.h>, not this file. */
#ifndef SEER_SEER_TYPES_H
#define SEER_SEER_TYPES_H

#include <stdint.h>

/* The API's version.  A module built against another version is refused when
 * SEER loads it (seer.capi.Plugin), before any of its code runs. */
#define SEER_API_VERSION 1

/* Status codes (handlers, copy steps and the runtime return them). */
#define SEER_OK 0
#define SEER_E_ENTITY -1      /* entity outside 0..num_entities-1             */
#define SEER_E_KIND -2        /* kind outside 0..num_kinds-1                  */
#define SEER_E_TIME -3        /* NaN or infinite time                         */
#define SEER_E_PAST -4        /* time earlier than already handed to entity   */
#define SEER_E_FULL -5        /* event pool exhausted                         */
#define SEER_E_NOT_CLAIMED -6 /* release of an entity nobody holds            */
#define SEER_E_CAUSALITY -7   /* cross-entity event closer than the lookahead */
#define SEER_E_HANDLER -8     /* a handler reported failure                   */
#define SEER_E_NOMEM -9       /* an allocation failed (nothing was changed)   */
#define SEER_E_ARG -10        /* other bad argument                           */
#define SEER_E_CLOSED -11     /* the step was interrupted (close from another thread) */

/* One event.  Field order keeps it 32 bytes with no padding, so numpy views
 * an array of them as a structured array (seer.EVENT_DTYPE). */
typedef struct seer_event {
    double time;
    int64_t payload;
    int32_t entity;
    int32_t kind;
    int32_t source;   /* emitting entity, -1 for events pushed from outside */
    uint32_t seq;     /* per-source sequence number: the last tie-breaker   */
} seer_event;

typedef struct seer_runtime seer_runtime;
typedef struct seer_api seer_api;

/* What a handler sees: one per worker; entity and now describe the event
 * being handled, model is the model's own struct (Model.native_model). */
typedef struct seer_ctx {
    const seer_api *api;
    seer_runtime *rt;
    void *model;
    double now;
    double window_end;
    int32_t entity;
    int32_t worker;
} seer_ctx;

/* A native handler: 0, or non-zero to fail the step (HandlerError). */
typedef int (*seer_handler_fn)(seer_ctx *ctx, const seer_event *ev);

/* Every seer_runtime starts with its API table, so code given only a
 * runtime (a native copy stepping its own) reaches the API through it. */
typedef struct seer_runtime_head {
    const seer_api *api;
} seer_runtime_head;

/* One env copy's rows in seer.vector (already offset to its first row):
 * `slots` rows each, laid out as its seer.vector.NativeSpec declares. */
typedef struct seer_copy_rows {
    const seer_api *api;
    const void *act;  /* action rows (float32/float64 Box, int64 Discrete/MultiDiscrete) */
    void *obs;        /* observation rows                                */
    double *rew;
    uint8_t *term;
    uint8_t *trunc;
    uint8_t *mask;    /* the row acted in this step                      */
    uint8_t *alive;   /* the agent is live after the step                */
    uint8_t *ended;   /* one byte: the copy's episode ended in this step */
} seer_copy_rows;

/* Ops of a copy step (the payloads of seer.vector's events). */
#define SEER_COPY_STEP 1      /* act -> obs, rew, term, trunc, mask, alive, ended */
#define SEER_COPY_AUTORESET 2 /* reset with the env's next seed: obs and alive  */
/* A copy step may return this for an op it does not run natively
 * (e.g. AUTORESET): seer.vector then runs that op through Python. */
#define SEER_E_UNSUPPORTED -12

/* Runs op on one copy; SEER_OK or a SEER_E_* code. */
typedef int (*seer_copy_step_fn)(void *env, const seer_copy_rows *rows, int32_t op);

/* A slice of a parallel loop: run items [lo, hi) on pool worker `worker`. */
typedef void (*seer_range_fn)(void *arg, int64_t lo, int64_t hi, int32_t worker);

/* The function table: filled by SEER, reached through ctx->api, rows->api
 * or a runtime's head.  Entries are only ever appended (size grows). */
struct seer_api {
    uint32_t version;  /* SEER_API_VERSION of the SEER that filled it */
    uint32_t size;     /* sizeof(seer_api) there                      */
    int (*emit)(seer_ctx *ctx, int32_t target, double time, int32_t kind, int64_t payload);
    uint64_t (*random_u64)(seer_ctx *ctx);
    double (*uniform)(seer_ctx *ctx);
    double (*counter_uniform)(uint64_t seed, int32_t entity, uint64_t counter);
    int (*rt_push)(seer_runtime *rt, int32_t entity, double time, int32_t kind, int64_t payload);
    int (*rt_step)(seer_runtime *rt, double horizon);
    void (*rt_reset)(seer_runtime *rt, uint64_t seed);
    int64_t (*rt_events_total)(const seer_runtime *rt);
    /* Appended after the first release (present when size covers them). */
    int (*rt_parallel_for)(seer_runtime *rt, int64_t n, int64_t grain, seer_range_fn fn, void *arg);
    int32_t (*rt_num_workers)(const seer_runtime *rt);
    int (*rt_relabel)(seer_runtime *rt, const int32_t *new_of_old);
    int (*rt_tiled_begin)(seer_runtime *rt, int32_t num_windows, const double *window_end);
    int (*rt_tiled_run)(seer_runtime *rt, int32_t window, const int32_t *entities, int32_t n);
    int (*rt_tiled_end)(seer_runtime *rt);
    int (*rt_parallel_for_begin)(seer_runtime *rt, int64_t n, int64_t grain, seer_range_fn fn, void *arg);
    int (*rt_parallel_for_end)(seer_runtime *rt);
    int (*rt_tiled_begin_pool)(seer_runtime *rt, int32_t num_windows, const double *window_end);
    int (*rt_tiled_run_on)(seer_runtime *rt, int32_t worker, int32_t window, const int32_t *entities, int32_t n);
};

#endif
