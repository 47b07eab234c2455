/* UAV swarm: native handlers.  The float operations below are written in
 * the same order as the numpy reference (seer/envs/uav_swarm/reference.py) so that
 * both give bit-identical results; the build uses -ffp-contract=off, so no
 * multiply-add is fused behind our back. */
#include "uav_swarm.h"

#include <math.h>
#include <string.h>

_Static_assert(sizeof(seer_uav_nb) == 32, "two table slots to a cache line");

/* (d2, agent id) ordering of broadcast recipients: nearer first, then
 * lower agent id (a recipient's slot is not its id: see Slots). */
static inline int closer(double da, int32_t ia, double db, int32_t ib) {
    return da < db || (da == db && ia < ib);
}

/* Neighbour-table ordering: newer tick first, then lower sender id. */
static inline int better(int64_t ta, int32_t sa, int64_t tb, int32_t sb) {
    return ta > tb || (ta == tb && sa < sb);
}

/* A broadcast's recipients so far: the n nearest by (d2, agent id), in
 * order; c holds their slots, a their agent ids. */
typedef struct recipients {
    int32_t n, max;
    double d[SEER_UAV_MAX_RECIPIENTS];
    int32_t c[SEER_UAV_MAX_RECIPIENTS];
    int32_t a[SEER_UAV_MAX_RECIPIENTS];
} recipients;

/* Where UAV c was at the start of tick j: the window's snapshot, the
 * runtime's or in a tiled step the model's own (see seer_uav.tile_snap). */
static inline const double *pos_at_start(const seer_uav *m, int32_t c, int64_t j) {
    return (m->tiled ? m->tile_snap[j & 1] : m->snap_pos) + 3 * (int64_t)c;
}

/* Candidate slot c, within range at squared distance d2: a recipient if
 * among the max nearest so far. */
static inline void consider_in_range(recipients *rs, const seer_uav *m, double d2, int32_t c) {
    const int32_t M = rs->max, id = m->agent_of[c];
    int32_t nb = rs->n;
    if (nb == M && !closer(d2, id, rs->d[nb - 1], rs->a[nb - 1])) return;
    int32_t at = nb < M ? nb++ : M - 1;
    while (at > 0 && closer(d2, id, rs->d[at - 1], rs->a[at - 1])) {
        rs->d[at] = rs->d[at - 1];
        rs->c[at] = rs->c[at - 1];
        rs->a[at] = rs->a[at - 1];
        at--;
    }
    rs->d[at] = d2;
    rs->c[at] = c;
    rs->a[at] = id;
    rs->n = nb;
}

/* Candidate slot c (live, not the sender at p): a recipient if within range. */
static inline void consider(recipients *rs, const seer_uav *m, const double *p, int32_t c, int64_t j) {
    const double *q = pos_at_start(m, c, j);
    const double dx = q[0] - p[0], dy = q[1] - p[1], dz = q[2] - p[2];
    const double d2 = dx * dx + dy * dy + dz * dz;
    if (d2 <= m->radius2) consider_in_range(rs, m, d2, c);
}

int seer_uav_tick(seer_ctx *ctx, const seer_event *ev) {
    seer_uav *m = ctx->model;
    const int32_t i = ev->entity;
    if (!m->alive[i]) return 0; /* a lost UAV's clock stops */
    const int64_t j = ev->payload;
    if (m->cand_head) __builtin_prefetch(m->cand_head + i);
    __builtin_prefetch(m->acc + 3 * (int64_t)i);
    __builtin_prefetch(m->energy + i, 1);
    __builtin_prefetch(m->sent + i, 1);
    double *p = m->pos + 3 * (int64_t)i;
    double *v = m->vel + 3 * (int64_t)i;

    /* 1. Broadcast the state at time j (before this period's integration). */
    float *b = m->bcast + 6 * (int64_t)i;
    b[0] = (float)p[0], b[1] = (float)p[1], b[2] = (float)p[2];
    b[3] = (float)v[0], b[4] = (float)v[1], b[5] = (float)v[2];
    m->bcast_tick[i] = j;

    /* Recipients: live UAVs of the 27 grid cells around ours, within the
     * radio range at the window start (snapshot positions), the
     * max_recipients nearest of them by (d2, agent id).  The step's candidate
     * list holds every such UAV (see seer_uav.cand_head), so the result is
     * the same whichever of the two we scan, and in whatever order. */
    recipients rs;
    rs.n = 0;
    rs.max = m->max_recipients;
    int32_t nb = 0;
    const int32_t *best_c = NULL; /* the recipients' slots: rs.c, unless all candidates in range are */
    double d2s[SEER_UAV_CAND_LIST_MAX];
    int32_t in[SEER_UAV_CAND_LIST_MAX];
    uint32_t head = SEER_UAV_CAND_NONE;
    if (m->cand_head && j >= m->cand_tick_lo && j < m->cand_tick_hi) head = m->cand_head[i];
    if (head != SEER_UAV_CAND_NONE) {
        const int32_t *list = m->cand_pool[head >> 30] + ((head >> 8) & 0x3FFFFFu);
        const int32_t len = (int32_t)(head & 0xFFu);
        /* No prefetch pass over the candidates' snapshot rows first: with
         * the slots in space order they are near the sender's, mostly in
         * cache, and the pass's own loop exit (its length follows the data)
         * cost more than it hid, at every size (uav_growth_profile.md,
         * "twelfth"). */
        const double *snap = pos_at_start(m, 0, j);
        /* Those in range, without a branch per candidate: which are follows
         * no pattern that a branch predictor learns in a big swarm (in a
         * small one it learns each UAV's, tick after tick). */
        int32_t n = 0;
        const double r2 = m->radius2;
        for (int32_t k = 0; k < len; k++) {
            const int32_t c = list[k];
            const double *q = snap + 3 * (int64_t)c;
            const double dx = q[0] - p[0], dy = q[1] - p[1], dz = q[2] - p[2];
            const double d2 = dx * dx + dy * dy + dz * dz;
            d2s[n] = d2;
            in[n] = c;
            n += d2 <= r2;
        }
        if (n <= rs.max) {
            /* every one is a recipient.  In candidate order, not by
             * distance: a receiver gets one message of this sender and tick,
             * so the order of the emits (their seq) orders nothing. */
            nb = n;
            best_c = in;
        } else {
            for (int32_t k = 0; k < n; k++) consider_in_range(&rs, m, d2s[k], in[k]);
        }
    } else {
        const int32_t *co = m->cell_of + 3 * (int64_t)i;
        const int32_t nx = m->grid_nx, ny = m->grid_ny, nz = m->grid_nz;
        for (int32_t z = co[2] - 1; z <= co[2] + 1; z++) {
            if (z < 0 || z >= nz) continue;
            for (int32_t y = co[1] - 1; y <= co[1] + 1; y++) {
                if (y < 0 || y >= ny) continue;
                const int64_t row = ((int64_t)z * ny + y) * nx;
                /* the row's cells x - 1 .. x + 1 are consecutive in cell_items */
                const int32_t lo = m->cell_start[row + (co[0] > 0 ? co[0] - 1 : 0)];
                const int32_t hi = m->cell_start[row + (co[0] + 1 < nx ? co[0] + 1 : nx - 1) + 1];
                for (int32_t k = lo; k < hi; k++) {
                    const int32_t c = m->cell_items[k];
                    if (c != i) consider(&rs, m, p, c, j);
                }
            }
        }
    }
    if (!best_c) {
        nb = rs.n;
        best_c = rs.c;
    }
    /* The broadcast delay is one tick; the lookahead is half a tick, so the
     * rounding of (j + 1) * tick can never make it look too close. */
    const double t_recv = (double)(j + 1) * m->tick;
    for (int32_t k = 0; k < nb; k++) {
        int rc = seer_emit(ctx, best_c[k], t_recv, SEER_UAV_RECV, j);
        if (rc != 0) return rc;
    }
    m->sent[i] += nb;

    /* 2. Integrate over one control period T with the commanded acceleration
     * held: v' = v + a T, scaled back onto |v'| = v_max if faster; then
     * p' = p + (v + v') T / 2 (exact for a constant a when not clipped). */
    const double T = m->ctrl_dt[i];
    const double h = 0.5 * T;
    const double *a = m->acc + 3 * (int64_t)i;
    double w0 = v[0] + a[0] * T;
    double w1 = v[1] + a[1] * T;
    double w2 = v[2] + a[2] * T;
    const double s2 = w0 * w0 + w1 * w1 + w2 * w2;
    if (s2 > m->v_max2) {
        const double f = m->v_max / sqrt(s2);
        w0 = w0 * f;
        w1 = w1 * f;
        w2 = w2 * f;
    }
    p[0] = p[0] + (v[0] + w0) * h;
    p[1] = p[1] + (v[1] + w1) * h;
    p[2] = p[2] + (v[2] + w2) * h;
    v[0] = w0, v[1] = w1, v[2] = w2;
    m->energy[i] = m->energy[i] + (a[0] * a[0] + a[1] * a[1] + a[2] * a[2]) * T;

    /* 3. The UAV's next tick. */
    const int64_t jn = j + m->period[i];
    return seer_emit(ctx, i, (double)jn * m->tick, SEER_UAV_TICK, jn);
}

int seer_uav_recv(seer_ctx *ctx, const seer_event *ev) {
    seer_uav *m = ctx->model;
    const int32_t r = ev->entity, s = ev->source; /* slots */
    const int64_t j = ev->payload;
    const int32_t C = m->table_cap;
    seer_uav_nb *t = m->nb + (int64_t)C * r;
    /* In a big swarm the receiver's table and the sender's message are
     * often not in cache (slots are in space order only as of the reset):
     * start every miss now, so they overlap instead of following one another. */
    if (s >= 0 && s < m->num_uavs) {
        __builtin_prefetch(m->bcast + 6 * (int64_t)s);
        __builtin_prefetch(m->bcast_tick + s);
    }
    __builtin_prefetch(m->nb_count + r);
    __builtin_prefetch(t, 1);
    __builtin_prefetch(t + 2, 1);
    __builtin_prefetch(m->received + r, 1);
    if (!m->alive[r]) return 0;
    /* The sender broadcasts at most every second tick, so its row still
     * holds the message of tick j (see uav_swarm.h); a message that is not
     * there fails the step rather than being misread. */
    if (s < 0 || s >= m->num_uavs || m->bcast_tick[s] != j) return 1;
    m->received[r]++;
    const float *msg = m->bcast + 6 * (int64_t)s;
    const int32_t sa = m->agent_of[s]; /* the table is keyed by agent id */

    /* The table keeps the latest message of each sender, at most table_cap
     * senders, preferring newer messages (then lower ids); slots stay sorted
     * by sender id.  As a sender's ticks only grow, the resulting set does
     * not depend on the order in which one window's messages arrive. */
    int32_t n = m->nb_count[r];
    /* k: the first slot whose sender is not below sa (slots are sorted),
     * counted without a branch per slot (where it falls follows no
     * pattern a predictor learns in a big swarm); the four slots of a
     * table's first two lines are read whole */
    int32_t k = 0;
    if (C >= 4 && n <= 4) {
        for (int32_t q = 0; q < 4; q++) k += (q < n) & (t[q].src < sa);
    } else {
        for (int32_t q = 0; q < n; q++) k += t[q].src < sa;
    }
    if (k < n && t[k].src == sa) {
        if (j > t[k].tick) {
            t[k].tick = (int32_t)j;
            memcpy(t[k].state, msg, sizeof t[k].state);
        }
        return 0;
    }
    if (n == C) {
        int32_t w = 0;
        for (int32_t q = 1; q < n; q++)
            if (better(t[w].tick, t[w].src, t[q].tick, t[q].src)) w = q;
        if (!better(j, sa, t[w].tick, t[w].src)) return 0;
        memmove(t + w, t + w + 1, sizeof(seer_uav_nb) * (size_t)(n - 1 - w));
        n--;
        if (w < k) k--;
    }
    memmove(t + k + 1, t + k, sizeof(seer_uav_nb) * (size_t)(n - k));
    t[k].src = sa;
    t[k].tick = (int32_t)j;
    memcpy(t[k].state, msg, sizeof t[k].state);
    m->nb_count[r] = n + 1;
    return 0;
}
