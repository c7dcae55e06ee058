"""A stateful Feetech STS3215 servo-chain emulator on a pseudo-terminal.

LeRobot's ``FeetechMotorsBus`` (and the SO-101 driver on top of it) open the
emulator's port like a USB serial adapter and run unmodified: this is how
realgap tests the real-arm path in CI without hardware. It speaks Feetech
protocol 0 -- ``FF FF id len instr params checksum`` with PING, READ, WRITE,
REG_WRITE/ACTION, SYNC_READ and SYNC_WRITE -- over a register bank per servo:

=====================  =====  ===========================================
register               addr   behaviour
=====================  =====  ===========================================
Model_Number           3      777 (STS3215)
Min/Max_Position_Limit 9/11   goals are clamped into them
Max_Torque_Limit       16     stored
P/D/I_Coefficient      21-23  stored
Homing_Offset          31     sign-magnitude, bit 11: Present = actual - offset
Torque_Enable          40     an enabled servo drives to its *stored* goal
Goal_Position          42     sign-magnitude, bit 15
Lock                   55     stored
Present_Position       56     sign-magnitude, bit 15, 4096 ticks per turn
Present_Temperature    63     degrees C
=====================  =====  ===========================================

Faults it reproduces: ``power_up_goal_zero`` (the stored goal reads 0 after
power-up while the joint sits elsewhere) and :meth:`STS3215Chain.unplug`
(the chain stops answering, as when the cable is pulled).

Motion comes from a :class:`ServoPhysics`: :class:`KinematicServos` (each
servo slews towards its goal) or :class:`FakeWorldServos`, which drives a
:class:`~realgap.bridge.fake.FakeWorld` so the real driver moves the twin.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
import tty

import numpy as np

from realgap.errors import ConfigError
from realgap.sim import robot

TICKS_PER_TURN = 4096
MODEL_NUMBER = 777
INST_PING, INST_READ, INST_WRITE, INST_REG_WRITE, INST_ACTION = 1, 2, 3, 4, 5
INST_SYNC_READ, INST_SYNC_WRITE = 0x82, 0x83
BROADCAST = 0xFE

REG = {
    "Firmware_Major_Version": 0,
    "Firmware_Minor_Version": 1,
    "Model_Number": 3,
    "ID": 5,
    "Baud_Rate": 6,
    "Return_Delay_Time": 7,
    "Response_Status_Level": 8,
    "Min_Position_Limit": 9,
    "Max_Position_Limit": 11,
    "Max_Temperature_Limit": 13,
    "Max_Torque_Limit": 16,
    "Phase": 18,
    "P_Coefficient": 21,
    "D_Coefficient": 22,
    "I_Coefficient": 23,
    "Homing_Offset": 31,
    "Operating_Mode": 33,
    "Torque_Enable": 40,
    "Acceleration": 41,
    "Goal_Position": 42,
    "Torque_Limit": 48,
    "Lock": 55,
    "Present_Position": 56,
    "Present_Velocity": 58,
    "Present_Load": 60,
    "Present_Voltage": 62,
    "Present_Temperature": 63,
    "Moving": 66,
    "Present_Current": 69,
}


def encode_sign_magnitude(value: int, bit: int) -> int:
    if abs(value) >= 1 << bit:
        raise ConfigError(f"{value} does not fit a sign-magnitude value with sign bit {bit}")
    return ((1 << bit) if value < 0 else 0) | abs(int(value))


def decode_sign_magnitude(raw: int, bit: int) -> int:
    magnitude = raw & ((1 << bit) - 1)
    return -magnitude if raw >> bit & 1 else magnitude


def checksum(body) -> int:
    return ~sum(body) & 0xFF


class ServoPhysics:
    """Where the servos' shafts are. Positions are absolute encoder ticks (0..4095)."""

    def positions(self) -> np.ndarray:
        raise NotImplementedError

    def drive(self, goals: np.ndarray, torque: np.ndarray, limits: np.ndarray) -> None:
        """Servo ``i`` holds ``goals[i]`` (absolute ticks) when ``torque[i]``."""
        raise NotImplementedError

    def temperatures(self) -> np.ndarray:
        return np.full(len(self.positions()), 32.0)


class KinematicServos(ServoPhysics):
    """Each powered servo slews to its goal at ``speed`` ticks/s (wall time)."""

    def __init__(self, start_ticks, speed: float = 3000.0):
        self.ticks = np.asarray(start_ticks, dtype=float)
        self.goal = self.ticks.copy()
        self.torque = np.zeros(len(self.ticks), dtype=bool)
        self.speed = speed
        self.last = time.monotonic()

    def _advance(self) -> None:
        now = time.monotonic()
        step = self.speed * (now - self.last)
        self.last = now
        delta = np.clip(self.goal - self.ticks, -step, step)
        self.ticks = np.where(self.torque, self.ticks + delta, self.ticks)

    def positions(self) -> np.ndarray:
        self._advance()
        return self.ticks.copy()

    def drive(self, goals, torque, limits) -> None:
        self._advance()
        self.goal, self.torque = np.asarray(goals, dtype=float), np.asarray(torque, dtype=bool)


class FakeWorldServos(ServoPhysics):
    """The twin's joints behind the servo registers.

    The twin speaks radians from mid-range; registers speak ticks. The mapping
    uses the chain's own calibration registers (as LeRobot wrote them), so
    LeRobot's degrees/0..100 conversion of Present_Position lands exactly on the
    twin's joint reading: body joints ``P = mid + rad * 4095 / 2pi``; the gripper
    maps its limits onto the joint's range.
    """

    def __init__(self, world, chain: STS3215Chain | None = None):
        self.world = world
        self.chain = chain

    def _calibration(self):
        regs = self.chain.servos
        mins = np.array([s.read_word("Min_Position_Limit") for s in regs], dtype=float)
        maxs = np.array([s.read_word("Max_Position_Limit") for s in regs], dtype=float)
        offsets = np.array([s.homing_offset() for s in regs], dtype=float)
        return mins, maxs, offsets

    def _rad_to_present(self, rad, mins, maxs):

        low, high = robot.JOINT_RANGES[:, 0], robot.JOINT_RANGES[:, 1]
        body = (mins + maxs) / 2 + rad * (TICKS_PER_TURN - 1) / (2 * np.pi)
        gripper = mins + (rad - low) / (high - low) * (maxs - mins)
        return np.where(np.arange(len(rad)) == 5, gripper, body)

    def _present_to_rad(self, present, mins, maxs):

        low, high = robot.JOINT_RANGES[:, 0], robot.JOINT_RANGES[:, 1]
        body = (present - (mins + maxs) / 2) * 2 * np.pi / (TICKS_PER_TURN - 1)
        gripper = low + (present - mins) / np.maximum(maxs - mins, 1) * (high - low)
        return np.where(np.arange(len(present)) == 5, gripper, body)

    def positions(self) -> np.ndarray:
        mins, maxs, offsets = self._calibration()
        return self._rad_to_present(self.world.readings(), mins, maxs) + offsets

    def drive(self, goals, torque, limits) -> None:
        mins, maxs, offsets = self._calibration()
        self.world.write_goals(self._present_to_rad(np.asarray(goals) - offsets, mins, maxs))
        self.world.set_torque(np.asarray(torque, dtype=bool))

    def temperatures(self) -> np.ndarray:
        return self.world.temperature.copy()


class Servo:
    """One STS3215's register bank."""

    def __init__(self, servo_id: int, power_up_goal_zero: bool):
        self.memory = bytearray(256)
        self.id = servo_id
        self.power_up_goal_zero = power_up_goal_zero
        self.write_byte("Firmware_Major_Version", 3)
        self.write_byte("Firmware_Minor_Version", 10)
        self.write_word("Model_Number", MODEL_NUMBER)
        self.write_byte("ID", servo_id)
        self.write_byte("Response_Status_Level", 1)
        self.write_word("Min_Position_Limit", 0)
        self.write_word("Max_Position_Limit", TICKS_PER_TURN - 1)
        self.write_byte("Max_Temperature_Limit", 70)
        self.write_word("Max_Torque_Limit", 1000)
        self.write_byte("P_Coefficient", 32)
        self.write_byte("D_Coefficient", 32)
        self.write_word("Torque_Limit", 1000)
        self.write_byte("Present_Voltage", 120)

    def read_byte(self, name: str) -> int:
        return self.memory[REG[name]]

    def write_byte(self, name: str, value: int) -> None:
        self.memory[REG[name]] = value & 0xFF

    def read_word(self, name: str) -> int:
        address = REG[name]
        return self.memory[address] | self.memory[address + 1] << 8

    def write_word(self, name: str, value: int) -> None:
        address = REG[name]
        self.memory[address], self.memory[address + 1] = value & 0xFF, value >> 8 & 0xFF

    def homing_offset(self) -> int:
        return decode_sign_magnitude(self.read_word("Homing_Offset"), 11)

    def goal(self) -> int:
        return decode_sign_magnitude(self.read_word("Goal_Position"), 15)


class STS3215Chain:
    """Six (by default) STS3215s on one emulated serial port.

    ``port`` is the path to open (a pty). Use as a context manager, or call
    :meth:`start` and :meth:`stop`.
    """

    def __init__(
        self,
        ids=(1, 2, 3, 4, 5, 6),
        physics: ServoPhysics | None = None,
        start_ticks=None,
        power_up_goal_zero: bool = False,
    ):
        self.ids = tuple(ids)
        self.servos = [Servo(i, power_up_goal_zero) for i in self.ids]
        if start_ticks is None:
            start_ticks = np.full(len(self.ids), TICKS_PER_TURN // 2)
        self.physics = physics or KinematicServos(start_ticks)
        if isinstance(self.physics, FakeWorldServos):
            self.physics.chain = self
        present = self.physics.positions()
        for servo, ticks in zip(self.servos, present):
            # A well-behaved servo powers up with goal = present; the quirk leaves 0.
            goal = 0 if power_up_goal_zero else round(ticks)
            servo.write_word("Goal_Position", encode_sign_magnitude(goal, 15))
        self.unplugged = False
        self.log: list[tuple[int, int, int]] = []
        """(instruction, id, address) of every packet received, for tests."""
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.master, self.slave = os.openpty()
        tty.setraw(self.master)
        tty.setraw(self.slave)
        self.port = os.ttyname(self.slave)

    # -- lifecycle -----------------------------------------------------------------------
    def start(self) -> STS3215Chain:
        self._thread = threading.Thread(target=self._serve, name="sts3215-emulator", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        for fd in (self.master, self.slave):
            with contextlib.suppress(OSError):
                os.close(fd)

    def __enter__(self) -> STS3215Chain:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def unplug(self) -> None:
        """Stop answering, as when the USB cable is pulled; servos keep their state."""
        self.unplugged = True

    def servo(self, servo_id: int) -> Servo:
        return self.servos[self.ids.index(servo_id)]

    # -- state -----------------------------------------------------------------------------
    def present_ticks(self) -> np.ndarray:
        """Present_Position of every servo (after homing offsets), as LeRobot reads it."""
        absolute = self.physics.positions()
        offsets = np.array([s.homing_offset() for s in self.servos])
        return np.mod(np.round(absolute - offsets), TICKS_PER_TURN).astype(int)

    def torque(self) -> np.ndarray:
        return np.array([s.read_byte("Torque_Enable") == 1 for s in self.servos])

    def _drive(self) -> None:
        limits = np.array(
            [
                (s.read_word("Min_Position_Limit"), s.read_word("Max_Position_Limit"))
                for s in self.servos
            ]
        )
        goals = np.array([s.goal() for s in self.servos], dtype=float)
        clamped = np.where(
            limits[:, 1] > limits[:, 0], np.clip(goals, limits[:, 0], limits[:, 1]), goals
        )
        offsets = np.array([s.homing_offset() for s in self.servos])
        self.physics.drive(clamped + offsets, self.torque(), limits)

    def _refresh(self, servo: Servo) -> None:
        index = self.servos.index(servo)
        present = int(self.present_ticks()[index])
        servo.write_word("Present_Position", encode_sign_magnitude(present, 15))
        temperature = round(self.physics.temperatures()[index])
        servo.write_byte("Present_Temperature", temperature)
        servo.write_byte("Moving", 0)

    # -- protocol --------------------------------------------------------------------------------
    def _serve(self) -> None:
        buffer = bytearray()
        while not self._stop.is_set():
            ready, _, _ = select.select([self.master], [], [], 0.05)
            if not ready:
                continue
            try:
                chunk = os.read(self.master, 1024)
            except OSError:
                return
            if self.unplugged:
                continue  # bytes go nowhere
            buffer.extend(chunk)
            while (packet := _take_packet(buffer)) is not None:
                if packet is _CORRUPT:
                    continue  # a real servo ignores a bad checksum and stays silent
                reply = self.handle(*packet)
                if reply:
                    os.write(self.master, bytes(reply))

    def handle(self, servo_id: int, instruction: int, params: bytes) -> bytes:
        """Apply one instruction packet; returns the status packet(s) to send back."""
        self.log.append((instruction, servo_id, params[0] if params else -1))
        targets = (
            self.servos if servo_id == BROADCAST else [s for s in self.servos if s.id == servo_id]
        )
        if instruction == INST_PING:
            return b"".join(_status(s.id) for s in targets)
        if instruction == INST_READ:
            address, length = params[0], params[1]
            out = b""
            for servo in targets:
                self._refresh(servo)
                out += _status(servo.id, servo.memory[address : address + length])
            return out if servo_id != BROADCAST else b""
        if instruction in (INST_WRITE, INST_REG_WRITE):
            address, data = params[0], params[1:]
            for servo in targets:
                servo.memory[address : address + len(data)] = data
            self._after_write(address, len(data))
            return b"" if servo_id == BROADCAST else b"".join(_status(s.id) for s in targets)
        if instruction == INST_ACTION:
            return b""
        if instruction == INST_SYNC_WRITE:
            address, length = params[0], params[1]
            body = params[2:]
            for start in range(0, len(body), length + 1):
                for servo in (s for s in self.servos if s.id == body[start]):
                    servo.memory[address : address + length] = body[start + 1 : start + 1 + length]
            self._after_write(address, length)  # one physical update for the whole sync write
            return b""
        if instruction == INST_SYNC_READ:
            address, length = params[0], params[1]
            out = b""
            for wanted in params[2:]:
                for servo in (s for s in self.servos if s.id == wanted):
                    self._refresh(servo)
                    out += _status(servo.id, servo.memory[address : address + length])
            return out
        return b"".join(_status(s.id, error=0x08) for s in targets)  # instruction error

    def _after_write(self, address: int, length: int) -> None:
        touched = range(address, address + length)
        if REG["Torque_Enable"] in touched or REG["Goal_Position"] in touched:
            self._drive()


def _status(servo_id: int, params: bytes = b"", error: int = 0) -> bytes:
    body = [servo_id, len(params) + 2, error, *params]
    return bytes([0xFF, 0xFF, *body, checksum(body)])


def _take_packet(buffer: bytearray):
    """Pop one complete instruction packet from ``buffer``; None if incomplete."""
    while len(buffer) >= 2 and not (buffer[0] == 0xFF and buffer[1] == 0xFF):
        del buffer[0]
    if len(buffer) < 4:
        return None
    length = buffer[3]
    total = length + 4
    if len(buffer) < total:
        return None
    packet = bytes(buffer[:total])
    del buffer[:total]
    body = packet[2:-1]
    if checksum(body) != packet[-1]:
        return _CORRUPT
    return packet[2], packet[4], packet[5:-1]


_CORRUPT = ("corrupt",)
