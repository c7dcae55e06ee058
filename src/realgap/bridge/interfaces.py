"""The hardware contract every world implements: an ``Arm`` and a ``Camera``.

Modelled on LeRobot's robot contract -- connect / observe / act / disconnect,
usable as a context manager, and ``send_goals`` returns what was actually sent
after the backend clipped it. Backends (the fake twin, the real SO-101 through
LeRobot) implement the underscored hooks *in their own units*; the public
methods convert to and from contract radians through codecs built from the
backend's declared ``units``, so a conversion cannot be skipped.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from realgap.bridge.units import Codecs
from realgap.errors import ConfigError, RealgapError
from realgap.sim import robot


class ArmDisconnected(RealgapError, ConnectionError):
    """The arm stopped answering (cable pulled, power lost, port closed)."""


class Clock:
    """Wall time. Fake worlds may run on a :class:`VirtualClock` instead."""

    def now(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)


class VirtualClock(Clock):
    """Simulated time: ``sleep`` advances it instantly (fast, repeatable fake runs)."""

    def __init__(self, start: float = 0.0):
        self.time = start

    def now(self) -> float:
        return self.time

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.time += seconds


class Arm(ABC):
    """A 6-joint SO-101 arm. Public methods speak contract radians (``robot.JOINT_NAMES``
    order); backends implement the hooks in the units they declare."""

    joint_names: tuple[str, ...] = robot.JOINT_NAMES
    units: tuple[str, ...] = ("rad",) * 6
    """Units of the backend hooks, one per joint (see :mod:`realgap.bridge.units`)."""

    def __init__(self) -> None:
        self.codecs = Codecs(self.units)
        self.torque_enabled = False
        self.zero_offsets = np.zeros(len(self.joint_names))
        """Calibrated encoder zero errors, radians (reading = true angle + offset)."""

    def apply_calibration(self, offsets_rad) -> None:
        """Correct every reading and command by measured joint zero offsets (radians,
        e.g. ``Calibration.joint_offsets_rad``). The one place a calibration touches the
        arm: readings lose the offset, commands gain it, for fake and real arms alike."""
        offsets = np.asarray(offsets_rad, dtype=float)
        if offsets.shape != (len(self.joint_names),) or not np.all(np.isfinite(offsets)):
            raise ConfigError(
                f"joint zero offsets need {len(self.joint_names)} finite radians, "
                f"got {offsets_rad!r}"
            )
        self.zero_offsets = offsets

    # -- backend hooks (backend units) -------------------------------------------
    @abstractmethod
    def _connect(self) -> None: ...

    @abstractmethod
    def _disconnect(self) -> None: ...

    @abstractmethod
    def _read_positions(self) -> np.ndarray: ...

    @abstractmethod
    def _read_goals(self) -> np.ndarray: ...

    @abstractmethod
    def _write_goals(self, goals: np.ndarray) -> np.ndarray:
        """Write goals; return what was actually written after the backend's clipping."""

    @abstractmethod
    def _set_torque(self, enabled: bool) -> None: ...

    @abstractmethod
    def _read_temperatures(self) -> np.ndarray: ...

    @property
    @abstractmethod
    def is_connected(self) -> bool: ...

    # -- contract (radians) -----------------------------------------------------------
    def connect(self) -> None:
        self._connect()

    def disconnect(self) -> None:
        if self.is_connected:
            self._disconnect()

    def read_positions(self) -> np.ndarray:
        """Present joint positions, radians (calibrated)."""
        return self.codecs.to_contract(self._read_positions()) - self.zero_offsets

    def read_goals(self) -> np.ndarray:
        """The goal each servo has stored, radians (after power-up it may be garbage)."""
        return self.codecs.to_contract(self._read_goals()) - self.zero_offsets

    def send_goals(self, goals) -> np.ndarray:
        """Command joint goals (radians); returns the goals actually sent."""
        raw = self.codecs.from_contract(np.asarray(goals, dtype=float) + self.zero_offsets)
        return self.codecs.to_contract(self._write_goals(raw)) - self.zero_offsets

    def set_torque(self, enabled: bool) -> None:
        self._set_torque(bool(enabled))
        self.torque_enabled = bool(enabled)

    def read_temperatures(self) -> np.ndarray:
        """Servo temperatures, degrees Celsius."""
        return np.asarray(self._read_temperatures(), dtype=float)

    def __enter__(self):
        self.connect()
        return self

    def __exit__(self, *exc) -> None:
        self.disconnect()


@dataclass(frozen=True)
class CameraSettings:
    """Image controls that must stay fixed between sessions."""

    auto_exposure: bool = True
    exposure: float = 1.0
    """Exposure in the camera's own units (fake: relative to the twin; V4L2: 100 us units)."""
    gain: float = 1.0
    white_balance: float | None = None
    """Colour temperature in kelvin; None leaves auto white balance on."""

    def check(self) -> CameraSettings:
        """Refuse values no camera can be locked at (NaN, negative, absurd); returns self.
        Read-back settings are not checked: a camera reports what it reports."""
        for name, value, low, high in (
            ("exposure", self.exposure, 0.0, 1e5),
            ("gain", self.gain, 0.0, 1e3),
        ):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ConfigError(f"camera {name}: expected a number, got {value!r}")
            if not (math.isfinite(value) and low <= value <= high) or (
                name == "exposure" and value == 0
            ):
                raise ConfigError(f"camera {name} must be in ({low:g}, {high:g}], got {value!r}")
        wb = self.white_balance
        if wb is not None and not (isinstance(wb, (int, float)) and 1000 <= wb <= 15000):
            raise ConfigError(f"camera white_balance must be 1000-15000 K, got {wb!r}")
        return self

    @property
    def locked(self) -> bool:
        return not self.auto_exposure and self.white_balance is not None


@dataclass
class Frame:
    """One camera frame and when it was captured (clock seconds)."""

    image: np.ndarray
    timestamp: float


class Camera(ABC):
    """A wrist camera. ``read`` returns the *next buffered* frame, which may be old
    (drivers queue frames); ``read_fresh`` flushes and waits for a new one."""

    camera_id: str = "wrist"
    fps: float = 30.0

    @abstractmethod
    def connect(self) -> None: ...

    @abstractmethod
    def disconnect(self) -> None: ...

    @abstractmethod
    def read(self) -> Frame: ...

    @abstractmethod
    def read_latest(self) -> Frame:
        """The newest frame available (older buffered frames are dropped); at most
        one frame period old. What a control loop reads every step."""

    @abstractmethod
    def flush(self) -> int:
        """Drop every buffered frame; returns how many were dropped."""

    @abstractmethod
    def get_settings(self) -> CameraSettings: ...

    @abstractmethod
    def apply_settings(self, settings: CameraSettings) -> None: ...

    def read_fresh(self, not_before: float) -> Frame:
        """A frame captured at or after ``not_before`` (clock seconds): buffered
        frames are flushed first, so the first frame of an episode is never one
        taken during the reset motion."""
        self.flush()
        for _ in range(int(self.fps * 2) + 2):
            frame = self.read()
            if frame.timestamp >= not_before:
                return frame
        raise TimeoutError(f"camera {self.camera_id!r} gave no frame newer than t={not_before:.3f}")

    def __enter__(self):
        self.connect()
        return self

    def __exit__(self, *exc) -> None:
        self.disconnect()
