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

CAN_GRASP_NEAR_M = 0.03
"""A held can's axis sits up to its radius minus 12.5 mm off the pinch point, and the
jaws may close above or below its middle: with the cube's 2 cm, cans held by blocked
jaws 2.1-2.7 cm from the pinch point did not count as grasped."""
CAN_KEEP_OUT_M = 0.05
"""A can within 5 cm of the start pose's pinch point touches the jaws (measured: without
it, 4-5 of 32 scripted PickCan episodes knocked the can over in their first 3 steps)."""


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
    start_pose: tuple[float, ...] = tuple(float(x) for x in robot.KEYFRAMES["start"])
    """Where every episode starts (radians, JOINT_NAMES order). A policy's contract records
    it, so the arm starts its episodes where training did."""
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
        problem = robot.pose_problem(self.start_pose)
        if problem:
            raise ConfigError(f"start_pose: {problem}")


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
    target_pos: np.ndarray  # (n, 3) the bin, or the lower object (Stack); zeros if neither
    cube_half: np.ndarray  # (n,) the object's half height this episode
    cube_vel: np.ndarray  # (n, 3) the object's linear velocity
    target_quat: np.ndarray  # (n, 4) the lower object's orientation (identity otherwise)
    target_start: np.ndarray  # (n, 3) the bin or lower object at reset
    target_half: np.ndarray  # (n,) the lower object's half height (zeros otherwise)


class Task:
    """Base class. A task owns everything known about it: its config and reset
    placement (``sample_cube_xy``, ``sample_target_xy``), reward, success and the
    diagnostic flags of :meth:`evaluate`, the instruction text stored with
    demonstrations, and its training defaults per recipe. Nothing outside
    ``realgap.sim.tasks`` asks a task for its name to decide what to do."""

    name = "Task"
    config_type = TaskConfig
    object_shape = "cube"
    """The object the arm handles: ``cube`` or ``can`` (SceneConfig.object_shape)."""
    target_object: str | None = None
    """Where the object must go: ``bin`` (Place), ``cube`` or ``can`` (Stack: the lower
    object), or None."""
    aliases: ClassVar[tuple[str, ...]] = ()
    """Other names the task answers to (the reference's: ``LiftCube`` for PickCube)."""
    default_layout: ClassVar[str] = "default"
    """The shipped evaluation layout this task uses when the default is asked for."""
    grasp_near_m: ClassVar[float] = 0.02
    """The object's centre within this of the pinch point counts as between the jaws."""
    keep_out_m: ClassVar[float] = 0.0
    """Tall objects (cans) stand as high as the start pose's jaws: resets put them at
    least this far, horizontally, from the start pose's pinch point."""
    randomization: ClassVar[dict] = {}
    """This task's widths over the default randomization (``DomainRandomization`` fields),
    used when no randomization file is given."""
    grasps = True
    """Success needs the cube held at some point (False for Reach)."""
    instruction = ""
    """What the task asks, in words (LeRobot datasets store it with every frame)."""
    train_defaults: ClassVar[dict[str, dict]] = {}
    """Recipe name -> its ``Args`` fields for this task (``realgap train`` and the
    benchmarks read them from here)."""

    def __init__(self, config: TaskConfig | None = None):
        self.config = config or self.config_type()

    @property
    def has_bin(self) -> bool:
        """The scene has a bin (the object must end up in it)."""
        return self.target_object == "bin"

    @property
    def has_target(self) -> bool:
        """Resets place a second thing (a bin or a lower object) beside the object."""
        return self.target_object is not None

    def scene_config(self) -> SceneConfig:
        """The scene this task needs: its object, and its bin or lower object."""
        stack_base = None if self.target_object in (None, "bin") else self.target_object
        return replace(
            self.config.scene,
            object_shape=self.object_shape,
            with_bin=self.has_bin,
            stack_base=stack_base,
        )

    def evaluate(self, state: SimState) -> dict[str, np.ndarray]:
        """``success`` plus diagnostic flags, one bool array (n,) each (ManiSkill style):
        ``grasped`` and ``knocked_over`` (a can on its side, or Stack's lower object
        toppled or pushed away) always; tasks add their own (``lifted``, ``in_bin``...)."""
        grasped = self.grasped(state)
        knocked = np.zeros(len(grasped), dtype=bool)
        if self.object_shape == "can":  # a cube on another face is still a cube
            knocked = toppled(state.cube_quat) & ~grasped
        return {"success": self.success(state), "grasped": grasped, "knocked_over": knocked}

    def sample_cube_xy(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """Cube reset positions in the arm frame, (n, 2)."""
        half = self.config.cube_square_size / 2
        centre = np.asarray(self.config.cube_square_center)
        xy = centre + rng.uniform(-half, half, (n, 2))
        return clear_of_start_jaws(
            xy, self.keep_out_m, lambda inside: centre + rng.uniform(-half, half, (inside.sum(), 2))
        )

    def sample_target_xy(self, rng: np.random.Generator, cube_xy: np.ndarray) -> np.ndarray:
        """Bin or lower-object positions in the arm frame, (n, 2); only tasks with a
        target use them."""
        return np.zeros_like(cube_xy)

    def grasped(self, state: SimState) -> np.ndarray:
        """Cube held between the jaws: near the pinch point, and the jaw held open
        against its closing target while standing still (a moving jaw lags its
        target too, so the speed check keeps closing from counting as holding)."""
        near = np.linalg.norm(state.cube_pos - state.pinch, axis=1) < self.grasp_near_m
        blocked = state.qpos[:, 5] - state.target[:, 5] > 0.04
        still = np.abs(state.qvel[:, 5]) < 0.3
        return near & blocked & still

    def reward(self, state: SimState) -> np.ndarray:
        raise NotImplementedError

    def success(self, state: SimState) -> np.ndarray:
        raise NotImplementedError

    def privileged(self, state: SimState) -> np.ndarray:
        """Privileged features for teachers: object, pinch and target (bin or lower object)
        positions (arm frame), grasp."""
        offset = np.array([*robot.PAN_AXIS_XY, 0.0])
        return np.concatenate(
            [
                state.cube_pos - offset,
                state.pinch - offset,
                state.cube_pos - state.pinch,
                state.target_pos - offset,
                state.cube_quat,
                self.grasped(state)[:, None].astype(float),
            ],
            axis=1,
        ).astype(np.float32)

    PRIVILEGED_DIM = 17


def under_start_jaws(xy: np.ndarray, radius_m: float) -> np.ndarray:
    """Arm-frame positions (n, 2) within ``radius_m`` of the start pose's pinch point
    (all False for a radius of 0)."""
    if radius_m <= 0:
        return np.zeros(len(xy), dtype=bool)
    jaws = np.asarray(robot.START_PINCH_ARM[:2])
    return np.linalg.norm(np.asarray(xy) - jaws, axis=1) < radius_m


DARK_CLOTHS: dict = {"background_value": (0.0, 0.18), "desk_texture_p": 0.0}
"""The desks of the cans' and Stack's defaults: black and dark flat cloths, as before the
light desks. At their shipped DAgger rounds the light desks cost the plain student most
of the nominal sim (PickCube 84-91% -> 50%, PlaceCube 86-89% -> 20%, one seed, 64
episodes; docs/results/2026-12-05-appearance.md). A light desk is a ``--randomization``
file, or ``realgap adapt``, away."""

SHADOWED_DESKS: dict = {"shadow_p": 0.5}
"""PickCube's and PlaceCube's desks: the default desks, black to white and half of them
patterned, and the arm's shadow on half of them, for a student that standardizes each
image (``desk_invariant``). Without the shadows PickCube scored 44% on the white webcam
desk, with them 89% (27 trials each; docs/training.md)."""


class CanObject:
    """What handling an upright can instead of the cube changes, for any task: list it
    first among the bases (``class PickCan(CanObject, PickCube)``)."""

    object_shape = "can"
    keep_out_m: ClassVar[float] = CAN_KEEP_OUT_M
    default_layout: ClassVar[str] = "cans"
    grasp_near_m: ClassVar[float] = CAN_GRASP_NEAR_M
    randomization: ClassVar[dict] = {"cube_size_scale": (0.85, 1.15)}
    """The reference's can sizes: radius 14-19 mm, half height 25-35 mm (one scale)."""


def clear_of_start_jaws(xy: np.ndarray, radius_m: float, redraw) -> np.ndarray:
    """``xy`` with the positions within ``radius_m`` of the start pose's pinch point
    replaced by ``redraw(inside_mask)``, until none is (the few that land there)."""
    for _ in range(100):
        inside = under_start_jaws(xy, radius_m)
        if not inside.any():
            break
        xy[inside] = redraw(inside)
    return xy


def reach_distance(state: SimState) -> np.ndarray:
    return np.linalg.norm(state.cube_pos - state.pinch, axis=1)


def upright(quat: np.ndarray) -> np.ndarray:
    """The z component of each body's z axis (n,): 1 upright, 0 on its side."""
    _w, x, y, _z = quat.T
    return 1.0 - 2.0 * (x**2 + y**2)


def toppled(quat: np.ndarray) -> np.ndarray:
    """Tipped more than 45 degrees from upright (a knocked-over can)."""
    return upright(quat) < np.cos(np.pi / 4)
