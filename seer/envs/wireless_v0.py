"""wireless_v0: mobile-env's multi-cell network as an event-driven SEER environment.

Base stations (BS) and user equipments (UE) on a map; UEs follow random
waypoints.  The channel and rate model is mobile-env 2.1.0's (Okumura-Hata
path loss, SNR from transmit power and noise, Shannon rate above an SNR
threshold, resource-fair sharing of a BS, bounded log utility, multi-agent
reward) with its default parameters; see :mod:`seer.envs.wireless.cellular`
for the plain vectorised functions.

Agents are the UEs (``"ue_0"`` ...).  Each step every UE picks
``Discrete(num_bs + 1)``: 0 does nothing, ``k`` toggles its connection to BS
``k - 1`` (connecting needs an SNR above the threshold).  Its observation is
mobile-env's multi-agent one, a float32 ``Box(-1, 1, (4 * num_bs + 1,))``:
connections, SNRs normalised by the best, its own (scaled) utility, the
average utilities broadcast by the BSs in range and their connected-UE
counts (normalised).  Its reward is mobile-env's: its utility plus the
utilities of the BSs in range, over their connections plus one.

Scenarios: ``small`` (3 BS / 5 UE), ``medium`` (7 / 15), ``large`` (13 / 30)
with mobile-env's maps, ``xlarge`` (50 / 500, 600 x 600) and ``xxlarge``
(200 / 10,000, 1200 x 1200).

Two modes:

- ``full_buffer=True`` is mobile-env: every UE always has data and moves and
  measures once per step.  With the same initial positions and waypoints
  (``layout=``) and the same actions, observations and rewards equal
  mobile-env's multi-agent env.
- ``full_buffer=False`` (default) is event-driven: each UE moves at its own
  period (``move_period``, quantised to 1/64 s), pauses up to ``max_pause``
  at waypoints, and its traffic switches on and off (uniform periods with
  means ``mean_on``/``mean_off``); a BS shares its capacity among the
  connected UEs that have data.  A UE's utility uses the rate it is offered
  (its share if it has data, else what it would get if it had).  Events
  happen at their own timestamps and a UE with nothing pending costs nothing.

In both modes connection changes, measurement reports and demand changes
reach the BSs after a signalling delay of 0.25 (the model's lookahead), and
links whose SNR fell below the threshold are released at the next step
boundary (as mobile-env does at the start of a step).  Rates, utilities and
rewards use what the BSs know at the end of the step; observations use the
UE's own latest measurement.  With ``full_buffer=True`` UEs move at 0.75
into each step, so this is exactly mobile-env's order: reward from the
positions before the move, observation after it.

No UE leaves an episode: every UE is in ``agents`` from the reset to the
episode's last step (``max_cycles``), when all are truncated; a ``step``
after that returns empty dicts (as PettingZoo's own envs do), until
``reset``.  ``black_death=True`` (the argument the UAV swarm has, for code
that builds both alike) then only adds ``infos[agent]["active"] = True``.

Global state (for centralised critics): ``state()`` is every UE's
observation, in ``possible_agents`` order, concatenated: a float32 vector of
``state_space`` = ``Box(-1, 1, (num_ue * (4 * num_bs + 1),))``.
seer.vector gives each copy's with ``envs.call("state")``.

Example:
    >>> from seer.envs import wireless_v0
    >>> env = wireless_v0.parallel_env(scenario="small", workers=1)
    >>> obs, infos = env.reset(seed=0)
    >>> obs["ue_0"].shape
    (13,)
    >>> obs, rew, term, trunc, info = env.step({a: 0 for a in env.agents})
    >>> env.close()
"""

from seer.envs.wireless.env import SCENARIOS, WirelessEnv, env, make_traced, parallel_env, raw_env

__all__ = ["parallel_env", "env", "raw_env", "WirelessEnv", "SCENARIOS", "make_traced"]
