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

/* One copy's rows (already offset to its first row). */
typedef struct seer_copy_rows {
    const void *act;  /* slots action rows                          */
    void *obs;        /* slots observation rows                     */
    double *rew;      /* slots                                      */
    uint8_t *term;    /* slots                                      */
    uint8_t *trunc;   /* slots                                      */
    uint8_t *mask;    /* slots: the row acted in this step          */
    uint8_t *alive;   /* slots: the agent is live after the step    */
    uint8_t *ended;   /* 1: the copy's episode ended in this step   */
} seer_copy_rows;

/* Ops of a copy step function (the payloads of seer.vector's events). */
#define SEER_VEC_STEP 1      /* act -> everything else                            */
#define SEER_VEC_AUTORESET 2 /* reset with the env's next seed: obs and alive rows */

/* Runs op on one copy; 0, or a SEER_E_* code. */
typedef int (*seer_copy_step_fn)(void *env, const seer_copy_rows *rows, int32_t op);

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
} seer_vec_copies;

/* Native handler of the thread backend's copies model (entity = copy).  A
 * copy's failure is recorded in status[copy], never fails the window: the
 * vector env reports it with the copy's index. */
int seer_vec_copy_step(seer_ctx *ctx, const seer_event *ev);
/* Runs ops[k] on copies[k] for k < n, one after another; returns how many
 * failed. */
int64_t seer_vec_run_copies(seer_vec_copies *v, const int32_t *copies, const int32_t *ops, int64_t n);

#endif
