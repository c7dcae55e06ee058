"""The twin's wrist camera as a measuring instrument: renders, segmentation and the
projection of a cube at given joint angles (diagnostics and the placement check)."""

from __future__ import annotations

import mujoco
import numpy as np

from realgap.sim import robot
from realgap.sim.dressing import SceneDressing, compile_dressed
from realgap.sim.render import set_wrist_camera
from realgap.sim.scene import (
    ASIDE_XY,
    CUBE,
    FLOOR,
    SceneConfig,
    TargetSlots,
    compile_scene,
    joint_ids,
)
from realgap.sim.tasks import make_task

JAW_BODIES = (robot.GRIPPER_BODY, robot.MOVING_JAW_BODY)


class TwinCamera:
    """Renders the nominal twin's wrist view at given joint angles and cube position,
    optionally with the camera moved (``offset_m`` in the gripper frame,
    ``rotation_deg`` as a rotation vector in the camera frame). A bin or lower object
    stands aside, as in the calibration session. ``floor_texture`` (RGB uint8): a
    textured desk, as the twin paints a measured one (MuJoCo lights a textured floor
    differently from a plain-coloured one). ``shadows``: the room's light casts the
    arm's shadow, as in a twin whose ``scene.shadows`` is set (MuJoCo then lights a
    textured floor brighter: it draws a shadow-casting light in a pass of its own)."""

    def __init__(
        self,
        task: str,
        shape: tuple[int, int],
        floor_texture: np.ndarray | None = None,
        shadows: bool = False,
    ):
        self.task_name = task
        self.task = make_task(task)
        self.shadows = shadows
        if floor_texture is None and not shadows:
            self.model, _ = compile_scene(self.task.scene_config())
        else:
            dressing = SceneDressing(desk=floor_texture, shadows=shadows)
            self.model, _ = compile_dressed(self.task.scene_config(), dressing)
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
        self.nominal_cube = self.model.geom_size[self.cube_geom].copy()
        self.nominal_half_height = self.task.scene_config().object_half_height()
        self.cube_half_height = self.nominal_half_height
        self._set_target_aside()

    def _set_target_aside(self) -> None:
        """The bin or lower object where the calibration session keeps it (``ASIDE_XY``)."""
        scene = self.task.scene_config()
        height = scene.base_half_height() if scene.stack_base else 0.0
        slots = TargetSlots.of(self.model)
        slots.place([*robot.arm_to_sim(ASIDE_XY), height], self.data.qpos, self.data.mocap_pos)

    def set_camera(self, offset_m=(0, 0, 0), rotation_deg=(0, 0, 0), fov_delta_deg=0.0) -> None:
        rotation = np.deg2rad(np.asarray(rotation_deg, dtype=float))
        set_wrist_camera(self.model, self.camera, self.nominal, offset_m, rotation, fov_delta_deg)

    def set_cube_size(self, size_m: float) -> None:
        """Draw the object at the arm's own size (``cube.size_m``, the box's edge; a can
        scales with it as in the twin): a 2.2 cm cube seen as the nominal 2.5 cm one
        moves its centre 1.5 mm and its outline, and the hand-eye fit pays for that in
        shoulder-lift and wrist-flex degrees."""
        scale = size_m / SceneConfig().cube_size_m
        self.model.geom_size[self.cube_geom] = self.nominal_cube * scale
        self.cube_half_height = self.nominal_half_height * scale

    def set_background(self, rgb) -> None:
        """Paint the floor (and the haze beyond it) ``rgb``, as the twin's background does."""
        self.model.geom_rgba[self.floor_geom, :3] = rgb
        self.model.vis.rgba.haze[:3] = rgb

    def _pose(self, joints, cube_xy) -> None:
        self.data.qpos[self.qadr] = joints
        self.data.qpos[self.cube_qadr : self.cube_qadr + 7] = [
            *robot.arm_to_sim(cube_xy),
            self.cube_half_height,
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

    def segment(self, joints, cube_xy) -> np.ndarray:
        """Per-pixel geom id (-1 where no geom: the haze beyond the floor)."""
        self._pose(joints, cube_xy)
        self.renderer.enable_segmentation_rendering()
        try:
            self.renderer.update_scene(self.data, camera=self.camera)
            return self.renderer.render()[:, :, 0].copy()
        finally:
            self.renderer.disable_segmentation_rendering()

    def labels(self, joints, cube_xy) -> np.ndarray:
        """Per-pixel region: 0 background, 1 jaws, 2 cube, 3 other (arm, bin)."""
        geoms = self.segment(joints, cube_xy)
        out = np.full(geoms.shape, 3, dtype=np.uint8)
        out[(geoms < 0) | (geoms == self.floor_geom)] = 0
        out[np.isin(geoms, list(self.jaw_geoms))] = 1
        out[geoms == self.cube_geom] = 2
        return out

    def close(self) -> None:
        self.renderer.close()
