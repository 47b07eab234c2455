"""A Ray shard that died (`ShardRestarts`, a part of `RayBackend`): telling a dead or restarted actor from a call's result, then failing with a WorkerError or, with ``restart_failed``, taking Ray's restart on and truncating the shard's rows."""

from __future__ import annotations

import time
import warnings

import numpy as np
from gymnasium.vector import AutoresetMode

from seer.errors import ActorRestartedError, WorkerError
from seer.vector._runner import restart_seed, same_spaces
from seer.vector.messages import CopyRestarted
from seer.vector.ray.lane import LaneCall

#: What the driver was doing with a shard, as its errors say it; only a step or a rollout is restarted.
STEP, RESET, CALL, ROLLOUT = "stepping", "resetting", "calling into", "rolling out"


class _ShardDied(Exception):
    def __init__(self, s, exc, result=None):
        super().__init__(s, exc)
        self.s, self.exc, self.result = s, exc, result


class ShardRestarts:
    """How :class:`~seer.vector.ray.driver.RayBackend` notices and handles a dead shard actor."""

    def _get(self, s: int, ref, result=None):
        """The result of shard ``s``'s call (``result``: already fetched), less
        its incarnation token.  A dead actor -- or one that Ray restarted
        since the last call -- raises _ShardDied; a call that raised becomes
        a WorkerError (the vector env closes)."""
        ray = self.ray
        try:
            if result is None:
                t0 = time.monotonic()
                if isinstance(ref, LaneCall):
                    ok, result = self._lane_get(s, ref, t0)
                    if not ok:
                        self._failed(s, result)
                else:
                    try:
                        result = ray.get(ref, timeout=self.worker_timeout)
                    except ray.exceptions.GetTimeoutError:
                        self._unanswered([s], time.monotonic() - t0, f"running its {self._what(s)}")
            if result[0] != self.tokens[s]:
                raise _ShardDied(s, ActorRestartedError(
                    "its process died between two calls and Ray restarted it (its env copies are new)"), result[1:])
            return result[1:]
        except ray.exceptions.RayActorError as exc:
            raise _ShardDied(s, exc) from exc
        except ray.exceptions.RayError as exc:  # the call raised (a broken local pool), or Ray failed
            self._failed(s, exc)

    def _failed(self, s: int, exc) -> None:
        """Shard ``s``'s call raised ``exc`` (or its traceback): close, and raise a WorkerError."""
        what = f"{self.describe(s)} failed while running {self._what(s)}"
        self.broken = what
        self.close()
        raise WorkerError(f"{what}; the vector env is closed:\n{exc}") from None

    def _lane_get(self, s: int, call: LaneCall, t0: float):
        """(True, the result) of shard ``s``'s lane call (as ``ray.get`` gives
        a Ray call's), or (False, why) when the call raised or the lane
        failed; waits at most ``worker_timeout``; a shard process that ended
        raises what Ray says of it."""
        lane = self.lane
        lane.wait([call], 1, self.worker_timeout)
        state = lane.state(call)
        if state == "busy":
            self._check()  # close() from another thread ended the wait
            self._unanswered([s], time.monotonic() - t0, f"running its {self._what(s)}")
        if state == "dead":
            raise _ShardDied(s, self._death(s))
        if state == "exited":
            try:
                why = self.ray.get(self.actors[s].lane_error.remote(), timeout=self.startup_timeout)
            except Exception as exc:
                why = repr(exc)
            return False, f"its shared-memory lane stopped serving calls:\n{why}"
        return lane.reply(call, lambda: self.ray.get(self.actors[s].lane_reply.remote(call.seq),
                                                     timeout=self.startup_timeout))

    def _death(self, s: int) -> BaseException:
        """What Ray says of shard ``s``, whose process ended during a lane
        call: the dead actor's error, or (Ray restarted it) that it restarted."""
        ray = self.ray
        self.lane.drop(s)
        try:
            token = ray.get(self.actors[s].token_of.remote(), timeout=self.startup_timeout)
        except ray.exceptions.RayActorError as exc:
            if not isinstance(exc, ray.exceptions.ActorUnavailableError):
                return exc
        except Exception:
            pass
        else:
            if token == self.tokens[s]:
                return ray.exceptions.RayActorError(f"shard {s}'s process {self.shard_info[s].get('pid')} ended but "
                                                    f"its actor still answers")
        return ActorRestartedError("its process died during the call and Ray restarted it (its env copies are new)")

    def _wait_all(self, refs: list, shards: list[int], op: str = STEP) -> None:
        """Wait for the calls ``refs`` of ``shards``, at most ``worker_timeout``.
        Shards that did not answer are unresponsive: in a step with
        ``restart_failed`` their actors are killed (Ray restarts them and the
        step's gather takes the restart on, as for a shard that died);
        otherwise :meth:`_unanswered` raises."""
        if self.worker_timeout is None or not refs:
            return
        t0 = time.monotonic()
        done = set(self._ready(shards, refs, len(refs), self.worker_timeout))
        if len(done) == len(shards):
            return
        late = [s for s in shards if s not in done]
        if not (self.restart_failed and op == STEP):
            self._unanswered(late, time.monotonic() - t0, "stepping")
        for s in late:
            warnings.warn(f"{self.describe(s)} did not answer within worker_timeout={self.worker_timeout:g} s and was "
                          f"killed; Ray restarts it with new env copies", RuntimeWarning, stacklevel=4)
            try:
                self.ray.kill(self.actors[s], no_restart=False)
            except Exception:  # already gone: the gather sees it dead
                pass

    def _ready(self, shards: list[int], refs: list, need: int, timeout: float | None) -> list[int]:
        """Those of ``shards`` whose calls ``refs`` (Ray's or the lane's) are
        answered (or whose lane shard died), once ``need`` of them are or
        ``timeout`` seconds have passed (None: no limit)."""
        ray, lane = self.ray, self.lane
        calls = {s: r for s, r in zip(shards, refs) if isinstance(r, LaneCall)}
        remote = {s: r for s, r in zip(shards, refs) if not isinstance(r, LaneCall)}
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            self._check()  # close() from another thread ends the wait
            done = {c.s for c in calls.values() if lane.state(c) != "busy"}
            if remote:
                ready, _ = ray.wait(list(remote.values()), num_returns=len(remote), timeout=0)
                ready = set(ready)
                done |= {s for s, r in remote.items() if r in ready}
            left = None if deadline is None else deadline - time.monotonic()
            if len(done) >= need or (left is not None and left <= 0):
                return [s for s in shards if s in done]
            busy_calls = [c for s, c in calls.items() if s not in done]
            busy_refs = [r for s, r in remote.items() if s not in done]
            if not busy_refs:
                lane.wait(busy_calls, need - len(done), left)
            elif not busy_calls:
                ray.wait(busy_refs, num_returns=min(need - len(done), len(busy_refs)), timeout=left)
            else:  # both kinds (a restarted shard's reset goes through Ray): look at both in turn
                lane.wait(busy_calls, 1, 0.005 if left is None else min(left, 0.005))

    def _unanswered(self, shards: list[int], waited: float, doing: str) -> None:
        """Shards that did not answer within ``worker_timeout``: raise a
        WorkerError naming them; the vector env can no longer be used (its
        actors are left as they are, for inspection, until close())."""
        who = "; ".join(self.describe(s) for s in shards)
        what = (f"{who} did not answer within worker_timeout={self.worker_timeout:g} s while {doing} (the driver "
                f"waited {waited:.2f} s)")
        self.broken = what
        self.inflight = {}  # nothing more is gathered: every later call raises ClosedError
        raise WorkerError(f"{what}.  The vector env can no longer be used: close() it, which kills its shard actors. "
                          f" Pass worker_timeout= to seer.vector.make to wait longer (None: forever)"
                          + ("" if doing != STEP else ", or restart_failed=True to kill and restart shards that hang "
                                                      "in a step"))

    def _call_restarting(self, s: int, method: str, *args):
        """Call ``method`` of shard ``s``'s actor while Ray may still be
        restarting it: a call made then fails with ActorUnavailableError ("the
        actor is restarting"), which is transient, so it is made again until
        ``startup_timeout`` has passed.  A dead actor (no restarts left)
        raises RayActorError at once."""
        ray = self.ray
        deadline = time.monotonic() + self.startup_timeout
        while True:
            ref = getattr(self.actors[s], method).remote(*args)
            ready, _ = ray.wait([ref], timeout=max(deadline - time.monotonic(), 0.0))
            if not ready:
                raise TimeoutError(f"not back within startup_timeout={self.startup_timeout:g} s")
            try:
                return ray.get(ref)
            except ray.exceptions.ActorUnavailableError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)

    def _adopt(self, s: int, info: dict) -> None:
        """Take shard ``s``'s new incarnation (Ray restarted its actor) on."""
        self.shard_info[s] = info
        self.tokens[s] = info["token"]
        self._policy_keys.pop(s, None)
        self._step_m[s] = self.actors[s].step
        if s in self.direct:
            self.direct.discard(s)
            lane = self.lane
            if lane is not None:
                lane.drop(s)
            token = self._call_restarting(s, "attach", self._boxes["bufs"].name, self._row_spec(s),
                                          None if lane is None else lane.config(s))
            if token == info["token"]:
                self.direct.add(s)
                if lane is not None:
                    lane.adopt(s, info["pid"])

    def _died(self, d: _ShardDied, op: str) -> list:
        """Shard ``d.s``'s actor died during ``op``: raise WorkerError (and
        close), or restart it (restart_failed, step/rollout) and return the
        restart messages of its copies."""
        s = d.s
        what = f"{self.describe(s)} died while {op} {self._what(s)}"
        first = str(d.exc).strip().splitlines()[0] if str(d.exc).strip() else type(d.exc).__name__
        if not (self.restart_failed and op in (STEP, ROLLOUT)):
            self.broken = what
            self.close()
            raise WorkerError(f"{what} ({type(d.exc).__name__}: {first}); the vector env is closed"
                              + ("" if self.restart_failed else " (pass restart_failed=True to restart failed "
                                 "shards and go on)")) from d.exc
        try:  # Ray restarts the actor (max_restarts): its constructor recreates the copies
            info = self._call_restarting(s, "start")
            c0, c1 = self.copy_ranges[s]
            if len(info["specs"]) != c1 - c0 or not all(same_spaces(a, b) for a, b in
                                                        zip(info["specs"], self.specs[c0:c1])):
                raise ValueError("its new env copies have other agents or spaces than the original ones")
            self._adopt(s, info)
        except BaseException as exc:
            self.broken = f"{what}, and restarting it failed: {exc}"
            self.close()
            raise WorkerError(f"{what}; restarting it failed: {exc}") from exc
        b, L = self.bufs, self.layout
        (c0, c1), (r0, r1) = self.copy_ranges[s], self.row_ranges[s]
        C = L.num_copies
        seeds = []
        for c in range(c0, c1):
            seeds.append(restart_seed(self.last_seeds[c], C, self.restart_counts[c] + 1))
        sl = slice(r0, r1)
        alive_before = self._alive_before[sl].copy() if self._alive_before is not None else b["alive"][sl].copy()
        for n in ("obs", "rew", "term", "mask", "alive"):
            b[n][sl] = 0
        b["trunc"][sl] = alive_before
        b["ended"][c0:c1] = True
        b["restarted"][c0:c1] = True
        if L.same_step:
            b["final_mask"][sl] = False
        seeded = np.array([x is not None for x in seeds])
        seed_arr = np.array([0 if x is None else x for x in seeds], np.int64)
        tb = (f"{what} ({type(d.exc).__name__}: {first}); Ray restarted the actor (pid {info['pid']} on "
              f"{info['node']}) and its copies start new episodes")
        msgs = [CopyRestarted(c, tb) for c in range(c0, c1)]
        if self.autoreset == AutoresetMode.NEXT_STEP:
            self.pending[s] = (seeded, seed_arr)
        elif self.autoreset == AutoresetMode.SAME_STEP:
            try:
                state, rmsgs = self._get(s, self.actors[s].reset.remote(np.ones(c1 - c0, bool), seeded, seed_arr,
                                                                         None))
            except _ShardDied as again:
                self.broken = f"{what}, and it died again while resetting"
                self.close()
                raise WorkerError(f"{self.broken}") from again.exc
            names = self._names
            b["obs"][sl] = state[names.index("obs")]
            b["alive"][sl] = state[names.index("alive")]
            msgs += self._remap(s, rmsgs)
        for c in range(c0, c1):
            self.restart_counts[c] += 1
        return msgs
