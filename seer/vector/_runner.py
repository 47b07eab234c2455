"""Steps and resets env copies into the row buffers.

The same code runs in the thread backend (one runner over every copy, called
from SEER's worker pool) and in each worker process of the process backend
(one runner over that worker's copies).  A runner never raises for a copy's
failure: it records a message (:class:`~seer.vector.messages.CopyFailed` or,
with ``restart``, :class:`~seer.vector.messages.CopyRestarted`) for the caller.
"""

from __future__ import annotations

import traceback
from typing import Any, Callable

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from seer.vector._layout import CopySpec, Layout, describe_copy, equal_spaces
from seer.vector.turns import TurnBasedEnv, as_parallel
from seer.vector.messages import CopyFailed, CopyRestarted, RowInfo

STEP, RESET, CALL, CLOSE = 1, 2, 3, 4
NATIVE_STEP, NATIVE_AUTORESET = 1, 2  # SEER_COPY_STEP, SEER_COPY_AUTORESET of seer/seer_types.h


def make_parallel(env_fn: Callable[[], Any]):
    """``env_fn()`` as a PettingZoo ParallelEnv (AEC envs go through
    :func:`seer.vector.turns.as_parallel`: ``aec_to_parallel`` when they are
    parallelizable, one turn per step otherwise).

    It runs inside :func:`seer.stpa.default_pool_limit` ``(1)``: a copy's own SEER runtime
    (``workers="auto"``) gets one worker, as the vector env's pool (threads,
    processes or shards) already spreads the copies over the cores; an
    ``env_fn`` that passes ``workers=`` explicitly gets what it asks for."""
    from seer.stpa import default_pool_limit

    with default_pool_limit(1):
        # the vector env checks moves against the rows' action masks itself (naming the row), and
        # check_action_masks=False there must reach the game
        env = as_parallel(env_fn(), check_masks=False)
    for attr in ("possible_agents", "reset", "step", "observation_space", "action_space"):
        if not hasattr(env, attr):
            raise TypeError(
                f"env_fn() returned {type(env).__name__}, which lacks {attr!r}: expected a PettingZoo ParallelEnv "
                f"or AECEnv"
            )
    return env


def restart_seed(last_seed: int | None, stride: int, restarts: int) -> int | None:
    """The seed a copy resets with after its ``restarts``-th restart: its last
    reset's seed plus ``stride * restarts`` (``stride``: the vector env's
    copy count, so no two copies' seeds meet), or None if it had none."""
    return None if last_seed is None else int(last_seed) + stride * restarts


def same_spaces(a: CopySpec, b: CopySpec) -> bool:
    memo: dict = {}
    return (a.possible_agents == b.possible_agents
            and all(equal_spaces(x, y, memo) for x, y in zip(a.obs_spaces, b.obs_spaces))
            and all(equal_spaces(x, y, memo) for x, y in zip(a.act_spaces, b.act_spaces)))


class CopyRunner:
    """Runs ops on some copies, writing rows of ``bufs`` (see Layout.fields)."""

    def __init__(self, layout: Layout, bufs: dict[str, np.ndarray], envs: dict[int, Any],
                 specs: dict[int, CopySpec], autoreset: AutoresetMode, env_fn=None, restart: bool = False,
                 seed_stride: int | None = None):
        self.L = layout
        self.b = bufs
        self.envs = envs
        self.specs = specs
        self.autoreset = autoreset
        self.env_fn = env_fn
        self.restart = restart
        self.seed_stride = layout.num_copies if seed_stride is None else int(seed_stride)
        A = layout.slots
        self.A = A
        self.slot = {c: {a: j for j, a in enumerate(layout.agents[c])} for c in envs}
        # copies with A agents: rows of all agents in order (the fast path)
        self.names = {c: list(layout.agents[c]) if len(layout.agents[c]) == A else None for c in envs}
        # rows written straight from the env's dicts: no padding, no action masks to split off
        self.plain = layout.obs_pads is None and not layout.mask_n
        self._last_rows: dict[int, tuple] = {}
        self.pending: dict[int, Any] = {}  # copy -> seed of its due NEXT_STEP reset
        self.last_seed: dict[int, int | None] = dict.fromkeys(envs)
        self.restarts: dict[int, int] = dict.fromkeys(envs, 0)
        self.any_restarts = False  # a copy was ever restarted (its rows flag it once)
        self.discrete = isinstance(layout.act_space, spaces.Discrete)
        self.msgs: list = []
        self.vec = NativeCopies(layout, bufs, envs)

    # ---- writing rows ------------------------------------------------------------------------

    def _split_masks(self, c: int, obs_d: dict) -> dict:
        """Write the action masks in ``obs_d`` (Dict observations) to copy
        ``c``'s ``action_mask`` rows (False for agents without one); the
        observation parts."""
        base, slot = c * self.A, self.slot[c]
        rows = self.b["action_mask"][base:base + self.A]
        if len(obs_d) < self.A:
            rows[...] = False
        n = rows.shape[1]
        out = {}
        for a, o in obs_d.items():
            m, j = o["action_mask"], slot[a]
            if type(m) is np.ndarray and m.shape == (n,):
                rows[j] = m  # the cast to bool is astype(bool)'s: nonzero is True
            else:
                m = np.asarray(m).astype(bool, copy=False).reshape(-1)
                rows[j] = False
                rows[j, :len(m)] = m
            out[a] = o["observation"]
        return out

    def _write_obs(self, c: int, obs_d: dict, out: np.ndarray) -> list[int]:
        if self.L.mask_n:
            obs_d = self._split_masks(c, obs_d)
        base, slot = c * self.A, self.slot[c]
        rows = out[base:base + self.A]
        if len(obs_d) < self.A:
            rows[...] = 0
        if not obs_d:
            return []
        idx = [slot[a] for a in obs_d]
        pads = self.L.obs_pads
        if pads is None:
            # row by row: a fancy write of the list would first stack the observations into a new array
            for j, o in zip(idx, obs_d.values()):
                rows[j] = o
        else:
            rows[...] = 0
            pc = pads[c]
            for j, o in zip(idx, obs_d.values()):
                p = pc[j]
                if p.region is None:
                    rows[j] = o
                else:
                    rows[j][p.region] = np.asarray(o).reshape(-1) if p.flat else o
        return idx

    def _rows(self, c: int, agents: list) -> np.ndarray:
        """Row indices of ``agents`` (cached for the copy's last agent list)."""
        last = self._last_rows.get(c)
        if last is not None and last[0] == agents:
            return last[1]
        base, slot = c * self.A, self.slot[c]
        idx = np.array([base + slot[a] for a in agents], np.intp)
        self._last_rows[c] = (list(agents), idx)
        return idx

    def _write_alive(self, c: int, env) -> None:
        base, slot = c * self.A, self.slot[c]
        alive = self.b["alive"][base:base + self.A]
        alive[:] = False
        for a in env.agents:
            alive[slot[a]] = True

    def _infos(self, c: int, info_d, final: bool = False) -> None:
        if not info_d or not any(info_d.values()):  # the usual case: every agent's info is {}
            return
        base, slot = c * self.A, self.slot[c]
        for agent, d in info_d.items():
            if d and agent in slot:
                self.msgs.append(RowInfo(base + slot[agent], d, final))

    def _clear(self, c: int) -> slice:
        b, base = self.b, c * self.A
        sl = slice(base, base + self.A)
        b["rew"][sl] = 0.0
        b["term"][sl] = False
        b["trunc"][sl] = False
        b["mask"][sl] = False
        if self.L.same_step:
            b["final_mask"][sl] = False
        b["ended"][c] = False
        b["restarted"][c] = False
        return sl

    # ---- actions -----------------------------------------------------------------------------

    def _actions(self, c: int, agents, full: bool = False) -> dict:
        base, slot = c * self.A, self.slot[c]
        block = self.b["act"][base:base + self.A]
        pads = self.L.act_pads
        if self.discrete:
            vals = block.tolist()
            if pads is None:
                if full:
                    return dict(zip(agents, vals))
                return {a: vals[slot[a]] for a in agents}
            out = {}
            for a in agents:
                j = slot[a]
                p, v = pads[c][j], vals[j]
                out[a] = v if v - p.start < p.n else p.start  # padded values mean action 0 (as in SuperSuit)
            return out
        block = block.copy()  # the env may keep the arrays it gets
        if pads is None or pads[c][0].region is None:
            if full:
                return dict(zip(agents, block))
            return {a: block[slot[a]] for a in agents}
        out = {}
        for a in agents:
            j = slot[a]
            p = pads[c][j]
            v = block[j][p.region]
            out[a] = v.reshape(p.shape) if p.flat else v
        return out

    # ---- ops ---------------------------------------------------------------------------------

    def native_op(self, c: int) -> int:
        """The native op for a step of copy ``c``: step, autoreset (a due
        NEXT_STEP reset without a chosen seed), or 0 (the PettingZoo path)."""
        if not self.vec.native[c]:
            return 0
        if c not in self.pending:
            return NATIVE_STEP
        return NATIVE_AUTORESET if self.pending[c] is None and self.vec.autoreset[c] else 0

    def step(self, c: int) -> None:
        op = self.native_op(c)
        if op:
            self.pending.pop(c, None)
            self.vec.run(c, op)
            self.native_done(c)
            return
        b, A = self.b, self.A
        env = self.envs[c]
        alive_before = None
        try:
            if c in self.pending:  # NEXT_STEP autoreset: this step only resets
                seed = self.pending.pop(c)
                self._clear(c)
                obs_d, info_d = env.reset(seed=seed)
                self._write_obs(c, obs_d, b["obs"])
                self._write_alive(c, env)
                self._infos(c, info_d)
                return
            agents = list(env.agents)
            base = c * A
            sl = slice(base, base + A)
            names = self.names[c]
            if not agents:
                self._clear(c)
                b["obs"][sl] = 0
                b["ended"][c] = True
                if self.autoreset == AutoresetMode.NEXT_STEP:
                    self.pending[c] = None
                return
            alive_before = b["alive"][sl].copy()
            acts = self._actions(c, agents, agents == names)
            obs_d, rew_d, term_d, trunc_d, info_d = env.step(acts)
            if (self.plain and list(obs_d) == agents and list(rew_d) == agents and list(term_d) == agents
                    and list(trunc_d) == agents):
                # the dicts hold the agents that acted, in row order
                if agents == names:  # every row: one slice write each
                    b["obs"][sl] = list(obs_d.values())
                    b["rew"][sl] = list(rew_d.values())
                    b["term"][sl] = list(term_d.values())
                    b["trunc"][sl] = list(trunc_d.values())
                    b["mask"][sl] = True
                else:  # some rows are dead or padding: zero them, then one indexed write each
                    idx = self._rows(c, agents)
                    for key, d, zero in (("obs", obs_d, 0), ("rew", rew_d, 0.0), ("term", term_d, False),
                                         ("trunc", trunc_d, False)):
                        arr = b[key]
                        arr[sl] = zero
                        arr[idx] = list(d.values())
                    m = b["mask"]
                    m[sl] = False
                    m[idx] = True
                b["ended"][c] = False
                b["restarted"][c] = False
                if self.L.same_step:
                    b["final_mask"][sl] = False
            else:
                self._clear(c)
                slot = self.slot[c]
                self._write_obs(c, obs_d, b["obs"])
                # row by row: a fancy write first builds index and value arrays from the lists
                for key, d in (("rew", rew_d), ("term", term_d), ("trunc", trunc_d)):
                    arr = b[key]
                    for a, v in d.items():
                        arr[base + slot[a]] = v
                # a turn-based env also reports the players whose game ended in another's turn
                m = b["mask"]
                for a in (env.reported if isinstance(env, TurnBasedEnv) else agents):
                    m[base + slot[a]] = True
            now = env.agents
            if now == names:
                b["alive"][sl] = True
            elif now != agents:  # someone left (else the live rows are unchanged)
                self._write_alive(c, env)
            if now:
                self._infos(c, info_d)
                return
            b["ended"][c] = True
            if self.autoreset == AutoresetMode.NEXT_STEP:
                self.pending[c] = None
                self._infos(c, info_d)
            elif self.autoreset == AutoresetMode.SAME_STEP:
                b["final_obs"][sl] = b["obs"][sl]
                fm = b["final_mask"][sl]
                slot = self.slot[c]
                fm[[slot[a] for a in obs_d]] = True
                self._infos(c, info_d, final=True)
                obs2, info2 = env.reset()
                self._write_obs(c, obs2, b["obs"])
                self._write_alive(c, env)
                self._infos(c, info2)
            else:
                self._infos(c, info_d)
        except Exception:
            self._failed(c, traceback.format_exc(), alive_before)

    def native_done(self, c: int) -> None:
        """After the native path stepped copy ``c`` (in C: rows, masks,
        ``ended``): what needs Python, i.e. its failure, or its episode end."""
        b = self.b
        rc = int(self.vec.status[c])
        if rc:
            try:
                raise self.vec.error_for(c, rc)
            except Exception:
                sl = slice(c * self.A, (c + 1) * self.A)
                self._failed(c, traceback.format_exc(), b["alive"][sl].copy())
            return
        b["restarted"][c] = False
        sl = slice(c * self.A, (c + 1) * self.A)
        if self.L.same_step:
            b["final_mask"][sl] = False
        if not b["ended"][c]:
            return
        try:
            if self.autoreset == AutoresetMode.NEXT_STEP:
                self.pending[c] = None
            elif self.autoreset == AutoresetMode.SAME_STEP:
                b["final_obs"][sl] = b["obs"][sl]
                b["final_mask"][sl] = b["mask"][sl]
                env = self.envs[c]
                obs2, info2 = env.reset()
                self._write_obs(c, obs2, b["obs"])
                self._write_alive(c, env)
                self._infos(c, info2)
        except Exception:
            self._failed(c, traceback.format_exc(), None)

    def reset(self, c: int, seed, options) -> None:
        b = self.b
        try:
            self.pending.pop(c, None)
            self._clear(c)
            obs_d, info_d = self.envs[c].reset(seed=seed, options=options)
            self.last_seed[c] = seed
            self._write_obs(c, obs_d, b["obs"])
            self._write_alive(c, self.envs[c])
            self._infos(c, info_d)
        except Exception:
            self.msgs.append(CopyFailed(c, traceback.format_exc()))

    def call(self, c: int, kind: str, name: str, args, kwargs):
        env = self.envs[c]
        try:
            self._sync_native(c)
            if kind == "set_attr":
                setattr(env, name, args)
                return None
            if kind == "render":
                return env.render()
            try:
                attr = getattr(env, name)
            except AttributeError:  # wrappers (aec_to_parallel, ...) may not forward it
                inner = getattr(env, "unwrapped", env)
                if inner is env:
                    raise
                attr = getattr(inner, name)
            if kind == "call" and callable(attr):
                return attr(*args, **kwargs)
            return attr
        except Exception as exc:
            self.msgs.append(CopyFailed(c, traceback.format_exc(), isinstance(exc, AttributeError)))
            return None

    def _sync_native(self, c: int) -> None:
        """Hand a native copy its rows (its ``NativeCopy.sync``) before the env is asked anything."""
        native = self.vec.copy_of(c) if self.vec is not None else None
        if native is not None and native.sync is not None:
            b, rows = self.b, slice(c * self.A, (c + 1) * self.A)
            views = [b[k][rows] for k in ("obs", "rew", "term", "trunc", "mask", "alive")]
            for v in views:
                v.flags.writeable = False
            native.sync(*views)

    def close(self) -> None:
        for env in self.envs.values():
            try:
                env.close()
            except Exception:
                pass

    # ---- failures ----------------------------------------------------------------------------

    def restart_seed(self, c: int):
        return restart_seed(self.last_seed.get(c), self.seed_stride, self.restarts[c])

    def _failed(self, c: int, tb: str, alive_before) -> None:
        if not self.restart:
            self.msgs.append(CopyFailed(c, tb))
            return
        try:
            old = self.envs.pop(c)
            self.vec.attach(c, None)
            try:
                old.close()
            except Exception:
                pass
            env = make_parallel(self.env_fn)
            spec = describe_copy(env)
            if not same_spaces(spec, self.specs[c]):
                raise ValueError(f"the restarted copy {c} has other agents or spaces than the original")
            self.envs[c] = env
            self.vec.attach(c, env)
            self.restarts[c] += 1
            self.restarted(c, alive_before)
            self.msgs.append(CopyRestarted(c, tb))
        except Exception:
            self.msgs.append(CopyFailed(c, tb + "\nRestarting the copy failed too:\n" + traceback.format_exc()))

    def restarted(self, c: int, alive_before) -> None:
        """Rows of a copy whose env was just recreated: the episode is cut
        (truncated for the agents that were live), and the copy resets as at
        an episode end in the current autoreset mode."""
        b = self.b
        sl = self._clear(c)
        b["obs"][sl] = 0
        b["alive"][sl] = False
        if alive_before is not None:
            b["trunc"][sl] = alive_before
        b["ended"][c] = True
        b["restarted"][c] = True
        self.any_restarts = True
        seed = self.restart_seed(c)
        if self.autoreset == AutoresetMode.NEXT_STEP:
            self.pending[c] = seed
        elif self.autoreset == AutoresetMode.SAME_STEP:
            obs_d, info_d = self.envs[c].reset(seed=seed)
            self._write_obs(c, obs_d, b["obs"])
            self._write_alive(c, self.envs[c])
            self._infos(c, info_d)


class ActionsRejected(Exception):
    """The native action check found a live row's action out of bounds or
    NaN; nothing was stepped (the vector env then names the row)."""


class NativeCopies:
    """seer.vector's native path (csrc/seer_vector.h): the copies whose
    whole step runs in C, straight from the action rows into the other rows.

    A copy qualifies when its env's class defines ``seer_native_copy()``
    (the protocol of :mod:`seer.vector.native`) returning a
    :class:`~seer.vector.native.NativeCopy` whose spec is the rows' own
    spaces, unpadded; the built-in envs do.  The others (and every reset
    the copy's C step leaves to Python) go through the PettingZoo API.
    """

    def __init__(self, layout: Layout, bufs: dict[str, np.ndarray], envs: dict[int, Any]):
        from seer._seer_c import ffi

        C = layout.num_copies
        self.native = np.zeros(C, bool)
        self.autoreset = np.zeros(C, bool)  # the C step runs SEER_COPY_AUTORESET
        self.status = np.zeros(C, np.int32)
        self._ok = layout.obs_pads is None and layout.act_pads is None
        self._layout = layout
        v = ffi.new("seer_vec_copies *")
        self._step = ffi.new("seer_copy_step_fn[]", C)
        self._env = ffi.new("void *[]", C)
        self._keep = [v, bufs]
        self._held: dict[int, Any] = {}  # each native copy's NativeCopy (keeps its code and struct alive)

        def ptr(ctype, arr):
            p = ffi.cast(ctype, ffi.from_buffer(arr, require_writable=False))
            self._keep.append(p)
            return p

        v.num_copies, v.slots = C, layout.slots
        v.act_row_bytes = bufs["act"][0].nbytes
        v.obs_row_bytes = bufs["obs"][0].nbytes
        v.act = ptr("uint8_t *", bufs["act"])
        v.obs = ptr("uint8_t *", bufs["obs"])
        v.rew = ptr("double *", bufs["rew"])
        for name in ("term", "trunc", "mask", "alive", "ended"):
            setattr(v, name, ptr("uint8_t *", bufs[name]))
        v.step, v.env = self._step, self._env
        v.status = ptr("int32_t *", self.status)
        self._order = np.zeros(C, np.int32)
        self._count = np.zeros(layout.slots + 2, np.int32)
        self._key = np.zeros(C, np.int32)
        v.order = ffi.NULL
        v.order_buf = ptr("int32_t *", self._order)
        v.count_buf = ptr("int32_t *", self._count)
        v.key_buf = ptr("int32_t *", self._key)
        v.act_kind = 0
        self.due = np.zeros(C, np.uint8)  # seer_vec_step_all's autoresets due
        self.due_ptr = ptr("uint8_t *", self.due)
        self.attention = ffi.new("int64_t *")
        self.native_all = False
        self.struct = v
        for c, env in envs.items():
            self.attach(c, env)

    def attach(self, c: int, env) -> None:
        """(Re)bind copy ``c`` to ``env`` (None: none)."""
        from seer._seer_c import ffi

        native = None
        method = getattr(type(env), "seer_native_copy", None) if env is not None else None
        if self._ok and method is not None:
            native = method(env)
        if native is not None:
            from seer.vector.native import NativeCopy

            if not isinstance(native, NativeCopy):
                raise TypeError(f"{type(env).__name__}.seer_native_copy() returned {native!r}: expected a "
                                f"seer.vector.NativeCopy or None")
            L = self._layout
            why = native.spec.matches(L.obs_space, L.act_space, L.slots)
            if why is None and list(native.spec.agents) != list(L.agents[c]):
                why = f"the copy's agents are {L.agents[c][:4]}..., the spec's {list(native.spec.agents)[:4]}..."
            if why is None and (native.spec.obs_row_bytes != self.struct.obs_row_bytes
                                or native.spec.act_row_bytes != self.struct.act_row_bytes):
                why = (f"the spec's rows take {native.spec.obs_row_bytes} + {native.spec.act_row_bytes} bytes, "
                       f"the buffers' {self.struct.obs_row_bytes} + {self.struct.act_row_bytes}")
            if why is not None:
                from seer.errors import InvalidArgumentError

                raise InvalidArgumentError(f"{type(env).__name__}.seer_native_copy() of copy {c} does not fit "
                                           f"its rows: {why}")
        if native is None:
            self._step[c], self._env[c] = ffi.NULL, ffi.NULL
            self._held.pop(c, None)
            self.native[c] = False
            self.autoreset[c] = False
        else:
            self._step[c] = ffi.cast("seer_copy_step_fn", native.step_address)
            self._env[c] = ffi.cast("void *", native.state_address)
            self._held[c] = (native, env)
            self.native[c] = True
            self.autoreset[c] = native.autoreset
        self.native_all = bool(self.native.all())

    def copy_of(self, c: int):
        """Copy ``c``'s :class:`~seer.vector.native.NativeCopy` while it steps natively, else None."""
        held = self._held.get(c) if self.native[c] else None
        return None if held is None else held[0]

    def error_for(self, c: int, status: int) -> BaseException:
        held = self._held.get(c)
        if held is None:
            return RuntimeError(f"the native step of copy {c} failed with status {status}")
        return held[0].error_for(status)

    def check_actions_natively(self) -> bool:
        """Let C check the live rows' actions against the rows' action space
        before a step (what the vector env checks in numpy otherwise); False
        when the rows' space has no C check."""
        from seer._seer_c import ffi
        from seer.vector.native import NativeSpec

        if not self._ok:  # padded rows: each agent's own bounds, checked in numpy
            return False
        try:
            spec = NativeSpec(agents=[f"slot{j}" for j in range(self._layout.slots)],
                              observation=self._layout.obs_space, action=self._layout.act_space)
        except (ValueError, TypeError):
            return False
        kind, lo, hi = spec.action_check()
        self._bounds = (np.ascontiguousarray(lo), np.ascontiguousarray(hi))
        v = self.struct
        v.act_dim = len(lo)
        v.act_lo = ffi.cast("double *", ffi.from_buffer(self._bounds[0]))
        v.act_hi = ffi.cast("double *", ffi.from_buffer(self._bounds[1]))
        v.act_kind = kind
        return True

    def actions_ok(self) -> bool:
        from seer._seer_c import lib

        return not self.struct.act_kind or bool(lib.seer_vec_actions_ok(self.struct))

    @property
    def native_any(self) -> bool:
        return bool(self.native.any())


    def run(self, c: int, op: int) -> None:
        from seer._seer_c import ffi, lib

        lib.seer_vec_run_copies(self.struct, ffi.new("int32_t[1]", [c]), ffi.new("int32_t[1]", [op]), 1)
