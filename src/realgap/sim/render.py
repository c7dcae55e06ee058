"""The wrist camera as the policy sees it.

One offscreen renderer per env batch draws each env's wrist view at
``image_size * render_supersample`` pixels with that env's visual parameters
(camera wobble and field of view, light, cube and background colours), then
area-downsamples to the policy resolution and applies exposure and colour
jitter. Real frames go through the same :func:`postprocess`, so sim and real
share one image code path.
"""

from __future__ import annotations

import copy

import mujoco
import numpy as np

from realgap.sim import robot
from realgap.sim.scene import CUBE, FLOOR


def area_downsample(image: np.ndarray, size: int) -> np.ndarray:
    """Average ``image`` (H, W, C) float down to (size, size, C); H and W multiples of size."""
    height, width, channels = image.shape
    if height % size or width % size:
        raise ValueError(f"cannot area-downsample {height}x{width} to {size}x{size}")
    return image.reshape(size, height // size, size, width // size, channels).mean(axis=(1, 3))


def _hue_rotation(turns: float) -> np.ndarray:
    """RGB -> RGB matrix rotating hue by ``turns`` (in YIQ space)."""
    to_yiq = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]])
    angle = 2 * np.pi * turns
    rotate = np.array(
        [[1, 0, 0], [0, np.cos(angle), -np.sin(angle)], [0, np.sin(angle), np.cos(angle)]]
    )
    return np.linalg.inv(to_yiq) @ rotate @ to_yiq


def postprocess(
    image: np.ndarray,
    size: int,
    exposure: float = 1.0,
    brightness: float = 0.0,
    contrast: float = 1.0,
    saturation: float = 1.0,
    hue: float = 0.0,
) -> np.ndarray:
    """uint8 (H, W, 3) at any multiple of ``size`` -> uint8 (size, size, 3) policy image."""
    pixels = area_downsample(image.astype(np.float32) / 255.0, size)
    pixels = pixels * exposure
    if hue:
        pixels = pixels @ _hue_rotation(hue).T.astype(np.float32)
    if saturation != 1.0:
        grey = pixels.mean(axis=-1, keepdims=True)
        pixels = grey + saturation * (pixels - grey)
    if contrast != 1.0:
        pixels = pixels.mean() + contrast * (pixels - pixels.mean())
    pixels = pixels + brightness
    return (np.clip(pixels, 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8)


def camera_to_policy(frame: np.ndarray, size: int) -> np.ndarray:
    """Any camera frame uint8 (H, W, 3) -> policy image uint8 (size, size, 3).

    Centre-crops to a square whose side is a multiple of ``size`` (the square
    keeps the vertical field of view the twin renders with), then goes through
    the same :func:`postprocess` as every simulated frame.
    """
    height, width = frame.shape[:2]
    side = (min(height, width) // size) * size
    if side == 0:
        raise ValueError(
            f"camera frame {height}x{width} is smaller than the policy's {size}x{size}"
        )
    top, left = (height - side) // 2, (width - side) // 2
    return postprocess(frame[top : top + side, left : left + side], size)


def _small_rotation_quat(rotvec: np.ndarray) -> np.ndarray:
    quat = np.zeros(4)
    mujoco.mju_axisAngle2Quat(
        quat, rotvec / (np.linalg.norm(rotvec) + 1e-12), float(np.linalg.norm(rotvec))
    )
    return quat


class WristRenderer:
    """Renders batched wrist images from joint states; owns its own model copy."""

    def __init__(
        self,
        model: mujoco.MjModel,
        image_size: int,
        supersample: int,
        shape: tuple[int, int] | None = None,
    ):
        self.model = copy.deepcopy(model)
        self.data = mujoco.MjData(self.model)
        self.image_size = image_size
        side = image_size * supersample
        height, width = shape or (side, side)  # a camera's native (height, width)
        self.renderer = mujoco.Renderer(self.model, height, width)
        self.camera = self.model.camera(robot.WRIST_CAMERA).id
        self.cube_geom = self.model.geom(CUBE).id
        self.floor_geom = self.model.geom(FLOOR).id
        self.nominal = {
            "cam_pos": self.model.cam_pos[self.camera].copy(),
            "cam_quat": self.model.cam_quat[self.camera].copy(),
            "cam_fovy": float(self.model.cam_fovy[self.camera]),
            "light_diffuse": self.model.light_diffuse.copy(),
            "cube_rgba": self.model.geom_rgba[self.cube_geom].copy(),
            "cube_size": self.model.geom_size[self.cube_geom].copy(),
            "floor_rgba": self.model.geom_rgba[self.floor_geom].copy(),
        }

    def render_raw(self, qpos: np.ndarray, mocap_pos: np.ndarray | None = None, camera=None):
        """Full-resolution uint8 frame of ``camera`` (wrist by default) at state ``qpos``."""
        self.data.qpos[:] = qpos
        if mocap_pos is not None and self.model.nmocap:
            self.data.mocap_pos[:] = mocap_pos
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_camlight(self.model, self.data)
        self.renderer.update_scene(self.data, camera=self.camera if camera is None else camera)
        return self.renderer.render()

    def render(self, qpos, mocap_pos, params, noise, index: int) -> np.ndarray:
        """Policy image of env ``index`` with its randomized visuals applied."""
        m, nominal, i = self.model, self.nominal, index
        m.cam_pos[self.camera] = nominal["cam_pos"] + noise.camera_pos[i]
        quat = np.zeros(4)
        mujoco.mju_mulQuat(quat, nominal["cam_quat"], _small_rotation_quat(noise.camera_rot[i]))
        m.cam_quat[self.camera] = quat
        m.cam_fovy[self.camera] = nominal["cam_fovy"] + params.camera_fov_delta[i]
        m.light_diffuse[:] = nominal["light_diffuse"] * params.light_scale[i]
        rgba = nominal["cube_rgba"].copy()
        rgba[:3] = np.clip(rgba[:3] + params.cube_rgb_delta[i], 0, 1)
        m.geom_rgba[self.cube_geom] = rgba
        m.geom_size[self.cube_geom] = nominal["cube_size"] * params.cube_size_scale[i]
        floor = nominal["floor_rgba"].copy()
        floor[:3] = np.maximum(floor[:3], params.background_grey[i])
        m.geom_rgba[self.floor_geom] = floor
        raw = self.render_raw(qpos, mocap_pos)
        return postprocess(
            raw,
            self.image_size,
            exposure=params.exposure_scale[i],
            brightness=params.brightness[i],
            contrast=params.contrast[i],
            saturation=params.saturation[i],
            hue=params.hue[i],
        )

    def close(self) -> None:
        self.renderer.close()
