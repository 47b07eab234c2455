"""SEER's public C API: a module compiled apart from SEER, against
seer.get_include() only, runs as native handlers (through the function
table), from every kind of function reference seer.Native takes."""

import ctypes
import pathlib
import types

import numpy as np
import pytest

import seer
import seer.capi

PLUGIN_C = r"""
#include <seer/seer.h>

typedef struct counter { int64_t *ticks; double *draws; int32_t n; double period; int32_t bad_target; } counter;

int count_tick(seer_ctx *ctx, const seer_event *ev) {
    counter *m = ctx->model;
    m->ticks[ev->entity]++;
    m->draws[ev->entity] += seer_uniform(ctx);
    int32_t to = m->bad_target >= 0 ? m->bad_target : ev->entity;
    double when = m->bad_target >= 0 ? ev->time : ev->time + m->period;   /* too early for another entity */
    return seer_emit(ctx, to, when, 0, 0);
}
"""
PLUGIN_CDEF = """
typedef struct counter { int64_t *ticks; double *draws; int32_t n; double period; int32_t bad_target; } counter;
int count_tick(seer_ctx *ctx, const seer_event *ev);
"""


@pytest.fixture(scope="module")
def plugin_module(tmp_path_factory):
    """The plug-in, built with cffi exactly as an outside package would."""
    cffi = pytest.importorskip("cffi")
    tmp = tmp_path_factory.mktemp("plugin")
    (tmp / "counter.c").write_text(PLUGIN_C)
    builder = cffi.FFI()
    builder.cdef(seer.capi.cdef() + PLUGIN_CDEF)
    builder.set_source("seer_test_counter", '#include <seer/seer.h>\n' + PLUGIN_CDEF,
                       sources=[str(tmp / "counter.c")], include_dirs=[seer.get_include()],
                       extra_compile_args=["-std=c11"])
    so = builder.compile(tmpdir=str(tmp))
    import importlib.util

    spec = importlib.util.spec_from_file_location("seer_test_counter", so)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.__file__ = so
    return module


class CounterModel(seer.Model):
    lookahead = 0.5

    def __init__(self, handler_ref, ffi, n=16, bad_target=-1):
        self.num_entities = n
        self.kinds = [seer.EventKind("tick", seer.Native(handler_ref))]
        self.state = {"ticks": np.zeros(n, np.int64), "draws": np.zeros(n)}
        self.shared_state = ()
        c = ffi.new("counter *")
        c.ticks = ffi.cast("int64_t *", ffi.from_buffer(self.state["ticks"]))
        c.draws = ffi.cast("double *", ffi.from_buffer(self.state["draws"]))
        c.n, c.period, c.bad_target = n, 0.1, bad_target
        self.native_model = c

    def reset(self, runtime, seed):
        self.state["ticks"][:] = 0
        self.state["draws"][:] = 0
        runtime.schedule(np.arange(self.num_entities), np.zeros(self.num_entities), np.zeros(self.num_entities, np.int32))


def test_headers_are_where_get_include_says():
    inc = pathlib.Path(seer.get_include())
    assert (inc / "seer" / "seer.h").is_file() and (inc / "seer" / "seer_types.h").is_file()
    assert f"#define SEER_API_VERSION {seer.capi.api_version()}" in (inc / "seer" / "seer_types.h").read_text()


def _refs(module):
    ffi, lib = module.ffi, module.lib
    ptr = ffi.addressof(lib, "count_tick")
    address = int(ffi.cast("uintptr_t", ptr))
    return {
        "cffi pointer": ptr,
        "integer address": address,
        "ctypes function": ctypes.CDLL(module.__file__).count_tick,
        "plugin handler": seer.capi.Plugin(module).handler("count_tick"),
    }


@pytest.mark.parametrize("kind", ["cffi pointer", "integer address", "ctypes function", "plugin handler"])
def test_a_separately_built_handler_runs_and_is_deterministic(plugin_module, kind):
    ref = _refs(plugin_module)[kind]
    results = []
    for workers in (1, 2, 4):
        model = CounterModel(ref, plugin_module.ffi)
        with seer.Runtime(model, workers=workers, seed=7) as rt:
            rt.step(1.05)  # ticks at 0, 0.1, ..., 1.0
        results.append({k: v.copy() for k, v in model.state.items()})
    assert results[0]["ticks"].tolist() == [11] * 16
    for r in results[1:]:
        assert r["draws"].tobytes() == results[0]["draws"].tobytes()
    assert 0 < results[0]["draws"].mean() < 11


def test_errors_through_the_api_table_name_the_entity(plugin_module):
    model = CounterModel(_refs(plugin_module)["cffi pointer"], plugin_module.ffi, bad_target=3)
    with seer.Runtime(model, workers=2) as rt:
        with pytest.raises(seer.CausalityError, match="sooner than the lookahead"):
            rt.step(1.0)


def test_plugin_version_is_checked_before_any_code_runs(plugin_module):
    assert seer.capi.Plugin(plugin_module).api_version == seer.capi.api_version()
    old = types.SimpleNamespace(__name__="old_plugin", ffi=plugin_module.ffi,
                                lib=types.SimpleNamespace(seer_plugin_api_version=lambda: 0))
    with pytest.raises(seer.capi.PluginVersionError, match="old_plugin was built against SEER C API version 0"):
        seer.capi.Plugin(old)
    with pytest.raises(seer.capi.PluginVersionError, match="does not provide seer_plugin_api_version"):
        seer.capi.Plugin(types.SimpleNamespace(__name__="nothing", lib=types.SimpleNamespace()))
    with pytest.raises(seer.InvalidArgumentError, match="has no C function 'nope'"):
        seer.capi.Plugin(plugin_module).handler("nope")


@pytest.mark.parametrize("bad, pattern", [
    (0, "NULL"),
    (lambda ctx, ev: 0, "not a C function"),
    ("no_such_handler", "not compiled into seer._seer_c"),
    (True, "not a C function"),
])
def test_native_refuses_what_is_not_a_function(bad, pattern):
    with pytest.raises(seer.InvalidArgumentError, match=pattern):
        seer.Native(bad)


def test_native_refuses_a_data_pointer(plugin_module):
    with pytest.raises(seer.InvalidArgumentError, match="not a function pointer"):
        seer.Native(plugin_module.ffi.new("int *"))
