"""What every task shares: its config, reset distribution, reward and success.

A task is pure numpy over a batch: it reads a :class:`SimState` (arrays with a
leading env axis) and returns rewards, success flags and privileged features.
The env (:mod:`realgap.sim.batched_env`) owns the physics and the camera.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np

from realgap.errors import ConfigError
from realgap.sim import robot
from realgap.sim.scene import SceneConfig


@dataclass(frozen=True)
class TaskConfig:
    """Settings every task has. Positions are in the *arm frame*: origin on the
    shoulder_pan rotation axis, x forward, y left (see ``robot.PAN_AXIS_XY``)."""

    episode_steps: int = 50
    """Control steps per episode."""
    control_hz: float = 10.0
    """Nominal control rate (10 Hz in training; deployment runs 15 Hz)."""
    physics_hz: float = 200.0
    """Physics rate; must be a multiple of the control rate."""
    action_scale: tuple[float, ...] = (0.1, 0.1, 0.1, 0.1, 0.1, 0.2)
    """Radians per unit action per step (reference recipe: 0.1 arm, 0.2 gripper)."""
    cube_square_center: tuple[float, float] = (0.20, 0.0)
    """Centre of the cube's reset square, arm frame, metres."""
    cube_square_size: float = 0.20
    """Edge of the cube's reset square (default 20 x 20 cm)."""
    image_size: int = 16
    """Policy image resolution (square)."""
    render_supersample: int = 4
    """Render at image_size * this, then area-downsample (sharper than rendering small)."""
    start_noise_rad: float = 0.05
    """Uniform jitter of the start pose, per joint."""
    scene: SceneConfig = field(default_factory=SceneConfig)

    def __post_init__(self) -> None:
        if self.episode_steps < 1:
            raise ConfigError("episode_steps must be >= 1")
        if len(self.action_scale) != len(robot.JOINT_NAMES):
            raise ConfigError(f"action_scale needs {len(robot.JOINT_NAMES)} values")
        if self.image_size < 4 or self.render_supersample < 1:
            raise ConfigError("image_size must be >= 4 and render_supersample >= 1")
        if self.control_hz <= 0 or self.physics_hz < 2 * self.control_hz:
            raise ConfigError("need physics_hz >= 2 * control_hz > 0")
        if self.cube_square_size < 0:
            raise ConfigError("cube_square_size must be >= 0")


@dataclass
class SimState:
    """What tasks read, batched: positions in the sim frame (metres)."""

    qpos: np.ndarray  # (n, 6) true joint angles
    qvel: np.ndarray  # (n, 6) joint velocities
    target: np.ndarray  # (n, 6) true servo targets
    pinch: np.ndarray  # (n, 3) between-jaws point
    cube_pos: np.ndarray  # (n, 3)
    cube_quat: np.ndarray  # (n, 4)
    cube_start: np.ndarray  # (n, 3) cube position at reset
    bin_pos: np.ndarray  # (n, 3); zeros without a bin
    cube_half: np.ndarray  # (n,) half edge length this episode


class Task:
    """Base class. A task owns everything known about it: its config and reset
    placement (``sample_cube_xy``, ``sample_bin_xy``), reward, success and the
    diagnostic flags of :meth:`evaluate`, the instruction text stored with
    demonstrations, and its training defaults per recipe. Nothing outside
    ``realgap.sim.tasks`` asks a task for its name to decide what to do."""

    name = "Task"
    config_type = TaskConfig
    has_bin = False
    """The scene has a bin (the cube must end up in it)."""
    grasps = True
    """Success needs the cube held at some point (False for Reach)."""
    instruction = ""
    """What the task asks, in words (LeRobot datasets store it with every frame)."""
    train_defaults: ClassVar[dict[str, dict]] = {}
    """Recipe name -> its ``Args`` fields for this task (``realgap train`` and the
    benchmarks read them from here)."""

    def __init__(self, config: TaskConfig | None = None):
        self.config = config or self.config_type()

    def scene_config(self) -> SceneConfig:
        scene = self.config.scene
        if self.has_bin and not scene.with_bin:
            scene = replace(scene, with_bin=True)
        return scene

    def evaluate(self, state: SimState) -> dict[str, np.ndarray]:
        """``success`` plus diagnostic flags, one bool array (n,) each (ManiSkill style):
        ``grasped`` always; tasks add their own (``lifted``, ``in_bin``...)."""
        return {"success": self.success(state), "grasped": self.grasped(state)}

    def sample_cube_xy(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Cube reset positions in the arm frame, (n, 2)."""
        half = self.config.cube_square_size / 2
        return np.asarray(self.config.cube_square_center) + rng.uniform(-half, half, (n, 2))

    def sample_bin_xy(self, rng: np.random.Generator, cube_xy: np.ndarray) -> np.ndarray:
        """Bin positions in the arm frame, (n, 2); only tasks with a bin use them."""
        return np.zeros_like(cube_xy)

    def grasped(self, state: SimState) -> np.ndarray:
        """Cube held between the jaws: near the pinch point, and the jaw held open
        against its closing target while standing still (a moving jaw lags its
        target too, so the speed check keeps closing from counting as holding)."""
        near = np.linalg.norm(state.cube_pos - state.pinch, axis=1) < 0.02
        blocked = state.qpos[:, 5] - state.target[:, 5] > 0.04
        still = np.abs(state.qvel[:, 5]) < 0.3
        return near & blocked & still

    def reward(self, state: SimState) -> np.ndarray:
        raise NotImplementedError

    def success(self, state: SimState) -> np.ndarray:
        raise NotImplementedError

    def privileged(self, state: SimState) -> np.ndarray:
        """Privileged features for teachers: cube, pinch and bin positions (arm frame), grasp."""
        offset = np.array([*robot.PAN_AXIS_XY, 0.0])
        return np.concatenate(
            [
                state.cube_pos - offset,
                state.pinch - offset,
                state.cube_pos - state.pinch,
                state.bin_pos - offset,
                state.cube_quat,
                self.grasped(state)[:, None].astype(float),
            ],
            axis=1,
        ).astype(np.float32)

    PRIVILEGED_DIM = 17


def reach_distance(state: SimState) -> np.ndarray:
    return np.linalg.norm(state.cube_pos - state.pinch, axis=1)
