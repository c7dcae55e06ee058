"""StackCube and StackCan: put the red cube on a second object.

Task: grasp the cube, carry it over the lower object (a blue cube for StackCube, a
can for StackCan), set it down on top and let go, leaving the lower object where it
was.
Randomizations: cube position in the training square; the lower object placed
``base_distance_m`` from the cube at a random side angle (inside reach), with a
random yaw, size (x0.85-1.15) and colour jitter; cube friction x0.1-1.0 (the
reference draws 0.1-0.5; the range keeps the nominal 1.0 inside it); start pose
jitter; the full domain-randomization config, on dark cloths (``DARK_CLOTHS``).
Success (the reference's): the cube within ``align_xy_m`` horizontally and
``align_z_m`` vertically of resting on the lower object, nearly still (under
``still_mps``), released (jaws commanded and actually open, standing in for the reference's
"not touching"), and the arm nearly still.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from realgap.errors import ConfigError
from realgap.sim.tasks.base import (
    CAN_KEEP_OUT_M,
    DARK_CLOTHS,
    SimState,
    Task,
    TaskConfig,
    clear_of_start_jaws,
    reach_distance,
    toppled,
)
from realgap.sim.tasks.place_cube import beside


@dataclass(frozen=True)
class StackConfig(TaskConfig):
    episode_steps: int = 80
    base_distance_m: tuple[float, float] = (0.08, 0.14)
    """Cube-to-lower-object distance range."""
    align_xy_m: float = 0.02
    """Horizontal offset from the lower object's axis that still counts as stacked."""
    align_z_m: float = 0.01
    """Height error from resting exactly on top that still counts as stacked."""
    still_mps: float = 0.02
    """The cube's speed below which it counts as still."""
    arm_still_rad_s: float = 0.2
    """Every arm joint's speed below which the arm counts as still."""
    open_rad: float = 0.5
    """The jaw opened past this (gripper joint, radians) counts as letting go."""

    def __post_init__(self) -> None:
        super().__post_init__()
        low, high = self.base_distance_m
        if not 0.04 <= low <= high:
            raise ConfigError("base_distance_m must be [low, high] with 0.04 <= low <= high")


class StackCube(Task):
    name = "StackCube"
    config_type = StackConfig
    target_object = "cube"
    instruction = "put the red cube on the blue cube"
    randomization: ClassVar[dict] = {
        "cube_friction_scale": (0.1, 1.0),
        **DARK_CLOTHS,  # as the cans (base.DARK_CLOTHS says why)
    }
    train_defaults: ClassVar[dict[str, dict]] = {
        # Stacking is slow to learn by DAgger: StackCube's student scored 31% after 24
        # rounds and 56% after 60 (64 fresh episodes each). A quarter of the envs driven
        # by the expert every round, for data near the end of the task that a weak
        # student rarely reaches, took StackCube from 54% to 63% and StackCan from 56%
        # to 72% (the same 192 fresh episodes; docs/training.md). While it carries, the
        # lower object is mostly out of the wrist camera's view: a student with a memory
        # of what it saw on the way took StackCube to 90% on those episodes.
        "distill": {
            "teacher": "scripted",
            "architecture": "recurrent",
            "dagger_rounds": 60,
            "dagger_steps": 80,
            "student_updates": 120,
            "student_eval_every": 4,
            "expert_driven": 0.25,
        },
    }

    target_keep_out_m: ClassVar[float] = 0.0
    """As ``keep_out_m``, for the lower object."""

    def sample_target_xy(self, rng: np.random.Generator, cube_xy: np.ndarray) -> np.ndarray:
        distance = self.config.base_distance_m
        xy = beside(rng, cube_xy, distance)
        return clear_of_start_jaws(
            xy, self.target_keep_out_m, lambda inside: beside(rng, cube_xy[inside], distance)
        )

    def stack_error(self, state: SimState) -> tuple[np.ndarray, np.ndarray]:
        """Horizontal distance (n,) and height error (n,) from resting on top."""
        offset = state.cube_pos - state.target_pos
        xy = np.linalg.norm(offset[:, :2], axis=1)
        z = offset[:, 2] - (state.cube_half + state.target_half)
        return xy, z

    def on_base(self, state: SimState) -> np.ndarray:
        xy, z = self.stack_error(state)
        return (xy <= self.config.align_xy_m) & (np.abs(z) <= self.config.align_z_m)

    def released(self, state: SimState) -> np.ndarray:
        """Let go: jaws commanded open, actually open (not squeezing it) and not holding it."""
        opened = (state.target[:, 5] > 0.3) & (state.qpos[:, 5] > self.config.open_rad)
        return opened & ~self.grasped(state)

    def still(self, state: SimState) -> tuple[np.ndarray, np.ndarray]:
        cube = np.linalg.norm(state.cube_vel, axis=1) < self.config.still_mps
        arm = np.all(np.abs(state.qvel[:, :5]) < self.config.arm_still_rad_s, axis=1)
        return cube, arm

    def base_pushed(self, state: SimState) -> np.ndarray:
        """How far the lower object was pushed from where it was set (m)."""
        return np.linalg.norm(state.target_pos[:, :2] - state.target_start[:, :2], axis=1)

    def reward(self, state: SimState) -> np.ndarray:
        """Staged as the reference's (reach, grasp, carry and align, release, rest),
        scaled to at most 6, minus penalties for pushing the lower object, knocking
        it over or driving the jaws into the table."""
        grasped, on_base = self.grasped(state), self.on_base(state)
        xy, z = self.stack_error(state)
        reward = 2.0 * (1.0 - np.tanh(5.0 * reach_distance(state)))
        # Carry above the lower object first, then down onto it.
        z_goal = np.where(xy <= 0.04, np.abs(z), np.abs(z - 0.03))
        place = (1.0 - np.tanh(5.0 * np.hypot(xy, z))) + (1.0 - np.tanh(10.0 * z_goal))
        reward = np.where(grasped, 3.0 + place, reward)
        openness = np.clip((state.qpos[:, 5] + 0.17) / 1.9, 0.0, 1.0)
        reward = np.where(grasped & on_base, 4.0 + place + openness, reward)
        speed = np.linalg.norm(state.cube_vel, axis=1)
        arm_speed = np.linalg.norm(state.qvel[:, :5], axis=1)
        resting = 7.0 + ((1 - np.tanh(10 * speed)) + (1 - np.tanh(10 * arm_speed))) / 2
        reward = np.where(on_base & ~grasped, resting, reward)
        reward = np.where(self.success(state), 9.0, reward)
        pushed = np.clip(self.base_pushed(state) / 0.03, 0.0, 1.0)
        table = state.pinch[:, 2] < 0.006
        reward = reward - 2.0 * pushed - 2.0 * toppled(state.target_quat) - 1.0 * table
        return reward / 1.5

    def success(self, state: SimState) -> np.ndarray:
        cube_still, arm_still = self.still(state)
        return self.on_base(state) & self.released(state) & cube_still & arm_still

    def evaluate(self, state: SimState) -> dict[str, np.ndarray]:
        xy, _z = self.stack_error(state)
        flags = super().evaluate(state)
        base_toppled = toppled(state.target_quat)
        base_pushed = self.base_pushed(state) > 0.03
        return {
            **flags,
            "knocked_over": flags["knocked_over"] | base_toppled | base_pushed,
            "on_base": self.on_base(state),
            "near_base": xy <= 2 * self.config.align_xy_m,
            "base_toppled": base_toppled,
            "base_pushed": base_pushed,
        }


class StackCan(StackCube):
    """StackCube with a can (radius about 16.5 mm, 6 cm tall) as the lower object."""

    name = "StackCan"
    target_object = "can"
    target_keep_out_m: ClassVar[float] = CAN_KEEP_OUT_M
    default_layout: ClassVar[str] = "cans"
    instruction = "put the red cube on the can"
    train_defaults: ClassVar[dict[str, dict]] = {
        # The recurrent StackCan student learns more slowly than StackCube's: on the same
        # 192 fresh episodes 71.9% after 60 rounds, 77.1% after 90, 73.4% after 120.
        # Shipping an average of its weights (decay 0.99 a step) rather than the weights
        # as trained took the 90-round run from 77.1% to 80.2% (docs/training.md).
        "distill": {
            **StackCube.train_defaults["distill"],
            "dagger_rounds": 90,
            "student_average": 0.99,
        },
    }
