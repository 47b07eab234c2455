"""Compile csrc/tests/stress_queue.c against csrc/seer_queue.c and run it.

The C program runs producer and consumer pthreads on the queue with no Python
in between and checks, with canaries, that no event is lost or duplicated,
that every entity's events come out in (time, source, seq) order and that an
entity never has two holders (see the comment at the top of the C file).
The sanitizer builds of the same program run from csrc/tests/sanitize.sh.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]  # tests/core/ -> the repo
CSRC = ROOT / "csrc"


def _compiler() -> str | None:
    for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


CC = _compiler()


@pytest.fixture(scope="module")
def stress_binary(tmp_path_factory):
    if CC is None:
        pytest.skip("no C compiler found (cc, gcc, clang or $CC)")
    out = tmp_path_factory.mktemp("stress") / "stress_queue"
    cmd = [
        CC, "-std=c11", "-O2", "-g", "-pthread", "-Wall", f"-I{CSRC}", f"-I{CSRC / 'include'}",
        str(CSRC / "tests" / "stress_queue.c"), str(CSRC / "seer_queue.c"), "-lm", "-o", str(out),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"compiling the stress test failed:\n{' '.join(cmd)}\n{proc.stderr}"
    return out


@pytest.mark.parametrize(
    "producers, consumers, entities, per_producer, rounds",
    [
        (3, 3, 509, 500_000, 2),  # 3 M events, mixed entities and hot lanes
        (4, 4, 8, 150_000, 2),  # 1.2 M events, 8 threads on 8 lanes: heavy contention, oversubscribed
        (1, 3, 64, 400_000, 2),  # 0.8 M events, one producer feeding many consumers
        (4, 4, 1021, 150_000, 2),  # 1.2 M events, oversubscribed, many lanes, pool often full
    ],
)
def test_stress_queue(stress_binary, producers, consumers, entities, per_producer, rounds):
    args = [str(a) for a in (producers, consumers, entities, per_producer, 0, rounds)]
    proc = subprocess.run([str(stress_binary), *args], capture_output=True, text=True, timeout=300)
    report = f"stress_queue {' '.join(args)}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert proc.returncode == 0, report
    m = re.search(r"^stress_queue: OK events=(\d+) producers=(\d+) consumers=(\d+)", proc.stdout, re.M)
    assert m, report
    assert int(m.group(1)) == producers * per_producer * rounds, report
    assert (int(m.group(2)), int(m.group(3))) == (producers, consumers), report
    assert "FAIL" not in proc.stdout + proc.stderr, report


def test_stress_queue_rejects_bad_arguments(stress_binary):
    proc = subprocess.run([str(stress_binary), "2", "2", "3", "10"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "entities >= 4" in proc.stderr
    proc = subprocess.run([str(stress_binary), "x"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "bad argument" in proc.stderr


@pytest.fixture(scope="module")
def runtime_stress_binary(tmp_path_factory):
    """csrc/tests/stress_runtime.c: the worker pool over the queue, no Python."""
    if CC is None:
        pytest.skip("no C compiler found (cc, gcc, clang or $CC)")
    out = tmp_path_factory.mktemp("stress") / "stress_runtime"
    sources = [CSRC / "tests" / "stress_runtime.c", CSRC / "seer_runtime.c", CSRC / "seer_queue.c", CSRC / "seer_crash.c"]
    cmd = [CC, "-std=c11", "-O2", "-g", "-pthread", "-Wall", f"-I{CSRC}", f"-I{CSRC / 'include'}", *map(str, sources), "-lm", "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"compiling the runtime stress test failed:\n{' '.join(cmd)}\n{proc.stderr}"
    return out


@pytest.mark.parametrize("entities, steps, max_workers, fanout", [(1021, 60, 8, 3), (7, 200, 4, 2)])
def test_stress_runtime_one_holder_order_no_loss_and_determinism(runtime_stress_binary, entities, steps,
                                                                 max_workers, fanout):
    args = [str(a) for a in (entities, steps, max_workers, fanout)]
    proc = subprocess.run([str(runtime_stress_binary), *args], capture_output=True, text=True, timeout=300)
    report = f"stress_runtime {' '.join(args)}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert proc.returncode == 0, report
    m = re.search(r"^stress_runtime: OK entities=(\d+) steps=(\d+) workers=1\.\.(\d+) events=(\d+)", proc.stdout, re.M)
    assert m and int(m.group(4)) > entities * steps, report


@pytest.fixture(scope="module")
def vector_stress_binary(tmp_path_factory):
    """csrc/tests/stress_vector_uav.c: seer.vector's native path (UAV copies
    stepped by an outer pool), no Python."""
    if CC is None:
        pytest.skip("no C compiler found (cc, gcc, clang or $CC)")
    out = tmp_path_factory.mktemp("stress") / "stress_vector_uav"
    envs = CSRC.parent / "seer" / "envs" / "uav_swarm" / "csrc"  # the env is a plug-in: its C lives in its folder
    sources = [CSRC / "tests" / "stress_vector_uav.c", CSRC / "seer_vector.c", envs / "uav_swarm.c",
               envs / "uav_swarm_step.c", CSRC / "seer_runtime.c", CSRC / "seer_queue.c", CSRC / "seer_crash.c"]
    cmd = [CC, "-std=c11", "-O2", "-g", "-pthread", "-Wall", f"-I{CSRC}", f"-I{CSRC / 'include'}", f"-I{envs}",
           *map(str, sources), "-lm", "-o", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"compiling the vector stress test failed:\n{' '.join(cmd)}\n{proc.stderr}"
    return out


@pytest.mark.parametrize("copies, uavs, steps, max_workers", [(8, 32, 150, 4), (3, 5, 300, 3)])
def test_stress_vector_native_path_rows_and_determinism(vector_stress_binary, copies, uavs, steps, max_workers):
    args = [str(a) for a in (copies, uavs, steps, max_workers, 11)]
    proc = subprocess.run([str(vector_stress_binary), *args], capture_output=True, text=True, timeout=300)
    report = f"stress_vector_uav {' '.join(args)}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert proc.returncode == 0, report
    assert re.search(rf"^stress_vector_uav: OK {copies} copies x {uavs} UAVs, {steps} steps, 1\.\.{max_workers} "
                     r"workers, identical rows", proc.stdout, re.M), report
    # the copies step tiled (one-worker runtimes) with 1..max_workers outer workers, then untiled with 1
    hashes = re.findall(r"workers \d+: (\d+) episode ends, (\d+) autoresets, hash (\w+), (\w+)", proc.stdout)
    assert [h[3] for h in hashes] == ["tiled"] * max_workers + ["untiled"], report
    assert len({h[2] for h in hashes}) == 1, report
    assert int(hashes[0][0]) > 0 and int(hashes[0][1]) > 0, report
