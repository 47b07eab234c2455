"""The process backend's worker side: a worker process's loop, and the one dispatch of ops that it and the parent's inline share both run."""

from __future__ import annotations

import faulthandler
import multiprocessing as mp
import multiprocessing.connection as mpc
import os
import pickle
import traceback

import numpy as np

from seer._seer_c import ffi, lib
from seer.vector._layout import describe_copy
from seer.vector._runner import CALL, CLOSE, RESET, STEP, CopyRunner, make_parallel
from seer.vector.process.protocol import (CMD, CMDLEN, CUR, DONE, DONE_MAC, GEN, GEN_MAC, MAC, MSGLEN, PBELL, REQ,
                                          REQ_MAC, REQDONE, REQDONE_MAC, WBELL, WORKER_SLICE_S, _Ctl, _Sealer,
                                          _Shared, _tag)


class ForgedFlag(RuntimeError):
    """A flag in shared memory that this env's parent did not publish: the
    worker leaves, and the parent does not restart it."""


def call_share(runner: CopyRunner, share: list[int], payload) -> list:
    """A CALL op on the copies of ``share`` that the payload selects; one result each, in ``share`` order."""
    kind, name, args, kwargs, values, copies = payload
    value_of = dict(zip(copies, values)) if kind == "set_attr" else {}
    chosen = set(copies)
    return [runner.call(c, kind, name, value_of[c] if kind == "set_attr" else args, kwargs)
            for c in share if c in chosen]




def run_share(runner: CopyRunner, share: list[int], op: int, payload=None, cur: np.ndarray | None = None):
    """Run op ``op`` (STEP, RESET or CALL) on the copies of ``share`` (rows
    and seeds already in ``runner``'s buffers): its messages, or for CALL
    (results, messages).  The one dispatch of ops, for a worker process and
    for the parent's inline share alike.  ``cur`` (a worker's CUR slot)
    gets 1 + the copy being stepped or reset, so that the parent can name it
    should this process die in it (a segfault in an env's C code)."""
    runner.msgs = []
    if cur is None:
        cur = np.zeros(1, np.int64)
    if op == STEP:
        for c in share:
            cur[0] = c + 1
            runner.step(c)
        cur[0] = 0
        return runner.msgs
    if op == RESET:
        b = runner.b
        sel, seeds, seeded = b["select"], b["seeds"], b["seeded"]
        for c in share:
            if sel[c]:
                cur[0] = c + 1
                runner.reset(c, int(seeds[c]) if seeded[c] else None, payload)
        cur[0] = 0
        return runner.msgs
    return (call_share(runner, share, payload), runner.msgs)

def _parent_gone(parent_sentinel, parent_pid: int) -> bool:
    if parent_sentinel is not None:  # readable once the parent is gone, zombie or not
        return bool(mpc.wait([parent_sentinel], timeout=0))
    try:
        os.kill(parent_pid, 0)
    except ProcessLookupError:
        return True
    return False


def _wait_work(flags: _Ctl, at, val, last_gen: int, line: int, last_req: int, parent_pid: int, yield_s: float,
               parent_sentinel=None) -> tuple[int, int] | None:
    """Wait until the parent publishes an op for everyone (GEN) or an
    env-pool step for this worker (its REQ); (GEN, REQ), or None once the
    parent is gone.  ``at`` / ``val``: int64_t[2] arrays, made once."""
    at[0], at[1], val[0], val[1], base = GEN, line + REQ, last_gen, last_req, flags.base
    spin = yield_s
    while True:
        got = lib.seer_flags_wait(base, at, val, 2, 1, lib.SEER_FLAGS_NE, line + WBELL, -1, spin, WORKER_SLICE_S,
                                  ffi.NULL)
        if got > 0:
            return lib.seer_flag_load(base + GEN), lib.seer_flag_load(base + line + REQ)
        spin = 0.0  # idle (a learner update): sleep until rung
        if _parent_gone(parent_sentinel, parent_pid):
            return None


def _worker_entry(w: int, conn, fn_bytes: bytes, copies: list[int], parent_pid: int, key: bytes, opts: dict,
                  err=None):
    """A worker process: create its copies, then serve ops until CLOSE.
    ``err``: the pipe for its stderr, which the parent reads (the last lines
    go into the WorkerError should this process die)."""
    if err is not None:
        os.dup2(err.fileno(), 2)
        err.close()
    # A fatal signal in C code: SEER's report (the event a handler was handling, the native copy)
    # after faulthandler's Python stack, both on stderr, which the parent quotes.
    lib.seer_crash_report_install()
    faulthandler.enable()
    shared = runner = None
    try:
        conn.send(("started",))  # from here on its stderr is the parent's to show
        try:
            env_fn = pickle.loads(fn_bytes)
            envs = {}
            for c in copies:
                envs[c] = make_parallel(env_fn)
            specs = {c: describe_copy(e) for c, e in envs.items()}
        except BaseException:
            conn.send(("error", traceback.format_exc()))
            return
        conn.send(("specs", specs))
        msg = conn.recv()
        if msg[0] != "layout":
            return
        _, layout, shm_name, workers, cmd_bytes, msg_bytes, gen, restart_info = msg
        shared = _Shared(layout, workers, cmd_bytes, msg_bytes, name=shm_name)
        runner = CopyRunner(layout, shared.bufs, envs, specs, opts["autoreset"], env_fn, opts["restart"],
                            opts["seed_stride"])
        if restart_info is not None:
            try:
                for c in copies:
                    runner.last_seed[c] = restart_info["last_seed"][c]
                    runner.restarts[c] = restart_info["restarts"][c]
                    runner.restarted(c, restart_info["alive_before"][c])
            except BaseException:
                conn.send(("error", traceback.format_exc()))
                return
        conn.send(("ready", runner.msgs, [bool(runner.vec.native[c]) for c in copies]))
        _serve(w, conn, shared, runner, copies, gen, parent_pid, key, opts)
    except BaseException as exc:
        try:
            conn.send(("fatal", traceback.format_exc(), "forged" if isinstance(exc, ForgedFlag) else ""))
        except Exception:
            pass
        raise
    finally:
        if runner is not None:
            runner.close()
        runner = None
        if shared is not None:
            shared.release(unlink=False)


def _serve(w, conn, shared: _Shared, runner: CopyRunner, copies, gen, parent_pid, key: bytes, opts):
    ctl, flags = shared.ctl, shared.flags
    mine = shared.line(w)
    region = shared.msg[w]
    cur = ctl[mine + CUR:mine + CUR + 1]
    yield_s = opts["yield_s"]
    parent = mp.parent_process()
    sentinel = getattr(parent, "sentinel", None) if parent is not None else None
    last, last_req = gen, flags.load(mine + REQ)

    sealer = _Sealer(key)
    publish = flags.publisher([PBELL])
    wait_at, wait_val = ffi.new("int64_t[2]"), ffi.new("int64_t[2]")

    def reply(out, flag: int, value: int) -> None:
        blob = sealer.seal(_tag(b"msg", w, flag, value), out) if out else b""
        over = len(blob) > len(region)
        if blob and not over:
            region[:len(blob)] = np.frombuffer(blob, np.uint8)
        n = -1 if over else max(len(blob) - MAC, 0)
        ctl[mine + MSGLEN] = n  # payload of the flag below, as is its MAC
        at = mine + (DONE_MAC if flag == DONE else REQDONE_MAC)
        ctl[at:at + 2] = sealer.flag_mac(b"msg", w, flag, value, n)
        publish(mine + flag, value)
        if over:  # after the flag: the parent reads the pipe once it sees it
            conn.send_bytes(blob)

    def forged(what: str, why: str) -> ForgedFlag:
        return ForgedFlag(f"worker {w} refused {what}: {why}, so it was not published by this vector env's parent "
                            f"process (another process of this user wrote to the shared block); nothing of it was "
                            f"unpickled and nothing was run")

    def command(g: int, n: int):
        if n == 0:
            return None
        if n > 0:
            if n > len(shared.cmd) - MAC:
                raise RuntimeError(f"worker {w} refused the command of op {g}: its length {n} is beyond the "
                                   f"command area ({len(shared.cmd) - MAC} bytes); nothing of it was unpickled")
            blob = shared.cmd[:MAC + n].tobytes()
        elif n == -1:
            blob = conn.recv_bytes()
        else:
            raise RuntimeError(f"worker {w} refused the command of op {g}: length {n} is invalid (expected >= -1)")
        try:
            return sealer.unseal(_tag(b"cmd", 0, GEN, g), blob)
        except ValueError as exc:
            raise RuntimeError(f"worker {w} refused the command of op {g} in shared memory ({exc}): it was not "
                               f"written by this vector env's parent process; nothing of it was unpickled") from None

    while True:
        got = _wait_work(flags, wait_at, wait_val, last, mine, last_req, parent_pid, yield_s, sentinel)
        if got is None:  # the parent is gone
            return
        g, r = got
        if g == last:  # an env-pool step of this worker's copies
            # the request flag is authenticated like the payloads: a bump by
            # anyone but the parent (or a replay) is refused, not stepped
            what = f"the env-pool step request REQ = {r} of its line in shared memory"
            if r != last_req + 1:
                raise forged(what, f"it is not the next request ({last_req + 1})")
            if not sealer.flag_ok(ctl[mine + REQ_MAC:mine + REQ_MAC + 2], b"cmd", w, REQ, r, 0):
                raise forged(what, "its MAC does not match")
            last_req = r
            reply(run_share(runner, copies, STEP, cur=cur), REQDONE, r)
            continue
        cmd, n = int(ctl[CMD]), int(ctl[CMDLEN])
        what = f"the command of op {g} in shared memory (flags GEN = {g}, CMD = {cmd}, CMDLEN = {n})"
        if g != last + 1:
            raise forged(what, f"it is not the next op ({last + 1})")
        if not sealer.flag_ok(ctl[GEN_MAC:GEN_MAC + 2], b"cmd", 0, GEN, g, n * 16 + cmd):
            raise forged(what, "their MAC does not match")
        last = g
        if cmd == CLOSE:
            reply(None, DONE, g)
            return
        payload = command(g, n)
        if cmd not in (STEP, RESET, CALL):
            raise RuntimeError(f"worker {w} got unknown command {cmd}")
        reply(run_share(runner, copies, cmd, payload, cur=cur), DONE, g)
