"""N copies of a task, stepped together across CPU cores.

Episodes run ``episode_steps`` at the training speed and longer at slower ones (an
episode whose steps may move ``action_fraction`` of the action scale runs
``episode_steps / action_fraction`` steps: the same joint travel; they end early only
if the physics diverges); ``info["episode"]["success"]`` says whether the task's
success flag was reached at any step, ``success_at_end`` whether it held at the last.

``BatchedEnv`` is the interface every trainer and evaluator uses; a GPU backend
(MuJoCo Warp / MJX) can implement the same methods -- ``reset``, ``step``,
``observation_spec`` -- without callers changing. This CPU backend steps
``mujoco.batch.Batch`` (MuJoCo >= 4.0's threaded batch, measured faster than
``mujoco.rollout`` and a Python thread pool) and auto-resets finished envs.

Observation (dict of arrays with a leading env axis):
  ``image``      uint8 (n, R, R, 3) wrist camera, if ``render``
  ``state``      float32 (n, 12): 6 joint readings then 6 current joint targets,
                 both as the policy sees them (with calibration offset and noise)
  ``privileged`` float32 (n, 17), only with ``privileged=True`` (teachers, rewards)
Action: float (n, 6), decoded by :func:`realgap.policy_io.decode_action` in the
env's ``action_mode``: ``delta`` (default) moves the targets by up to
``TaskConfig.action_scale`` times the episode's drawn ``action_fraction``;
``absolute`` gives the targets themselves (in the readings' frame). NaN or inf raises
``ValueError``.

Each env's world is a :class:`~realgap.sim.twin.TwinParams` drawn from the
randomization (a distribution centred on the nominal twin, or on ``twin``).
"""

from __future__ import annotations

from dataclasses import fields, replace

import mujoco
import mujoco.batch
import numpy as np

from realgap.errors import ConfigError
from realgap.policy_io import ACTION_MODES, decode_action, policy_observation
from realgap.sim import robot
from realgap.sim.batch_render import BatchRenderer, twin_dressing
from realgap.sim.draws import StepNoise, TwinBatch, max_latency, sample_episode, sample_step
from realgap.sim.dressing import compile_dressed
from realgap.sim.physics import (
    JOINT_FIELDS,
    PHYSICS_FIELDS,
    CommandDelay,
    TwinModel,
    object_half_height,
    target_half_height,
)
from realgap.sim.randomization import DomainRandomization
from realgap.sim.scene import CUBE, TargetSlots, joint_ids
from realgap.sim.tasks import SimState, Task, make_task
from realgap.sim.tasks.base import TaskConfig
from realgap.sim.twin import ControlParams, TwinParams
from realgap.speed import episode_steps_at, step_fractions

STATE_DIM = 12


class BatchedEnv:
    """``num_envs`` parallel copies of one task with per-env domain randomization."""

    def __init__(
        self,
        task: str | Task,
        num_envs: int = 1,
        *,
        config: TaskConfig | None = None,
        randomization: DomainRandomization | None = None,
        twin: TwinParams | None = None,
        action_mode: str = "delta",
        render: bool = True,
        privileged: bool = False,
        seed: int = 0,
        nthread: int = 0,
    ):
        if num_envs < 1:
            raise ConfigError("num_envs must be >= 1")
        self.task = task if isinstance(task, Task) else make_task(task, config)
        self.config = self.task.config
        self.num_envs = num_envs
        if action_mode not in ACTION_MODES:
            raise ConfigError(
                f"action_mode must be one of {list(ACTION_MODES)}, got {action_mode!r}"
            )
        self.action_mode = action_mode
        if randomization is None:
            rate = ControlParams(rate_hz=float(self.config.control_hz))
            randomization = DomainRandomization.none(twin or TwinParams(control=rate))
        elif twin is not None:
            randomization = randomization.centred_on(twin)
        self.randomization = randomization
        self.render_images = render
        self.privileged = privileged
        self.rng = np.random.default_rng(seed)

        self.model = self._compile()
        self.batch = mujoco.batch.Batch(self.model, num_envs, nthread=nthread, persistent=True)
        ids = joint_ids(self.model)
        self._qadr, self._dof, self._act = ids["qpos"], ids["dof"], ids["actuator"]
        cube_joint = self.model.joint(CUBE)
        self._cube_qadr = cube_joint.qposadr[0]
        self._cube_dof = cube_joint.dofadr[0]
        self._slots = TargetSlots.of(self.model)
        self._cube_geom = self.model.geom(CUBE).id
        self._pinch = self.model.site(robot.PINCH_SITE).id
        self.qpos = self.batch.bind("qpos")
        self.qvel = self.batch.bind("qvel")
        self.ctrl = self.batch.bind("ctrl")
        self.sentinel = self.batch.bind("userdata")
        self.mocap_pos = self.batch.bind("mocap_pos") if self.model.nmocap else None
        self.twin_model = TwinModel(self.model)
        fields = [f for f in PHYSICS_FIELDS if f not in JOINT_FIELDS or self._varies_joints()]
        self._expanded = {name: self.batch.expand(name) for name in fields}

        n = num_envs
        self.params: TwinBatch = sample_episode(self.randomization, self.rng, n)
        self.target = np.zeros((n, 6))  # true servo targets
        self.delay = CommandDelay(
            self.params.latency_steps, self.target, capacity=max_latency(self.randomization)
        )
        self.steps = np.zeros(n, dtype=int)
        self.episode_limit = self._episode_limit(self.params.action_fraction)
        self.returns = np.zeros(n)
        self.success_once = np.zeros(n, dtype=bool)
        self.frozen = np.zeros(n, dtype=bool)
        """Envs held still until their episode ends (:meth:`freeze`)."""
        self.cube_start = np.zeros((n, 3))
        self.target_start = np.zeros((n, 3))  # the bin, or the lower object at reset
        self.substeps = np.full(n, self._substeps(self.config.control_hz))
        self.noise = sample_step(self.params, self.randomization, self.rng)
        self.renderer = None
        if render:
            self.renderer = BatchRenderer(
                self.model, n, self.config.image_size, self.config.render_supersample
            )

    # -- construction -------------------------------------------------------
    def _compile(self) -> mujoco.MjModel:
        scene = replace(self.task.scene_config(), timestep=1.0 / self.config.physics_hz)
        # Desk patterns and a shadow map when the randomization draws them (render only).
        dressing = twin_dressing(self.randomization) if self.render_images else None
        model, _ = compile_dressed(scene, dressing)
        return model

    def _varies_joints(self) -> bool:
        """Whether any env's twin scales joint damping or friction loss."""
        r, servo = self.randomization, self.randomization.centre.servo
        scales = {*r.damping_scale, *r.frictionloss_scale}
        return servo.damping_scale != 1 or servo.frictionloss_scale != 1 or scales != {1.0}

    def _substeps(self, hz) -> np.ndarray:
        return np.maximum(1, np.round(self.config.physics_hz / np.asarray(hz))).astype(int)

    def _episode_limit(self, fractions: np.ndarray) -> np.ndarray:
        """Each episode's length: training's joint travel at its action fraction."""
        steps = self.config.episode_steps
        return np.array([episode_steps_at(steps, f) for f in np.asarray(fractions)], dtype=int)

    # -- spaces ---------------------------------------------------------------
    def observation_spec(self) -> dict[str, tuple[tuple[int, ...], str]]:
        """Name -> (per-env shape, dtype) of every observation entry."""
        spec = {"state": ((STATE_DIM,), "float32")}
        if self.render_images:
            size = self.config.image_size
            spec["image"] = ((size, size, 3), "uint8")
        if self.privileged:
            spec["privileged"] = ((Task.PRIVILEGED_DIM,), "float32")
        return spec

    @property
    def training_action_scale(self) -> np.ndarray:
        """The largest move per step and joint at training's speed, (1, 6): the task's."""
        return np.asarray(self.config.action_scale)[None, :]

    @property
    def action_scale(self) -> np.ndarray:
        """Each env's largest move per step and joint, (n, 6): the task's scale times
        its episode's action fraction (the gripper's never below
        :data:`~realgap.speed.GRIPPER_MIN_FRACTION`)."""
        return self.training_action_scale * step_fractions(self.params.action_fraction)

    # -- reset ------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> tuple[dict, dict]:
        """Reset every env; a seed restarts the env's random stream."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self._reset_envs(np.arange(self.num_envs))
        return self._observe(), {}

    def reset_to(
        self, cube_xy, target_xy=None, yaw=None, seed: int | None = None
    ) -> tuple[dict, dict]:
        """Reset every env with the object (and the bin or lower object) at given
        arm-frame positions, (n, 2) or one (2,) for all, and optionally the object's
        yaw (radians): how matched evaluation places its test spots."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        self._reset_envs(np.arange(self.num_envs), cube_xy=cube_xy, target_xy=target_xy, yaw=yaw)
        return self._observe(), {}

    def _reset_envs(self, ids: np.ndarray, cube_xy=None, target_xy=None, yaw=None) -> None:
        """Reset ``ids``; optional arm-frame object/target positions override the task's draw."""
        n = len(ids)
        fresh = sample_episode(self.randomization, self.rng, n)
        self.params.assign(ids, fresh)
        self.twin_model.apply(self._expanded, ids, fresh)
        self.batch.set_const(ids)
        self.substeps[ids] = self._substeps(fresh.control_hz)
        self.episode_limit[ids] = self._episode_limit(fresh.action_fraction)

        self.batch.reset(ids, stage=mujoco.mjtStage.mjSTAGE_NONE)
        start = np.asarray(self.config.start_pose) + self.rng.uniform(
            -self.config.start_noise_rad, self.config.start_noise_rad, (n, 6)
        )
        start = np.clip(start, robot.JOINT_RANGES[:, 0], robot.JOINT_RANGES[:, 1])
        cube_arm = self.task.sample_cube_xy(self.rng, n) if cube_xy is None else np.asarray(cube_xy)
        # Objects land where the twin's operator puts them: drawn or given positions
        # are where they were *meant* to go (the nominal twin's offset is zero).
        cube_arm = np.broadcast_to(cube_arm, (n, 2)) + fresh.placement_offset
        half = object_half_height(self.task.scene_config(), fresh)
        drawn = self.rng.uniform(-np.pi / 4, np.pi / 4, n)  # drawn always: same stream
        yaw = drawn if yaw is None else np.broadcast_to(np.asarray(yaw, dtype=float), (n,))
        qpos = self.qpos[ids]
        qpos[:, self._qadr] = start
        qpos[:, self._cube_qadr : self._cube_qadr + 3] = np.column_stack(
            [robot.arm_to_sim(cube_arm), half]
        )
        qpos[:, self._cube_qadr + 3 : self._cube_qadr + 7] = np.column_stack(
            [np.cos(yaw / 2), np.zeros(n), np.zeros(n), np.sin(yaw / 2)]
        )
        self.qpos[ids] = qpos
        self.qvel[ids] = 0.0
        self.target[ids] = start
        self.delay.reset(ids, start, fresh.latency_steps)
        ctrl = self.ctrl[ids]
        ctrl[:, self._act] = start
        self.ctrl[ids] = ctrl
        self.cube_start[ids] = qpos[:, self._cube_qadr : self._cube_qadr + 3]
        if self.task.has_target:
            if target_xy is None:  # drawn beside the object where it actually landed
                targets = self.task.sample_target_xy(self.rng, cube_arm)
            else:
                targets = np.broadcast_to(np.asarray(target_xy, dtype=float), (n, 2))
                targets = targets + fresh.placement_offset
            where = np.column_stack([robot.arm_to_sim(targets), np.zeros(n)])
            base_yaw = np.zeros(n)
            if self._slots.base_qpos >= 0:
                where[:, 2] = target_half_height(self.task.scene_config(), fresh)
                base_yaw = self.rng.uniform(-np.pi / 4, np.pi / 4, n)
            mocap = self.mocap_pos[ids] if self.mocap_pos is not None else None
            self._slots.place(where, qpos, mocap, yaw=base_yaw)
            self.qpos[ids] = qpos
            if mocap is not None:
                self.mocap_pos[ids] = mocap
            self.target_start[ids] = where
        self.steps[ids] = 0
        self.returns[ids] = 0.0
        self.success_once[ids] = False
        self.frozen[ids] = False
        sentinel = self.sentinel[ids]
        sentinel[:, 0] = 1.0
        self.sentinel[ids] = sentinel
        self.batch.forward(ids)

    # -- step ---------------------------------------------------------------------
    def step(self, action: np.ndarray):
        """Apply one control step; finished envs are reset and report in ``info``."""
        action = np.asarray(action, dtype=float)
        if action.shape != (self.num_envs, 6):
            raise ConfigError(f"action must have shape ({self.num_envs}, 6), got {action.shape}")
        if not np.all(np.isfinite(action)):
            bad = np.unique(np.nonzero(~np.isfinite(action))[0]).tolist()
            raise ConfigError(f"action contains NaN or inf (envs {bad}); refusing to step")
        # The servo targets are true angles; policies read them with the zero offsets.
        desired = decode_action(
            self.action_mode, action, self.target, self.action_scale, self.params.joint_offset
        )
        self.target = np.clip(desired, robot.JOINT_RANGES[:, 0], robot.JOINT_RANGES[:, 1])
        applied = self.delay.push(self.target)
        ctrl = self.ctrl.copy()
        ctrl[:, self._act] = applied
        self.ctrl[:] = ctrl
        for substeps in np.unique(self.substeps):
            ids = np.nonzero((self.substeps == substeps) & ~self.frozen)[0]
            if len(ids) == 0:
                continue
            self.batch.step(
                ids if len(ids) < self.num_envs else None,
                nstep=int(substeps),
                stage=mujoco.mjtStage.mjSTAGE_POS,
            )
        self.steps += 1
        state = self.sim_state()
        reward = self.task.reward(state)
        success = self.task.success(state)
        self.returns += reward
        self.success_once |= success
        # MuJoCo resets a diverged simulation to its defaults and only prints a
        # warning; the reset zeroes the sentinel we set at every env reset.
        unstable = (self.sentinel[:, 0] != 1.0) | ~np.all(np.isfinite(self.qpos), axis=1)
        # Episodes run their full length: ending on success would take the
        # remaining dense reward away and teach RL to avoid succeeding.
        terminated = unstable
        truncated = (self.steps >= self.episode_limit) & ~terminated
        self.noise = sample_step(self.params, self.randomization, self.rng)
        obs = self._observe(state)
        info = {"success": success, "unstable": unstable}
        done = terminated | truncated
        if done.any():
            ids = np.nonzero(done)[0]
            info["final_observation"] = {key: value.copy() for key, value in obs.items()}
            info["episode"] = {
                "env": ids,
                "return": self.returns[ids].copy(),
                "length": self.steps[ids].copy(),
                "success": self.success_once[ids].copy(),
                "success_at_end": success[ids].copy(),
            }
            self._reset_envs(ids)
            fresh = self._observe()
            for key in obs:
                obs[key][ids] = fresh[key][ids]
        return obs, reward.astype(np.float32), terminated, truncated, info

    def freeze(self, ids: np.ndarray) -> None:
        """Hold envs ``ids`` still until their episode ends: neither stepped nor rendered
        (their image is the last one drawn), their steps still counted, so they end and
        reset when they would have. For evaluations, once an episode's success has
        latched: its result cannot change and its remaining steps then cost almost
        nothing. A frozen episode's return and ``success_at_end`` are its success
        state's."""
        self.frozen[ids] = True

    # -- checkpoints --------------------------------------------------------------------
    def get_state(self) -> dict:
        """Everything that decides what the env does next (physics, each env's twin and
        episode counters, the latency line, the random stream, this step's noise), as
        plain arrays: restored with :meth:`set_state`, the env continues bit for bit."""
        arrays = {
            "physics": self.batch.state.copy(),
            "target": self.target.copy(),
            "delay_slots": self.delay.slots.copy(),
            "delay_latency": self.delay.latency.copy(),
            "steps": self.steps.copy(),
            "episode_limit": self.episode_limit.copy(),
            "returns": self.returns.copy(),
            "success_once": self.success_once.copy(),
            "frozen": self.frozen.copy(),
            "cube_start": self.cube_start.copy(),
            "target_start": self.target_start.copy(),
            "substeps": self.substeps.copy(),
        }
        twin = {f"twin.{f.name}": getattr(self.params, f.name).copy() for f in fields(self.params)}
        noise = {f"noise.{f.name}": getattr(self.noise, f.name).copy() for f in fields(self.noise)}
        state = {**arrays, **twin, **noise, "rng": self.rng.bit_generator.state}
        if self.renderer is not None:
            state["renderer"] = self.renderer.get_state()
        return state

    def set_state(self, state: dict) -> None:
        """Restore what :meth:`get_state` returned (same task, size and randomization)."""
        for f in fields(self.params):
            getattr(self.params, f.name)[...] = state[f"twin.{f.name}"]
        self.noise = StepNoise(
            **{f.name: state[f"noise.{f.name}"].copy() for f in fields(StepNoise)}
        )
        ids = np.arange(self.num_envs)
        self.twin_model.apply(self._expanded, ids, self.params)
        self.batch.set_const(ids)
        self.batch.state[...] = state["physics"]
        self.batch.forward(None)
        self.batch.state[...] = state["physics"]  # forward computes; the state stands
        self.target = state["target"].copy()
        self.delay.slots = state["delay_slots"].copy()
        self.delay.latency = state["delay_latency"].copy()
        for name in ("steps", "episode_limit", "returns", "success_once", "cube_start"):
            getattr(self, name)[...] = state[name]
        self.frozen[...] = state.get("frozen", False)  # states saved before freezing existed
        self.target_start[...] = state["target_start"]
        self.substeps[...] = state["substeps"]
        self.rng.bit_generator.state = state["rng"]
        if self.renderer is not None and "renderer" in state:
            self.renderer.set_state(state["renderer"])

    # -- state and observation ---------------------------------------------------------
    def sim_state(self) -> SimState:
        site_xpos = self.batch.bind("site_xpos")
        cube = self.qpos[:, self._cube_qadr : self._cube_qadr + 7]
        target_pos, target_quat = self.target_start.copy(), np.tile([1.0, 0, 0, 0], (len(cube), 1))
        if self._slots.base_qpos >= 0:  # the lower object can be pushed: where it is now
            base = self._slots.base_pose(self.qpos)
            target_pos, target_quat = base[:, :3].copy(), base[:, 3:].copy()
        return SimState(
            qpos=self.qpos[:, self._qadr].copy(),
            qvel=self.qvel[:, self._dof].copy(),
            target=self.delay.applied,
            pinch=site_xpos[:, self._pinch].copy(),
            cube_pos=cube[:, :3].copy(),
            cube_quat=cube[:, 3:].copy(),
            cube_start=self.cube_start.copy(),
            target_pos=target_pos,
            cube_half=object_half_height(self.task.scene_config(), self.params),
            cube_vel=self.qvel[:, self._cube_dof : self._cube_dof + 3].copy(),
            target_quat=target_quat,
            target_start=self.target_start.copy(),
            target_half=target_half_height(self.task.scene_config(), self.params),
        )

    def joint_readings(self) -> np.ndarray:
        """Joint angles as the policy reads them: true + zero offset + noise."""
        return self.qpos[:, self._qadr] + self.params.joint_offset + self.noise.joint_noise

    def reading_targets(self) -> np.ndarray:
        """The current joint targets in the readings' frame (what the policy sees)."""
        return self.target + self.params.joint_offset

    def _observe(self, state: SimState | None = None) -> dict[str, np.ndarray]:
        targets = self.reading_targets()
        image = self.render() if self.render_images else None
        obs = policy_observation(self.joint_readings(), targets, image)
        if self.privileged:
            obs["privileged"] = self.task.privileged(state or self.sim_state())
        return obs

    def render(self) -> np.ndarray:
        """Wrist images of every env at policy resolution, uint8 (n, R, R, 3)."""
        return self.renderer.render(
            self.qpos, self.mocap_pos, self.params, self.noise, skip=self.frozen
        )

    def close(self) -> None:
        if self.renderer is not None:
            self.renderer.close()
            self.renderer = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
