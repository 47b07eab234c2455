"""SEER's wireless network env (mobile-env's model), public as `seer.envs.wireless_v0`.

- ``env.py``: the PettingZoo ``ParallelEnv`` (`WirelessEnv`) and its factories.
- ``model.py``: the SEER model (native handlers and their runtime).
- ``reference.py``: the time-stepped numpy reference (same numbers).
- ``cellular.py``: mobile-env's channel, scheduling, utility and reward
  functions in vectorised numpy, shared by both engines.
- ``csrc/``: the C handlers, built by ``seer/envs/_build.py`` into the
  plug-in module ``_wireless_c``.
"""
