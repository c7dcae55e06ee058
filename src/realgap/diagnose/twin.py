"""The twin's servos as a measuring instrument: replays to compare with recordings
(the camera's counterpart is :mod:`realgap.sim.twin_camera`)."""

from __future__ import annotations

from dataclasses import replace

import mujoco
import numpy as np

from realgap.sim import robot
from realgap.sim.draws import twin_batch
from realgap.sim.physics import CommandDelay, TwinModel
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
        dt = m.opt.timestep
        for _ in range(int(settle_s / dt)):
            mujoco.mj_step(m, d)
        delay = CommandDelay(latency, writes[0])
        out = np.empty((len(sample_write), 6))
        written, time = -1, 0.0
        for index, write in enumerate(sample_write):
            # The same clock rule as the fake arm: step while a whole step fits.
            while written < write:
                written += 1
                self._advance_to(written / control_hz, time)
                time = max(time, self._time)
                applied = delay.push(writes[written][None])[0]
                d.ctrl[self.act] = np.clip(applied, *robot.JOINT_RANGES.T)
            self._advance_to((index + 1) / sample_hz, time)
            time = self._time
            out[index] = d.qpos[self.qadr]
        return out

    def _advance_to(self, target: float, time: float) -> None:
        dt = self.model.opt.timestep
        while time + dt <= target + 1e-12:
            mujoco.mj_step(self.model, self.data)
            time += dt
        self._time = time
