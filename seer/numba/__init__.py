"""Numba-compiled native handlers: Python syntax, run by SEER's workers without the GIL (extra ``seer-marl[numba]``).

A handler is written in Python, compiled by Numba in nopython mode into a C
function ``int f(seer_ctx *, const seer_event *)``, and runs exactly where a
C handler runs.  It reaches SEER only through the public C API's function
table (``ctx->api``): :func:`emit`, :func:`uniform` and :func:`random_u64`
call through it, so results are bit-identical for every worker count, as
for C handlers.

The model's arrays and parameters are declared once in a :class:`State`; a
handler gets them as a named tuple (arrays are views of the model's own
buffers, a parameter declared with a scalar type such as ``"f8"`` reads as a
number)::

    import seer, seer.numba as snb

    STATE = snb.State(value="f8[:]", heard="f8[:, :]", gain="f8")

    @STATE.handler
    def on_tick(ctx, ev, s):
        i = ev.entity
        s.value[i] += s.gain * (s.heard[i, 0] + s.heard[i, 1])
        return snb.emit(ctx, i, ev.time + 0.1, 0, 0)

    class MyModel(seer.Model):
        def __init__(self, n, gain=0.5):
            self.state = {"value": np.zeros(n), "heard": np.zeros((n, 2))}
            self.kinds = [seer.EventKind("tick", seer.Native(on_tick))]
            self.native_model = STATE.bind(self.state, gain=gain)

``ev`` has the fields of :data:`seer.EVENT_DTYPE` (entity, time, kind,
payload, source, seq).  Return 0, or non-zero to fail the step: a
:class:`seer.HandlerError` names the entity, kind, time and the code
(``err.code``, ``err.code_name``).  An exception raised in a handler or a
copy step (``raise ValueError(...)``, a division by zero, ``IndexError``
under ``NUMBA_BOUNDSCHECK=1``) fails the step the same way, with the
exception's message and the exception as ``__cause__``.  An emit to a bad
entity or too early fails it with :class:`seer.CausalityError` as in C.

**Parameters** (values that are not per-entity rows) are State fields too:
``"f8"``, ``"i8"``, ... for a scalar, ``"f8[:]"`` for a small array, bound
by name (``STATE.bind(model.state, gain=0.5, weights=w)``).  The bound state
keeps them alive; keep it as ``model.native_model``; ``bound["gain"]`` is
the parameter's buffer, to change between steps.  Do not put parameters in
module globals: Numba freezes a global's value into the compiled code.

**Reading other entities** goes through the window-start snapshot, as in C:
list the read fields in ``model.shared_state``, bind
``model.snapshot_targets()[name]`` (the runtime copies the state into it
before each window) under a field of its own, and read neighbours there::

    STATE = snb.State(x="f8[:]", x_snap="f8[:]")

    @STATE.handler
    def diffuse(ctx, ev, s):
        i = ev.entity
        n = s.x.shape[0]
        s.x[i] += 0.1 * (s.x_snap[(i + 1) % n] + s.x_snap[(i - 1) % n] - 2 * s.x_snap[i])
        return snb.emit(ctx, i, ev.time + 1.0, 0, 0)

    # in the model: self.shared_state = ("x",)
    #   self.native_model = STATE.bind({"x": self.state["x"], "x_snap": self.snapshot_targets()["x"]})

Compilation happens when the handler is first used (``seer.Native(h)``,
i.e. when the model is built); a handler that Numba cannot compile in
nopython mode raises :class:`NumbaCompileError` with Numba's message and the
handler's name.  Compiled code is cached on disk, once per machine: the next
process (a process-backend worker too) loads it.  The cache key covers the
values of the globals and closure variables the code reads (changing one
recompiles); a value that cannot be keyed compiles without the disk cache,
with one :class:`SeerNumbaCacheWarning`.  Write helpers as
``@seer.numba.njit`` (or Numba's ``@njit(cache=True)``, which a handler's
compile keys the same way); they may take the State as
``STATE.tuple_type``.  The cache folder (``$SEER_CACHE_DIR/numba``) must be
private: one another user can write to is not loaded from (a warning names it).
"""

from __future__ import annotations

import collections
import ctypes
import hashlib
import math
import re
import threading
import types
from collections.abc import Mapping
from typing import Any, Callable

import numpy as np

from seer.errors import InvalidArgumentError, NumbaCompileError, SeerNumbaCacheWarning

try:
    import numba
except ImportError:  # the decorators say how to get it
    numba = None

if numba is not None:
    from seer.numba._compile import REGISTRY as _REGISTRY  # noqa: F401  (read by the generated modules)
    from seer.numba._intrinsics import (  # noqa: F401  (the generated entry points use the private ones)
        _as_ptr, _guard_copy, _guard_event, emit, model_table, random_u64, rt_push, rt_reset, rt_step, uniform)
else:  # pragma: no cover - exercised where numba is missing

    def emit(*args):
        _need_numba()

    uniform = random_u64 = model_table = rt_push = rt_step = rt_reset = emit

__all__ = ["State", "BoundState", "handler", "njit", "copy_rows", "emit", "uniform", "random_u64", "rt_push",
           "rt_step", "rt_reset", "NumbaCompileError", "SeerNumbaCacheWarning"]

#: seer_copy_rows: api, act, obs, rew, term, trunc, mask, alive, ended
_ROW_FIELDS = ("api", "act", "obs", "rew", "term", "trunc", "mask", "alive", "ended")
_TYPE_RE = re.compile(r"^(?P<dtype>[a-z]+\d*_?)(\[(?P<dims>[:, ]*)\])?$")
_DTYPES = {"f8": np.float64, "f4": np.float32, "i8": np.int64, "i4": np.int32, "i2": np.int16, "i1": np.int8,
           "u8": np.uint64, "u4": np.uint32, "u1": np.uint8, "b1": np.bool_,
           "float64": np.float64, "float32": np.float32, "int64": np.int64, "int32": np.int32,
           "uint8": np.uint8, "bool_": np.bool_}
#: the most dimensions a State array may have (Numba compiles each one into every handler's entry)
MAX_NDIM = 8
_LOCK = threading.Lock()


def _need_numba() -> None:
    if numba is None:
        raise ImportError("seer.numba needs Numba, an optional extra: pip install 'seer-marl[numba]'")


def _state_class_name(names) -> str:
    return "SeerState_" + "_".join(f"{len(n)}{n}" for n in names)


def _state_class(names: tuple[str, ...]):
    """The one named-tuple class of these field names, importable as
    ``seer.numba.<name>``: Numba's cache keys a function by its argument
    types, and a class made afresh in each process would never match."""
    name = _state_class_name(names)
    cls = globals().get(name)
    if cls is None:
        cls = collections.namedtuple(name, names, module=__name__)
        globals()[name] = cls
    return cls


def __getattr__(name: str):
    # a cached index names a state class before this process declared its State
    if name.startswith("SeerState_"):
        rest, names = name[len("SeerState_"):], []
        while rest:
            m = re.match(r"(\d+)", rest)
            if not m:
                break
            k = int(m.group(1))
            names.append(rest[len(m.group(1)):len(m.group(1)) + k])
            rest = rest[len(m.group(1)) + k + 1:]
        if names and _state_class_name(names) == name and all(n.isidentifier() for n in names):
            return _state_class(tuple(names))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


SeerCopyRows = collections.namedtuple("SeerCopyRows", _ROW_FIELDS, module=__name__)
_ROWS = SeerCopyRows


def _layout_word(fields) -> int:
    digest = hashlib.sha256(repr([(n, d.str, nd) for n, d, nd in fields]).encode()).digest()
    return int.from_bytes(digest[:8], "little", signed=True)


# ---- the model's arrays ---------------------------------------------------------------------------


class State:
    """The arrays and parameters a model's Numba handlers see, declared once.

    Args:
        **fields: name -> Numba type string: ``"f8[:]"``, ``"i8[:, :]"``, ...
            for an array (dtype and number of dimensions, at most
            :data:`MAX_NDIM`; shapes are read at run time), or a scalar
            type (``"f8"``, ``"i8"``, ...) for a parameter, which the
            handler reads as a number.

    Attributes:
        tuple_type: The named-tuple class the handlers get (``s``); build
            one from the bound arrays to call the same jitted helpers from
            Python (``STATE.tuple_type(*arrays)``).

    Raises:
        ImportError: Numba is not installed (``pip install 'seer-marl[numba]'``).
        seer.InvalidArgumentError: a type string is not understood.
    """

    def __init__(self, **fields: str):
        _need_numba()
        if not fields:
            raise InvalidArgumentError("State() needs at least one array: State(name='f8[:]', ...)")
        self.fields: list[tuple[str, np.dtype, int]] = []
        for name, spec in fields.items():
            m = _TYPE_RE.match(str(spec).replace(" ", "")) if isinstance(spec, str) else None
            if not m or m.group("dtype") not in _DTYPES:
                raise InvalidArgumentError(
                    f"State({name}={spec!r}): expected a Numba array type such as 'f8[:]' or 'i8[:, :]', or a "
                    f"scalar parameter type such as 'f8', with a dtype in {sorted(_DTYPES)}")
            dims = m.group("dims")
            ndim = 0 if dims is None else dims.count(":")
            if dims is not None and (ndim == 0 or dims.replace(":", "").replace(",", "")):
                raise InvalidArgumentError(f"State({name}={spec!r}): write one ':' per dimension, as in 'f8[:, :]'")
            if ndim > MAX_NDIM:
                raise InvalidArgumentError(
                    f"State({name}={spec!r}) has {ndim} dimensions: seer.numba supports at most {MAX_NDIM}")
            self.fields.append((name, np.dtype(_DTYPES[m.group("dtype")]), ndim))
        self.names = tuple(f[0] for f in self.fields)
        self.words = 1 + sum(1 + nd for _, _, nd in self.fields)  # word 0: the layout, checked by every entry
        self.layout = _layout_word(self.fields)
        self.tuple_type = _state_class(self.names)

    def __repr__(self) -> str:
        return "State(" + ", ".join(
            f"{n}={_spec(d, nd)!r}" for n, d, nd in self.fields) + ")"

    def bind(self, arrays: Mapping[str, Any] = (), **params) -> "BoundState":
        """The table of ``arrays`` and ``params`` (by field name) for the model's ``native_model``.

        Array fields take writeable C-contiguous numpy arrays of the
        declared dtype and dimensions; parameter fields (scalar types) take
        a number, or a 0-d array of the dtype to share one buffer.  Arrays
        need not be in ``model.state``: any buffer works (a small parameter
        array, a :meth:`seer.Model.snapshot_targets` buffer).  The bound
        state holds them all; keep it (``model.native_model``): the table
        holds their addresses.

        Raises:
            seer.InvalidArgumentError: ``arrays`` is no mapping, a field is
                missing, or a value's type, dtype or dimensions differ from
                the State's (the message names the field, expected and got).
        """
        if not isinstance(arrays, Mapping):
            raise InvalidArgumentError(
                f"State.bind(arrays) takes a mapping of field name -> numpy array (such as model.state), got "
                f"{type(arrays).__name__}")
        unknown = sorted(set(params) - set(self.names))
        if unknown:
            raise InvalidArgumentError(f"State.bind: {', '.join(map(repr, unknown))} is no field of {self!r}")
        given = {**arrays, **params}
        words = np.zeros(self.words, np.int64)
        words[0] = self.layout
        k = 1
        keep, by_name = [], {}
        for name, dtype, ndim in self.fields:
            if name not in given:
                raise InvalidArgumentError(
                    f"State.bind: {'array' if ndim else 'parameter'} {name!r} is missing: expected "
                    f"{_expect(dtype, ndim)}")
            arr = _bindable(name, given[name], dtype, ndim)
            words[k] = arr.ctypes.data
            words[k + 1:k + 1 + ndim] = arr.shape
            k += 1 + ndim
            keep.append(arr)
            by_name[name] = arr
        return BoundState(words, keep, self, by_name)

    def handler(self, fn: Callable | None = None, *, cache: bool = True):
        """Decorator: ``fn(ctx, ev, s)`` as a native handler (a :class:`Handler`,
        which :class:`seer.Native` takes)."""
        def wrap(f):
            return Handler(f, self, cache=cache)
        return wrap(fn) if fn is not None else wrap

    def copy_step(self, spec, *, cache: bool = True):
        """Decorator: ``fn(rows, op, s)`` as the native copy step of an env
        whose rows ``spec`` (a :class:`seer.vector.native.NativeSpec`)
        declares; ``s`` is this state, bound into the env's ``state``
        (:meth:`bind`), ``rows`` a named tuple ``(api, act, obs, rew, term,
        trunc, mask, alive, ended)`` of the copy's row arrays (``api``: the
        table address for :func:`rt_push`, :func:`rt_step`, :func:`rt_reset`;
        ``act`` has shape ``(slots,)`` of int64 for a ``Discrete`` action
        space, ``(slots, *shape)`` otherwise).  Return 0 or a SEER_E_* code
        (``SEER_E_UNSUPPORTED`` = -12 for an op left to Python); an
        exception fails the step as a :class:`seer.HandlerError`.  Use it as
        ``NativeCopy(spec, step=fn, state=bound)``."""
        from seer.vector.native import NativeSpec

        if not isinstance(spec, NativeSpec):
            raise InvalidArgumentError(f"copy_step(spec=...) needs a seer.vector.native.NativeSpec, got {spec!r}")

        def wrap(f):
            return Handler(f, self, cache=cache, rows=spec)
        return wrap


def _spec(dtype, ndim) -> str:
    short = {v: k for k, v in reversed(list(_DTYPES.items()))}[dtype.type]
    return short if ndim == 0 else f"{short}[{', '.join(':' * ndim)}]"


def _field_specs(state):
    return [(n, repr(_spec(d, nd))) for n, d, nd in state.fields]


def _expect(dtype, ndim) -> str:
    if ndim == 0:
        return f"a number (or a 0-d {dtype} array)"
    return f"a writeable C-contiguous {dtype} array with {ndim} dimension{'s' * (ndim > 1)}"


def _bindable(name: str, v, dtype: np.dtype, ndim: int) -> np.ndarray:
    what = "array" if ndim else "parameter"
    if ndim == 0 and not isinstance(v, np.ndarray):
        if isinstance(v, (bool, int, float, np.number, np.bool_)) and not isinstance(v, complex):
            got = np.asarray(v)
            if np.can_cast(got.dtype, dtype, "same_kind") or (dtype.kind == "f" and got.dtype.kind in "iub"):
                out = np.array(v, dtype)
                if out == v:
                    return out
            raise InvalidArgumentError(f"State.bind: parameter {name!r} is {v!r} ({got.dtype}): expected "
                                       f"{_expect(dtype, 0)} that {dtype} holds exactly")
        raise InvalidArgumentError(f"State.bind: parameter {name!r} is a {type(v).__name__}: expected "
                                   f"{_expect(dtype, 0)}")
    if not isinstance(v, np.ndarray):
        raise InvalidArgumentError(f"State.bind: {what} {name!r} is a {type(v).__name__}: expected "
                                   f"{_expect(dtype, ndim)}")
    if v.dtype != dtype or v.ndim != ndim or not v.flags.c_contiguous or not v.flags.writeable:
        raise InvalidArgumentError(
            f"State.bind: {what} {name!r} is {v.dtype}{list(v.shape)} (C-contiguous={v.flags.c_contiguous}, "
            f"writeable={v.flags.writeable}): expected {_expect(dtype, ndim)}")
    return v


class BoundState:
    """A model's arrays and parameters, bound for its Numba handlers: its
    ``address`` goes into ``Model.native_model`` (``seer.Runtime`` takes the
    object itself).  ``bound[name]`` is the buffer bound under ``name`` (a
    parameter's is a 0-d array: ``bound["gain"][()] = 0.7`` between steps)."""

    def __init__(self, words: np.ndarray, arrays: list, state: State | None = None, by_name: dict | None = None):
        self.words = words
        self.arrays = arrays
        self.state = state
        self._by_name = by_name or {}
        self.address = int(words.ctypes.data)

    def __getitem__(self, name: str) -> np.ndarray:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"{name!r} is no field of {self.state!r}") from None

    def tuple(self):
        """The State tuple of the bound buffers, for calling jitted helpers from Python."""
        return self.state.tuple_type(*(self._by_name[n] for n in self.state.names))

    def __int__(self) -> int:
        return self.address

    __index__ = __int__


class Handler:
    """A Numba handler, compiled at first use (``address``)."""

    def __init__(self, fn: Callable, state: State, *, cache: bool = True, rows=None):
        _need_numba()
        if not callable(fn):
            raise InvalidArgumentError(f"seer.numba handler must be a function, got {fn!r}")
        self.py_func = fn
        self.state = state
        self.cache = cache
        self.rows = rows  # a NativeSpec: a copy step; None: an event handler
        self.__name__ = getattr(fn, "__name__", "handler")
        self.__qualname__ = getattr(fn, "__qualname__", self.__name__)
        self.__doc__ = fn.__doc__
        self._cfuncs: dict[bool, object] = {}

    @property
    def address(self) -> int:
        """The compiled C function's address (compiles on first access)."""
        return self.compile().address

    def compile(self, debug: bool = False):
        """The compiled cfunc; ``debug=True``: the variant with bounds checks that a
        ``seer.Runtime(debug=True)`` runs (compiled and cached apart)."""
        with _LOCK:
            cfunc = self._cfuncs.get(debug)
            if cfunc is None:
                from seer.numba._compile import compile_handler

                cfunc = self._cfuncs[debug] = compile_handler(self, NumbaCompileError, debug=debug)
        return cfunc

    def check_native_model(self, bound, where: str) -> None:
        """Refuse a table bound by a State of another layout than this handler's."""
        other = getattr(bound, "state", None)
        if isinstance(bound, BoundState) and other is not None and other.layout != self.state.layout:
            mine, theirs = dict(_field_specs(self.state)), dict(_field_specs(other))
            diff = [f"{n!r}: expected {mine.get(n, 'no such field')}, got {theirs.get(n, 'missing')}"
                    for n in dict.fromkeys([*mine, *theirs]) if mine.get(n) != theirs.get(n)]
            raise InvalidArgumentError(
                f"{where} ({self.__qualname__}) was compiled for {self.state!r}, but the table it gets was bound by "
                f"{other!r} ({'; '.join(diff) or 'fields in another order'}): bind the arrays with the "
                f"handler's State")

    def __call__(self, *args):
        raise TypeError(f"{self.__qualname__} is a SEER native handler: SEER's workers call it; use it as "
                        f"seer.Native({self.__name__}) in a seer.EventKind")

    def __repr__(self) -> str:
        return f"<seer.numba handler {self.__qualname__}>"


def njit(fn: Callable | None = None, *, cache: bool = True, **options):
    """``@seer.numba.njit``: Numba's ``njit`` for helpers of handlers and
    copy steps, cached on disk once per machine with the values of the
    globals and closure variables it reads in the key (a value that cannot
    be keyed: no disk cache, one warning)."""
    _need_numba()

    def wrap(f):
        from seer.numba._cache import enable_keyed_cache

        disp = numba.njit(cache=False, **options)(f)
        if cache:
            enable_keyed_cache(disp, f"helper {f.__qualname__}")
        return disp
    return wrap(fn) if fn is not None else wrap


def copy_rows(api: int, act, obs, rew, term, trunc, mask, alive, ended):
    """The ``rows`` tuple a copy step gets, from numpy arrays: for calling
    the step's Numba code from Python on an env's own rows (its single-env
    ``step``), so both paths run the same code."""
    return _ROWS(int(api), act, obs, rew, term, trunc, mask, alive, ended)


def handler(state: State, *, cache: bool = True):
    """``@seer.numba.handler(STATE)``: the same as ``@STATE.handler``."""
    return state.handler(cache=cache)


def _normalized(etype, evalue, etb) -> BaseException:
    if isinstance(evalue, BaseException):
        exc = evalue
    elif isinstance(etype, type) and issubclass(etype, BaseException):
        try:
            exc = etype(*evalue) if isinstance(evalue, tuple) else etype() if evalue is None else etype(evalue)
        except Exception:  # noqa: BLE001 - an exception class that its own args do not build
            exc = RuntimeError(f"{etype.__name__}: {evalue!r}")
    else:
        exc = RuntimeError(f"unknown error from compiled code: {etype!r} {evalue!r}")
    if etb is not None and isinstance(etb, types.TracebackType):
        exc = exc.with_traceback(etb)
    return exc


def _event_at(address: int):
    from seer.queue import EVENT_DTYPE

    row = np.frombuffer((ctypes.c_char * EVENT_DTYPE.itemsize).from_address(address), EVENT_DTYPE, count=1)[0]
    return int(row["entity"]), int(row["kind"]), float(row["time"])


def _raised(key, where, event, etype, evalue=None, etb=None) -> None:
    """Called by a guard (with the GIL) when compiled code raised."""
    from seer import _native_errors

    entity, kind, time = _event_at(where) if event else (-1, int(where), math.nan)
    _native_errors.record(key, entity, kind, time, -8, _normalized(etype, evalue, etb))


def _returned(key, where, rc) -> None:
    """Called by a guard (with the GIL) when a handler returned non-zero."""
    from seer import _native_errors

    entity, kind, time = _event_at(where)
    _native_errors.record(key, entity, kind, time, rc, None)
