"""The safety layer between any policy and any arm (fake or real).

Each rule answers a failure seen in practice:

- **Torque on without a jump.** Servos can power up with a stored goal of 0
  while the joint sits elsewhere; enabling torque would slam the arm there.
  :meth:`SafeArm.enable` writes every goal to the present position, reads it
  back, and only then enables torque; moves to a pose are ramped.
- **Every command checked.** NaN/inf is refused (:class:`UnsafeCommand`);
  targets are clipped to the joint limits and to a maximum change per command.
- **Never stiff in a crashed process.** On any exception, Ctrl-C or SIGTERM inside
  ``with SafeArm(...)``, or when the watchdog sees no command for
  ``watchdog_s``, the fault policy runs: ``release`` (default, as LeRobot's
  disconnect does) turns torque off at once; ``hold`` holds the present pose
  for ``hold_s`` seconds so someone can catch the arm, then turns torque off.
  Either way the arm ends with torque off.
  Ctrl-C or SIGTERM arriving *while* the fault policy, the release or the
  disconnect runs is deferred until they finish (:func:`deferred_interrupts`):
  a second interrupt can never skip the torque-off.
- **A failed torque-off is loud.** If the servos cannot be switched off (a pulled
  cable), a CRITICAL log line says so and :attr:`SafeArm.alert` holds it, which the
  deploy loop writes into the run folder.
- **Heat.** :meth:`SafeArm.check_temperatures` (before the first episode and
  between episodes) stops a run above ``temperature_limit_c``, and on a
  temperature it cannot read.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from realgap.bridge.interfaces import Arm, Clock
from realgap.errors import ConfigError, RealgapError, RealgapStop
from realgap.sim import robot


class UnsafeCommand(RealgapError, ValueError):
    """A command the safety layer refuses to send (NaN/inf, wrong shape)."""


class SafetyStop(RealgapStop):
    """The run must stop: the watchdog tripped or a servo is too hot."""


log = logging.getLogger(__name__)


@contextmanager
def deferred_interrupts(on_signal=None):
    """Hold SIGINT and SIGTERM until the block has run to its end, then raise the
    first one as ``KeyboardInterrupt`` (``"SIGTERM"`` for SIGTERM). Signals only
    reach the main thread, so elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def hold(signum, frame) -> None:
        received.append(signum)
        if on_signal is not None:
            on_signal(signal.Signals(signum).name)

    previous = {sig: signal.signal(sig, hold) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if received:
        raise KeyboardInterrupt("SIGTERM" if received[0] == signal.SIGTERM else "")


TARGET_POLICY_MAX_STEP = (0.10, 0.10, 0.10, 0.10, 0.10, 0.20)
"""Step limit for policies that command joint targets at 10 Hz (imitation, the expert):
their demonstrations move up to this much per command."""


@dataclass(frozen=True)
class SafetyConfig:
    """Safety limits; the defaults are safe for an SO-101 on a desk."""

    max_step_rad: tuple[float, ...] = (0.06, 0.06, 0.06, 0.06, 0.10, 0.12)
    """Largest change of a joint's goal per command (policy steps are ~0.015 rad)."""
    limit_margin_rad: float = 0.02
    """Goals stay this far inside the joint limits."""
    ramp_speed_rad_s: float = 0.6
    """Speed of scripted moves (torque-on ramp, reset motion)."""
    goal_sync_tolerance_rad: float = 0.05
    """Stored goals must read back within this of the present position before torque on."""
    watchdog_s: float = 1.0
    """Fault if no command arrives for this long during a control loop (wall seconds)."""
    temperature_limit_c: float = 65.0
    """Stop between episodes above this servo temperature (the STS3215's own cut-out,
    Max_Temperature_Limit, is 70 C)."""
    on_fault: Literal["release", "hold"] = "release"
    """What a fault does: torque off now, or hold the pose ``hold_s`` then torque off."""
    hold_s: float = 2.0
    """How long ``hold`` holds before releasing."""

    def __post_init__(self) -> None:
        if len(self.max_step_rad) != 6 or min(self.max_step_rad) <= 0:
            raise ConfigError("safety.max_step_rad needs 6 positive values")
        if self.on_fault not in ("release", "hold"):
            raise ConfigError(f"safety.on_fault must be 'release' or 'hold', got {self.on_fault!r}")
        if self.watchdog_s <= 0 or self.ramp_speed_rad_s <= 0:
            raise ConfigError("safety.watchdog_s and ramp_speed_rad_s must be positive")


@dataclass
class SafetyEvent:
    time: float
    kind: str
    detail: str = ""


@dataclass
class SafeArm:
    """Wraps an :class:`Arm`; the only way realgap commands one."""

    arm: Arm
    config: SafetyConfig = field(default_factory=SafetyConfig)
    clock: Clock = field(default_factory=Clock)

    def __post_init__(self) -> None:
        self.low = robot.JOINT_RANGES[:, 0] + self.config.limit_margin_rad
        self.high = robot.JOINT_RANGES[:, 1] - self.config.limit_margin_rad
        self.max_step = np.asarray(self.config.max_step_rad)
        self.events: list[SafetyEvent] = []
        self.last_sent: np.ndarray | None = None
        self.io = threading.RLock()  # the watchdog thread and the loop share the arm
        self.tripped: str | None = None
        self._last_feed = self.clock.now()
        self._watchdog: threading.Thread | None = None
        self._stop_watchdog = threading.Event()
        self.watching = False
        self.alert: str | None = None
        """Set when the servos may still hold torque (torque-off failed)."""

    def log(self, kind: str, detail: str = "") -> None:
        self.events.append(SafetyEvent(self.clock.now(), kind, detail))

    # -- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> SafeArm:
        self.arm.connect()
        self.log("connect")
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        # A second Ctrl-C or a SIGTERM in here must not skip the torque-off.
        with deferred_interrupts(self._interrupted_while_stopping):
            if exc_type is not None:
                self.fault(f"{exc_type.__name__}: {exc}")
            self.close()

    def _interrupted_while_stopping(self, name: str) -> None:
        self.log("interrupt_deferred", f"{name} while stopping: release and close run first")

    def close(self) -> None:
        """Torque off and disconnect (what every session ends with)."""
        with deferred_interrupts(self._interrupted_while_stopping):
            self._stop_watchdog.set()
            self.release()
            try:
                with self.io:
                    self.arm.disconnect()
            except ConnectionError as error:
                self.log("disconnect_failed", str(error))

    # -- torque ----------------------------------------------------------------------------
    def enable(self) -> np.ndarray:
        """Goals := present positions, verified, then torque on. Returns the pose held."""
        with self.io:
            present = self.arm.read_positions()
            stored = self.arm.read_goals()
            jump = np.abs(stored - present)
            if jump.max() > self.config.goal_sync_tolerance_rad:
                joint = robot.JOINT_NAMES[int(jump.argmax())]
                self.log("goal_sync", f"stored goals up to {jump.max():.2f} rad away ({joint})")
            sent = self.arm.send_goals(np.clip(present, *robot.JOINT_RANGES.T))
            readback = self.arm.read_goals()
            if np.abs(readback - sent).max() > self.config.goal_sync_tolerance_rad:
                raise SafetyStop(
                    "stored goals did not take the present position (read back "
                    f"{np.round(readback, 3)}, wrote {np.round(sent, 3)}); torque left off"
                )
            self.arm.set_torque(True)
            self.last_sent = sent
            self.log("torque_on")
        self._feed()
        self._start_watchdog()
        return sent

    def release(self) -> None:
        """Torque off (retried; a disconnected arm is logged, not raised)."""
        with self.io:
            for attempt in range(3):
                try:
                    if self.arm.is_connected:
                        self.arm.set_torque(False)
                        self.log("torque_off")
                    return
                except ConnectionError as error:
                    if attempt == 2:
                        self.alert = (
                            f"torque off failed ({error}): the servos may still hold "
                            "torque -- power the arm off now"
                        )
                        self.log("torque_off_failed", self.alert)
                        log.critical("!!! %s !!!", self.alert)

    def fault(self, reason: str) -> None:
        """Apply the fault policy; never raises."""
        self.log("fault", reason)
        if self.config.on_fault == "hold":
            try:
                with self.io:
                    self.arm.send_goals(self.arm.read_positions())
                self.log("hold", f"{self.config.hold_s} s")
                time.sleep(self.config.hold_s)  # wall time: someone is catching the arm
            except (ConnectionError, ValueError) as error:
                self.log("hold_failed", str(error))
        self.release()

    # -- commands ----------------------------------------------------------------------------
    def command(self, targets) -> np.ndarray:
        """Send joint targets (radians) after the checks; returns what was sent."""
        if self.tripped:
            raise SafetyStop(f"safety stop: {self.tripped}")
        targets = np.asarray(targets, dtype=float)
        if targets.shape != (6,):
            raise UnsafeCommand(f"command must have 6 joint targets, got shape {targets.shape}")
        if not np.all(np.isfinite(targets)):
            bad = [robot.JOINT_NAMES[i] for i in np.nonzero(~np.isfinite(targets))[0]]
            raise UnsafeCommand(f"command has NaN or inf for {bad}; not sent")
        if not self.arm.torque_enabled:
            raise SafetyStop("command while torque is off: call enable() first")
        clipped = np.clip(targets, self.low, self.high)
        if self.last_sent is not None:
            step = np.clip(clipped - self.last_sent, -self.max_step, self.max_step)
            clipped = self.last_sent + step
        with self.io:
            sent = self.arm.send_goals(clipped)
        self.last_sent = sent
        self._feed()
        return sent

    def move_to(self, pose, timeout_s: float = 10.0, tolerance_rad: float = 0.03) -> float:
        """Ramp to ``pose`` at ``ramp_speed_rad_s``; returns the clock time it settled."""
        pose = np.clip(np.asarray(pose, dtype=float), self.low, self.high)
        rate = 30.0
        step = self.config.ramp_speed_rad_s / rate
        started = self.clock.now()
        while True:
            current = self.last_sent if self.last_sent is not None else self.arm.read_positions()
            delta = np.clip(pose - current, -step, step)
            self.command(current + delta)
            self.clock.sleep(1.0 / rate)
            reached = np.abs(pose - self.last_sent).max() < 1e-9
            if reached and np.abs(self.read_positions() - pose).max() < tolerance_rad:
                return self.clock.now()
            if self.clock.now() - started > timeout_s:
                error = np.abs(self.read_positions() - pose)
                if reached:
                    self.log("move_timeout", f"settled {error.max():.3f} rad from the pose")
                    return self.clock.now()
                raise SafetyStop(f"move_to did not reach the pose in {timeout_s} s")

    def read_positions(self) -> np.ndarray:
        with self.io:
            return self.arm.read_positions()

    def check_temperatures(self) -> np.ndarray:
        """Read temperatures; raise :class:`SafetyStop` above the limit or when a
        temperature cannot be read (a servo that reports nothing may be overheating)."""
        with self.io:
            temperatures = np.asarray(self.arm.read_temperatures(), dtype=float)
        if temperatures.shape != (6,) or not np.all(np.isfinite(temperatures)):
            self.log("temperature_unreadable", str(temperatures))
            raise SafetyStop(
                f"servo temperatures unreadable ({temperatures}): check the servo bus "
                "before running"
            )
        hot = temperatures > self.config.temperature_limit_c
        if hot.any():
            names = [f"{robot.JOINT_NAMES[i]} {temperatures[i]:.0f} C" for i in np.nonzero(hot)[0]]
            self.log("too_hot", ", ".join(names))
            raise SafetyStop(
                f"servo temperature above {self.config.temperature_limit_c:.0f} C: "
                f"{', '.join(names)}; let the arm cool down"
            )
        return temperatures

    # -- watchdog -------------------------------------------------------------------------------
    @contextmanager
    def control_loop(self):
        """Arm the watchdog for the duration of a control loop (not between episodes,
        when the arm holds still while the operator resets the scene)."""
        self._feed()
        self.watching = True
        try:
            yield self
        finally:
            self.watching = False

    def _feed(self) -> None:
        # The session's clock: wall time on a real arm; on a fake arm with a virtual
        # clock, the world's time, so a slow host (a loaded CI machine) cannot trip it
        # while the simulated arm, which advances only with that clock, stands still.
        self._last_feed = self.clock.now()

    def _start_watchdog(self) -> None:
        if self._watchdog is not None and self._watchdog.is_alive():
            return
        self._stop_watchdog.clear()
        self._watchdog = threading.Thread(target=self._watch, name="realgap-watchdog", daemon=True)
        self._watchdog.start()

    def _watch(self) -> None:
        while not self._stop_watchdog.wait(0.02):
            if not (self.watching and self.arm.torque_enabled):
                continue
            silent = self.clock.now() - self._last_feed
            if silent > self.config.watchdog_s:
                self.tripped = f"watchdog: no command for {silent:.2f} s"
                self.fault(self.tripped)
                return
