/* Synthetic native workload (seer._synth_c, a plug-in built by
 * seer/_build_synth.py against <seer/seer.h> alone): entities that tick at
 * their own period, burn a configurable amount of arithmetic per event, and
 * message random others.  Used by the runtime's tests, its benchmarks and
 * STPA's training sweeps.  Plain declarations, read by cffi's cdef. */
#ifndef SEER_SYNTH_H
#define SEER_SYNTH_H

#include <stdint.h>

#include <seer/seer.h>

#define SEER_SYNTH_TICK 0
#define SEER_SYNTH_MSG 1

typedef struct seer_synth {
    double *value;        /* live per-entity state                        */
    const double *snap;   /* its snapshot at the window start             */
    int64_t *handled;     /* events handled per entity                    */
    int32_t num_entities;
    int32_t fanout;       /* messages per tick to random other entities   */
    int64_t work;         /* iterations of dependent arithmetic per event */
    double period;        /* each entity's tick period                    */
    double delay;         /* message delay; under the lookahead is a bug  */
    int32_t fail_entity;  /* tick of this entity at or after fail_time    */
    double fail_time;     /*   fails the handler (-1: never)              */
} seer_synth;

int seer_synth_tick(seer_ctx *ctx, const seer_event *ev);
int seer_synth_msg(seer_ctx *ctx, const seer_event *ev);

#endif
