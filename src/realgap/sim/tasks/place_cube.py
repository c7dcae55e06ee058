"""PlaceCube and PlaceCan: put the object in a bin.

Task: pick the object up and release it inside the bin.
Randomizations: object position in the training square; bin placed
``bin_distance_m`` from the object at a random side angle (and inside reach);
start pose jitter; the full domain-randomization config: desks black to white, the
arm's shadow on half of them (``SHADOWED_DESKS``; PlaceCan: can sizes x0.85-1.15, on
dark cloths, ``DARK_CLOTHS``).
Success: object inside the bin's walls, resting (its bottom below half the rim's
height) and released.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from realgap.sim.tasks.base import (
    DARK_CLOTHS,
    SHADOWED_DESKS,
    CanObject,
    SimState,
    Task,
    TaskConfig,
    reach_distance,
)


@dataclass(frozen=True)
class PlaceCubeConfig(TaskConfig):
    episode_steps: int = 80
    bin_distance_m: tuple[float, float] = (0.10, 0.16)
    """Cube-to-bin distance range."""


class PlaceCube(Task):
    name = "PlaceCube"
    config_type = PlaceCubeConfig
    target_object = "bin"
    instruction = "put the cube in the bin"
    randomization: ClassVar[dict] = SHADOWED_DESKS
    train_defaults: ClassVar[dict[str, dict]] = {
        # A PPO teacher never learned to release in the bin (0% after 2.5M steps; with
        # warm starts from the expert it peaked near 75% and drifted): the student
        # learns from the privileged scripted expert instead (docs/training.md).
        # Fixed student steps: 86% in 290 s alone, against 88% in 792 s with four
        # epochs over the growing dataset per round (docs/training.md). Desks from
        # black to white need the images standardized and 36 rounds, not 24.
        "distill": {
            "teacher": "scripted",
            "architecture": "desk_invariant",
            "dagger_rounds": 36,
            "dagger_steps": 80,
            "student_updates": 120,
            "student_eval_every": 4,
        },
    }

    def sample_target_xy(self, rng: np.random.Generator, cube_xy: np.ndarray) -> np.ndarray:
        return beside(rng, cube_xy, self.config.bin_distance_m)

    def in_bin(self, state: SimState) -> np.ndarray:
        inner = self.config.scene.bin_inner_m / 2
        offset = np.abs(state.cube_pos[:, :2] - state.target_pos[:, :2])
        inside = np.all(offset < inner, axis=1)
        bottom = state.cube_pos[:, 2] - state.cube_half
        low = bottom < self.config.scene.bin_wall_height_m / 2
        return inside & low

    def reward(self, state: SimState) -> np.ndarray:
        reach = 1.0 - np.tanh(10.0 * reach_distance(state))
        grasped = self.grasped(state)
        carry = 1.0 - np.tanh(
            5.0 * np.linalg.norm(state.cube_pos[:, :2] - state.target_pos[:, :2], axis=1)
        )
        lifted = state.cube_pos[:, 2] > state.cube_start[:, 2] + 0.03
        return (
            reach
            + grasped
            + 2.0 * (grasped | self.in_bin(state)) * carry * np.maximum(lifted, self.in_bin(state))
            + 3.0 * self.success(state)
        )

    def success(self, state: SimState) -> np.ndarray:
        return self.in_bin(state) & ~self.grasped(state)

    def evaluate(self, state: SimState) -> dict[str, np.ndarray]:
        return {**super().evaluate(state), "in_bin": self.in_bin(state)}


class PlaceCan(CanObject, PlaceCube):
    """PlaceCube with an upright can; a can on its side in the bin still counts."""

    name = "PlaceCan"
    instruction = "put the can in the bin"
    randomization: ClassVar[dict] = {**CanObject.randomization, **DARK_CLOTHS}
    # After PlaceCube's 24 rounds the can's student judged 89% on 64 and 85% on 256 fresh
    # nominal episodes; with 40 rounds (best of ten evaluations kept) 91% on the same
    # 256, in 485 s (docs/training.md).
    train_defaults: ClassVar[dict[str, dict]] = {
        "distill": {
            **PlaceCube.train_defaults["distill"],
            "architecture": "student",
            "dagger_rounds": 40,
        }
    }


def beside(rng: np.random.Generator, cube_xy: np.ndarray, distance_m) -> np.ndarray:
    """Positions ``distance_m`` (a range) from each object, sideways towards the centre
    line so they stay in reach: where Place puts its bin and Stack its lower object."""
    n = len(cube_xy)
    distance = rng.uniform(*distance_m, n)
    side = np.where(cube_xy[:, 1] > 0, -1.0, 1.0)
    angle = side * np.pi / 2 + rng.uniform(-0.5, 0.5, n)
    return cube_xy + distance[:, None] * np.stack([np.cos(angle), np.sin(angle)], axis=1)
