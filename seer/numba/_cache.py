"""seer.numba's on-disk cache: keyed by what compiled code froze, kept only in a folder nobody else can write.

Numba freezes the values of the globals and closure variables a function
reads into its machine code, but its cache index is keyed by the bytecode
and the source file's time stamp only: change a module-level constant and
the next process loads the old value.  :class:`KeyedCache` adds the frozen
values (numbers, strings, tuples, numpy arrays by content, and the same for
every jitted function it calls) to the key; a value that cannot be keyed
turns the disk cache off for that function, with one warning.

The cache's index files are pickles, so a folder another user can write to
is refused (``seer._io.check_trusted_dir``): the code then compiles in
memory, with one warning naming the folder and the fix.
"""

from __future__ import annotations

import dis
import enum
import hashlib
import os
import pathlib
import types
import warnings

import numba
import numpy as np
from numba.core import caching as _caching
from numba.core.dispatcher import Dispatcher

from seer.errors import SeerNumbaCacheWarning, UntrustedPathError

_WARNED: set = set()
_TRUSTED: dict[str, pathlib.Path | None] = {}
# Packages whose names stand for their code: their version is in Numba's key already
_OPAQUE_MODULES = ("numpy", "numba", "llvmlite", "seer", "math", "cmath", "builtins")


def warn_once(key, message: str) -> None:
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(message, SeerNumbaCacheWarning, stacklevel=4)


class Unkeyable(Exception):
    """A frozen value that cannot be part of a cache key (its description follows)."""


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:20]


def value_key(v, seen: set, depth: int = 0):
    """A stable description of ``v`` as Numba would freeze it, or :class:`Unkeyable`."""
    if depth > 8:
        raise Unkeyable("a value nested too deep")
    if v is None or isinstance(v, (bool, int, float, complex, str, bytes)):
        return (type(v).__name__, repr(v))
    if isinstance(v, np.ndarray):
        if v.dtype.hasobject:
            raise Unkeyable("an object-dtype numpy array")
        return ("ndarray", v.dtype.str, v.shape, _sha(np.ascontiguousarray(v).tobytes()))
    if isinstance(v, np.generic):
        return ("np", v.dtype.str, v.tobytes().hex())
    if isinstance(v, np.dtype):
        return ("dtype", v.str)
    if isinstance(v, tuple):
        return ("tuple", type(v).__qualname__, tuple(value_key(x, seen, depth + 1) for x in v))
    if isinstance(v, types.ModuleType):
        return ("module", v.__name__)
    if isinstance(v, Dispatcher):
        return ("jit", function_key(v.py_func, seen, depth + 1))
    if isinstance(getattr(v, "_pyfunc", None), types.FunctionType):  # a Numba cfunc
        return ("cfunc", str(getattr(v, "_sig", "")), function_key(v._pyfunc, seen, depth + 1))
    if isinstance(v, enum.Enum):
        return ("enum", type(v).__module__, type(v).__qualname__, value_key(v.value, seen, depth + 1))
    if isinstance(v, numba.types.Type):
        return ("nbtype", str(v))
    module = getattr(v, "__module__", None)
    name = getattr(v, "__qualname__", None) or getattr(v, "__name__", None)
    if isinstance(v, (type, types.BuiltinFunctionType, np.ufunc)) or (
            module and name and str(module).split(".")[0] in _OPAQUE_MODULES):
        return ("named", str(module), str(name))
    if isinstance(v, types.FunctionType):  # a plain function Numba inlines through an overload or a cfunc
        return ("function", function_key(v, seen, depth + 1))
    raise Unkeyable(f"{type(v).__module__}.{type(v).__qualname__} object")


def _codes(code):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from _codes(c)


def _names(fn) -> tuple[set, set]:
    """(globals read, attribute names read) by ``fn``'s code, nested code included."""
    globs, attrs = set(), set()
    for code in _codes(fn.__code__):
        for ins in dis.get_instructions(code):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME"):
                globs.add(ins.argval)
            elif ins.opname in ("LOAD_ATTR", "LOAD_METHOD"):
                attrs.add(ins.argval)
    return globs, attrs


def function_key(fn, seen: set | None = None, depth: int = 0) -> str:
    """A digest of ``fn``'s code and of every global and closure value it
    reads (recursively through the jitted functions it calls)."""
    seen = set() if seen is None else seen
    ident = id(fn)
    if ident in seen:  # recursion: the function's own code is keyed where the walk started
        return f"{fn.__module__}.{fn.__qualname__}"
    seen.add(ident)
    parts = [fn.__module__, fn.__qualname__]
    for code in _codes(fn.__code__):
        parts.append(_sha(code.co_code))
        parts.append([_const_repr(c) for c in code.co_consts if not isinstance(c, types.CodeType)])
    names, attrs = _names(fn)
    g = fn.__globals__
    for name in sorted(names):
        if name not in g:
            continue
        v = g[name]
        try:
            parts.append((name, value_key(v, seen, depth)))
        except Unkeyable as exc:
            raise Unkeyable(f"global {name!r} of {fn.__qualname__} is a {exc}") from None
        if isinstance(v, types.ModuleType) and v.__name__.split(".")[0] not in _OPAQUE_MODULES:
            for attr in sorted(attrs):  # mod.K is frozen like a global
                if hasattr(v, attr):
                    try:
                        parts.append((name, attr, value_key(getattr(v, attr), seen, depth + 1)))
                    except Unkeyable:
                        pass  # an attribute name of something else; Numba refuses it if the code reads it
    for i, cell in enumerate(fn.__closure__ or ()):
        try:
            parts.append((fn.__code__.co_freevars[i], value_key(cell.cell_contents, seen, depth)))
        except ValueError:  # an empty cell
            parts.append((fn.__code__.co_freevars[i], "<empty>"))
        except Unkeyable as exc:
            raise Unkeyable(f"closure variable {fn.__code__.co_freevars[i]!r} of {fn.__qualname__} is a "
                            f"{exc}") from None
    return _sha(repr(parts).encode())


def _const_repr(c) -> str:
    # a set literal is a frozenset constant: its repr's order changes with the string hash seed
    if isinstance(c, frozenset):
        return "frozenset(" + repr(sorted(_const_repr(x) for x in c)) + ")"
    if isinstance(c, tuple):
        return "(" + ", ".join(_const_repr(x) for x in c) + ")"
    return repr(c)


class KeyedCache(_caching.FunctionCache):
    """Numba's per-function cache, with the frozen globals in the index key."""

    def _index_key(self, sig, codegen):
        return (*super()._index_key(sig, codegen), function_key(self._py_func))


def trusted_folder(path: pathlib.Path) -> pathlib.Path | None:
    """``path`` if Numba may load from it (created 0700 when missing), else None with one warning."""
    from seer._io import check_trusted_dir, ensure_private_dir

    got = _TRUSTED.get(str(path), False)
    if got is not False:
        return got
    try:
        ensure_private_dir(path, what="seer.numba cache folder")
        check_trusted_dir(path, what="seer.numba cache folder")
        pycache = path / "__pycache__"
        if pycache.is_dir():
            check_trusted_dir(pycache, what="seer.numba cache folder")
        got = path
    except (UntrustedPathError, NotADirectoryError, PermissionError) as exc:
        warn_once(("folder", str(path)),
                  f"seer.numba compiles without its on-disk cache: {exc}. Every process compiles again until "
                  f"the folder is fixed (chmod 700, owned by you) or SEER_CACHE_DIR names a private one.")
        got = None
    _TRUSTED[str(path)] = got
    return got


def numba_cache_ok() -> bool:
    """Whether Numba's own cache folder (``NUMBA_CACHE_DIR``, where set; else
    ``__pycache__`` beside each source file, its owner's) may be used."""
    env = os.environ.get("NUMBA_CACHE_DIR")
    if not env:
        return True
    return trusted_folder(pathlib.Path(env)) is not None


def enable_keyed_cache(disp: Dispatcher, what: str) -> bool:
    """Give ``disp`` a :class:`KeyedCache` (or no disk cache, with a
    warning, when a frozen value cannot be keyed); True when cached."""
    if isinstance(getattr(disp, "_cache", None), KeyedCache):
        return True
    try:
        function_key(disp.py_func)
    except Unkeyable as exc:
        warn_once(("value", disp.py_func.__module__, disp.py_func.__qualname__),
                  f"seer.numba compiles {what} without the on-disk cache: its {exc}, which cannot be part of the "
                  f"cache key (numbers, strings, tuples and numpy arrays can; pass other values through the "
                  f"State as parameters)")
        disp._cache = _caching.NullCache()
        return False
    if not numba_cache_ok():
        disp._cache = _caching.NullCache()
        return False
    try:
        disp._cache = KeyedCache(disp.py_func)
    except RuntimeError as exc:  # code without a file Numba can locate (python -c, exec)
        warn_once(("locator", disp.py_func.__module__, disp.py_func.__qualname__),
                  f"seer.numba compiles {what} without the on-disk cache: {exc}")
        disp._cache = _caching.NullCache()
        return False
    return True


def upgrade_helpers(fn, seen: set | None = None) -> None:
    """Key the disk cache of every ``cache=True`` jitted helper ``fn`` reads
    (and the helpers they read) by its frozen values, before any compiles."""
    seen = set() if seen is None else seen
    if id(fn) in seen:
        return
    seen.add(id(fn))
    names, _ = _names(fn)
    values = [fn.__globals__[n] for n in names if n in fn.__globals__]
    values += [c.cell_contents for c in (fn.__closure__ or ()) if _has_contents(c)]
    for v in values:
        if isinstance(v, Dispatcher) and not v.py_func.__module__.startswith("seer."):
            if type(getattr(v, "_cache", None)) is _caching.FunctionCache:
                enable_keyed_cache(v, f"helper {v.py_func.__qualname__}")
            upgrade_helpers(v.py_func, seen)


def _has_contents(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:
        return False
    return True
