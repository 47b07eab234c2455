"""seer.numba's compiled building blocks: raw memory, the C API's function table, and the guard around a handler.

Everything here is cacheable: no process address is frozen into the code
(the API table is read through ``ctx->api`` or ``rows.api`` at run time).
The guard calls the user's compiled code with Numba's own calling
convention, so an exception raised in nopython mode (``raise``, a division
by zero, a bounds check) comes back as a status instead of being printed
and dropped: the guard hands it to Python (:func:`seer.numba._raised`,
with the GIL, only on failure) and fails the step with ``SEER_E_HANDLER``.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types as _nbt
from numba.core import cgutils as _cgutils
from numba.extending import intrinsic as _intrinsic

#: offsets in seer_ctx and seer_api (csrc/include/seer/seer_types.h)
CTX_API, CTX_RT, CTX_MODEL = 0, 1, 2   # int64 words
API_EMIT, API_RANDOM_U64, API_UNIFORM = 1, 2, 3
API_RT_PUSH, API_RT_STEP, API_RT_RESET = 5, 6, 7
E_HANDLER = -8  # SEER_E_HANDLER: what a raising handler returns


@_intrinsic
def _as_ptr(typingctx, address):
    """int64 -> void *."""
    def codegen(context, builder, sig, args):
        return builder.inttoptr(args[0], _cgutils.voidptr_t)
    return _nbt.voidptr(_nbt.int64), codegen


def _ll_fn(ret, args):
    return ir.FunctionType(ret, args).as_pointer()


@_intrinsic
def _call_event(typingctx, fn, ctx, target, time, kind, payload):
    """(*fn)(ctx, target, time, kind, payload): the table's emit (ctx: a handler's) and rt_push (ctx: a runtime)."""
    def codegen(context, builder, sig, args):
        fnty = _ll_fn(ir.IntType(32), [_cgutils.voidptr_t, ir.IntType(32), ir.DoubleType(), ir.IntType(32),
                                       ir.IntType(64)])
        return builder.call(builder.inttoptr(args[0], fnty), args[1:])
    return _nbt.int32(_nbt.int64, _nbt.voidptr, _nbt.int32, _nbt.float64, _nbt.int32, _nbt.int64), codegen


@_intrinsic
def _call_u64(typingctx, fn, ctx):
    def codegen(context, builder, sig, args):
        return builder.call(builder.inttoptr(args[0], _ll_fn(ir.IntType(64), [_cgutils.voidptr_t])), args[1:])
    return _nbt.uint64(_nbt.int64, _nbt.voidptr), codegen


@_intrinsic
def _call_f64(typingctx, fn, ctx):
    def codegen(context, builder, sig, args):
        return builder.call(builder.inttoptr(args[0], _ll_fn(ir.DoubleType(), [_cgutils.voidptr_t])), args[1:])
    return _nbt.float64(_nbt.int64, _nbt.voidptr), codegen


@_intrinsic
def _call_step(typingctx, fn, rt, horizon):
    def codegen(context, builder, sig, args):
        fnty = _ll_fn(ir.IntType(32), [_cgutils.voidptr_t, ir.DoubleType()])
        return builder.call(builder.inttoptr(args[0], fnty), args[1:])
    return _nbt.int32(_nbt.int64, _nbt.voidptr, _nbt.float64), codegen


@_intrinsic
def _call_reset(typingctx, fn, rt, seed):
    def codegen(context, builder, sig, args):
        fnty = _ll_fn(ir.VoidType(), [_cgutils.voidptr_t, ir.IntType(64)])
        builder.call(builder.inttoptr(args[0], fnty), args[1:])
        return context.get_dummy_value()
    return _nbt.none(_nbt.int64, _nbt.voidptr, _nbt.uint64), codegen


def _report(context, builder, func: str, objs) -> None:
    """With the GIL: ``seer.numba.<func>(*objs(pyapi))``, any error it raises cleared."""
    pyapi = context.get_python_api(builder)
    gil = pyapi.gil_ensure()
    args = objs(pyapi)
    mod = pyapi.import_module(context.insert_const_string(builder.module, "seer.numba"))
    with builder.if_else(_cgutils.is_not_null(builder, mod)) as (have, lack):
        with have:
            fn = pyapi.object_getattr_string(mod, func)
            with builder.if_then(_cgutils.is_not_null(builder, fn)):
                res = pyapi.call_function_objargs(fn, args)
                pyapi.decref(res)
                pyapi.decref(fn)
            pyapi.decref(mod)
        with lack:
            pass
    for a in args:
        pyapi.decref(a)
    pyapi.err_clear()  # a failing report must not leave an error on the worker's thread state
    pyapi.gil_release(gil)


def _cold(builder, name: str, args: list) -> ir.Function:
    """A function of this module, out of the hot path (noinline, cold): where failures are reported."""
    mod = builder.module
    fn = mod.globals.get(name)
    if fn is None:
        fn = ir.Function(mod, ir.FunctionType(ir.VoidType(), args), name=name)
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        fn.attributes.add("cold")
    return fn


def _raised_fn(context, builder, excinfo_ty) -> ir.Function:
    i32, i64 = ir.IntType(32), ir.IntType(64)
    fn = _cold(builder, "seer_numba_raised", [i32, excinfo_ty, i64, i64, i32])
    if fn.is_declaration:
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        code, excinfo, key, where, event = fn.args
        status = context.call_conv._get_return_status(b, code, excinfo)
        pyapi = context.get_python_api(b)
        gil = pyapi.gil_ensure()
        context.call_conv.raise_error(b, pyapi, status)
        slots = [_cgutils.alloca_once(b, pyapi.pyobj) for _ in range(3)]
        pyapi.err_fetch(*slots)
        pyapi.gil_release(gil)
        exc = [b.load(s) for s in slots]
        _report(context, b, "_raised", lambda api: [api.long_from_longlong(key), api.long_from_longlong(where),
                                                     api.long_from_longlong(b.sext(event, i64)), *exc])
        b.ret_void()
    return fn


def _returned_fn(context, builder) -> ir.Function:
    i32, i64 = ir.IntType(32), ir.IntType(64)
    fn = _cold(builder, "seer_numba_returned", [i64, i64, i32])
    if fn.is_declaration:
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        key, where, rc = fn.args
        _report(context, b, "_returned", lambda api: [api.long_from_longlong(key), api.long_from_longlong(where),
                                                       api.long_from_longlong(b.sext(rc, i64))])
        b.ret_void()
    return fn


def _guard_codegen(fn, inner_sig, key_of, where_of, call_args, event: bool):
    def codegen(context, builder, sig, args):
        cres = fn.dispatcher.overloads[inner_sig.args]
        context.active_code_library.add_linking_library(cres.library)
        status, res = context.call_internal_no_propagate(builder, cres.fndesc, inner_sig, call_args(args))
        res = context.cast(builder, res, inner_sig.return_type, _nbt.int32)
        rc = _cgutils.alloca_once_value(builder, res)
        with builder.if_else(status.is_error, likely=False) as (failed, ran):
            with failed:
                excinfo = status.excinfoptr
                report = _raised_fn(context, builder, excinfo.type)
                builder.call(report, [status.code, excinfo, key_of(builder, args), where_of(builder, args),
                                      ir.Constant(ir.IntType(32), int(event))])
                builder.store(ir.Constant(ir.IntType(32), E_HANDLER), rc)
            with ran:
                if event:
                    with builder.if_then(builder.icmp_signed("!=", res, ir.Constant(ir.IntType(32), 0)),
                                         likely=False):
                        builder.call(_returned_fn(context, builder),
                                     [key_of(builder, args), where_of(builder, args), res])
        return builder.load(rc)
    return codegen


def _inner_sig(typingctx, fn, args):
    from numba.core.errors import TypingError

    inner = typingctx.resolve_function_type(fn, args, {})
    if not isinstance(inner.return_type, (_nbt.Integer, _nbt.Boolean)):
        raise TypingError(f"a seer.numba handler or copy step returns an integer status (0, or a SEER_E_* "
                          f"code), but this one returns {inner.return_type}")
    return inner


def _ctx_rt(builder, args):
    words = builder.bitcast(args[1], ir.IntType(64).as_pointer())
    return builder.load(builder.gep(words, [ir.Constant(ir.IntType(32), CTX_RT)]))


@_intrinsic
def _guard_event(typingctx, fn, ctx, ev_ptr, ev, s):
    """``fn(ctx, ev, s)`` (a jitted handler) with its exceptions caught and
    reported, for the runtime of ``ctx`` and the event at ``ev_ptr``."""
    if not isinstance(fn, _nbt.Dispatcher):
        return None
    inner = _inner_sig(typingctx, fn, (ctx, ev, s))
    return _nbt.int32(fn, ctx, ev_ptr, ev, s), _guard_codegen(
        fn, inner, _ctx_rt, lambda b, a: b.ptrtoint(a[2], ir.IntType(64)), lambda a: [a[1], a[3], a[4]], True)


@_intrinsic
def _guard_copy(typingctx, fn, env_ptr, rows, op, s):
    """``fn(rows, op, s)`` (a copy step) with its exceptions caught and reported for the state at ``env_ptr``."""
    if not isinstance(fn, _nbt.Dispatcher):
        return None
    inner = _inner_sig(typingctx, fn, (rows, op, s))
    return _nbt.int32(fn, env_ptr, rows, op, s), _guard_codegen(
        fn, inner, lambda b, a: b.ptrtoint(a[1], ir.IntType(64)), lambda b, a: b.sext(a[3], ir.IntType(64)),
        lambda a: [a[2], a[3], a[4]], False)


@numba.njit(inline="always", cache=True)
def _api_entry(ctx, k):
    words = numba.carray(ctx, (3,), np.int64)
    table = numba.carray(_as_ptr(words[CTX_API]), (k + 1,), np.int64)
    return table[k]


@numba.njit(inline="always", cache=True)
def emit(ctx, target, time, kind, payload):
    """Send an event from the handled entity (``seer_emit``): 0 or a SEER_E_* code."""
    return _call_event(_api_entry(ctx, API_EMIT), ctx, np.int32(target), np.float64(time), np.int32(kind),
                       np.int64(payload))


@numba.njit(inline="always", cache=True)
def uniform(ctx):
    """A uniform [0, 1) draw from the handled entity's counter-based stream (``seer_uniform``)."""
    return _call_f64(_api_entry(ctx, API_UNIFORM), ctx)


@numba.njit(inline="always", cache=True)
def random_u64(ctx):
    """64 random bits from the handled entity's counter-based stream (``seer_random_u64``)."""
    return _call_u64(_api_entry(ctx, API_RANDOM_U64), ctx)


@numba.njit(inline="always", cache=True)
def _table_entry(api, k):
    return numba.carray(_as_ptr(api), (k + 1,), np.int64)[k]


@numba.njit(inline="always", cache=True)
def rt_push(api, rt, entity, time, kind, payload):
    """Push an external event into the runtime at address ``rt`` (a copy
    step's own runtime; ``api`` is ``rows.api``): ``seer_rt_push``."""
    return _call_event(_table_entry(api, API_RT_PUSH), _as_ptr(rt), np.int32(entity), np.float64(time),
                       np.int32(kind), np.int64(payload))


@numba.njit(inline="always", cache=True)
def rt_step(api, rt, horizon):
    """Run the runtime at address ``rt`` to ``horizon`` (``seer_rt_step``): 0 or a SEER_E_* code."""
    return _call_step(_table_entry(api, API_RT_STEP), _as_ptr(rt), np.float64(horizon))


@numba.njit(inline="always", cache=True)
def rt_reset(api, rt, seed):
    """Empty the runtime at address ``rt`` and restart its streams from ``seed`` (``seer_rt_reset``)."""
    _call_reset(_table_entry(api, API_RT_RESET), _as_ptr(rt), np.uint64(seed))


@numba.njit(inline="always", cache=True)
def model_table(ctx, n):
    """The model's table (what :meth:`State.bind` built) as ``n`` int64 words."""
    words = numba.carray(ctx, (3,), np.int64)
    return numba.carray(_as_ptr(words[CTX_MODEL]), (n,), np.int64)


def _distrust_untrusted_cache() -> None:
    # These are cached too (cache=True above): not from a folder others can write to.
    from numba.core.caching import NullCache

    from seer.numba._cache import numba_cache_ok

    if not numba_cache_ok():
        for disp in (_api_entry, emit, uniform, random_u64, _table_entry, rt_push, rt_step, rt_reset, model_table):
            disp._cache = NullCache()


_distrust_untrusted_cache()
