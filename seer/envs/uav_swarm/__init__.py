"""SEER's UAV swarm env, public as `seer.envs.uav_swarm_v0`.

- ``env.py``: the PettingZoo ``ParallelEnv`` (`UavSwarmEnv`) and its factories.
- ``model.py``: the SEER model (event kinds, state, the C plug-in's engine).
- ``reference.py``: the time-stepped numpy reference (same numbers).
- ``csrc/``: the C handlers and whole-step function, built by
  ``seer/envs/_build.py`` into the plug-in module ``_uav_swarm_c``.
"""
