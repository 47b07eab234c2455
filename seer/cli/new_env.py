"""``seer new-env``: write a new plug-in env package (C or Numba engine) that installs and passes its own tests."""

from __future__ import annotations

import importlib.util
import keyword
import os
import pathlib
import re
import sys
from importlib import resources

from seer._version import DISTRIBUTION

HELP = "write a new plug-in env package (C or Numba engine) that passes its own tests"
DESCRIPTION = ("Write the folder NAME/: a plug-in package with a seer.NativeEnv env (model, handlers and "
               "copy step in C or Numba), its seer.envs entry point, tests (PettingZoo's API tests, the same "
               "seed at every pool size and seer.vector backend) and a README. Then: "
               "pip install --no-build-isolation ./NAME && cd NAME && pytest")

ENGINES = ("c", "numba")
#: template -> path in the package ({name}, {env_id} filled in); common_* go into every package
FILES = {
    "common": {"common_init.py.tmpl": "src/{name}/__init__.py", "common_test.py.tmpl": "tests/test_{env_id}.py",
               "common_README.md.tmpl": "README.md"},
    "c": {"c_pyproject.toml.tmpl": "pyproject.toml", "c_setup.py.tmpl": "setup.py",
          "c_build.py.tmpl": "src/{name}/_build.py", "c_env.py.tmpl": "src/{name}/{env_id}.py",
          "c_header.h.tmpl": "csrc/{name}.h", "c_source.c.tmpl": "csrc/{name}.c"},
    "numba": {"numba_pyproject.toml.tmpl": "pyproject.toml", "numba_kernels.py.tmpl": "src/{name}/_kernels.py",
              "numba_env.py.tmpl": "src/{name}/{env_id}.py"},
}
_FILE_ROLES = {
    "c": [("csrc/{name}.h`, `csrc/{name}.c", "the model's struct, the handlers and the whole-copy step, "
                                             "using only `<seer/seer.h>`"),
          ("src/{name}/_build.py", "the cffi build against `seer.get_include()` (run by `setup.py`)")],
    "numba": [("src/{name}/_kernels.py", "the handlers, the reset and the whole-copy step in Python syntax, "
                                     "compiled by Numba (`seer.numba`); compiled once per machine, then cached")],
}
_ENGINE_NOTES = {"c": "its C module compiles against `seer.get_include()`; with build isolation pip installs SEER "
                      "into the build environment from its index instead, or from a wheel folder given with "
                      "`--find-links`",
                 "numba": "a pure-Python package: it also builds with isolation, once SEER is installed"}
_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")
_RESERVED = {"seer", "test", "tests", "numba", "numpy", "gymnasium", "pettingzoo", "cffi", "setuptools"}


def check_name(name: str) -> str | None:
    """Why ``name`` cannot name the package, or None when it can."""
    if not _NAME_RE.match(name):
        return ("expected a Python package name: lowercase letters, digits and underscores, starting with a "
                "letter (e.g. epidemic or sir_v0)")
    if keyword.iskeyword(name) or name in _RESERVED:
        return "it is a Python keyword or the name of a package this one imports"
    if name in sys.stdlib_module_names:
        return "it is a module of Python's standard library, which the package would shadow"
    if name.endswith("_"):
        return "expected a name that does not end in an underscore"
    return None


def names(name: str) -> dict[str, str]:
    """What the templates fill in for package ``name``."""
    env_id = name if re.search(r"_v\d+$", name) else f"{name}_v0"
    cls = "".join(part.capitalize() for part in re.sub(r"_v\d+$", "", name).split("_") if part) + "Env"
    return {"name": name, "NAME": name.upper(), "env_id": env_id, "Class": cls,
            "dist": name.replace("_", "-"), "seer_dist": DISTRIBUTION}


def render(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    return text


def write_package(target: pathlib.Path, name: str, engine: str) -> list[pathlib.Path]:
    """Write the package of ``name`` into the new folder ``target``; returns the files written."""
    values = names(name)
    rows = [f"| `{path.format(name=name)}` | {what} |" for path, what in _FILE_ROLES[engine]]
    values = {**values, "engine": engine, "engine_note": _ENGINE_NOTES[engine], "files_table": "\n".join(rows)}
    templates = resources.files("seer") / "templates" / "new_env"
    target.mkdir(parents=True)  # exist_ok=False: the caller checked, and a race loses nothing
    written = []
    for tmpl, rel in {**FILES["common"], **FILES[engine]}.items():
        path = target / rel.format(name=name, env_id=values["env_id"])
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render((templates / tmpl).read_text(encoding="utf-8"), values), encoding="utf-8")
        written.append(path)
    return written


def cmd_new_env(args) -> int:
    err = args.parser.error  # exits with status 2
    why = check_name(args.name)
    if why is not None:
        err(f"NAME {args.name!r} is invalid: {why}")
    target = pathlib.Path(args.directory) / args.name
    if os.path.lexists(target):
        err(f"{target} already exists: seer new-env writes a new folder and never overwrites one; "
            f"choose another NAME or --directory")
    if importlib.util.find_spec(args.name) is not None:
        err(f"NAME {args.name!r} is taken: a module of that name is importable here already "
            f"({importlib.util.find_spec(args.name).origin}); choose another NAME")
    env_id = names(args.name)["env_id"]
    from seer import registry

    if env_id in registry.available():
        err(f"an env {env_id!r} is registered already (seer info lists it): choose another NAME")
    written = write_package(target, args.name, args.engine)
    print(f"wrote {target}/ ({len(written)} files, engine {args.engine}): the env {env_id}")
    print("next:")
    print(f"  pip install --no-build-isolation {target if target.is_absolute() else './' + str(target)}")
    print(f"  cd {target} && pytest")
    print(f"  seer trace {env_id} --steps 20")
    sys.stdout.flush()
    return 0


def add_new_env_parser(sub) -> None:
    p = sub.add_parser("new-env", help=HELP, description=DESCRIPTION)
    p.add_argument("name", metavar="NAME", help="the package's name (a Python package name, e.g. epidemic); "
                                                "its env is NAME_v0 unless NAME ends in _vN")
    p.add_argument("--engine", choices=ENGINES, default="c",
                   help="c: handlers and copy step in C (cffi); numba: in Python syntax, compiled by Numba "
                        "(default c)")
    p.add_argument("--directory", "-C", default=".", metavar="DIR",
                   help="where to write the folder NAME/ (default: the current directory)")
    p.set_defaults(func=cmd_new_env, parser=p)
