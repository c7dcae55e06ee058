"""The observation/action contract a policy was trained with, stored beside its weights.

A policy only works in a world that feeds it what it was trained on: the same
joint order and units, image resolution, action scale, control rate and camera
pose. ``PolicyContract.check`` compares two contracts and names every field
that differs, so a mismatch is refused at load time instead of silently
producing a policy that "almost" works.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields

from realgap.errors import ConfigError
from realgap.policy_io import ACTION_MODES
from realgap.sim import robot
from realgap.speed import TrainedSpeeds

CONTRACT_VERSION = 1


class ContractMismatch(ConfigError):
    """A policy's contract differs from the world it is asked to run in."""


@dataclass(frozen=True)
class PolicyContract:
    """Everything a policy assumes about its inputs and outputs."""

    task: str
    image_size: int
    control_hz: float
    action_scale: tuple[float, ...]
    joint_names: tuple[str, ...] = robot.JOINT_NAMES
    joint_units: str = "rad"
    """Joint readings and targets in radians, zero at mid-range ("new calibration")."""
    state_layout: tuple[str, ...] = ("joint_positions[6]", "joint_targets[6]")
    camera_pos: tuple[float, ...] = robot.WRIST_CAMERA_POS
    camera_xyaxes: tuple[float, ...] = robot.WRIST_CAMERA_XYAXES
    camera_fovy: float = robot.WRIST_CAMERA_FOVY
    action_mode: str = "delta"
    """``delta``: actions in [-1, 1] move the joint targets by ``action_scale`` per step
    (RL policies). ``absolute``: actions are the joint targets themselves, radians, in
    the readings' frame (imitation policies, like LeRobot's ACT), reached at most
    ``action_scale`` per step (see :func:`realgap.policy_io.decode_action`)."""
    version: int = CONTRACT_VERSION
    architecture: str = field(default="student", compare=False)
    """The network in ``policy.pt`` (``student``: realgap's distilled student;
    ``squint``: the reference recipe's, trained by visual SAC; ``recurrent``: the
    student with a memory, which the runtime zeroes at every episode start). Worlds do
    not care which, so it is not compared; the loader builds the network it names."""
    weights_sha256: str = field(default="", compare=False)
    """Digest of the ``policy.pt`` this contract was saved with: a contract copied
    from another policy, or weights changed after training, are refused at load."""
    speeds: dict | None = field(default=None, compare=False)
    """The speeds the policy was trained for (:class:`realgap.speed.TrainedSpeeds` as a
    dict: rate and action-fraction ranges, and the recommended deploy speed). ``realgap
    deploy`` and ``eval`` start there and refuse a speed outside it unless forced; None
    (policies trained before realgap recorded it, and imitation policies, which run at
    their demonstrations' rate) keeps the reference's 15 Hz x 0.15."""
    episode_steps: int | None = field(default=None, compare=False)
    """Steps of a training episode at the training speed: a deployment at a fraction f
    of the action scale runs ``episode_steps / f`` (None: the task's default)."""
    start_pose: tuple[float, ...] | None = field(default=None, compare=False)
    """Where the policy's training episodes started (radians): the arm starts every
    episode there. None (policies saved before realgap recorded it): the ``start``
    keyframe, where every task started then."""
    extra: dict = field(default_factory=dict, compare=False)
    """Informational fields (training recipe, parameter count); not checked."""

    def __post_init__(self) -> None:
        size = self.image_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 4:
            raise ContractMismatch(f"image_size: need a whole number >= 4, got {size!r}")
        hz = self.control_hz
        if isinstance(hz, bool) or not isinstance(hz, (int, float)) or not 0 < hz < 1000:
            raise ContractMismatch(f"control_hz: need a positive rate, got {hz!r}")
        scale = self.action_scale
        if (
            not isinstance(scale, (tuple, list))
            or len(scale) != len(self.joint_names)
            or not all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in scale)
        ):
            raise ContractMismatch(
                f"action_scale: need {len(self.joint_names)} positive numbers, got {scale!r}"
            )
        if self.action_mode not in ACTION_MODES:
            raise ContractMismatch(
                f"action_mode: {self.action_mode!r} is not one of {list(ACTION_MODES)}"
            )
        if self.speeds is not None:
            try:
                TrainedSpeeds.from_dict(self.speeds)
            except ConfigError as error:
                raise ContractMismatch(f"speeds: {error}") from None
        if self.start_pose is not None:
            problem = robot.pose_problem(self.start_pose)
            if problem:
                raise ContractMismatch(f"start_pose: {problem}")
        steps = self.episode_steps
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int)):
            raise ContractMismatch(f"episode_steps: need a whole number, got {steps!r}")
        if steps is not None and steps < 1:
            raise ContractMismatch(f"episode_steps: need at least 1, got {steps}")

    @property
    def trained_speeds(self) -> TrainedSpeeds | None:
        """The recorded training speeds, or None for a policy without the record."""
        return None if self.speeds is None else TrainedSpeeds.from_dict(self.speeds)

    @property
    def episode_start(self) -> tuple[float, ...]:
        """Where the arm starts each episode for this policy (radians)."""
        pose = robot.KEYFRAMES["start"] if self.start_pose is None else self.start_pose
        return tuple(float(x) for x in pose)

    @classmethod
    def for_env(cls, env, speeds: TrainedSpeeds | None = None) -> PolicyContract:
        """The contract a :class:`~realgap.sim.batched_env.BatchedEnv` offers, with the
        speeds a policy was trained over."""
        config = env.config
        return cls(
            task=env.task.name,
            image_size=config.image_size,
            control_hz=float(config.control_hz),
            action_scale=tuple(float(x) for x in config.action_scale),
            speeds=None if speeds is None else speeds.to_dict(),
            episode_steps=int(config.episode_steps),
            start_pose=tuple(float(x) for x in config.start_pose),
        )

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> PolicyContract:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ContractMismatch(f"policy contract has unknown fields {unknown}")
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        if isinstance(values.get("speeds"), dict):  # a nested record, lists kept
            values["speeds"] = data["speeds"]
        try:
            return cls(**values)
        except TypeError as error:  # a missing field, or a number where a list belongs
            raise ContractMismatch(f"policy contract: {error}") from None

    def differences(self, other: PolicyContract, ignore: tuple[str, ...] = ()) -> list[str]:
        """Human-readable list of fields that differ (floats compared to 1e-6)."""
        problems = []
        for f in fields(self):
            if f.name in ignore or not f.compare:
                continue
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if not _close(mine, theirs):
                problems.append(f"{f.name}: policy has {mine!r}, world has {theirs!r}")
        return problems

    def check(self, world: PolicyContract, ignore: tuple[str, ...] = ()) -> None:
        """Raise :class:`ContractMismatch` naming every differing field."""
        problems = self.differences(world, ignore)
        if problems:
            raise ContractMismatch("policy contract does not match: " + "; ".join(problems))


def _close(a, b) -> bool:
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        try:
            return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-9)
        except (TypeError, ValueError):
            return False
    return a == b
