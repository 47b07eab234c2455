"""`SeerVectorEnv`: the Gymnasium VectorEnv over copies of a PettingZoo env."""

from __future__ import annotations

import functools
import warnings
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.error import AlreadyPendingCallError, NoAsyncCallError
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from seer.errors import ClosedError, EnvCopyAttributeError, EnvCopyError, WorkerError
from seer.guard import CLOSE_WAIT_S, CallGuard
from seer.vector.actions import ActionCheck, masked_choice
from seer.vector._runner import ActionsRejected
from seer.vector.messages import CopyFailed, RowInfo, failures, restarts


def warn_restarts(msgs, stacklevel: int = 2) -> None:
    """One RuntimeWarning per restarted copy in ``msgs``."""
    for m in restarts(msgs):
        warnings.warn(f"seer.vector: env copy {m.copy} failed and was restarted:\n{m.traceback}", RuntimeWarning,
                      stacklevel=stacklevel + 1)


def one_caller(call: str):
    """Run the method as ``call`` under the vector env's :class:`CallGuard`:
    a second thread gets :class:`~seer.errors.MisuseError`, and a call that
    ``close()`` from another thread interrupted raises
    :class:`~seer.errors.ClosedError`."""

    def decorate(method):
        @functools.wraps(method)
        def guarded(self, *args, **kwargs):
            guard = self._guard
            guard.enter(call)
            try:
                return method(self, *args, **kwargs)
            except BaseException as exc:
                if guard.closed_by_other:
                    raise guard.closed_error() from exc
                raise
            finally:
                guard.leave()

        return guarded

    return decorate


class SeerVectorEnv(VectorEnv):
    """A :class:`gymnasium.vector.VectorEnv` whose rows are the agent slots of
    ``num_copies`` copies of a PettingZoo env.

    Rows: ``num_envs = num_copies * agents_per_copy``; row ``c * A + j`` is
    agent ``j`` (in ``possible_agents`` order) of copy ``c``.  Every row has
    the same ``single_observation_space`` / ``single_action_space``; agents
    with other spaces need ``pad=True`` (see :func:`seer.vector.make`).

    Masks, in ``infos`` (each with its ``_key`` mask, all True):

    - ``infos["mask"]``: the row's agent acted in this step, so its reward,
      termination, truncation and observation are real.  False for padded
      slots (a copy with fewer agents), agents that left earlier, and every
      row of a copy that is being autoreset in this step (NEXT_STEP mode: its
      action was ignored).  From :meth:`reset`: the rows of live agents.
    - ``infos["alive"]``: the row's agent is live after the step, so its
      action will be used at the next step.

    Rows that are not live read zero observations and rewards and
    ``terminated = truncated = False``; an agent's termination is reported
    once, in the step it happens (so Gymnasium's ``RecordEpisodeStatistics``
    records exact returns per agent; the length it records for the episode
    after an agent's early death also counts the steps the row was dead).
    A copy is autoreset when all its agents are gone (``env.agents`` is
    empty).  Copies also have
    ``infos["restarted"]`` (per row) after a restart (``restart_failed``).

    :meth:`call`, :meth:`get_attr`, :meth:`set_attr` and :meth:`render`
    address copies: they take and return one value per copy (``copies=``
    picks some of them).
    """

    def __init__(self, backend, autoreset_mode: AutoresetMode, *, copy: bool = True, validate_actions: bool = True,
                 env_name: str | None = None):
        self._backend = backend
        L = backend.layout
        self._layout = L
        self.num_copies = L.num_copies
        self.agents_per_copy = L.slots
        self.num_envs = L.rows
        self.single_observation_space = L.obs_space
        self.single_action_space = L.act_space
        self.observation_space = batch_space(L.obs_space, self.num_envs)
        self.action_space = batch_space(L.act_space, self.num_envs)
        self.autoreset_mode = autoreset_mode
        specs = backend.specs
        self.metadata = dict(specs[0].metadata)
        self.metadata["autoreset_mode"] = autoreset_mode
        self.render_mode = specs[0].render_mode
        self.row_agents = [a for agents in L.agents for a in agents + [None] * (L.slots - len(agents))]
        self.row_copy = np.repeat(np.arange(self.num_copies), self.agents_per_copy)
        self.copy = copy
        self.validate_actions = validate_actions
        #: Refuse a live row's move that its ``infos["action_mask"]`` rules out
        #: (``seer.vector.make(check_action_masks=False)`` hands it to the env).
        self.check_action_masks = True
        self._actions = ActionCheck(L, specs)
        # the thread backend's native path can check the values in C, inside
        # the step's one call (the error still comes from _check_actions)
        self._native_check = False
        native_check = getattr(backend, "check_actions_natively", None)
        if validate_actions and native_check is not None:
            self._native_check = bool(native_check())
        self._name = env_name or self.metadata.get("name") or "env"
        self._b = backend.bufs
        self._alive = np.zeros(self.num_envs, bool)
        self._all_rows = np.ones(self.num_envs, bool)
        self._ended = np.zeros(self.num_copies, bool)
        self._failed: dict[int, str] = {}
        self._reset_done = False
        self._waiting = False
        self._guard = CallGuard("this vector env")
        self.closed = False

    # ---- properties --------------------------------------------------------------------------

    @property
    def backend(self) -> str:
        return self._backend.name

    @property
    def workers(self) -> int:
        return self._backend.num_workers

    @property
    def inline(self) -> bool | None:
        """Process backend: whether the calling process steps a share of the copies."""
        return getattr(self._backend, "inline", None)

    @property
    def copy_path(self) -> str:
        """How the copies step: ``"native"`` (seer.vector's native path: the
        whole step in C, see :mod:`seer.vector.native`), ``"python"`` (each
        copy's PettingZoo ``step``), or ``"mixed (k of n copies native)"``."""
        native = list(getattr(self._backend, "native_copies", None) or [])
        k = sum(native)
        if not native or k == 0:
            return "python"
        return "native" if k == len(native) else f"mixed ({k} of {len(native)} copies native)"

    @property
    def restarts(self) -> list[int]:
        """How often each copy was restarted (``restart_failed=True``)."""
        return self._backend.restarts()

    def worker_pids(self) -> list[int]:
        """Process ids of the worker processes (process backend; [] for threads)."""
        f = getattr(self._backend, "worker_pids", None)
        return f() if f else []

    def rows_of(self, copy: int) -> slice:
        """The rows of one copy."""
        return slice(copy * self.agents_per_copy, (copy + 1) * self.agents_per_copy)

    # ---- reset -------------------------------------------------------------------------------

    def _after_worker_error(self) -> None:
        """A worker died and the backend closed itself: so are we."""
        self._waiting = False
        if self._backend.closed:
            self.closed = True

    def _check_open(self) -> None:
        if self.closed:
            broken = getattr(self._backend, "broken", None)
            raise ClosedError("this vector env is closed" + (f" ({broken})" if broken else ""))

    @one_caller("reset()")
    def reset(self, *, seed: int | list | None = None, options: dict[str, Any] | None = None):
        """Reset every copy (or those in ``options["reset_mask"]``, a bool
        array over rows: a copy resets if any of its rows is True).

        ``seed``: None (each copy seeds itself), an int (copy ``c`` gets
        ``seed + c``), or a list of ``num_copies`` (or ``num_envs``: one per
        row, equal within a copy) ints or Nones.
        """
        self._check_open()
        if self._waiting:
            raise AlreadyPendingCallError("reset() while a step is pending: call step_wait() first", "step")
        C, A, R = self.num_copies, self.agents_per_copy, self.num_envs
        options = dict(options) if options else {}
        mask = options.pop("reset_mask", None)
        if mask is None:
            sel = np.ones(C, bool)
        else:
            if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_ or mask.shape != (R,):
                raise ValueError(
                    f"options['reset_mask'] must be a bool numpy array of shape ({R},) (one per row), got "
                    f"{type(mask).__name__} {getattr(mask, 'dtype', '')} {getattr(mask, 'shape', '')}"
                )
            if not mask.any():
                raise ValueError("options['reset_mask'] must contain at least one True value")
            if not self._reset_done:
                raise ValueError("the first reset() must reset every copy: call it without reset_mask")
            sel = mask.reshape(C, A).any(axis=1)
        seeds = self._seeds(seed)
        if isinstance(seed, int) and not isinstance(seed, bool):
            super().reset(seed=seed)
        b = self._b
        b["select"][:] = sel
        b["seeded"][:] = [s is not None for s in seeds]
        b["seeds"][:] = [0 if s is None else s for s in seeds]
        try:
            msgs = self._backend.reset(options or None)
        except WorkerError:
            self._after_worker_error()
            raise
        errors = failures(msgs)
        for c in np.flatnonzero(sel):
            self._failed.pop(int(c), None)
        self._ended[sel] = False
        if errors:
            for e in errors:
                self._failed[e.copy] = "its reset raised"
            raise self._copy_error("reset", errors)
        self._reset_done = True
        self._alive = b["alive"].copy()
        infos = self._infos(msgs)
        infos["mask"] = self._alive.copy()
        infos["_mask"] = np.ones(R, bool)
        infos["alive"] = self._alive.copy()
        infos["_alive"] = np.ones(R, bool)
        self._add_action_masks(infos, self._alive)
        return self._out(b["obs"]), infos

    def _seeds(self, seed) -> list:
        C, A, R = self.num_copies, self.agents_per_copy, self.num_envs

        def check(s):
            if s is None:
                return None
            if not isinstance(s, (int, np.integer)) or isinstance(s, bool) or s < 0:
                raise ValueError(f"seed {s!r} is invalid: expected None or a non-negative integer")
            return int(s)

        if seed is None:
            return [None] * C
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            return [check(seed) + c for c in range(C)]
        seed = list(seed)
        if len(seed) == C:
            return [check(s) for s in seed]
        if len(seed) == R:
            out = []
            for c in range(C):
                row = {check(s) for s in seed[c * A:(c + 1) * A]}
                if len(row) > 1:
                    raise ValueError(f"seeds of copy {c}'s rows differ ({sorted(row, key=str)}): a copy has one seed")
                out.append(row.pop())
            return out
        raise ValueError(f"seed list has {len(seed)} entries: expected num_copies={C} (one per copy) or "
                         f"num_envs={R} (one per row)")

    # ---- step --------------------------------------------------------------------------------

    @one_caller("step()")
    def step(self, actions):
        """Step every copy: ``actions`` has one row per agent slot."""
        self.step_async(actions)
        return self.step_wait()

    @one_caller("step_async()")
    def step_async(self, actions) -> None:
        self._check_open()
        if self._waiting:
            raise AlreadyPendingCallError("step_async() while a step is pending: call step_wait() first", "step")
        if not self._reset_done:
            raise RuntimeError("step() before reset(): call reset() first")
        if self._failed:
            c = min(self._failed)
            raise RuntimeError(
                f"env copies {sorted(self._failed)} failed ({self._failed[c]}); call reset() (or reset them with "
                f"options={{'reset_mask': mask}}) before stepping again"
            )
        if self.autoreset_mode == AutoresetMode.DISABLED and self._ended.any():
            raise RuntimeError(
                f"env copies {np.flatnonzero(self._ended).tolist()} ended and autoreset_mode is DISABLED: reset "
                f"them with options={{'reset_mask': mask}} before stepping"
            )
        self._b["act"][...] = self._check_actions(actions, values=not self._native_check)
        try:
            self._backend.step_async()
        except ActionsRejected:
            self._check_actions(actions)  # raises, naming the row and the value
            raise ValueError("actions were rejected (NaN or out of bounds in a live row)") from None
        self._waiting = True

    @one_caller("step_wait()")
    def step_wait(self, timeout: float | None = None):
        """Finish :meth:`step_async`.  ``timeout`` (seconds; process backend)
        raises ``multiprocessing.TimeoutError`` and leaves the step pending."""
        msgs = self._finish_step(timeout)
        b = self._b
        alive = self._alive
        infos = self._infos(msgs) if msgs or self._layout.same_step else {}
        infos["mask"] = b["mask"].copy()
        infos["_mask"] = self._all_rows.copy()
        infos["alive"] = alive.copy()
        infos["_alive"] = self._all_rows.copy()
        self._add_action_masks(infos, alive)
        if b["restarted"].any():
            infos["restarted"] = np.repeat(b["restarted"], self.agents_per_copy)
            infos["_restarted"] = self._all_rows.copy()
        return (self._out(b["obs"]), b["rew"].copy(), b["term"].copy(), b["trunc"].copy(), infos)

    def _finish_step(self, timeout: float | None) -> list:
        """The backend's end of the step: the copies' failures raised, their
        restarts warned of, the live rows and ended copies recorded; the
        step's messages."""
        self._check_open()
        if not self._waiting:
            raise NoAsyncCallError("step_wait() without step_async()", "step")
        try:
            msgs = self._backend.step_wait(timeout)
        except WorkerError:
            self._after_worker_error()
            raise
        self._waiting = False
        b = self._b
        errors = None
        if msgs:
            errors = failures(msgs)
            warn_restarts(msgs, stacklevel=4)
        self._alive = b["alive"].copy()
        self._ended = b["ended"].copy()
        if errors:
            for e in errors:
                self._failed[e.copy] = "its step raised"
            raise self._copy_error("step", errors)
        return msgs

    @one_caller("step()")
    def _step_views(self, actions) -> tuple:
        """:meth:`step` for callers that copy the rows on at once (seer's
        TorchRL rollout): the same checks, errors and restart warnings, but
        no infos and no copies.  ``(obs, rew, term, trunc, mask, alive)``:
        the vector env's own buffers, as ``step`` returns them and
        ``infos["mask"]`` / ``infos["alive"]``; read them before the next
        call, never write them."""
        self.step_async(actions)
        self._finish_step(None)
        b = self._b
        return b["obs"], b["rew"], b["term"], b["trunc"], b["mask"], b["alive"]

    def _add_action_masks(self, infos: dict, alive: np.ndarray, rows=None) -> None:
        """``infos["action_mask"]``: each row's legal actions at the next step
        (all False for rows that will not act), for envs whose observations
        carry an action mask."""
        if not self._layout.mask_n:
            return
        masks = self._b["action_mask"] if rows is None else self._b["action_mask"][rows]
        masks = masks & alive[:, None]
        infos["action_mask"] = masks
        infos["_action_mask"] = np.ones(len(masks), bool)

    def sample_actions(self, action_mask: np.ndarray | None = None, rng: np.random.Generator | None = None):
        """Random actions for every row that respect the action masks.

        A row with a mask (``infos["action_mask"]`` of the last ``reset`` or
        ``step``, or ``action_mask`` given here) gets one of its legal
        actions, uniformly; a row with no legal action (one that will not
        act: its action is ignored) gets the space's first action.  Without
        action masks this is ``action_space.sample()``.  (The same for a
        Discrete action space through Gymnasium:
        ``envs.action_space.sample(mask=tuple(infos["action_mask"].astype(np.int8)))``.)

        Args:
            action_mask: bool ``(num_envs, n)``; default: the last masks.
            rng: The generator to draw from; default ``self.np_random``
                (seeded by ``reset(seed=...)``).
        """
        live = None
        if action_mask is None:
            if not self._layout.mask_n:
                return self.action_space.sample()
            action_mask, live = self._b["action_mask"], self._alive
        space = self.single_action_space
        if not isinstance(space, spaces.Discrete):
            raise TypeError(f"sample_actions with action masks needs a Discrete action space, not {space}")
        m = np.asarray(action_mask, bool)
        if m.ndim != 2 or m.shape[0] != self.num_envs or m.shape[1] > space.n:
            raise ValueError(f"action_mask has shape {m.shape}: expected ({self.num_envs}, n <= {space.n}), one "
                             f"row of legal actions per row of the vector env")
        rng = self.np_random if rng is None else rng
        return masked_choice(m, rng, live) + int(space.start)

    def _out(self, arr: np.ndarray) -> np.ndarray:
        return arr.copy() if self.copy else arr

    def _row_infos(self, msgs) -> tuple[dict, dict[int, dict]]:
        """The vector infos of the :class:`RowInfo` messages in ``msgs``, and
        the final infos (SAME_STEP) by row, which go with a final observation."""
        infos: dict = {}
        finals: dict[int, dict] = {}
        for m in msgs:
            if isinstance(m, RowInfo):
                if m.final:
                    finals[m.row] = m.info
                else:
                    self._add_info(infos, m.info, m.row)
        return infos, finals

    def _infos(self, msgs) -> dict:
        infos, finals = self._row_infos(msgs)
        if self._layout.same_step:
            b = self._b
            for r in np.flatnonzero(b["final_mask"]).tolist():
                self._add_info(infos, {"final_obs": b["final_obs"][r].copy(), "final_info": finals.get(r, {})}, r)
        return infos

    def _copy_error(self, op: str, errors: list[CopyFailed]) -> EnvCopyError:
        errors = sorted(errors, key=lambda e: e.copy)
        c, tb = errors[0].copy, errors[0].traceback
        A = self.agents_per_copy
        worker = self._backend.worker_of(c)
        others = f" (copies {[e.copy for e in errors]} failed)" if len(errors) > 1 else ""
        last = tb.strip().splitlines()[-1] if tb.strip() else "?"
        msg = (f"env copy {c} (rows {c * A}..{c * A + A - 1}) raised in {op}, in {worker}: {last}{others}\n"
               f"--- traceback from {worker} ---\n{tb.rstrip()}\n--- end of traceback ---")
        if op in ("step", "reset"):
            msg += ("\nReset the failed copies (reset(), or options={'reset_mask': ...}) to go on, or pass "
                    "restart_failed=True to seer.vector.make to restart them automatically.")
        # a missing attribute stays an AttributeError for hasattr-style probes (SB3's has_attr)
        cls = EnvCopyAttributeError if op.startswith(("get_attr", "call")) and errors[0].attribute_error \
            else EnvCopyError
        return cls(msg, copy=c, worker=worker, traceback=tb, errors=[(e.copy, e.traceback) for e in errors])

    # ---- actions -----------------------------------------------------------------------------

    def _check_actions(self, actions, values: bool = True, alive: np.ndarray | None = None) -> np.ndarray:
        """``actions`` as an array of the right shape and dtype kind, and
        (``values``) every live row's value (``alive``; default: the rows
        live now) in its space; errors name the row."""
        alive = self._alive if alive is None else alive
        a = self._actions.check(actions, alive, values and self.validate_actions)
        if self.validate_actions and self.check_action_masks and self._layout.mask_n:
            self._check_masks(a, alive)
        return a

    def _check_masks(self, a: np.ndarray, alive: np.ndarray) -> None:
        """Refuse a live row's move that its action mask rules out, naming
        the row, its copy and agent, the move and the legal moves."""
        space = self.single_action_space
        if not isinstance(space, spaces.Discrete) or not alive.any():
            return
        masks = self._b["action_mask"]
        n = masks.shape[1]
        move = a.astype(np.int64, copy=False) - space.start
        # minimum/maximum and a flat take: np.clip and 2-D fancy indexing cost more on these few rows
        inside = np.minimum(np.maximum(move, 0), n - 1)
        legal = masks.reshape(-1)[np.arange(0, len(move) * n, n) + inside] & (inside == move)
        if (legal | ~alive).all():
            return
        rows = np.flatnonzero(alive)
        legal = legal[rows]
        i = int(np.flatnonzero(~legal)[0])
        r = int(rows[i])
        raise ValueError(
            f"action of row {r} (copy {r // self.agents_per_copy}, agent {self.row_agents[r]!r}) is "
            f"{int(a[r])}: its infos['action_mask'] rules it out, legal actions are "
            f"{(np.flatnonzero(masks[r]) + space.start).tolist()} ({int((~legal).sum())} live rows chose a masked-out "
            f"action; seer.vector.make(..., check_action_masks=False) hands such moves to the env)")

    def action_masks(self) -> np.ndarray:
        """Each row's legal actions for the next step, bool ``(num_envs, n)``,
        as sb3-contrib's ``MaskablePPO`` asks for them.

        The same as the last ``infos["action_mask"]`` for the rows that will
        act; a row that will not act (its action is ignored) allows every
        action, so a masked distribution over it stays defined.  Envs
        without action masks allow every action on every row.

        Raises:
            TypeError: the action space is not Discrete.
        """
        space = self.single_action_space
        if not isinstance(space, spaces.Discrete):
            raise TypeError(f"action_masks() needs a Discrete action space, not {space}")
        out = np.ones((self.num_envs, int(space.n)), bool)
        if self._layout.mask_n:
            m = self._b["action_mask"]
            out[:, :m.shape[1]] = np.where(self._alive[:, None], m, True)
        return out

    # ---- copies ------------------------------------------------------------------------------

    @one_caller("call()")
    def _call(self, kind, name, args=(), kwargs=None, values=None, copies=None) -> tuple:
        self._check_open()
        if self._waiting:
            raise AlreadyPendingCallError(f"{kind}() while a step is pending: call step_wait() first", "step")
        order, chosen = self._copy_list(copies)
        if values is not None:
            values = [values[order.index(c)] for c in chosen]
        try:
            results, msgs = self._backend.call(kind, name, args, kwargs or {}, values, chosen)
        except WorkerError:
            self._after_worker_error()
            raise
        errors = failures(msgs)
        if errors:
            raise self._copy_error(f"{kind}({name!r})", errors)
        by_copy = dict(zip(chosen, results))
        return tuple(by_copy[c] for c in order)

    def _copy_list(self, copies) -> tuple[list[int], list[int]]:
        """``copies`` (None: all) as the caller's order and as the sorted list the backend takes."""
        C = self.num_copies
        if copies is None:
            every = list(range(C))
            return every, every
        if isinstance(copies, (int, np.integer)) and not isinstance(copies, bool):
            copies = [copies]
        try:
            order = [int(c) for c in copies if not isinstance(c, bool) and int(c) == c]
        except (TypeError, ValueError):
            order = None
        if order is None or len(order) != len(copies) or len(set(order)) != len(order) \
                or any(not 0 <= c < C for c in order):
            raise ValueError(f"copies={copies!r} is invalid: expected None (every copy) or distinct copy indices "
                             f"in [0, {C})")
        if not order:
            raise ValueError("copies=[] selects no copy: expected at least one copy index (or None for all)")
        return order, sorted(order)

    def call(self, name: str, *args, copies=None, **kwargs) -> tuple:
        """Call method ``name`` of every copy (or read it, if not callable).

        Args:
            name: The method (or attribute) of each env copy.
            *args, **kwargs: Passed to the method.
            copies: None (every copy) or a list of copy indices: only those
                are called, and the result has one value per index, in that
                order.  (A method with its own ``copies`` argument cannot be
                given it through here.)
        """
        return self._call("call", name, args, kwargs, copies=copies)

    def get_attr(self, name: str, copies=None) -> tuple:
        """Attribute ``name`` of every copy (or of the copies in ``copies``, in that order).

        Raises:
            seer.errors.EnvCopyAttributeError: a copy has no such attribute
                (also an ``AttributeError`` and an :class:`EnvCopyError`).
        """
        return self._call("get_attr", name, copies=copies)

    def set_attr(self, name: str, values, copies=None) -> None:
        """Set attribute ``name`` of each copy (or of the copies in ``copies``):
        ``values`` is a list/tuple with one value per such copy, or one
        value for all."""
        n = self.num_copies if copies is None else len(self._copy_list(copies)[0])
        if isinstance(values, (list, tuple)):
            if len(values) != n:
                want = f"num_copies={n} (one per copy)" if copies is None else f"{n} (one per copy in copies)"
                raise ValueError(f"set_attr got {len(values)} values: expected {want} or a single value")
            values = list(values)
        else:
            values = [values] * n
        self._call("set_attr", name, values=values, copies=copies)

    def render(self) -> tuple:
        """Each copy's ``render()``."""
        return self._call("render", "render")

    def close(self, **kwargs) -> None:
        """Close every copy and the backend's workers.  Idempotent.

        From another thread while a call runs: that call is interrupted (it
        raises :class:`~seer.errors.ClosedError`) and waited for, at most
        ``seer.guard.CLOSE_WAIT_S`` seconds; then the backend is closed in
        any case.  From inside an env copy's code: :class:`MisuseError`.
        """
        if self.closed:
            return
        guard = self._guard
        interrupt = getattr(self._backend, "interrupt", None)
        taken = guard.begin_close(interrupt or (lambda: None), lambda: None, CLOSE_WAIT_S)
        try:
            super().close(**kwargs)
        finally:
            self.closed = True
            if taken:
                guard.end_close()

    def close_extras(self, **kwargs) -> None:
        self._backend.close(**kwargs) if kwargs else self._backend.close()

    def __enter__(self) -> "SeerVectorEnv":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            if not self.closed:
                self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return (f"SeerVectorEnv({self._name}, num_copies={self.num_copies}, agents_per_copy={self.agents_per_copy}, "
                f"num_envs={self.num_envs}, backend={self.backend!r}, workers={self.workers}"
                f"{', inline=True' if self.inline else ''}, copy_path={self.copy_path!r})")
