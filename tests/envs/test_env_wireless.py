"""wireless_v0: model functions vs mobile-env, full-buffer mode vs mobile-env's
multi-agent env, SEER vs the numpy reference, determinism, PettingZoo API,
rendering and input errors."""

from __future__ import annotations

import collections
import warnings

import numpy as np
import pytest

from seer._seer_c import lib
from seer.envs.wireless import cellular as wm
from seer.envs import wireless_v0
from seer.envs.wireless.reference import WirelessReference
from seer.envs.wireless.model import KIND_NAMES, WirelessSeer

me = pytest.importorskip("mobile_env")
from mobile_env.core.channels import Channel, OkumuraHata  # noqa: E402
from mobile_env.core.entities import BaseStation, UserEquipment  # noqa: E402
from mobile_env.core.schedules import ResourceFair  # noqa: E402
from mobile_env.core.utilities import BoundedLogUtility  # noqa: E402
from mobile_env.handlers.multi_agent import MComMAHandler  # noqa: E402
from mobile_env.scenarios.large import MComLarge  # noqa: E402
from mobile_env.scenarios.medium import MComMedium  # noqa: E402
from mobile_env.scenarios.small import MComSmall  # noqa: E402

MOBILE_ENV = {"small": MComSmall, "medium": MComMedium, "large": MComLarge}


def _bs(xy=(0, 0)):
    cfg = {k: v for k, v in MComSmall.default_config()["bs"].items()}
    return BaseStation(0, xy, **cfg)


def _ue(xy=(0.0, 0.0)):
    ue = UserEquipment(0, **MComSmall.default_config()["ue"])
    ue.x, ue.y = xy
    return ue


# ---- the vectorised model against mobile-env's classes -----------------------------------


def test_defaults_are_mobile_envs():
    cfg = MComSmall.default_config()
    assert cfg["bs"] == {"bw": wm.BS_DEFAULTS["bw"], "freq": wm.BS_DEFAULTS["freq"], "tx": wm.BS_DEFAULTS["tx"],
                         "height": wm.BS_DEFAULTS["height"]}
    assert cfg["ue"] == wm.UE_DEFAULTS
    up = cfg["utility_params"]
    assert (up["lower"], up["upper"], tuple(up["coeffs"])) == (wm.UTILITY_DEFAULTS["lower"],
                                                              wm.UTILITY_DEFAULTS["upper"],
                                                              wm.UTILITY_DEFAULTS["coeffs"])
    assert cfg["EP_MAX_TIME"] == wm.EP_MAX_TIME
    for name, cls in MOBILE_ENV.items():
        env = cls(config={"handler": MComMAHandler})
        sc = wm.SCENARIOS[name]
        assert (env.width, env.height) == (sc.width, sc.height)
        assert [(bs.x, bs.y) for bs in env.stations.values()] == list(sc.bs_positions)
        assert env.NUM_USERS == sc.num_ue
    xl = wm.SCENARIOS["xlarge"]
    assert (xl.num_bs, xl.num_ue) == (50, 500)
    assert len(set(xl.bs_positions)) == 50
    assert all(0 <= x < xl.width and 0 <= y < xl.height for x, y in xl.bs_positions)


def test_channel_functions_match_mobile_env():
    rng = np.random.default_rng(0)
    ch = OkumuraHata()
    ue_xy = rng.uniform(0, 300, (400, 2))
    bs_xy = rng.integers(0, 300, (400, 2))
    ue_xy[:5] = bs_xy[:5]  # distance 0 (mobile-env's EPSILON)
    d = wm.truncated_distance(ue_xy, bs_xy)[np.arange(400), np.arange(400)]
    loss = wm.okumura_hata(d)
    s = wm.snr(loss)
    rate = wm.data_rate(s)
    ok = wm.connectable(s)
    for i in range(400):
        bs, ue = _bs(tuple(bs_xy[i])), _ue(tuple(ue_xy[i]))
        assert d[i] == pytest.approx(bs.point.distance(ue.point), rel=1e-15, abs=0)
        assert loss[i] == pytest.approx(ch.power_loss(bs, ue), rel=1e-12)
        ref_snr = ch.snr(bs, ue)
        assert s[i] == pytest.approx(ref_snr, rel=1e-12)
        assert rate[i] == pytest.approx(Channel.datarate(bs, ue, ref_snr), rel=1e-12, abs=0)
        assert ok[i] == (ref_snr > ue.snr_threshold)
    assert ok.any() and not ok.all()  # both sides of the threshold were tested
    # the tables are the same functions at every integer squared distance
    snr_t, rate_t, ok_t = wm.channel_tables(5000)
    d2 = rng.integers(0, 5001, 300)
    np.testing.assert_array_equal(snr_t[d2], wm.snr(wm.okumura_hata(np.sqrt(d2))))
    np.testing.assert_array_equal(rate_t[d2], wm.data_rate(snr_t[d2]))
    np.testing.assert_array_equal(ok_t[d2], snr_t[d2] > wm.UE_DEFAULTS["snr_tr"])


def test_scheduler_and_utility_match_mobile_env():
    rng = np.random.default_rng(1)
    util = BoundedLogUtility(**{k: v for k, v in MComSmall.default_config()["utility_params"].items()
                                if k != "seed"})
    rates = np.concatenate([[0.0, -1.0, 1e-30, 1e-3, 1.0, 1e30], 10 ** rng.uniform(-4, 8, 300)])
    u = wm.utility(rates)
    sc = wm.scale_utility(u)
    for i, r in enumerate(rates):
        assert u[i] == pytest.approx(util.utility(r), rel=1e-12, abs=1e-15)
        assert sc[i] == pytest.approx(util.scale(util.utility(r)), rel=1e-12, abs=1e-15)
    np.testing.assert_allclose(wm.scaled_utility(rates), sc, rtol=0, atol=0)
    # resource-fair sharing
    sched = ResourceFair()
    max_rates = rng.uniform(0, 1e6, (4, 9))
    conn = rng.random((4, 9)) < 0.5
    conn[2] = False
    share = wm.resource_fair(max_rates, conn)
    for b in range(4):
        idx = np.flatnonzero(conn[b])
        expected = sched.share(None, list(max_rates[b, idx]))
        np.testing.assert_allclose(share[b, idx], expected, rtol=1e-15)
        assert np.all(share[b, ~conn[b]] == 0)


def test_counter_uniform_matches_the_runtime():
    ent = np.arange(-3, 40)
    for seed in (0, 1, 2**63 + 5, wm.RESET_SALT):
        ctr = np.arange(ent.size) * 7
        got = wm.counter_uniform(seed, ent, ctr)
        want = [lib.seer_counter_uniform(seed, int(e), int(c)) for e, c in zip(ent, ctr)]
        np.testing.assert_array_equal(got, want)


# ---- full-buffer mode against mobile-env's multi-agent env ---------------------------------


class _RecordingRng:
    def __init__(self, rng):
        self.rng, self.log = rng, []

    def uniform(self, lo, hi):
        v = self.rng.uniform(lo, hi)
        self.log.append(v)
        return v


def run_mobile_env(name: str, steps: int, seed: int):
    """Drive mobile-env's multi-agent env with random actions; return the layout
    (initial UE positions and every waypoint it drew), actions, obs and rewards."""
    env = MOBILE_ENV[name](config={"handler": MComMAHandler})
    obs0, _ = env.reset()
    ues = sorted(env.users.values(), key=lambda u: u.ue_id)
    pos = np.array([[u.x, u.y] for u in ues])
    rec = _RecordingRng(env.movement.rng)
    env.movement.rng = rec
    waypoints = collections.defaultdict(list)
    move = env.movement.move

    def recording_move(ue):
        n0 = len(rec.log)
        out = move(ue)
        if len(rec.log) > n0:
            waypoints[ue.ue_id].append(rec.log[n0:n0 + 2])
        return out

    env.movement.move = recording_move
    rng = np.random.default_rng(seed)
    actions, obs, rewards, n_conn = [], [obs0], [], []
    for _ in range(steps):
        a = {u.ue_id: int(rng.integers(0, env.NUM_STATIONS + 1)) for u in ues}
        o, r, _, _, _ = env.step(a)
        actions.append(a)
        obs.append(o)
        rewards.append(r)
        n_conn.append(sum(len(c) for c in env.connections.values()))
    layout = {"ue_positions": pos,
              "waypoints": [np.array(waypoints[u.ue_id]).reshape(-1, 2) for u in ues]}
    return layout, actions, obs, rewards, n_conn


@pytest.mark.parametrize("name", ["small", "medium", "large"])
def test_full_buffer_equals_mobile_env(name):
    steps = 100
    layout, actions, mobs, mrew, n_conn = run_mobile_env(name, steps, seed=3)
    assert max(n_conn) > 0 and len(set(n_conn)) > 3  # connections came and went
    env = wireless_v0.parallel_env(scenario=name, full_buffer=True, layout=layout, workers=1)
    obs, _ = env.reset(seed=123)  # the layout fixes everything the seed would draw
    compared = 0
    for k in range(steps):
        if mobs[k]:  # mobile-env returns no observation once the episode is over
            for uid, o in mobs[k].items():
                np.testing.assert_allclose(obs[f"ue_{uid}"], o, rtol=1e-6, atol=0, err_msg=f"obs step {k} ue {uid}")
                compared += 1
        obs, rew, term, trunc, _ = env.step({f"ue_{u}": a for u, a in actions[k].items()})
        assert set(rew) == {f"ue_{u}" for u in mrew[k]}
        for uid, r in mrew[k].items():
            assert rew[f"ue_{uid}"] == pytest.approx(r, rel=1e-6, abs=1e-12), f"reward step {k} ue {uid}"
    assert compared == steps * env.num_ue
    assert all(trunc.values()) and not env.agents  # EP_MAX_TIME
    env.close()


# ---- SEER against the time-stepped reference ---------------------------------------------


def _drive(core, seed, steps, num_bs, num_ue, act_seed=5):
    rng = np.random.default_rng(act_seed)
    obs = [core.reset(seed).copy()]
    rew = []
    for _ in range(steps):
        a = rng.integers(0, num_bs + 1, num_ue) * (rng.random(num_ue) < 0.3)
        o, r = core.step(a)
        obs.append(o.copy())
        rew.append(r.copy())
    return np.stack(obs), np.stack(rew)


@pytest.mark.parametrize("full_buffer", [False, True], ids=["events", "full_buffer"])
@pytest.mark.parametrize("name", ["small", "medium", "large"])
def test_seer_equals_reference(name, full_buffer):
    p = wm.make_params(name, full_buffer=full_buffer)
    steps = 500
    ref_obs, ref_rew = _drive(WirelessReference(p), 11, steps, p.num_bs, p.num_ue)
    assert np.isfinite(ref_rew).all() and (ref_obs[:, :, : p.num_bs] > 0).any()  # links were made
    for workers in (1, 2, 4):
        core = WirelessSeer(p, workers=workers)
        try:
            obs, rew = _drive(core, 11, steps, p.num_bs, p.num_ue)
        finally:
            core.close()
        assert obs.tobytes() == ref_obs.tobytes(), f"observations differ (workers={workers})"
        assert rew.tobytes() == ref_rew.tobytes(), f"rewards differ (workers={workers})"


def test_xlarge_seer_equals_reference_short():
    p = wm.make_params("xlarge")
    ref_obs, ref_rew = _drive(WirelessReference(p), 2, 20, p.num_bs, p.num_ue)
    core = WirelessSeer(p, workers=2)
    try:
        obs, rew = _drive(core, 2, 20, p.num_bs, p.num_ue)
    finally:
        core.close()
    assert obs.tobytes() == ref_obs.tobytes() and rew.tobytes() == ref_rew.tobytes()


def _env_run(steps=60, **kw):
    env = wireless_v0.parallel_env(**kw)
    rng = np.random.default_rng(9)
    out = []
    obs, _ = env.reset(seed=21)
    out.append(np.stack([obs[a] for a in env.possible_agents]))
    for _ in range(steps):
        acts = {a: int(rng.integers(0, env.num_bs + 1)) for a in env.agents}
        obs, rew, term, trunc, _ = env.step(acts)
        out.append(np.stack([obs[a] for a in env.possible_agents]))
        out.append(np.array([rew[a] for a in env.possible_agents]))
    env.close()
    return b"".join(x.tobytes() for x in out)


@pytest.mark.parametrize("full_buffer", [False, True], ids=["events", "full_buffer"])
def test_deterministic_for_any_worker_count(full_buffer):
    runs = {w: _env_run(scenario="medium", workers=w, full_buffer=full_buffer) for w in (1, 2, 3, 4)}
    assert len(set(runs.values())) == 1
    assert _env_run(scenario="medium", workers=1, full_buffer=full_buffer, engine="reference") == runs[1]
    # a different seed gives a different episode
    env = wireless_v0.parallel_env(scenario="medium", workers=1, full_buffer=full_buffer)
    a, _ = env.reset(seed=21)
    b, _ = env.reset(seed=22)
    assert not np.array_equal(a["ue_0"], b["ue_0"])
    c, _ = env.reset(seed=21)
    assert np.array_equal(a["ue_0"], c["ue_0"])
    env.close()


# ---- event-driven behaviour ----------------------------------------------------------------------


def test_event_driven_ues_run_at_their_own_times():
    p = wm.make_params("large", move_period=(2.0, 2.0), max_pause=30.0, mean_on=40.0, mean_off=40.0)
    core = WirelessSeer(p, workers=2, trace=True)
    try:
        core.reset(4)
        steps = 60
        for _ in range(steps):
            core.step(np.zeros(p.num_ue, np.int64))
        ev = core.runtime.trace.events
    finally:
        core.close()
    B, U = p.num_bs, p.num_ue
    move = ev[ev["kind"] == KIND_NAMES.index("move")]
    ue_ev = ev[ev["entity"] >= B]
    # every UE moves at its own period (2 s) or after a pause: never more often
    for e in range(B, B + U):
        t = np.sort(move["time"][move["entity"] == e])
        assert t.size <= steps // 2 + 1
        assert np.all(np.diff(t) >= 2.0)
        assert np.all((t * 256) % 4 == 1)  # own lattice: moves never tie with step boundaries
    # in most steps some UEs have nothing pending and handle no event at all
    idle_steps = 0
    for k in range(steps):
        busy = np.unique(ue_ev["entity"][(ue_ev["time"] >= k) & (ue_ev["time"] < k + 1)])
        idle_steps += busy.size < U
    assert idle_steps >= steps * 0.9
    # BSs only receive messages, at least one lookahead after they were sent
    assert set(np.unique(ev["kind"][ev["entity"] < B])) <= {4, 5, 6, 7}
    # full buffer: everyone moves every step
    pf = wm.make_params("large", full_buffer=True)
    full = WirelessSeer(pf, workers=1)
    try:
        full.reset(4)
        for _ in range(steps):
            full.step(np.zeros(U, np.int64))
        assert full.events > core.events
    finally:
        full.close()


def test_traffic_changes_resource_sharing():
    # Event-driven mode: UEs without data do not take a share of their BS.
    p = wm.make_params("small", num_ue=12, mean_on=3.0, mean_off=3.0)
    ref = WirelessReference(p)
    ref.reset(0)
    rng = np.random.default_rng(0)
    saw = False
    for _ in range(200):
        ref.step(rng.integers(0, p.num_bs + 1, p.num_ue) * (rng.random(p.num_ue) < 0.3))
        n_conn = ref.member.sum(1)
        n_on = (ref.member & ref.on_rep).sum(1)
        saw |= bool(np.any((n_on < n_conn) & (n_on > 0)))
        assert np.all(n_on <= n_conn)
    assert saw


# ---- PettingZoo API ----------------------------------------------------------------------------------


@pytest.mark.parametrize("full_buffer", [False, True], ids=["events", "full_buffer"])
def test_pettingzoo_api(full_buffer):
    from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = wireless_v0.parallel_env(scenario="small", full_buffer=full_buffer, workers=1)
        parallel_api_test(env, num_cycles=150)
        env.close()
        parallel_seed_test(lambda: wireless_v0.parallel_env(scenario="medium", full_buffer=full_buffer, workers=2))
        aec = wireless_v0.env(scenario="small", full_buffer=full_buffer, workers=1)
        api_test(aec, num_cycles=120)
        aec.close()


def test_spaces_and_episode_length():
    env = wireless_v0.parallel_env(scenario="large", workers=1)
    assert env.possible_agents == [f"ue_{i}" for i in range(30)]
    assert env.action_space("ue_0").n == 14
    assert env.observation_space("ue_3").shape == (53,)
    assert env.observation_space("ue_3").dtype == np.float32
    obs, infos = env.reset(seed=0)
    noop = {a: 0 for a in env.agents}
    for k in range(wm.EP_MAX_TIME):
        obs, rew, term, trunc, info = env.step(noop)
        assert not any(term.values())
        assert all(trunc.values()) == (k == wm.EP_MAX_TIME - 1)
        assert all(env.observation_space(a).contains(o) for a, o in obs.items())
    assert env.agents == []
    # a step after the end answers empty dicts, as PettingZoo's own envs do
    # (SuperSuit's black_death_v3 takes one such step)
    assert env.step(noop) == ({}, {}, {}, {}, {})
    assert env.step({}) == ({}, {}, {}, {}, {})
    env.close()
    short = wireless_v0.parallel_env(scenario="small", max_cycles=3, workers=1)
    short.reset(seed=1)
    for _ in range(3):
        _, _, _, trunc, _ = short.step({a: 0 for a in short.agents})
    assert all(trunc.values()) and short.agents == []
    short.close()


def test_observations_are_copies():
    env = wireless_v0.parallel_env(scenario="small", workers=1, full_buffer=True)
    obs0, _ = env.reset(seed=3)
    keep = obs0["ue_0"].copy()
    for _ in range(5):
        env.step({a: 1 for a in env.agents})
    np.testing.assert_array_equal(obs0["ue_0"], keep)
    env.close()


def test_layout_option_on_reset():
    p = wm.make_params("small")
    pos = np.array([[10.5, 20.5], [30.0, 40.0], [50.0, 60.0], [70.0, 80.0], [90.0, 100.0]])
    env = wireless_v0.parallel_env(scenario="small", workers=1, full_buffer=True)
    env.reset(seed=0, options={"layout": {"ue_positions": pos, "waypoints": [[[10.5, 25.0]]] * p.num_ue}})
    np.testing.assert_array_equal(env._core.ue_positions, pos)
    env.step({a: 0 for a in env.agents})
    np.testing.assert_allclose(env._core.ue_positions[0], [10.5, 22.0])
    env.reset(seed=0)  # the option held for one episode only
    assert not np.array_equal(env._core.ue_positions, pos)
    env.close()


# ---- rendering -----------------------------------------------------------------------------------


def test_render_rgb_array():
    env = wireless_v0.parallel_env(scenario="large", workers=1, render_mode="rgb_array")
    env.reset(seed=2)
    for k in range(1, 15):
        env.step({a: k % (env.num_bs + 1) for a in env.agents})
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3
    assert frame.shape[:2] == (400, 400)
    flat = frame.reshape(-1, 3)
    assert (flat == 0).all(axis=1).sum() >= env.num_bs * 40  # BS squares
    assert (flat == (40, 110, 220)).all(axis=1).any()  # connection links
    assert env._core.connections.any()
    env.close()
    none = wireless_v0.parallel_env(scenario="small", workers=1)
    none.reset(seed=0)
    with pytest.warns(UserWarning, match="render_mode"):
        assert none.render() is None
    none.close()
    early = wireless_v0.parallel_env(scenario="small", workers=1, render_mode="rgb_array")
    with pytest.raises(RuntimeError, match="reset"):
        early.render()
    early.close()


# ---- bad input ---------------------------------------------------------------------------------------


def test_bad_actions_name_agent_and_value():
    env = wireless_v0.parallel_env(scenario="small", workers=1)
    env.reset(seed=0)
    ok = {a: 0 for a in env.agents}
    with pytest.raises(ValueError, match=r"'ue_2'.*\b4\b"):
        env.step({**ok, "ue_2": 4})
    with pytest.raises(ValueError, match=r"'ue_1'.*-1"):
        env.step({**ok, "ue_1": -1})
    with pytest.raises(ValueError, match=r"'ue_0'.*1\.5"):
        env.step({**ok, "ue_0": 1.5})
    with pytest.raises(ValueError, match=r"'ue_3'.*True"):
        env.step({**ok, "ue_3": True})
    missing = dict(ok)
    del missing["ue_4"]
    with pytest.raises(ValueError, match="ue_4"):
        env.step(missing)
    with pytest.raises(ValueError, match="ue_99"):
        env.step({**ok, "ue_99": 0})
    with pytest.raises(TypeError):
        env.step([0] * 5)
    # still usable after the errors
    obs, rew, *_ = env.step({**ok, "ue_0": np.int64(2)})
    assert set(rew) == set(env.possible_agents)
    with pytest.raises(ValueError, match="ue_9"):
        env.action_space("ue_9")
    env.close()


@pytest.mark.parametrize("kwargs, pattern", [
    ({"scenario": "huge"}, r"scenario='huge'"),
    ({"scenario": 3}, r"scenario=3"),
    ({"num_ue": 0}, r"num_ue=0"),
    ({"num_ue": "many"}, r"num_ue='many'"),
    ({"workers": 0}, r"workers=0"),
    ({"workers": "many"}, r"workers='many'"),
    ({"max_cycles": 0}, r"max_cycles=0"),
    ({"render_mode": "human"}, r"render_mode='human'"),
    ({"engine": "gpu"}, r"engine='gpu'"),
    ({"full_buffer": "yes"}, r"full_buffer='yes'"),
    ({"mean_on": -1.0}, r"mean_on=-1.0"),
    ({"move_period": (0.3, 1.0)}, r"move_period\[0\]=0.3"),
    ({"layout": {"ue_positions": np.zeros((4, 2))}}, r"ue_positions.*\(5, 2\)"),
    ({"layout": {"ue_positions": np.full((5, 2), 500.0)}}, r"inside the map"),
    ({"layout": {"spawn": 1}}, r"unknown keys \['spawn'\]"),
])
def test_bad_arguments(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        wireless_v0.parallel_env(**{"workers": 1, **kwargs})


def test_bad_seed():
    env = wireless_v0.parallel_env(scenario="small", workers=1)
    with pytest.raises(ValueError, match=r"seed=-3"):
        env.reset(seed=-3)
    env.close()
