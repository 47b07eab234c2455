/* UAV swarm environment (seer.envs.uav_swarm_v0): native event handlers and
 * the whole env step, built by seer/envs/_build.py as the plug-in module
 * seer.envs.uav_swarm._uav_swarm_c against <seer/seer.h> alone.
 *
 * One entity per UAV.  Two event kinds:
 *   SEER_UAV_TICK  the UAV's own clock (10, 20 or 50 Hz): broadcast its state
 *                  to the nearest UAVs in radio range, then integrate its
 *                  double-integrator dynamics over one control period and
 *                  schedule its next tick.  payload = the tick index.
 *   SEER_UAV_RECV  a neighbour's broadcast arrives (one tick after it was
 *                  sent): store it in the receiver's neighbour table.
 *                  payload = the tick the sender broadcast at; the message
 *                  body is the sender's broadcast row (bcast).
 *
 * All arrays are owned by the Python model (seer/envs/uav_swarm/model.py); see there
 * for the equations.  A handler writes only its own UAV's rows.  It reads
 * other UAVs' positions from the window-start snapshot (snap_pos) and their
 * broadcasts from the live rows (bcast, bcast_tick): the RECVs of the
 * message of tick j run in the window of tick j + 1, and the sender writes
 * its row again at its next tick, j + 2 at the earliest (the periods are
 * 2, 5 and 10 ticks; a window holds one tick), so no window both reads and
 * writes a row, and the window barriers order the write before the reads.
 *
 * Tiled steps.  On a runtime of one worker, a swarm in space order of
 * SEER_UAV_TILES_MIN UAVs or more steps tile by tile (uav_swarm_step.c, step_tiled): tiles of the broadcast grid
 * run through all of the step's ticks one after the other, so that their
 * rows stay in cache.  A UAV then never has a neighbour more than one tick
 * ahead (so the broadcasts above stay intact), the runtime takes no
 * snapshots, and the positions at the start of tick j come from the
 * model's own snapshots (seer_uav.tile_snap).  The results are the same.
 *
 * Slots.  The per-UAV state rows and the runtime's entities are *slots*,
 * not agent ids: a reset (seer_uav_initial_state with spatial set) of a
 * swarm of SEER_UAV_SPACE_MIN UAVs or more (seer_uav_env.slot_layout)
 * puts the UAVs into slots in the order of their start cells, so UAVs that talk to
 * each other sit in nearby rows and lanes (shared cache lines, and on a pool
 * the same worker's share of the lanes) instead of wherever their ids fall.
 * agent_of[slot] names the agent; everything a result depends on is keyed
 * by agent id (recipient and table ties, the neighbour tables' sender ids,
 * the separation's pair order), so the slot order never changes a result.
 * The step's outputs (obs, reward, collided, oob) are rows by agent id.
 *
 * Plain declarations: this header is read by cffi's cdef. */
#ifndef SEER_ENV_UAV_SWARM_H
#define SEER_ENV_UAV_SWARM_H

#include <stdint.h>

#include <seer/seer.h>

#define SEER_UAV_TICK 0
#define SEER_UAV_RECV 1
/* Upper bounds of max_recipients and table_cap (stack buffers). */
#define SEER_UAV_MAX_RECIPIENTS 128
#define SEER_UAV_MAX_TABLE 256
/* The longest broadcast candidate list (uav_swarm_step.c: 8 bits of
 * cand_head, 255 being SEER_UAV_CAND_NONE's). */
#define SEER_UAV_CAND_LIST_MAX 254
/* Separation pairs kept per UAV when the pairs are found on a pool. */
#define SEER_UAV_SEP_SLOTS 8
/* cand_head: pool (2 bits) << 30 | offset (22 bits) << 8 | length (8 bits) */
#define SEER_UAV_CAND_NONE 0xFFFFFFFFu

/* One slot of a UAV's neighbour table: a sender, the tick of its latest
 * message and the message's body, together, so that a RECV or an
 * observation reads one line for a slot, not one in each of three arrays
 * (a table holds two or three senders; in a big swarm the tables are
 * DRAM misses once a step).  The model's state views them as nb_src,
 * nb_tick and nb_state (seer/envs/uav_swarm/model.py). */
typedef struct seer_uav_nb {
    int32_t src;      /* sender agent id, -1 for none               */
    int32_t tick;     /* tick of its latest message (episodes end by 2^31 - 1) */
    float state[6];   /* that message's body                         */
} seer_uav_nb;

typedef struct seer_uav {
    int32_t num_uavs;
    int32_t table_cap;       /* neighbour-table slots per UAV              */
    int32_t max_recipients;  /* a broadcast reaches at most this many UAVs */
    int32_t grid_nx;         /* broadcast grid, cells per axis             */
    int32_t grid_ny;
    int32_t grid_nz;
    double tick;             /* seconds per tick (event time = tick index * tick) */
    double radius2;          /* radio range squared (m^2)                  */
    double v_max;            /* speed bound (m/s)                          */
    double v_max2;           /* v_max * v_max                              */

    /* per-UAV live state; rows of N */
    double *pos;             /* N x 3 (m)                                  */
    double *vel;             /* N x 3 (m/s)                                */
    const double *acc;       /* N x 3 commanded acceleration (m/s^2)       */
    const double *ctrl_dt;   /* N: control period (s)                      */
    const int32_t *period;   /* N: control period (ticks)                  */
    const uint8_t *alive;    /* N                                          */
    double *energy;          /* N: sum |a|^2 T over this env step          */
    float *bcast;            /* N x 6: last broadcast (pos, vel), float32  */
    int64_t *bcast_tick;     /* N: tick of the last broadcast              */
    seer_uav_nb *nb;         /* N x table_cap, ascending sender agent ids  */
    int32_t *nb_count;       /* N: used slots                              */
    int64_t *sent;           /* N: messages sent since reset               */
    int64_t *received;       /* N: messages received since reset           */
    const int32_t *agent_of; /* N: the agent id in each slot (see Slots)   */

    /* pos as it was at the window start (a runtime snapshot); the
     * broadcasts need none (see the top of this file) */
    const double *snap_pos;        /* N x 3 */
    /* A tiled step (uav_swarm_step.c) takes the snapshots itself, per block
     * of UAVs and window, in two buffers: the positions at the start of
     * tick j are in tile_snap[j & 1]. */
    int32_t tiled;                 /* this step is tiled                   */
    double *tile_snap[2];          /* N x 3 each                           */

    /* broadcast grid, rebuilt in numpy before each env step */
    const int32_t *cell_of;    /* N x 3 cell coordinates of each UAV            */
    const int32_t *cell_start; /* nx*ny*nz + 1 offsets into cell_items          */
    const int32_t *cell_items; /* live UAVs sorted by cell                      */

    /* Broadcast candidates of the step, built by seer_uav_prepare_step in
     * scratch buffers of seer_uav_env (uav_swarm_step.c): for each live UAV,
     * the live UAVs of its 27 grid cells that are close enough at the step
     * start to come within radio range before the step ends, so a TICK
     * reads a handful of snapshot positions instead of every UAV in 27
     * cells.  cand_head[i] packs the list's pool, offset and length
     * (SEER_UAV_CAND_NONE: no list, scan the cells).  Used only for ticks in
     * [cand_tick_lo, cand_tick_hi); the readout reuses the pools, so it
     * empties that range first.  NULL / an empty range: scan the cells. */
    const uint32_t *cand_head;   /* N                                          */
    const int32_t *cand_pool[4]; /* the lists                                  */
    int64_t cand_tick_lo;
    int64_t cand_tick_hi;
} seer_uav;

int seer_uav_tick(seer_ctx *ctx, const seer_event *ev);
int seer_uav_recv(seer_ctx *ctx, const seer_event *ev);

/* ---- a whole env step in C (uav_swarm_step.c) -------------------------
 *
 * seer_uav_env holds what a step needs beyond the handlers' struct: the
 * runtime, the readout's constants and scratch, and the episode counters.
 * seer_uav_env_step runs one env step (broadcast grid, the step's events,
 * readout, losses) in one call, so Python releases the GIL once per step;
 * seer_uav_copy_step is the same step for seer.vector's native path, rows
 * in and out.  The readout is the float-for-float image of the numpy one
 * (seer/envs/uav_swarm/reference.py, NumpyReadout): same operations in the same
 * order, so both engines keep giving bit-identical observations. */

/* Indices into seer_uav_env.episode. */
#define SEER_UAV_EP_TICK 0      /* J: ticks simulated since reset          */
#define SEER_UAV_EP_STEPS 1     /* env steps since reset                    */
#define SEER_UAV_EP_LIVE 2      /* live UAVs                                */
#define SEER_UAV_EP_VERSION 3   /* changes whenever the agent list changes  */
#define SEER_UAV_EP_TRUNCATED 4 /* max_cycles reached: the episode is over  */
#define SEER_UAV_EP_SEED 5      /* seed stream: a reset without a seed draws from it */
#define SEER_UAV_EP_LEN 6

typedef struct seer_uav_env {
    seer_uav *m;
    seer_runtime *rt;
    int32_t ticks_per_step;
    int32_t k_neighbors;
    int32_t obs_dim;
    int32_t max_age_ticks;
    int64_t max_cycles;
    int32_t sep_nx;            /* separation grid (cells of d_safe)        */
    int32_t sep_ny;
    int32_t sep_nz;
    double cell;               /* broadcast grid cell size (m)             */
    double a_max;
    double radius;
    double d_safe;
    double d_col;
    double goal_radius;
    double w_progress;
    double w_energy;
    double w_separation;
    double c_collision;
    double c_out_of_bounds;
    double r_goal;
    double target_scale;
    double obs_bound;
    double centre[3];
    double half[3];
    double hi[3];
    /* the initial state: a jittered start lattice, a formation of targets */
    int32_t lattice_side;
    int32_t layers;
    double start_spacing;
    double formation_spacing;
    double pad;
    double jitter;

    int32_t *slot_of;          /* N: the slot of each agent id             */
    int32_t *agent_of;         /* N: seer_uav.agent_of, writable           */
    double *acc;               /* N x 3 (the handlers read it)             */
    uint8_t *alive;            /* N (the handlers read it)                 */
    const double *target;      /* N x 3                                    */
    int32_t *cell_start;       /* the broadcast grid (handlers read it)    */
    int32_t *cell_items;
    int32_t *cell_of;
    double *prev_dist;         /* N                                        */
    int64_t *episode;          /* SEER_UAV_EP_LEN                          */
    /* readout outputs, rows by agent id */
    float *obs;                /* N x obs_dim                              */
    double *reward;            /* N                                        */
    uint8_t *collided;         /* N                                        */
    uint8_t *oob;              /* N                                        */
    /* scratch */
    uint64_t *sep_sorted;      /* N: live UAVs as (cell << 32 | agent), sorted */
    int32_t *sep_key;          /* N: the broadcast grid's cell keys        */
    double *sep_a;             /* N, by agent id                           */
    double *sep_b;             /* N, by agent id                           */
    double *dist;              /* N                                        */
    int32_t *perm;             /* lattice_side^2 * layers                  */
    /* the separation pairs found on the pool (uav_swarm_step.c): per sorted
     * position, the first SEER_UAV_SEP_SLOTS pairs and how many there were */
    uint32_t *sep_slot_b;      /* N x SLOTS: second UAV | collided << 31   */
    double *sep_slot_pen;      /* N x SLOTS                                */
    int32_t *sep_count;        /* N                                        */
    /* N x 3: the live UAVs' positions in the order a grid pass visits them
     * (the broadcast grid's cell_items, then the separation's sorted
     * entries), gathered once, so the pass reads its neighbours' positions
     * in sequence instead of all over pos */
    double *grid_pos;
    /* Slots in space order (uav_swarm_step.c): how far the order has
     * decayed, its value after the last ordering (-1: not measured yet),
     * the step of that ordering, and how many steps started with one. */
    double slot_spread;
    double slot_spread_base;
    int64_t relabel_step;
    int64_t relabels;
    /* 0: order the slots when they have decayed (the default); k > 0: at
     * every k-th step whatever the decay (tests, measurements) */
    int32_t relabel_period;
    /* Slots in space order: 0 from SEER_UAV_SPACE_MIN UAVs on (the
     * default), 1 always, -1 never (slot = agent id) */
    int32_t slot_layout;
    /* Tiled steps (uav_swarm_step.c): 0 when the slots are in space order
     * (the default), on one worker from SEER_UAV_TILES_MIN UAVs on, on a
     * pool of several workers from SEER_UAV_POOL_TILES_MIN UAVs on and
     * when its bands keep it busy;
     * 1 always (on a pool: with tiles of 3 cells or more), -1 never;
     * tile_cells: the tiles' side in broadcast-grid cells, also the slots'
     * strips' (0: SEER_UAV_TILE_CELLS); tile_band: the tiles of a band
     * (0: SEER_UAV_TILE_BAND); scratch: tile_list N slots (the UAVs by
     * grid column), tile_col_start grid cells + 1 */
    int32_t tiling;
    int32_t tile_cells;
    int32_t tile_band;
    int32_t *tile_list;
    int32_t *tile_col_start;
    int64_t tiled_steps;       /* steps run tiled since the env was made   */
    int32_t observed;          /* the step observed its live UAVs already (a tiled one) */
    /* A copy step's rows (seer_uav_copy_step, NULL otherwise): its
     * readout writes each agent's rows as it finishes the agent */
    const seer_copy_rows *copy_rows;
    /* The next step's broadcast grid built at a copy step's end, its
     * candidate lists on the pool (uav_swarm_step.c: ahead): 1 until the
     * next step's start ends that loop */
    int32_t ahead;
    double cand_r2;            /* the lists' pre-selection radius, squared */
    const int32_t *cand_cells; /* N x 3: the cells they are built from    */
    /* 0: the lists are built eight entries at a time where the CPU can
     * (AVX2), -1: one at a time (tests: both give the same lists) */
    int32_t cand_simd;
} seer_uav_env;

/* Fewer UAVs than this keep slot = agent id unless slot_layout says
 * otherwise (uav_swarm_step.c says why). */
#define SEER_UAV_SPACE_MIN 128
/* Fewer UAVs than this step window by window on one worker unless tiling
 * says otherwise, in space order or not (uav_swarm_step.c, use_tiles). */
#define SEER_UAV_TILES_MIN 4096
/* The default side of a tiled step's tiles and of the slots' strips, in
 * broadcast-grid cells (uav_swarm_step.c). */
#define SEER_UAV_TILE_CELLS 8
/* The default width of a tiled step's bands, in tiles (uav_swarm_step.c). */
#define SEER_UAV_TILE_BAND 4
/* ... and of a pool's tiled step, whose threads take bands in turn. */
#define SEER_UAV_POOL_BAND 1
/* Fewer UAVs than this step window by window on a pool of several
 * workers unless tiling says otherwise; more, tiled on the pool when its
 * bands keep it busy (uav_swarm_step.c, pool_tiles_pay). */
#define SEER_UAV_POOL_TILES_MIN 32768

/* The initial state for seed (a pure function of it); no runtime needed.
 * spatial: 1, UAVs in slots by start cell (see Slots); 0, slot = agent id
 * (the layout of the time-stepped reference); -1, as slot_layout says.
 * Either way the agents' states are the same. */
void seer_uav_initial_state(seer_uav_env *e, uint64_t seed, int32_t spatial);
/* The next seed of the env's stream (a reset without a seed uses it). */
int64_t seer_uav_next_seed(seer_uav_env *e);
/* A whole reset: runtime, initial state, first ticks, observations,
 * episode counters (max_cycles as set).  0 or a SEER_E_* code. */
int seer_uav_env_reset(seer_uav_env *e, uint64_t seed);
/* The step-start broadcast grid of the live UAVs; zeroes the step's energy. */
void seer_uav_prepare_step(seer_uav_env *e);
/* Observations (and, unless first, rewards, collisions, out-of-bounds) at
 * tick J; first: after a reset (only remembers the target distances). */
void seer_uav_readout(seer_uav_env *e, int64_t J, int32_t first);
/* One env step from the commanded accelerations in acc: 0 or a SEER_E_*
 * code (the runtime's error, see seer_rt_last_error). */
int seer_uav_env_step(seer_uav_env *e);
/* seer_copy_step_fn of seer.vector: actions are float32 rows in [-1, 1]^3. */
int seer_uav_copy_step(void *env, const seer_copy_rows *rows, int32_t op);

#endif
