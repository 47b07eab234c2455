from setuptools import setup

# The core, then the plug-ins built against its public C API alone.
setup(cffi_modules=["seer/_build.py:ffibuilder", "seer/_build_synth.py:ffibuilder",
                    "envs/_build.py:uav_swarm_ffi", "envs/_build.py:wireless_ffi"])
