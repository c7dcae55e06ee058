"""The tasks are solvable: a scripted IK controller completes every one in the nominal sim."""

import pytest

from realgap.sim.batched_env import BatchedEnv
from realgap.sim.scripted import run_episodes
from realgap.sim.tasks import TASKS

MINIMUM = {"PickCube": 0.6}
"""Success the expert must reach on 16 episodes (0.75 unless named)."""


@pytest.mark.parametrize("task", sorted(TASKS))
def test_scripted_controller_solves_nominal_task(task):
    result = run_episodes(BatchedEnv(task, 16, render=False, seed=3), episodes=16, seed=3)
    assert result["success_rate"] >= MINIMUM.get(task, 0.75), result
