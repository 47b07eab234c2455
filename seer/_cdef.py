"""C headers as cffi cdef text: SEER's public API (what seer.capi.cdef() returns) and a module's own headers.

This file imports nothing from seer: build scripts (seer/_build.py,
seer/_build_synth.py, seer/envs/_build.py) run before the package is built, so
they load it by path (``runpy.run_path``) instead of importing seer.
"""

from __future__ import annotations

import pathlib
import re

#: The probe seer.capi.Plugin calls; a static inline function of seer/seer.h,
#: which cffi's API mode wraps like any other.
VERSION_PROBE = "uint32_t seer_plugin_api_version(void);"


def header_cdef(header) -> str:
    """``header``'s declarations as cffi reads them: cdef does not run the
    preprocessor, so comments and preprocessor lines go, except integer
    constants ``#define NAME value``, kept as ``#define NAME ...`` (cffi
    takes the value from the compiled module)."""
    text = re.sub(r"/\*.*?\*/", "", pathlib.Path(header).read_text(), flags=re.S)
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#define"):
            parts = stripped.split()
            if len(parts) == 3:
                lines.append(f"#define {parts[1]} ...")
        elif not stripped.startswith("#"):
            lines.append(line)
    return "\n".join(lines) + "\n"


def api_cdef(include_dir) -> str:
    """The public API's cdef: the types and constants of
    ``include_dir/seer/seer_types.h`` and the version probe."""
    return header_cdef(pathlib.Path(include_dir) / "seer" / "seer_types.h") + VERSION_PROBE + "\n"
