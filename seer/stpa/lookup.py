"""Where STPA models live: the lookup order of the model ``workers="auto"`` uses, and its cache.

Lookup order: the path in ``$SEER_STPA_MODEL``; the model ``seer tune``
wrote in the cache directory (``$SEER_CACHE_DIR``, else
``platformdirs.user_cache_dir("seer")``, which honours
``$XDG_CACHE_HOME``); the default model shipped in ``seer/data/``.  A file
that exists but cannot be used is skipped with a warning
(:class:`~seer.errors.StpaFallbackWarning`) naming why, except the
shipped model, which is refitted from the shipped dataset when it cannot be
used (this needs scikit-learn) and cached in the cache directory; when none
can be used the selector's documented heuristic decides, with a warning.
Models load lazily, only when ``"auto"`` is used.  Cache directories SEER
creates have mode 0700; model files are written atomically.

Trust: nothing is read from a cache directory that another user owns or that
group or others can write to, nor from a ``$SEER_STPA_MODEL`` file another
user could have written (:class:`~seer.errors.UntrustedPathError`): such a
model is skipped with one :class:`~seer.errors.StpaFallbackWarning` per
process and the next candidate (in the end the shipped model) decides, and
the shipped model's refit is then kept in memory rather than cached there.
"""

from __future__ import annotations

import json
import os
import threading
import warnings
from pathlib import Path

from seer._version import __version__
from seer.errors import IncompatibleModelError, StpaFallbackWarning, UntrustedPathError
from seer.stpa.model import (
    MODEL_FILENAME,
    SHIPPED_DATASET_FILENAME,
    StpaModel,
    load_model,
    save_model,
)

def cache_dir() -> Path:
    """Per-user cache directory: ``$SEER_CACHE_DIR``, else
    ``platformdirs.user_cache_dir("seer")`` (``$XDG_CACHE_HOME/seer`` on Linux).
    Not created here; what SEER creates there has mode 0700."""
    from seer._io import user_cache_dir

    return user_cache_dir()


def shipped_model_path() -> Path:
    return Path(__file__).resolve().parent.parent / "data" / MODEL_FILENAME


def shipped_dataset_path() -> Path:
    return Path(__file__).resolve().parent.parent / "data" / SHIPPED_DATASET_FILENAME


def model_search_path() -> list[tuple[str, Path]]:
    """(label, path) of the model files ``"auto"`` tries, in order."""
    out = []
    env = os.environ.get("SEER_STPA_MODEL")
    if env:
        out.append(("$SEER_STPA_MODEL", Path(env)))
    out.append(("tuned (cache)", cache_dir() / MODEL_FILENAME))
    out.append(("shipped default", shipped_model_path()))
    return out


_lock = threading.RLock()
_loaded: dict[tuple[str, float, int], StpaModel | str] = {}
_warned: set[str] = set()


def trust_problem(label: str, path: Path) -> str | None:
    """Why the model candidate ``path`` must not be loaded (another user could
    have written it), or None.  The shipped model is trusted as installed."""
    from seer._io import check_trusted_dir, check_trusted_file

    try:
        if label == "tuned (cache)":
            check_trusted_dir(path.parent, what="STPA cache directory")
            check_trusted_file(path, what="STPA model file")
        elif label != "shipped default":
            check_trusted_file(path, what="STPA model file")
    except UntrustedPathError as exc:
        return str(exc)
    except OSError:  # gone meanwhile: the load reports it
        return None
    return None


def cache_is_trusted() -> bool:
    """Whether the cache directory may be read (missing counts as trusted: nothing to read)."""
    from seer._io import check_trusted_dir

    try:
        check_trusted_dir(cache_dir(), what="STPA cache directory")
    except UntrustedPathError:
        return False
    except OSError:
        return True
    return True


def load_cached(path: Path) -> StpaModel:
    st = path.stat()
    key = (str(path), st.st_mtime, st.st_size)
    with _lock:
        hit = _loaded.get(key)
        if hit is None:
            try:
                hit = load_model(path)
            except IncompatibleModelError as exc:
                hit = str(exc)
            _loaded[key] = hit
    if isinstance(hit, str):
        raise IncompatibleModelError(hit)
    return hit


def active_model(warn: bool = True) -> tuple[StpaModel | None, list[str]]:
    """The model ``workers="auto"`` uses, and why earlier candidates were skipped.

    Returns ``(None, reasons)`` when no model is usable.  With ``warn``,
    each skipped file that exists is reported as a :class:`StpaFallbackWarning`.
    """
    reasons = []
    for label, path in model_search_path():
        if not path.is_file():
            if label != "tuned (cache)":  # no tuned model is the normal case
                reasons.append(f"{label} model {path} is missing")
            continue
        untrusted = trust_problem(label, path)
        if untrusted is not None:
            reasons.append(f"{label} model: {untrusted}")
            with _lock:
                first = untrusted not in _warned
                _warned.add(untrusted)
            if warn and first:  # once per process: every workers="auto" build would repeat it
                warnings.warn(f"STPA: skipping the {label} model: {untrusted}", StpaFallbackWarning, stacklevel=3)
            continue
        try:
            return load_cached(path), reasons
        except (IncompatibleModelError, OSError) as exc:
            if label == "shipped default":
                # A damaged or out-of-date shipped file: refit its family on the shipped dataset instead.
                m = _retrained_shipped()
                if m is not None:
                    reasons.append(f"{label} model: {exc}; refitted from {shipped_dataset_path().name}")
                    return m, reasons
            reasons.append(f"{label} model: {exc}")
            if warn:
                warnings.warn(f"STPA: skipping the {label} model: {exc}", StpaFallbackWarning, stacklevel=3)
    return None, reasons


def _shipped_family() -> str:
    # Read as JSON only: this runs when the shipped file failed to load, so it may be anything.
    try:
        doc = json.loads(shipped_model_path().read_text(encoding="utf-8"))
        family = doc.get("family") if isinstance(doc, dict) else None
        return family if family in ("gbr", "rf", "ridge", "knn") else "gbr"
    except (OSError, UnicodeDecodeError, ValueError, RecursionError):
        return "gbr"


def _retrained_shipped() -> StpaModel | None:
    """The shipped model refitted from the shipped dataset with this
    scikit-learn (cached in the cache directory, keyed by versions)."""
    ds = shipped_dataset_path()
    if not ds.is_file():
        return None
    with _lock:
        key = ("retrained", str(ds), ds.stat().st_mtime, 0)
        hit = _loaded.get(key)
        if hit is not None:
            return hit if isinstance(hit, StpaModel) else None
        try:
            import sklearn

            family = _shipped_family()
            cached = cache_dir() / f"stpa_default-seer{__version__}-sklearn{sklearn.__version__}-{family}.json"
            trusted = cache_is_trusted()
            model = None
            if trusted and cached.is_file() and cached.stat().st_mtime >= ds.stat().st_mtime:
                try:
                    model = load_model(cached)
                except (IncompatibleModelError, OSError):
                    model = None
            if model is None:
                from seer.stpa.train import load_rows, train

                model = train(load_rows(ds), families=(family,), family=family)
                model.meta["refitted_from"] = str(ds)
                try:
                    if not trusted:
                        raise UntrustedPathError(f"{cache_dir()} is not a trusted cache")
                    save_model(model, cached)
                    model.path = str(cached)
                except (OSError, ValueError):  # an untrusted or read-only cache, or a link planted at the name
                    model.path = f"{ds} (refitted in memory)"
        except Exception:  # the dataset is unusable too: the heuristic decides
            _loaded[key] = "failed"
            return None
        _loaded[key] = model
        return model


def forget_loaded() -> None:
    """Drop every loaded model, so the next lookup reads the files again."""
    with _lock:
        _loaded.clear()
        _warned.clear()
