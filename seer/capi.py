"""SEER's public C API from Python: the headers' folder, the cdef for cffi plug-ins, version checks, function addresses, :class:`Native` handlers.

A plug-in is a module compiled apart from SEER against :func:`get_include`
(its own cffi, Cython or C extension).  It calls SEER only through the
function table that SEER hands it (``ctx->api``), so it links against
nothing and needs no rebuild of SEER; :class:`Plugin` checks, before any of
its code runs, that it was built against this SEER's API version.

Example (a cffi build script of a plug-in)::

    import seer.capi
    from cffi import FFI

    ffibuilder = FFI()
    ffibuilder.cdef(seer.capi.cdef() + "int on_tick(seer_ctx *, const seer_event *);")
    ffibuilder.set_source("mypkg._sim", '#include <seer/seer.h>\\n#include "sim.h"',
                          sources=["sim.c"], include_dirs=[seer.capi.get_include()])
"""

from __future__ import annotations

import ctypes
import numbers
import pathlib
from typing import Any

from seer.errors import InvalidArgumentError, PluginVersionError

_INCLUDE = pathlib.Path(__file__).resolve().parent / "include"


def get_include() -> str:
    """The folder holding ``seer/seer.h``, for a plug-in's ``include_dirs``
    (as :func:`numpy.get_include` is for numpy's)."""
    return str(_INCLUDE)


def api_version() -> int:
    """``SEER_API_VERSION`` of this SEER's C API."""
    from seer._seer_c import lib

    return int(lib.SEER_API_VERSION)


def cdef() -> str:
    """C declarations of the public types (``seer_event``, ``seer_ctx``,
    ``seer_copy_rows``, the status codes, ...) and of
    ``seer_plugin_api_version``, ready for a plug-in's ``ffibuilder.cdef``."""
    from seer._cdef import api_cdef

    return api_cdef(_INCLUDE)


def address_of(fn: Any, what: str = "fn") -> int:
    """The address of a C function given as a cffi function pointer (from
    any module's ``ffi``), a cffi ``lib`` function of an API-mode module
    (pass ``ffi.addressof(lib, name)``), an integer address, a ctypes
    function pointer, or anything with an integer ``address`` attribute (a
    Numba ``cfunc``).  Raises :class:`InvalidArgumentError` naming ``what``
    for NULL, anything that is not a function, or (on Linux) an address
    outside every executable mapping of the process."""
    if isinstance(fn, bool):
        raise InvalidArgumentError(f"{what}={fn!r} is not a C function: expected a function pointer or an address")
    if isinstance(fn, numbers.Integral):
        address = int(fn)
    elif isinstance(fn, ctypes._CFuncPtr):
        address = ctypes.cast(fn, ctypes.c_void_p).value or 0
    elif _is_cdata(fn):
        from seer._seer_c import ffi

        kind = ffi.typeof(fn).kind
        if kind != "function" and not (kind == "pointer" and ffi.typeof(fn).item.kind == "function"):
            raise InvalidArgumentError(f"{what} is a cffi {ffi.typeof(fn).cname}, not a function pointer")
        address = int(ffi.cast("uintptr_t", fn))
    elif isinstance(getattr(fn, "address", None), numbers.Integral):
        address = int(fn.address)
    else:
        raise InvalidArgumentError(
            f"{what}={fn!r} is not a C function: expected a cffi function pointer (ffi.addressof(lib, name)), "
            f"an integer address, a ctypes function or a Numba cfunc"
        )
    if not 0 < address < 2**64:
        raise InvalidArgumentError(f"{what} is a NULL (or out of range) function address: {address:#x}")
    if not _is_code(address):
        raise InvalidArgumentError(f"{what}={address:#x} is not the address of code: no executable mapping "
                                   f"of this process holds it (a data pointer, a Python object's id, a made-up "
                                   f"number?); expected a C function")
    return address


_MAPS = pathlib.Path("/proc/self/maps")


def _perms(address: int) -> str | None:
    """The permissions ("r-xp") of the mapping of this process that holds
    ``address``, "" if none does, None where that cannot be told cheaply
    (no /proc/self/maps: not Linux)."""
    try:
        maps = _MAPS.read_text()
    except OSError:
        return None
    for line in maps.splitlines():
        span, perms = line.split(None, 2)[:2]
        lo, _, hi = span.partition("-")
        if int(lo, 16) <= address < int(hi, 16):
            return perms
    return ""


def _is_code(address: int) -> bool:
    """Whether ``address`` lies in an executable mapping (elsewhere than on
    Linux every non-NULL address is taken)."""
    perms = _perms(address)
    return perms is None or "x" in perms


def _is_cdata(obj: Any) -> bool:
    from seer._seer_c import ffi

    return isinstance(obj, ffi.CData)  # one base class for the cdata of every ffi


def pointer_address(ptr: Any, what: str = "pointer") -> int:
    """The address a cffi pointer (of any ``ffi``) or an integer holds."""
    if isinstance(ptr, numbers.Integral) and not isinstance(ptr, bool):
        address = int(ptr)
    elif _is_cdata(ptr):
        from seer._seer_c import ffi

        address = int(ffi.cast("uintptr_t", ptr))
    elif isinstance(getattr(ptr, "address", None), numbers.Integral):  # e.g. seer.numba's BoundState
        address = int(ptr.address)
    else:
        raise InvalidArgumentError(f"{what}={ptr!r} is invalid: expected a cffi pointer, an integer address or an "
                                   f"object with an integer .address")
    if address and (not 0 < address < 2**64 or _perms(address) == ""):
        # NULL stays allowed (a model whose C code needs no struct); a made-up number is not
        raise InvalidArgumentError(f"{what}={address:#x} points at no memory of this process: expected a pointer "
                                   f"to the struct its C code reads (a cffi pointer kept alive by the model)")
    return address


def api_address() -> int:
    """Address of SEER's function table (``const seer_api *``)."""
    from seer._seer_c import ffi, lib

    return int(ffi.cast("uintptr_t", lib.seer_api_table()))


class Plugin:
    """A compiled plug-in module, checked against this SEER's C API.

    Args:
        module: The plug-in's cffi module (``mypkg._sim``, with ``ffi`` and
            ``lib``), or its ``lib``.  It must provide
            ``seer_plugin_api_version`` (``seer.capi.cdef()`` declares it).

    Raises:
        PluginVersionError: The module was built against another API version,
            or does not say which.

    Example:
        >>> plugin = seer.capi.Plugin(mypkg._sim)            # doctest: +SKIP
        >>> kind = seer.EventKind("tick", plugin.handler("on_tick"))  # doctest: +SKIP
    """

    def __init__(self, module: Any):
        lib = getattr(module, "lib", module)
        self.ffi = getattr(module, "ffi", None)
        self.lib = lib
        self.name = getattr(module, "__name__", None) or repr(module)
        probe = getattr(lib, "seer_plugin_api_version", None)
        if probe is None:
            raise PluginVersionError(
                f"{self.name} does not provide seer_plugin_api_version(): build it against seer.capi.get_include() "
                f"with seer.capi.cdef() in its cdef (expected SEER C API version {api_version()})"
            )
        self.api_version = int(probe())
        if self.api_version != api_version():
            raise PluginVersionError(
                f"{self.name} was built against SEER C API version {self.api_version}, but this SEER provides "
                f"version {api_version()}: rebuild the module against this SEER (pip install --force-reinstall "
                f"--no-build-isolation <its package>)"
            )

    def function(self, name: str) -> int:
        """Address of the module's C function ``name``."""
        if self.ffi is None:
            raise InvalidArgumentError(f"Plugin({self.name}) was given a lib without its ffi: pass the module")
        try:
            fn = self.ffi.addressof(self.lib, name)
        except (AttributeError, KeyError, TypeError) as exc:
            raise InvalidArgumentError(f"{self.name} has no C function {name!r}") from exc
        return address_of(fn, name)

    def handler(self, name: str):
        """The module's handler ``int name(seer_ctx *, const seer_event *)`` as a :class:`seer.Native`."""
        return Native(self.function(name), name=f"{self.name}.{name}", owner=self)

    def __repr__(self) -> str:
        return f"Plugin({self.name}, api_version={self.api_version})"


def cdef_of(header: str | pathlib.Path) -> str:
    """A plug-in's own plain C header as cffi cdef text: comments and
    preprocessor lines dropped, ``#define NAME value`` kept as a constant
    (``#include <seer/seer.h>`` and guards vanish; pair it with :func:`cdef`)."""
    from seer._cdef import header_cdef

    return header_cdef(header)


class Native:
    """A native handler ``int f(seer_ctx *ctx, const seer_event *ev)``, run by
    the workers with the GIL released.

    Args:
        fn: The C function: a cffi function pointer from any module
            (``ffi.addressof(lib, "on_tick")``), an integer address, a ctypes
            function, a Numba ``cfunc`` (see :mod:`seer.numba`), or the name
            of a function compiled into SEER's core.  Prefer
            :meth:`seer.capi.Plugin.handler`, which also checks the module's
            API version.
        name: Shown in errors and traces (default: derived from ``fn``).
        owner: Kept alive as long as the handler (the module or object that
            owns the code).

    Raises:
        seer.InvalidArgumentError: ``fn`` is NULL or not a C function (on
            Linux: an address outside the process's executable mappings).
    """

    __slots__ = ("address", "name", "owner")

    def __init__(self, fn: Any, *, name: str | None = None, owner: Any = None):
        if isinstance(fn, str):
            from seer._seer_c import ffi, lib

            try:
                ptr = ffi.addressof(lib, fn)
            except AttributeError:
                raise InvalidArgumentError(
                    f"Native({fn!r}) names a function that is not compiled into seer._seer_c: pass the function "
                    f"itself (a cffi pointer, an address, a ctypes function or a Numba cfunc) for a plug-in's handler"
                ) from None
            name, owner, fn = name or fn, owner or lib, ptr
        self.address = address_of(fn, "Native(fn)")
        self.name = name or getattr(fn, "__name__", None) or f"native@{self.address:#x}"
        self.owner = owner if owner is not None else fn

    @property
    def symbol(self) -> str:
        return self.name

    def __eq__(self, other) -> bool:
        return isinstance(other, Native) and other.address == self.address

    def __hash__(self) -> int:
        return hash(self.address)

    def __repr__(self) -> str:
        return f"Native({self.name!r}, address={self.address:#x})"
