"""The tasks are solvable: a scripted IK controller completes them in the nominal sim."""

import pytest

from realgap.sim.batched_env import BatchedEnv
from realgap.sim.scripted import run_episodes


@pytest.mark.parametrize(("task", "minimum"), [("Reach", 0.9), ("PickCube", 0.6)])
def test_scripted_controller_solves_nominal_task(task, minimum):
    result = run_episodes(BatchedEnv(task, 16, render=False, seed=3), episodes=32, seed=3)
    assert result["success_rate"] >= minimum, result
