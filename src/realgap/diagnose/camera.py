"""Camera match at policy resolution: exposure, regions and the mount's pose.

For each pose-sweep frame the twin is rendered at exactly the recorded joint
angles (minus any calibrated offsets) and compared with the camera, region by
region -- jaws, cube, background -- using the twin's segmentation render:

- **per-region brightness** at the policy's 16x16 resolution (real / twin), which
  is what the policy sees, and which can look fine by eye at full size;
- **the exposure the twin would need**: the brightness ratio over unsaturated
  jaw pixels, with the twin's camera moved where the mount fit puts it;
- **the mount's pose error**: a derivative-free fit (Powell) of a camera offset,
  rotation and field-of-view change that best explains the frames (photometric, with that gain),
  reported in millimetres and degrees and in units of the training wobble
  (the randomization's per-step camera jitter). The jaws sit in the gripper's
  frame, as the camera does, so their place in the image measures the mount.

A pose that hides the jaws, or closes them so that their silhouettes merge
(the rest pose does), cannot locate the camera: the report warns.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize

from realgap.diagnose.joints import analysis_frames
from realgap.diagnose.recording import CalibrationRecording
from realgap.policy_io import camera_to_policy
from realgap.sim.randomization import DomainRandomization
from realgap.sim.twin_camera import TwinCamera

REGIONS = {0: "background", 1: "jaws", 2: "cube"}
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
    recording: CalibrationRecording, offsets=None, policy_size: int = 16, frames_for_pose: int = 12
) -> dict:
    offsets = np.zeros(6) if offsets is None else np.asarray(offsets, dtype=float)
    frames = analysis_frames(recording.pose_frames)
    angles = recording.pose_readings - offsets
    cube = recording.cube_xy
    twin = TwinCamera(recording.task, frames.shape[1:3])
    pose = _fit_mount(twin, frames[:frames_for_pose], angles[:frames_for_pose], cube)

    # Exposure the twin would need: the brightness ratio over unsaturated jaw pixels,
    # with the twin's camera where the fit put it (the jaws are fixed in the camera's
    # view, so joint offsets cannot misalign them; a moved mount can).
    twin.set_camera(pose["offset_m"], pose["rotation_deg"], pose["fov_delta_deg"])
    moved = np.array([twin.render(a, cube) for a in angles]).astype(float)
    moved_labels = np.array([twin.labels(a, cube) for a in angles])
    usable = (moved_labels == 1)[..., None] & (frames < 250) & (moved > 20)
    gain = float(frames[usable].sum() / max(moved[usable].sum(), 1e-9))
    # The cloth's colour, as the twin would have to paint its floor (exposure removed).
    cloth = moved_labels == 0
    background = np.clip(frames[cloth].mean(axis=0) / 255 / gain, 0, 1) if cloth.any() else None
    twin.set_camera()
    renders = np.array([twin.render(a, cube) for a in angles])
    labels = np.array([twin.labels(a, cube) for a in angles])

    # Regions at the policy's resolution.
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
    region_report = {}
    for name, values in regions.items():
        if values["real"]:
            real_mean, twin_mean = float(np.mean(values["real"])), float(np.mean(values["twin"]))
            region_report[name] = {
                "real": real_mean,
                "twin": twin_mean,
                "ratio": real_mean / twin_mean if twin_mean > 0.02 else None,
            }

    twin.close()
    wobble = DomainRandomization()
    warnings = []
    closed = np.median(recording.pose_readings[:, 5]) < MIN_JAW_OPENING_RAD
    if np.median(jaw_cells) < 2 or closed:
        warnings.append(
            f"the jaws are {'closed' if closed else 'hidden'} in most frames at these poses, "
            "so they cannot locate the camera: a camera match here is invalid; record at "
            "the start pose (never the rest pose)"
        )
    return {
        "exposure_gain_needed": gain,
        "background_rgb": None if background is None else [float(v) for v in background],
        "regions": region_report,
        "mount_offset_mm": [v * 1000 for v in pose["offset_m"]],
        "mount_rotation_deg": pose["rotation_deg"],
        "fov_delta_deg": pose["fov_delta_deg"],
        "offset_in_wobbles": float(np.linalg.norm(pose["offset_m"]) / wobble.camera_pos_wobble_m),
        "rotation_in_wobbles": float(
            np.linalg.norm(pose["rotation_deg"]) / wobble.camera_rot_wobble_deg
        ),
        "photometric_rms_before": pose["rms_before"],
        "photometric_rms_after": pose["rms_after"],
        "median_jaw_cells": float(np.median(jaw_cells)),
        "warnings": warnings,
    }


def _fit_mount(twin: TwinCamera, frames, angles, cube) -> dict:
    real = frames.astype(float) / 255

    def cost(params: np.ndarray) -> float:
        # Millimetres and degrees, so the optimizer's steps are comparable.
        twin.set_camera(params[:3] / 1000, params[3:6], params[6])
        sim = np.array([twin.render(a, cube) for a in angles]).astype(float) / 255
        gain = (real * sim).sum() / max((sim * sim).sum(), 1e-9)
        return float(np.mean((real - gain * sim) ** 2))

    start = np.zeros(7)
    before = cost(start)
    result = minimize(cost, start, method="Powell", options={"xtol": 0.05, "maxfev": 800})
    twin.set_camera()
    return {
        "offset_m": [float(v) / 1000 for v in result.x[:3]],
        "rotation_deg": [float(v) for v in result.x[3:6]],
        "fov_delta_deg": float(result.x[6]),
        "rms_before": float(np.sqrt(before)),
        "rms_after": float(np.sqrt(result.fun)),
    }
