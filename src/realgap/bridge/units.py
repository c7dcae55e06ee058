"""Joint unit conversions, chosen by what a backend *declares*, never by its name.

The policy contract speaks radians, zero at mid-range (``robot.JOINT_RANGES``).
Backends speak whatever their driver speaks: LeRobot's SO-101 driver gives body
joints in degrees from the range middle and the gripper as 0..100. Each backend
declares one unit per joint (``Arm.units``) and :class:`Codecs` builds the
converters from that declaration. Codecs speak the hardware's units only: a
calibration's zero offsets are applied once, by ``Arm`` (never by swapping
codecs). There is no ``if robot_type == ...`` anywhere, so renaming a robot
type cannot silently skip the gripper conversion; an unknown unit is refused at
connect time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from realgap.errors import ConfigError
from realgap.sim import robot


class UnitError(ConfigError):
    """A backend declared units realgap cannot convert, or readings outside any sane range."""


def _linear(low: float, high: float, lo_raw: float, hi_raw: float):
    scale = (high - low) / (hi_raw - lo_raw)
    return (lambda raw: low + (raw - lo_raw) * scale), (lambda rad: lo_raw + (rad - low) / scale)


_UNITS: dict[str, Callable[[float, float], tuple[Callable, Callable]]] = {
    # unit -> (joint low, joint high) -> (to_rad, from_rad)
    "rad": lambda low, high: ((lambda raw: raw), (lambda rad: rad)),
    "deg": lambda low, high: (np.deg2rad, np.rad2deg),
    "range_m100_100": lambda low, high: _linear(low, high, -100.0, 100.0),
    "range_0_100": lambda low, high: _linear(low, high, 0.0, 100.0),
}
"""Every unit a backend may declare. ``deg`` is degrees from the range middle
(LeRobot ``use_degrees=True``); the ``range_*`` units map the calibrated range
linearly onto the joint's contract range."""

KNOWN_UNITS = tuple(_UNITS)


@dataclass(frozen=True)
class JointCodec:
    """Converts one joint between backend units and contract radians."""

    joint: str
    unit: str
    low: float
    high: float

    def __post_init__(self) -> None:
        if self.unit not in _UNITS:
            raise UnitError(
                f"joint {self.joint!r}: unknown unit {self.unit!r}; "
                f"known units: {list(KNOWN_UNITS)}"
            )

    def to_contract(self, raw):
        return _UNITS[self.unit](self.low, self.high)[0](np.asarray(raw, dtype=float))

    def from_contract(self, rad):
        return _UNITS[self.unit](self.low, self.high)[1](np.asarray(rad, dtype=float))


class Codecs:
    """The codecs of all joints, in contract joint order."""

    def __init__(self, units, ranges=robot.JOINT_RANGES, names=robot.JOINT_NAMES):
        units = tuple(units)
        if len(units) != len(names):
            raise UnitError(f"backend declares {len(units)} units for {len(names)} joints")
        self.codecs = [
            JointCodec(name, unit, float(low), float(high))
            for name, unit, (low, high) in zip(names, units, ranges)
        ]

    def to_contract(self, raw) -> np.ndarray:
        raw = np.asarray(raw, dtype=float)
        return np.array([codec.to_contract(value) for codec, value in zip(self.codecs, raw)])

    def from_contract(self, rad) -> np.ndarray:
        rad = np.asarray(rad, dtype=float)
        return np.array([codec.from_contract(value) for codec, value in zip(self.codecs, rad)])

    def check_in_range(self, rad, margin_rad: float = np.deg2rad(15.0)) -> None:
        """Refuse readings that cannot be angles of this arm: the symptom of a
        conversion that did not run, or the wrong units."""
        for codec, value in zip(self.codecs, np.asarray(rad, dtype=float)):
            if not codec.low - margin_rad <= value <= codec.high + margin_rad:
                raise UnitError(
                    f"joint {codec.joint!r} reads {value:.3f} rad after converting from "
                    f"{codec.unit!r}, outside its range [{codec.low:.2f}, {codec.high:.2f}]: "
                    "wrong units, or calibration?"
                )
