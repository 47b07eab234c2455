"""`NativeEnv`: the base class of a PettingZoo env whose reset and step write rows (C, Numba or Python).

The author declares the env's rows once, in a :class:`seer.vector.NativeSpec`
(agents, one observation Box, one action space: the spaces derive from it),
and writes two things over :attr:`NativeEnv.rows`:

- ``reset_rows(seed)``: a new episode from ``seed``; write the observation
  rows (and clear ``alive`` of an agent that does not start).  Return 0 or
  a ``SEER_E_*`` status.
- the step: either ``copy_step()`` returning ``(function, state)`` -- a C or
  Numba function ``int step(void *state, const seer_copy_rows *rows, int32_t
  op)`` (a cffi function, an address or ``@STATE.copy_step(spec)``) that
  reads ``act`` and writes ``obs``, ``rew``, ``term``, ``trunc``, ``mask``,
  ``alive``, ``ended`` -- or, in Python, ``step_rows()`` writing the same
  arrays.

The base does the rest: the runtime (``seer.stpa.make_runtime``, so
``workers="auto"`` is STPA's choice, tuned on the real steps), holding it
for native resets and steps (``Runtime.exclusive``/``native_step``), errors
(``Runtime.mark_reset``/``fail``: a failed handler is a
:class:`seer.HandlerError`), the single-env ParallelEnv API (``agents``,
spaces, the five dicts, ``state()``, ``close``, ``render``), the action
check (a bad action names the agent and the value), ``seer_native_copy()``
(seer.vector's native path runs the same step in C for every copy) and the
``make_traced`` hook of ``seer trace``::

    class MyEnv(seer.NativeEnv):
        metadata = {"name": "my_env_v0", "render_modes": []}

        def __init__(self, num_agents=8, workers=1, trace=False):
            spec = seer.vector.NativeSpec(agents=[f"agent_{i}" for i in range(num_agents)],
                                          observation=Box(-1, 1, (4,), np.float32), action=Discrete(3))
            super().__init__(spec, MyModel(num_agents), workers=workers, trace=trace)
            self.c_env = ...  # the C struct, holding self.runtime.native_address

        def reset_rows(self, seed):
            return lib.my_reset(self.c_env, seed, ffi.from_buffer(self.rows.obs))

        def copy_step(self):
            return plugin.function("my_copy_step"), self.c_env

        def next_seed(self):  # the stream SEER_COPY_AUTORESET draws from
            return lib.my_next_seed(self.c_env)

    make_traced = MyEnv.make_traced  # seer trace my_env_v0

A native reset must reset the runtime itself (``seer_rt_reset``, then the
first events), as its ``SEER_COPY_AUTORESET`` does; a Python env's runtime
is reset by the base (``Runtime.reset``: the model's ``reset``) before
``reset_rows``.  ``model=None`` runs without a runtime (a reference engine).
"""

from __future__ import annotations

import copy
import numbers
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import gymnasium
import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv

from seer._agent_dicts import FloatDicts, InfoDicts, RowViews, gather_in_box
from seer._checks import check_seed, check_workers
from seer.actions import validate_actions
from seer.capi import address_of, api_address, pointer_address
from seer.errors import ClosedError, HandlerError, InvalidArgumentError, MisuseError
from seer.guard import CallGuard

if TYPE_CHECKING:  # seer.vector loads when the first env is built, not with `import seer`
    from seer.vector.native import NativeCopy, NativeSpec

__all__ = ["NativeEnv"]

_M64 = (1 << 64) - 1
#: what a Discrete action may be on the fast path (a bool or a float goes to the check that names it)
_INT_TYPES = frozenset({int, np.int64, np.int32, np.int16, np.int8, np.uint8, np.uint16, np.uint32, np.uint64,
                        np.intc, np.intp, np.longlong})
_FLAGS = ("term", "trunc", "mask", "alive")


def _splitmix(state: int) -> tuple[int, int]:
    state = (state + 0x9E3779B97F4A7C15) & _M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return state, z ^ (z >> 31)


def _rows(spec: NativeSpec) -> SimpleNamespace:
    """The arrays of one copy's rows, laid out as seer.vector lays out a copy of ``spec``."""
    n, act = spec.slots, spec.action
    act_shape = (n,) if isinstance(act, spaces.Discrete) else (n, *act.shape)
    act_dtype = np.int64 if isinstance(act, (spaces.Discrete, spaces.MultiDiscrete)) else act.dtype
    rows = SimpleNamespace(act=np.zeros(act_shape, act_dtype),
                           obs=np.zeros((n, *spec.observation.shape), spec.observation.dtype),
                           rew=np.zeros(n), ended=np.zeros(1, np.uint8))
    for k in _FLAGS:
        setattr(rows, k, np.zeros(n, np.uint8))
    return rows


class NativeEnv(ParallelEnv):
    """A PettingZoo ParallelEnv over rows that C, Numba or Python code writes (see the module docstring).

    Args:
        spec: The rows: agents, observation and action space.
        model: The :class:`seer.Model` the runtime runs, or None (no runtime).
        workers: The runtime's pool size, ``"auto"`` or an integer.
        debug: The runtime's debug mode (:class:`seer.Runtime`; None: on with ``SEER_DEBUG=1``).
        trace: Build the runtime with ``trace=True`` (then seer.vector steps
            this env through Python, so the trace sees every step).
        capacity: The runtime's queue capacity (default: ``max(4096, 16 * slots)``).
        render_mode: None or one of ``metadata["render_modes"]`` (then
            :meth:`render` returns :meth:`render_frame`).
        black_death: Fix the agent set until the episode ends (SuperSuit's
            ``black_death_v3``: a lost agent's observation and reward are
            zero, ``infos[agent]["active"]`` False).
        strict_actions: An action for an agent that has left is an error
            (default: ignored, as PettingZoo's converters do).
        choose: For ``workers="auto"``: returns the starting pool size
            (default: STPA's choice from a probe of the model's events; an
            env whose step does more than its events can time whole steps:
            :func:`seer.stpa.select_for_stepper`).

    Subclasses set ``metadata["name"]``; ``entities_arg`` names the argument
    that ``seer trace --entities`` sets (default ``"num_agents"``, None: none);
    ``native_autoreset = False`` when the copy step cannot autoreset (then
    seer.vector resets the copy through :meth:`reset`).
    """

    metadata: dict = {"name": "native_env", "render_modes": [], "is_parallelizable": True}
    entities_arg: str | None = "num_agents"
    #: the copy step autoresets (``SEER_COPY_AUTORESET``); False: seer.vector resets a copy through :meth:`reset`
    native_autoreset: bool = True

    def __init__(self, spec: NativeSpec, model=None, *, workers: int | str = 1, trace: bool = False,
                 capacity: int | None = None, render_mode: str | None = None, black_death: bool = False,
                 strict_actions: bool = False, debug: bool | None = None, choose=None):
        from seer.vector.native import NativeSpec

        self._closed = True  # until the runtime exists: close() and __del__ have nothing to free
        self._runtime = None
        if not isinstance(spec, NativeSpec):
            raise InvalidArgumentError(f"spec={spec!r} is invalid: expected a seer.vector.NativeSpec")
        modes = list(self.metadata.get("render_modes", []))
        if render_mode is not None and render_mode not in modes:
            raise InvalidArgumentError(f"render_mode={render_mode!r} is invalid: expected None or one of {modes}")
        workers = check_workers(workers)
        if not isinstance(black_death, (bool, np.bool_)):
            raise InvalidArgumentError(f"black_death={black_death!r} is invalid: expected True or False")
        self.black_death, self.strict_actions = bool(black_death), bool(strict_actions)
        self.spec, self.render_mode, self.traced = spec, render_mode, bool(trace)
        self._guard = CallGuard(f"this {self.metadata.get('name')} env")  # one caller at a time, as SEER's envs
        self.possible_agents = list(spec.agents)
        self._index = {a: i for i, a in enumerate(self.possible_agents)}
        self._no_agent_done = dict.fromkeys(self.possible_agents, False)
        # Each agent's spaces are its own (seeding one leaves the others' samples as they were), copied
        # from private templates when first asked for: copying them all up front took 3 s at 65,536 agents.
        self._space_templates = (copy.deepcopy(spec.observation), copy.deepcopy(spec.action))
        self._obs_spaces: dict = {}
        self._act_spaces: dict = {}
        obs = spec.observation
        self.state_space = spaces.Box(np.tile(obs.low.ravel(), spec.slots), np.tile(obs.high.ravel(), spec.slots),
                                      dtype=obs.dtype)
        self.rows = _rows(spec)
        act = spec.action
        self._finite_bounds = not isinstance(act, spaces.Box) or bool(np.isfinite(act.low).all()
                                                                       and np.isfinite(act.high).all())
        # a Box's bounds as float64, as numpy compares the float64 rows gather_in_box reads with them
        self._box_bounds = (np.ascontiguousarray(act.low, np.float64), np.ascontiguousarray(act.high, np.float64)) \
            if isinstance(act, spaces.Box) else None
        self._live = np.zeros(0, np.int64)
        self.agents: list[str] = []
        self._names: list[str] = []  # the live agents (self.agents is every agent with black_death=True)
        self._none_done: dict = {}
        self._obs_views = RowViews()  # the observations a step hands out, recycled once nobody holds them
        self._infos = InfoDicts()
        self._rewards = FloatDicts()
        self._episode = None  # None: never reset; "over": ended; "failed: why": a step failed
        self._present = np.zeros(spec.slots, bool)  # the rows state() shows: live, or truncated at the end
        self._seed_stream = 0
        #: the ``options`` of the reset in progress (``reset_rows`` may read them)
        self.reset_options: dict | None = None
        self._copy: NativeCopy | None = None
        if model is not None:
            import seer.stpa

            cap = max(4096, 16 * spec.slots) if capacity is None else capacity
            self._runtime = seer.stpa.make_runtime(model, workers, capacity=cap, trace=trace, debug=debug,
                                                   choose=choose)
        self._closed = False

    # ---- what the author writes ----------------------------------------------------------------

    def reset_rows(self, seed: int) -> int | None:
        """A new episode from ``seed``: write ``rows.obs`` (0 or a status).
        :attr:`reset_options` holds the ``options`` given to :meth:`reset`."""
        raise NotImplementedError(f"{type(self).__name__} must define reset_rows(seed)")

    def copy_step(self) -> tuple[Any, Any] | None:
        """``(function, state)`` of the native step, or None (then :meth:`step_rows` steps)."""
        return None

    def step_rows(self) -> int | None:
        """One step in Python: read ``rows.act``, write the other rows (0 or a status)."""
        raise NotImplementedError(f"{type(self).__name__} must define copy_step() or step_rows()")

    def next_seed(self) -> int:
        """The seed of a ``reset()`` without one: SplitMix64 from 0, as the
        examples' C does.  Override it when the native step autoresets (it
        must draw from the stream ``SEER_COPY_AUTORESET`` draws from)."""
        self._seed_stream, z = _splitmix(self._seed_stream)
        return z >> 33

    def describe_error(self, err: BaseException) -> BaseException:
        """The error of a failed native reset or step as this env reports it
        (default: the runtime's, naming entity, kind and time).  Override it
        to name what an entity is to the user (an agent behind a slot)."""
        return err

    def render_frame(self):
        """The picture :meth:`render` returns for ``render_mode``."""
        raise NotImplementedError(f"{type(self).__name__} declares render modes but no render_frame()")

    # ---- runtime -------------------------------------------------------------------------------

    @property
    def runtime(self):
        """The :class:`seer.Runtime` this env steps (None without a model): for
        its ``pool_stats()``, ``trace`` and pool size.  Stepping or resetting
        it yourself desynchronizes it from the env."""
        return self._runtime

    @property
    def workers(self) -> int:
        """The runtime's pool size now (``"auto"`` tunes it between steps); 1 without a runtime."""
        return 1 if self._runtime is None else self._runtime.workers

    def _native(self) -> NativeCopy | None:
        if self._copy is None and self._runtime is not None:
            got = self.copy_step()
            if got is not None:
                from seer.vector.native import NativeCopy

                fn, state = got
                self._copy = NativeCopy(self.spec, step=fn, state=state, error=self._native_error, owner=self,
                                        autoreset=self.native_autoreset, debug=self._runtime.debug,
                                        sync=self._take_vector_rows)
                self._call = self._caller(self._copy)
        return self._copy

    def _take_vector_rows(self, obs, rew, term, trunc, mask, alive) -> None:
        """seer.vector stepped this copy natively, in its own rows: take them, so that
        ``state()``, ``agents`` and ``render()`` answer for the step it ran last."""
        r = self.rows
        for mine, theirs in ((r.obs, obs), (r.rew, rew), (r.term, term), (r.trunc, trunc), (r.mask, mask),
                             (r.alive, alive)):
            mine[...] = theirs
        live = alive != 0
        self._present = live | ((mask != 0) & (term == 0))  # live, or done this step without being lost
        if self._episode == "running":
            self._set_live(live)

    def _caller(self, native: NativeCopy):
        """The copy step called on this env's own rows (cffi releases the GIL for the call)."""
        from seer._seer_c import ffi

        fn = ffi.cast("seer_copy_step_fn", address_of(native.step_address))
        state = ffi.cast("void *", pointer_address(native.state_address))
        r = self.rows
        c = ffi.new("seer_copy_rows *")
        c.api = ffi.cast("seer_api *", api_address())
        c.act, c.obs = ffi.from_buffer(r.act), ffi.from_buffer(r.obs)
        c.rew = ffi.cast("double *", ffi.from_buffer(r.rew))
        for k in (*_FLAGS, "ended"):
            setattr(c, k, ffi.cast("uint8_t *", ffi.from_buffer(getattr(r, k))))
        self._c_rows = c  # the struct points into the arrays: both live as long as the env
        return lambda op: fn(state, c, op)

    def _native_error(self, rc: int) -> BaseException:
        try:
            self._runtime.fail(rc)
        except BaseException as exc:  # noqa: BLE001 - the error is the value here
            return self.describe_error(exc)
        return HandlerError(f"{self.metadata.get('name')}: the native step failed with status {rc}", code=rc)

    def seer_native_copy(self) -> NativeCopy | None:
        """seer.vector's native path: the env's copy step for every copy (None
        for a Python step, a traced runtime or a closed env)."""
        if self._closed or self.traced:
            return None
        return self._native()

    # ---- spaces --------------------------------------------------------------------------------

    def observation_space(self, agent):
        space = self._obs_spaces.get(agent)
        return space if space is not None else self._own_space(self._obs_spaces, 0, agent)

    def action_space(self, agent):
        space = self._act_spaces.get(agent)
        return space if space is not None else self._own_space(self._act_spaces, 1, agent)

    @property
    def observation_spaces(self) -> dict:
        return {a: self.observation_space(a) for a in self.possible_agents}

    @property
    def action_spaces(self) -> dict:
        return {a: self.action_space(a) for a in self.possible_agents}

    def _shared_spaces(self) -> tuple | None:
        """(observation space, action space) that every agent's spaces equal, as new copies (seer.vector
        lays out its rows from them instead of comparing one space per agent); None where a subclass
        answers ``observation_space`` or ``action_space`` itself."""
        cls = type(self)
        if cls.observation_space is not NativeEnv.observation_space or cls.action_space is not NativeEnv.action_space:
            return None
        return copy.deepcopy(self._space_templates)

    def _own_space(self, spaces_made: dict, which: int, agent):
        """Agent ``agent``'s own copy of space template ``which`` (0: observation, 1: action), made once."""
        name = self._agent(agent)
        space = spaces_made.get(name)
        if space is None:  # setdefault: of two first calls at once, both answer the one kept
            space = spaces_made.setdefault(name, copy.deepcopy(self._space_templates[which]))
        return space

    def _agent(self, agent):
        if agent not in self._index:
            names = self.possible_agents
            raise InvalidArgumentError(f"agent {agent!r} is unknown: expected one of {names[0]} ... {names[-1]}")
        return agent

    def state(self) -> np.ndarray:
        """The global state: every agent's observation row, concatenated, zeros
        for the agents lost (terminated, or not started); at the episode's
        end the truncated agents keep their last rows."""
        self._check_open()
        obs = self.rows.obs.copy()
        obs[~self._present] = 0
        return obs.reshape(-1)

    # ---- episode -------------------------------------------------------------------------------

    def reset(self, seed=None, options=None):
        self._check_open()
        self._guard.enter("reset()")
        try:
            self.reset_options = options
            return self._reset(seed)
        finally:
            self.reset_options = None
            self._guard.leave()

    def step(self, actions):
        self._check_open()
        self._guard.enter("step()")
        try:
            return self._step(actions)
        finally:
            self._guard.leave()

    def _reset(self, seed):
        seed = int(self.next_seed()) if seed is None else check_seed(seed)
        r = self.rows
        for a in (r.obs, r.rew, r.term, r.trunc, r.mask, r.ended):
            a[...] = 0
        r.alive[:] = 1
        rt, native = self._runtime, self._native()
        if native is not None:  # the native reset resets the runtime itself, as its autoreset does
            with rt.exclusive("reset()"):
                rc = self.reset_rows(seed) or 0
                rt.mark_reset(seed)
                if rc != 0:
                    self._episode = None
                    raise self._native_error(rc)
        else:
            if rt is not None:
                rt.reset(seed)
            rc = self.reset_rows(seed) or 0
            if rc != 0:
                raise HandlerError(f"{type(self).__name__}.reset_rows({seed}) failed with status {rc}", code=rc)
        self._episode = "running"
        self._set_live(r.alive.astype(bool))
        self._present = r.alive.astype(bool)
        if self.black_death:
            obs = r.obs.copy()
            obs[~r.alive.astype(bool)] = 0
            return dict(zip(self.agents, obs)), {a: {"active": bool(r.alive[i])} for i, a in enumerate(self.agents)}
        obs = r.obs[self._live].copy()
        return dict(zip(self.agents, obs)), {a: {} for a in self.agents}

    def _step(self, actions):
        if self._episode is None:
            raise MisuseError("step() called before reset(): call reset() first")
        if self._episode.startswith("failed"):
            raise ClosedError(f"the last step {self._episode[7:]}; call reset() before stepping again")
        agents, live = self._names, self._live
        if not self.agents:
            if self.strict_actions and actions:
                validate_actions(actions, [], self.action_space, possible_agents=self._index, strict=True)
            return {}, {}, {}, {}, {}  # the episode has ended (PettingZoo's own envs answer so too)
        r = self.rows
        arr = self._fast_actions(actions, agents)
        if arr is None:  # something is off: the slow check names the agent and the value
            if self.black_death and type(actions) is dict and actions.keys() <= self._index.keys():
                actions = {a: actions[a] for a in agents if a in actions}  # the lost agents' are ignored, unchecked
            validate_actions(actions, agents, self.action_space, possible_agents=self._index,
                             strict=self.strict_actions and not self.black_death)
            arr = np.array([np.asarray(actions[a]) for a in agents]).astype(r.act.dtype)
        n = len(r.alive)
        full = len(live) == n
        sel = slice(None) if full else live  # every agent live (the common case): views, not gathers
        if full:
            r.act[...] = arr.reshape(r.act.shape)
        else:
            r.act[...] = 0
            r.act[live] = arr.reshape(len(live), *r.act.shape[1:])
        if self._native() is None:  # a copy step writes every row of these (seer.vector relies on it too)
            r.rew[:] = 0
            r.term[:] = r.trunc[:] = r.mask[:] = 0
            r.mask[live] = 1
        self._run_step()
        cnz = np.count_nonzero  # no Python-level wrapper, unlike ndarray.any/all: this runs every step
        if not (r.ended[0] or cnz(r.term) or cnz(r.trunc)) and cnz(r.alive) == len(live):
            # nobody left (most steps; nobody is revived): the live set, its rows and the flags stay as they are
            if self.black_death:
                return self._black_death_step(live, self._present, True, changed=False)
            return self._dicts(agents, None if full else live, self._none_done.copy(), self._none_done.copy())
        # of the agents live before the step (nobody is revived), those gone: not alive, terminated,
        # truncated, or the episode ended
        ended = bool(r.ended[0])
        term, trunc = r.term[sel], r.trunc[sel]
        gone = (r.alive[sel] == 0) | (term != 0) | (trunc != 0) | ended
        quiet = gone & (term == 0) & (trunc == 0)
        if quiet.any():  # an agent that left without saying how: truncated when the episode ended, else terminated
            (r.trunc if ended else r.term)[live[quiet]] = 1
            term, trunc = r.term[sel], r.trunc[sel]
        kept = term == 0
        alive = np.zeros(n, bool)
        alive[sel] = ~gone
        r.alive[:] = alive
        self._present[:] = False
        self._present[sel] = kept
        left = bool(gone.any())
        if self.black_death:  # lost: terminated (a quiet departure counts so, above); truncated ones stay active
            active = np.zeros(n, bool)
            active[sel] = kept
            return self._black_death_step(live, active, not gone.all(), changed=left)
        result = self._dicts(agents, None if full else live, dict(zip(agents, (term != 0).tolist())),
                             dict(zip(agents, (trunc != 0).tolist())))
        if left:
            self._set_live(alive)
        return result

    def _dicts(self, agents: list, live: np.ndarray | None, term: dict, trunc: dict) -> tuple:
        """The five dicts of the agents live before the step (``live``: their rows; None: every row)."""
        r, names = self.rows, self._none_done  # names: the live agents' names, in row order
        rew = r.rew if live is None else r.rew[live]
        return (self._obs_views.take(r.obs, agents, live), self._rewards.take(names, rew), term, trunc,
                self._infos.take(names))

    def _black_death_step(self, was_live: np.ndarray, active: np.ndarray, going_on: bool, changed: bool = True):
        """Every agent's dicts (SuperSuit's black_death_v3): a lost agent stays, with zero observation
        and reward from the step after its loss, until the episode ends; then the lost ones are
        terminated and the others truncated.  ``infos[agent]["active"]`` is False from its loss on."""
        r, names = self.rows, self.possible_agents
        if len(was_live) == len(names):
            obs, rew = r.obs.copy(), r.rew.copy()
        else:
            obs = np.zeros_like(r.obs)
            obs[was_live] = r.obs[was_live]
            rew = np.zeros(len(names))
            rew[was_live] = r.rew[was_live]
        over = not going_on
        if over:
            term, trunc = dict(zip(names, (~active).tolist())), dict(zip(names, active.tolist()))
        else:
            term, trunc = self._no_agent_done.copy(), self._no_agent_done.copy()
        if changed or over:
            self._set_live(active, over=over)
        return (dict(zip(names, obs)), dict(zip(names, rew.tolist())), term, trunc,
                {a: {"active": v} for a, v in zip(names, active.tolist())})

    def _run_step(self) -> None:
        native = self._native()
        if native is None:
            rc = self.step_rows() or 0
            if rc != 0:
                self._episode = f"failed (status {rc})"
                raise HandlerError(f"{type(self).__name__}.step_rows() failed with status {rc}", code=rc)
            return
        try:
            with self._runtime.native_step():  # timed for the tuner, which may resize the pool for the next step
                rc = self._call(1)  # SEER_COPY_STEP
                if rc != 0:
                    err = native.error_for(rc)
                    self._episode = f"failed ({str(err).partition(chr(10))[0]})"
                    raise err
        finally:
            if self.traced:  # the workers recorded into their buffers: move it into runtime.trace, as step() does
                self._runtime.collect_trace()

    def _set_live(self, alive: np.ndarray, over: bool | None = None) -> None:
        self._live = np.flatnonzero(alive)
        names = self.possible_agents
        self._names = [names[i] for i in self._live.tolist()]
        self._none_done = dict.fromkeys(self._names, False)  # copied for the flags of a step nobody leaves
        if self.black_death:  # every agent until the episode ends
            over = not self._names if over is None else over
            self.agents = [] if over else list(names)
        else:
            self.agents = self._names

    def _fast_actions(self, actions, agents):
        """Every live agent's action as one array when all are well formed
        (one numpy pass instead of a check per agent), else None."""
        if type(actions) is not dict:
            return None
        # a dict that also names agents that left (black_death, or a policy run on every possible agent)
        # takes this path too: their actions are ignored, as validate_actions would
        if len(actions) != len(agents) and not ((self.black_death or not self.strict_actions)
                                                and actions.keys() <= self._index.keys()):
            return None
        if self._box_bounds is not None:
            # arrays of the right shape: read from the dict by the agents' names in one C loop as float64
            # (exact), the bounds checked in it
            gathered = gather_in_box(actions, *self._box_bounds, not self._finite_bounds, names=agents)
            if gathered is not None:
                arr, inside = gathered
                return arr if inside else None
        try:
            # a dict built in agents' order (the usual policy loop): its values as they are
            vals = list(actions.values()) if list(actions) == agents else [actions[a] for a in agents]
        except KeyError:
            return None
        space, cnz = self.spec.action, np.count_nonzero  # count_nonzero: no Python-level wrapper, unlike all()
        try:
            arr = np.array(vals)  # no dtype=: a cast would hide complex or float ids
        except (ValueError, TypeError):
            return None
        if isinstance(space, spaces.Box):
            if arr.dtype.kind not in "fiu" or arr.shape != (len(agents), *space.shape):
                return None
            # NaN fails both bounds, and so does an infinity when the bounds are finite
            inside = cnz((arr >= space.low) & (arr <= space.high)) == arr.size
            if not inside or (not self._finite_bounds and cnz(np.isfinite(arr)) != arr.size):
                return None
            return arr
        if isinstance(space, spaces.Discrete) and arr.dtype.kind in "iu" and arr.shape == (len(agents),) \
                and set(map(type, vals)) <= _INT_TYPES:
            # a few ids: Python's min/max beat two numpy reductions
            lo, hi = (min(vals), max(vals)) if len(vals) <= 64 else (arr.min(), arr.max()) if arr.size else (0, 0)
            if arr.size and (lo < space.start or hi >= space.start + space.n):
                return None
            return arr
        return None

    # ---- rendering, lifecycle ------------------------------------------------------------------

    def render(self):
        self._check_open()
        if self.render_mode is None:
            gymnasium.logger.warn(f"render() called without render_mode; pass one of "
                                  f"{self.metadata.get('render_modes', [])}")
            return None
        return self.render_frame()

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError(f"this {self.metadata.get('name')} env is closed")

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self._runtime is not None:
                self._runtime.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - nothing to report to at collection
            pass

    def __repr__(self) -> str:
        # which step runs is known once the env has been reset (copy_step() may compile on first use)
        step = "native" if self._copy is not None else "python" if self._episode is not None else None
        return f"{self.metadata.get('name')}(agents={len(self.possible_agents)}{f', step={step}' if step else ''})"

    # ---- seer trace ----------------------------------------------------------------------------

    @classmethod
    def make_traced(cls, scenario=None, entities=None, workers=2):
        """The ``make_traced`` hook of ``seer trace NAME`` (see :mod:`seer.registry`):
        ``cls(scenario=..., <entities_arg>=..., workers=..., trace=True)``,
        reset with seed 0, stepped with seeded random actions (a new episode
        when one ends).  Returns ``(runtime, step, close)``; ``step()``
        returns the events the step ran.  Put ``make_traced =
        MyEnv.make_traced`` in the env's module."""
        kwargs: dict = {} if scenario is None else {"scenario": scenario}
        if entities is not None:
            if cls.entities_arg is None:
                raise InvalidArgumentError(f"{cls.__name__} takes no entity count (entities={entities!r})")
            if not isinstance(entities, numbers.Integral) or isinstance(entities, bool):
                raise InvalidArgumentError(f"entities={entities!r} is invalid: expected an integer")
            kwargs[cls.entities_arg] = int(entities)
        env = cls(**kwargs, workers=workers, trace=True)
        if env.runtime is None:
            env.close()
            raise InvalidArgumentError(f"{cls.__name__}({kwargs}) has no runtime to trace")
        episode = [0]
        env.reset(seed=0)
        for i, agent in enumerate(env.possible_agents):
            env.action_space(agent).seed(i)

        def step() -> int:
            if not env.agents:
                episode[0] += 1
                env.reset(seed=episode[0])
            before = env.runtime.events_total()
            env.step({a: env.action_space(a).sample() for a in env.agents})
            return env.runtime.events_total() - before

        return env.runtime, step, env.close
