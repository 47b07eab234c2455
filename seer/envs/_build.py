"""cffi build scripts of the built-in envs' C code, one plug-in module per env: seer.envs.uav_swarm._uav_swarm_c, seer.envs.wireless._wireless_c.

Each is built exactly as an outside package builds its env: against the
public API alone (<seer/seer.h>, the folder seer.get_include() returns), with
seer.capi.cdef()'s text plus the env's own header as cdef, linking against
nothing of SEER.  An env's C lives in its folder's ``csrc/``
(``seer/envs/<env>/csrc/``).  seer is not importable while setup.py builds
it, so the folder is csrc/include and the cdef text comes from
seer/_cdef.py, loaded by path.
"""

import pathlib
import runpy

from cffi import FFI

ENVS = pathlib.Path(__file__).resolve().parent
ROOT = ENVS.parents[1]
INCLUDE = ROOT / "csrc" / "include"  # = seer.get_include() once installed
_cdef = runpy.run_path(str(ROOT / "seer" / "_cdef.py"))


def plugin_builder(env: str, module: str, header: str, sources: list[str]) -> FFI:
    """The builder of plug-in ``seer.envs.<env>.<module>`` from ``header`` and ``sources`` in seer/envs/<env>/csrc/."""
    csrc = ENVS / env / "csrc"
    builder = FFI()
    builder.cdef(_cdef["api_cdef"](INCLUDE) + _cdef["header_cdef"](csrc / header))
    builder.set_source(
        f"seer.envs.{env}.{module}",
        f'#include <seer/seer.h>\n#include "{header}"',
        # relative to the project root, where setup.py runs
        sources=[f"seer/envs/{env}/csrc/{s}" for s in sources],
        include_dirs=[str(INCLUDE), str(csrc)],
        # the envs' numerics are float-for-float images of numpy references:
        # no fused multiply-adds behind their back
        extra_compile_args=["-std=c11", "-O3", "-ffp-contract=off", "-fno-strict-aliasing"],
        libraries=["m"],
    )
    return builder


uav_swarm_ffi = plugin_builder("uav_swarm", "_uav_swarm_c", "uav_swarm.h", ["uav_swarm.c", "uav_swarm_step.c"])
wireless_ffi = plugin_builder("wireless", "_wireless_c", "wireless.h", ["wireless.c"])

if __name__ == "__main__":
    uav_swarm_ffi.compile(verbose=True)
    wireless_ffi.compile(verbose=True)
