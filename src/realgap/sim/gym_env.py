"""Gymnasium interface: one env per instance, registered as ``realgap/<Task>-v0``.

A thin view over a one-env :class:`BatchedEnv`, so the single and batched envs
share every line of physics, observation and reward code.
"""

from __future__ import annotations

from typing import ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from realgap.sim.batched_env import BatchedEnv
from realgap.sim.randomization import DomainRandomization
from realgap.sim.render import WristRenderer
from realgap.sim.tasks import ALIASES, TASKS, TaskConfig


class RealgapEnv(gym.Env):
    """A single SO-101 task env with the gymnasium API."""

    metadata: ClassVar[dict] = {"render_modes": ["rgb_array"], "render_fps": 10}

    def __init__(
        self,
        task: str = "Reach",
        config: TaskConfig | None = None,
        randomization: DomainRandomization | None = None,
        render_images: bool = True,
        privileged: bool = False,
        render_mode: str | None = None,
    ):
        self.env = BatchedEnv(
            task,
            1,
            config=config,
            randomization=randomization,
            render=render_images,
            privileged=privileged,
        )
        self.render_mode = render_mode
        entries = {}
        for key, (shape, dtype) in self.env.observation_spec().items():
            if dtype == "uint8":
                entries[key] = spaces.Box(0, 255, shape, np.uint8)
            else:
                entries[key] = spaces.Box(-np.inf, np.inf, shape, np.float32)
        self.observation_space = spaces.Dict(entries)
        self.action_space = spaces.Box(-1.0, 1.0, (6,), np.float32)
        self.metadata = {**self.metadata, "render_fps": self.env.config.control_hz}
        self._overview = None

    @staticmethod
    def _first(obs: dict) -> dict:
        return {key: value[0] for key, value in obs.items()}

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        obs, _ = self.env.reset(seed=seed)
        return self._first(obs), {}

    def step(self, action):
        # The batched env auto-resets; a gymnasium env must not, so step returns the
        # final observation of a finished episode and waits for reset().
        obs, reward, terminated, truncated, info = self.env.step(np.asarray(action)[None])
        if "final_observation" in info:
            obs = info["final_observation"]
        return (
            self._first(obs),
            float(reward[0]),
            bool(terminated[0]),
            bool(truncated[0]),
            {"success": bool(info["success"][0])},
        )

    def render(self):
        """Third-person RGB frame (``render_mode='rgb_array'``)."""
        if self._overview is None:
            self._overview = WristRenderer(self.env.model, 120, 4)
        mocap = self.env.mocap_pos[0] if self.env.mocap_pos is not None else None
        return self._overview.render_raw(self.env.qpos[0], mocap, camera="overview")

    def close(self):
        self.env.close()
        if self._overview is not None:
            self._overview.close()


def register_envs() -> list[str]:
    """Register every task with gymnasium, under its name and its aliases (the
    reference's ``realgap/LiftCube-v0`` is PickCube); returns the ids."""
    ids = []
    for name, task in [*((name, name) for name in TASKS), *ALIASES.items()]:
        env_id = f"realgap/{name}-v0"
        if env_id not in gym.registry:
            gym.register(
                env_id, entry_point=RealgapEnv, kwargs={"task": task}, max_episode_steps=None
            )
        ids.append(env_id)
    return ids


register_envs()
