"""Numba-compiled native handlers: Python syntax, run by SEER's workers with the GIL released (extra ``seer[numba]``).

A handler is written in Python, compiled by Numba in nopython mode into a C
function ``int f(seer_ctx *, const seer_event *)``, and runs exactly where a
C handler runs.  It reaches SEER only through the public C API's function
table (``ctx->api``): :func:`emit`, :func:`uniform` and :func:`random_u64`
call through it, so results are bit-identical for every worker count, as
for C handlers.

The model's arrays are declared once in a :class:`State`; a handler gets
them as a named tuple of numpy arrays (views of the model's own buffers)::

    import seer, seer.numba as snb

    STATE = snb.State(value="f8[:]", heard="f8[:, :]")

    @STATE.handler
    def on_tick(ctx, ev, s):
        i = ev.entity
        s.value[i] += 0.5 * (s.heard[i, 0] + s.heard[i, 1])
        return snb.emit(ctx, i, ev.time + 0.1, 0, 0)

    class MyModel(seer.Model):
        def __init__(self, n):
            self.state = {"value": np.zeros(n), "heard": np.zeros((n, 2))}
            self.kinds = [seer.EventKind("tick", seer.Native(on_tick))]
            self.native_model = STATE.bind(self.state)

``ev`` has the fields of :data:`seer.EVENT_DTYPE` (entity, time, kind,
payload, source, seq).  Return 0, or non-zero to fail the step
(:class:`seer.HandlerError` names the entity, kind and time); an emit to a
bad entity or too early fails it with :class:`seer.CausalityError` as in C.

Compilation happens when the handler is first used (``seer.Native(h)``,
i.e. when the model is built); a handler that Numba cannot compile in
nopython mode raises :class:`NumbaCompileError` with Numba's message and the
handler's name.  Compiled code is cached on disk (Numba's ``cache=True``),
so the next process starts without compiling.
"""

from __future__ import annotations

import collections
import hashlib
import importlib.util
import inspect
import os
import pathlib
import re
import sys
import threading
from typing import Any, Callable

import numpy as np

from seer.errors import InvalidArgumentError, SeerError

try:
    import numba
    from numba import types as _nbt
    from numba.core import cgutils as _cgutils
    from numba.extending import intrinsic as _intrinsic
except ImportError:  # the decorators say how to get it
    numba = None

__all__ = ["State", "handler", "copy_rows", "emit", "uniform", "random_u64", "rt_push", "rt_step", "rt_reset",
           "NumbaCompileError"]

#: offsets in seer_ctx and seer_api (csrc/include/seer/seer_types.h); checked
#: against the compiled core at first use
_CTX_API, _CTX_MODEL = 0, 2            # int64 words
_API_EMIT, _API_RANDOM_U64, _API_UNIFORM = 1, 2, 3
_API_RT_PUSH, _API_RT_STEP, _API_RT_RESET = 5, 6, 7
#: seer_copy_rows: api, act, obs, rew, term, trunc, mask, alive, ended
_ROW_FIELDS = ("api", "act", "obs", "rew", "term", "trunc", "mask", "alive", "ended")
_TYPE_RE = re.compile(r"^(?P<dtype>[a-z]+\d*)\[(?P<dims>[:, ]*)\]$")
_DTYPES = {"f8": np.float64, "f4": np.float32, "i8": np.int64, "i4": np.int32, "i2": np.int16, "i1": np.int8,
           "u8": np.uint64, "u4": np.uint32, "u1": np.uint8, "b1": np.bool_,
           "float64": np.float64, "float32": np.float32, "int64": np.int64, "int32": np.int32,
           "uint8": np.uint8, "bool_": np.bool_}
_REGISTRY: dict[str, Any] = {}
_LOCK = threading.Lock()


class NumbaCompileError(SeerError, TypeError):
    """Numba could not compile a handler in nopython mode (its message follows)."""


def _need_numba() -> None:
    if numba is None:
        raise ImportError("seer.numba needs Numba, an optional extra: pip install 'seer[numba]'")


# ---- intrinsics: raw memory and the API table, cacheable (no process addresses) ----------------

if numba is not None:

    @_intrinsic
    def _as_ptr(typingctx, address):
        """int64 -> void *."""
        def codegen(context, builder, sig, args):
            return builder.inttoptr(args[0], _cgutils.voidptr_t)
        return _nbt.voidptr(_nbt.int64), codegen

    def _ll_fn(ret, args):
        from llvmlite import ir
        return ir.FunctionType(ret, args).as_pointer()

    @_intrinsic
    def _call_event(typingctx, fn, ctx, target, time, kind, payload):
        """(*fn)(ctx, target, time, kind, payload): the table's emit (ctx: a handler's) and rt_push (ctx: a runtime)."""
        from llvmlite import ir

        def codegen(context, builder, sig, args):
            fnty = _ll_fn(ir.IntType(32), [_cgutils.voidptr_t, ir.IntType(32), ir.DoubleType(), ir.IntType(32),
                                           ir.IntType(64)])
            return builder.call(builder.inttoptr(args[0], fnty), args[1:])
        return _nbt.int32(_nbt.int64, _nbt.voidptr, _nbt.int32, _nbt.float64, _nbt.int32, _nbt.int64), codegen

    @_intrinsic
    def _call_u64(typingctx, fn, ctx):
        from llvmlite import ir

        def codegen(context, builder, sig, args):
            return builder.call(builder.inttoptr(args[0], _ll_fn(ir.IntType(64), [_cgutils.voidptr_t])), args[1:])
        return _nbt.uint64(_nbt.int64, _nbt.voidptr), codegen

    @_intrinsic
    def _call_f64(typingctx, fn, ctx):
        from llvmlite import ir

        def codegen(context, builder, sig, args):
            return builder.call(builder.inttoptr(args[0], _ll_fn(ir.DoubleType(), [_cgutils.voidptr_t])), args[1:])
        return _nbt.float64(_nbt.int64, _nbt.voidptr), codegen

    @numba.njit(inline="always", cache=True)
    def _api_entry(ctx, k):
        words = numba.carray(ctx, (3,), np.int64)
        table = numba.carray(_as_ptr(words[_CTX_API]), (k + 1,), np.int64)
        return table[k]

    @numba.njit(inline="always", cache=True)
    def emit(ctx, target, time, kind, payload):
        """Send an event from the handled entity (``seer_emit``): 0 or a SEER_E_* code."""
        return _call_event(_api_entry(ctx, _API_EMIT), ctx, np.int32(target), np.float64(time), np.int32(kind),
                          np.int64(payload))

    @numba.njit(inline="always", cache=True)
    def uniform(ctx):
        """A uniform [0, 1) draw from the handled entity's counter-based stream (``seer_uniform``)."""
        return _call_f64(_api_entry(ctx, _API_UNIFORM), ctx)

    @numba.njit(inline="always", cache=True)
    def random_u64(ctx):
        """64 random bits from the handled entity's counter-based stream (``seer_random_u64``)."""
        return _call_u64(_api_entry(ctx, _API_RANDOM_U64), ctx)

    @_intrinsic
    def _call_step(typingctx, fn, rt, horizon):
        from llvmlite import ir

        def codegen(context, builder, sig, args):
            fnty = _ll_fn(ir.IntType(32), [_cgutils.voidptr_t, ir.DoubleType()])
            return builder.call(builder.inttoptr(args[0], fnty), args[1:])
        return _nbt.int32(_nbt.int64, _nbt.voidptr, _nbt.float64), codegen

    @_intrinsic
    def _call_reset(typingctx, fn, rt, seed):
        from llvmlite import ir

        def codegen(context, builder, sig, args):
            fnty = _ll_fn(ir.VoidType(), [_cgutils.voidptr_t, ir.IntType(64)])
            builder.call(builder.inttoptr(args[0], fnty), args[1:])
            return context.get_dummy_value()
        return _nbt.none(_nbt.int64, _nbt.voidptr, _nbt.uint64), codegen

    @numba.njit(inline="always", cache=True)
    def _table_entry(api, k):
        return numba.carray(_as_ptr(api), (k + 1,), np.int64)[k]

    @numba.njit(inline="always", cache=True)
    def rt_push(api, rt, entity, time, kind, payload):
        """Push an external event into the runtime at address ``rt`` (a copy
        step's own runtime; ``api`` is ``rows.api``): ``seer_rt_push``."""
        return _call_event(_table_entry(api, _API_RT_PUSH), _as_ptr(rt), np.int32(entity), np.float64(time),
                          np.int32(kind), np.int64(payload))

    @numba.njit(inline="always", cache=True)
    def rt_step(api, rt, horizon):
        """Run the runtime at address ``rt`` to ``horizon`` (``seer_rt_step``): 0 or a SEER_E_* code."""
        return _call_step(_table_entry(api, _API_RT_STEP), _as_ptr(rt), np.float64(horizon))

    @numba.njit(inline="always", cache=True)
    def rt_reset(api, rt, seed):
        """Empty the runtime at address ``rt`` and restart its streams from ``seed`` (``seer_rt_reset``)."""
        _call_reset(_table_entry(api, _API_RT_RESET), _as_ptr(rt), np.uint64(seed))

    @numba.njit(inline="always", cache=True)
    def model_table(ctx, n):
        """The model's table (what :meth:`State.bind` built) as ``n`` int64 words."""
        words = numba.carray(ctx, (3,), np.int64)
        return numba.carray(_as_ptr(words[_CTX_MODEL]), (n,), np.int64)

else:  # pragma: no cover - exercised where numba is missing

    def emit(*args):
        _need_numba()

    uniform = random_u64 = model_table = rt_push = rt_step = rt_reset = emit


# ---- the model's arrays ---------------------------------------------------------------------------


class State:
    """The arrays a model's Numba handlers see, declared once.

    Args:
        **arrays: name -> Numba array type string (``"f8[:]"``, ``"i8[:, :]"``,
            ...): dtype and number of dimensions; shapes are read at run time.

    Raises:
        ImportError: Numba is not installed (``pip install 'seer[numba]'``).
        seer.InvalidArgumentError: a type string is not understood.
    """

    def __init__(self, **arrays: str):
        _need_numba()
        if not arrays:
            raise InvalidArgumentError("State() needs at least one array: State(name='f8[:]', ...)")
        self.fields: list[tuple[str, np.dtype, int]] = []
        for name, spec in arrays.items():
            m = _TYPE_RE.match(str(spec).replace(" ", ""))
            if not m or m.group("dtype") not in _DTYPES:
                raise InvalidArgumentError(
                    f"State({name}={spec!r}): expected a Numba array type such as 'f8[:]' or 'i8[:, :]' with a "
                    f"dtype in {sorted(_DTYPES)}")
            ndim = m.group("dims").count(":")
            self.fields.append((name, np.dtype(_DTYPES[m.group("dtype")]), ndim))
        self.names = tuple(f[0] for f in self.fields)
        self.words = sum(1 + nd for _, _, nd in self.fields)
        self.tuple_type = collections.namedtuple("SeerNumbaState", self.names)

    def bind(self, arrays: dict[str, np.ndarray]) -> "BoundState":
        """The table of ``arrays`` (by name: C-contiguous, the declared dtype
        and dimensions) for the model's ``native_model``.  Keep it: it holds
        the addresses of the arrays, which must stay where they are."""
        words = np.zeros(self.words, np.int64)
        k = 0
        keep = []
        for name, dtype, ndim in self.fields:
            arr = arrays.get(name)
            if not isinstance(arr, np.ndarray):
                raise InvalidArgumentError(f"State.bind: array {name!r} is missing: expected a numpy array")
            if arr.dtype != dtype or arr.ndim != ndim or not arr.flags.c_contiguous or not arr.flags.writeable:
                raise InvalidArgumentError(
                    f"State.bind: array {name!r} is {arr.dtype}{list(arr.shape)} "
                    f"(C-contiguous={arr.flags.c_contiguous}, writeable={arr.flags.writeable}): expected a "
                    f"writeable C-contiguous {dtype} array with {ndim} dimensions")
            words[k] = arr.ctypes.data
            words[k + 1:k + 1 + ndim] = arr.shape
            k += 1 + ndim
            keep.append(arr)
        return BoundState(words, keep)

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
        table address for :func:`rt_push`, :func:`rt_step`, :func:`rt_reset`).
        Return 0 or a SEER_E_* code (``SEER_E_UNSUPPORTED`` = -12 for an op
        left to Python).  Use it as ``NativeCopy(spec, step=fn, state=bound)``."""
        from seer.vector.native import NativeSpec

        if not isinstance(spec, NativeSpec):
            raise InvalidArgumentError(f"copy_step(spec=...) needs a seer.vector.native.NativeSpec, got {spec!r}")

        def wrap(f):
            return Handler(f, self, cache=cache, rows=spec)
        return wrap

    def _arrays_source(self, table: str) -> tuple[list[str], list[str]]:
        lines, args, k = [], [], 0
        for i, (name, dtype, ndim) in enumerate(self.fields):
            shape = ", ".join(f"{table}[{k + 1 + d}]" for d in range(ndim)) + ("," if ndim == 1 else "")
            lines.append(f"    a{i} = carray(_snb._as_ptr({table}[{k}]), ({shape}), np.{dtype.name})")
            args.append(f"a{i}")
            k += 1 + ndim
        return lines, args

    def _source(self, key: str, rows=None) -> str:
        head = [f"# Generated by seer.numba: the C entry point of {key}.",
                "import numpy as np", "from numba import carray", "import seer.numba as _snb",
                f"_user = _snb._REGISTRY[{key!r}]", f"_State = _snb._REGISTRY[{key + ':state'!r}]"]
        if rows is None:
            arrays, args = self._arrays_source("t")
            return "\n".join(head + ["_EVT = _snb._EVENT_DTYPE", "", "", "def entry(ctx, ev_ptr):",
                                      f"    t = _snb.model_table(ctx, {self.words})"] + arrays +
                             ["    ev = carray(ev_ptr, (1,), _EVT)[0]",
                              f"    return np.int32(_user(ctx, ev, _State({', '.join(args)})))", ""])
        arrays, args = self._arrays_source("t")
        n = rows.slots
        obs_shape = (n, *rows.observation.shape)
        act = rows.action
        act_shape = (n,) if not act.shape else (n, *act.shape)
        act_dtype = "int64" if not act.shape else np.dtype(act.dtype).name
        body = head + [f"_Rows = _snb._REGISTRY[{key + ':rows'!r}]", "", "",
                       "def entry(env_ptr, rows_ptr, op):",
                       f"    t = carray(env_ptr, ({self.words},), np.int64)"] + arrays + [
            "    r = carray(rows_ptr, (9,), np.int64)",
            f"    act = carray(_snb._as_ptr(r[1]), {act_shape!r}, np.{act_dtype})",
            f"    obs = carray(_snb._as_ptr(r[2]), {obs_shape!r}, np.{np.dtype(rows.observation.dtype).name})",
            f"    rew = carray(_snb._as_ptr(r[3]), ({n},), np.float64)"] + [
            f"    {f} = carray(_snb._as_ptr(r[{4 + i}]), ({n},), np.uint8)"
            for i, f in enumerate(("term", "trunc", "mask", "alive"))] + [
            "    ended = carray(_snb._as_ptr(r[8]), (1,), np.uint8)",
            "    rows = _Rows(r[0], act, obs, rew, term, trunc, mask, alive, ended)",
            f"    return np.int32(_user(rows, op, _State({', '.join(args)})))", ""]
        return "\n".join(body)


class BoundState:
    """A model's arrays, bound for its Numba handlers: its ``address`` goes
    into ``Model.native_model`` (``seer.Runtime`` takes the object itself)."""

    def __init__(self, words: np.ndarray, arrays: list):
        self.words = words
        self.arrays = arrays
        self.address = int(words.ctypes.data)

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
        self._cfunc = None

    @property
    def address(self) -> int:
        """The compiled C function's address (compiles on first access)."""
        return self.compile().address

    def compile(self):
        with _LOCK:
            if self._cfunc is None:
                self._cfunc = _compile(self)
        return self._cfunc

    def __call__(self, *args):
        raise TypeError(f"{self.__qualname__} is a SEER native handler: SEER's workers call it; use it as "
                        f"seer.Native({self.__name__}) in a seer.EventKind")

    def __repr__(self) -> str:
        return f"<seer.numba handler {self.__qualname__}>"


def copy_rows(api: int, act, obs, rew, term, trunc, mask, alive, ended):
    """The ``rows`` tuple a copy step gets, from numpy arrays: for calling
    the step's Numba code from Python on an env's own rows (its single-env
    ``step``), so both paths run the same code."""
    return _ROWS(int(api), act, obs, rew, term, trunc, mask, alive, ended)


def handler(state: State, *, cache: bool = True):
    """``@seer.numba.handler(STATE)``: the same as ``@STATE.handler``."""
    return state.handler(cache=cache)


_EVENT_DTYPE = None
_ROWS = collections.namedtuple("SeerCopyRows", _ROW_FIELDS)


def _cache_dir() -> pathlib.Path:
    from seer._io import ensure_private_dir, user_cache_dir

    return ensure_private_dir(user_cache_dir() / "numba")


def _compile(h: Handler):
    global _EVENT_DTYPE
    from seer.queue import EVENT_DTYPE

    _EVENT_DTYPE = EVENT_DTYPE
    fn = h.py_func
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError):
        src = repr(fn.__code__.co_code)
    ident = f"{fn.__module__}.{fn.__qualname__}"
    rows = h.rows
    layout = repr(h.state.fields) + ("" if rows is None else repr((rows.slots, rows.observation, rows.action)))
    digest = hashlib.sha256("\0".join([ident, src, layout, numba.__version__]).encode()).hexdigest()[:16]
    key = f"{re.sub(r'[^A-Za-z0-9_]', '_', ident)}_{digest}"
    try:
        jitted = numba.njit(cache=h.cache)(fn)
        _REGISTRY[key] = jitted
        _REGISTRY[key + ":state"] = h.state.tuple_type
        _REGISTRY[key + ":rows"] = _ROWS
        # The entry point lives in a file so that Numba can cache it.  Only a
        # file whose text is exactly what we generate is ever imported; it is
        # rewritten otherwise (which also invalidates Numba's cache of it).
        path = _cache_dir() / f"seer_numba_{key}.py"
        text = h.state._source(key, rows)
        if not path.is_file() or path.is_symlink() or path.read_text() != text:
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(text)
            os.replace(tmp, path)
        name = f"seer_numba_{key}"
        module = sys.modules.get(name)
        if module is None:  # registered by name: Numba's cache re-imports it to rebuild the entry point
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
        if rows is None:
            sig = numba.types.int32(numba.types.voidptr, numba.types.voidptr)
        else:
            sig = numba.types.int32(numba.types.voidptr, numba.types.voidptr, numba.types.int32)
        return numba.cfunc(sig, nopython=True, cache=h.cache)(module.entry)
    except numba.core.errors.NumbaError as exc:
        raise NumbaCompileError(f"seer.numba handler {fn.__qualname__!r} does not compile in nopython mode: "
                                f"{exc}") from exc
