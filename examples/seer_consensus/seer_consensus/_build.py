"""cffi build of seer_consensus._consensus_c against SEER's public C API."""

import pathlib

from cffi import FFI

import seer.capi

HERE = pathlib.Path(__file__).resolve().parent.parent

ffibuilder = FFI()
ffibuilder.cdef(seer.capi.cdef() + seer.capi.cdef_of(HERE / "csrc" / "consensus.h"))
ffibuilder.set_source(
    "seer_consensus._consensus_c",
    '#include "consensus.h"',
    sources=["csrc/consensus.c"],
    include_dirs=[str(HERE / "csrc"), seer.capi.get_include()],
    extra_compile_args=["-std=c11", "-O3", "-ffp-contract=off"],
    libraries=["m"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
