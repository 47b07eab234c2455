/* consensus_v0's handlers and whole-copy step (see consensus.h). */
#include "consensus.h"

#include <math.h>
#include <string.h>

static inline int64_t bits_of(double x) {
    int64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

static inline double double_of(int64_t b) {
    double x;
    memcpy(&x, &b, sizeof x);
    return x;
}

int cons_tick(seer_ctx *ctx, const seer_event *ev) {
    cons_model *m = ctx->model;
    const int32_t i = ev->entity, n = m->n;
    const double T = m->period[i];
    const double mean = 0.5 * (m->heard[2 * (int64_t)i] + m->heard[2 * (int64_t)i + 1]);
    const double v = m->value[i] + T * (m->gain * (mean - m->value[i]) + m->speed * m->action[i]);
    m->value[i] = v;
    int rc = seer_emit(ctx, (i + n - 1) % n, ev->time + m->delay, CONS_HEAR, bits_of(v));
    if (rc == SEER_OK) rc = seer_emit(ctx, (i + 1) % n, ev->time + m->delay, CONS_HEAR, bits_of(v));
    if (rc == SEER_OK) rc = seer_emit(ctx, i, ev->time + T, CONS_TICK, 0);
    return rc;
}

int cons_hear(seer_ctx *ctx, const seer_event *ev) {
    cons_model *m = ctx->model;
    const int32_t i = ev->entity, n = m->n;
    /* the left neighbour's message fills slot 0, the right one's slot 1 */
    const int64_t side = ev->source == (i + n - 1) % n ? 0 : 1;
    m->heard[2 * (int64_t)i + side] = double_of(ev->payload);
    return SEER_OK;
}

int cons_act(seer_ctx *ctx, const seer_event *ev) {
    cons_model *m = ctx->model;
    m->action[ev->entity] = double_of(ev->payload);
    return SEER_OK;
}

/* SplitMix64: the seed stream and the initial values (no SEER state). */
static inline uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static inline double unit(uint64_t *s) { return (double)(splitmix(s) >> 11) * 0x1.0p-53; }

uint64_t cons_next_seed(cons_env *e) { return splitmix(&e->seed_stream) >> 33; }

int cons_reset(cons_env *e, uint64_t seed) {
    cons_model *m = e->m;
    const int32_t n = m->n;
    seer_rt_reset(e->rt, seed);
    uint64_t s = seed;
    e->goal = 2.0 * unit(&s) - 1.0;
    for (int32_t i = 0; i < n; i++) m->value[i] = 4.0 * unit(&s) - 2.0;
    for (int32_t i = 0; i < n; i++) {
        m->heard[2 * (int64_t)i] = m->value[(i + n - 1) % n];
        m->heard[2 * (int64_t)i + 1] = m->value[(i + 1) % n];
        m->action[i] = 0.0;
    }
    e->steps = 0;
    for (int32_t i = 0; i < n; i++) {
        const int rc = seer_rt_push(e->rt, i, 0.0, CONS_TICK, 0);
        if (rc != SEER_OK) return rc;
    }
    return SEER_OK;
}

static float clip(double x) { return (float)(x < -10.0 ? -10.0 : x > 10.0 ? 10.0 : x); }

/* Observation of agent i: value, heard left, heard right, goal - value. */
static void observe(const cons_env *e, int32_t i, float *o) {
    const cons_model *m = e->m;
    o[0] = clip(m->value[i]);
    o[1] = clip(m->heard[2 * (int64_t)i]);
    o[2] = clip(m->heard[2 * (int64_t)i + 1]);
    o[3] = clip(e->goal - m->value[i]);
}

void cons_observe_all(const cons_env *e, float *obs) {
    for (int32_t i = 0; i < e->m->n; i++) observe(e, i, obs + (int64_t)CONS_OBS_DIM * i);
}

int cons_copy_step(void *env, const seer_copy_rows *rows, int32_t op) {
    cons_env *e = env;
    const int32_t n = e->m->n;
    float *obs = rows->obs;
    if (op == SEER_COPY_AUTORESET) {
        const int rc = cons_reset(e, cons_next_seed(e));
        if (rc != SEER_OK) return rc;
        for (int32_t i = 0; i < n; i++) {
            observe(e, i, obs + (int64_t)CONS_OBS_DIM * i);
            rows->rew[i] = 0.0;
            rows->term[i] = rows->trunc[i] = rows->mask[i] = 0;
            rows->alive[i] = 1;
        }
        *rows->ended = 0;
        return SEER_OK;
    }
    if (op != SEER_COPY_STEP) return SEER_E_ARG;
    if (e->steps >= e->max_cycles) { /* over: nothing acts until a reset */
        memset(obs, 0, sizeof(float) * (size_t)n * CONS_OBS_DIM);
        for (int32_t i = 0; i < n; i++) {
            rows->rew[i] = 0.0;
            rows->term[i] = rows->trunc[i] = rows->mask[i] = rows->alive[i] = 0;
        }
        *rows->ended = 1;
        return SEER_OK;
    }
    /* the actions enter as events at the step's start */
    const double t0 = (double)e->steps * e->dt;
    const float *act = rows->act;
    for (int32_t i = 0; i < n; i++) {
        const int rc = seer_rt_push(e->rt, i, t0, CONS_ACT, bits_of((double)act[i]));
        if (rc != SEER_OK) return rc;
    }
    const int rc = seer_rt_step(e->rt, (double)(e->steps + 1) * e->dt);
    if (rc != SEER_OK) return rc;
    e->steps++;
    const uint8_t over = e->steps >= e->max_cycles;
    for (int32_t i = 0; i < n; i++) {
        observe(e, i, obs + (int64_t)CONS_OBS_DIM * i);
        rows->rew[i] = -fabs(e->goal - e->m->value[i]);
        rows->term[i] = 0;
        rows->trunc[i] = over;
        rows->mask[i] = 1;
        rows->alive[i] = !over;
    }
    *rows->ended = over;
    return SEER_OK;
}
