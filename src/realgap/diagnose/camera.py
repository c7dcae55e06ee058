"""Camera match at policy resolution: tone response, background and regions.

The mount's pose (offset, rotation, field of view) comes from the hand-eye fit
(:mod:`realgap.diagnose.hand_eye`), together with the joint offsets. With the
twin's camera put there and the arm at the recorded angles minus those offsets:

- **the tone response** (exposure, gamma, black level) from pixels both images
  call jaw or cube, whose colours are known;
- **the background's colour**, with that response undone, as the twin would have
  to paint its floor;
- **per-region brightness** at the policy's 16x16 resolution (real / nominal
  twin), which is what the policy sees, and which can look fine by eye at full size.

A pose that hides the jaws, or closes them so that their silhouettes merge
(the rest pose does), cannot locate the camera: the report warns.
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import binary_erosion
from scipy.optimize import least_squares

from realgap.diagnose.desk import desk_texture_from
from realgap.diagnose.hand_eye import HandEyeFit, fit_hand_eye
from realgap.diagnose.joints import analysis_frames
from realgap.diagnose.recording import CalibrationRecording
from realgap.policy_io import camera_to_policy, tone, undo_tone
from realgap.sim.randomization import DomainRandomization
from realgap.sim.render import cube_mask, jaw_mask
from realgap.sim.twin_camera import TwinCamera

REGIONS = {0: "background", 1: "jaws", 2: "cube"}
PROBE_GREY = 0.5
"""Floor colour the twin is rendered with to learn how its lighting scales a floor."""
TONE_OUTLIER = 0.03
"""Residuals beyond this (0..1, about 8 of 255 levels: more than noise and MJPEG make)
count linearly in the tone fit: shading the twin does not draw, not the response."""
CLIPPED = 250
"""A frame's channel at or above this (of 255) is clipped: a lower bound, not a value."""
MIN_JAW_OPENING_RAD = 0.2
"""Below this gripper angle the two jaws' silhouettes merge (the rest pose closes them)."""


def policy_labels(labels: np.ndarray, size: int) -> np.ndarray:
    """Region of each policy-resolution cell: the label covering >= 60% of it, else -1."""
    height, width = labels.shape
    side = (min(height, width) // size) * size
    top, left = (height - side) // 2, (width - side) // 2
    square = labels[top : top + side, left : left + side]
    cells = square.reshape(size, side // size, size, side // size).transpose(0, 2, 1, 3)
    cells = cells.reshape(size, size, -1)
    out = np.full((size, size), -1)
    for label in REGIONS:
        share = (cells == label).mean(axis=2)
        out[share >= 0.6] = label
    return out


def diagnose_camera(
    recording: CalibrationRecording,
    geometry: HandEyeFit | None = None,
    policy_size: int = 16,
    shadows: bool = False,
) -> dict:
    """Tone, background and regions with the camera where ``geometry`` (the hand-eye
    fit of joint offsets and mount; fitted here when not given) puts it. ``shadows``:
    the room casts the arm's shadow (the user says so, as rig.toml's ``scene.shadows``);
    the twin that measures then draws it too, and the desk is learned as a shadowed
    twin will paint it."""
    geometry = geometry or fit_hand_eye(recording)
    frames = analysis_frames(recording.pose_frames)
    angles = recording.pose_readings - geometry.offsets_rad
    cubes = recording.cube_positions  # the mark each pose saw
    twin = TwinCamera(recording.task, frames.shape[1:3], shadows=shadows)
    twin.set_camera(geometry.mount_offset_m, geometry.mount_rotation_deg, geometry.fov_delta_deg)
    moved = np.array([twin.render(a, c) for a, c in zip(angles, cubes)])
    moved_labels = np.array([twin.labels(a, c) for a, c in zip(angles, cubes)])
    response = fit_tone(frames, moved)
    # The cloth's colour, as the twin would have to paint its floor: the tone undone,
    # then the twin's lighting divided out (how bright a floor painted grey renders
    # here), pixel by pixel; clipped channels left out (they say only "at least").
    cloth = (moved_labels == 0) & ~jaw_mask(frames) & ~cube_mask(frames)
    background = None
    if cloth.any():
        twin.set_background((PROBE_GREY,) * 3)
        probe = np.array([twin.render(a, c) for a, c in zip(angles, cubes)])
        twin.set_background((0.0, 0.0, 0.0))
        lighting = np.maximum(probe[cloth] / 255 / PROBE_GREY, 1e-3)
        pixels = frames[cloth]
        colour = undo_tone(pixels / 255, **response) / lighting
        # Pixels the grey floor barely lights see past the desk (or its darkest corner).
        usable = (pixels < CLIPPED) & (lighting.min(axis=-1, keepdims=True) > 0.05)
        total = np.where(usable, colour, 0.0).sum(axis=0)
        background = np.clip(bounded_mean(total, usable.sum(axis=0), colour.max(axis=0)), 0, 1)
    # The desk's own pattern where the frames saw it (wood grain, a mat's grid ...).
    desk = desk_texture_from(recording, geometry, twin, response, PROBE_GREY)
    twin.set_camera()
    renders = np.array([twin.render(a, c) for a, c in zip(angles, cubes)])
    labels = np.array([twin.labels(a, c) for a, c in zip(angles, cubes)])
    twin.close()

    regions, jaw_cells = _regions(frames, renders, labels, policy_size)
    wobble = DomainRandomization()
    warnings = []
    closed = np.median(recording.pose_readings[:, 5]) < MIN_JAW_OPENING_RAD
    if np.median(jaw_cells) < 2 or closed:
        warnings.append(
            f"the jaws are {'closed' if closed else 'hidden'} in most frames at these poses, "
            "so they cannot locate the camera: a camera match here is invalid; record at "
            "the start pose (never the rest pose)"
        )
    offset_m, rotation_deg = geometry.mount_offset_m, geometry.mount_rotation_deg
    return {
        "exposure_gain_needed": response["exposure"],
        "gamma": response["gamma"],
        "black_level": response["black_level"],
        "tone_rms": response["rms"],
        "background_rgb": None if background is None else [float(v) for v in background],
        "desk_texture": None if desk is None else desk[0],
        "desk_coverage": 0.0 if desk is None else desk[1],
        "shadows": shadows,
        "regions": regions,
        "mount_offset_mm": [v * 1000 for v in offset_m],
        "mount_rotation_deg": list(rotation_deg),
        "fov_delta_deg": geometry.fov_delta_deg,
        "offset_in_wobbles": float(np.linalg.norm(offset_m) / wobble.camera_pos_wobble_m),
        "rotation_in_wobbles": float(np.linalg.norm(rotation_deg) / wobble.camera_rot_wobble_deg),
        "median_jaw_cells": float(np.median(jaw_cells)),
        "warnings": warnings,
    }


def bounded_mean(total: np.ndarray, count: np.ndarray, bound: np.ndarray) -> np.ndarray:
    """Per channel: the mean of the unclipped samples (their ``total`` over their
    ``count``), or where every sample clipped, their brightest lower ``bound``."""
    return np.where(count > 0, total / np.maximum(count, 1), bound)


def fit_tone(frames: np.ndarray, renders: np.ndarray) -> dict:
    """The camera's response (exposure, gamma, black level of
    :func:`realgap.policy_io.tone`) from pixels both images call jaw or cube: their
    colours are known, so each pair says what the camera made of a known value.
    Edges are dropped (one pixel of erosion): a misplaced edge is not a response."""
    pairs_real, pairs_twin = [], []
    for mask in (jaw_mask, cube_mask):
        both = binary_erosion(mask(frames) & mask(renders), structure=np.ones((1, 3, 3)))
        pairs_real.append(frames[both])
        pairs_twin.append(renders[both])
    real = np.concatenate(pairs_real).astype(float).ravel() / 255
    twin = np.concatenate(pairs_twin).astype(float).ravel() / 255
    # Saturated pixels say only "at least this bright".
    usable = (real < 0.98) & (twin < 0.98)
    real, twin = real[usable], twin[usable]
    if len(real) < 50:
        return {"exposure": 1.0, "gamma": 1.0, "black_level": 0.0, "rms": float("nan")}

    def residuals(params: np.ndarray) -> np.ndarray:
        exposure, gamma, black = np.exp(params[0]), np.exp(params[1]), params[2]
        return tone(twin, exposure, gamma, black) - real

    # tone() computes in float32, so steps must be coarse; and the finite differences
    # are relative, so no value starts at exactly zero.
    start = np.array([0.01, 0.01, 0.01])
    # Robust: a highlight or a shadow the twin does not draw (a lamp's glint on a jaw,
    # the room's shadow over it) is not the response. Squared, those pixels pulled a
    # white-desk webcam's exposure from about 1 to 0.71, and the twin could then paint
    # nothing brighter than 195 of the camera's 255 (tone error at 0.2/0.5/0.8 over 30
    # random arms, p90: 17 -> 13 levels; 10 webcam arms: 37 -> 19).
    fit = least_squares(
        residuals,
        start,
        bounds=([-2, -1, 0], [2, 1, 0.3]),
        diff_step=1e-3,
        loss="huber",
        f_scale=TONE_OUTLIER,
    )
    return {
        "exposure": float(np.exp(fit.x[0])),
        "gamma": float(np.exp(fit.x[1])),
        "black_level": float(fit.x[2]),
        "rms": float(np.sqrt(np.mean(fit.fun**2))),
    }


def _regions(frames, renders, labels, policy_size: int):
    """Mean brightness per region at the policy's resolution, camera vs nominal twin."""
    regions = {name: {"real": [], "twin": []} for name in REGIONS.values()}
    jaw_cells = []
    for frame, render, label in zip(frames, renders, labels):
        cells = policy_labels(label, policy_size)
        jaw_cells.append(int((cells == 1).sum()))
        real_image = camera_to_policy(frame, policy_size).astype(float) / 255
        twin_image = camera_to_policy(render, policy_size).astype(float) / 255
        for value, name in REGIONS.items():
            if (cells == value).any():
                regions[name]["real"].append(real_image[cells == value].mean())
                regions[name]["twin"].append(twin_image[cells == value].mean())
    report = {}
    for name, values in regions.items():
        if values["real"]:
            real_mean, twin_mean = float(np.mean(values["real"])), float(np.mean(values["twin"]))
            report[name] = {
                "real": real_mean,
                "twin": twin_mean,
                "ratio": real_mean / twin_mean if twin_mean > 0.02 else None,
            }
    return report, jaw_cells
