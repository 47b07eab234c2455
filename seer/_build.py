"""cffi build script (API, out-of-line mode) of SEER's core, seer._seer_c: the queue, runtime, vector pool and flags of csrc/*.c.

Nothing else goes into the core: the built-in envs (seer/envs/_build.py) and the
synthetic workload (seer/_build_synth.py) are plug-ins, each its own module
built against the public API alone.  The C declarations come from the plain
headers in csrc/, read by seer/_cdef.py (loaded by path: seer is not
importable while setup.py builds it).
"""

import pathlib
import runpy

from cffi import FFI

ROOT = pathlib.Path(__file__).resolve().parent.parent
CSRC = ROOT / "csrc"
#: The public C API (seer.get_include()): plug-ins build against it alone.
INCLUDE = CSRC / "include"
PUBLIC_TYPES = INCLUDE / "seer" / "seer_types.h"
_cdef = runpy.run_path(str(ROOT / "seer" / "_cdef.py"))
# Every header in csrc/ is public (read as cdef) except these; the queue and
# runtime come first because the others build on their types.
INTERNAL_HEADERS = {"seer_ring.h", "seer_queue_internal.h", "seer_crash_internal.h"}
FIRST = ["seer_queue.h", "seer_runtime.h", "seer_vector.h"]
HEADERS = FIRST + sorted(
    p.name for p in CSRC.glob("*.h") if p.name not in INTERNAL_HEADERS and p.name not in FIRST
)
SOURCES = sorted(p.name for p in CSRC.glob("*.c"))
# Python handlers are reached from the C worker loop through this callback;
# cffi takes the GIL around it.
CALLBACKS = """
extern "Python" int seer_py_dispatch(void *, int32_t, int32_t, seer_event *, int64_t);
"""


def make_builder(module: str = "seer._seer_c", defines: tuple[str, ...] = (), absolute: bool = False) -> FFI:
    """The cffi builder of the extension.  Benchmarks build variants (other
    module name, extra -D flags, absolute source paths) from the same code."""
    builder = FFI()
    builder.cdef("".join([_cdef["header_cdef"](PUBLIC_TYPES)] + [_cdef["header_cdef"](CSRC / h) for h in HEADERS])
                 + CALLBACKS)
    builder.set_source(
        module,
        "\n".join(f'#include "{h}"' for h in HEADERS),
        sources=[str(CSRC / s) if absolute else f"csrc/{s}" for s in SOURCES],
        include_dirs=[str(CSRC), str(INCLUDE)],
        extra_compile_args=["-std=c11", "-O3", "-ffp-contract=off", "-fno-strict-aliasing"]
        + [f"-D{d}" for d in defines],
        libraries=["m"],
    )
    return builder


ffibuilder = make_builder()

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
