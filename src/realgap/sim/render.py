"""The wrist camera as the policy sees it.

One offscreen renderer per env batch draws each env's wrist view at
``image_size * render_supersample`` pixels with that env's visual parameters
(camera wobble and field of view, light, cube and background colours), then
area-downsamples to the policy resolution and applies exposure and colour
jitter. Real frames go through the same :func:`realgap.policy_io.postprocess`,
so sim and real share one image code path; :func:`set_wrist_camera` is the one
place a camera mount error is put into a model (twin, fake arm, diagnostics).
"""

from __future__ import annotations

import base64
import copy

import cv2
import mujoco
import numpy as np

from realgap.policy_io import postprocess
from realgap.sim import robot
from realgap.sim.draws import StepNoise, TwinBatch
from realgap.sim.scene import CUBE, FLOOR, STACK_BASE


def small_rotation_quat(rotvec: np.ndarray) -> np.ndarray:
    """Unit quaternion of a rotation vector (radians)."""
    rotvec = np.asarray(rotvec, dtype=float)
    quat = np.zeros(4)
    mujoco.mju_axisAngle2Quat(
        quat, rotvec / (np.linalg.norm(rotvec) + 1e-12), float(np.linalg.norm(rotvec))
    )
    return quat


def set_wrist_camera(
    model: mujoco.MjModel, camera: int, nominal: dict, offset_m, rotation_rad, fov_delta_deg
) -> None:
    """Put camera ``camera`` at its ``nominal`` pose (``cam_pos``, ``cam_quat``,
    ``cam_fovy``) moved by ``offset_m`` (gripper frame), rotated by the rotation
    vector ``rotation_rad`` (camera frame), with the field of view widened."""
    model.cam_pos[camera] = nominal["cam_pos"] + np.asarray(offset_m, dtype=float)
    quat = np.zeros(4)
    mujoco.mju_mulQuat(quat, nominal["cam_quat"], small_rotation_quat(rotation_rad))
    model.cam_quat[camera] = quat
    model.cam_fovy[camera] = nominal["cam_fovy"] + float(fov_delta_deg)


class TwinVisuals:
    """A model copy whose wrist camera, light and colours are set to one env's twin at a
    time (:meth:`apply_twin`): what the single-frame and the batched renderers share."""

    def __init__(self, model: mujoco.MjModel):
        self.model = model
        self.camera = self.model.camera(robot.WRIST_CAMERA).id
        self.cube_geom = self.model.geom(CUBE).id
        self.floor_geom = self.model.geom(FLOOR).id
        self.cube_is_box = self.model.geom_type[self.cube_geom] == mujoco.mjtGeom.mjGEOM_BOX
        has_base = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_GEOM, STACK_BASE) >= 0
        self.base_geom = self.model.geom(STACK_BASE).id if has_base else -1
        self.nominal = {
            "cube_size": self.model.geom_size[self.cube_geom].copy(),
            "base_size": self.model.geom_size[self.base_geom].copy() if has_base else None,
            "base_rgb": self.model.geom_rgba[self.base_geom, :3].copy() if has_base else None,
            "cam_pos": self.model.cam_pos[self.camera].copy(),
            "cam_quat": self.model.cam_quat[self.camera].copy(),
            "cam_fovy": float(self.model.cam_fovy[self.camera]),
            "light_diffuse": self.model.light_diffuse.copy(),
        }

    def apply_twin(self, twin: TwinBatch, index: int, noise: StepNoise | None = None) -> None:
        """Put env ``index``'s visual twin (and this step's camera wobble) into the model."""
        m, nominal, i = self.model, self.nominal, index
        # The mount error is fixed for the episode; the wobble is drawn every step.
        rotation, offset = twin.camera_rotation[i], twin.camera_offset[i]
        if noise is not None:
            rotation, offset = rotation + noise.camera_rot[i], offset + noise.camera_pos[i]
        set_wrist_camera(m, self.camera, nominal, offset, rotation, twin.camera_fov_delta[i])
        m.light_diffuse[:] = nominal["light_diffuse"] * twin.light_scale[i]
        m.geom_rgba[self.cube_geom, :3] = twin.cube_rgb[i]
        if self.cube_is_box:
            m.geom_size[self.cube_geom] = twin.cube_size_m[i] / 2  # three half edges
        else:  # a can: the scene's radius and half height, scaled
            m.geom_size[self.cube_geom] = nominal["cube_size"] * twin.cube_size_scale[i]
        if self.base_geom >= 0:
            m.geom_size[self.base_geom] = nominal["base_size"] * twin.base_size_scale[i]
            rgb = np.clip(nominal["base_rgb"] + twin.base_rgb_shift[i], 0.0, 1.0)
            m.geom_rgba[self.base_geom, :3] = rgb
        if m.geom_matid[self.floor_geom] < 0:  # a textured desk carries its own colour
            m.geom_rgba[self.floor_geom, :3] = twin.background_rgb[i]
        m.vis.rgba.haze[:3] = twin.background_rgb[i]


class WristRenderer(TwinVisuals):
    """Renders single wrist frames from joint states at any resolution (the fake camera,
    diagnostics); owns its own model copy."""

    def __init__(
        self,
        model: mujoco.MjModel,
        image_size: int,
        supersample: int,
        shape: tuple[int, int] | None = None,
    ):
        super().__init__(copy.deepcopy(model))
        self.data = mujoco.MjData(self.model)
        self.image_size = image_size
        side = image_size * supersample
        height, width = shape or (side, side)  # a camera's native (height, width)
        # The offscreen framebuffer must hold the frame (a webcam's, or a wider render).
        visual = self.model.vis.global_
        visual.offwidth, visual.offheight = (
            max(visual.offwidth, width),
            max(visual.offheight, height),
        )
        self.renderer = mujoco.Renderer(self.model, height, width)

    def render_raw(self, qpos: np.ndarray, mocap_pos: np.ndarray | None = None, camera=None):
        """Full-resolution uint8 frame of ``camera`` (wrist by default) at state ``qpos``."""
        self.data.qpos[:] = qpos
        if mocap_pos is not None and self.model.nmocap:
            self.data.mocap_pos[:] = mocap_pos
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_camlight(self.model, self.data)
        self.renderer.update_scene(self.data, camera=self.camera if camera is None else camera)
        return self.renderer.render()

    def render(self, qpos, mocap_pos, twin: TwinBatch, noise: StepNoise, index: int) -> np.ndarray:
        """Policy image of env ``index`` with its twin's visuals and this step's wobble."""
        i = index
        self.apply_twin(twin, i, noise)
        raw = self.render_raw(qpos, mocap_pos)
        return postprocess(
            raw,
            self.image_size,
            exposure=twin.exposure_scale[i],
            brightness=twin.brightness[i],
            contrast=twin.contrast[i],
            saturation=twin.saturation[i],
            hue=twin.hue[i],
            gamma=twin.gamma[i],
            black_level=twin.black_level[i],
            gain=twin.exposure_jitter[i],
        )

    def close(self) -> None:
        self.renderer.close()


def cube_mask(image: np.ndarray) -> np.ndarray:
    """Red-cube pixels by colour ratios (robust to exposure): works on real frames and
    twin renders alike, so both centroids are measured the same way."""
    rgb = image.astype(np.float32)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return (r > 40) & (r > 1.8 * g) & (r > 1.8 * b)


def jaw_mask(image: np.ndarray) -> np.ndarray:
    """Jaw pixels by colour ratios: the twin's printed parts are yellow
    (``printed`` in ``so101.xml``), saturated with little blue, unlike the red cube
    and grey or brown desks. Like :func:`cube_mask`, robust to exposure and tone,
    so real frames and twin renders are measured the same way. Printed jaws of
    another colour need that colour in the twin's material first."""
    rgb = image.astype(np.float32)
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    return (r > 40) & (g > 0.5 * r) & (g < 1.2 * r) & (b < 0.45 * g)


def centroid(mask: np.ndarray) -> np.ndarray | None:
    """(row, column) centroid of a mask, or None with fewer than 6 pixels."""
    rows, cols = np.nonzero(mask)
    if len(rows) < 6:
        return None
    return np.array([rows.mean(), cols.mean()])


COVERAGE_WIDTH = 32
"""Columns of a stored mask coverage (rows follow the frame's aspect)."""


def encode_coverage(mask: np.ndarray, width: int = COVERAGE_WIDTH) -> dict:
    """A mask's coverage on a coarse grid (uint8 0..255), compact enough to keep in an
    episode's JSON: the jaws' silhouette in a first frame."""
    height = max(1, round(mask.shape[0] * width / mask.shape[1]))
    grid = cv2.resize(mask.astype(np.float32), (width, height), interpolation=cv2.INTER_AREA)
    data = (np.clip(grid, 0, 1) * 255 + 0.5).astype(np.uint8)
    return {"shape": [height, width], "coverage": base64.b64encode(data.tobytes()).decode()}


def decode_coverage(encoded: dict) -> np.ndarray:
    """:func:`encode_coverage`'s grid back as floats 0..1."""
    data = np.frombuffer(base64.b64decode(encoded["coverage"]), dtype=np.uint8)
    return data.reshape(encoded["shape"]).astype(np.float32) / 255.0
