"""Demonstrations by the scripted expert: in the randomized twin, and on a fake arm.

Both record what an imitation policy sees and does: the policy image, the 12
joint numbers, and as the action the **absolute joint targets** commanded next
(in the readings' frame), as LeRobot datasets (:mod:`realgap.imitate.dataset`).
Only successful episodes are kept.

- **Sim demos**: batched envs under the full domain randomization; the expert
  reads privileged state (:class:`~realgap.sim.scripted.ScriptedController`).
- **"Real" demos** on a fake arm go through the bridge -- safety layer, camera
  path, unit conversions -- like teleoperation: the expert (a privileged
  operator) sees the fake twin's true state and commands targets through
  :class:`~realgap.bridge.safety.SafeArm`; the recording is what the bridge saw.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import mujoco
import numpy as np

from realgap.bridge.camera_lock import lock_camera
from realgap.bridge.deploy import run_session
from realgap.bridge.env import DeployConfig
from realgap.bridge.recording import load_episodes
from realgap.bridge.worlds import Spot, at_start_pose, open_fake_world
from realgap.imitate.dataset import DemoWriter
from realgap.policy.contract import PolicyContract
from realgap.sim import robot
from realgap.sim.batched_env import BatchedEnv
from realgap.sim.randomization import DomainRandomization
from realgap.sim.rollout import Transition, rollout
from realgap.sim.scripted import ScriptedController
from realgap.sim.tasks import make_task

DEMO_RANDOMIZATION = replace(
    DomainRandomization(),
    background_value=(0.0, 0.0),
    background_warmth=(0.0, 0.0),
    desk_texture_p=0.0,
    speed_p=0.0,
)
"""The randomization of simulated demonstrations: the default, but on the black
cloth and at one speed (a dataset has one fps: an episode drawn at 12 Hz would be
replayed at the recorded rate and teach the wrong motion). Behaviour cloning from tens
of demonstrations cannot spread them over desk colours too: with the drawn
backgrounds, the tiny chunked-BC test's policy (48 demos) fell to random in the black
sim. A user's real demos bring their own desk anyway."""


def record_sim_demos(
    task: str,
    episodes: int,
    out: str | Path,
    seed: int = 0,
    randomize: bool = True,
    envs: int = 32,
    noise: float = 0.0,
) -> dict:
    """Run the expert in the twin until ``episodes`` successful episodes are recorded.

    ``noise`` (DART): the arm executes the expert's action plus Gaussian noise of
    this standard deviation (in action units, 1 = a full step), while the dataset
    labels each frame with the expert's clean command. The demos then show how to
    recover from small errors -- exactly the states a cloned policy drifts into.
    """
    env = BatchedEnv(
        task,
        envs,
        randomization=DEMO_RANDOMIZATION if randomize else None,
        seed=seed,
    )
    expert = ScriptedController(env)
    writer = DemoWriter(out, fps=env.config.control_hz, task=make_task(task).instruction)
    buffers = [[] for _ in range(envs)]
    labels = {}
    counts = {"kept": 0, "tried": 0, "succeeded": 0}
    low, high = robot.JOINT_RANGES.T
    rng = np.random.default_rng(seed)

    def act(obs):
        action = expert.act()
        # The target the expert commands, in the frame the policy reads joints in.
        target = np.clip(env.target + action * env.action_scale, low, high)
        labels["commanded"] = target + env.params.joint_offset
        if noise > 0:  # DART: the arm executes a perturbed action; the label stays clean
            action = np.clip(action + noise * rng.standard_normal(action.shape), -1.0, 1.0)
        return action

    def record(step: Transition) -> None:
        for i in range(envs):
            buffers[i].append((step.obs["image"][i], step.obs["state"][i], labels["commanded"][i]))
        if "episode" in step.info:
            for i, success in zip(step.info["episode"]["env"], step.info["episode"]["success"]):
                counts["tried"] += 1
                counts["succeeded"] += bool(success)  # kept or not: the expert's rate
                if success and counts["kept"] < episodes:
                    writer.add_episode(*map(np.array, zip(*buffers[i])))
                    counts["kept"] += 1
                buffers[i] = []

    obs, _ = env.reset(seed=seed)
    rollout(env, act, obs, until=lambda: counts["kept"] >= episodes, on_step=record)
    kept, tried, succeeded = counts["kept"], counts["tried"], counts["succeeded"]
    env.close()
    writer.finalize()
    return {"episodes": kept, "tried": tried, "expert_success": succeeded / max(tried, 1)}


class _FakeExpertView:
    """What :class:`ScriptedController` needs of a BatchedEnv, served by a fake world:
    the expert is a privileged operator who sees the fake twin's true state."""

    def __init__(self, world, action_scale):
        self.world, self.num_envs = world, 1
        self.task, self.model = world.task, world.model
        self.action_scale = np.asarray(action_scale)
        self.target = world.readings()[None] - world.offset  # true-frame commanded target
        self.batch = self

    def sim_state(self):
        return self.world.sim_state()

    def jac(self, body: int, points: np.ndarray):
        jacp = np.zeros((1, 3, self.model.nv))
        jacr = np.zeros((1, 3, self.model.nv))
        mujoco.mj_jac(self.model, self.world.data, jacp[0], jacr[0], points[0], body)
        return jacp, jacr

    def bind(self, name: str):
        return getattr(self.world.data, name)[None]


def expert_operator(world, task: str):
    """A policy-shaped expert for a fake world: ``(image, state) -> joint targets``."""
    fake = world.extra["world"]
    scale = make_task(task).config.action_scale
    view = _FakeExpertView(fake, scale)
    expert = ScriptedController(view)
    low, high = robot.JOINT_RANGES.T

    def act(image, state):
        action = expert.act()[0]
        view.target = np.clip(view.target + action * view.action_scale, low, high)
        return view.target[0] + fake.offset  # the operator's command, in the arm's frame

    def reset():
        view.target = fake.readings()[None] - fake.offset

    act.reset = reset
    return act


def record_fake_demos(
    task: str, profile: str, episodes: int, out: str | Path, seed: int = 0, lock_folder=None
) -> dict:
    """Teleoperate a fake arm with the expert through the bridge; keep the successes."""

    out = Path(out)
    world = open_fake_world(task, profile, seed=seed)
    with at_start_pose(world):
        lock_camera(world.camera, folder=lock_folder or out.parent / "cameras")
    world = open_fake_world(task, profile, seed=seed)
    task_obj = make_task(task)
    config = task_obj.config
    contract = PolicyContract(
        task=task,
        image_size=config.image_size,
        control_hz=config.control_hz,
        action_scale=tuple(config.action_scale),
        action_mode="absolute",
        start_pose=tuple(config.start_pose),
    )
    rng = np.random.default_rng(seed)
    cubes = task_obj.sample_cube_xy(rng, episodes * 2)
    bins = task_obj.sample_target_xy(rng, cubes) if task_obj.has_target else [None] * len(cubes)
    spots = [
        Spot(f"demo{i}", tuple(c), None if b is None else tuple(b))
        for i, (c, b) in enumerate(zip(cubes, bins))
    ]
    recordings = out.parent / f"{out.name}_recordings"
    summary = run_session(
        world,
        None,
        spots,
        recordings,
        DeployConfig(lock_folder=lock_folder or out.parent / "cameras"),
        policy=(expert_operator(world, task), contract),
    )
    writer = DemoWriter(out, fps=config.control_hz, task=make_task(task).instruction)
    kept = 0
    for episode in load_episodes(recordings):
        if episode.meta.get("success") and kept < episodes:
            writer.add_episode(
                episode.images, np.concatenate([episode.joints, episode.targets], 1), episode.sent
            )
            kept += 1
    if kept == 0:
        raise RuntimeError(f"the expert succeeded in none of {summary['episodes']} fake episodes")
    writer.finalize()
    return {
        "episodes": kept,
        "tried": summary["episodes"],
        "expert_success": summary["success_rate"],
    }
