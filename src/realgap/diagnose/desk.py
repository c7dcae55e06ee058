"""The desk as the twin must paint it: a texture built from the calibration session.

Every pose-sweep frame was taken with the camera at a known pose (the hand-eye fit's
joint offsets and mount), so every pixel that sees the desk is a ray to a known point
on the table. With the camera's tone undone and the twin's lighting divided out (how
bright the twin renders a desk painted plain grey at that pixel), each such pixel is a
sample of the desk's own colour at that point; averaged on a grid over the work area,
they are a texture the twin can paint on its floor (:func:`desk_texture_from`). Where
no frame saw the desk, the texture holds the median colour.

A light desk under a bright lamp saturates the camera: a clipped channel says only
"at least this bright", and read as the only value it paints the twin's desk darker
than the arm's camera sees it (a light-wood desk at 0.74 red read as 0.55 where it
clipped, and the twin's images came out 35 levels darker than the arm's). Each texel
takes the median of its samples, a clipped one at its bound: the same samples in
every channel (left out per channel, the clipped ones turned a white desk cyan where
only the arm's shadow was unclipped), and the arm's shadow, which most frames do not
cast on a given texel, left out. Pixels beside the jaws or the cube mix their colour
into the desk's and are left out too; a 3x3 median takes out the specks of texels
seen once or twice far away.

The grid is one tile of the twin's floor texture (``DESK_EXTENT_M`` square, aligned
with the sim frame's origin, as MuJoCo repeats a uniform plane texture).
"""

from __future__ import annotations

import numpy as np
from PIL import Image
from scipy.ndimage import binary_dilation, median_filter

from realgap.diagnose.joints import analysis_frames
from realgap.policy_io import tone, undo_tone
from realgap.sim.dressing import DESK_EXTENT_M
from realgap.sim.render import cube_mask, jaw_mask
from realgap.sim.twin_camera import TwinCamera

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
    ``camera`` is a TwinCamera at the frames' shape with the fitted mount (casting
    shadows where the twin that paints the texture will: its lighting is measured so);
    ``response`` the fitted tone (exposure, gamma, black level)."""
    frames = analysis_frames(recording.pose_frames)
    shape = frames.shape[1:3]
    angles = recording.pose_readings - geometry.offsets_rad
    texels, colours = [], []
    # The lighting as the twin will paint the texture: on a floor textured a uniform
    # grey (MuJoCo lights a textured floor differently from a plain-coloured one: a
    # plain 0.5 grey read 172 of 255 where a 0.5 texture read 128), with the twin's
    # shadows or without: MuJoCo clips a textured floor's light at 1 in one pass, but
    # draws a shadow-casting light in a pass of its own, so with shadows the same
    # texture renders about 1.2 times brighter (a 0.6 grey: 153 without, 186 with).
    # Measured without them, a shadowed room's desk was learned that much too bright
    # and painted by a twin that lights it so again (15 of 255 levels, mid-grey desk).
    grey = np.full((8, 8, 3), round(probe_grey * 255), dtype=np.uint8)
    probe = TwinCamera(recording.task, shape, floor_texture=grey, shadows=camera.shadows)
    probe.set_camera(geometry.mount_offset_m, geometry.mount_rotation_deg, geometry.fov_delta_deg)
    for frame, joints, cube in zip(frames, angles, recording.cube_positions):
        labels = camera.labels(joints, cube)
        objects = (labels != 0) | jaw_mask(frame) | cube_mask(frame)
        desk = ~binary_dilation(objects)
        lighting = probe.render(joints, cube).astype(float) / float(grey[0, 0, 0])
        points = floor_points(camera, joints, cube, shape)
        usable = desk & np.isfinite(points).all(axis=-1) & (lighting.min(axis=-1) > 0.05)
        if not usable.any():
            continue
        texel = np.floor((points[usable] % DESK_EXTENT_M) / DESK_EXTENT_M * TEXELS).astype(int)
        texel = np.clip(texel, 0, TEXELS - 1)
        # An image row is a sim y, a column a sim x (as dressing paints the floor).
        texels.append(texel[:, 1] * TEXELS + texel[:, 0])
        colours.append(undo_tone(frame[usable] / 255.0, **response) / lighting[usable])
    probe.close()
    if not texels:
        return None
    texel, colour = np.concatenate(texels), np.concatenate(colours)
    seen = np.zeros(TEXELS * TEXELS, dtype=bool)
    seen[texel] = True
    coverage = float(seen.mean())
    if coverage < MIN_COVERAGE:
        return None
    texture = np.zeros((TEXELS * TEXELS, 3))
    for channel in range(3):
        # Every sample, a clipped one at its bound ("at least this bright"): the same
        # samples in every channel, so a desk whose red clipped where the light fell
        # and not in the arm's shadow does not turn cyan, and the median leaves the
        # shadow out where most frames saw the texel in the light.
        texture[:, channel] = texel_median(texel, colour[:, channel])
    texture[~seen] = np.median(texture[seen], axis=0)
    # Texels seen once or twice far away are noisy specks; the policy sees 16x16.
    texture = median_filter(texture.reshape(TEXELS, TEXELS, 3), size=(3, 3, 1))
    return (np.clip(texture, 0, 1) * 255 + 0.5).astype(np.uint8), coverage


def desk_as_painted(
    recording, geometry, found: dict, shadows: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """How well a learned desk stands in for the camera's: the desk pixels of the
    recording's pose frames as the camera saw them, and as the twin paints the learned
    desk there through the learned tone (``found``: what ``diagnose_camera`` returned;
    ``shadows``: the twin casts them). Two (n, 3) arrays in levels of 255."""
    frames = analysis_frames(recording.pose_frames)
    angles = recording.pose_readings - geometry.offsets_rad
    twin = TwinCamera(
        recording.task, frames.shape[1:3], floor_texture=found["desk_texture"], shadows=shadows
    )
    twin.set_camera(geometry.mount_offset_m, geometry.mount_rotation_deg, geometry.fov_delta_deg)
    response = [found[key] for key in ("exposure_gain_needed", "gamma", "black_level")]
    seen, painted = [], []
    for frame, joints, cube in zip(frames, angles, recording.cube_positions):
        desk = (twin.labels(joints, cube) == 0) & ~jaw_mask(frame) & ~cube_mask(frame)
        seen.append(frame[desk].astype(float))
        painted.append(tone(twin.render(joints, cube) / 255.0, *response)[desk] * 255)
    twin.close()
    return np.concatenate(seen), np.concatenate(painted)


def texel_median(texel: np.ndarray, value: np.ndarray) -> np.ndarray:
    """Per texel (of ``TEXELS**2``), the median of its samples (0 where none): the
    desk's own colour where a minority of the frames saw it under the arm's shadow."""
    out = np.zeros(TEXELS * TEXELS)
    if len(texel) == 0:
        return out
    order = np.lexsort((value, texel))
    texel, value = texel[order], value[order]
    present, start, count = np.unique(texel, return_index=True, return_counts=True)
    middle = start + (count - 1) // 2
    out[present] = (value[middle] + value[start + count // 2]) / 2
    return out


def save_texture(texture: np.ndarray, path) -> str:
    Image.fromarray(texture).save(path)
    return str(path)
