"""Many agents per core: SEER's vector env on uav_swarm_v0 against JaxMARL's
jit-compiled MPE simple_spread, in agent-steps per second, in one run.

    python bench/bench_jaxmarl.py --jax-python /tmp/peervenv/bin/python   # writes bench/results/jaxmarl.{json,md}
    python bench/bench_jaxmarl.py --quick                                  # a short smoke run (no files unless --out)

Indicative only: the models differ (uav_swarm_v0 is SEER's event-driven UAV
swarm, MPE simple_spread is JaxMARL's dense all-pairs particle world); both
count one agent-step per live agent per env step.

Method.  SEER runs in this process: ``seer.vector.make(lambda:
uav_swarm_v0.parallel_env(scenario=S), num_copies=C, backend="thread",
workers=W)`` for every (copies, workers) configuration, stepped with uniform
random actions drawn up front (64 batches, cycled) outside the timer;
agent-steps are the live rows stepped (``infos["mask"]``).  JaxMARL runs in a
subprocess started with ``--jax-python`` (an interpreter where ``jaxmarl`` and
a CPU ``jax`` import; without it, or when the import fails, the peer is
skipped with a note), so nothing in the project depends on it: a
``jax.jit``-compiled ``jax.lax.scan`` of ``--jax-steps`` steps over
``--jax-envs`` envs vectorized with ``jax.vmap``, random actions drawn inside
the jit, compiled (and run once) before any timing, each call finished with
``block_until_ready``; agent-steps = envs x agents x steps per call.  Every
round measures the machine's parallel capacity, then times JaxMARL at N=32,
every SEER 'default' (32 UAVs per copy) configuration, then (with
``--large``) JaxMARL at N=256 and every SEER 'large' (256 UAVs) configuration,
each for ``--seconds`` (JaxMARL: whole rollout calls until ``--seconds`` have
passed, at least one).  Scores are medians over rounds; ratios are against
JaxMARL's median at N=32 (and, for the 256-agent rows, at N=256).  The
headline is the best SEER 'default' configuration's median over JaxMARL's
median at N=32; the per-round ratio (best SEER configuration of a round over
that round's JaxMARL) is reported beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ACTION_POOL = 64  # random action batches drawn up front and cycled
PROTO = "@@PEER "  # prefix of the JaxMARL worker's protocol lines (jaxmarl prints to stdout on import)


# ---- the JaxMARL worker (runs under --jax-python; imports nothing from seer) ------------------------


def _say(obj) -> None:
    sys.stdout.write(PROTO + json.dumps(obj) + "\n")
    sys.stdout.flush()


def jax_worker(num_agents: int, num_envs: int, steps: int) -> None:
    """Build and compile the rollout, say ``ready``, then answer ``run SECONDS``
    lines on stdin with one timed round each, until ``quit`` or EOF."""
    try:
        import importlib.metadata

        import jax
        import jaxmarl
    except Exception as exc:  # noqa: BLE001 - any failure means: no peer
        _say({"error": f"jaxmarl is not importable under {sys.executable}: {type(exc).__name__}: {exc}"})
        return

    env = jaxmarl.make("MPE_simple_spread_v3", num_agents=num_agents, num_landmarks=num_agents)
    agents = list(env.agents)
    n_act = env.action_space(agents[0]).n

    def one_step(state, key):
        k_act, k_step = jax.random.split(key)
        acts = jax.random.randint(k_act, (num_agents,), 0, n_act)
        obs, state, rew, dones, info = env.step(k_step, state, {a: acts[i] for i, a in enumerate(agents)})
        return state, rew[agents[0]]  # autoresets when the episode ends (max_steps=25)

    @jax.jit
    def rollout(states, key):
        def body(carry, _):
            states, key = carry
            key, sub = jax.random.split(key)
            states, rew = jax.vmap(one_step)(states, jax.random.split(sub, num_envs))
            return (states, key), rew.sum()

        (states, key), rews = jax.lax.scan(body, (states, key), None, length=steps)
        return states, key, rews

    key = jax.random.PRNGKey(0)
    key, sub = jax.random.split(key)
    _, states = jax.jit(jax.vmap(env.reset))(jax.random.split(sub, num_envs))
    t0 = time.perf_counter()
    states, key, rews = jax.block_until_ready(rollout(states, key))  # compile + one run, untimed
    compile_s = time.perf_counter() - t0

    def version(name):
        try:
            return importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            return None

    _say({"ready": True, "compile_and_first_call_s": compile_s, "python": sys.version.split()[0],
          "executable": sys.executable, "jax": jax.__version__, "jaxlib": version("jaxlib"),
          "jaxmarl": version("jaxmarl"), "devices": [str(d) for d in jax.devices()],
          "env": "MPE_simple_spread_v3", "num_agents": num_agents, "num_landmarks": num_agents,
          "num_envs": num_envs, "steps_per_call": steps, "max_steps": int(env.max_steps)})
    per_call = num_envs * num_agents * steps
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        seconds = float(cmd[1])
        calls, t0 = [], time.perf_counter()
        while True:
            t = time.perf_counter()
            states, key, rews = rollout(states, key)
            jax.block_until_ready(rews)
            calls.append(time.perf_counter() - t)
            if time.perf_counter() - t0 >= seconds:
                break
        total = sum(calls)
        _say({"calls": len(calls), "seconds": total, "agent_steps": per_call * len(calls),
              "agent_steps_per_s": per_call * len(calls) / total, "call_s": calls})


class JaxPeer:
    """A JaxMARL worker process: started and compiled up front, timed on demand."""

    def __init__(self, python: str, num_agents: int, num_envs: int, steps: int, timeout: float = 600.0):
        self.name = f"jaxmarl N={num_agents}"
        self.proc = subprocess.Popen(
            [python, os.path.abspath(__file__), "--jax-worker", str(num_agents), str(num_envs), str(steps)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.info = self._read(timeout)
        if "error" in self.info:
            self.close()
            raise RuntimeError(self.info["error"])

    def _read(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        for line in self.proc.stdout:
            if line.startswith(PROTO):
                return json.loads(line[len(PROTO):])
            if time.monotonic() > deadline:
                break
        self.proc.poll()
        raise RuntimeError(f"{self.name}: the worker ended without an answer (exit status {self.proc.returncode})")

    def round(self, seconds: float) -> dict:
        self.proc.stdin.write(f"run {seconds}\n")
        self.proc.stdin.flush()
        return self._read(600.0)

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


# ---- SEER (in this process) ---------------------------------------------------------------------


class SeerCandidate:
    def __init__(self, scenario: str, copies: int, workers: int, seed: int = 0):
        import numpy as np

        import seer.envs.uav_swarm_v0
        import seer.vector

        self.name = f"seer {scenario} x{copies} thread w{workers}"
        self.scenario, self.copies, self.workers = scenario, copies, workers
        self.envs = seer.vector.make(lambda: seer.envs.uav_swarm_v0.parallel_env(scenario=scenario),
                                     num_copies=copies, backend="thread", workers=workers)
        self.agents_per_copy = self.envs.num_envs // copies
        self.envs.reset(seed=seed)
        rng = np.random.default_rng(seed)
        space = self.envs.action_space
        self.pool = [rng.uniform(space.low, space.high, space.shape).astype(space.dtype) for _ in range(ACTION_POOL)]
        self.k = 0

    def step(self) -> int:
        self.k += 1
        *_, infos = self.envs.step(self.pool[self.k % ACTION_POOL])
        return int(infos["mask"].sum())

    def round(self, seconds: float) -> dict:
        n, steps, t0 = 0, 0, time.perf_counter()
        while True:
            n += self.step()
            steps += 1
            dt = time.perf_counter() - t0
            if dt >= seconds:
                break
        return {"agent_steps": n, "vector_steps": steps, "seconds": dt, "agent_steps_per_s": n / dt}

    def warm(self, seconds: float) -> None:
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            self.step()

    def close(self) -> None:
        self.envs.close()


# ---- the run --------------------------------------------------------------------------------------


def wait_for_load(limit: float, max_wait: float) -> dict:
    """Sleep in 60 s steps (at most ``max_wait``) while the 1-minute load is above ``limit``."""
    before, waited = os.getloadavg(), 0.0
    while os.getloadavg()[0] > limit and waited < max_wait:
        print(f"  1-minute load {os.getloadavg()[0]:.2f} > {limit}: waiting 60 s ({waited:.0f} s so far)", flush=True)
        time.sleep(60)
        waited += 60
    return {"limit": limit, "loadavg_before_wait": before, "waited_s": waited, "loadavg_after_wait": os.getloadavg()}


def median(xs):
    import numpy as np

    return float(np.median(xs)) if len(xs) else float("nan")


def run(args) -> dict:
    from seer.bench.common import machine_info, parallel_capacity

    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
    except ImportError:
        pass
    command = "python " + " ".join([os.path.relpath(os.path.abspath(__file__), os.path.dirname(HERE))]
                                   + list(args.argv))
    res: dict = {"command": command, "started": time.strftime("%Y-%m-%d %H:%M:%S %z"),
                 "method": __doc__.split("Method.  ", 1)[1].split("\n\n")[0].replace("\n", " "),
                 "note": "indicative: different models (SEER uav_swarm_v0 vs JaxMARL MPE simple_spread)"}
    res["load_wait"] = wait_for_load(args.wait_load, args.wait_max) if args.wait_load else None
    res["machine"] = machine_info(packages=["numpy", "cffi"])

    # the peers first: their compile happens before any timing
    peers: dict[str, JaxPeer] = {}
    res["jaxmarl"] = {}
    plan = [("32", 32, args.jax_envs)] + ([("256", 256, args.jax_large_envs)] if args.large else [])
    python = args.jax_python or sys.executable
    for key, agents, envs in plan:
        print(f"starting JaxMARL N={agents} x{envs} envs under {python} (compiling) ...", flush=True)
        try:
            peers[key] = JaxPeer(python, agents, envs, args.jax_steps)
            res["jaxmarl"][key] = peers[key].info
            print(f"  compiled + first call in {peers[key].info['compile_and_first_call_s']:.1f} s "
                  f"(jax {peers[key].info['jax']}, jaxmarl {peers[key].info['jaxmarl']})", flush=True)
        except RuntimeError as exc:
            msg = (f"JaxMARL peer skipped: {exc}. Pass --jax-python with an interpreter where jaxmarl and "
                   f"jax[cpu] are installed (e.g. python -m venv --system-site-packages /tmp/peervenv && "
                   f"/tmp/peervenv/bin/pip install jaxmarl==0.2.0 'jax[cpu]').")
            print(msg, flush=True)
            res["jaxmarl"] = {"skipped": msg}
            for p in peers.values():
                p.close()
            peers = {}
            break

    groups = [("default", args.copies, "32")] + ([("large", args.large_copies, "256")] if args.large else [])
    seer_cands: dict[str, SeerCandidate] = {}
    try:
        for scenario, copies_list, _ in groups:
            for copies in copies_list:
                for w in args.workers:
                    c = SeerCandidate(scenario, copies, w)
                    seer_cands[c.name] = c
        for c in seer_cands.values():
            c.warm(args.warmup)
        rounds: list[dict] = []
        for r in range(args.rounds):
            rnd: dict = {"capacity": parallel_capacity(), "loadavg": os.getloadavg(), "scores": {}}
            for scenario, copies_list, pkey in groups:
                if pkey in peers:  # alternate: the peer, then SEER
                    out = peers[pkey].round(args.seconds)
                    rnd["scores"][peers[pkey].name] = out["agent_steps_per_s"]
                    rnd.setdefault("jaxmarl_calls", {})[peers[pkey].name] = out["call_s"]
                for c in seer_cands.values():
                    if c.scenario == scenario:
                        rnd["scores"][c.name] = c.round(args.seconds)["agent_steps_per_s"]
            rounds.append(rnd)
            print(f"  round {r + 1}/{args.rounds} (capacity {rnd['capacity']:.2f}, load {rnd['loadavg'][0]:.2f}): "
                  + ", ".join(f"{k} {v:,.0f}" for k, v in rnd["scores"].items()), flush=True)
    finally:
        for c in seer_cands.values():
            c.close()
        for p in peers.values():
            p.close()

    res["rounds"] = rounds
    res["capacity_per_round"] = [r["capacity"] for r in rounds]
    res["loadavg_per_round"] = [r["loadavg"] for r in rounds]
    res["loadavg_end"] = os.getloadavg()
    names = list(rounds[0]["scores"]) if rounds else []
    scores = {k: [r["scores"][k] for r in rounds] for k in names}
    med = {k: median(v) for k, v in scores.items()}
    j32, j256 = med.get("jaxmarl N=32"), med.get("jaxmarl N=256")
    table = []
    for k in names:
        c = seer_cands.get(k)
        agents = c.agents_per_copy if c else int(k.split("N=")[1])
        row = {"name": k, "agents_per_env": agents, "median": med[k], "rounds": scores[k],
               "vs_jaxmarl_n32": med[k] / j32 if j32 else None,
               "vs_jaxmarl_n256": (med[k] / j256 if j256 and agents == 256 else None)}
        if c:
            row.update(system="SEER", scenario=c.scenario, copies=c.copies, workers=c.workers,
                       agents=c.copies * c.agents_per_copy)
        else:
            info = res["jaxmarl"][k.split("N=")[1]]
            row.update(system="JaxMARL", envs=info["num_envs"], agents=info["num_envs"] * info["num_agents"])
        table.append(row)
    res["table"] = table
    res["agent_steps_per_s"] = {k: {"median": med[k], "rounds": scores[k]} for k in names}
    default_rows = [t for t in table if t["system"] == "SEER" and t["scenario"] == "default"]
    if default_rows:
        best = max(default_rows, key=lambda t: t["median"])
        res["best_seer_default"] = best["name"]
        head = {"best_seer": best["name"], "best_seer_median": best["median"], "target": 2.0}
        if j32:
            per_round = [max(r["scores"][t["name"]] for t in default_rows) / r["scores"]["jaxmarl N=32"]
                         for r in rounds]
            head.update(jaxmarl_n32_median=j32, ratio=best["median"] / j32, ratio_per_round=per_round,
                        ratio_per_round_median=median(per_round), met=best["median"] / j32 >= 2.0)
        res["headline"] = head
    large_rows = [t for t in table if t["system"] == "SEER" and t["scenario"] == "large"]
    if large_rows and j256:
        best = max(large_rows, key=lambda t: t["median"])
        res["headline_256"] = {"best_seer": best["name"], "best_seer_median": best["median"],
                               "jaxmarl_n256_median": j256, "ratio": best["median"] / j256}
    return res


def fmt_ratio(x):
    return "" if x is None else f"{x:.2f}x"


def markdown(res: dict) -> str:
    from seer.bench.common import markdown_table

    m = res["machine"]
    lines = ["# Many agents per core: SEER vs JaxMARL (CPU)", "",
             "**Indicative: different models.** SEER steps `uav_swarm_v0` (its event-driven UAV swarm); JaxMARL "
             "steps MPE `simple_spread` (dense all-pairs particles). Both are counted in agent-steps (one live "
             "agent stepped once); neither number says the other system would be as fast on the other model.", "",
             f"`{res['command']}` at {res['started']}.", "",
             f"Machine: {m['cpu']}, {m['usable_cores']} usable cores, Python {m['python']}, numpy {m['numpy']}, "
             f"seer {m['seer']} (commit {m['git_commit']}), kernel {m['kernel']}.", ""]
    lw = res.get("load_wait")
    if lw:
        lines.append(f"Load average before the run {tuple(round(x, 2) for x in lw['loadavg_before_wait'])}; waited "
                     f"{lw['waited_s']:.0f} s for the 1-minute load to fall under {lw['limit']} "
                     f"({'reached' if lw['loadavg_after_wait'][0] <= lw['limit'] else 'not reached'}: "
                     f"{tuple(round(x, 2) for x in lw['loadavg_after_wait'])}).")
    lines.append(f"Load average per round: {', '.join(f'{r[0]:.2f}' for r in res['loadavg_per_round'])}; at the end "
                 f"{tuple(round(x, 2) for x in res['loadavg_end'])}. Parallel capacity per round (cores two busy "
                 f"processes get, of 2): {', '.join(f'{c:.2f}' for c in res['capacity_per_round'])}.")
    lines.append("")
    jm = res["jaxmarl"]
    if "skipped" in jm:
        lines += [jm["skipped"], ""]
    else:
        for k, info in jm.items():
            lines.append(f"- JaxMARL N={k}: `jaxmarl.make(\"{info['env']}\", num_agents={info['num_agents']}, "
                         f"num_landmarks={info['num_landmarks']})`, `jax.vmap` over {info['num_envs']} envs, "
                         f"`jax.lax.scan` of {info['steps_per_call']} steps under `jax.jit` (episode max_steps "
                         f"{info['max_steps']}, autoreset inside `env.step`); jax {info['jax']}, jaxlib "
                         f"{info['jaxlib']}, jaxmarl {info['jaxmarl']}, {', '.join(info['devices'])}, Python "
                         f"{info['python']}; compile + first call {info['compile_and_first_call_s']:.1f} s (untimed).")
        lines.append("")
    h = res.get("headline")
    if h and "ratio" in h:
        lines.append(f"**Headline (32 agents per env):** best SEER configuration `{h['best_seer']}` "
                     f"{h['best_seer_median']:,.0f} agent-steps/s vs JaxMARL N=32 {h['jaxmarl_n32_median']:,.0f}: "
                     f"**{h['ratio']:.2f}x** (target >= 2x: {'met' if h['met'] else 'missed'}; per-round ratio "
                     f"median {h['ratio_per_round_median']:.2f}x, rounds "
                     f"{', '.join(f'{x:.2f}' for x in h['ratio_per_round'])}).")
    if h and "ratio" in h and res.get("rounds"):
        caps = res["capacity_per_round"]
        i = max(range(len(caps)), key=caps.__getitem__)
        lines.append(f"In the round with the most free cores (round {i + 1}, capacity {caps[i]:.2f}) the ratio was "
                     f"{h['ratio_per_round'][i]:.2f}x"
                     + (": JaxMARL gains more from a quiet second core than SEER's best configuration does, so on "
                        "an idle machine expect the lower end of the per-round ratios."
                        if h["ratio_per_round"][i] < h["ratio_per_round_median"] else "."))
    h2 = res.get("headline_256")
    if h2:
        lines.append(f"**256 agents per env:** best SEER `{h2['best_seer']}` {h2['best_seer_median']:,.0f} vs "
                     f"JaxMARL N=256 {h2['jaxmarl_n256_median']:,.0f}: **{h2['ratio']:.2f}x**.")
    lines += ["", "Agent-steps/s, median of rounds (ratios of medians):", ""]
    rows = []
    for t in res["table"]:
        cfg = (f"{t['copies']} copies x {t['agents_per_env']} UAVs, workers={t['workers']}" if t["system"] == "SEER"
               else f"{t['envs']} envs x {t['agents_per_env']} agents, 25-step scan")
        model = f"uav_swarm_v0 '{t['scenario']}'" if t["system"] == "SEER" else "MPE simple_spread_v3"
        rows.append([t["system"], model, cfg, t["agents"], f"{t['median']:,.0f}",
                     " / ".join(f"{x / 1e3:,.0f}k" for x in t["rounds"]),
                     fmt_ratio(t["vs_jaxmarl_n32"]), fmt_ratio(t["vs_jaxmarl_n256"])])
    lines.append(markdown_table(["system", "model", "configuration", "agents", "agent-steps/s (median)", "rounds",
                                 "vs JaxMARL N=32", "vs JaxMARL N=256"], rows))
    lines += ["", "Method. " + res["method"], ""]
    return "\n".join(lines)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--jax-worker"]:
        jax_worker(int(argv[1]), int(argv[2]), int(argv[3]))
        return None
    ints = lambda s: [int(x) for x in s.split(",")]  # noqa: E731
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jax-python", default=None,
                   help="interpreter with jaxmarl and jax[cpu] for the peer (default: this one; skipped with a "
                        "note if jaxmarl does not import)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--seconds", type=float, default=1.5, help="length of one timed round per candidate")
    p.add_argument("--warmup", type=float, default=0.3)
    p.add_argument("--copies", type=ints, default=[8, 16, 32, 64], help="SEER 'default' copies (32 UAVs each)")
    p.add_argument("--workers", type=ints, default=[1, 2], help="SEER thread-backend pool sizes")
    p.add_argument("--large", action="store_true", help="add 256 agents per env: SEER 'large', JaxMARL N=256")
    p.add_argument("--large-copies", type=ints, default=[1, 2, 4, 8])
    p.add_argument("--jax-envs", type=int, default=256)
    p.add_argument("--jax-large-envs", type=int, default=16)
    p.add_argument("--jax-steps", type=int, default=25)
    p.add_argument("--wait-load", type=float, default=None,
                   help="before starting, wait (60 s at a time) while the 1-minute load exceeds this")
    p.add_argument("--wait-max", type=float, default=900.0)
    p.add_argument("--quick", action="store_true", help="1 round of 0.3 s, copies 8 and 16, no files")
    p.add_argument("--out", default=None, help="results folder (default bench/results unless --quick)")
    p.add_argument("--render", action="store_true", help="only rewrite jaxmarl.md from jaxmarl.json")
    args = p.parse_args(argv)
    if args.render:
        from seer.bench.common import rerender

        return rerender(args.out or os.path.join(HERE, "results"), "jaxmarl", markdown)
    args.argv = argv
    if args.quick:
        args.rounds, args.seconds, args.warmup, args.copies, args.large_copies = 1, 0.3, 0.1, [8, 16], [1, 2]
        args.jax_envs, args.jax_large_envs = 64, 4
    out_dir = args.out or (None if args.quick else os.path.join(HERE, "results"))
    res = run(args)
    md = markdown(res)
    print(md)
    if out_dir:
        from seer.bench.common import write_report

        os.makedirs(out_dir, exist_ok=True)
        write_report(res, os.path.join(out_dir, "jaxmarl.json"), os.path.join(out_dir, "jaxmarl.md"), md + "\n", indent=1)
    return res


if __name__ == "__main__":
    main()
