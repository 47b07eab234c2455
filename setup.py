from setuptools import setup

# The core, then the plug-ins built against its public C API alone.
# cffi builds them against the stable ABI (.abi3.so), so one wheel serves
# CPython 3.11 and later: tag it so.
setup(cffi_modules=["seer/_build.py:ffibuilder", "seer/_build_synth.py:ffibuilder",
                    "seer/envs/_build.py:uav_swarm_ffi", "seer/envs/_build.py:wireless_ffi"],
      options={"bdist_wheel": {"py_limited_api": "cp311"}})
