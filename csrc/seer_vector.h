/* seer.vector's native path: env copies whose whole step runs in C.
 *
 * A copy that implements it (the built-in envs) hands the vector env a
 * step function and its own struct; the thread backend makes each such
 * copy an entity of a runtime whose native handler (seer_vec_copy_step)
 * steps it, so a vector step runs in C with the GIL released, and the
 * process backend's workers run their copies through seer_vec_run_copies.
 * Rows are those of seer/vector/_layout.py: row c * slots + j holds agent
 * j of copy c.  Plain declarations: this header is read by cffi's cdef. */
#ifndef SEER_VECTOR_H
#define SEER_VECTOR_H

#include <stdint.h>

#include "seer_runtime.h"

/* seer_copy_rows, seer_copy_step_fn and the ops SEER_COPY_STEP and
 * SEER_COPY_AUTORESET: seer/seer_types.h (the public API). */

/* Kinds of action rows seer_vec_step_all checks (seer.vector.NativeSpec). */
#define SEER_ACT_NONE 0
#define SEER_ACT_BOX_F32 1
#define SEER_ACT_BOX_F64 2
#define SEER_ACT_INT64 3

/* seer_vec_step_all found an action outside [act_lo, act_hi] (or NaN) in a
 * live row: nothing was stepped. */
#define SEER_VEC_E_ACTION -100

typedef struct seer_vec_copies {
    int32_t num_copies;
    int32_t slots;               /* rows per copy                       */
    int64_t act_row_bytes;
    int64_t obs_row_bytes;
    const uint8_t *act;          /* num_copies * slots rows each        */
    uint8_t *obs;
    double *rew;
    uint8_t *term;
    uint8_t *trunc;
    uint8_t *mask;
    uint8_t *alive;
    uint8_t *ended;              /* num_copies                          */
    seer_copy_step_fn *step;     /* num_copies; NULL: not native        */
    void **env;                  /* num_copies                          */
    int32_t *status;             /* num_copies: rc of the last step     */
    /* seer_vec_step_all's hand-out order: during its step, entity e runs
     * copy order[e]; NULL otherwise (entity e is copy e) */
    int32_t *order;
    int32_t *order_buf;          /* num_copies                          */
    int32_t *count_buf;          /* slots + 2                           */
    int32_t *key_buf;            /* num_copies                          */
    /* seer_vec_step_all checks the live rows' actions first unless
     * act_kind is SEER_ACT_NONE: act_dim values per row (float32, float64
     * or int64 by act_kind), value j within [act_lo[j], act_hi[j]] */
    int32_t act_kind;
    int32_t act_dim;
    const double *act_lo;
    const double *act_hi;
} seer_vec_copies;

/* Native handler of the thread backend's copies model (entity = copy).  A
 * copy's failure is recorded in status[copy], never fails the window: the
 * vector env reports it with the copy's index. */
int seer_vec_copy_step(seer_ctx *ctx, const seer_event *ev);
/* One vector step of copies that all take the native path, in one call:
 * an event of `kind` at time t for every copy (an autoreset where due[c],
 * which is then cleared), then the runtime's step to t + 1.  Copies go to
 * the workers longest first (live rows, a due reset counting as a full
 * copy: LPT order), so no worker is left with a big copy at the end.
 * Unless act_kind is SEER_ACT_NONE, the live rows' actions are checked before anything
 * runs: SEER_VEC_E_ACTION if one is out of bounds or NaN (the caller names
 * it).  *attention counts the copies that ended or failed in the step
 * (what the caller must look at).  Returns the runtime's status (or a push
 * error). */
int seer_vec_step_all(seer_vec_copies *v, seer_runtime *rt, seer_queue *q, int32_t kind, double t, uint8_t *due,
                      int64_t *attention);
/* 1 when every live row's actions are within [act_lo[j], act_hi[j]] (the check
 * seer_vec_step_all does first), else 0. */
int seer_vec_actions_ok(const seer_vec_copies *v);
/* Runs ops[k] on copies[k] for k < n, one after another; returns how many
 * failed. */
int64_t seer_vec_run_copies(seer_vec_copies *v, const int32_t *copies, const int32_t *ops, int64_t n);

#endif
