"""The envs' rgb_array frames carry what a person needs to read them: a
border, the step and live count, targets, height, lost UAVs, a legend."""

import numpy as np
import pytest

from seer.envs import _render as D


def has(img, colour, region=np.s_[:, :]):
    return bool((img[region] == colour).all(axis=-1).any())


def test_font_draws_every_character_of_the_overlays():
    img = np.zeros((10, 400, 3), np.uint8)
    s = "STEP 12 T 1.2 S LIVE 30/32 UTILITY -1 +1 (10 HZ) 64 M: 5%"
    end = D.text(img, 1, 1, s, (255, 255, 255))
    assert end == 1 + len(s) * D.GLYPH_W
    ink = img[..., 0] > 0
    assert ink.sum() > 300 and not ink[:, end:].any()
    # distinct glyphs are distinct pictures (no character falls back to blank by mistake)
    glyphs = {ch: D._glyph(ch).tobytes() for ch in "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ.:/-+=%()"}
    assert len(set(glyphs.values())) == len(glyphs)


def test_uav_frame_is_readable():
    from seer.envs import uav_swarm_v0 as U

    env = U.parallel_env(scenario="small", render_mode="rgb_array", workers=1)
    env.reset(seed=0)
    first = env.render()
    for _ in range(5):
        env.step({a: np.zeros(3, np.float32) for a in env.agents})
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.shape == first.shape and frame.shape[1] == 512
    assert not np.array_equal(frame[:30], first[:30])  # the header's step and time moved on
    header = frame[:30]
    assert (header == 255).all(axis=-1).sum() > 200            # white text on the dark bar
    assert has(frame, (40, 40, 40))                             # the world's border
    assert has(frame, (220, 40, 40)) and has(frame, (40, 170, 40)) and has(frame, (40, 60, 220))  # clocks
    # UAVs drawn at their heights: disks of more than one size
    red = (frame == (220, 40, 40)).all(axis=-1)
    assert red[30:-44].sum() > 8 * 9                            # more than 3-pixel dots
    env.close()


def test_uav_frame_shows_lost_uavs_and_targets():
    from seer.envs import uav_swarm_v0 as U

    env = U.parallel_env(scenario="small", render_mode="rgb_array", workers=1)
    env.reset(seed=0)
    before = env.render()
    lost = 0
    for _ in range(60):  # full thrust straight up: everyone leaves the world
        if not env.agents:
            break
        _, _, term, _, _ = env.step({a: np.array([0, 0, 1], np.float32) for a in env.agents})
        lost += sum(term.values())
        if lost and env.agents:
            break
    assert lost > 0
    frame = env.render()
    map_ = np.s_[30:-44, :]
    assert has(frame, (70, 70, 70), map_) and not has(before, (70, 70, 70), map_)   # the "x" of a lost UAV
    env.close()


def test_wireless_frame_is_readable():
    from seer.envs import wireless_v0

    env = wireless_v0.parallel_env(scenario="small", workers=1, render_mode="rgb_array")
    env.reset(seed=2)
    for k in range(1, 6):
        env.step({a: 1 if k == 1 else 0 for a in env.agents})
    frame = env.render()
    assert frame.shape[:2] == (400, 400)
    assert (frame[:24] == 255).all(axis=-1).sum() > 200          # header text
    assert has(frame, (40, 40, 40))                              # border
    assert has(frame, (40, 110, 220))                            # connections
    footer = frame[-38:]
    assert has(footer, (215, 40, 40)) and has(footer, (40, 170, 60))   # the utility colour bar's ends
    env.close()


@pytest.mark.parametrize("radius", [1, 3, 8])
def test_disks_and_lines_clip_at_the_edges(radius):
    img = np.zeros((20, 30, 3), np.uint8)
    D.disks(img, [0, 19, 10], [0, 29, 15], radius, (1, 2, 3))
    D.lines(img, [-5], [-5], [40], [60], (4, 5, 6), dash=2)
    D.text(img, 15, 25, "CLIPPED", (7, 8, 9), scale=2)
    assert has(img, (1, 2, 3)) and has(img, (4, 5, 6))
