"""An episode held still from its first success (``rollout(freeze_succeeded=True)``):
every other env steps and renders exactly as without, and every result is the same."""

import numpy as np
import pytest

from realgap.sim.batched_env import BatchedEnv
from realgap.sim.randomization import DomainRandomization
from realgap.sim.rollout import rollout
from realgap.sim.scripted import ScriptedController


def _run(task: str, freeze: bool, episodes: int = 12, envs: int = 6):
    # Training's randomization: drawn speeds (episodes of different lengths), desks,
    # lights, sensor noise -- every random stream must stay where it was.
    env = BatchedEnv(task, envs, randomization=DomainRandomization(), seed=3)
    controller = ScriptedController(env)
    seen = []

    def watch(t):
        held = np.zeros(envs, bool) if t.held is None else t.held
        seen.append((t.obs["image"].copy(), t.obs["state"].copy(), held))

    obs, _ = env.reset(seed=5)
    finished = rollout(
        env,
        lambda obs: controller.act(),
        obs,
        episodes=episodes,
        on_step=watch,
        freeze_succeeded=freeze,
    )
    env.close()
    return [(e.env, e.success, e.length) for e in finished], seen


@pytest.mark.parametrize("task", ["Reach", "PickCube"])
def test_freezing_succeeded_episodes_changes_nothing_else(task):
    plain, plain_seen = _run(task, False)
    frozen, frozen_seen = _run(task, True)
    assert frozen == plain
    assert any(success for _, success, _ in plain)
    held = 0
    for (image, state, _), (image_f, state_f, was_frozen) in zip(plain_seen, frozen_seen):
        live = ~was_frozen
        held += int(was_frozen.sum())
        np.testing.assert_array_equal(image_f[live], image[live])
        np.testing.assert_array_equal(state_f[live], state[live])
    assert held > 0  # some env was held still, so the comparison meant something


def test_a_rollout_thaws_every_env_when_it_returns():
    env = BatchedEnv("Reach", 2, render=False)
    obs, _ = env.reset(seed=0)
    controller = ScriptedController(env)
    rollout(env, lambda o: controller.act(), obs, steps=40, freeze_succeeded=True)
    assert not env.frozen.any()
    env.close()
