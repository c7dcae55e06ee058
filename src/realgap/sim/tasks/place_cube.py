"""PlaceCube: put the cube in a bin.

Task: pick the cube up and release it inside the bin.
Randomizations: cube position in the training square; bin placed
``bin_distance_m`` from the cube at a random side angle (and inside reach);
start pose jitter; the full domain-randomization config.
Success: cube inside the bin's walls, resting (below the rim) and released.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from realgap.sim.tasks.base import SimState, Task, TaskConfig, reach_distance


@dataclass(frozen=True)
class PlaceCubeConfig(TaskConfig):
    episode_steps: int = 80
    bin_distance_m: tuple[float, float] = (0.10, 0.16)
    """Cube-to-bin distance range."""


class PlaceCube(Task):
    name = "PlaceCube"
    config_type = PlaceCubeConfig
    has_bin = True
    instruction = "put the cube in the bin"
    train_defaults: ClassVar[dict[str, dict]] = {
        # A PPO teacher never learned to release in the bin (0% after 2.5M steps; with
        # warm starts from the expert it peaked near 75% and drifted): the student
        # learns from the privileged scripted expert instead (docs/training.md).
        # Fixed student steps: 86% in 290 s alone, against 88% in 792 s with four
        # epochs over the growing dataset per round (docs/training.md).
        "distill": {
            "teacher": "scripted",
            "dagger_rounds": 24,
            "dagger_steps": 80,
            "student_updates": 120,
            "student_eval_every": 4,
        },
    }

    def sample_bin_xy(self, rng: np.random.Generator, cube_xy: np.ndarray) -> np.ndarray:
        n = len(cube_xy)
        distance = rng.uniform(*self.config.bin_distance_m, n)
        # Put the bin sideways from the cube, towards the centre line, so it stays in reach.
        side = np.where(cube_xy[:, 1] > 0, -1.0, 1.0)
        angle = side * np.pi / 2 + rng.uniform(-0.5, 0.5, n)
        return cube_xy + distance[:, None] * np.stack([np.cos(angle), np.sin(angle)], axis=1)

    def in_bin(self, state: SimState) -> np.ndarray:
        inner = self.config.scene.bin_inner_m / 2
        offset = np.abs(state.cube_pos[:, :2] - state.bin_pos[:, :2])
        inside = np.all(offset < inner, axis=1)
        low = state.cube_pos[:, 2] < self.config.scene.bin_wall_height_m
        return inside & low

    def reward(self, state: SimState) -> np.ndarray:
        reach = 1.0 - np.tanh(10.0 * reach_distance(state))
        grasped = self.grasped(state)
        carry = 1.0 - np.tanh(
            5.0 * np.linalg.norm(state.cube_pos[:, :2] - state.bin_pos[:, :2], axis=1)
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
