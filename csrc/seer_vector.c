/* seer.vector's native path (see seer_vector.h). */
#include "seer_vector.h"

#include <stddef.h>

#include "seer_crash_internal.h"

static int run_copy(seer_vec_copies *v, int32_t c, int32_t op) {
    if (c < 0 || c >= v->num_copies) return SEER_E_ENTITY;
    if (v->step[c] == NULL) return v->status[c] = SEER_E_ARG;
    const int64_t row = (int64_t)c * v->slots;
    const seer_copy_rows r = {
        .api = seer_api_table(),
        .act = v->act + row * v->act_row_bytes,
        .obs = v->obs + row * v->obs_row_bytes,
        .rew = v->rew + row,
        .term = v->term + row,
        .trunc = v->trunc + row,
        .mask = v->mask + row,
        .alive = v->alive + row,
        .ended = v->ended + c,
    };
    /* for the crash report: this copy, and no event until the copy's own runtime handles one */
    const seer_event *outer_event = seer_crash_event;
    const int32_t outer_copy = seer_crash_copy;
    seer_crash_event = NULL;
    seer_crash_copy = c;
    const int rc = v->status[c] = v->step[c](v->env[c], &r, op);
    seer_crash_event = outer_event;
    seer_crash_copy = outer_copy;
    return rc;
}

int seer_vec_copy_step(seer_ctx *ctx, const seer_event *ev) {
    seer_vec_copies *v = ctx->model;
    run_copy(v, v->order ? v->order[ev->entity] : ev->entity, (int32_t)ev->payload);
    return 0;
}

/* Copies by descending cost estimate (a counting sort on live rows; ties
 * in copy order), into v->order_buf. */
static void lpt_order(seer_vec_copies *v, const uint8_t *due) {
    const int32_t C = v->num_copies, A = v->slots;
    int32_t *count = v->count_buf; /* A + 2 */
    int32_t *key = v->key_buf;
    for (int32_t k = 0; k <= A + 1; k++) count[k] = 0;
    for (int32_t c = 0; c < C; c++) {
        int32_t live = 0;
        const uint8_t *al = v->alive + (int64_t)c * A;
        for (int32_t j = 0; j < A; j++) live += al[j];
        key[c] = due[c] ? A : live;
        count[A - key[c] + 1]++;
    }
    for (int32_t k = 0; k <= A; k++) count[k + 1] += count[k];
    for (int32_t c = 0; c < C; c++) v->order_buf[count[A - key[c]]++] = c;
}

/* Every live row's actions within their bounds; a NaN fails both tests.
 * Values compare as doubles: exact for float32, float64 and int64 up to
 * 2^53, so C agrees with the vector env's numpy check. */
#define CHECK_ROWS(T)                                                  \
    do {                                                               \
        const T *a = (const T *)v->act;                                \
        for (int64_t r = 0; r < R; r++) {                              \
            if (!v->alive[r]) continue;                                \
            for (int32_t j = 0; j < D; j++) {                          \
                const double x = (double)a[r * D + j];                 \
                if (!(x >= v->act_lo[j] && x <= v->act_hi[j])) return 0; \
            }                                                          \
        }                                                              \
    } while (0)

int seer_vec_actions_ok(const seer_vec_copies *v) {
    const int64_t R = (int64_t)v->num_copies * v->slots;
    const int32_t D = v->act_dim;
    switch (v->act_kind) {
    case SEER_ACT_BOX_F32: CHECK_ROWS(float); break;
    case SEER_ACT_BOX_F64: CHECK_ROWS(double); break;
    case SEER_ACT_INT64: CHECK_ROWS(int64_t); break;
    default: break;
    }
    return 1;
}

int seer_vec_step_all(seer_vec_copies *v, seer_runtime *rt, seer_queue *q, int32_t kind, double t, uint8_t *due,
                      int64_t *attention) {
    const int32_t C = v->num_copies;
    *attention = 0;
    if (v->act_kind != SEER_ACT_NONE && !seer_vec_actions_ok(v)) return SEER_VEC_E_ACTION;
    lpt_order(v, due);
    for (int32_t e = 0; e < C; e++) {
        const int32_t c = v->order_buf[e];
        const int64_t op = due[c] ? SEER_COPY_AUTORESET : SEER_COPY_STEP;
        int64_t bad;
        const int rc = seer_queue_push_many(q, &e, &t, &kind, &op, NULL, NULL, 1, &bad);
        if (rc != SEER_OK) return rc;
        due[c] = 0;
    }
    /* No atomics needed here: seer_rt_step's step_gen RMW (release) ->
     * the workers' acquire of it publishes order and the pushed events, and
     * the step's last barrier orders the copies' writes (status, ended,
     * rows) before seer_rt_step returns; only then is order cleared. */
    v->order = v->order_buf;
    const int rc = seer_rt_step(rt, t + 1.0);
    v->order = NULL;
    for (int32_t c = 0; c < C; c++) *attention += v->ended[c] || v->status[c] != 0;
    return rc;
}

int64_t seer_vec_run_copies(seer_vec_copies *v, const int32_t *copies, const int32_t *ops, int64_t n) {
    int64_t failed = 0;
    for (int64_t k = 0; k < n; k++) failed += run_copy(v, copies[k], ops[k]) != 0;
    return failed;
}
