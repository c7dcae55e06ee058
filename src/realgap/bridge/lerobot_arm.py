"""The real SO-101 through LeRobot's follower driver (imported via :mod:`realgap.lerobot_api`).

Install with ``pip install 'realgap[real]'`` (LeRobot >= 0.5 needs Python >= 3.12).
This module relies on behaviour that has changed between releases (all checked on
0.6.1):

- ``SO101Follower`` is an alias of ``SOFollower`` in ``lerobot.robots.so_follower``
  (``so101_follower`` went away in 0.4.3, and the calibration folder moved).
- ``use_degrees=True`` (the default since 0.4.4): body joints are degrees from the
  range middle, unclipped; the gripper is 0..100, clipped. We *set* it rather than
  rely on the default, and declare matching units, so the conversion to radians is
  chosen by the declaration (see :mod:`realgap.bridge.units`).
- ``connect()`` ends in ``configure()``, whose ``torque_disabled()`` block re-enables
  torque, and nothing writes ``Goal_Position`` first: a servo that powered up with a
  stored goal of 0 jumps. We open the bus ourselves, write every goal to the present
  position, and only then call ``configure()``; then torque is turned off again so
  that :class:`~realgap.bridge.safety.SafeArm` decides when it comes on.
- No exception handling in LeRobot turns torque off (only ``disconnect()`` does):
  :class:`~realgap.bridge.safety.SafeArm` owns that.
- ``max_relative_target`` must be a float (or None), not an int-like string.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from realgap.bridge.interfaces import Arm, ArmDisconnected
from realgap.errors import ConfigError
from realgap.lerobot_api import LeRobotUnavailable, import_follower
from realgap.sim import robot

__all__ = ["LeRobotArm", "LeRobotUnavailable"]


class LeRobotArm(Arm):
    """An SO-101 follower arm on a serial port, calibrated by LeRobot (per robot id)."""

    # What SOFollower(use_degrees=True) returns: declared, so conversions follow it.
    units = ("deg",) * 5 + ("range_0_100",)

    def __init__(
        self,
        port: str,
        robot_id: str,
        calibration_dir: str | Path | None = None,
        max_relative_target: float | None = None,
    ):
        super().__init__()
        if max_relative_target is not None:
            max_relative_target = float(max_relative_target)
            if not max_relative_target > 0:
                raise ConfigError("max_relative_target must be a positive number of degrees")
        self.port, self.robot_id = port, robot_id
        self.calibration_dir = Path(calibration_dir) if calibration_dir else None
        self.max_relative_target = max_relative_target
        self.robot = None

    @property
    def is_connected(self) -> bool:
        return self.robot is not None and self.robot.bus.is_connected

    def _connect(self) -> None:
        follower, follower_config = import_follower()
        config = follower_config(
            port=self.port,
            id=self.robot_id,
            calibration_dir=self.calibration_dir,
            use_degrees=True,
            max_relative_target=self.max_relative_target,
            disable_torque_on_disconnect=True,
        )
        self.robot = follower(config)
        if not self.robot.calibration:
            raise FileNotFoundError(
                f"no LeRobot calibration for robot id {self.robot_id!r} in "
                f"{self.robot.calibration_dir}; run `lerobot-calibrate` first"
            )
        bus = self.robot.bus
        try:
            bus.connect()
            if not self.robot.is_calibrated:
                # What LeRobot does when you press ENTER at its prompt: the file wins.
                bus.write_calibration(self.robot.calibration)
            present = bus.sync_read("Present_Position", normalize=False)
            bus.sync_write("Goal_Position", present, normalize=False)
            self.robot.configure()  # re-enables torque -- now at the present position
            bus.disable_torque()
        except ConnectionError as error:
            raise ArmDisconnected(f"SO-101 on {self.port}: {error}") from error

    def _disconnect(self) -> None:
        try:
            self.robot.disconnect()
        except ConnectionError as error:
            raise ArmDisconnected(f"SO-101 on {self.port}: {error}") from error

    def _call(self, function, *args, **kwargs):
        if not self.is_connected:
            raise ArmDisconnected(f"SO-101 on {self.port} is not connected")
        try:
            return function(*args, **kwargs)
        except ConnectionError as error:
            raise ArmDisconnected(f"SO-101 on {self.port}: {error}") from error

    def _read_positions(self) -> np.ndarray:
        observation = self._call(self.robot.get_observation)
        return np.array([observation[f"{name}.pos"] for name in robot.JOINT_NAMES], dtype=float)

    def _read_goals(self) -> np.ndarray:
        goals = self._call(self.robot.bus.sync_read, "Goal_Position")
        return np.array([goals[name] for name in robot.JOINT_NAMES], dtype=float)

    def _write_goals(self, goals: np.ndarray) -> np.ndarray:
        action = {f"{name}.pos": float(value) for name, value in zip(robot.JOINT_NAMES, goals)}
        sent = self._call(self.robot.send_action, action)
        return np.array([sent[f"{name}.pos"] for name in robot.JOINT_NAMES], dtype=float)

    def _set_torque(self, enabled: bool) -> None:
        bus = self.robot.bus
        self._call(bus.enable_torque if enabled else bus.disable_torque)

    def _read_temperatures(self) -> np.ndarray:
        values = self._call(self.robot.bus.sync_read, "Present_Temperature", normalize=False)
        return np.array([values[name] for name in robot.JOINT_NAMES], dtype=float)
