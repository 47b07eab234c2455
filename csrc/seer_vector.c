/* seer.vector's native path (see seer_vector.h). */
#include "seer_vector.h"

#include <stddef.h>

static int run_copy(seer_vec_copies *v, int32_t c, int32_t op) {
    if (c < 0 || c >= v->num_copies) return SEER_E_ENTITY;
    if (v->step[c] == NULL) return v->status[c] = SEER_E_ARG;
    const int64_t row = (int64_t)c * v->slots;
    const seer_copy_rows r = {
        .act = v->act + row * v->act_row_bytes,
        .obs = v->obs + row * v->obs_row_bytes,
        .rew = v->rew + row,
        .term = v->term + row,
        .trunc = v->trunc + row,
        .mask = v->mask + row,
        .alive = v->alive + row,
        .ended = v->ended + c,
    };
    return v->status[c] = v->step[c](v->env[c], &r, op);
}

int seer_vec_copy_step(seer_ctx *ctx, const seer_event *ev) {
    run_copy(ctx->model, ev->entity, (int32_t)ev->payload);
    return 0;
}

int64_t seer_vec_run_copies(seer_vec_copies *v, const int32_t *copies, const int32_t *ops, int64_t n) {
    int64_t failed = 0;
    for (int64_t k = 0; k < n; k++) failed += run_copy(v, copies[k], ops[k]) != 0;
    return failed;
}
