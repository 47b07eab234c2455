/* Synthetic workload handlers (see seer_synth.h); SEER reached only through
 * the API table of <seer/seer.h> (seer_emit, seer_random_u64). */
#include "seer_synth.h"

#include <math.h>

/* A dependent chain the compiler cannot fold or vectorise away. */
static double burn(double x, int64_t iters) {
    for (int64_t i = 0; i < iters; i++) x = x * 0.999999 + 1e-7;
    return x;
}

int seer_synth_tick(seer_ctx *ctx, const seer_event *ev) {
    seer_synth *m = ctx->model;
    int32_t e = ev->entity;
    if (e == m->fail_entity && ev->time >= m->fail_time) return 1;
    int32_t right = (e + 1) % m->num_entities;
    double v = burn(m->value[e] + 0.001 * m->snap[right], m->work);
    m->value[e] = v;
    m->handled[e]++;
    for (int32_t f = 0; f < m->fanout && m->num_entities > 1; f++) {
        int32_t to = (int32_t)(seer_random_u64(ctx) % (uint64_t)m->num_entities);
        if (to == e) to = right;
        int64_t payload = (int64_t)(fmod(fabs(v), 1e6) * 1000.0);
        if (seer_emit(ctx, to, ev->time + m->delay, SEER_SYNTH_MSG, payload) != 0) return 0;
    }
    seer_emit(ctx, e, ev->time + m->period, SEER_SYNTH_TICK, 0);
    return 0;
}

int seer_synth_msg(seer_ctx *ctx, const seer_event *ev) {
    seer_synth *m = ctx->model;
    int32_t e = ev->entity;
    /* Not commutative: the result depends on the order of messages. */
    m->value[e] = burn(m->value[e] * 0.5 + (double)ev->payload * 1e-6, m->work / 2);
    m->handled[e]++;
    return 0;
}
