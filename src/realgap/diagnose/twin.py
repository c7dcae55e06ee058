"""The twin's servos as a measuring instrument: replays to compare with recordings
(the camera's counterpart is :mod:`realgap.sim.twin_camera`)."""

from __future__ import annotations

from dataclasses import replace

import mujoco
import numpy as np

from realgap.sim import robot
from realgap.sim.draws import twin_batch
from realgap.sim.physics import TwinModel
from realgap.sim.scene import compile_scene, joint_ids
from realgap.sim.tasks import make_task
from realgap.sim.twin import ServoParams, TwinParams


class ServoTwin:
    """Replays a command sequence on the twin's servos with candidate parameters,
    sampling joint angles as the recording did (same latency model as the fake arm:
    the servo acts on the goal written ``latency`` writes ago)."""

    def __init__(self, task: str, physics_hz: float = 200.0):
        task_obj = make_task(task)
        scene = replace(task_obj.scene_config(), timestep=1.0 / physics_hz)
        self.model, _ = compile_scene(scene)
        # The step responses are taken from the start pose, in the air: nothing touches
        # the arm, and the cube resting on the desk cost a third of every replay's time
        # (the servo fit replays the recording over a thousand times).
        self.model.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
        self.data = mujoco.MjData(self.model)
        ids = joint_ids(self.model)
        self.qadr, self.act = ids["qpos"], ids["actuator"]
        self.twin_model = TwinModel(self.model)
        self.rows = TwinModel.single_row(self.model)

    def replay(
        self,
        start: np.ndarray,
        writes: np.ndarray,
        sample_write: np.ndarray,
        control_hz: float,
        sample_hz: float,
        kp_scale: float = 1.0,
        damping_scale: float = 1.0,
        frictionloss_scale: float = 1.0,
        latency: int = 0,
        settle_s: float = 1.0,
        torque_limit_scale: float = 1.0,
    ) -> np.ndarray:
        """Joint angles at every sample, (S, 6)."""
        m, d = self.model, self.data
        servo = ServoParams(
            kp_scale,
            damping_scale,
            frictionloss_scale,
            torque_limit_scale=torque_limit_scale,
            latency_steps=latency,
        )
        # The same code that puts a twin into the batched env and the fake arm.
        self.twin_model.apply(self.rows, np.arange(1), twin_batch(TwinParams(servo=servo), 1))
        mujoco.mj_resetData(m, d)
        d.qpos[self.qadr] = start
        d.ctrl[self.act] = writes[0]
        mujoco.mj_forward(m, d)
        settle_steps = int(settle_s / m.opt.timestep)
        if settle_steps:
            mujoco.mj_step(m, d, nstep=settle_steps)
        # What the servos act on after each write: the fake arm's CommandDelay, its
        # goals looked up at once rather than pushed one by one (a thousand replays).
        goals = np.clip(delayed(writes, latency), *robot.JOINT_RANGES.T)
        out = np.empty((len(sample_write), 6))
        written, time = -1, 0.0
        for index, write in enumerate(sample_write):
            # The same clock rule as the fake arm: step while a whole step fits.
            while written < write:
                written += 1
                time = self._advance_to(written / control_hz, time)
                d.ctrl[self.act] = goals[written]
            time = self._advance_to((index + 1) / sample_hz, time)
            out[index] = d.qpos[self.qadr]
        return out

    def _advance_to(self, target: float, time: float) -> float:
        """Step while a whole step fits before ``target``; the new time. The clock is
        counted a step at a time, as the fake arm counts it; MuJoCo takes the steps in
        one call."""
        dt = self.model.opt.timestep
        steps = 0
        while time + dt <= target + 1e-12:
            time += dt
            steps += 1
        if steps:
            mujoco.mj_step(self.model, self.data, nstep=steps)
        return time


def delayed(writes: np.ndarray, latency: int) -> np.ndarray:
    """The goal the servos act on after each of ``writes``: the one written ``latency``
    writes earlier, the first before that (what the fake arm's
    :class:`realgap.sim.physics.CommandDelay` gives, pushed from ``writes[0]``)."""
    index = np.maximum(np.arange(len(writes)) - int(latency), 0)
    return np.asarray(writes, dtype=float)[index]
