"""The fake "real" arm: a second MuJoCo twin with a hidden reality profile.

``FakeWorld`` owns the physics; ``FakeArm`` and ``FakeCamera`` (its own module) expose it only
through the :class:`~realgap.bridge.interfaces.Arm` and ``Camera`` interfaces,
exactly as a real arm would, so the policy and the bridge cannot tell it from
hardware except by behaviour. Time comes from a clock: with a
:class:`~realgap.bridge.interfaces.VirtualClock` a session runs as fast as the
CPU allows; with the wall clock it runs in real time.

What the profile changes (see :mod:`realgap.bridge.profile`): cube and pad
physics, encoder zero offsets and noise, servo stiffness, torque caps and
command latency, the power-up goal quirk, the camera's pose, field of view,
exposure and auto-exposure, the cloth colour, and where the operator measures
cube placements from. The fake arm speaks LeRobot's SO-101 units (degrees, and
the gripper as 0..100) so every fake run exercises the unit conversions too.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import replace

import mujoco
import numpy as np

from realgap.bridge.interfaces import Arm, ArmDisconnected, Clock
from realgap.bridge.profile import RealityProfile
from realgap.sim import robot
from realgap.sim.draws import twin_batch
from realgap.sim.dressing import compile_dressed
from realgap.sim.physics import (
    CommandDelay,
    TwinModel,
    object_half_height,
    target_half_height,
)
from realgap.sim.scene import CUBE, SceneConfig, TargetSlots, joint_ids
from realgap.sim.tasks import SimState, make_task

AMBIENT_C = 25.0
READINGS, PLACEMENT, NOISE_BANK, CAMERAS = 0, 1, 2, 3
"""Keys of the world's random streams: an episode's encoder noise and the operator's
placement error (:meth:`FakeWorld.begin_episode`), the cameras' fixed noise field, and
each camera's draws from it (one stream per camera, from ``CAMERAS`` on)."""
HISTORY_S = 0.25
"""How much past motion the world keeps for cameras whose exposure blurs it."""


class FakeWorld:
    """A single twin with a reality profile, advanced lazily to the clock's time."""

    def __init__(
        self,
        task: str = "Reach",
        profile: RealityProfile | None = None,
        clock: Clock | None = None,
        seed: int = 0,
        physics_hz: float = 200.0,
    ):
        self.profile = profile or RealityProfile()
        self.clock = clock or Clock()
        self.task = make_task(task)
        self.seed = seed
        self.rng = np.random.default_rng(seed)
        self.placement_rng = np.random.default_rng(seed + 1)
        self.lock = threading.RLock()
        twin = self.profile.twin
        self.scene: SceneConfig = replace(self.task.scene_config(), timestep=1.0 / physics_hz)
        # The room the profile describes (desk, lamps, clutter); plain: the twin's scene.
        dressing = self.profile.appearance.dressing(twin, self.task.has_target)
        self.model, _ = compile_dressed(self.scene, dressing)
        # The same code that puts a randomized twin into the batched env's rows.
        self.twin = twin_batch(twin, 1)
        TwinModel(self.model).apply(TwinModel.single_row(self.model), np.arange(1), self.twin)
        self.data = mujoco.MjData(self.model)
        mujoco.mj_setConst(self.model, self.data)
        self.cube_half = float(object_half_height(self.scene, self.twin)[0])
        self.target_half = float(target_half_height(self.scene, self.twin)[0])
        ids = joint_ids(self.model)
        self._qadr, self._dof, self._act = ids["qpos"], ids["dof"], ids["actuator"]
        self._cube_qadr = self.model.joint(CUBE).qposadr[0]
        self._cube_dof = self.model.joint(CUBE).dofadr[0]
        self._slots = TargetSlots.of(self.model)
        self._pinch = self.model.site(robot.PINCH_SITE).id
        self._kp = self.model.actuator_gainprm[self._act, 0].copy()
        self._kv = -self.model.actuator_biasprm[self._act, 2]
        self.latency = twin.servo.latency_steps
        self.offset = twin.joint_offsets_rad
        self.noise_rad = np.deg2rad(twin.joints.reading_noise_deg)
        self.temperature = np.full(6, AMBIENT_C + 5.0)
        self.cube_start = np.zeros(3)
        self.target_start = np.zeros(3)
        self.cameras: list = []  # FakeCamera instances capturing frames
        self.history: deque = deque()  # (time, qpos, mocap) over the last HISTORY_S
        self.keep_history = self.profile.appearance.sensor.exposure_ms > 0
        self.time = self.clock.now()
        self._place_arm(robot.KEYFRAMES["rest"])
        self.torque = np.zeros(6, dtype=bool)
        self.power_cycle()
        self._settle(0.5)

    def begin_episode(self, index: int) -> None:
        """Draw episode ``index``'s noise -- encoder readings, the operator's placement,
        every connected camera's sensor -- from streams keyed by (seed, index, stream).
        Without it one episode's length shifts every later episode's draws (a run that
        ends episodes at their success sees other noise afterwards), and a resumed session
        starts its streams over; with it both replay the whole session's draws. The
        pose the arm rests in between episodes still carries over, as on a real arm."""
        with self.lock:
            self.rng = np.random.default_rng((self.seed, index, READINGS))
            self.placement_rng = np.random.default_rng((self.seed, index, PLACEMENT))
            for number, camera in enumerate(self.cameras):
                camera.begin_episode(np.random.default_rng((self.seed, index, CAMERAS + number)))

    # -- servos ------------------------------------------------------------------------
    def power_cycle(self) -> None:
        """Servos lose torque; their stored goals are what power-up leaves in them."""
        with self.lock:
            self.torque[:] = False
            present = self.data.qpos[self._qadr] + self.offset
            if self.profile.hardware.power_up_goal_zero:
                # A raw goal of 0 ticks, clamped by the servo's position limits.
                self.goal = robot.JOINT_RANGES[:, 0].copy()
            else:
                self.goal = present.copy()
            self.delay = CommandDelay(self.latency, self.goal)
            self._apply_torque()

    def _apply_torque(self) -> None:
        on = self.torque.astype(float)
        self.model.actuator_gainprm[self._act, 0] = self._kp * on
        self.model.actuator_biasprm[self._act, 1] = -self._kp * on
        self.model.actuator_biasprm[self._act, 2] = -self._kv * on

    def write_goals(self, goals: np.ndarray) -> np.ndarray:
        """Store goals (servo frame, radians) clamped to the position limits."""
        with self.lock:
            self.advance()
            goals = np.clip(goals, robot.JOINT_RANGES[:, 0], robot.JOINT_RANGES[:, 1])
            self.goal = goals.copy()
            self.delay.push(goals[None])
            return goals

    def set_torque(self, enabled) -> None:
        """Torque on or off, for all joints (bool) or per joint (6 bools)."""
        with self.lock:
            self.advance()
            enabled = np.broadcast_to(np.asarray(enabled, dtype=bool), (6,))
            if (enabled & ~self.torque).any():
                # A servo that is switched on drives to its *stored* goal at once.
                self.delay.reset([0], self.goal[None])
            self.torque[:] = enabled
            self._apply_torque()

    def readings(self) -> np.ndarray:
        """Encoder readings: true angle + zero offset + noise (radians)."""
        with self.lock:
            self.advance()
            noise = self.noise_rad * self.rng.standard_normal(6) if self.noise_rad else 0.0
            return self.data.qpos[self._qadr] + self.offset + noise

    # -- physics -----------------------------------------------------------------------
    def advance(self) -> None:
        """Step the physics up to the clock's current time."""
        with self.lock:
            dt = self.model.opt.timestep
            now = self.clock.now()
            while self.time + dt <= now + 1e-12:
                self._physics_step()
                self.time += dt
                if self.keep_history:
                    self._remember()
                for camera in self.cameras:
                    camera.maybe_capture(self.time)

    @property
    def applied(self) -> np.ndarray:
        """The goals the servos act on now (after latency), servo frame."""
        return self.delay.applied[0]

    def _physics_step(self) -> None:
        target = self.applied - self.offset  # servo frame -> true joint angle
        self.data.ctrl[self._act] = np.clip(
            target, robot.JOINT_RANGES[:, 0], robot.JOINT_RANGES[:, 1]
        )
        mujoco.mj_step(self.model, self.data)
        torque = self.data.actuator_force[self._act]
        dt, hardware = self.model.opt.timestep, self.profile.hardware
        self.temperature += dt * (
            hardware.heating_c_per_nm2_s * torque**2
            - hardware.cooling_per_s * (self.temperature - AMBIENT_C)
        )

    def _remember(self) -> None:
        mocap = self.data.mocap_pos.copy() if self.model.nmocap else None
        self.history.append((self.time, self.data.qpos.copy(), mocap))
        while self.history and self.history[0][0] < self.time - HISTORY_S:
            self.history.popleft()

    def states_during(self, start: float, end: float, count: int) -> list[tuple]:
        """Up to ``count`` (qpos, mocap) states spread over [start, end] (what an exposure
        integrates); the latest state alone when no history covers it."""
        inside = [(q, m) for t, q, m in self.history if start - 1e-9 <= t <= end + 1e-9]
        if len(inside) <= 1:
            mocap = self.data.mocap_pos.copy() if self.model.nmocap else None
            return [(self.data.qpos.copy(), mocap)]
        picks = np.unique(np.round(np.linspace(0, len(inside) - 1, count)).astype(int))
        return [inside[i] for i in picks]

    def _settle(self, seconds: float) -> None:
        for _ in range(int(seconds / self.model.opt.timestep)):
            self._physics_step()

    def _place_arm(self, qpos: np.ndarray) -> None:
        self.data.qpos[self._qadr] = qpos
        self.data.qvel[:] = 0.0
        mujoco.mj_forward(self.model, self.data)

    # -- the operator ------------------------------------------------------------------
    def place_objects(self, cube_xy, target_xy=None, yaw: float = 0.0, marked=False) -> None:
        """Put the object (and the bin or lower object) where the operator *thinks* the
        layout says: off by the profile's placement offset (measuring from the base's
        back edge instead of the rotation axis, say) -- unless ``marked``: a printed
        mat aligned to the base needs no tape measure."""
        with self.lock:
            self.advance()
            origin = np.asarray(robot.PAN_AXIS_XY, dtype=float)
            if not marked:
                origin = origin + np.asarray(self.profile.twin.placement.offset_xy_m)
            cube = self.data.qpos[self._cube_qadr : self._cube_qadr + 7]
            cube[:3] = [*(origin + np.asarray(cube_xy, dtype=float)), self.cube_half]
            cube[3:] = [np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]
            self.data.qvel[self._cube_dof : self._cube_dof + 6] = 0.0
            if self.task.has_target:
                where = np.asarray(target_xy if target_xy is not None else cube_xy, dtype=float)
                self.target_start = np.array([*(origin + where), 0.0])
            if self._slots.base_qpos >= 0:
                self.target_start[2] = self.target_half
            data = self.data
            self._slots.place(self.target_start, data.qpos, data.mocap_pos, data.qvel)
            mujoco.mj_forward(self.model, self.data)
            self.cube_start = cube[:3].copy()

    def sim_state(self) -> SimState:
        """Ground truth for judging success (never shown to the policy)."""
        with self.lock:
            self.advance()
            cube = self.data.qpos[self._cube_qadr : self._cube_qadr + 7]
            target_pos, target_quat = self.target_start.copy(), np.array([1.0, 0, 0, 0])
            if self._slots.base_qpos >= 0:
                base = self._slots.base_pose(self.data.qpos)
                target_pos, target_quat = base[:3].copy(), base[3:].copy()
            return SimState(
                qpos=self.data.qpos[self._qadr][None].copy(),
                qvel=self.data.qvel[self._dof][None].copy(),
                target=(self.applied - self.offset)[None],
                pinch=self.data.site_xpos[self._pinch][None].copy(),
                cube_pos=cube[None, :3].copy(),
                cube_quat=cube[None, 3:].copy(),
                cube_start=self.cube_start[None].copy(),
                target_pos=target_pos[None],
                cube_half=np.array([self.cube_half]),
                cube_vel=self.data.qvel[self._cube_dof : self._cube_dof + 3][None].copy(),
                target_quat=target_quat[None],
                target_start=self.target_start[None].copy(),
                target_half=np.array([self.target_half]),
            )

    def success(self) -> bool:
        return bool(self.task.success(self.sim_state())[0])


class FakeArm(Arm):
    """The fake twin's servos, in LeRobot SO-101 units (degrees; gripper 0..100)."""

    units = ("deg",) * 5 + ("range_0_100",)

    def __init__(self, world: FakeWorld):
        super().__init__()
        self.world = world
        self.connected = False
        self.unplugged = False

    @property
    def is_connected(self) -> bool:
        return self.connected

    def unplug(self) -> None:
        """Simulate a pulled USB cable: every later call raises ArmDisconnected, and
        the servos keep doing whatever they were doing."""
        self.unplugged = True

    def _check(self) -> None:
        if self.unplugged:
            raise ArmDisconnected("fake arm: serial port disconnected")
        if not self.connected:
            raise ArmDisconnected("fake arm: not connected")

    def _connect(self) -> None:
        if self.unplugged:
            raise ArmDisconnected("fake arm: serial port disconnected")
        self.connected = True

    def _disconnect(self) -> None:
        self.connected = False

    def _to_backend(self, rad: np.ndarray) -> np.ndarray:
        raw = self.codecs.from_contract(rad)
        raw[5] = np.clip(raw[5], 0.0, 100.0)  # LeRobot clips the 0..100 gripper
        return raw

    def _read_positions(self) -> np.ndarray:
        self._check()
        return self._to_backend(self.world.readings())

    def _read_goals(self) -> np.ndarray:
        self._check()
        return self._to_backend(self.world.goal)

    def _write_goals(self, goals: np.ndarray) -> np.ndarray:
        self._check()
        sent = self.world.write_goals(self.codecs.to_contract(goals))
        return self._to_backend(sent)

    def _set_torque(self, enabled: bool) -> None:
        self._check()
        self.world.set_torque(enabled)

    def _read_temperatures(self) -> np.ndarray:
        self._check()
        return self.world.temperature.copy()
