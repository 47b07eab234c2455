"""SEER's benchmark environments (importable as ``seer.envs``).

- ``seer.envs.uav_swarm_v0``: UAV swarm control.
- ``seer.envs.wireless_v0``: wireless network management (mobile-env's model).

Each module has ``parallel_env(**kwargs)`` and ``env(**kwargs)`` factories.
"""
