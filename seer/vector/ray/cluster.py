"""Ray for the Ray backend: importing it (naming the extra when missing), owning the Ray session (shut down only if make() started it), and pickling what the driver sends its actors."""

from __future__ import annotations


#: Ray inlines task arguments up to 100 KiB; larger policies go through the
#: object store once per rollout instead of once per shard.
_INLINE_BYTES = 100 * 1024

RAY_MISSING = ('backend="ray" needs Ray, an optional dependency of SEER: install it with pip install "seer-marl[ray]" '
               '(or pip install "ray>=2.9")')


def import_ray():
    """``ray``, or an ImportError that says which extra to install."""
    try:
        import ray
    except ImportError as exc:
        raise ImportError(RAY_MISSING) from exc
    return ray


def _dumps(obj) -> bytes:
    """``obj`` (an env factory, a policy) as bytes, pickled as Ray pickles task arguments (cloudpickle: lambdas
    and closures by value)."""
    import cloudpickle

    return cloudpickle.dumps(obj)


# ---- Ray ownership: shut Ray down only if make() started it ---------------------------------------

_OWNED = {"started": False, "users": 0}


def _connect(ray, address, init_kwargs) -> bool:
    """Connect to (or start) Ray unless already connected; True if this call
    started it (then the last vector env using it shuts it down)."""
    if ray.is_initialized():
        if not _OWNED["started"]:
            return False
    else:
        ray.init(address=address, **(init_kwargs or {}))
        _OWNED["started"], _OWNED["users"] = True, 0
    _OWNED["users"] += 1
    return True


def _release(ray) -> None:
    _OWNED["users"] -= 1
    if _OWNED["users"] <= 0 and _OWNED["started"]:
        _OWNED["started"], _OWNED["users"] = False, 0
        try:
            if ray.is_initialized():
                ray.shutdown()
        except Exception:
            pass
