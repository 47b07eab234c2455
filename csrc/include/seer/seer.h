/* SEER's public C API: what a module compiled apart from SEER (a plug-in
 * env's handlers and native copy step, built by its own cffi, Cython or C
 * extension against seer.get_include()) uses.
 *
 * Nothing here links against SEER: every call goes through the function
 * table that SEER hands the module with each call (ctx->api for handlers,
 * rows->api for copy steps, a runtime's head for code that steps its own
 * runtime).  The static inline wrappers below are the API's names.
 *
 *     #include <seer/seer.h>
 *     int on_tick(seer_ctx *ctx, const seer_event *ev) {
 *         my_model *m = ctx->model;
 *         m->count[ev->entity]++;
 *         return seer_emit(ctx, ev->entity, ev->time + 0.1, 0, 0);
 *     }
 *
 * Python side: seer.capi.Plugin(module) checks the module's API version, then
 * plugin.handler("on_tick") is a seer.Native for an EventKind. */
#ifndef SEER_SEER_H
#define SEER_SEER_H

#include "seer_types.h"

/* The version this module was compiled against; seer.capi.Plugin calls it (a
 * cffi module declares it in its cdef: seer.capi.cdef() does). */
static inline uint32_t seer_plugin_api_version(void) { return SEER_API_VERSION; }

/* SEER's own sources define the real functions under these names. */
#ifndef SEER_CORE_BUILD

static inline const seer_api *seer_api_of(const seer_runtime *rt) {
    return ((const seer_runtime_head *)(const void *)rt)->api;
}

/* Send an event: to another entity at least the model's lookahead after
 * ctx->now (SEER_E_CAUSALITY otherwise), to ctx->entity not before now. */
static inline int seer_emit(seer_ctx *ctx, int32_t target, double time, int32_t kind, int64_t payload) {
    return ctx->api->emit(ctx, target, time, kind, payload);
}
/* The handled entity's counter-based stream: a pure function of (seed,
 * entity, draw number), the same for every pool size. */
static inline uint64_t seer_random_u64(seer_ctx *ctx) { return ctx->api->random_u64(ctx); }
static inline double seer_uniform(seer_ctx *ctx) { return ctx->api->uniform(ctx); }
/* Runtimes a native copy steps itself (seer.Runtime.native_address). */
static inline int seer_rt_push(seer_runtime *rt, int32_t entity, double time, int32_t kind, int64_t payload) {
    return seer_api_of(rt)->rt_push(rt, entity, time, kind, payload);
}
static inline int seer_rt_step(seer_runtime *rt, double horizon) { return seer_api_of(rt)->rt_step(rt, horizon); }
static inline void seer_rt_reset(seer_runtime *rt, uint64_t seed) { seer_api_of(rt)->rt_reset(rt, seed); }
static inline int64_t seer_rt_events_total(const seer_runtime *rt) { return seer_api_of(rt)->rt_events_total(rt); }

/* Entries appended to the table after its first release: a module built
 * against this header may be loaded by a SEER whose table is shorter. */
#define SEER_API_HAS(api, field) \
    ((api)->size >= (uint32_t)((const char *)&(api)->field - (const char *)(api)) + sizeof((api)->field))

/* Run fn over [0, n) in slices of about `grain` items on the runtime's
 * worker pool (the caller works too), and return when every slice is done.
 * Between steps only, from the thread that steps the runtime (a native
 * copy's step, an env's readout).  Worker w first runs the slices of its
 * home share [n w / W, n (w + 1) / W), the share of the entities whose
 * events it runs in a step's windows, so a loop indexed by entity finds
 * their rows in its cache; a worker done early then takes slices from the
 * back of the others' shares.  So fn must give the same result however
 * [0, n) is cut and shared: each item writes only its own outputs.  Runs
 * fn(arg, 0, n, 0) in the caller when the pool has one worker, or the SEER
 * it runs in predates the call. */
static inline int seer_rt_parallel_for(seer_runtime *rt, int64_t n, int64_t grain, seer_range_fn fn, void *arg) {
    const seer_api *api = seer_api_of(rt);
    if (!SEER_API_HAS(api, rt_parallel_for)) {
        if (n > 0) fn(arg, 0, n, 0);
        return 0;
    }
    return api->rt_parallel_for(rt, n, grain, fn, arg);
}
/* seer_rt_parallel_for without the wait: the pool's threads run the
 * slices while the caller goes on (a copy step that returns to Python,
 * say, whose next call needs the result), and seer_rt_parallel_for_end
 * runs the slices left in the caller and returns when every slice is
 * done.  From the thread that steps the runtime, between steps.  Until
 * the end, the caller must not touch what the slices read or write; any
 * other call of it on the runtime (a step, a loop, a reset, a resize, its
 * close) ends the loop first.  Runs fn(arg, 0, n, 0) at once where
 * seer_rt_parallel_for would, and in a SEER that predates the calls. */
static inline int seer_rt_parallel_for_begin(seer_runtime *rt, int64_t n, int64_t grain, seer_range_fn fn,
                                             void *arg) {
    const seer_api *api = seer_api_of(rt);
    if (!SEER_API_HAS(api, rt_parallel_for_end)) return seer_rt_parallel_for(rt, n, grain, fn, arg);
    return api->rt_parallel_for_begin(rt, n, grain, fn, arg);
}
static inline int seer_rt_parallel_for_end(seer_runtime *rt) {
    const seer_api *api = seer_api_of(rt);
    return SEER_API_HAS(api, rt_parallel_for_end) ? api->rt_parallel_for_end(rt) : 0;
}
static inline int32_t seer_rt_num_workers(const seer_runtime *rt) {
    const seer_api *api = seer_api_of(rt);
    return SEER_API_HAS(api, rt_num_workers) ? api->rt_num_workers(rt) : 1;
}
/* Between steps, from the thread that steps the runtime: rename entity e
 * to new_of_old[e] (a permutation).  Its pending events (as their target
 * and as their source), random stream, emit counter and clock move with it,
 * so a model that moves its own rows the same way goes on as before; only
 * the order of simultaneous events of one entity from different sources
 * follows the new source names.  What it is for: keeping entities that
 * interact in nearby lanes (cache lines, and a pool worker's share of the
 * lanes) as they move, as uav_swarm_v0 does.  SEER_E_ARG (not a
 * permutation, or a step is running), SEER_E_NOMEM (nothing changed), or
 * SEER_E_UNSUPPORTED from a SEER that predates the call. */
static inline int seer_rt_relabel(seer_runtime *rt, const int32_t *new_of_old) {
    const seer_api *api = seer_api_of(rt);
    return SEER_API_HAS(api, rt_relabel) ? api->rt_relabel(rt, new_of_old) : SEER_E_UNSUPPORTED;
}

/* A tiled step: the caller runs the step's windows entity group by entity
 * group, so that a group's rows stay in cache through several windows
 * (uav_swarm_v0 runs blocks of its broadcast grid through a whole env step
 * before it moves on) instead of each window sweeping every entity.
 *
 * seer_rt_tiled_begin opens a step of num_windows windows, window k being
 * the events before window_end[k] (ascending; the last is the step's
 * horizon, as seer_rt_step's).  seer_rt_tiled_run(rt, k, entities, n) runs
 * window k of each listed entity (its events before window_end[k]), each
 * of which must have run windows 0 .. k - 1 (SEER_E_ARG otherwise); runs
 * of consecutive ids are claimed together.  seer_rt_tiled_end runs the
 * windows left of every entity not listed through all of them (in window
 * order, by id: the ones that have no events to share), closes the step
 * and returns what seer_rt_step would (0, or the step's error code).
 *
 * The caller orders the runs so that no event comes too late: an event for
 * another entity must be at or after the end of the window being run and
 * must not fall before the end of a window its target has already run;
 * the first that breaks either fails the step (SEER_E_CAUSALITY), before
 * it is queued.  What handlers read of other entities' rows is the
 * caller's to order as well: a tiled step takes no snapshots.  Everything
 * else is as in seer_rt_step: each entity's events run one at a time in
 * (time, source, seq) order, so a plan that respects the above gives the
 * results of seer_rt_step.
 *
 * One thread: SEER_E_UNSUPPORTED from a runtime with more than one worker,
 * Python handlers or a trace, and from a SEER that predates the calls (the
 * caller then steps with seer_rt_step).  Between begin and end, the
 * stepping thread makes no other call on the runtime.
 *
 * On a pool: seer_rt_tiled_begin_pool opens the same step on a runtime of
 * any number of workers (SEER_E_UNSUPPORTED with Python handlers, a trace,
 * or from a SEER that predates it), and the caller may then run groups on
 * the pool's threads: between begin and end it calls seer_rt_parallel_for,
 * whose slices call seer_rt_tiled_run_on(rt, worker, k, entities, n) with
 * the worker index their slice was given (the stepping thread's own runs:
 * worker 0).  The caller's plan then also guarantees that no two threads
 * run, or send events to, the same entity at the same time, and orders
 * the runs of an entity and of its senders by its own synchronization
 * (release and acquire): the lanes are touched with plain stores, as on
 * one thread.  A slice must not wait for work that no running thread has
 * taken (a pool thread may never come: the stepping thread may run every
 * slice itself, one after the other). */
static inline int seer_rt_tiled_begin(seer_runtime *rt, int32_t num_windows, const double *window_end) {
    const seer_api *api = seer_api_of(rt);
    return SEER_API_HAS(api, rt_tiled_end) ? api->rt_tiled_begin(rt, num_windows, window_end) : SEER_E_UNSUPPORTED;
}
static inline int seer_rt_tiled_run(seer_runtime *rt, int32_t window, const int32_t *entities, int32_t n) {
    return seer_api_of(rt)->rt_tiled_run(rt, window, entities, n);
}
static inline int seer_rt_tiled_end(seer_runtime *rt) { return seer_api_of(rt)->rt_tiled_end(rt); }
static inline int seer_rt_tiled_begin_pool(seer_runtime *rt, int32_t num_windows, const double *window_end) {
    const seer_api *api = seer_api_of(rt);
    return SEER_API_HAS(api, rt_tiled_run_on) ? api->rt_tiled_begin_pool(rt, num_windows, window_end)
                                              : SEER_E_UNSUPPORTED;
}
static inline int seer_rt_tiled_run_on(seer_runtime *rt, int32_t worker, int32_t window, const int32_t *entities,
                                       int32_t n) {
    return seer_api_of(rt)->rt_tiled_run_on(rt, worker, window, entities, n);
}

#endif /* SEER_CORE_BUILD */

#endif
