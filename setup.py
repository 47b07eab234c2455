import numpy
from setuptools import Extension, setup

# The core, then the plug-ins built against its public C API alone.
# cffi builds them against the stable ABI (.abi3.so), so one wheel serves
# CPython 3.11 and later: tag it so.  seer._rowdicts (the per-agent objects
# of a PettingZoo step, to and from rows) is a plain extension, as cffi
# passes no Python objects to C; it keeps to the same stable ABI.
setup(cffi_modules=["seer/_build.py:ffibuilder", "seer/_build_synth.py:ffibuilder",
                    "seer/envs/_build.py:uav_swarm_ffi", "seer/envs/_build.py:wireless_ffi"],
      ext_modules=[Extension("seer._rowdicts", ["csrc/pyext/seer_rowdicts.c"], py_limited_api=True,
                             include_dirs=[numpy.get_include()],
                             extra_compile_args=["-O2", "-std=c11", "-Wall", "-Wextra"])],
      options={"bdist_wheel": {"py_limited_api": "cp311"}})
