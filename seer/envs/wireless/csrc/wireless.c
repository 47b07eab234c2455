/* wireless_v0 native handlers, observation kernels and env step (see
 * wireless.h).
 *
 * Float expressions are written in the same order as the numpy reference
 * (seer/envs/wireless/reference.py) and compiled with -ffp-contract=off, so both
 * produce bit-identical results.  Channel values come from tables indexed by
 * integer squared distance; the one transcendental call, the utility's log,
 * is the C library's (wl_utilities), which the single env and seer.vector's
 * native copy share. */
#include "wireless.h"

#include <math.h>
#include <string.h>

static inline int64_t row(int32_t e, int32_t width) { return (int64_t)e * width; }

/* Release every connection whose last measurement is at or below the SNR
 * threshold (mobile-env's update_connections, for one UE). */
static int prune(seer_ctx *ctx, wl_model *m, int32_t e, double t) {
    const int32_t B = m->num_bs;
    uint8_t *conn = m->conn + row(e, B);
    const uint8_t *ok = m->ok + row(e, B);
    for (int32_t b = 0; b < B; b++) {
        if (conn[b] && !ok[b]) {
            conn[b] = 0;
            int rc = seer_emit(ctx, b, t + m->delay, WL_DETACH, 0);
            if (rc) return rc;
        }
    }
    return 0;
}

int wl_action(seer_ctx *ctx, const seer_event *ev) {
    wl_model *m = ctx->model;
    const int32_t B = m->num_bs, e = ev->entity;
    if (e < B || ev->payload < 0 || ev->payload > B) return 1;
    int rc = prune(ctx, m, e, ev->time);
    if (rc || ev->payload == 0) return rc;
    int32_t b = (int32_t)ev->payload - 1;
    uint8_t *conn = m->conn + row(e, B);
    if (conn[b]) {
        conn[b] = 0;
        return seer_emit(ctx, b, ev->time + m->delay, WL_DETACH, 0);
    }
    if (m->ok[row(e, B) + b]) {
        conn[b] = 1;
        return seer_emit(ctx, b, ev->time + m->delay, WL_ATTACH, m->on[e]);
    }
    return 0;
}

int wl_release(seer_ctx *ctx, const seer_event *ev) {
    wl_model *m = ctx->model;
    if (ev->entity < m->num_bs) return 1;
    m->release_at[ev->entity] = -1.0;
    return prune(ctx, m, ev->entity, ev->time);
}

int wl_move(seer_ctx *ctx, const seer_event *ev) {
    wl_model *m = ctx->model;
    const int32_t B = m->num_bs, e = ev->entity, u = e - B;
    const double t = ev->time;
    if (u < 0) return 1;
    double *p = m->pos + row(e, 2), *w = m->wp + row(e, 2);
    if (!m->has_wp[e]) {
        if (m->wp_next[e] < m->layout_len[u]) {
            int64_t r = (int64_t)m->layout_off[u] + m->wp_next[e];
            w[0] = m->layout_wp[2 * r];
            w[1] = m->layout_wp[2 * r + 1];
            m->wp_next[e]++;
        } else {
            double ux = seer_uniform(ctx);
            double uy = seer_uniform(ctx);
            w[0] = m->width * ux;
            w[1] = m->height * uy;
        }
        m->has_wp[e] = 1;
    }
    /* mobile-env RandomWaypointMovement.move, with the step length of this UE's period */
    const double step = m->velocity * m->period[e];
    const double vx = w[0] - p[0], vy = w[1] - p[1];
    const double n = sqrt(vx * vx + vy * vy);
    const int arrived = n <= step;
    if (arrived) {
        p[0] = w[0];
        p[1] = w[1];
        m->has_wp[e] = 0;
    } else {
        p[0] = p[0] + step * vx / n;
        p[1] = p[1] + step * vy / n;
    }
    /* Measure where the truncated position changed (the channel depends on
     * nothing else); report changes to BSs in range or just left. */
    int32_t *ip = m->ipos + row(e, 2);
    const int32_t ix = (int32_t)p[0], iy = (int32_t)p[1];
    int need_release = 0;
    if (ix != ip[0] || iy != ip[1]) {
        ip[0] = ix;
        ip[1] = iy;
        int32_t *d2 = m->d2 + row(e, B), *sent = m->d2_sent + row(e, B);
        double *snr = m->snr + row(e, B);
        uint8_t *okr = m->ok + row(e, B);
        const uint8_t *conn = m->conn + row(e, B);
        for (int32_t b = 0; b < B; b++) {
            const int32_t dx = ix - m->bs_xy[2 * b], dy = iy - m->bs_xy[2 * b + 1];
            const int32_t q = dx * dx + dy * dy;
            if (q < 0 || q >= m->table_len) return 1;
            const int ok = m->ok_table[q];
            d2[b] = q;
            snr[b] = m->snr_table[q];
            okr[b] = (uint8_t)ok;
            const int32_t v = ok ? q : -1;
            if (v != sent[b]) {
                sent[b] = v;
                int rc = seer_emit(ctx, b, t + m->delay, WL_REPORT, v);
                if (rc) return rc;
            }
            if (conn[b] && !ok) need_release = 1;
        }
    }
    if (need_release) {
        /* Links are released at the next step boundary (mobile-env prunes at
         * the start of a step, after the observation showed them). */
        const double r = floor(t) + 1.0;
        if (m->release_at[e] != r) {
            m->release_at[e] = r;
            int rc = seer_emit(ctx, e, r, WL_RELEASE, 0);
            if (rc) return rc;
        }
    }
    double next = t + m->period[e];
    if (arrived && !m->full_buffer && m->max_pause > 0.0) next = next + ceil(seer_uniform(ctx) * m->max_pause * 64.0) / 64.0;
    return seer_emit(ctx, e, next, WL_MOVE, 0);
}

int wl_traffic(seer_ctx *ctx, const seer_event *ev) {
    wl_model *m = ctx->model;
    const int32_t B = m->num_bs, e = ev->entity;
    if (e < B) return 1;
    const uint8_t on = (uint8_t)(m->on[e] ^ 1);
    m->on[e] = on;
    const uint8_t *conn = m->conn + row(e, B);
    for (int32_t b = 0; b < B; b++) {
        if (conn[b]) {
            int rc = seer_emit(ctx, b, ev->time + m->delay, WL_DEMAND, on);
            if (rc) return rc;
        }
    }
    const double mean = on ? m->mean_on : m->mean_off;
    double d = ceil(seer_uniform(ctx) * 2.0 * mean * 64.0);
    if (d < 1.0) d = 1.0;
    return seer_emit(ctx, e, ev->time + d / 64.0, WL_TRAFFIC, 0);
}

/* ---- base stations ------------------------------------------------------- */

static int bs_ue(const wl_model *m, const seer_event *ev) {
    int32_t u = ev->source - m->num_bs;
    return (ev->entity < m->num_bs && u >= 0 && u < m->num_ue) ? u : -1;
}

static void bs_set(wl_model *m, int32_t b, int32_t u, uint8_t mem, uint8_t on) {
    const int64_t i = row(b, m->num_ue) + u;
    const uint8_t old_mem = m->member[i], old_on = (uint8_t)(m->member[i] & m->on_rep[i]);
    m->n_conn[b] += (int32_t)mem - (int32_t)old_mem;
    m->n_on[b] += (int32_t)(mem & on) - (int32_t)old_on;
    m->member[i] = mem;
    m->on_rep[i] = on;
}

int wl_attach(seer_ctx *ctx, const seer_event *ev) {
    wl_model *m = ctx->model;
    int32_t u = bs_ue(m, ev);
    if (u < 0) return 1;
    bs_set(m, ev->entity, u, 1, ev->payload != 0);
    return 0;
}

int wl_detach(seer_ctx *ctx, const seer_event *ev) {
    wl_model *m = ctx->model;
    int32_t u = bs_ue(m, ev);
    if (u < 0) return 1;
    bs_set(m, ev->entity, u, 0, 0);
    return 0;
}

int wl_demand(seer_ctx *ctx, const seer_event *ev) {
    wl_model *m = ctx->model;
    int32_t u = bs_ue(m, ev);
    if (u < 0) return 1;
    if (m->member[row(ev->entity, m->num_ue) + u]) bs_set(m, ev->entity, u, 1, ev->payload != 0);
    return 0;
}

int wl_report(seer_ctx *ctx, const seer_event *ev) {
    wl_model *m = ctx->model;
    int32_t u = bs_ue(m, ev);
    if (u < 0 || ev->payload < -1 || ev->payload >= m->table_len) return 1;
    m->d2_rep[row(ev->entity, m->num_ue) + u] = (int32_t)ev->payload;
    return 0;
}

/* ---- observation kernels -------------------------------------------------- */

void wl_rates(const wl_model *m, double *macro) {
    const int32_t B = m->num_bs, U = m->num_ue;
    for (int32_t u = 0; u < U; u++) macro[u] = 0.0;
    for (int32_t b = 0; b < B; b++) {
        const uint8_t *mem = m->member + row(b, U), *on = m->on_rep + row(b, U);
        const int32_t *d2 = m->d2_rep + row(b, U);
        for (int32_t u = 0; u < U; u++) {
            if (mem[u] && d2[u] >= 0) {
                int32_t n = on[u] ? m->n_on[b] : m->n_on[b] + 1;
                if (n < 1) n = 1;
                macro[u] = macro[u] + m->rate_table[d2[u]] / (double)n;
            }
        }
    }
}

void wl_observe(const wl_model *m, const double *util, double *bs_util, double *reward, double *scratch,
                float *obs) {
    const int32_t B = m->num_bs, U = m->num_ue, D = 4 * B + 1;
    double *s = reward, *cnt = scratch; /* per UE, summed over BSs in BS order */
    for (int32_t u = 0; u < U; u++) s[u] = cnt[u] = 0.0;
    for (int32_t b = 0; b < B; b++) {
        const uint8_t *mem = m->member + row(b, U);
        double sb = 0.0;
        for (int32_t u = 0; u < U; u++)
            if (mem[u]) sb = sb + util[u];
        bs_util[b] = m->n_conn[b] > 0 ? sb / (double)m->n_conn[b] : m->idle;
        const int32_t *d2r = m->d2_rep + row(b, U);
        const double nb = (double)m->n_conn[b];
        for (int32_t u = 0; u < U; u++) {
            if (d2r[u] >= 0) {
                s[u] = s[u] + bs_util[b];
                cnt[u] = cnt[u] + nb; /* exact: small integers */
            }
        }
    }
    for (int32_t u = 0; u < U; u++) {
        reward[u] = (s[u] + util[u]) / (cnt[u] + 1.0);

        float *o = obs + row(u, D);
        const double *snr = m->snr + row(B + u, B);
        const uint8_t *ok = m->ok + row(B + u, B);
        const uint8_t *conn = m->conn + row(B + u, B);
        double mx = snr[0];
        for (int32_t b = 1; b < B; b++)
            if (snr[b] > mx) mx = snr[b];
        int64_t total = 0;
        for (int32_t b = 0; b < B; b++) {
            o[b] = conn[b] ? 1.0f : 0.0f;
            o[B + b] = (float)(snr[b] / mx);
            o[2 * B + 1 + b] = (float)(ok[b] ? bs_util[b] : m->idle);
            total += ok[b] ? m->n_conn[b] : 0;
        }
        o[2 * B] = (float)util[u];
        if (total < 1) total = 1;
        for (int32_t b = 0; b < B; b++) {
            const int64_t c = ok[b] ? m->n_conn[b] : 0;
            o[3 * B + 1 + b] = (float)((double)c / (double)total);
        }
    }
}

/* numpy's utility(), then scale_utility(), float for float: w1 * log(.) is
 * divided by log(w3) (not multiplied by its inverse), clip is max then min. */
void wl_utilities(const wl_model *m, const double *macro, double *util) {
    const int32_t U = m->num_ue;
    const double lo = m->util_lower, hi = m->util_upper, log_w3 = log(m->util_w3);
    for (int32_t u = 0; u < U; u++) {
        const double r = macro[u];
        double v = lo;
        if (r > 0.0) {
            v = m->util_w1 * log(m->util_w2 + r) / log_w3;
            v = v < lo ? lo : v;
            v = v > hi ? hi : v;
        }
        util[u] = 2.0 * (v - lo) / (hi - lo) - 1.0;
    }
}

/* ---- env step ------------------------------------------------------------- */

void wl_finalize(wl_env *e) {
    wl_rates(e->m, e->macro);
    wl_utilities(e->m, e->macro, e->util);
    wl_observe(e->m, e->util, e->bs_util, e->reward, e->scratch, e->obs);
}

int wl_env_step(wl_env *e, const int64_t *actions) {
    const int32_t B = e->m->num_bs, U = e->m->num_ue;
    /* in UE order: the external sequence numbers (the tie-breaker) are those
     * of one push of every acting UE */
    for (int32_t u = 0; u < U; u++) {
        if (actions[u] == 0) continue; /* no-ops are not sent */
        const int rc = seer_rt_push(e->rt, B + u, e->t, WL_ACTION, actions[u]);
        if (rc != SEER_OK) return rc;
    }
    const int64_t events0 = seer_rt_events_total(e->rt);
    const int rc = seer_rt_step(e->rt, e->t + e->dt);
    if (rc != SEER_OK) return rc;
    e->events += seer_rt_events_total(e->rt) - events0;
    e->t = e->t + e->dt;
    e->steps++;
    wl_finalize(e);
    return SEER_OK;
}

int seer_wireless_copy_step(void *env, const seer_copy_rows *rows, int32_t op) {
    wl_env *e = env;
    const int32_t U = e->m->num_ue, D = 4 * e->m->num_bs + 1;
    if (op == SEER_COPY_AUTORESET) return SEER_E_UNSUPPORTED; /* the initial state is drawn in numpy */
    if (op != SEER_COPY_STEP) return SEER_E_ARG;
    float *obs = rows->obs;
    if (e->steps >= e->max_cycles) {
        /* nothing to step: the copy's episode is over */
        memset(obs, 0, sizeof(float) * (size_t)U * (size_t)D);
        for (int32_t u = 0; u < U; u++) {
            rows->rew[u] = 0.0;
            rows->term[u] = rows->trunc[u] = rows->mask[u] = rows->alive[u] = 0;
        }
        *rows->ended = 1;
        return SEER_OK;
    }
    const int rc = wl_env_step(e, rows->act);
    if (rc != SEER_OK) return rc;
    /* every agent acts in every step; max_cycles truncates them all at once */
    const uint8_t over = e->steps >= e->max_cycles;
    /* a single env's rows are the env's own observation buffer: nothing to copy */
    if (obs != e->obs) memcpy(obs, e->obs, sizeof(float) * (size_t)U * (size_t)D);
    for (int32_t u = 0; u < U; u++) {
        rows->rew[u] = e->reward[u];
        rows->term[u] = 0;
        rows->trunc[u] = over;
        rows->mask[u] = 1;
        rows->alive[u] = !over;
    }
    *rows->ended = over;
    return SEER_OK;
}
