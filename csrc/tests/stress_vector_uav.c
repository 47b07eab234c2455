/* Validation program for seer.vector's native path over the UAV swarm
 * (seer_vector.c, seer/envs/uav_swarm/csrc/uav_swarm*.c, seer_runtime.c, seer_queue.c), without
 * Python: copies of the swarm, each with its own one-worker runtime, are
 * the entities of an outer runtime whose native handler steps them.
 *
 *   stress_vector_uav [copies] [uavs] [steps] [max_workers] [seed]
 *
 * Every copy steps tiled (seer_rt_tiled_begin in seer/seer.h: its runtime
 * has one worker), and once more untiled with 1 outer worker: the rows
 * must be the same.  One big env then steps on its own pool of 1 to
 * max_workers, untiled and tiled on the pool (seer_rt_tiled_begin_pool):
 * the same rows again.
 *
 * Runs the same actions with 1 outer worker, then 2..max_workers pthreads,
 * stepping through the runtime's native handler on even steps and through
 * seer_vec_step_all (LPT hand-out, action check) on odd ones, and checks
 * after every step:
 *   - no copy failed (status 0);
 *   - rows: a row acted (mask) only if its UAV was live before the step; a
 *     live row after the step acted and was neither terminated nor
 *     truncated; an ended copy has no live row; an autoreset copy has every
 *     row live and none acted; observations are finite and within +-10;
 *   - determinism: a hash of every row after every step is the same for
 *     every pool size.
 * A canary after the observation rows (and AddressSanitizer after every
 * other buffer) catches a step writing past them.
 * Prints "stress_vector_uav: OK ..." and exits 0, or names what broke.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The core's headers first: they declare the real seer_emit, seer_rt_step,
 * ... (SEER_CORE_BUILD), so the env header's <seer/seer.h> is already in and
 * its static inline wrappers of the same names stay out of this file.  The
 * env's own files (a plug-in) get the wrappers and reach the core through
 * the API table, as in the Python build. */
#include "seer_queue.h"
#include "seer_runtime.h"
#include "seer_vector.h"
#include "uav_swarm.h"

#define CANARY 0x5EE2CA11u
#define K_NEIGHBORS 6
#define OBS_DIM (9 + 7 * K_NEIGHBORS)
#define TABLE 24

static int failures;
#define CHECK(cond, ...)                                      \
    do {                                                      \
        if (!(cond)) {                                        \
            if (failures++ < 5) {                             \
                fprintf(stderr, "stress_vector_uav: FAIL: "); \
                fprintf(stderr, __VA_ARGS__);                 \
                fprintf(stderr, "\n");                        \
            }                                                 \
        }                                                     \
    } while (0)

static void *zalloc(size_t n) {
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "stress_vector_uav: out of memory\n");
        exit(2);
    }
    return p;
}

/* One copy: the model's arrays, its runtime, its env struct (the same
 * constants as seer/envs/uav_swarm/model.py's UavConfig defaults). */
typedef struct copy {
    seer_uav m;
    seer_uav_env e;
    seer_queue *q;
    seer_runtime *rt;
    void *blocks[48];
    int nblocks;
} copy;

static void *own(copy *c, size_t bytes) {
    void *p = zalloc(bytes);
    c->blocks[c->nblocks++] = p;
    return p;
}

/* The copies' and the intra-env run's tiling (seer_uav_env.tiling) and
 * tiles' side: from 3 cells on, a pool of several workers steps tiled too. */
static int32_t g_tiling = 1, g_tile_cells = 2;

static void copy_init_workers(copy *c, int32_t n, int32_t inner);
static void copy_init(copy *c, int32_t n) { copy_init_workers(c, n, 1); }

static void copy_init_workers(copy *c, int32_t n, int32_t inner) {
    memset(c, 0, sizeof *c);
    const double pad = 16.0, spacing = 8.0, cell = 8.0 + 2.0 * 10.0 * 0.1;
    const int32_t layers = 4;
    int32_t side = (int32_t)ceil(sqrt(ceil((double)n / layers)));
    if (side < 1) side = 1;
    const double hi[3] = {2 * pad + side * spacing, 2 * pad + side * spacing, 2 * pad + layers * spacing};
    seer_uav *m = &c->m;
    m->num_uavs = n;
    m->table_cap = TABLE;
    m->max_recipients = 32;
    m->grid_nx = (int32_t)ceil(hi[0] / cell);
    m->grid_ny = (int32_t)ceil(hi[1] / cell);
    m->grid_nz = (int32_t)ceil(hi[2] / cell);
    m->tick = 0.01;
    m->radius2 = 64.0;
    m->v_max = 10.0;
    m->v_max2 = 100.0;
    m->pos = own(c, sizeof(double) * 3 * n);
    m->vel = own(c, sizeof(double) * 3 * n);
    double *acc = own(c, sizeof(double) * 3 * n);
    m->acc = acc;
    double *ctrl_dt = own(c, sizeof(double) * n);
    int32_t *period = own(c, sizeof(int32_t) * n);
    static const int32_t periods[3] = {10, 5, 2};
    for (int32_t i = 0; i < n; i++) {
        period[i] = periods[i % 3];
        ctrl_dt[i] = period[i] * 0.01;
    }
    m->ctrl_dt = ctrl_dt;
    m->period = period;
    uint8_t *alive = own(c, (size_t)n);
    m->alive = alive;
    m->energy = own(c, sizeof(double) * n);
    m->bcast = own(c, sizeof(float) * 6 * n);
    m->bcast_tick = own(c, sizeof(int64_t) * n);
    m->nb = own(c, sizeof(seer_uav_nb) * TABLE * n);
    m->nb_count = own(c, sizeof(int32_t) * n);
    m->sent = own(c, sizeof(int64_t) * n);
    m->received = own(c, sizeof(int64_t) * n);
    int32_t *agent_of = own(c, sizeof(int32_t) * n), *slot_of = own(c, sizeof(int32_t) * n);
    for (int32_t i = 0; i < n; i++) agent_of[i] = slot_of[i] = i; /* a reset puts them in space order */
    m->agent_of = agent_of;
    double *snap_pos = own(c, sizeof(double) * 3 * n);
    m->snap_pos = snap_pos;
    int32_t *cell_of = own(c, sizeof(int32_t) * 3 * n);
    int64_t cells = (int64_t)m->grid_nx * m->grid_ny * m->grid_nz;
    int32_t *cell_start = own(c, sizeof(int32_t) * (cells + 1)), *cell_items = own(c, sizeof(int32_t) * n);
    m->cell_of = cell_of;
    m->cell_start = cell_start;
    m->cell_items = cell_items;

    seer_uav_env *e = &c->e;
    e->m = m;
    e->ticks_per_step = 10;
    e->k_neighbors = K_NEIGHBORS;
    e->obs_dim = OBS_DIM;
    e->max_age_ticks = 10;
    e->max_cycles = 40; /* truncations as well as losses */
    e->sep_nx = (int32_t)ceil(hi[0] / 3.0);
    e->sep_ny = (int32_t)ceil(hi[1] / 3.0);
    e->sep_nz = (int32_t)ceil(hi[2] / 3.0);
    e->cell = cell;
    e->a_max = 5.0;
    e->radius = 8.0;
    e->d_safe = 3.0;
    e->d_col = 1.0;
    e->goal_radius = 1.0;
    e->w_progress = 1.0;
    e->w_energy = 0.01;
    e->w_separation = 1.0;
    e->c_collision = 10.0;
    e->c_out_of_bounds = 10.0;
    e->r_goal = 0.1;
    e->target_scale = 20.0;
    e->obs_bound = 10.0;
    for (int k = 0; k < 3; k++) e->centre[k] = e->half[k] = hi[k] / 2, e->hi[k] = hi[k];
    e->lattice_side = side;
    e->layers = layers;
    e->start_spacing = spacing;
    e->formation_spacing = 5.0;
    e->pad = pad;
    e->jitter = 1.5;
    e->agent_of = agent_of;
    e->slot_of = slot_of;
    e->acc = acc;
    e->alive = alive;
    e->target = own(c, sizeof(double) * 3 * n);
    e->cell_start = cell_start;
    e->cell_items = cell_items;
    e->cell_of = cell_of;
    e->prev_dist = own(c, sizeof(double) * n);
    e->episode = own(c, sizeof(int64_t) * SEER_UAV_EP_LEN);
    e->obs = own(c, sizeof(float) * OBS_DIM * n);
    e->reward = own(c, sizeof(double) * n);
    e->collided = own(c, (size_t)n);
    e->oob = own(c, (size_t)n);
    e->sep_sorted = own(c, sizeof(uint64_t) * n);
    e->sep_key = own(c, sizeof(int32_t) * n);
    e->sep_a = own(c, sizeof(double) * n);
    e->sep_b = own(c, sizeof(double) * n);
    e->dist = own(c, sizeof(double) * n);
    e->perm = own(c, sizeof(int32_t) * side * side * layers);
    e->sep_slot_b = own(c, sizeof(uint32_t) * SEER_UAV_SEP_SLOTS * n);
    e->sep_slot_pen = own(c, sizeof(double) * SEER_UAV_SEP_SLOTS * n);
    e->sep_count = own(c, sizeof(int32_t) * n);
    e->grid_pos = own(c, sizeof(double) * 3 * n);
    m->tile_snap[0] = own(c, sizeof(double) * 3 * n);
    m->tile_snap[1] = own(c, sizeof(double) * 3 * n);
    e->tile_list = own(c, sizeof(int32_t) * n);
    e->tile_col_start = own(c, sizeof(int32_t) * (cells + 1));
    e->tiling = g_tiling;
    e->tile_cells = g_tile_cells; /* small tiles: many borders */

    c->q = seer_queue_new(n, 2, (uint32_t)(n * 66 + 8192));
    c->rt = seer_rt_new(c->q, inner, 0.005, 100);
    if (!c->q || !c->rt) {
        fprintf(stderr, "stress_vector_uav: cannot build a copy's runtime\n");
        exit(2);
    }
    seer_rt_set_handler(c->rt, SEER_UAV_TICK, seer_uav_tick);
    seer_rt_set_handler(c->rt, SEER_UAV_RECV, seer_uav_recv);
    seer_rt_set_model(c->rt, m);
    seer_rt_add_snapshot(c->rt, m->pos, snap_pos, sizeof(double) * 3 * n); /* the broadcasts need none */
    e->rt = c->rt;
}

static void copy_free(copy *c) {
    seer_rt_free(c->rt);
    seer_queue_free(c->q);
    for (int i = 0; i < c->nblocks; i++) free(c->blocks[i]);
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
    return h;
}

static void *pool_worker(void *arg) {
    void **a = arg;
    seer_rt_worker_main(a[0], (int32_t)(intptr_t)a[1]);
    return NULL;
}

/* Runs every step with `workers` outer workers; returns the rows' hash. */
static uint64_t run(int32_t copies, int32_t uavs, int32_t steps, int32_t workers, uint64_t seed) {
    const int32_t A = uavs, R = copies * A;
    copy *cp = zalloc(sizeof(copy) * copies);
    /* rows as seer/vector/_layout.py lays them out, a canary word after */
    const size_t obs_block = sizeof(float) * OBS_DIM * A, obs_bytes = obs_block * copies;
    uint8_t *obs = zalloc(obs_bytes + sizeof(uint32_t));
    *(uint32_t *)(obs + obs_bytes) = CANARY;
    float *act = zalloc(sizeof(float) * 3 * R);
    double *rew = zalloc(sizeof(double) * R);
    uint8_t *term = zalloc(R), *trunc = zalloc(R), *mask = zalloc(R), *alive = zalloc(R), *before = zalloc(R);
    uint8_t *ended = zalloc(copies);
    seer_copy_step_fn *fns = zalloc(sizeof(seer_copy_step_fn) * copies);
    void **envs = zalloc(sizeof(void *) * copies);
    int32_t *status = zalloc(sizeof(int32_t) * copies);
    for (int32_t c = 0; c < copies; c++) {
        copy_init(&cp[c], uavs);
        CHECK(seer_uav_env_reset(&cp[c].e, seed + (uint64_t)c) == SEER_OK, "reset of copy %d failed", c);
        fns[c] = seer_uav_copy_step;
        envs[c] = &cp[c].e;
        memset(alive + (size_t)c * A, 1, (size_t)A);
    }
    int32_t *order = zalloc(sizeof(int32_t) * copies), *count = zalloc(sizeof(int32_t) * (A + 2));
    int32_t *key = zalloc(sizeof(int32_t) * copies);
    /* per-dimension bounds of the Box action check (SEER_ACT_BOX_F32, 3 values a row) */
    static const double act_lo[3] = {-1.0, -1.0, -1.0}, act_hi[3] = {1.0, 1.0, 1.0};
    seer_vec_copies v = {copies, A, 3 * sizeof(float), OBS_DIM * sizeof(float), (const uint8_t *)act, obs,
                         rew, term, trunc, mask, alive, ended, fns, envs, status, NULL, order, count, key,
                         SEER_ACT_BOX_F32, 3, act_lo, act_hi};
    seer_queue *oq = seer_queue_new(copies, 1, (uint32_t)(copies * 4 + 1024));
    seer_runtime *ort = seer_rt_new(oq, workers, 1.0, 200);
    seer_rt_set_handler(ort, 0, seer_vec_copy_step);
    seer_rt_set_model(ort, &v);
    pthread_t *th = zalloc(sizeof(pthread_t) * workers);
    void *(*args)[2] = zalloc(sizeof(void *[2]) * workers);
    for (int32_t w = 1; w < workers; w++) {
        args[w][0] = ort;
        args[w][1] = (void *)(intptr_t)w;
        pthread_create(&th[w], NULL, pool_worker, args[w]);
    }
    uint64_t h = 0xCBF29CE484222325ull, lcg = seed * 6364136223846793005ull + 1;
    int32_t ends = 0, resets = 0;
    int32_t *op = zalloc(sizeof(int32_t) * copies);
    uint8_t *due = zalloc(copies);
    for (int32_t k = 0; k < steps; k++) {
        for (int32_t r = 0; r < 3 * R; r++) {
            lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
            act[r] = (float)((double)(lcg >> 11) * 0x1.0p-53 * 2.0 - 1.0);
        }
        memcpy(before, alive, (size_t)R);
        for (int32_t c = 0; c < copies; c++) {
            op[c] = ended[c] ? SEER_COPY_AUTORESET : SEER_COPY_STEP;
            due[c] = ended[c];
            resets += ended[c];
        }
        if (k % 2) {
            /* odd steps: the one-call step (LPT hand-out, actions checked) */
            int64_t attention = -1;
            int32_t live_row = -1;
            for (int32_t r = 0; r < R && live_row < 0; r++)
                if (alive[r]) live_row = r;
            if (k == 1 && live_row >= 0) { /* a bad action in a live row: refused, nothing runs */
                const float keep = act[3 * live_row];
                act[3 * live_row] = NAN;
                CHECK(seer_vec_step_all(&v, ort, oq, 0, (double)k, due, &attention) == SEER_VEC_E_ACTION,
                      "a NaN action was not refused");
                CHECK(memcmp(alive, before, (size_t)R) == 0, "a refused step changed rows");
                act[3 * live_row] = keep;
            }
            CHECK(seer_vec_step_all(&v, ort, oq, 0, (double)k, due, &attention) == SEER_OK, "step_all %d failed", k);
            int64_t want = 0;
            for (int32_t c = 0; c < copies; c++) {
                want += ended[c] || status[c];
                CHECK(!due[c], "copy %d still due after step_all", c);
            }
            CHECK(attention == want, "step_all reported %lld copies to look at, %lld ended or failed",
                  (long long)attention, (long long)want);
        } else {
            for (int32_t c = 0; c < copies; c++) {
                const double t = (double)k;
                const int32_t kind = 0;
                const int64_t payload = op[c];
                int64_t bad;
                CHECK(seer_queue_push_many(oq, &c, &t, &kind, &payload, NULL, NULL, 1, &bad) == SEER_OK, "push");
            }
            CHECK(seer_rt_step(ort, (double)(k + 1)) == SEER_OK, "outer step %d failed", k);
        }
        for (int32_t c = 0; c < copies; c++) {
            const uint8_t *o = obs + obs_block * c;
            CHECK(status[c] == 0, "copy %d failed with %d at step %d", c, status[c], k);
            int32_t live = 0, acted = 0;
            for (int32_t i = 0; i < A; i++) {
                const int32_t r = c * A + i;
                live += alive[r];
                acted += mask[r];
                if (op[c] == SEER_COPY_STEP) {
                    CHECK(!mask[r] || before[r], "copy %d row %d acted while dead (step %d)", c, i, k);
                    CHECK(!alive[r] || (mask[r] && !term[r] && !trunc[r]), "copy %d row %d live without acting", c, i);
                    CHECK(mask[r] || (!term[r] && !trunc[r] && rew[r] == 0.0), "copy %d row %d: data without mask", c, i);
                }
                const float *f = (const float *)o + (size_t)OBS_DIM * i;
                for (int32_t j = 0; j < OBS_DIM; j++)
                    CHECK(isfinite(f[j]) && fabsf(f[j]) <= 10.0f, "copy %d row %d obs[%d] = %g", c, i, j, f[j]);
            }
            if (op[c] == SEER_COPY_AUTORESET)
                CHECK(live == A && acted == 0 && !ended[c], "copy %d autoreset: %d live, %d acted", c, live, acted);
            if (ended[c]) {
                CHECK(live == 0, "copy %d ended with %d live rows", c, live);
                ends++;
            }
            h = fnv(h, o, obs_block);
        }
        CHECK(*(const uint32_t *)(obs + obs_bytes) == CANARY, "a copy wrote past the observation rows");
        h = fnv(h, rew, sizeof(double) * R);
        h = fnv(h, term, R);
        h = fnv(h, trunc, R);
        h = fnv(h, mask, R);
        h = fnv(h, alive, R);
        h = fnv(h, ended, copies);
    }
    CHECK(ends > 0 && resets > 0, "no episode ended (%d) or was reset (%d): the run proves little", ends, resets);
    seer_rt_shutdown(ort);
    for (int32_t w = 1; w < workers; w++) pthread_join(th[w], NULL);
    seer_rt_free(ort);
    seer_queue_free(oq);
    int64_t tiled = 0;
    for (int32_t c = 0; c < copies; c++) tiled += cp[c].e.tiled_steps;
    CHECK((tiled > 0) == (g_tiling >= 0), "%lld tiled copy steps with tiling %d", (long long)tiled, g_tiling);
    for (int32_t c = 0; c < copies; c++) copy_free(&cp[c]);
    free(cp), free(obs), free(act), free(rew), free(term), free(trunc), free(mask), free(alive), free(before);
    free(ended), free(fns), free(envs), free(status), free(th), free(args), free(op), free(due);
    free(order), free(count), free(key);
    printf("  workers %d: %d episode ends, %d autoresets, hash %016llx, %s\n", workers, ends, resets,
           (unsigned long long)h, tiled ? "tiled" : "untiled");
    return h;
}

/* One env whose own runtime has `inner` workers: its step's phases
 * (grid, readout, losses) run as slices on that pool (seer_rt_parallel_for)
 * and its windows are shared by the workers.  Returns the hash of every
 * step's observations, rewards, losses and state.  via_copy: stepped as a
 * PettingZoo step is (seer_uav_copy_step, rows by agent), whose end leaves
 * the next step's candidate lists to the pool (seer_rt_parallel_for_begin)
 * while this thread reads the rows, as Python builds its dicts; the slots
 * are re-ordered every third step only, so most steps build ahead. */
static uint64_t run_intra(int32_t uavs, int32_t steps, int32_t inner, uint64_t seed, int via_copy) {
    copy *c = zalloc(sizeof(copy));
    copy_init_workers(c, uavs, inner);
    seer_uav_env *e = &c->e;
    e->max_cycles = 1 << 30;
    e->start_spacing = 2.0; /* crowded: separation and collisions from the start */
    e->jitter = 0.9;
    e->relabel_period = via_copy ? 3 : 1; /* the slots re-ordered under the pool: runtime and rows renamed */
    float *act = zalloc(sizeof(float) * 3 * (size_t)uavs), *obs = zalloc(sizeof(float) * OBS_DIM * (size_t)uavs);
    double *rew = zalloc(sizeof(double) * (size_t)uavs);
    uint8_t *flags = zalloc(4 * (size_t)uavs + 1); /* term, trunc, mask, alive; ended */
    const seer_copy_rows rows = {seer_api_table(), act, obs, rew, flags, flags + uavs, flags + 2 * uavs,
                                 flags + 3 * (int64_t)uavs, flags + 4 * (int64_t)uavs};
    int32_t ahead_steps = 0;
    pthread_t *th = zalloc(sizeof(pthread_t) * inner);
    void *(*args)[2] = zalloc(sizeof(void *[2]) * inner);
    for (int32_t w = 1; w < inner; w++) {
        args[w][0] = c->rt;
        args[w][1] = (void *)(intptr_t)w;
        pthread_create(&th[w], NULL, pool_worker, args[w]);
    }
    CHECK(seer_uav_env_reset(e, seed) == SEER_OK, "intra: reset failed");
    uint64_t h = 0xcbf29ce484222325ull, rng = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int32_t s = 0; s < steps; s++) {
        for (int64_t i = 0; i < 3 * (int64_t)uavs; i++) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            const double u = (double)(rng >> 11) * 0x1.0p-53 * 2.0 - 1.0;
            if (via_copy)
                act[i] = (float)u;
            else
                e->acc[i] = u * 5.0;
        }
        if (via_copy) {
            CHECK(seer_uav_copy_step(e, &rows, SEER_COPY_STEP) == SEER_OK, "intra: copy step %d failed with %d workers",
                  s, inner);
            ahead_steps += e->ahead;
            /* the rows, read while the pool may still build the next step's lists */
            h = fnv(h, obs, sizeof(float) * OBS_DIM * (size_t)uavs);
            h = fnv(h, rew, sizeof(double) * (size_t)uavs);
            h = fnv(h, flags, 4 * (size_t)uavs + 1);
            if (flags[4 * (int64_t)uavs]) break; /* the episode ended */
            continue;
        }
        CHECK(seer_uav_env_step(e) == SEER_OK, "intra: step %d failed with %d workers", s, inner);
        h = fnv(h, e->obs, sizeof(float) * OBS_DIM * (size_t)uavs);
        h = fnv(h, e->reward, sizeof(double) * (size_t)uavs);
        h = fnv(h, e->collided, (size_t)uavs);
        h = fnv(h, e->oob, (size_t)uavs);
        h = fnv(h, e->alive, (size_t)uavs);
        h = fnv(h, c->m.pos, sizeof(double) * 3 * (size_t)uavs);
        h = fnv(h, c->m.nb, sizeof(seer_uav_nb) * TABLE * (size_t)uavs);
        h = fnv(h, e->agent_of, sizeof(int32_t) * (size_t)uavs);
    }
    /* every step but the first (the reset ordered them), or every third */
    CHECK(e->relabels == (via_copy ? (steps - 1) / 3 : steps - 1), "intra: %lld of %d steps re-ordered the slots",
          (long long)e->relabels, steps);
    /* a pool of several builds ahead after each step but those before a re-ordering */
    CHECK(via_copy && inner > 1 ? ahead_steps >= steps - 1 - steps / 3 : ahead_steps == 0,
          "intra: %d of %d copy steps on %d workers built the next grid ahead", ahead_steps, steps, inner);
    int64_t lost = uavs - e->episode[SEER_UAV_EP_LIVE];
    seer_rt_shutdown(c->rt); /* ends a loop left open: the lists' slices read the state freed below */
    for (int32_t w = 1; w < inner; w++) pthread_join(th[w], NULL);
    CHECK(lost > 0, "intra: no UAV was lost (the losses phase had no work)");
    CHECK(e->tiled_steps == (g_tiling >= 0 && (inner == 1 || g_tile_cells >= 3) ? steps : 0),
          "intra: %lld tiled steps of %d", (long long)e->tiled_steps, steps);
    printf("  intra-env%s, %d inner workers: %lld UAVs lost, hash %016llx, %s, %d steps built ahead\n",
           via_copy ? " (copy steps)" : "", inner, (long long)lost, (unsigned long long)h,
           e->tiled_steps ? "tiled" : "untiled", ahead_steps);
    free(act), free(obs), free(rew), free(flags);
    copy_free(c);
    free(c);
    free(th);
    free(args);
    return h;
}

int main(int argc, char **argv) {
    const int32_t copies = argc > 1 ? atoi(argv[1]) : 6;
    const int32_t uavs = argc > 2 ? atoi(argv[2]) : 12;
    const int32_t steps = argc > 3 ? atoi(argv[3]) : 120;
    const int32_t max_workers = argc > 4 ? atoi(argv[4]) : 3;
    const uint64_t seed = argc > 5 ? strtoull(argv[5], NULL, 10) : 7;
    if (copies < 1 || uavs < 1 || steps < 1 || max_workers < 1) {
        fprintf(stderr, "usage: stress_vector_uav [copies>=1] [uavs>=1] [steps>=1] [max_workers>=1] [seed]\n");
        return 2;
    }
    const uint64_t h1 = run(copies, uavs, steps, 1, seed);
    for (int32_t w = 2; w <= max_workers; w++)
        CHECK(run(copies, uavs, steps, w, seed) == h1, "rows with %d workers differ from 1 worker", w);
    g_tiling = -1;
    CHECK(run(copies, uavs, steps, 1, seed) == h1, "rows of untiled copies differ from tiled ones");
    g_tiling = 1;
    if (failures) {
        fprintf(stderr, "stress_vector_uav: %d failures\n", failures);
        return 1;
    }
    /* one big env across its own pool (above the env's inline threshold) */
    const int32_t intra_uavs = argc > 6 ? atoi(argv[6]) : 2304, intra_steps = argc > 7 ? atoi(argv[7]) : 3;
    const uint64_t hi1 = run_intra(intra_uavs, intra_steps, 1, seed, 0); /* tiled */
    const uint64_t hc1 = run_intra(intra_uavs, intra_steps + 4, 1, seed, 1);
    g_tiling = -1;
    CHECK(run_intra(intra_uavs, intra_steps, 1, seed, 0) == hi1, "intra-env: untiled differs from tiled");
    for (int32_t w = 2; w <= max_workers; w++) {
        CHECK(run_intra(intra_uavs, intra_steps, w, seed, 0) == hi1, "intra-env: %d inner workers differ from 1", w);
        CHECK(run_intra(intra_uavs, intra_steps + 4, w, seed, 1) == hc1,
              "intra-env copy steps: %d inner workers (the grid built ahead) differ from 1", w);
    }
    /* tiled on the pool: its threads run bands of tiles side by side, each
     * a few rows behind the one to its left (uav_swarm_step.c, Pools).  The
     * slots' strips are as high as the tiles, and this run's accelerations
     * go to slots (the copy steps' actions go to agents): its 1-worker run
     * with the same tiles is the one to match. */
    g_tiling = 1, g_tile_cells = 3;
    const uint64_t hi3 = run_intra(intra_uavs, intra_steps, 1, seed, 0);
    for (int32_t w = 2; w <= max_workers; w++) {
        CHECK(run_intra(intra_uavs, intra_steps, w, seed, 0) == hi3, "intra-env: tiled on %d inner workers differs", w);
        CHECK(run_intra(intra_uavs, intra_steps + 4, w, seed, 1) == hc1,
              "intra-env copy steps: tiled on %d inner workers differs", w);
    }
    g_tile_cells = 2;
    printf("stress_vector_uav: OK %d copies x %d UAVs, %d steps, 1..%d workers, identical rows; one env of %d UAVs "
           "on 1..%d inner workers, identical\n", copies, uavs, steps, max_workers, intra_uavs, max_workers);
    return 0;
}
