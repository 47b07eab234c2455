"""UAV swarm control on SEER's event-driven runtime.

``N`` UAVs fly from a jittered start lattice into a formation (each UAV has
its own target slot) without colliding.  Each UAV runs on its own clock:
UAV ``i`` controls and senses at ``(10, 20, 50)[i % 3]`` Hz; every control
tick it broadcasts its position and velocity (as float32, like a radio
packet) to the UAVs in radio range, which receive the message 0.01 s later.  SEER runs each UAV's events at its
own times (see ``seer/envs/uav_swarm/model.py`` for the event kinds); a time-stepped
numpy reference of the same model is in ``seer/envs/uav_swarm/reference.py``.

Dynamics (double integrator, per UAV, over one control period ``T`` of its
own clock, with the commanded acceleration ``a = a_max * action`` held)::

    v' = v + a T                       a in [-a_max, a_max]^3, a_max = 5 m/s^2
    v' = v' * v_max / |v'|   if |v'| > v_max = 10 m/s
    p' = p + (v + v') T / 2

Events (one SEER entity per UAV; times are multiples of a 0.01 s tick):
``TICK`` at the UAV's own rate broadcasts its state, integrates one control
period and reschedules itself; ``RECV`` delivers a neighbour's broadcast
0.01 s after it was sent (the model's lookahead is 0.005 s, so every
message is later than the lookahead).  The step's action event is the
write of the commanded accelerations before ``runtime.step(t + dt)``; the
observations and rewards are read out after the step has drained.  The whole
step (grid, events, readout, losses) is one C call, ``seer_uav_env_step`` in
seer/envs/uav_swarm/csrc/uav_swarm_step.c; seer.vector's thread backend runs it for every copy
without the GIL.

Layout.  From 1,024 UAVs on, SEER keeps the UAVs' state rows and its
entities in *slots* ordered in space (by cell, set at reset and again
whenever the swarm's motion has scrambled the order), so UAVs that talk to each other share
cache lines and, on a pool, a worker; results are keyed by agent id and do
not depend on it.  Observations, rewards and losses are by agent, as ever;
``state_arrays`` gives the state by agent id too (read-only copies).

Sensing.  A broadcast reaches the (at most 32) nearest live UAVs within
``radius = 8 m``, found through a spatial grid (O(N) per step, not O(N^2)).
A receiver keeps the latest message of each sender in a 24-slot table.
Messages carry float32 positions and velocities (the UAVs' own state is
float64): what a receiver knows of its neighbours is rounded to about
1e-7 of its size (a few micrometres at 100 m).
Its observation shows the ``k`` (default 6) nearest table entries.

Observation (float32 Box, ``9 + 7 k`` entries, each clipped to [-10, 10]):
own position relative to the world centre over the half-size of the world,
own velocity over ``v_max``, target minus position over 20 m; then per
neighbour (nearest first, zeros when fewer): relative position over the
radius, relative velocity over ``2 v_max``, 1.

Reward of UAV i for a step (all terms over the step)::

    r = (d_prev - d)                          progress to the target (m)
        - 0.01 * sum |a|^2 T                  energy (control effort)
        - sum_j (3 - d_ij) / 3  over d_ij < 3 m   separation
        - 10 * collided - 10 * out_of_bounds
        + 0.1 * (d < 1 m)                     at the target

Losses.  Two UAVs closer than 1 m at a step end collide; a UAV outside the
world box is out of bounds.  Either loses the UAV: it is terminated and
leaves ``agents``.  All agents are truncated after ``max_cycles`` steps.
An episode ends at truncation or when no UAV is left; a ``step`` after that
returns empty dicts (as PettingZoo's own envs do), until ``reset``.

Fixed agent sets (``black_death=True``, SuperSuit's ``black_death_v3``
semantics, for trainers that index ``possible_agents``): every UAV stays in
``agents`` and in every dict until the episode ends.  A lost UAV's
observation is all zeros and its reward 0 from the step after its loss on
(the step it is lost in still reports its real last observation and
reward, the collision penalty included); it is neither terminated nor
truncated until the episode ends, when every UAV is done: the lost ones
terminated, the others truncated.  ``infos[agent]["active"]`` is False
from the step it is lost in on (the agent acts no more: a trainer's mask;
TorchRL's ``mask`` and MAPPO's active masks mean the same), True
otherwise.  Actions for lost UAVs are ignored, unchecked.  seer.vector's
rows are fixed and masked already, so they are the same with it or without
(its native path steps the model directly).

Global state (for centralised critics): ``state()`` is every possible
agent's observation, in ``possible_agents`` order, concatenated (zeros for
lost UAVs), a float32 vector of ``state_space`` =
``Box(-10, 10, (num_uavs * (9 + 7 k),))``.  seer.vector gives each copy's
with ``envs.call("state")``.

Arguments of :func:`parallel_env` and :func:`env`:

- ``scenario``: ``"small"`` (8 UAVs), ``"default"`` (32), ``"large"`` (256),
  ``"xlarge"`` (4096), ``"xxlarge"`` (65,536); ``num_uavs`` overrides the count.
- ``max_cycles`` (default 500), ``dt`` (step length, a multiple of 0.1 s),
  ``k_neighbors`` (default 6), ``render_mode`` (None or ``"rgb_array"``),
  ``strict_actions`` (default False: an action for an agent that left the
  episode is ignored, as PettingZoo's converters do; True: an error),
  ``workers`` (``"auto"`` or an integer: SEER's pool size), ``black_death``
  (default False; see "Fixed agent sets"), ``debug`` (the runtime's debug
  mode, :class:`seer.Runtime`; None: on with ``SEER_DEBUG=1``).
- ``engine``: ``"seer"`` (default) or ``"reference"`` (the time-stepped
  numpy implementation, same numbers; for tests and benchmarks).
"""

from seer.envs.uav_swarm.env import SCENARIOS, UavSwarmEnv, env, make_traced, parallel_env, raw_env

__all__ = ["parallel_env", "env", "raw_env", "UavSwarmEnv", "SCENARIOS", "make_traced"]
