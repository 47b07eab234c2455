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

typedef struct counter { int64_t *ticks; double *draws; int32_t n; double period; int32_t bad_target; int32_t forge; } counter;

int count_tick(seer_ctx *ctx, const seer_event *ev) {
    counter *m = ctx->model;
    if (m->forge && ev->entity == 5 && ev->time > 0.25) {
        /* act as the next entity, which another worker may be running */
        ctx->entity = (ev->entity + 1) % m->n;
        if (m->forge == 2) {
            m->draws[ev->entity] += seer_uniform(ctx);
            return 0;
        }
        int rc = seer_emit(ctx, ctx->entity, ev->time + 1.0, 0, 0);
        m->bad_target = rc; /* what the emit said, for the test */
        return rc;
    }
    m->ticks[ev->entity]++;
    m->draws[ev->entity] += seer_uniform(ctx);
    int32_t to = m->bad_target >= 0 ? m->bad_target : ev->entity;
    double when = m->bad_target >= 0 ? ev->time : ev->time + m->period;   /* too early for another entity */
    return seer_emit(ctx, to, when, 0, 0);
}
"""
PLUGIN_CDEF = """
typedef struct counter { int64_t *ticks; double *draws; int32_t n; double period; int32_t bad_target; int32_t forge; } counter;
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

    def __init__(self, handler_ref, ffi, n=16, bad_target=-1, forge=0):
        self.num_entities = n
        self.kinds = [seer.EventKind("tick", seer.Native(handler_ref))]
        self.state = {"ticks": np.zeros(n, np.int64), "draws": np.zeros(n)}
        self.shared_state = ()
        c = ffi.new("counter *")
        c.ticks = ffi.cast("int64_t *", ffi.from_buffer(self.state["ticks"]))
        c.draws = ffi.cast("double *", ffi.from_buffer(self.state["draws"]))
        c.n, c.period, c.bad_target, c.forge = n, 0.1, bad_target, forge
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


@pytest.mark.parametrize("workers", [1, 2])
def test_a_native_handler_acting_as_another_entity_gets_an_error_code(plugin_module, workers):
    # ctx->entity rewritten to an entity the worker does not run: the emit
    # gets SEER_E_ENTITY (and nothing is sent in that entity's name), and
    # the step fails naming the misuse, for every pool size alike.
    model = CounterModel(_refs(plugin_module)["cffi pointer"], plugin_module.ffi, forge=1)
    with seer.Runtime(model, workers=workers) as rt:
        with pytest.raises(seer.MisuseError, match="as entity 6 .*which its worker is not running"):
            rt.step(1.0)
        assert model.native_model.bad_target == seer._seer_c.lib.SEER_E_ENTITY
        rt.reset(0)
        model.native_model.forge = 0
        model.native_model.bad_target = -1
        rt.step(1.05)
        assert model.state["ticks"].tolist() == [11] * 16


@pytest.mark.parametrize("workers", [1, 2])
def test_a_native_handler_drawing_as_another_entity_fails_the_step(plugin_module, workers):
    model = CounterModel(_refs(plugin_module)["cffi pointer"], plugin_module.ffi, forge=2)
    with seer.Runtime(model, workers=workers) as rt:
        with pytest.raises(seer.MisuseError, match="drew a random number as entity 6"):
            rt.step(1.0)


def test_native_refuses_an_address_that_is_not_code(plugin_module):
    # Each of these used to be accepted and crash the process at the first event.
    arr = np.zeros(4)
    for bad in (1, 4096, id(arr), arr.ctypes.data, int(plugin_module.ffi.cast("uintptr_t", plugin_module.ffi.new("int *")))):
        with pytest.raises(seer.InvalidArgumentError, match="not the address of code"):
            seer.Native(bad)
    # code stays accepted: a cffi function, its address as an int, a ctypes function
    fn = plugin_module.ffi.addressof(plugin_module.lib, "count_tick")
    assert seer.Native(int(plugin_module.ffi.cast("uintptr_t", fn))).address == seer.Native(fn).address
    libc = ctypes.CDLL(None)
    assert seer.Native(libc.abs).address > 0


def test_a_native_model_pointer_to_no_memory_is_refused(plugin_module):
    model = CounterModel(_refs(plugin_module)["cffi pointer"], plugin_module.ffi)
    model.native_model = 8  # what the handlers would read as ctx->model
    with pytest.raises(seer.InvalidArgumentError, match="model.native_model=0x8 points at no memory"):
        seer.Runtime(model)
