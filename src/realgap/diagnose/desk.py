"""The desk as the twin must paint it: a texture built from the calibration session.

Every pose-sweep frame was taken with the camera at a known pose (the hand-eye fit's
joint offsets and mount), so every pixel that sees the desk is a ray to a known point
on the table. With the camera's tone undone and the twin's lighting divided out (how
bright the twin renders a desk painted plain grey at that pixel), each such pixel is a
sample of the desk's own colour at that point; averaged on a grid over the work area,
they are a texture the twin can paint on its floor (:func:`desk_texture_from`). Where
no frame saw the desk, the texture holds the mean colour.

The grid is one tile of the twin's floor texture (``DESK_EXTENT_M`` square, aligned
with the sim frame's origin, as MuJoCo repeats a uniform plane texture).
"""

from __future__ import annotations

import numpy as np
from PIL import Image

from realgap.diagnose.joints import analysis_frames
from realgap.policy_io import undo_tone
from realgap.sim.dressing import DESK_EXTENT_M
from realgap.sim.render import cube_mask, jaw_mask

TEXELS = 256
"""Texture side: 2 mm per texel over the tile."""
MIN_COVERAGE = 0.02
"""Below this share of the tile seen, the texture says little: report, do not use."""


def floor_points(camera, angles: np.ndarray, cube_xy, shape) -> np.ndarray:
    """Sim-frame (x, y) on the table seen by each pixel of a (height, width) frame with
    the arm at ``angles``; NaN where the ray does not meet the table ahead."""
    camera._pose(angles, cube_xy)
    position = camera.data.cam_xpos[camera.camera].copy()
    axes = camera.data.cam_xmat[camera.camera].reshape(3, 3)
    height, width = shape
    focal = (height / 2) / np.tan(np.deg2rad(camera.model.cam_fovy[camera.camera]) / 2)
    rows, columns = np.mgrid[0:height, 0:width].astype(float)
    # MuJoCo cameras look along -z with y up.
    right, up = (columns - (width - 1) / 2) / focal, -(rows - (height - 1) / 2) / focal
    local = np.stack([right, up, -np.ones_like(rows)], axis=-1)
    direction = local @ axes.T
    distance = -position[2] / np.where(direction[..., 2] < -1e-6, direction[..., 2], np.nan)
    points = position[None, None, :2] + distance[..., None] * direction[..., :2]
    points[~(distance > 0)] = np.nan
    return points


def desk_texture_from(
    recording, geometry, camera, response: dict, probe_grey: float
) -> tuple[np.ndarray, float] | None:
    """The desk texture (RGB uint8, TEXELS square) and the share of the tile that was
    seen, from the recording's pose frames; None if too little of the desk was seen.
    ``camera`` is a TwinCamera at the frames' shape with the fitted mount;
    ``response`` the fitted tone (exposure, gamma, black level)."""
    frames = analysis_frames(recording.pose_frames)
    shape = frames.shape[1:3]
    angles = recording.pose_readings - geometry.offsets_rad
    total = np.zeros((TEXELS, TEXELS, 3))
    count = np.zeros((TEXELS, TEXELS))
    for frame, joints, cube in zip(frames, angles, recording.cube_positions):
        labels = camera.labels(joints, cube)
        desk = (labels == 0) & ~jaw_mask(frame) & ~cube_mask(frame)
        camera.set_background((probe_grey,) * 3)
        lighting = camera.render(joints, cube).astype(float) / 255 / probe_grey
        camera.set_background((0.0, 0.0, 0.0))
        points = floor_points(camera, joints, cube, shape)
        usable = desk & np.isfinite(points).all(axis=-1) & (lighting.min(axis=-1) > 0.05)
        if not usable.any():
            continue
        colour = undo_tone(frame[usable] / 255.0, **response) / lighting[usable]
        texel = np.floor((points[usable] % DESK_EXTENT_M) / DESK_EXTENT_M * TEXELS).astype(int)
        texel = np.clip(texel, 0, TEXELS - 1)
        # An image row is a sim y, a column a sim x (as dressing paints the floor).
        np.add.at(total, (texel[:, 1], texel[:, 0]), colour)
        np.add.at(count, (texel[:, 1], texel[:, 0]), 1)
    seen = count > 0
    coverage = float(seen.mean())
    if coverage < MIN_COVERAGE:
        return None
    mean = total[seen].sum(axis=0) / count[seen].sum()
    texture = np.where(seen[..., None], total / np.maximum(count, 1)[..., None], mean)
    return (np.clip(texture, 0, 1) * 255 + 0.5).astype(np.uint8), coverage


def save_texture(texture: np.ndarray, path) -> str:
    Image.fromarray(texture).save(path)
    return str(path)
