/* UAV swarm environment (seer.envs.uav_swarm_v0): native event handlers.
 *
 * One entity per UAV.  Two event kinds:
 *   SEER_UAV_TICK  the UAV's own clock (10, 20 or 50 Hz): broadcast its state
 *                  to the nearest UAVs in radio range, then integrate its
 *                  double-integrator dynamics over one control period and
 *                  schedule its next tick.  payload = the tick index.
 *   SEER_UAV_RECV  a neighbour's broadcast arrives (one tick after it was
 *                  sent): store it in the receiver's neighbour table.
 *                  payload = the tick the sender broadcast at; the message
 *                  body is the sender's broadcast row in the snapshot.
 *
 * All arrays are owned by the Python model (envs/_uav_model.py); see there
 * for the equations.  A handler writes only its own UAV's rows and reads
 * other UAVs only from the snapshot arrays (snap_*).  Plain declarations:
 * this header is read by cffi's cdef. */
#ifndef SEER_ENV_UAV_SWARM_H
#define SEER_ENV_UAV_SWARM_H

#include <stdint.h>

#include "seer_runtime.h"

#define SEER_UAV_TICK 0
#define SEER_UAV_RECV 1
/* Upper bounds of max_recipients and table_cap (stack buffers). */
#define SEER_UAV_MAX_RECIPIENTS 128
#define SEER_UAV_MAX_TABLE 256

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
    double *bcast;           /* N x 6: last broadcast (pos, vel)           */
    int64_t *bcast_tick;     /* N: tick of the last broadcast              */
    int32_t *nb_src;         /* N x table_cap, ascending sender ids        */
    int64_t *nb_tick;        /* N x table_cap                              */
    double *nb_state;        /* N x table_cap x 6                          */
    int32_t *nb_count;       /* N: used slots                              */
    int64_t *sent;           /* N: messages sent since reset               */
    int64_t *received;       /* N: messages received since reset           */

    /* snapshots taken at each window start */
    const double *snap_pos;        /* N x 3 */
    const double *snap_bcast;      /* N x 6 */
    const int64_t *snap_bcast_tick; /* N    */

    /* broadcast grid, rebuilt in numpy before each env step */
    const int32_t *cell_of;    /* N x 3 cell coordinates of each UAV            */
    const int32_t *cell_start; /* nx*ny*nz + 1 offsets into cell_items          */
    const int32_t *cell_items; /* live UAVs sorted by cell                      */
} seer_uav;

int seer_uav_tick(seer_ctx *ctx, const seer_event *ev);
int seer_uav_recv(seer_ctx *ctx, const seer_event *ev);

#endif
