"""bench/plain_vector.py, the trainers' plain-loop baseline, answers the
copy-selecting calls (``get_attr``/``set_attr``/``call`` with ``copies=``) the
way seer.vector does, so a trainer glue written for one runs on the other."""

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
from plain_vector import PlainVectorEnv  # noqa: E402

from seer.envs import uav_swarm_v0  # noqa: E402


@pytest.fixture
def plain():
    envs = PlainVectorEnv(lambda: uav_swarm_v0.parallel_env(scenario="small", workers=1), 3)
    envs.reset(seed=0)
    yield envs
    envs.close()


def test_copies_select_like_seer_vector(plain):
    names = plain.get_attr("possible_agents")
    assert len(names) == 3
    assert plain.get_attr("possible_agents", copies=[2, 0]) == (names[2], names[0])
    plain.set_attr("tag", ["a", "b"], copies=[1, 2])
    assert plain.get_attr("tag", copies=[1, 2]) == ("a", "b")
    assert not hasattr(plain.copies[0], "tag")


@pytest.mark.parametrize("bad", [[3], [-1], [True], ["0"]])
def test_bad_copy_index_names_it(plain, bad):
    with pytest.raises(ValueError, match="copies holds"):
        plain.get_attr("possible_agents", copies=bad)


def test_set_attr_counts_values(plain):
    with pytest.raises(ValueError, match="expected 2"):
        plain.set_attr("tag", ["a", "b", "c"], copies=[0, 1])


def test_call_selects_copies(plain):
    assert plain.call("observation_space", "uav_0", copies=[1]) == (plain.copies[1].observation_space("uav_0"),)
