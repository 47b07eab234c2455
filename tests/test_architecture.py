"""The plan in ARCHITECTURE.md, enforced: no import cycle among SEER's modules,
each layer imports only its own layer and those below, nothing in ``seer/``
reaches into an env's private modules, and every file says what it holds.

The import graph is read from the source with ``ast`` (nothing is imported),
counting every import statement, including those inside functions: a lazy
import that closes a circle is still a circle, only hidden until it runs.
"""

from __future__ import annotations

import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: Layer of each module, by the longest matching prefix (ARCHITECTURE.md).
#: 0 core, 1 policy, 2 envs / vector / wrap, 3 integrations / CLI / bench / the package façade.
LAYERS = {
    "seer.errors": 0, "seer.guard": 0, "seer.queue": 0, "seer.model": 0, "seer.capi": 0, "seer.runtime": 0,
    "seer.trace": 0, "seer.pool_stats": 0, "seer.context": 0, "seer.actions": 0, "seer.registry": 0,
    "seer.synthetic": 0, "seer.rng": 0,
    "seer._io": 0, "seer._text": 0, "seer._cdef": 0, "seer._checks": 0, "seer._host": 0, "seer._version": 0,
    "seer._build": 0, "seer._build_synth": 0, "seer._native_errors": 0,
    "seer._runtime_core": 0, "seer._debug": 0, "seer._runtime_blocks": 0, "seer._step_errors": 0, "seer._seer_c": 0, "seer._synth_c": 0,
    "seer._agent_dicts": 0, "seer._rowdicts": 0,
    "seer.stpa": 1,
    "seer.vector": 2, "seer.wrap": 2, "seer.envs": 2, "seer.numba": 2, "seer.native_env": 2,
    "seer.integrations": 3, "seer.cli": 3, "seer.bench": 3, "seer": 3,
}
LAYER_NAMES = {0: "core", 1: "policy (stpa)", 2: "envs/vector/wrap", 3: "integrations/CLI/bench"}
#: The compiled modules setup.py builds (present only once built).
EXTENSIONS = ("seer._seer_c", "seer._synth_c", "seer._rowdicts", "seer.envs.uav_swarm._uav_swarm_c", "seer.envs.wireless._wireless_c")


def module_files() -> dict[str, pathlib.Path | None]:
    """Module name -> file, for seer/ (SEER's envs in seer/envs/ included); None for a C extension."""
    out = {}
    for base, prefix in ((ROOT / "seer", "seer"),):
        for path in base.rglob("*.py"):
            rel = path.relative_to(base).with_suffix("")
            if any(part.startswith(".") or part in ("__pycache__", "build") for part in rel.parts):
                continue
            parts = [prefix, *rel.parts]
            if parts[-1] == "__init__":
                parts.pop()
            if parts[-1] == "__main__":
                continue
            out[".".join(parts)] = path
    for name in EXTENSIONS:  # leaves of the graph: C imports nothing of ours
        out.setdefault(name, None)
    return out


def _resolve(name: str, modules) -> str | None:
    # The longest prefix that is one of our modules (``seer.stpa.selector.x`` -> ``seer.stpa.selector``).
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: pathlib.Path, modules) -> set[str]:
    """The modules of ours that ``module`` imports anywhere in its file."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[:len(anchor) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            # ``from pkg import sub`` imports the submodule when there is one
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for t in targets:
            hit = _resolve(t, modules)
            if hit is not None and hit != module:
                out.add(hit)
    return out


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    modules = module_files()
    return {m: imports_of(m, p, modules) if p is not None else set() for m, p in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def layer(module: str) -> int:
    return LAYERS[_resolve(module, LAYERS)]


def test_the_graph_sees_the_package():
    modules = module_files()
    assert {"seer.runtime", "seer.stpa.selector", "seer.vector", "seer.envs.uav_swarm_v0", "seer.cli"} <= set(modules)
    # The checker itself finds a circle, lazy imports included.
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


#: Cycles whose removal is scheduled; each entry must still exist (delete it when its fix lands).
KNOWN_PENDING: set[tuple[str, ...]] = set()


def test_no_import_cycles(graph):
    found = {tuple(c) for c in cycles(graph)}
    new = sorted(found - KNOWN_PENDING)
    assert not new, "import cycles (each a set of modules that import each other): " + "; ".join(
        " <-> ".join(c) for c in new)
    fixed = sorted(KNOWN_PENDING - found)
    assert not fixed, f"these cycles are gone: remove them from KNOWN_PENDING: {fixed}"


def test_every_module_has_a_layer(graph):
    missing = sorted(m for m in graph if _resolve(m, LAYERS) is None)
    assert not missing, f"modules with no layer in ARCHITECTURE.md (add them to LAYERS here): {missing}"


def test_layers_import_only_their_own_layer_or_below(graph):
    bad = [f"{m} ({LAYER_NAMES[layer(m)]}) imports {t} ({LAYER_NAMES[layer(t)]})"
           for m, targets in sorted(graph.items()) for t in sorted(targets) if layer(t) > layer(m)]
    assert not bad, "imports against the layer rule:\n" + "\n".join(bad)


def test_core_and_policy_never_import_envs_vector_wrap_cli_or_bench(graph):
    upper = ("seer.stpa", "seer.vector", "seer.envs", "seer.wrap", "seer.cli", "seer.bench", "seer.integrations")
    bad = [f"{m} imports {t}" for m, targets in sorted(graph.items()) if layer(m) == 0
           for t in sorted(targets) if t.startswith(upper)]
    bad += [f"{m} imports {t}" for m, targets in sorted(graph.items()) if layer(m) == 1
            for t in sorted(targets) if t.startswith(upper[1:])]
    assert not bad, "\n".join(bad)


def test_nothing_in_seer_imports_an_env_or_the_package_facade(graph):
    modules = module_files()
    in_seer = {m for m, p in modules.items() if p is not None and ROOT / "seer" in p.parents}
    envs = ROOT / "seer" / "envs"
    bad = [f"{m} imports {t}" for m in sorted(in_seer) for t in sorted(graph[m])
           if (t.startswith("seer.envs") and envs not in modules[m].parents) or (t == "seer" and m != "seer")]
    assert not bad, ("seer/ finds envs through seer.registry only, and never imports its own façade "
                     "(seer/__init__.py); import the module that defines the name:\n" + "\n".join(bad))


def test_no_part_of_an_env_is_named_from_seer():
    # Textual too: a string passed to importlib would escape the graph above.  Outside seer/envs/ only an env's
    # public, versioned module (seer.envs.uav_swarm_v0) may be named, never its parts (seer.envs.uav_swarm.model).
    envs = ROOT / "seer" / "envs"
    public = re.compile(r"seer\.envs\.[a-z][a-z0-9_]*_v[0-9]+\b")
    bad = []
    for path in (ROOT / "seer").rglob("*.py"):
        if envs in path.parents:
            continue
        text = public.sub("", path.read_text(encoding="utf-8"))
        hits = sorted(set(re.findall(r"seer\.envs\.[A-Za-z_][\w.]*", text)))
        if hits:
            bad.append(f"{path.relative_to(ROOT)}: {hits}")
    assert not bad, f"files under seer/ that name a part of one of seer.envs' envs: {bad}"


def test_every_file_opens_with_a_line_that_says_what_it_holds():
    bad = []
    for path in sorted((ROOT / "seer").rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        doc = ast.get_docstring(tree)
        if not doc or len(doc.split("\n", 1)[0].strip()) < 10:
            bad.append(str(path.relative_to(ROOT)))
    assert not bad, f"files without an opening docstring that says what they hold: {bad}"


#: Exceptions that never leave the module raising them (ARCHITECTURE.md): signals inside one backend or cache.
INTERNAL_SIGNALS = {"seer/vector/_runner.py": {"ActionsRejected"}, "seer/vector/process/worker.py": {"ForgedFlag"},
                    "seer/numba/_cache.py": {"Unkeyable"}, "seer/vector/ray/restart.py": {"_ShardDied"}}


def test_errors_and_warnings_are_defined_in_seer_errors():
    def is_exception(node, known):
        names = {b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "" for b in node.bases}
        return any(n in known or n.endswith(("Error", "Exception", "Warning")) for n in names)

    bad, found = [], {}
    for path in sorted((ROOT / "seer").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        if rel == "seer/errors.py" or "__pycache__" in path.parts:
            continue
        known: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and is_exception(node, known):
                known.add(node.name)
                found.setdefault(rel, set()).add(node.name)
                if node.name not in INTERNAL_SIGNALS.get(rel, ()):
                    bad.append(f"{rel}: {node.name}")
    assert not bad, f"exception or warning classes defined outside seer/errors.py (define them there): {bad}"
    gone = {rel: names - found.get(rel, set()) for rel, names in INTERNAL_SIGNALS.items()}
    assert not any(gone.values()), f"INTERNAL_SIGNALS names classes that are gone (remove them): {gone}"
