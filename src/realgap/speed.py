"""How fast a policy runs: the control rate and the fraction of the training action
scale, in the sim, in training and on an arm.

The reference deploys at 15 Hz with every action scaled to 0.15 of training's, about
a fifth of training's joint speed. A policy trained at one speed and run at another
meets states it never saw (a gripper that closes five times slower; a cube that is
still falling), so realgap trains over the speeds deployment uses and records them in
the policy's contract (:class:`TrainedSpeeds`); deployment defaults to the recorded
recommendation and refuses a speed outside the trained range unless forced.

Episode length follows the speed: a step moves a joint by at most
``action_fraction`` of the training scale, whatever the rate, so an episode that must
allow the same joint travel as a training episode runs ``training_steps /
action_fraction`` steps (:func:`episode_steps_at`). In seconds, that is the training
episode's duration scaled by the ratio of the joint speeds.

The fraction slows the arm, not the gripper: the gripper's step never falls below
:data:`GRIPPER_MIN_FRACTION` of training's (:func:`step_fractions`), in training's
speed draws, in the sim and on the arm alike.

This module sits at the bottom of the package (it imports only numpy and the errors),
so the sim, the policy contract and the bridge share one definition.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from realgap.errors import ConfigError

TRAINING_HZ = 10.0
"""The rate the twin trains its nominal episodes at (the reference's 10 Hz)."""
REFERENCE_DEPLOY = (15.0, 0.15)
"""The reference write-up's deployment: 15 Hz, actions scaled to 0.15."""
DEFAULT_TRAINED_HZ = (10.0, 15.0)
"""Control rates training draws from by default: the reference's training and deploy."""
DEFAULT_TRAINED_FRACTION = (0.15, 1.0)
"""Fractions of the action scale training draws from by default."""


GRIPPER_MIN_FRACTION = 0.6
"""The gripper's step is never slowed below this fraction of the training scale. A slow
deploy exists to slow the arm's motion; a gripper slowed with it closes five times
slower, and the policy lifts before its grip has built up: StackCube at 15 Hz x 0.15
read 19% on ``typical_so101`` (soft servos, a heavier, slipperier cube) with the
gripper slowed and 74% with it at 0.6 (docs/results/2026-12-05-deploy-speeds.md).
0.6 of training's 0.2 rad is the safety layer's default gripper step, 0.12 rad."""


class SpeedError(ConfigError):
    """A deployment speed outside what the policy was trained for (the message says
    which, and how to force it)."""


def episode_steps_at(training_steps: int, action_fraction: float) -> int:
    """Steps that allow a training episode's joint travel at ``action_fraction`` of
    the training action scale (a rate changes the seconds, not the travel per step)."""
    if not (math.isfinite(action_fraction) and action_fraction > 0):
        raise ConfigError(f"action fraction must be positive, got {action_fraction}")
    return math.ceil(training_steps / action_fraction - 1e-9)


def step_fractions(action_fraction) -> np.ndarray:
    """Each joint's fraction of the training action scale at ``action_fraction`` (a
    number, or one per episode: shape (..., 6)): the five arm joints move at the
    fraction, the gripper at no less than :data:`GRIPPER_MIN_FRACTION`."""
    fraction = np.asarray(action_fraction, dtype=float)[..., None]
    out = np.repeat(fraction, 6, axis=-1)
    out[..., 5] = np.maximum(out[..., 5], GRIPPER_MIN_FRACTION)
    return out


@dataclass(frozen=True)
class DeploySpeed:
    """One speed: a control rate and a fraction of the training action scale."""

    control_hz: float
    action_fraction: float

    def __post_init__(self) -> None:
        if not (math.isfinite(self.control_hz) and self.control_hz > 0):
            raise ConfigError(f"control rate must be positive, got {self.control_hz}")
        if not (math.isfinite(self.action_fraction) and 0 < self.action_fraction <= 1):
            raise ConfigError(f"action scale must be in (0, 1], got {self.action_fraction}")

    @property
    def joint_speed(self) -> float:
        """Joint speed relative to training's (10 Hz, full scale): 0.225 for 15 Hz x 0.15."""
        return self.action_fraction * self.control_hz / TRAINING_HZ

    def describe(self) -> str:
        return f"{self.control_hz:g} Hz x {self.action_fraction:g}"


@dataclass(frozen=True)
class TrainedSpeeds:
    """The speeds a policy was trained for (uniform ranges, both ends included) and the
    one deployment should start at; stored in the policy's contract."""

    control_hz: tuple[float, float]
    action_fraction: tuple[float, float]
    recommended: DeploySpeed
    """Slow for a first session: the slowest fraction trained, at the reference's 15 Hz
    when trained there."""

    def __post_init__(self) -> None:
        for name in ("control_hz", "action_fraction"):
            low, high = getattr(self, name)
            if not (0 < low <= high and math.isfinite(high)):
                raise ConfigError(f"trained speeds: {name} needs 0 < low <= high, got {low, high}")
        if self.action_fraction[1] > 1:
            raise ConfigError("trained speeds: action_fraction cannot exceed 1")
        if not self.covers(self.recommended):
            raise ConfigError(
                f"trained speeds: the recommendation {self.recommended.describe()} is outside "
                "the trained range"
            )

    @classmethod
    def of_ranges(cls, control_hz, action_fraction) -> TrainedSpeeds:
        """The ranges, and as the recommendation the slowest fraction at the reference's
        15 Hz if trained there (else the fastest trained rate below it)."""
        hz = (float(control_hz[0]), float(control_hz[1]))
        fraction = (float(action_fraction[0]), float(action_fraction[1]))
        rate = min(max(REFERENCE_DEPLOY[0], hz[0]), hz[1])
        return cls(hz, fraction, DeploySpeed(rate, fraction[0]))

    def covers(self, speed: DeploySpeed, slack: float = 1e-6) -> bool:
        low_hz, high_hz = self.control_hz
        low_f, high_f = self.action_fraction
        return low_hz * (1 - slack) <= speed.control_hz <= high_hz * (1 + slack) and low_f * (
            1 - slack
        ) <= speed.action_fraction <= high_f * (1 + slack)

    def describe(self) -> str:
        return (
            f"{self.control_hz[0]:g}-{self.control_hz[1]:g} Hz and "
            f"{self.action_fraction[0]:g}-{self.action_fraction[1]:g} of the action scale"
        )

    def to_dict(self) -> dict:
        return {
            "control_hz": list(self.control_hz),
            "action_fraction": list(self.action_fraction),
            "recommended": {
                "control_hz": self.recommended.control_hz,
                "action_fraction": self.recommended.action_fraction,
            },
        }

    @classmethod
    def from_dict(cls, data: dict) -> TrainedSpeeds:
        try:
            recommended = DeploySpeed(**data["recommended"])
            return cls(tuple(data["control_hz"]), tuple(data["action_fraction"]), recommended)
        except (KeyError, TypeError, ValueError) as error:
            raise ConfigError(f"trained speeds: not a speeds record ({error})") from None


def resolve_speed(
    trained: TrainedSpeeds | None,
    control_hz: float | None,
    action_fraction: float | None,
    force: bool = False,
) -> tuple[DeploySpeed, str | None]:
    """The speed to deploy at: what was asked, the rest from the policy's recommendation
    (or, for a policy without a record, the reference's 15 Hz x 0.15), and a warning for
    the user or None. A speed outside the trained range raises :class:`SpeedError`
    unless ``force``."""
    if trained is None:
        speed = DeploySpeed(
            control_hz or REFERENCE_DEPLOY[0],
            action_fraction or REFERENCE_DEPLOY[1],
        )
        return speed, (
            "this policy's contract does not say which speeds it was trained for (trained "
            f"before realgap recorded them); running at {speed.describe()} as before"
        )
    speed = DeploySpeed(
        control_hz or trained.recommended.control_hz,
        action_fraction or trained.recommended.action_fraction,
    )
    if trained.covers(speed):
        return speed, None
    message = (
        f"{speed.describe()} is outside the speeds this policy was trained for "
        f"({trained.describe()})"
    )
    if not force:
        raise SpeedError(f"{message}; pass --force-speed to run it anyway")
    return speed, f"{message}: forced"
