"""Write the example frames of uav_swarm_v0 and wireless_v0 that the envs guide (docs/guide/envs.md) shows.

    python bench/render_frames.py                # -> bench/results/frames/*.png

numpy and zlib only (the PNG is written by hand), so it runs wherever SEER does.
"""

from __future__ import annotations

import argparse
import pathlib
import struct
import zlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]


def write_png(path, img: np.ndarray) -> None:
    """An 8-bit RGB PNG of ``img`` (H, W, 3) uint8."""
    img = np.ascontiguousarray(img, np.uint8)
    h, w, _ = img.shape
    raw = b"".join(b"\x00" + img[r].tobytes() for r in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    png += chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    pathlib.Path(path).write_bytes(png)


def uav_frame(scenario="default", steps=40, seed=0) -> np.ndarray:
    """A swarm a few seconds in, steered towards its targets with noise (so
    some UAVs are lost on the way)."""
    from seer.envs import uav_swarm_v0

    env = uav_swarm_v0.parallel_env(scenario=scenario, render_mode="rgb_array", workers=1)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        if not env.agents:
            break
        # obs entries 6..8: target minus position over 20 m
        obs, *_ = env.step({a: np.clip(2.0 * obs[a][6:9] + rng.normal(0, 0.8, 3), -1, 1).astype(np.float32)
                            for a in env.agents})
    frame = env.render()
    env.close()
    return frame


def wireless_frame(scenario="large", steps=15, seed=2) -> np.ndarray:
    """A network whose UEs connected to a BS in the first steps, then held."""
    from seer.envs import wireless_v0

    env = wireless_v0.parallel_env(scenario=scenario, workers=1, render_mode="rgb_array")
    env.reset(seed=seed)
    for k in range(1, steps):
        env.step({a: (k + i) % (env.num_bs + 1) if k < 4 else 0 for i, a in enumerate(env.agents)})
    frame = env.render()
    env.close()
    return frame


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default=str(ROOT / "bench" / "results" / "frames"))
    args = p.parse_args(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    write_png(out / "uav_swarm_v0.png", uav_frame())
    write_png(out / "wireless_v0.png", wireless_frame())
    print(f"wrote {out / 'uav_swarm_v0.png'} and {out / 'wireless_v0.png'}")


if __name__ == "__main__":
    main()
