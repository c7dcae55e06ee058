"""The twin's batched renders draw coarse primitives, and the policy's images stay the same.

A CPU renderer pays per triangle, three times over in a room that casts shadows; at the
twin's 64-pixel tiles MuJoCo's default tessellation bought nothing the 16x16 images show.
"""

import mujoco
import numpy as np
import pytest

import realgap.sim.batch_render as batch_render
from realgap.sim.batched_env import BatchedEnv
from realgap.sim.randomization import DomainRandomization
from realgap.sim.scripted import ScriptedController
from realgap.sim.twin import SceneParams, TwinParams

MUJOCO_DEFAULTS = {"numslices": 28, "numstacks": 16, "numquads": 4}


def expert_images(task: str, shadows: bool, steps: int = 40) -> tuple[np.ndarray, dict]:
    """The policy images along the scripted expert's episodes (its actions read the true
    state, so both renders see the same states), and the tessellation of the tiles and
    of the env's own model."""
    world = DomainRandomization.none(TwinParams(scene=SceneParams(shadows=shadows)))
    env = BatchedEnv(task, 4, randomization=world, render=True, seed=5)
    expert = ScriptedController(env)
    obs, _ = env.reset(seed=5)
    images = []
    for step in range(steps):
        obs, *_ = env.step(expert.act())
        if step % 4 == 0:
            images.append(obs["image"].astype(float))
    drawn = {
        "tiles": {name: getattr(env.renderer.model.vis.quality, name) for name in MUJOCO_DEFAULTS},
        "model": {name: getattr(env.model.vis.quality, name) for name in MUJOCO_DEFAULTS},
    }
    env.close()
    return np.stack(images), drawn


def test_the_defaults_are_mujocos_own():
    # The comparison below means something only if it is against MuJoCo's defaults,
    # which the scene and the fake cameras keep.
    quality = mujoco.MjModel.from_xml_string("<mujoco/>").vis.quality
    assert {name: getattr(quality, name) for name in MUJOCO_DEFAULTS} == MUJOCO_DEFAULTS


@pytest.mark.parametrize(
    "task, shadows", [("PickCube", False), ("PickCube", True), ("ReachCan", False)]
)
def test_coarse_primitives_leave_the_policy_images_as_they_were(task, shadows, monkeypatch):
    # ReachCan: a can is a cylinder, whose outline 12 slices moved by 0.38 levels on average.
    coarse, drawn = expert_images(task, shadows)
    for name, default in MUJOCO_DEFAULTS.items():
        assert drawn["tiles"][name] < default, name
    assert drawn["model"] == MUJOCO_DEFAULTS  # only the tiles
    monkeypatch.setattr(batch_render, "TWIN_TESSELLATION", MUJOCO_DEFAULTS)
    fine, _ = expert_images(task, shadows)
    difference = np.abs(coarse - fine)
    assert difference.mean() < 0.1, difference.mean()  # grey levels of 255
    assert np.mean(difference > 2) < 0.01  # shading moves a few values by a level or two
