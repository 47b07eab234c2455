"""cffi build script of seer._synth_c: the synthetic workload's handlers (csrc/synth/), a plug-in of the public C API.

seer.synthetic (core library: STPA trains on it) uses these handlers, yet
they are not part of seer._seer_c: like any outside module they include
<seer/seer.h> only and reach SEER through its function table.  seer is not
importable while setup.py builds it, so the cdef text comes from
seer/_cdef.py loaded by path (what seer.capi.cdef() returns).
"""

import pathlib
import runpy

from cffi import FFI

ROOT = pathlib.Path(__file__).resolve().parent.parent
INCLUDE = ROOT / "csrc" / "include"  # = seer.get_include() once installed
SYNTH = ROOT / "csrc" / "synth"
_cdef = runpy.run_path(str(ROOT / "seer" / "_cdef.py"))

ffibuilder = FFI()
ffibuilder.cdef(_cdef["api_cdef"](INCLUDE) + _cdef["header_cdef"](SYNTH / "seer_synth.h"))
ffibuilder.set_source(
    "seer._synth_c",
    '#include <seer/seer.h>\n#include "seer_synth.h"',
    sources=["csrc/synth/seer_synth.c"],
    include_dirs=[str(INCLUDE), str(SYNTH)],
    # no fused multiply-adds: results must not depend on the compiler's choice
    extra_compile_args=["-std=c11", "-O3", "-ffp-contract=off", "-fno-strict-aliasing"],
    libraries=["m"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
