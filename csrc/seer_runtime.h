/* SEER runtime: bounded event streams run in conservative windows on a pool
 * of worker threads, in C.  Plain declarations, read by cffi's cdef. */
#ifndef SEER_RUNTIME_H
#define SEER_RUNTIME_H

#include <stdint.h>

#include "seer_queue.h"

/* seer_runtime, seer_ctx and seer_handler_fn: seer/seer_types.h. */

/* Python handlers are reached through one dispatch function that gets a
 * batch of events of one kind, at most one per entity. */
typedef int (*seer_dispatch_fn)(void *userdata, int32_t worker, int32_t kind, seer_event *events, int64_t n);

typedef struct seer_trace_event {
    int64_t start_ns;
    int64_t end_ns;
    double time;
    int32_t entity;
    int32_t kind;
    int32_t worker;
    int32_t window;
} seer_trace_event;

typedef struct seer_trace_window {
    int64_t start_ns;  /* window start, as seen by this worker */
    int64_t end_ns;    /* this worker reached the end barrier  */
    int64_t busy_ns;   /* inside handlers                      */
    int64_t python_ns; /* inside Python handlers (GIL held)    */
    int64_t events;
    int64_t empty_polls; /* looked for a ready entity and found none */
    double t0;         /* simulated window [t0, t1)            */
    double t1;
    int32_t window;
    int32_t worker;
} seer_trace_window;

typedef struct seer_error_info {
    int32_t code;
    int32_t worker;
    int32_t entity;
    int32_t kind;
    double time;
    int32_t target;       /* emit errors: destination entity; SEER_E_HANDLER: the handler's code (0: unknown) */
    int32_t target_kind;
    double target_time;
} seer_error_info;

/* Per-worker time accounting (seer_rt_set_stats(rt, 1); nanoseconds). */
typedef struct seer_rt_stats {
    int64_t steps;
    int64_t windows;
    int64_t step_ns;        /* inside seer_rt_step's run (worker 0: the step's wall time) */
    int64_t bookkeeping_ns; /* window decisions, snapshot copies, readying lanes */
    int64_t barrier_ns;     /* waiting for the others: at window barriers, or for a phase's last units */
    int64_t spin_ns;        /* spinning in waits before a wake-up or a sleep (in and between steps) */
    int64_t parks;          /* waits that slept on the futex */
} seer_rt_stats;

seer_runtime *seer_rt_new(seer_queue *q, int32_t num_workers, double lookahead, int32_t spin);
void seer_rt_free(seer_runtime *rt);
void seer_rt_set_handler(seer_runtime *rt, int32_t kind, seer_handler_fn fn);
void seer_rt_set_dispatch(seer_runtime *rt, seer_dispatch_fn fn, void *userdata);
void seer_rt_set_model(seer_runtime *rt, void *model);
/* Most entities one worker takes per round for Python handlers (1..256,
 * default 256): 1 spreads slow handlers (an env copy each) over the pool. */
void seer_rt_set_python_batch(seer_runtime *rt, int32_t n);
int seer_rt_add_snapshot(seer_runtime *rt, void *live, void *snapshot, uint64_t nbytes);
/* Debug mode for native handlers: n per-entity arrays (live[i]: num_entities
 * rows of row_bytes[i] bytes each; shadow[i]: as large, the runtime's to
 * write).  Native handlers then run one at a time, and a handler that
 * changed a row of an entity other than its event's fails the step with
 * SEER_RT_E_OTHER_ROW (seer_error_info: target = that entity, target_kind =
 * the array's index).  Each step starts by copying live to shadow.  n = 0
 * turns it off.  Between steps only; the arrays must outlive the setting.
 * SEER_E_ARG for n outside 0..64, a NULL array or a row of 0 bytes. */
int seer_rt_set_debug_rows(seer_runtime *rt, int32_t n, void *const *live, void *const *shadow,
                           const uint64_t *row_bytes);
#define SEER_RT_E_OTHER_ROW -13
void seer_rt_clear_snapshots(seer_runtime *rt);
/* Not thread-safe: empty the queue, reset counters and the random streams. */
void seer_rt_reset(seer_runtime *rt, uint64_t seed);
/* Between steps: rename the entities (see seer_rt_relabel in seer/seer.h). */
int seer_rt_relabel(seer_runtime *rt, const int32_t *new_of_old);
/* Run every window before horizon; the caller acts as worker 0. */
int seer_rt_step(seer_runtime *rt, double horizon);
/* A step run entity group by entity group, window by window (see
 * seer_rt_tiled_begin in seer/seer.h). */
int seer_rt_tiled_begin(seer_runtime *rt, int32_t num_windows, const double *window_end);
int seer_rt_tiled_run(seer_runtime *rt, int32_t window, const int32_t *entities, int32_t n);
int seer_rt_tiled_begin_pool(seer_runtime *rt, int32_t num_windows, const double *window_end);
int seer_rt_tiled_run_on(seer_runtime *rt, int32_t worker, int32_t window, const int32_t *entities, int32_t n);
int seer_rt_tiled_end(seer_runtime *rt);
/* Body of pool threads 1..num_workers-1; returns after seer_rt_shutdown. */
void seer_rt_worker_main(seer_runtime *rt, int32_t worker);
void seer_rt_shutdown(seer_runtime *rt);
/* Between steps, with no pool thread running (after seer_rt_shutdown and
 * joining them): a pool of num_workers from now on; the caller then starts
 * threads 1..num_workers-1 on seer_rt_worker_main.  The queue, the random
 * streams and the model stay as they are, so results do not change.
 * SEER_E_ARG for num_workers < 1 or a traced runtime, SEER_E_FULL if out of
 * memory (the old pool is then kept). */
int seer_rt_resize(seer_runtime *rt, int32_t num_workers, int32_t spin);
/* From any thread: make a running step stop at its workers' next event and
 * return SEER_E_CLOSED (close() from another thread waits for that return
 * before it frees the runtime).  No effect on a step that already failed.
 * Not at once with seer_rt_reset or seer_rt_free of the same runtime (both
 * rewrite what it writes): seer.Runtime takes a lock around the three;
 * csrc/tests/stress_close.c checks that protocol. */
void seer_rt_interrupt(seer_runtime *rt);
void seer_rt_last_error(const seer_runtime *rt, seer_error_info *out);
int64_t seer_rt_events_total(const seer_runtime *rt);
double seer_rt_window_end(const seer_runtime *rt, int32_t worker);
int64_t seer_rt_windows_total(const seer_runtime *rt);
/* Between steps, from the thread that steps: turn the per-worker
 * accounting on (1) or off (0); either way it restarts. */
void seer_rt_set_stats(seer_runtime *rt, int32_t on);
/* Between steps, from the thread that steps: this worker's accounting
 * since the last call; restarts it.  Both wait (briefly) until each pool
 * thread has added its last step, which it does after the step's last
 * barrier, when seer_rt_step may already have returned. */
void seer_rt_take_stats(seer_runtime *rt, int32_t worker, seer_rt_stats *out);

void seer_rt_set_trace(seer_runtime *rt, int32_t worker, seer_trace_event *events, int64_t event_cap,
                       seer_trace_window *windows, int64_t window_cap);
/* Records written since the last call; resets the counts. */
void seer_rt_take_trace(seer_runtime *rt, int32_t worker, int64_t *n_events, int64_t *n_windows,
                        int64_t *dropped);

/* From native handlers. */
int seer_emit(seer_ctx *ctx, int32_t target, double time, int32_t kind, int64_t payload);
uint64_t seer_random_u64(seer_ctx *ctx);
double seer_uniform(seer_ctx *ctx);
/* An external event (source -1) pushed into the runtime's queue. */
int seer_rt_push(seer_runtime *rt, int32_t entity, double time, int32_t kind, int64_t payload);
/* Between steps, from the stepping thread: fn over [0, n) in slices of
 * `grain` items, each worker's home share first (seer/seer.h). */
int seer_rt_parallel_for(seer_runtime *rt, int64_t n, int64_t grain, seer_range_fn fn, void *arg);
/* The same loop left to the pool (the caller goes on), and its end: the
 * slices left run in the caller, which returns when all are done.  Any
 * other call of the stepping thread on the runtime ends it first. */
int seer_rt_parallel_for_begin(seer_runtime *rt, int64_t n, int64_t grain, seer_range_fn fn, void *arg);
int seer_rt_parallel_for_end(seer_runtime *rt);
int32_t seer_rt_num_workers(const seer_runtime *rt);
/* The function table plug-ins reach through ctx->api (seer/seer.h). */
const seer_api *seer_api_table(void);

/* From Python handlers (on the worker thread that runs them). */
int seer_rt_emit_many(seer_runtime *rt, int32_t worker, const int32_t *sources, const int32_t *targets,
                      const double *times, const int32_t *kinds, const int64_t *payloads, int64_t n,
                      int64_t *bad_index);
void seer_rt_uniform_many(seer_runtime *rt, const int32_t *entities, double *out, int64_t n);
/* Counter-based stream value: pure function of (seed, entity, counter). */
double seer_counter_uniform(uint64_t seed, int32_t entity, uint64_t counter);

#endif
