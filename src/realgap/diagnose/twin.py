"""The twin as a measuring instrument: renders and servo replays to compare with recordings."""

from __future__ import annotations

from dataclasses import replace

import mujoco
import numpy as np

from realgap.sim import robot
from realgap.sim.physics import CommandDelay, TwinModel
from realgap.sim.randomization import twin_batch
from realgap.sim.render import set_wrist_camera
from realgap.sim.scene import CUBE, FLOOR, compile_scene, joint_ids
from realgap.sim.tasks import make_task
from realgap.sim.twin import ServoParams, TwinParams

JAW_BODIES = (robot.GRIPPER_BODY, robot.MOVING_JAW_BODY)


class TwinCamera:
    """Renders the nominal twin's wrist view at given joint angles and cube position,
    optionally with the camera moved (``offset_m`` in the gripper frame,
    ``rotation_deg`` as a rotation vector in the camera frame)."""

    def __init__(self, task: str, shape: tuple[int, int]):
        self.task = make_task(task)
        self.model, _ = compile_scene(self.task.scene_config())
        self.data = mujoco.MjData(self.model)
        self.qadr = joint_ids(self.model)["qpos"]
        self.cube_qadr = self.model.joint(CUBE).qposadr[0]
        self.camera = self.model.camera(robot.WRIST_CAMERA).id
        self.nominal = {
            "cam_pos": self.model.cam_pos[self.camera].copy(),
            "cam_quat": self.model.cam_quat[self.camera].copy(),
            "cam_fovy": float(self.model.cam_fovy[self.camera]),
        }
        self.renderer = mujoco.Renderer(self.model, *shape)
        self.shape = shape
        bodies = [self.model.body(name).id for name in JAW_BODIES]
        self.jaw_geoms = {g for g in range(self.model.ngeom) if self.model.geom_bodyid[g] in bodies}
        self.cube_geom = self.model.geom(CUBE).id
        self.floor_geom = self.model.geom(FLOOR).id

    def set_camera(self, offset_m=(0, 0, 0), rotation_deg=(0, 0, 0), fov_delta_deg=0.0) -> None:
        rotation = np.deg2rad(np.asarray(rotation_deg, dtype=float))
        set_wrist_camera(self.model, self.camera, self.nominal, offset_m, rotation, fov_delta_deg)

    def _pose(self, joints, cube_xy) -> None:
        self.data.qpos[self.qadr] = joints
        half = self.task.config.scene.cube_size_m / 2
        self.data.qpos[self.cube_qadr : self.cube_qadr + 7] = [
            *robot.arm_to_sim(cube_xy),
            half,
            1,
            0,
            0,
            0,
        ]
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_camlight(self.model, self.data)

    def render(self, joints, cube_xy) -> np.ndarray:
        self._pose(joints, cube_xy)
        self.renderer.update_scene(self.data, camera=self.camera)
        return self.renderer.render()

    def project_cube(self, joints, cube_xy) -> np.ndarray:
        """(row, column) where the cube's centre projects in the image: smooth in the
        joints, unlike a rendered mask's centroid."""
        self._pose(joints, cube_xy)
        position = self.data.cam_xpos[self.camera]
        axes = self.data.cam_xmat[self.camera].reshape(3, 3)
        local = axes.T @ (self.data.qpos[self.cube_qadr : self.cube_qadr + 3] - position)
        height, width = self.shape
        focal = (height / 2) / np.tan(np.deg2rad(self.model.cam_fovy[self.camera]) / 2)
        row = (height - 1) / 2 - focal * local[1] / -local[2]
        column = (width - 1) / 2 + focal * local[0] / -local[2]
        return np.array([row, column])

    def labels(self, joints, cube_xy) -> np.ndarray:
        """Per-pixel region: 0 background, 1 jaws, 2 cube, 3 other (arm, bin)."""
        self._pose(joints, cube_xy)
        self.renderer.enable_segmentation_rendering()
        try:
            self.renderer.update_scene(self.data, camera=self.camera)
            geoms = self.renderer.render()[:, :, 0]
        finally:
            self.renderer.disable_segmentation_rendering()
        out = np.full(geoms.shape, 3, dtype=np.uint8)
        out[(geoms < 0) | (geoms == self.floor_geom)] = 0
        out[np.isin(geoms, list(self.jaw_geoms))] = 1
        out[geoms == self.cube_geom] = 2
        return out

    def close(self) -> None:
        self.renderer.close()


def cube_mask(image: np.ndarray) -> np.ndarray:
    """Red-cube pixels by colour ratios (robust to exposure): works on real frames and
    twin renders alike, so both centroids are measured the same way."""
    rgb = image.astype(np.float32)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return (r > 40) & (r > 1.8 * g) & (r > 1.8 * b)


def centroid(mask: np.ndarray) -> np.ndarray | None:
    """(row, column) centroid of a mask, or None with fewer than 6 pixels."""
    rows, cols = np.nonzero(mask)
    if len(rows) < 6:
        return None
    return np.array([rows.mean(), cols.mean()])


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
    ) -> np.ndarray:
        """Joint angles at every sample, (S, 6)."""
        m, d = self.model, self.data
        servo = ServoParams(kp_scale, damping_scale, frictionloss_scale, latency_steps=latency)
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
