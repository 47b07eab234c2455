/* wireless_v0: mobile-env's cellular model as SEER native handlers, the
 * step-end kernels and a whole env step (the native copy of seer.vector),
 * built by seer/envs/_build.py as the plug-in module seer.envs.wireless._wireless_c
 * against <seer/seer.h> alone.
 *
 * Entities 0..num_bs-1 are base stations (BS), num_bs..num_bs+num_ue-1 are
 * user equipments (UE).  UEs handle actions, link releases, moves (with
 * measurements) and traffic switches; they tell BSs about connection
 * changes, measurement reports and demand changes through messages that
 * arrive `delay` later (the lookahead).  BSs only receive.  Every state
 * array has one row per entity; a handler writes only its entity's row.
 * The observation kernels run after a step has drained (single thread).
 * Plain declarations, read by cffi's cdef. */
#ifndef ENV_WIRELESS_H
#define ENV_WIRELESS_H

#include <stdint.h>

#include <seer/seer.h>

/* UE kinds */
#define WL_ACTION 0
#define WL_RELEASE 1
#define WL_MOVE 2
#define WL_TRAFFIC 3
/* BS kinds (messages from UEs; the UE is the event's source) */
#define WL_ATTACH 4
#define WL_DETACH 5
#define WL_REPORT 6
#define WL_DEMAND 7

typedef struct wl_model {
    int32_t num_bs;
    int32_t num_ue;
    int32_t full_buffer;   /* 1: every UE always has data                  */
    int32_t pad0;
    double width;
    double height;
    double velocity;       /* map units per second of movement             */
    double delay;          /* UE -> BS message delay (the lookahead)       */
    double max_pause;      /* pause at waypoints (event-driven mode)       */
    double mean_on;        /* mean traffic on / off periods                */
    double mean_off;
    double idle;           /* broadcast utility of an idle BS (-1)         */
    /* mobile-env's BoundedLogUtility: clip(w1 * log(w2 + rate) / log(w3),
     * lower, upper), lower where rate <= 0; then scaled to [-1, 1] */
    double util_w1;
    double util_w2;
    double util_w3;
    double util_lower;
    double util_upper;
    int64_t table_len;     /* entries of the tables below                  */
    const double *snr_table;   /* by squared (integer) distance            */
    const double *rate_table;  /* max. data rate by squared distance       */
    const uint8_t *ok_table;   /* snr > threshold                          */
    const int32_t *bs_xy;      /* (num_bs, 2) truncated BS coordinates     */
    const double *layout_wp;   /* waypoints to use first: flat (n, 2)      */
    const int32_t *layout_off; /* per UE: first row in layout_wp           */
    const int32_t *layout_len; /* per UE: rows                             */

    /* UE rows (entity-indexed; rows of BSs unused) */
    double *pos;         /* (E, 2) position                                */
    double *wp;          /* (E, 2) current waypoint                        */
    uint8_t *has_wp;     /* (E)    a waypoint is set                       */
    int32_t *wp_next;    /* (E)    next layout waypoint                    */
    int32_t *ipos;       /* (E, 2) truncated position of the last measurement */
    int32_t *d2;         /* (E, B) measured squared distances              */
    double *snr;         /* (E, B) measured SNR (snr_table[d2])            */
    uint8_t *ok;         /* (E, B) measured link above threshold           */
    int32_t *d2_sent;    /* (E, B) last value reported to each BS (-1: out of range) */
    uint8_t *conn;       /* (E, B) the UE's connections                    */
    uint8_t *on;         /* (E)    the UE has data                         */
    double *period;      /* (E)    move period                             */
    double *release_at;  /* (E)    pending release time (-1: none)         */

    /* BS rows */
    uint8_t *member;     /* (E, U) connected UEs as the BS knows them      */
    uint8_t *on_rep;     /* (E, U) their demand as the BS knows it         */
    int32_t *d2_rep;     /* (E, U) reported squared distance (-1: out of range) */
    int32_t *n_conn;     /* (E)    connected UEs                           */
    int32_t *n_on;       /* (E)    connected UEs with data                 */
} wl_model;

int wl_action(seer_ctx *ctx, const seer_event *ev);
int wl_release(seer_ctx *ctx, const seer_event *ev);
int wl_move(seer_ctx *ctx, const seer_event *ev);
int wl_traffic(seer_ctx *ctx, const seer_event *ev);
int wl_attach(seer_ctx *ctx, const seer_event *ev);
int wl_detach(seer_ctx *ctx, const seer_event *ev);
int wl_report(seer_ctx *ctx, const seer_event *ev);
int wl_demand(seer_ctx *ctx, const seer_event *ev);

/* After a step: each UE's aggregate rate (sum over the BSs it is connected
 * to, in BS order, of the BS's resource-fair share). */
void wl_rates(const wl_model *m, double *macro);
/* Each UE's scaled utility (mobile-env's env.utilities) from its rate. */
void wl_utilities(const wl_model *m, const double *macro, double *util);
/* After a step, given the UEs' scaled utilities: station utilities,
 * rewards and observations (num_ue rows of 4 * num_bs + 1 floats);
 * scratch holds num_ue doubles. */
void wl_observe(const wl_model *m, const double *util, double *bs_util, double *reward, double *scratch,
                float *obs);

/* ---- a whole env step (the single env and seer.vector's native copy) ------
 *
 * Both run wl_env_step, so a copy stepped by seer.vector and the same env
 * stepped through PettingZoo give bit-identical rows.  The reset stays in
 * Python (its initial state is drawn with numpy). */
typedef struct wl_env {
    wl_model *m;
    seer_runtime *rt;
    double dt;          /* simulated time of one env step                  */
    double t;           /* start time of the next step                     */
    int64_t steps;      /* env steps since the reset                       */
    int64_t max_cycles; /* steps per episode: then every agent is truncated */
    int64_t events;     /* events run since the reset                      */
    /* step-end outputs */
    double *macro;      /* num_ue: aggregate rates                         */
    double *util;       /* num_ue: scaled utilities                        */
    double *bs_util;    /* num_bs                                          */
    double *reward;     /* num_ue                                          */
    double *scratch;    /* num_ue                                          */
    float *obs;         /* num_ue x (4 * num_bs + 1)                       */
} wl_env;

/* Rates, utilities, station utilities, rewards and observations of the
 * drained state. */
void wl_finalize(wl_env *e);
/* One env step: each UE's action (0: none, k: toggle BS k-1; num_ue int64)
 * as an ACTION event at t, the runtime's step to t + dt, wl_finalize.
 * SEER_OK or the runtime's status (the step did not happen then). */
int wl_env_step(wl_env *e, const int64_t *actions);
/* seer_copy_step_fn of seer.vector: Discrete actions as int64 rows.  Runs
 * SEER_COPY_STEP only; SEER_COPY_AUTORESET is SEER_E_UNSUPPORTED (seer.vector
 * resets the copy through Python). */
int seer_wireless_copy_step(void *env, const seer_copy_rows *rows, int32_t op);

#endif
