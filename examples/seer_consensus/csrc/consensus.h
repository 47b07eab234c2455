/* consensus_v0: agents on a ring agree on a value by gossip, each on its own
 * clock.  Handlers and the whole-copy step, built against SEER's public C
 * API only (<seer/seer.h>): this module links against nothing of SEER's.
 *
 * Events (entity = agent):
 *   CONS_TICK  the agent's clock (period 0.05, 0.1 or 0.2 s by index): move
 *              the value toward the mean of what it last heard, plus its
 *              action; tell both ring neighbours (CONS_HEAR, `delay` later,
 *              payload = the new value's bits); schedule the next tick.
 *   CONS_HEAR  a neighbour's value arrives; stored as left or right by source.
 *   CONS_ACT   the step's action (payload = its bits), at the step's start. */
#ifndef SEER_CONSENSUS_H
#define SEER_CONSENSUS_H

#include <stdint.h>

#include <seer/seer.h>

#define CONS_TICK 0
#define CONS_HEAR 1
#define CONS_ACT 2
#define CONS_OBS_DIM 4

typedef struct cons_model {
    int32_t n;
    double delay;          /* message delay (s); the lookahead is half of it */
    double gain;           /* pull toward the heard mean (1/s)                */
    double speed;          /* value change per unit action (1/s)              */
    double *value;         /* n                                               */
    double *heard;         /* n x 2: last value from the left, the right      */
    double *action;        /* n                                               */
    const double *period;  /* n: clock period (s)                             */
} cons_model;

/* One env: the model, its runtime and episode. */
typedef struct cons_env {
    cons_model *m;
    seer_runtime *rt;
    double dt;             /* env step (s)                                    */
    double goal;           /* the value every agent should reach              */
    int64_t steps;
    int64_t max_cycles;
    uint64_t seed_stream;  /* SplitMix64 state: seeds of resets without one   */
} cons_env;

int cons_tick(seer_ctx *ctx, const seer_event *ev);
int cons_hear(seer_ctx *ctx, const seer_event *ev);
int cons_act(seer_ctx *ctx, const seer_event *ev);

/* A new episode from seed: state, the runtime's streams, first ticks. */
int cons_reset(cons_env *e, uint64_t seed);
/* The next seed of the env's own stream (resets without a seed). */
uint64_t cons_next_seed(cons_env *e);
/* Every agent's observation (n rows of CONS_OBS_DIM floats). */
void cons_observe_all(const cons_env *e, float *obs);
/* seer.vector's native copy step: SEER_COPY_STEP and SEER_COPY_AUTORESET
 * into the copy's rows; the single env steps through it too. */
int cons_copy_step(void *env, const seer_copy_rows *rows, int32_t op);

#endif
