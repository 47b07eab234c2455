/* UAV swarm: a whole env step in C (see uav_swarm.h).
 *
 * Every float expression mirrors the numpy readout of seer/envs/uav_swarm/reference.py
 * (NumpyReadout) operation for operation, including the order in which
 * separation penalties are summed (numpy's bincount over the pair list), so
 * the SEER engine and the reference stay bit-identical; -ffp-contract=off
 * keeps the compiler from fusing multiply-adds. */
#define _DEFAULT_SOURCE /* syscall (the futex), clock_gettime, sched_yield */
#include "uav_swarm.h"

#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__) && defined(__GNUC__)
#define CAND_AVX2 1
#include <immintrin.h>
#else
#define CAND_AVX2 0
#endif

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

static inline int64_t clamp_cell(double x, double size, int64_t n) {
    int64_t c = (int64_t)floor(x / size);
    return c < 0 ? 0 : (c > n - 1 ? n - 1 : c);
}

/* Counting sort of the live UAVs by cell key (ascending id within a cell,
 * as numpy's stable argsort): start[k]..start[k+1] are cell k's items. */
static void bucket(const uint8_t *alive, const int32_t *key, int32_t n, int64_t cells, int32_t *start,
                   int32_t *items) {
    memset(start, 0, sizeof(int32_t) * (size_t)(cells + 1));
    for (int32_t i = 0; i < n; i++)
        if (alive[i]) start[key[i] + 1]++;
    for (int64_t k = 0; k < cells; k++) start[k + 1] += start[k];
    int32_t live = start[cells];
    for (int32_t i = 0; i < n; i++)
        if (alive[i]) items[start[key[i]]++] = i;
    /* the fill advanced start[k] to start[k + 1]: shift back */
    for (int64_t k = cells; k > 0; k--) start[k] = start[k - 1];
    start[0] = 0;
    for (int32_t i = live; i < n; i++) items[i] = -1;
}

/* ---- running phases on the runtime's pool ------------------------------
 *
 * The O(N) phases of a step (the broadcast grid's cells, the readout, the
 * losses) run as slices of UAVs on the runtime's workers through
 * seer_rt_parallel_for.  Every slice writes only the rows of its own UAVs,
 * and each row is computed by the same float operations in the same order
 * as in one pass, so the results are bit-identical for every pool size and
 * every cut.  Small swarms run inline: waking the pool costs more. */

/* Fewer UAVs than this: one slice, no wake-up.  The bound sits low enough
 * that 'large' (256 UAVs) splits its grid, candidates and readout: with a
 * bound of 2048 worker 0 ran them alone while the others waited at the
 * barrier (the A/B is in commit 25a3c87).  bench/bench_uav_intra_env.py
 * measures the pool sizes on the scenarios either side of the bound
 * (bench/results/uav_intra_env.md). */
#define PAR_MIN 128

/* Slices of a phase of n UAVs on a pool of `workers`: several per worker,
 * so a worker the OS delays is covered. */
static int64_t phase_grain(int64_t n, int32_t workers) {
    const int64_t grain = n / (8 * (int64_t)workers);
    return grain < 64 ? 64 : grain;
}

static void run_phase(seer_uav_env *e, int64_t n, seer_range_fn fn, void *arg) {
    if (n <= 0) return;
    int32_t workers = e->rt ? seer_rt_num_workers(e->rt) : 1;
    if (workers <= 1 || n < PAR_MIN) {
        fn(arg, 0, n, 0);
        return;
    }
    seer_rt_parallel_for(e->rt, n, phase_grain(n, workers), fn, arg);
}

/* grid_pos[r] = pos[slot_at(r)] for the entries of a grid pass: as rows
 * of three (the separation's pairs), or one block per axis (axis_stride
 * apart: the candidate lists, which compare a UAV with several entries at a
 * time). */
typedef struct gather_ctx {
    seer_uav_env *e;
    const int32_t *ids;    /* the broadcast grid's items (slots), or NULL: */
    const uint64_t *keyed; /* the separation's (cell << 32 | agent) entries */
    int64_t axis_stride;   /* 0: rows of three */
} gather_ctx;

#define GATHER_AHEAD 16 /* rows ahead whose position we prefetch */

static inline int64_t gather_id(const gather_ctx *g, int64_t r) {
    return g->ids ? g->ids[r] : g->e->slot_of[(uint32_t)g->keyed[r]];
}

static void gather_slice(void *arg, int64_t lo, int64_t hi, int32_t worker) {
    (void)worker;
    const gather_ctx *g = arg;
    const double *pos = g->e->m->pos;
    double *out = g->e->grid_pos;
    const int64_t s = g->axis_stride, at = s ? 1 : 3, ax = s ? s : 1;
    for (int64_t r = lo; r < hi; r++) {
        if (r + GATHER_AHEAD < hi) __builtin_prefetch(pos + 3 * gather_id(g, r + GATHER_AHEAD));
        const double *p = pos + 3 * gather_id(g, r);
        out[at * r] = p[0];
        out[at * r + ax] = p[1];
        out[at * r + 2 * ax] = p[2];
    }
}

/* Where ahead (below) keeps the next step's cells until it starts:
 * sep_slot_b, which holds SEER_UAV_SEP_SLOTS >= 3 int32 per UAV and is
 * free from a step's readout to the next one's (a re-ordering of the slots
 * uses it too, but a step that re-orders builds its grid itself). */
static inline int32_t *ahead_cells(const seer_uav_env *e) { return (int32_t *)(void *)e->sep_slot_b; }

/* Per slot: its broadcast grid cell (into e->cand_cells) and key (into
 * sep_key), from its position. */
static void cells_slice(void *arg, int64_t lo, int64_t hi, int32_t worker) {
    (void)worker;
    seer_uav_env *e = arg;
    const seer_uav *m = e->m;
    const int64_t nx = m->grid_nx, ny = m->grid_ny, nz = m->grid_nz;
    int32_t *key = e->sep_key; /* scratch: free until the readout */
    int32_t *cells = (int32_t *)e->cand_cells;
    const double *pos = m->pos, size = e->cell;
    for (int64_t i = lo; i < hi; i++) {
        const double *p = pos + 3 * i;
        int32_t *c = cells + 3 * i;
        c[0] = (int32_t)clamp_cell(p[0], size, nx);
        c[1] = (int32_t)clamp_cell(p[1], size, ny);
        c[2] = (int32_t)clamp_cell(p[2], size, nz);
        key[i] = (int32_t)(((int64_t)c[2] * ny + c[1]) * nx + c[0]);
    }
}

typedef struct prepare_ctx {
    seer_uav_env *e;
    int cells; /* the grid cells too (not built ahead) */
} prepare_ctx;

/* Per slot at a step's start: its energy reset, in a copy step its
 * commanded acceleration from its agent's action row (by the worker whose
 * lanes hold the slot, so the row that its TICKs read is in that worker's
 * cache, not the stepping thread's), and its grid cell: computed, or the
 * one built ahead moved into cell_of (the state's, which until now held
 * the last step's, as without ahead). */
static void prepare_slice(void *arg, int64_t lo, int64_t hi, int32_t worker) {
    const prepare_ctx *pc = arg;
    seer_uav_env *e = pc->e;
    if (e->copy_rows) {
        const float *act = e->copy_rows->act; /* rows by agent id */
        for (int64_t i = lo; i < hi; i++)
            if (e->alive[i])
                for (int k = 0; k < 3; k++) e->acc[3 * i + k] = (double)act[3 * (int64_t)e->agent_of[i] + k] * e->a_max;
    }
    if (pc->cells)
        cells_slice(e, lo, hi, worker);
    else
        memcpy(e->cell_of + 3 * lo, ahead_cells(e) + 3 * lo, sizeof(int32_t) * 3 * (size_t)(hi - lo));
    memset(e->m->energy + lo, 0, sizeof(double) * (size_t)(hi - lo));
}

/* ---- broadcast candidates ------------------------------------------------
 *
 * A TICK's recipients are the live UAVs of the 27 grid cells around the
 * sender within radio range at the window start.  Scanning the cells reads
 * the snapshot position of some 50 UAVs per broadcast, scattered over the
 * arrays (ids are not in space order), which is most of a big swarm's tick
 * cost.  Once per step, UAV by UAV in slot order, so that the lists are
 * in the order the TICKs read them (slots in space order: a tile's UAVs
 * are runs of slots), over the cells' positions gathered in cell order
 * (grid_pos: a cell's UAVs are then consecutive rows), we keep for each
 * live UAV the UAVs of its 27 cells that can come within range during the
 * step: a UAV moves
 * at most D = max(|v|, v_max) * T in the step (T: the control periods that
 * begin in it; the first period starts from the current velocity, the
 * later ones from speeds clipped to v_max), so a pair within the radio
 * range at any window start of the step is within radius + 2 D now.  The
 * lists hold a handful of UAVs each.
 *
 * They live in scratch buffers that are free from here until the readout
 * (sep_sorted, sep_a, sep_b, dist: 2N int32 slots each, 8 per UAV on
 * average); a UAV whose list does not fit, or is longer than
 * CAND_MAX_LEN, gets SEER_UAV_CAND_NONE and scans its cells.  Which it
 * does never changes a result: both give the same recipients. */

#define CAND_SLOTS 8     /* list slots per UAV across the four pools */
#define CAND_MAX_LEN SEER_UAV_CAND_LIST_MAX /* longest list (8 bits; 255 is CAND_NONE's) */
#define CAND_BUF 512     /* a list being gathered: up to CAND_MAX_LEN plus a row */

/* Where a UAV's candidates come from: the grid's entries (items, and
 * their positions one block per axis), n of each readable (the live ones,
 * then room), and the pre-selection radius squared. */
typedef struct cand_src {
    const int32_t *items;
    const double *gx, *gy, *gz;
    int64_t n;
    double r2;
} cand_src;

/* A UAV's candidates in one row of its cells (entries [klo, khi), at
 * most CAND_BUF - len of them): those within the pre-selection radius, the
 * UAV itself excepted, appended to buf from len on; the new length.
 * Without a branch per entry: most fail, at random. */
static inline int32_t cand_row_plain(const cand_src *s, int32_t klo, int32_t khi, const double *p, int32_t self,
                                     int32_t *buf, int32_t len) {
    for (int32_t k = klo; k < khi; k++) {
        const int32_t c = s->items[k];
        const double dx = s->gx[k] - p[0], dy = s->gy[k] - p[1], dz = s->gz[k] - p[2];
        buf[len] = c;
        len += (dx * dx + dy * dy + dz * dz <= s->r2) & (c != self);
    }
    return len;
}

#if CAND_AVX2
/* Rows of up to eight entries (94% of them in a big swarm), eight lanes at
 * a time: no loop whose exit follows the row's length, which a predictor
 * cannot learn once the swarm is big (a small one's repeat tick after
 * tick), so that `xlarge` does not pay what `large` does not.  The
 * distances are the scalar row's, operation for operation. */
static uint64_t cand_lanes[256]; /* per mask of 8 lanes: its set lanes' indices, one a byte, in order */
static int cand_avx2_ok;

__attribute__((constructor)) static void cand_avx2_init(void) {
    __builtin_cpu_init();
    cand_avx2_ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("popcnt");
    for (int b = 0; b < 256; b++) {
        uint64_t v = 0;
        int n = 0;
        for (int l = 0; l < 8; l++)
            if (b >> l & 1) v |= (uint64_t)l << (8 * n++);
        cand_lanes[b] = v;
    }
}

__attribute__((target("avx2,popcnt"))) static inline int32_t cand_row_avx2(const cand_src *s, int32_t klo, int32_t khi,
                                                                           const double *p, int32_t self,
                                                                           int32_t *buf, int32_t len) {
    const int32_t cnt = khi - klo;
    if (cnt > 8 || klo > s->n - 8) return cand_row_plain(s, klo, khi, p, self, buf, len);
    const __m256d px = _mm256_set1_pd(p[0]), py = _mm256_set1_pd(p[1]), pz = _mm256_set1_pd(p[2]);
    const __m256d r2 = _mm256_set1_pd(s->r2);
    unsigned in = 0;
    for (int h = 0; h < 2; h++) {
        const __m256d dx = _mm256_sub_pd(_mm256_loadu_pd(s->gx + klo + 4 * h), px);
        const __m256d dy = _mm256_sub_pd(_mm256_loadu_pd(s->gy + klo + 4 * h), py);
        const __m256d dz = _mm256_sub_pd(_mm256_loadu_pd(s->gz + klo + 4 * h), pz);
        const __m256d d2 =
            _mm256_add_pd(_mm256_add_pd(_mm256_mul_pd(dx, dx), _mm256_mul_pd(dy, dy)), _mm256_mul_pd(dz, dz));
        in |= (unsigned)_mm256_movemask_pd(_mm256_cmp_pd(d2, r2, _CMP_LE_OQ)) << (4 * h);
    }
    const __m256i ids = _mm256_loadu_si256((const __m256i *)(const void *)(s->items + klo));
    const unsigned me = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(ids, _mm256_set1_epi32(self))));
    in &= ~me & ((1u << cnt) - 1u);
    const __m256i lanes = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(const void *)(cand_lanes + in)));
    /* all eight stored; len + 8 <= CAND_BUF (len <= CAND_MAX_LEN here) */
    _mm256_storeu_si256((__m256i *)(void *)(buf + len), _mm256_permutevar8x32_epi32(ids, lanes));
    return len + (int32_t)_mm_popcnt_u32(in);
}
#endif

/* arg: the env; its cand_r2 is the squared pre-selection radius at the
 * step start.  Each of the four pools holds 2N int32 slots. */
static inline __attribute__((always_inline)) void cand_slice_with(seer_uav_env *e, int64_t lo, int64_t hi,
                                                                   const int avx2) {
    (void)avx2; /* without CAND_AVX2 */
    seer_uav *m = e->m;
    const int32_t *start = e->cell_start;
    const int64_t nx = m->grid_nx, ny = m->grid_ny, nz = m->grid_nz, n = m->num_uavs, P = 2 * n;
    uint32_t *head = (uint32_t *)e->sep_key;
    /* positions in items order, one block per axis: rows in sequence */
    const cand_src src = {e->cell_items, e->grid_pos, e->grid_pos + n, e->grid_pos + 2 * n, n, e->cand_r2};
    int32_t buf[CAND_BUF];
    /* this slice's share of the slots: [CAND_SLOTS lo, CAND_SLOTS hi) */
    int64_t g = CAND_SLOTS * lo;
    const int64_t g_end = CAND_SLOTS * hi;
    for (int64_t i = lo; i < hi; i++) {
        if (!m->alive[i]) { /* its clock has stopped: no TICK reads a list */
            head[i] = SEER_UAV_CAND_NONE;
            continue;
        }
        const double *p = m->pos + 3 * i;
        const int32_t *co = e->cand_cells + 3 * i;
        int32_t len = 0;
        for (int64_t z = co[2] - 1; z <= co[2] + 1 && len >= 0; z++) {
            if (z < 0 || z >= nz) continue;
            for (int64_t y = co[1] - 1; y <= co[1] + 1 && len >= 0; y++) {
                if (y < 0 || y >= ny) continue;
                const int64_t row = (z * ny + y) * nx;
                const int32_t klo = start[row + (co[0] > 0 ? co[0] - 1 : 0)];
                const int32_t khi = start[row + (co[0] + 1 < nx ? co[0] + 1 : nx - 1) + 1];
                if (len + (khi - klo) > CAND_BUF - 8) { /* the row might not fit */
                    for (int32_t k = klo; k < khi && len >= 0; k++) {
                        const int32_t c = src.items[k];
                        const double dx = src.gx[k] - p[0], dy = src.gy[k] - p[1], dz = src.gz[k] - p[2];
                        if (c == i || !(dx * dx + dy * dy + dz * dz <= src.r2)) continue;
                        if (len == CAND_MAX_LEN) len = -1; /* too many: scan the cells */
                        else buf[len++] = c;
                    }
                    continue;
                }
#if CAND_AVX2
                if (avx2)
                    len = cand_row_avx2(&src, klo, khi, p, (int32_t)i, buf, len);
                else
#endif
                    len = cand_row_plain(&src, klo, khi, p, (int32_t)i, buf, len);
                if (len > CAND_MAX_LEN) len = -1;
            }
        }
        uint32_t h = SEER_UAV_CAND_NONE;
        if (len == 0) {
            h = 0; /* pool 0, offset 0, no candidates */
        } else if (len > 0) {
            const int64_t pool_end = (g / P + 1) * P; /* a list stays in one pool */
            if (g + len > pool_end) g = pool_end;
            if (g + len <= g_end) {
                int32_t *dst = (int32_t *)m->cand_pool[g / P] + g % P;
                memcpy(dst, buf, sizeof(int32_t) * (size_t)len);
                h = (uint32_t)(g / P) << 30 | (uint32_t)(g % P) << 8 | (uint32_t)len;
                g += len;
            }
        }
        head[i] = h;
    }
}

static void cand_slice_plain(seer_uav_env *e, int64_t lo, int64_t hi) { cand_slice_with(e, lo, hi, 0); }

#if CAND_AVX2
__attribute__((target("avx2,popcnt"))) static void cand_slice_avx2(seer_uav_env *e, int64_t lo, int64_t hi) {
    cand_slice_with(e, lo, hi, 1);
}
#endif

static void cand_slice(void *arg, int64_t lo, int64_t hi, int32_t worker) {
    (void)worker;
    seer_uav_env *e = arg;
#if CAND_AVX2
    if (cand_avx2_ok && e->cand_simd >= 0) {
        cand_slice_avx2(e, lo, hi);
        return;
    }
#endif
    cand_slice_plain(e, lo, hi);
}

/* The candidate lists of a step that starts at tick J (see above);
 * behind: the lists themselves are left to the pool (see ahead below). */
static void build_candidates(seer_uav_env *e, int64_t J, int behind) {
    seer_uav *m = e->m;
    const int32_t n = m->num_uavs, steps = e->ticks_per_step;
    const int64_t live = e->cell_start[(int64_t)m->grid_nx * m->grid_ny * m->grid_nz];
    m->cand_tick_hi = m->cand_tick_lo = J; /* none while building */
    if (n <= 0 || (int64_t)n > ((int64_t)1 << 21) || steps < 1) return; /* offsets need 22 bits */
    /* the fastest start speed (squared) and the longest time a UAV
     * integrates over before the step's last window starts: its periods
     * that begin at ticks J .. J + steps - 2 */
    double v2 = m->v_max2, tmax = 0.0;
    for (int32_t i = 0; i < n; i++) {
        if (!m->alive[i]) continue;
        const double *v = m->vel + 3 * (int64_t)i;
        const double s2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
        if (s2 > v2) v2 = s2;
        const int32_t per = m->period[i];
        const double T = m->ctrl_dt[i];
        if (per < 1 || !(T >= 0.0)) return; /* no bound: scan the cells */
        const double t = (double)((steps - 1 + per - 1) / per) * T;
        if (t > tmax) tmax = t;
    }
    const double R = sqrt(m->radius2) + 2.0 * sqrt(v2) * tmax;
    /* rounding margin: the float distances are off by ~1e-16 relative */
    const double Rm = R * (1.0 + 1e-9) + 1e-6;
    e->cand_r2 = Rm * Rm;
    if (!(e->cand_r2 < INFINITY)) return;
    m->cand_head = (const uint32_t *)e->sep_key;
    m->cand_pool[0] = (const int32_t *)(void *)e->sep_sorted;
    m->cand_pool[1] = (const int32_t *)(void *)e->sep_a;
    m->cand_pool[2] = (const int32_t *)(void *)e->sep_b;
    m->cand_pool[3] = (const int32_t *)(void *)e->dist;
    gather_ctx g = {e, e->cell_items, NULL, m->num_uavs};
    run_phase(e, live, gather_slice, &g);
    if (behind)
        seer_rt_parallel_for_begin(e->rt, n, phase_grain(n, seer_rt_num_workers(e->rt)), cand_slice, e);
    else
        run_phase(e, n, cand_slice, e);
    m->cand_tick_hi = J + steps; /* read by the step's TICKs, after the loop's end */
}

/* The readout (and a new episode) reuse the lists' buffers. */
static inline void drop_candidates(seer_uav_env *e) { e->m->cand_tick_hi = e->m->cand_tick_lo; }

/* ---- slots in space order --------------------------------------------------
 *
 * The state's rows and the runtime's entities are slots (uav_swarm.h).  A
 * reset puts the UAVs into slots by their start cells; as they fly, the
 * order decays towards random, and with it what it bought: a TICK's
 * recipients in nearby rows, lanes and (on a pool) the same worker's share.
 * So each step measures the decay on its grid (slot_spread: the mean
 * |slot - neighbour's slot| / N over a sample; 1/3 for a random order)
 * and, once it has gone a quarter of the way from its value after the last
 * ordering to random, and no sooner than RELABEL_MIN_STEPS steps after it,
 * the next step starts by putting the UAVs into slots by their current
 * cells again: the runtime renames its entities (seer_rt_relabel) and every
 * slot row moves.  That costs about one step's worth of memory traffic,
 * hence the spacing.  Results never depend on it (everything is keyed by
 * agent id), only the speed does.
 *
 * From SEER_UAV_SPACE_MIN UAVs on.  A swarm that small fits the core's L2
 * cache (1.7 KiB a UAV), so one worker gains nothing from the order, and
 * loses nothing either; a pool does gain: its workers' shares of the lanes
 * are slabs of space, so fewer messages cross from one worker's lanes to
 * the other's, with their lines.  At 256 UAVs ('large') on 2 workers 1.04x
 * the step in agent order, 1.05x at 128 and 512, and 1.00x on 1
 * (bench/results/uav_small_space_order.md).  (Until 2026-12 this began at
 * 1,024 UAVs: space order then ran a little slower than agent order on one
 * worker below that, the periods, by id, no longer following a pattern
 * along the lanes.)  bench/bench_uav_slots.py times both orders
 * alternating in one process (bench/results/uav_slots.md).  On one worker,
 * space order also makes the steps tiled (step_tiled, below), whose tiles
 * are runs of strips' slots, from SEER_UAV_TILES_MIN UAVs on: below that,
 * window by window is faster (1,024 UAVs: 0.92 of the tiled step's time,
 * 2,048: 0.97; 4,096: 0.99-1.02, 8,192: 1.05, 16,384: 1.13). */

static int slots_in_space(const seer_uav_env *e) {
    return e->slot_layout > 0 || (e->slot_layout == 0 && e->m->num_uavs >= SEER_UAV_SPACE_MIN);
}

#define RELABEL_MIN_STEPS 10
#define RANDOM_SPREAD (1.0 / 3.0) /* mean |i - j| / N of two random slots */
#define SPREAD_SAMPLE 8           /* measure every 8th pair of grid neighbours */

static int64_t tile_side(const seer_uav_env *e) { return e->tile_cells > 0 ? e->tile_cells : SEER_UAV_TILE_CELLS; }

/* The broadcast grid's axes by extent, longest first (stable). */
static void space_axes(const seer_uav *m, int ax[3]) {
    const int64_t dims[3] = {m->grid_nx, m->grid_ny, m->grid_nz};
    ax[0] = 0, ax[1] = 1, ax[2] = 2;
    for (int a = 1; a < 3; a++)
        for (int b = a; b > 0 && dims[ax[b]] > dims[ax[b - 1]]; b--) {
            const int t = ax[b];
            ax[b] = ax[b - 1];
            ax[b - 1] = t;
        }
}

/* agent_in_slot: the agents ordered by cell in strips: the broadcast
 * grid's cells are cut across its second-longest axis into strips of
 * tile_side cells (the rows of a tiled step's tiles), strip after strip,
 * and within a strip ordered by the longest axis, then the second, then
 * the third; agent id order within a cell.  So a pool's contiguous shares
 * of the lanes are slabs of strips, and a tile of a tiled step finds its
 * UAVs in one or two runs of nearby slots.  pos: positions by row, the
 * row of agent a being row_of_agent[a] (NULL: a).  Lost UAVs are ordered
 * where they were lost, so every share keeps its part of the live ones. */
static void spatial_order(seer_uav_env *e, const double *pos, const int32_t *row_of_agent, int32_t *agent_in_slot) {
    const seer_uav *m = e->m;
    const int32_t n = m->num_uavs;
    const int64_t dims[3] = {m->grid_nx, m->grid_ny, m->grid_nz}, cells = dims[0] * dims[1] * dims[2];
    int ax[3];
    space_axes(m, ax);
    const int64_t T = tile_side(e), d0 = dims[ax[0]], d1 = dims[ax[1]], d2 = dims[ax[2]];
    int32_t *key = e->sep_key, *start = e->cell_start; /* scratch between steps */
    memset(start, 0, sizeof(int32_t) * (size_t)(cells + 1));
    for (int32_t a = 0; a < n; a++) {
        const double *p = pos + 3 * (int64_t)(row_of_agent ? row_of_agent[a] : a);
        int64_t c[3];
        for (int k = 0; k < 3; k++) c[k] = clamp_cell(p[k], e->cell, dims[k]);
        const int64_t s0 = c[ax[1]] / T * T, h = d1 - s0 < T ? d1 - s0 : T; /* the strip's first row, height */
        key[a] = (int32_t)(s0 * d0 * d2 + (c[ax[0]] * h + (c[ax[1]] - s0)) * d2 + c[ax[2]]);
        start[key[a] + 1]++;
    }
    for (int64_t k = 0; k < cells; k++) start[k + 1] += start[k];
    for (int32_t a = 0; a < n; a++) agent_in_slot[start[key[a]]++] = a;
}

/* The cycles of the permutation src (rows[d] takes old rows[src[d]]):
 * their first rows into starts, fixed points left out; done: n bytes of
 * scratch.  Returns how many. */
static int32_t cycle_starts(const int32_t *src, int32_t n, uint8_t *done, int32_t *starts) {
    int32_t k = 0;
    memset(done, 0, (size_t)n);
    for (int32_t d0 = 0; d0 < n; d0++) {
        if (done[d0]) continue;
        for (int32_t d = d0; !done[d]; d = src[d]) done[d] = 1;
        if (src[d0] != d0) starts[k++] = d0;
    }
    return k;
}

typedef struct slot_rows {
    void *rows;
    size_t bytes;
} slot_rows;

typedef struct permute_ctx {
    const slot_rows *arrays;
    const int32_t *src, *starts;
    int32_t cycles;
} permute_ctx;

/* Arrays [lo, hi) of a relabel: rows[d] = old rows[src[d]], in place, one
 * cycle at a time through a one-row buffer. */
static void permute_slice(void *arg, int64_t lo, int64_t hi, int32_t worker) {
    (void)worker;
    const permute_ctx *pc = arg;
    double tmp[4 * SEER_UAV_MAX_TABLE]; /* the widest row: nb's */
    for (int64_t k = lo; k < hi; k++) {
        char *b = pc->arrays[k].rows;
        const size_t row = pc->arrays[k].bytes;
        for (int32_t c = 0; c < pc->cycles; c++) {
            const int32_t d0 = pc->starts[c];
            memcpy(tmp, b + row * (size_t)d0, row);
            int32_t d = d0;
            for (int32_t from = pc->src[d]; from != d0; d = from, from = pc->src[d])
                memcpy(b + row * (size_t)d, b + row * (size_t)from, row);
            memcpy(b + row * (size_t)d, tmp, row);
        }
    }
}

/* Slots by current cells (see above).  Between steps only; the scratch it
 * uses (perm, sep_count, sep_slot_b) is free there.  0, or the runtime's
 * code (then nothing moved). */
static int relabel(seer_uav_env *e) {
    seer_uav *m = e->m;
    const int32_t n = m->num_uavs, C = m->table_cap;
    int32_t *agent_in_slot = e->perm; /* lattice slots >= N */
    int32_t *src = e->sep_count, *new_of_old = (int32_t *)e->sep_slot_b;
    /* SEER_UAV_SEP_SLOTS >= 3 words per UAV */
    int32_t *starts = (int32_t *)e->sep_slot_b + n;
    uint8_t *done = (uint8_t *)(e->sep_slot_b + 2 * (int64_t)n);
    spatial_order(e, m->pos, e->slot_of, agent_in_slot);
    for (int32_t s = 0; s < n; s++) {
        src[s] = e->slot_of[agent_in_slot[s]];
        new_of_old[src[s]] = s;
    }
    const int rc = seer_rt_relabel(e->rt, new_of_old);
    if (rc != SEER_OK) return rc;
    const slot_rows arrays[] = {
        {m->nb, sizeof(seer_uav_nb) * C}, /* the widest first: the pool balances the rest behind it */
        {m->pos, 3 * sizeof(double)},          {m->vel, 3 * sizeof(double)},
        {e->acc, 3 * sizeof(double)},          {(void *)e->target, 3 * sizeof(double)},
        {m->energy, sizeof(double)},           {e->alive, 1},
        {(void *)m->period, sizeof(int32_t)},  {(void *)m->ctrl_dt, sizeof(double)},
        {m->bcast, 6 * sizeof(float)},         {m->bcast_tick, sizeof(int64_t)},
        {m->nb_count, sizeof(int32_t)},        {m->sent, sizeof(int64_t)},
        {m->received, sizeof(int64_t)},        {e->prev_dist, sizeof(double)},
    };
    const int64_t count = (int64_t)(sizeof arrays / sizeof arrays[0]);
    permute_ctx pc = {arrays, src, starts, cycle_starts(src, n, done, starts)};
    /* one array per slice: they are independent */
    const int32_t workers = seer_rt_num_workers(e->rt);
    if (workers > 1 && n >= PAR_MIN) seer_rt_parallel_for(e->rt, count, 1, permute_slice, &pc);
    else permute_slice(&pc, 0, count, 0);
    for (int32_t s = 0; s < n; s++) {
        e->agent_of[s] = agent_in_slot[s];
        e->slot_of[agent_in_slot[s]] = s;
    }
    e->relabels++;
    return SEER_OK;
}

/* slot_spread over every SPREAD_SAMPLE-th pair of UAVs next to each other
 * in the broadcast grid's order (cell_items: by cell, x fastest), i.e. of
 * neighbours along x.  From the grid, not the candidate lists, whose
 * presence depends on how the pool cut their phase: the measure, hence
 * when the slots are ordered, is the same for every pool size. */
static void measure_spread(seer_uav_env *e) {
    const seer_uav *m = e->m;
    const int32_t n = m->num_uavs;
    const int32_t live = e->cell_start[(int64_t)m->grid_nx * m->grid_ny * m->grid_nz];
    double sum = 0.0;
    int64_t cnt = 0;
    for (int32_t k = 0; k + 1 < live; k += SPREAD_SAMPLE, cnt++) sum += abs(e->cell_items[k + 1] - e->cell_items[k]);
    if (cnt == 0) return;
    e->slot_spread = sum / ((double)cnt * (double)n);
    if (e->slot_spread_base < 0.0) e->slot_spread_base = e->slot_spread;
}

/* Whether this step starts by ordering the slots again (see above). */
static int relabel_due(const seer_uav_env *e) {
    const double base = e->slot_spread_base;
    const int64_t since = e->episode[SEER_UAV_EP_STEPS] - e->relabel_step;
    if (!e->rt || !e->perm || !e->sep_count || !e->sep_slot_b || !slots_in_space(e)) return 0;
    if (e->relabel_period > 0) return since >= e->relabel_period;
    return base >= 0.0 && since >= RELABEL_MIN_STEPS && e->slot_spread > base + 0.25 * (RANDOM_SPREAD - base);
}

/* The broadcast grid of the step that starts now, from the cells in
 * sep_key, and its candidate lists (behind: left to the pool). */
static void build_grid(seer_uav_env *e, int behind) {
    const seer_uav *m = e->m;
    bucket(e->alive, e->sep_key, m->num_uavs, (int64_t)m->grid_nx * m->grid_ny * m->grid_nz, e->cell_start,
           e->cell_items);
    build_candidates(e, e->episode[SEER_UAV_EP_TICK], behind);
    measure_spread(e);
}

/* ---- ahead: the next step's grid, between steps ---------------------------
 *
 * A copy step (a PettingZoo step) returns to Python, which builds the
 * step's dicts and then the policy's next actions while the pool's other
 * threads wait for the next step.  The next step's broadcast grid and
 * candidate lists are a function of the state at its start, not of its
 * actions, and most of their time is the lists' (the cells' positions
 * scanned per UAV).  So a copy step that leaves its episode running on a
 * pool of several workers builds the grid before it returns and leaves
 * the lists to the pool (seer_rt_parallel_for_begin); the next step's
 * start ends that loop (seer_rt_parallel_for_end: the slices no pool
 * thread has claimed yet run there), and so does anything that replaces
 * the state first (a reset; the runtime's own calls end it too).  Which
 * thread builds them, and when, changes no result.  A step that renames
 * the slots first (relabel) builds its grid itself.  seer_uav_env_step
 * does not build ahead: its callers may write the state between steps. */
static void begin_ahead(seer_uav_env *e) {
    if (!e->rt || !e->sep_slot_b || seer_rt_num_workers(e->rt) < 2 || relabel_due(e)) return;
    e->cand_cells = ahead_cells(e); /* the state's cell_of stays the last step's until the next one starts */
    run_phase(e, e->m->num_uavs, cells_slice, e);
    build_grid(e, 1);
    e->ahead = 1;
}

/* Wait for the grid begun ahead, if any (before anything reads it, or
 * replaces the state it was built from). */
static void end_ahead(seer_uav_env *e) {
    if (!e->ahead) return;
    e->ahead = 0;
    seer_rt_parallel_for_end(e->rt);
}

void seer_uav_prepare_step(seer_uav_env *e) {
    const int ahead = e->ahead;
    end_ahead(e);
    /* An optimisation: if the runtime cannot rename (an old SEER, no
     * memory), the slots stay as they are. */
    if (!ahead && relabel_due(e) && relabel(e) == SEER_OK) {
        e->relabel_step = e->episode[SEER_UAV_EP_STEPS];
        e->slot_spread_base = -1.0; /* measured below */
    }
    prepare_ctx pc = {e, !ahead};
    if (!ahead) e->cand_cells = e->cell_of;
    run_phase(e, e->m->num_uavs, prepare_slice, &pc);
    if (!ahead) build_grid(e, 0);
    e->cand_cells = e->cell_of; /* the TICKs' cell scans read cell_of */
}

/* ---- reset ---------------------------------------------------------------- */

/* SplitMix64: the env's seed stream and the initial state's draws. */
static inline uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline double unit(uint64_t *s) { return (double)(splitmix(s) >> 11) * 0x1.0p-53; }

/* Uniform in [0, n): Lemire's multiply-shift (bias below n / 2^64). */
static inline int32_t below(uint64_t *s, int32_t n) {
    return (int32_t)(((unsigned __int128)splitmix(s) * (uint64_t)n) >> 64);
}

int64_t seer_uav_next_seed(seer_uav_env *e) {
    return (int64_t)(splitmix((uint64_t *)&e->episode[SEER_UAV_EP_SEED]) & 0x7fffffff);
}

/* The first n entries of a uniform permutation of 0..slots-1 (partial
 * Fisher-Yates), as lattice coordinates (x, y, z). */
static void lattice_sample(seer_uav_env *e, uint64_t *rng, int32_t n, int32_t slots, int32_t *out) {
    int32_t *perm = e->perm;
    const int32_t side = e->lattice_side;
    for (int32_t k = 0; k < slots; k++) perm[k] = k;
    for (int32_t i = 0; i < n; i++) {
        const int32_t j = i + below(rng, slots - i);
        const int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
        out[3 * i] = perm[i] % side;
        out[3 * i + 1] = (perm[i] / side) % side;
        out[3 * i + 2] = perm[i] / (side * side);
    }
}

void seer_uav_initial_state(seer_uav_env *e, uint64_t seed, int32_t spatial) {
    seer_uav *m = e->m;
    const int32_t n = m->num_uavs, C = m->table_cap, side = e->lattice_side;
    const int32_t slots = side * side * e->layers;
    uint64_t rng = seed;
    end_ahead(e);
    drop_candidates(e); /* they were for the positions being replaced */
    /* The agents' draws in agent order, in scratch that is free until the
     * first step (grid_pos: starts, sep_slot_pen: targets, which holds
     * SEER_UAV_SEP_SLOTS >= 3 doubles per UAV; sep_a / sep_key: the
     * periods, which the last episode's slots hold), then into the slots. */
    double *P = e->grid_pos, *G = e->sep_slot_pen, *period_dt = e->sep_a;
    int32_t *period = e->sep_key;
    for (int32_t s = 0; s < n; s++) {
        period[e->agent_of[s]] = m->period[s];
        period_dt[e->agent_of[s]] = m->ctrl_dt[s];
    }
    /* cell_of is rebuilt before every step: scratch for the lattice picks */
    int32_t *start = e->cell_of;
    lattice_sample(e, &rng, n, slots, start);
    for (int32_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            P[3 * (int64_t)i + k] =
                e->pad + ((double)start[3 * i + k] + 0.5) * e->start_spacing - e->jitter + 2.0 * e->jitter * unit(&rng);
    lattice_sample(e, &rng, n, slots, start);
    const double dims[3] = {side, side, e->layers};
    for (int32_t i = 0; i < n; i++)
        for (int k = 0; k < 3; k++)
            G[3 * (int64_t)i + k] =
                e->half[k] + ((double)start[3 * i + k] - (dims[k] - 1.0) / 2.0) * e->formation_spacing;
    int32_t *period_agent = (int32_t *)(void *)e->sep_b; /* sep_key is spatial_order's scratch */
    memcpy(period_agent, period, sizeof(int32_t) * (size_t)n);
    if (spatial > 0 || (spatial < 0 && slots_in_space(e))) {
        spatial_order(e, P, NULL, e->agent_of);
    } else {
        for (int32_t s = 0; s < n; s++) e->agent_of[s] = s;
    }
    e->slot_spread_base = -1.0; /* measured by the first step */
    e->relabel_step = 0;
    double *target = (double *)e->target;
    for (int32_t s = 0; s < n; s++) {
        const int32_t a = e->agent_of[s];
        e->slot_of[a] = s;
        memcpy(m->pos + 3 * (int64_t)s, P + 3 * (int64_t)a, 3 * sizeof(double));
        memcpy(target + 3 * (int64_t)s, G + 3 * (int64_t)a, 3 * sizeof(double));
        ((int32_t *)m->period)[s] = period_agent[a];
        ((double *)m->ctrl_dt)[s] = period_dt[a];
    }
    memset(m->vel, 0, sizeof(double) * 3 * (size_t)n);
    memset(e->acc, 0, sizeof(double) * 3 * (size_t)n);
    memset(m->energy, 0, sizeof(double) * (size_t)n);
    memset(e->alive, 1, (size_t)n);
    memset(m->bcast, 0, sizeof(float) * 6 * (size_t)n);
    memset(m->nb_count, 0, sizeof(int32_t) * (size_t)n);
    memset(m->sent, 0, sizeof(int64_t) * (size_t)n);
    memset(m->received, 0, sizeof(int64_t) * (size_t)n);
    memset(e->cell_of, 0, sizeof(int32_t) * 3 * (size_t)n);
    for (int32_t i = 0; i < n; i++) {
        m->bcast_tick[i] = -1;
        for (int32_t s = 0; s < C; s++) m->nb[(int64_t)C * i + s] = (seer_uav_nb){-1, -1, {0}};
    }
}

int seer_uav_env_reset(seer_uav_env *e, uint64_t seed) {
    const int32_t n = e->m->num_uavs;
    seer_rt_reset(e->rt, seed);
    seer_uav_initial_state(e, seed, -1);
    for (int32_t i = 0; i < n; i++) { /* every UAV's clock starts at tick 0 */
        const int rc = seer_rt_push(e->rt, i, 0.0, SEER_UAV_TICK, 0);
        if (rc != SEER_OK) return rc;
    }
    int64_t *ep = e->episode;
    ep[SEER_UAV_EP_TICK] = ep[SEER_UAV_EP_STEPS] = ep[SEER_UAV_EP_TRUNCATED] = 0;
    ep[SEER_UAV_EP_LIVE] = n;
    ep[SEER_UAV_EP_VERSION]++;
    ep[SEER_UAV_EP_SEED] = (int64_t)seed;
    seer_uav_readout(e, 0, 1);
    return SEER_OK;
}

/* ---- readout ------------------------------------------------------------- */

/* numpy's pair search visits half of the 27 neighbour offsets (dz, dy, dx):
 * (0, 0, 0) first, then the 13 lexicographically greater ones (HALF in
 * seer/envs/uav_swarm/model.py); separation() walks them as rows, FROWS below. */

/* First index in sorted[lo, hi) whose cell (the high 32 bits) is >= cell. */
static int32_t lower_cell(const uint64_t *sorted, int32_t lo, int32_t hi, uint64_t cell) {
    const uint64_t want = cell << 32;
    while (lo < hi) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (sorted[mid] < want) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* Stable LSD radix sort of the live entries (cell << 32 | agent, already in
 * agent order) by cell: the (cell, agent) order a full sort gives, in O(n).
 * As few passes as digits of up to 11 bits allow, the bits shared evenly
 * among them: a pass costs about 2 n + 2^bits, and at 'large' (256 UAVs,
 * 22,528 cells: 15 bits) two passes of 11 bits spent most of their time
 * clearing and summing 2048 counts each, where 8 bits need 256. */
static void sort_by_cell(uint64_t *a, uint64_t *tmp, int32_t n, uint64_t max_cell) {
    enum { MAX_BITS = 11, SIZE = 1 << MAX_BITS };
    int32_t count[SIZE];
    int bits_all = 0;
    while (bits_all < 32 && (max_cell >> bits_all) != 0) bits_all++;
    if (n <= 1 || bits_all == 0) return;
    const int passes = (bits_all + MAX_BITS - 1) / MAX_BITS, bits = (bits_all + passes - 1) / passes;
    const int32_t size = 1 << bits;
    const uint64_t mask = (uint64_t)size - 1;
    for (int shift = 32; shift < 32 + bits_all; shift += bits) {
        memset(count, 0, sizeof(int32_t) * (size_t)size);
        for (int32_t i = 0; i < n; i++) count[(a[i] >> shift) & mask]++;
        int32_t sum = 0;
        for (int32_t d = 0; d < size; d++) {
            const int32_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (int32_t i = 0; i < n; i++) tmp[count[(a[i] >> shift) & mask]++] = a[i];
        memcpy(a, tmp, sizeof(uint64_t) * (size_t)n);
    }
}

/* Separation penalties and collisions over the pairs of live UAVs closer
 * than d_safe, in numpy's pair order: UAVs by (cell, agent id), then
 * offsets in HALF order, then the neighbour cell's UAVs by agent id (in its
 * own cell only those after this one).  sep_a / sep_b are bincount(a, pen)
 * and bincount(b, pen), by agent id: each sums its pairs in pair order.
 *
 * On a pool, the pairs are found in parallel, each UAV's by the slice that
 * holds its sorted position (sep_a is then its own sum), and kept in
 * SEP_SLOTS slots per position; one pass in pair order then adds each pen
 * to its second UAV's sep_b, so every partial sum is the one numpy forms.
 * A position with more pairs than slots is walked again in that pass. */
#define SEP_SLOTS SEER_UAV_SEP_SLOTS
#define SEP_COL 0x80000000u /* in a slot's id: the pair collided */

typedef struct sep_ctx {
    seer_uav_env *e;
    int32_t live;
} sep_ctx;

static void sep_phase_cells(void *arg, int64_t lo, int64_t hi, int32_t worker) {
    (void)worker;
    seer_uav_env *e = arg;
    const seer_uav *m = e->m;
    const int64_t nx = e->sep_nx, ny = e->sep_ny, nz = e->sep_nz;
    for (int64_t i = lo; i < hi; i++) {
        const double *p = m->pos + 3 * i;
        const int64_t x = clamp_cell(p[0], e->d_safe, nx), y = clamp_cell(p[1], e->d_safe, ny),
                      z = clamp_cell(p[2], e->d_safe, nz);
        e->sep_key[i] = (int32_t)((z * ny + y) * nx + x);
        e->sep_a[i] = e->sep_b[i] = 0.0;
        e->collided[i] = 0;
        const double *g = e->target + 3 * i;
        const double d0 = g[0] - p[0], d1 = g[1] - p[1], d2 = g[2] - p[2];
        e->dist[i] = sqrt(d0 * d0 + d1 * d1 + d2 * d2);
    }
}

/* The HALF offsets grouped into rows of cells that are consecutive in the
 * (cell, id) order: the row (dz, dy) = (0, 0) holds this cell and the next
 * (dx = 0, 1), the four rows below hold dx = -1, 0, 1.  In HALF order and,
 * within a row, in cell order, so one binary search per row visits the
 * pairs in numpy's order. */
static const int8_t FROWS[4][2] = {{0, 1}, {1, -1}, {1, 0}, {1, 1}};

typedef struct sep_geom {
    const uint64_t *sorted;
    int32_t live;
    int64_t nx, ny, nz;
} sep_geom;

/* Cells [klo, khi] of row (z + dz, y + dy) around x; 0 if out of the grid. */
static inline int row_cells(const sep_geom *g, int64_t x, int64_t y, int64_t z, int dz, int dy, uint64_t *klo,
                            uint64_t *khi) {
    const int64_t zz = z + dz, yy = y + dy;
    if (yy < 0 || yy >= g->ny || zz < 0 || zz >= g->nz) return 0;
    const int64_t base = (zz * g->ny + yy) * g->nx;
    *klo = (uint64_t)(base + (x > 0 ? x - 1 : 0));
    *khi = (uint64_t)(base + (x + 1 < g->nx ? x + 1 : g->nx - 1));
    return 1;
}

/* pen of a pair (first, second) closer than d_safe, as numpy forms it; -1 if not close */
static inline double pair_pen(const seer_uav_env *e, const double *pf, const double *ps, double r2, int *col) {
    const double d0 = ps[0] - pf[0], d1 = ps[1] - pf[1], d2 = ps[2] - pf[2];
    const double dd = d0 * d0 + d1 * d1 + d2 * d2;
    if (!(dd < r2)) return -1.0;
    const double d = sqrt(dd);
    *col = d < e->d_col;
    return (e->d_safe - d) / e->d_safe;
}

/* Where each of the four FROWS rows starts, for a walk over increasing
 * sorted positions: a row's first cell only grows with the position's cell
 * (it is the cell plus a constant, less one unless x = 0), so its first
 * entry does too, and a cursor moved forward replaces a binary search per
 * row and UAV (three quarters of the pass's time, in cache misses, in a
 * big swarm).  -1: not placed yet (one binary search). */
typedef struct row_cursors {
    int32_t q[4];
} row_cursors;

static const row_cursors CURSORS_UNSET = {{-1, -1, -1, -1}};

/* The pairs (a, b) (agent ids) of the UAV a at sorted position r, in numpy's order.
 * sep_a[a] becomes their sum and collided[a] is set if one collided.  With
 * slots: the first SEP_SLOTS pairs go there (b | SEP_COL, pen); without
 * (slot_b NULL): each pen goes to sep_b[b] at once (the pass in pair order).
 * cur: the rows' cursors, for positions r visited in increasing order.
 * Returns the number of pairs. */
static int32_t walk_pairs(seer_uav_env *e, const sep_geom *g, int32_t r, double r2, uint32_t *slot_b,
                          double *slot_pen, row_cursors *cur) {
    const uint64_t *sorted = g->sorted;
    const int32_t live = g->live, a = (int32_t)(uint32_t)sorted[r];
    const uint64_t k = sorted[r] >> 32;
    const int64_t x = (int64_t)k % g->nx, y = ((int64_t)k / g->nx) % g->ny, z = (int64_t)k / (g->nx * g->ny);
    const double *gp = e->grid_pos, *pa = gp + 3 * (int64_t)r; /* positions in sorted order */
    double sum = 0.0;
    int col = 0;
    int32_t n = 0;
    for (int w = -1; w < 4; w++) {
        uint64_t klo, khi;
        int32_t q;
        if (w < 0) { /* this cell after a, then the next one */
            klo = k;
            khi = k + (x + 1 < g->nx ? 1 : 0);
            q = r + 1;
        } else {
            if (!row_cells(g, x, y, z, FROWS[w][0], FROWS[w][1], &klo, &khi)) continue;
            const uint64_t want = klo << 32;
            if (cur->q[w] < 0) {
                q = lower_cell(sorted, r + 1, live, klo);
            } else {
                q = cur->q[w] > r + 1 ? cur->q[w] : r + 1;
                while (q < live && sorted[q] < want) q++;
            }
            cur->q[w] = q;
        }
        for (; q < live && (sorted[q] >> 32) <= khi; q++) {
            const int32_t b = (int32_t)(uint32_t)sorted[q];
            int c1 = 0;
            const double pen = pair_pen(e, pa, gp + 3 * (int64_t)q, r2, &c1);
            if (pen < 0) continue;
            sum += pen;
            col |= c1;
            if (!slot_b) {
                e->sep_b[b] += pen;
                if (c1) e->collided[b] = 1;
            } else if (n < SEP_SLOTS) {
                slot_b[n] = (uint32_t)b | (c1 ? SEP_COL : 0u);
                slot_pen[n] = pen;
            }
            n++;
        }
    }
    e->sep_a[a] = sum;
    if (col) e->collided[a] = 1;
    return n;
}

static void sep_phase_pairs(void *arg, int64_t lo, int64_t hi, int32_t worker) {
    (void)worker;
    const sep_ctx *sc = arg;
    seer_uav_env *e = sc->e;
    const sep_geom g = {e->sep_sorted, sc->live, e->sep_nx, e->sep_ny, e->sep_nz};
    const double r2 = e->d_safe * e->d_safe;
    row_cursors cur = CURSORS_UNSET;
    for (int64_t r = lo; r < hi; r++)
        e->sep_count[r] = walk_pairs(e, &g, (int32_t)r, r2, e->sep_slot_b + SEP_SLOTS * r,
                                     e->sep_slot_pen + SEP_SLOTS * r, &cur);
}

static void separation(seer_uav_env *e) {
    const seer_uav *m = e->m;
    const int32_t n = m->num_uavs;
    run_phase(e, n, sep_phase_cells, e); /* also each UAV's target distance */
    uint64_t *sorted = e->sep_sorted;
    int32_t live = 0;
    for (int32_t a = 0; a < n; a++) { /* in agent order, as the radix sort wants */
        const int32_t i = e->slot_of[a];
        if (e->alive[i]) sorted[live++] = ((uint64_t)(uint32_t)e->sep_key[i] << 32) | (uint32_t)a;
    }
    /* sep_b is free until the pairs phase: the radix sort's buffer */
    sort_by_cell(sorted, (uint64_t *)(void *)e->sep_b, live,
                 (uint64_t)(e->sep_nx * e->sep_ny * e->sep_nz));
    for (int32_t i = 0; i < n; i++) e->sep_b[i] = 0.0;
    gather_ctx gc = {e, NULL, sorted, 0};
    run_phase(e, live, gather_slice, &gc);
    const sep_geom g = {sorted, live, e->sep_nx, e->sep_ny, e->sep_nz};
    const double r2 = e->d_safe * e->d_safe;
    int32_t workers = e->rt ? seer_rt_num_workers(e->rt) : 1;
    if (workers > 1 && live >= PAR_MIN && e->sep_slot_b && e->sep_slot_pen && e->sep_count) {
        sep_ctx sc = {e, live};
        run_phase(e, live, sep_phase_pairs, &sc);
        row_cursors cur = CURSORS_UNSET;
        for (int32_t r = 0; r < live; r++) { /* the sep_b sums, in pair order */
            const int32_t c = e->sep_count[r];
            if (c > SEP_SLOTS) {
                (void)walk_pairs(e, &g, r, r2, NULL, NULL, &cur);
                continue;
            }
            const uint32_t *sb = e->sep_slot_b + SEP_SLOTS * (int64_t)r;
            const double *sp = e->sep_slot_pen + SEP_SLOTS * (int64_t)r;
            for (int32_t j = 0; j < c; j++) {
                const int32_t b = (int32_t)(sb[j] & ~SEP_COL);
                e->sep_b[b] += sp[j];
                if (sb[j] & SEP_COL) e->collided[b] = 1;
            }
        }
        return;
    }
    /* One slice: numpy's bincounts directly, each pair visited once. */
    row_cursors cur = CURSORS_UNSET;
    for (int32_t r = 0; r < live; r++) (void)walk_pairs(e, &g, r, r2, NULL, NULL, &cur);
}

static inline float clip(float v, float bound) {
    return v < -bound ? -bound : (v > bound ? bound : v);
}

typedef struct readout_ctx {
    seer_uav_env *e;
    int64_t J;
    int32_t first;
    int32_t observed; /* the live UAVs' observations are written already */
    const seer_copy_rows *rows; /* a copy step's rows to fill (NULL: none) */
    uint8_t truncated;          /* the copy step's truncation flag */
} readout_ctx;

/* The observation row of the UAV in slot i at tick J (row agent_of[i]). */
static void observe_one(seer_uav_env *e, int64_t J, int64_t i) {
    const seer_uav *m = e->m;
    const int32_t C = m->table_cap, K = e->k_neighbors, D = e->obs_dim;
    const float bound = (float)e->obs_bound;
    const double two_vmax = 2.0 * m->v_max;
    const int64_t oldest = J - e->max_age_ticks;
    double key[SEER_UAV_MAX_TABLE];
    int32_t slot[SEER_UAV_MAX_TABLE];
    {
        const int64_t agent = e->agent_of[i];
        float *o = e->obs + (int64_t)D * agent;
        const double *p = m->pos + 3 * (int64_t)i, *v = m->vel + 3 * (int64_t)i;
        const double *g = e->target + 3 * (int64_t)i;
        for (int k = 0; k < 3; k++) {
            o[k] = (float)((p[k] - e->centre[k]) / e->half[k]);
            o[3 + k] = (float)(v[k] / m->v_max);
            o[6 + k] = (float)((g[k] - p[k]) / e->target_scale);
        }
        memset(o + 9, 0, sizeof(float) * (size_t)(D - 9));
        /* fresh table entries, nearest first: numpy's stable sort on the
         * key row * 1024 + min(d2, 1023) (slots are in sender order), as
         * ranks: an entry's place is the number of entries with a smaller
         * key, or an equal one and an earlier slot.  Counted without a
         * branch per pair: the order of a UAV's neighbours follows no
         * pattern a branch predictor learns in a big swarm. */
        const int32_t cnt = m->nb_count[i] < C ? m->nb_count[i] : C;
        const seer_uav_nb *t = m->nb + (int64_t)C * i;
        int32_t used = 0;
        for (int32_t s = 0; s < cnt; s++) {
            const float *q = t[s].state;
            const double r0 = q[0] - p[0], r1 = q[1] - p[1], r2 = q[2] - p[2];
            const double d2 = r0 * r0 + r1 * r1 + r2 * r2;
            key[used] = (double)agent * 1024.0 + (d2 < 1023.0 ? d2 : 1023.0);
            slot[used] = s;
            used += t[s].tick >= oldest;
        }
        int32_t order[SEER_UAV_MAX_TABLE];
        for (int32_t a = 0; a < used; a++) {
            int32_t rank = 0;
            for (int32_t b = 0; b < used; b++) rank += (key[b] < key[a]) | ((key[b] == key[a]) & (b < a));
            order[rank] = slot[a];
        }
        for (int32_t a = 0; a < used; a++) slot[a] = order[a];
        for (int32_t rank = 0; rank < used && rank < K; rank++) {
            const float *q = t[slot[rank]].state;
            float *f = o + 9 + 7 * rank;
            for (int k = 0; k < 3; k++) {
                f[k] = (float)((q[k] - p[k]) / e->radius);
                f[3 + k] = (float)((q[3 + k] - v[k]) / two_vmax);
            }
            f[6] = 1.0f;
        }
        for (int32_t k = 0; k < D; k++) o[k] = clip(o[k], bound);
    }
}

static void dist_slice(void *arg, int64_t lo, int64_t hi, int32_t worker) {
    (void)worker;
    seer_uav_env *e = arg;
    const seer_uav *m = e->m;
    for (int64_t i = lo; i < hi; i++) {
        const double *p = m->pos + 3 * i, *g = e->target + 3 * i;
        const double d0 = g[0] - p[0], d1 = g[1] - p[1], d2 = g[2] - p[2];
        e->dist[i] = sqrt(d0 * d0 + d1 * d1 + d2 * d2);
    }
}

#define OBS_AHEAD 8 /* UAVs ahead whose neighbour tables we prefetch */

/* Agent a's (slot i's) rows of a copy step, as its observation is written:
 * in the slice of the worker that wrote it, from its cache, where a pass
 * after the readout had the stepping thread read every row, half of them
 * from the other core's cache on 2 workers. */
static inline void copy_out(const seer_uav_env *e, const readout_ctx *rc, int64_t a, int64_t i) {
    const seer_copy_rows *rows = rc->rows;
    const int32_t D = e->obs_dim;
    float *o = (float *)rows->obs + (int64_t)D * a;
    if (e->alive[i]) { /* acted in this step */
        memcpy(o, e->obs + (int64_t)D * a, sizeof(float) * (size_t)D);
        rows->rew[a] = e->reward[a];
        rows->term[a] = e->collided[a] | e->oob[a];
        rows->trunc[a] = rc->truncated;
        rows->mask[a] = 1;
    } else {
        memset(o, 0, sizeof(float) * (size_t)D);
        rows->rew[a] = 0.0;
        rows->term[a] = rows->trunc[a] = rows->mask[a] = 0;
    }
}

/* Per UAV: out-of-bounds, reward (unless first), the distance to
 * remember, the observation.  The slices are ranges of agent ids, so that
 * each worker writes whole runs of output rows (rows by agent id) instead
 * of rows interleaved with the other workers' (a 204-byte row shares lines
 * with its neighbours); the slot rows it reads are prefetched, all of
 * them: once the rows outgrow L2 ('xxlarge', 65,536 slots) each one missed
 * is a wait of its own, so prefetching only the tables and the position
 * left the other rows' misses on the critical path (the A/B is in commit
 * 3b29426; bench/results/uav_growth_profile.md has where the time per UAV
 * goes as the swarm grows). */
static void finish_slice(void *arg, int64_t lo, int64_t hi, int32_t worker) {
    (void)worker;
    const readout_ctx *rc = arg;
    seer_uav_env *e = rc->e;
    const seer_uav *m = e->m;
    for (int64_t a = lo; a < hi; a++) {
        const int64_t i = e->slot_of[a];
        if (!rc->first) {
            const double *p = m->pos + 3 * i;
            int out = 0;
            for (int k = 0; k < 3; k++) out |= (p[k] < 0.0) | (p[k] > e->hi[k]);
            e->oob[a] = (uint8_t)(out && e->alive[i]);
            const double progress = e->prev_dist[i] - e->dist[i];
            const double sep = e->sep_a[a] + e->sep_b[a];
            e->reward[a] = e->w_progress * progress - e->w_energy * m->energy[i] - e->w_separation * sep -
                           e->c_collision * (double)e->collided[a] - e->c_out_of_bounds * (double)e->oob[a] +
                           e->r_goal * (double)(e->dist[i] < e->goal_radius);
        }
        e->prev_dist[i] = e->dist[i];
        if (rc->observed && a + OBS_AHEAD < hi) {
            /* observed in the tiled step (step_tiled): only this pass's
             * own slot rows, which agent order reads at random */
            const int64_t f = e->slot_of[a + OBS_AHEAD];
            __builtin_prefetch(m->pos + 3 * f);
            __builtin_prefetch(e->alive + f);
            __builtin_prefetch(e->dist + f);
            __builtin_prefetch(e->prev_dist + f, 1);
            __builtin_prefetch(m->energy + f);
        }
        if (rc->observed && e->alive[i]) {
            if (rc->rows) copy_out(e, rc, a, i);
            continue;
        }
        if (a + OBS_AHEAD < hi) { /* tables are 768 bytes apart: too far for the hardware prefetcher */
            const int64_t C = m->table_cap, f = e->slot_of[a + OBS_AHEAD];
            __builtin_prefetch(m->nb + C * f);
            __builtin_prefetch(m->nb + C * f + 2);
            __builtin_prefetch(m->pos + 3 * f);
            /* and the other slot rows this UAV's turn reads */
            __builtin_prefetch(m->vel + 3 * f);
            __builtin_prefetch(e->target + 3 * f);
            __builtin_prefetch(m->nb_count + f);
            __builtin_prefetch(e->alive + f);
            __builtin_prefetch(e->dist + f);
            __builtin_prefetch(e->prev_dist + f, 1);
            __builtin_prefetch(m->energy + f);
        }
        observe_one(e, rc->J, i);
        if (rc->rows) copy_out(e, rc, a, i);
    }
}

void seer_uav_readout(seer_uav_env *e, int64_t J, int32_t first) {
    const int32_t n = e->m->num_uavs;
    drop_candidates(e); /* their buffers are the readout's scratch */
    if (first)
        run_phase(e, n, dist_slice, e);
    else
        separation(e); /* with each UAV's target distance */
    const seer_copy_rows *rows = first ? NULL : e->copy_rows;
    const uint8_t truncated = e->episode[SEER_UAV_EP_STEPS] >= e->max_cycles;
    readout_ctx rc = {e, J, first, !first && e->observed, rows, truncated};
    e->observed = 0;
    run_phase(e, n, finish_slice, &rc);
}

/* ---- steps ---------------------------------------------------------------- */

/* ---- tiled steps ------------------------------------------------------------
 *
 * A big swarm's rows do not fit in the core's cache, and a step's windows
 * (one per tick) each sweep nearly every UAV, so without tiles every window
 * fetches every row again.  On a runtime of one worker the step instead
 * runs tiles of the broadcast grid's columns (T x T cells along the grid's
 * two longest axes, x and y below, all of the third, z) through all of the
 * step's ticks, one tile after the other (seer_rt_tiled_begin in
 * seer/seer.h), so a tile's rows stay in cache from tick to tick; T is
 * tile_cells (SEER_UAV_TILE_CELLS), the height of the slots' strips too
 * (spatial_order), so a tile's UAVs are runs of nearby slots.
 *
 * Causality.  A UAV interacts only with UAVs of the 27 grid cells around
 * its own during the step (the broadcast candidates: its messages go to
 * them, its TICK reads their positions).  So column (x, y) may run tick k
 * of the step once its 8 neighbour columns have run tick k - 1.  Tiles are
 * skewed parallelograms in (x, y, tick): tile (tx, ty) runs tick k over the
 * columns x in [tx T - k, (tx + 1) T - k), y in [ty T - k, (ty + 1) T - k),
 * so the neighbours a column needs at tick k - 1 belong to this tile's
 * tick k - 1 or to the tiles (tx - 1, ty), (tx, ty - 1), (tx - 1, ty - 1),
 * and no neighbour has run past tick k when the column runs it if every
 * tile runs after those three.  The runtime checks every message against
 * that (an event that would come too late fails the step).
 *
 * Order.  Tiles run in bands of tile_band (SEER_UAV_TILE_BAND) tiles along
 * x, a band's rows one after the other, not row after row of the whole
 * grid: as the tiles lean back one column per tick and a step has more
 * ticks (10 at dt 0.1) than a tile has rows (8), every column's ticks
 * fall into two tile rows, so its rows come back one row of tiles later.  A whole row of
 * a big swarm's tiles ('xxlarge': 15 of them, some 10 MB of rows) is more
 * than the cache this host's L3 keeps for us (4-10 MiB by a pointer chase
 * beside its other tenants); a band's row (4 tiles, 3 MB) is not.  What a
 * band costs: the columns within a step's ticks of its right edge come
 * back after the whole band (bench/results/uav_growth_profile.md).
 *
 * What a TICK reads of other UAVs then: the neighbours' broadcasts are
 * intact as before (a neighbour at most one tick ahead has not broadcast
 * again yet: periods of 2 ticks and more), and their positions at the
 * start of the tick come from the step's own snapshots, as the runtime
 * takes none: after a tile runs tick k, its UAVs' positions go to
 * tile_snap[(J + k + 1) & 1], which no neighbour overwrites before every
 * UAV around has run tick k + 1 (it would have to run tick k + 2 first).
 * The results are the untiled step's, bit for bit: each UAV handles the
 * same events in the same order and reads the same values.
 *
 * After a tile's last tick its UAVs are observed (the readout's
 * observations, observe_one) while their rows are still in cache.
 *
 * Window k of the tiled step holds tick J + k: it ends half a tick after
 * it (the last one at the step's horizon), so a message (one tick later)
 * always falls after the window it is sent in.
 *
 * Pools.  On a runtime of several workers the step runs tiled on the pool
 * (seer_rt_tiled_begin_pool) when its bands keep the pool busy
 * (pool_tiles_pay): bands of SEER_UAV_POOL_BAND tiles along x, claimed in
 * order by whichever thread is free (band_slice), each run row of tiles by
 * row of tiles, as above, and each row only once the band to its left has
 * finished POOL_LAG rows more (a release store of the rows done per band,
 * an acquire load before each row).  One row behind would do for the
 * order above (a tile after its left, lower and lower-left neighbours);
 * two make the threads' tiles never touch.  Threads must never run, or
 * send to, the same UAV at once: they would race on its lane, which a
 * tiled step touches with plain stores, and on its rows.  Two UAVs
 * interact only if their columns are at most one apart (a message, a
 * position read) or two apart (two senders to a third between them, two
 * pushes onto its lane).  While band c runs tick k' of a row r, a band
 * b < c to its left is at a row r' >= r + POOL_LAG (c waited for it), at
 * some tick k.  Along x, c's columns at tick k' start at its first tile's
 * left edge less k' and b's at tick k end before it less k, so they are
 * within two only if k' >= k - 1; along y, c's row r ends T (r + 1) - k'
 * and b's row r' starts at T r' - k >= T (r + 2) - k, within two only if
 * k' <= k + 1 - T.  Both hold only for T <= 2, so from tiles of 3 cells on
 * (use_tiles) the threads' UAVs stay three columns apart.  So the results are the
 * one-thread step's, bit for bit, for any pool size and whoever runs
 * which band.  A band waits only for the band before, which a running
 * thread took earlier, so nothing waits for a thread that never comes.
 * Stepping the whole grid this way takes a band's rows, times the bands,
 * over the threads, plus a fill of POOL_LAG rows per thread after the
 * first: pool_tiles_pay asks the fill to be under a sixth of a thread's share.
 * What it wins: each thread keeps its tiles' rows in its own cache through
 * the step's ticks, as one thread does, and the pool meets at no window
 * barrier (bench/results/uav_pool_tiles_c.md).  A band that must wait spins
 * for BAND_SPIN_NS, then sleeps until a band counts a row (wait_band):
 * beside a busy process the thread it waits for is often off its core, and
 * a waiter that kept its own core (spinning, or yielding it to the busy
 * process for a time slice) held the pipeline back
 * (bench/results/uav_band_sleep.md). */
#define POOL_LAG 2

/* The tiles' grid along the two longest axes for a step of K ticks. */
static void tile_grid(const seer_uav_env *e, const int ax[3], int64_t T, int64_t K, int64_t *ntx, int64_t *nty) {
    const seer_uav *m = e->m;
    const int64_t dims[3] = {m->grid_nx, m->grid_ny, m->grid_nz};
    *ntx = (dims[ax[0]] + K - 1 + T - 1) / T;
    *nty = (dims[ax[1]] + K - 1 + T - 1) / T;
}

static int64_t pool_band(const seer_uav_env *e) { return e->tile_band > 0 ? e->tile_band : SEER_UAV_POOL_BAND; }

/* Whether a pool of W steps tiled (see Pools above): forced by tiling 1,
 * else from SEER_UAV_POOL_TILES_MIN UAVs on (below, the rows a window
 * sweeps come mostly from the caches, and the pipeline's fill and its
 * uneven bands cost more than the tiles save), when the bands' pipeline
 * keeps the pool busy: its fill (each band POOL_LAG rows behind the one
 * before, W - 1 of them before the last thread starts) under a sixth of a
 * thread's share. */
static int pool_tiles_pay(const seer_uav_env *e, int32_t W) {
    if (e->tiling > 0) return 1;
    if (e->m->num_uavs < SEER_UAV_POOL_TILES_MIN) return 0;
    int ax[3];
    space_axes(e->m, ax);
    int64_t ntx, nty;
    tile_grid(e, ax, tile_side(e), e->ticks_per_step, &ntx, &nty);
    const int64_t bands = (ntx + pool_band(e) - 1) / pool_band(e);
    return bands >= 2 && bands * nty >= 6 * POOL_LAG * (int64_t)W * (W - 1);
}

/* 0: the step runs window by window; 1: tiled on the stepping thread; 2:
 * tiled on the pool. */
static int use_tiles(seer_uav_env *e) {
    const seer_uav *m = e->m;
    if (e->tiling < 0 || (e->tiling == 0 && !slots_in_space(e))) return 0;
    if (!(e->rt && e->tile_list && e->tile_col_start && m->tile_snap[0] && m->tile_snap[1] && e->ticks_per_step >= 1))
        return 0;
    const int32_t W = seer_rt_num_workers(e->rt);
    if (W == 1) return e->tiling > 0 || m->num_uavs >= SEER_UAV_TILES_MIN;
    return tile_side(e) >= 3 && pool_tiles_pay(e, W) ? 2 : 0;
}

static void observe_one(seer_uav_env *e, int64_t J, int64_t i);

/* A tiled step observes its UAVs in slot order, but their observation rows
 * are by agent id: once the rows outgrow the caches ('xxlarge': 13 MiB of
 * them) each write would wait for its lines to be read, one row after the
 * other.  Start those reads ahead instead, like finish_slice's.  */
static inline void prefetch_obs_row(const seer_uav_env *e, int64_t slot) {
    const char *row = (const char *)(e->obs + (int64_t)e->obs_dim * e->agent_of[slot]);
    const int64_t bytes = (int64_t)sizeof(float) * e->obs_dim;
    for (int64_t b = 0; b < bytes + 63; b += 64) __builtin_prefetch(row + (b < bytes ? b : bytes - 1), 1);
}

/* The live UAVs by column (a0, a1) of the grid's two longest axes, the
 * columns in strip order (spatial_order's: strips of T rows of a1, within
 * a strip by a0, then a1), each column's UAVs by slot, into tile_list;
 * column c's UAVs are [tile_col_start[c], tile_col_start[c + 1]).
 * So the part of a tile in one strip is one range of the list per a0.
 * 0, or SEER_E_NOMEM. */
static int tile_columns(seer_uav_env *e, const int ax[3], int64_t T) {
    const seer_uav *m = e->m;
    const int64_t dims[3] = {m->grid_nx, m->grid_ny, m->grid_nz}, d0 = dims[ax[0]], d1 = dims[ax[1]];
    const int64_t cols = d0 * d1;
    /* column (a0, a1) is base[a1] + a0 * h[a1]: its strip starts at row
     * s0 = a1 - a1 % T, has h rows, and d0 s0 columns come before it */
    int64_t *base = malloc(sizeof(int64_t) * 2 * (size_t)d1);
    if (!base) return SEER_E_NOMEM;
    int64_t *h = base + d1;
    for (int64_t a1 = 0; a1 < d1; a1++) {
        const int64_t s0 = a1 / T * T;
        h[a1] = d1 - s0 < T ? d1 - s0 : T;
        base[a1] = s0 * d0 + (a1 - s0);
    }
    int32_t *start = e->tile_col_start, *by_col = e->tile_list;
    memset(start, 0, sizeof(int32_t) * (size_t)(cols + 1));
    const int32_t n = m->num_uavs, *cell = e->cell_of;
    const int c0 = ax[0], c1 = ax[1];
    for (int32_t i = 0; i < n; i++)
        if (m->alive[i]) {
            const int32_t *c = cell + 3 * (int64_t)i;
            start[base[c[c1]] + c[c0] * h[c[c1]] + 1]++;
        }
    for (int64_t c = 0; c < cols; c++) start[c + 1] += start[c];
    for (int32_t i = 0; i < n; i++)
        if (m->alive[i]) {
            const int32_t *c = cell + 3 * (int64_t)i;
            by_col[start[base[c[c1]] + c[c0] * h[c[c1]]]++] = i;
        }
    for (int64_t c = cols; c > 0; c--) start[c] = start[c - 1]; /* the fill moved each one column on */
    start[0] = 0;
    free(base);
    return SEER_OK;
}

/* Run tile (tx, ty) through ticks [J0, J0 + K) of an open tiled step (see
 * above); after each tick, its UAVs' positions go to the snapshot of the
 * next tick's start, and after the last, they are observed (the readout's
 * observations, while their rows are in cache).  ids: room for every
 * slot.  The tile's UAVs at one tick are a strip's part of each of its
 * columns (the tile's T rows span two strips at most), gathered into ids
 * in by_col's order (runs of consecutive slots, which the runtime claims
 * a run at a time) and run in one call, so that the messages of the
 * tile's whole tick are pushed together. */
static int run_tile(seer_uav_env *e, int64_t d0, int64_t d1, int64_t T, int64_t tx, int64_t ty, int64_t J0,
                    int32_t K, int32_t *ids, int32_t worker) {
    seer_uav *m = e->m;
    const int32_t *start = e->tile_col_start, *by_col = e->tile_list;
    for (int32_t k = 0; k < K; k++) {
        const int64_t x0 = tx * T - k > 0 ? tx * T - k : 0, x1 = (tx + 1) * T - k < d0 ? (tx + 1) * T - k : d0;
        const int64_t y0 = ty * T - k > 0 ? ty * T - k : 0, y1 = (ty + 1) * T - k < d1 ? (ty + 1) * T - k : d1;
        if (x0 >= x1 || y0 >= y1) continue;
        int32_t n = 0;
        for (int64_t ya = y0; ya < y1;) {
            const int64_t s0 = ya / T * T, h = d1 - s0 < T ? d1 - s0 : T;
            const int64_t yb = s0 + h < y1 ? s0 + h : y1; /* the tile's part in this strip */
            for (int64_t x = x0; x < x1; x++) {
                const int32_t lo = start[s0 * d0 + x * h + (ya - s0)], hi = start[s0 * d0 + x * h + (yb - s0)];
                memcpy(ids + n, by_col + lo, sizeof(int32_t) * (size_t)(hi - lo));
                n += hi - lo;
            }
            ya = yb;
        }
        if (n == 0) continue;
        const int rc = worker < 0 ? seer_rt_tiled_run(e->rt, k, ids, n) : seer_rt_tiled_run_on(e->rt, worker, k, ids, n);
        if (rc != SEER_OK) return rc;
        if (k + 1 < K) {
            double *restrict snap = m->tile_snap[(J0 + k + 1) & 1];
            const double *restrict pos = m->pos;
            for (int32_t q = 0; q < n; q++) {
                const int64_t i = ids[q];
                snap[3 * i] = pos[3 * i], snap[3 * i + 1] = pos[3 * i + 1], snap[3 * i + 2] = pos[3 * i + 2];
            }
        } else {
            for (int32_t q = 0; q < n; q++) {
                if (q + OBS_AHEAD < n) prefetch_obs_row(e, ids[q + OBS_AHEAD]);
                observe_one(e, J0 + K, ids[q]);
            }
        }
    }
    return SEER_OK;
}

/* Every tile through ticks [J0, J0 + K), band by band (see Order above). */
static int run_tiles(seer_uav_env *e, const int ax[3], int64_t T, int64_t J0, int32_t K, int32_t *ids) {
    const seer_uav *m = e->m;
    const int64_t dims[3] = {m->grid_nx, m->grid_ny, m->grid_nz}, d0 = dims[ax[0]], d1 = dims[ax[1]];
    const int64_t ntx = (d0 + K - 1 + T - 1) / T, nty = (d1 + K - 1 + T - 1) / T;
    const int64_t band = e->tile_band > 0 ? e->tile_band : SEER_UAV_TILE_BAND;
    for (int64_t bx = 0; bx < ntx; bx += band)
        for (int64_t ty = 0; ty < nty; ty++)
            for (int64_t tx = bx; tx < ntx && tx < bx + band; tx++) {
                const int rc = run_tile(e, d0, d1, T, tx, ty, J0, K, ids, -1);
                if (rc != SEER_OK) return rc;
            }
    return SEER_OK;
}

/* A pool's tiled step: the bands, claimed in order, and how far each has come. */
typedef struct band_plan {
    seer_uav_env *e;
    int64_t d0, d1, T, ntx, nty, width, bands, J0;
    int32_t K;
    int32_t *ids;                    /* a scratch list of num_uavs per worker */
    int64_t ids_stride;
    _Atomic int64_t next_band;       /* the next band to claim                */
    _Atomic int32_t failed;          /* the first run's error (0: none)       */
    _Atomic uint32_t *rows_done;     /* per band, ROWS_DONE_STRIDE apart      */
    /* A waiter past its spin sleeps on wake_seq, which a band bumps when it
     * counts a row while someone sleeps (or fails): a line of their own. */
    _Alignas(64) _Atomic uint32_t wake_seq;
    _Atomic uint32_t sleepers;
} band_plan;

/* Each band's count on a cache line of its own: one thread writes it, the
 * next band's thread polls it. */
#define ROWS_DONE_STRIDE 16

/* How long a band waits on its core before it sleeps.  A waiter that keeps
 * its core spinning (or yields it, which on a core shared with another
 * process hands that one a whole time slice) holds back the band it waits
 * for whenever that thread was taken off its core: beside a busy process a
 * sleeping waiter frees its core for it.  Quiet, a wait past this is the
 * pipeline's fill (a band's first POOL_LAG rows), long beside a wake-up. */
#ifndef BAND_SPIN_NS /* -DBAND_SPIN_NS=0: every wait sleeps (the sanitizer builds check that path) */
#define BAND_SPIN_NS 30000
#endif

static int64_t band_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline void band_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Wake every sleeping waiter (after a row counted, or a failure). */
static void band_wake(band_plan *p) {
    /* seq_cst RMW (Dekker with wait_band): a waiter counted in sleepers
     * before this either sees the new wake_seq (its futex wait returns at
     * once) or reads it before and is woken below */
    atomic_fetch_add_explicit(&p->wake_seq, 1, memory_order_seq_cst);
#ifdef __linux__
    syscall(SYS_futex, (uint32_t *)&p->wake_seq, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
#endif
}

/* Wait until band b has finished `rows` rows (or a run failed): 0, or the error. */
static int32_t wait_band(band_plan *p, int64_t b, int64_t rows) {
    _Atomic uint32_t *done = &p->rows_done[b * ROWS_DONE_STRIDE];
    int64_t t0 = -1;
    unsigned spins = 0;
    for (;;) {
        /* acquire: pairs with the store that counted the row (band_slice),
         * so every write of its tiles' runs (lanes, tables, snapshots) is
         * visible here */
        if (atomic_load_explicit(done, memory_order_acquire) >= (uint32_t)rows) return 0;
        /* relaxed: a failed step only ends the waits; its record comes with the runtime's error */
        const int32_t f = atomic_load_explicit(&p->failed, memory_order_relaxed);
        if (f) return f;
        if ((++spins & 63) != 0) {
            band_pause();
            continue;
        }
        const int64_t t = band_now_ns();
        if (t0 < 0) t0 = t;
        if (t - t0 < BAND_SPIN_NS) continue;
#ifdef __linux__
        /* seq_cst RMW, then loads (Dekker with band_slice's count and
         * band_wake): either the counting thread sees us in sleepers and
         * bumps wake_seq (our futex wait returns, or we read the bump
         * into seq and its count below), or we see its count here */
        atomic_fetch_add_explicit(&p->sleepers, 1, memory_order_seq_cst);
        const uint32_t seq = atomic_load_explicit(&p->wake_seq, memory_order_seq_cst);
        if (atomic_load_explicit(done, memory_order_seq_cst) < (uint32_t)rows &&
            !atomic_load_explicit(&p->failed, memory_order_seq_cst))
            syscall(SYS_futex, (uint32_t *)&p->wake_seq, FUTEX_WAIT_PRIVATE, seq, NULL, NULL, 0);
        atomic_fetch_sub_explicit(&p->sleepers, 1, memory_order_seq_cst);
#else
        sched_yield();
#endif
    }
}

/* A slice of the pool's parallel loop: claim bands in order and run each
 * one's tiles row by row, each row POOL_LAG rows behind the band before. */
static void band_slice(void *arg, int64_t lo, int64_t hi, int32_t worker) {
    (void)lo, (void)hi;
    band_plan *p = arg;
    int32_t *ids = p->ids + p->ids_stride * worker;
    for (;;) {
        /* relaxed: the order of the claims is all it gives; what a band
         * reads of the one before comes through rows_done */
        if (atomic_load_explicit(&p->failed, memory_order_relaxed)) return;
        const int64_t b = atomic_fetch_add_explicit(&p->next_band, 1, memory_order_relaxed);
        if (b >= p->bands) return;
        _Atomic uint32_t *done = &p->rows_done[b * ROWS_DONE_STRIDE];
        const int64_t tx0 = b * p->width, tx1 = tx0 + p->width < p->ntx ? tx0 + p->width : p->ntx;
        for (int64_t ty = 0; ty < p->nty; ty++) {
            int32_t rc = b > 0 ? wait_band(p, b - 1, ty + POOL_LAG < p->nty ? ty + POOL_LAG : p->nty) : 0;
            for (int64_t tx = tx0; tx < tx1 && rc == 0; tx++)
                rc = run_tile(p->e, p->d0, p->d1, p->T, tx, ty, p->J0, p->K, ids, worker);
            if (rc != 0) {
                int32_t none = 0;
                /* relaxed: as in wait_band */
                atomic_compare_exchange_strong_explicit(&p->failed, &none, rc, memory_order_relaxed,
                                                        memory_order_relaxed);
                band_wake(p); /* the sleepers see it */
                return;
            }
            /* seq_cst RMW: releases this row's runs to the next band's rows
             * that wait for it (their acquire loads), and is the store side
             * of the Dekker with wait_band's sleepers count, read after it */
            atomic_exchange_explicit(done, (uint32_t)(ty + 1), memory_order_seq_cst);
            if (atomic_load_explicit(&p->sleepers, memory_order_seq_cst) > 0) band_wake(p);
        }
    }
}

/* Every tile through ticks [J0, J0 + K) on the pool (see Pools above). */
static int run_tiles_pool(seer_uav_env *e, const int ax[3], int64_t T, int64_t J0, int32_t K, int32_t *ids,
                          int32_t W) {
    const seer_uav *m = e->m;
    const int64_t dims[3] = {m->grid_nx, m->grid_ny, m->grid_nz};
    band_plan p = {.e = e, .d0 = dims[ax[0]], .d1 = dims[ax[1]], .T = T, .J0 = J0, .K = K, .ids = ids,
                   .ids_stride = m->num_uavs > 0 ? m->num_uavs : 1, .width = pool_band(e)};
    tile_grid(e, ax, T, K, &p.ntx, &p.nty);
    p.bands = (p.ntx + p.width - 1) / p.width;
    p.rows_done = calloc((size_t)(p.bands * ROWS_DONE_STRIDE), sizeof(_Atomic uint32_t));
    if (!p.rows_done) return SEER_E_NOMEM;
    atomic_init(&p.next_band, 0);
    atomic_init(&p.failed, 0);
    atomic_init(&p.wake_seq, 0);
    atomic_init(&p.sleepers, 0);
    /* a slice per worker, each claiming bands until none is left; the
     * stepping thread may run them all, one after the other */
    seer_rt_parallel_for(e->rt, W, 1, band_slice, &p);
    free((void *)p.rows_done);
    return atomic_load_explicit(&p.failed, memory_order_relaxed);
}

/* Ticks [J0, J1) as a tiled step (on the pool: how 2); *ran: 0 if none
 * could be run (nothing ran: the caller steps the usual way). */
static int step_tiled(seer_uav_env *e, int64_t J0, int64_t J1, int how, int *ran) {
    seer_uav *m = e->m;
    const int32_t K = (int32_t)(J1 - J0);
    const int32_t W = how == 2 ? seer_rt_num_workers(e->rt) : 1;
    *ran = 0;
    int ax[3];
    space_axes(m, ax);
    const int64_t T = tile_side(e);
    if (tile_columns(e, ax, T) != SEER_OK) return SEER_OK;
    int32_t *ids = malloc(sizeof(int32_t) * (size_t)W * (size_t)(m->num_uavs > 0 ? m->num_uavs : 1));
    double ends_buf[64];
    double *ends = K <= 64 ? ends_buf : malloc(sizeof(double) * (size_t)K);
    if (!ends || !ids) {
        if (ends != ends_buf) free(ends);
        free(ids);
        return SEER_OK;
    }
    for (int32_t k = 0; k + 1 < K; k++) ends[k] = ((double)(J0 + k) + 0.5) * m->tick;
    ends[K - 1] = (double)J1 * m->tick;
    int rc = how == 2 ? seer_rt_tiled_begin_pool(e->rt, K, ends) : seer_rt_tiled_begin(e->rt, K, ends);
    if (rc == SEER_OK) {
        *ran = 1;
        m->tiled = 1;
        /* the first tick's start */
        memcpy(m->tile_snap[J0 & 1], m->pos, sizeof(double) * 3 * (size_t)m->num_uavs);
        rc = how == 2 ? run_tiles_pool(e, ax, T, J0, K, ids, W) : run_tiles(e, ax, T, J0, K, ids);
        /* and the lost UAVs, not in the grid (their last TICK, which does nothing) */
        const int rc_end = seer_rt_tiled_end(e->rt);
        m->tiled = 0;
        e->observed = rc == SEER_OK && rc_end == SEER_OK;
        e->tiled_steps++;
        if (rc == SEER_OK) rc = rc_end;
    }
    if (ends != ends_buf) free(ends);
    free(ids);
    return rc;
}

/* Advance one env step; the lost UAVs are still alive (see retire). */
static int advance(seer_uav_env *e) {
    seer_uav_prepare_step(e);
    const int64_t J0 = e->episode[SEER_UAV_EP_TICK], J1 = J0 + e->ticks_per_step;
    int ran = 0, rc = SEER_OK;
    const int how = use_tiles(e);
    if (how) rc = step_tiled(e, J0, J1, how, &ran);
    if (!ran) rc = seer_rt_step(e->rt, (double)J1 * e->m->tick);
    if (rc != SEER_OK) return rc;
    e->episode[SEER_UAV_EP_TICK] = J1;
    e->episode[SEER_UAV_EP_STEPS]++;
    seer_uav_readout(e, J1, 0);
    return SEER_OK;
}

/* Collided and out-of-bounds UAVs leave; max_cycles truncates the episode. */
static void retire(seer_uav_env *e) {
    const int32_t n = e->m->num_uavs;
    int64_t live = 0, changed = 0;
    for (int32_t i = 0; i < n; i++) {
        const int32_t a = e->agent_of[i];
        if (e->alive[i] && (e->collided[a] | e->oob[a])) {
            e->alive[i] = 0;
            changed = 1;
        }
        live += e->alive[i];
    }
    if (e->episode[SEER_UAV_EP_STEPS] >= e->max_cycles) {
        e->episode[SEER_UAV_EP_TRUNCATED] = 1;
        changed = 1;
    }
    e->episode[SEER_UAV_EP_LIVE] = live;
    e->episode[SEER_UAV_EP_VERSION] += changed;
}

int seer_uav_env_step(seer_uav_env *e) {
    const int rc = advance(e);
    if (rc == SEER_OK) retire(e);
    return rc;
}

/* A copy's autoreset: every slot live again, the rows of a fresh episode. */
static int copy_reset(seer_uav_env *e, const seer_copy_rows *rows) {
    const int32_t n = e->m->num_uavs, D = e->obs_dim;
    const int rc = seer_uav_env_reset(e, (uint64_t)seer_uav_next_seed(e));
    if (rc != SEER_OK) return rc;
    memcpy(rows->obs, e->obs, sizeof(float) * (size_t)n * (size_t)D);
    for (int32_t i = 0; i < n; i++) {
        rows->rew[i] = 0.0;
        rows->term[i] = rows->trunc[i] = rows->mask[i] = 0;
        rows->alive[i] = 1;
    }
    *rows->ended = 0;
    return SEER_OK;
}

int seer_uav_copy_step(void *env, const seer_copy_rows *rows, int32_t op) {
    seer_uav_env *e = env;
    const int32_t n = e->m->num_uavs, D = e->obs_dim;
    float *obs = rows->obs;
    if (op == SEER_COPY_AUTORESET) return copy_reset(e, rows);
    if (op != SEER_COPY_STEP) return SEER_E_ARG;
    if (e->episode[SEER_UAV_EP_TRUNCATED] || e->episode[SEER_UAV_EP_LIVE] == 0) {
        /* nothing to step: the copy's episode is over */
        memset(obs, 0, sizeof(float) * (size_t)n * (size_t)D);
        for (int32_t i = 0; i < n; i++) {
            rows->rew[i] = 0.0;
            rows->term[i] = rows->trunc[i] = rows->mask[i] = rows->alive[i] = 0;
        }
        *rows->ended = 1;
        return SEER_OK;
    }
    /* the actions (rows by agent id, like every row below) go to acc in
     * prepare_slice; obs, rew, term, trunc, mask come from the readout
     * (copy_out) */
    e->copy_rows = rows;
    const int rc = advance(e);
    e->copy_rows = NULL;
    if (rc != SEER_OK) return rc;
    retire(e);
    const uint8_t over = e->episode[SEER_UAV_EP_TRUNCATED] || e->episode[SEER_UAV_EP_LIVE] == 0;
    for (int32_t i = 0; i < n; i++) rows->alive[i] = e->alive[e->slot_of[i]] && !over;
    *rows->ended = over;
    if (!over) begin_ahead(e);
    return SEER_OK;
}
