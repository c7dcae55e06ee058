"""Joint zero offsets from a still cube seen from many poses.

A cube that does not move must appear where the twin puts it from *every*
pose. With the right zero offsets the twin, rendered at ``readings - offsets``,
shows the cube where the camera saw it; with the wrong ones the error changes
from pose to pose. Two stages:

1. **Centroids** (robust, coarse): least squares on the cube's image position.
   The twin's position is the projected cube centre plus the offset of its
   rendered colour centroid from that centre (re-measured between fits), so both
   images are measured the same way. This finds the right basin: the three
   parallel joints (lift, elbow, wrist flex) are only weakly separated by
   centroids.
2. **Silhouettes** (precise): damped Gauss-Newton on the difference between the
   camera's cube mask and the twin's cube coverage, rendered 4x finer and
   averaged down, so that it varies smoothly with the offsets. The cube's size
   and shape in the image carry the depth the centroids lack.

The cube's position must be known (a printed mark): a shoulder_pan offset and a
cube turned about the pan axis look identical. Wrist offsets and a rotated
camera mount move the image alike too; this fit assumes the mount is as
trained (``realgap diagnose camera`` reports the mount with these offsets).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import least_squares

from realgap.diagnose.recording import CalibrationRecording
from realgap.errors import ConfigError
from realgap.sim.render import centroid, cube_mask
from realgap.sim.twin_camera import TwinCamera

SUPERSAMPLE = 4
PLAUSIBLE_OFFSET_DEG = 10.0
"""Zero errors beyond this mean a wrong premise (cube elsewhere), not a miscalibration."""
MAX_ANALYSIS_WIDTH = 128


def analysis_frames(frames: np.ndarray) -> np.ndarray:
    """Frames area-downsampled by a whole factor to at most 128 pixels wide."""
    height, width = frames.shape[1:3]
    factor = max(1, int(np.ceil(width / MAX_ANALYSIS_WIDTH)))
    while height % factor or width % factor:
        factor += 1
    if factor == 1:
        return frames
    count = len(frames)
    blocks = frames.reshape(count, height // factor, factor, width // factor, factor, 3)
    return blocks.mean(axis=(2, 4)).astype(np.uint8)


def estimate_joint_offsets(recording: CalibrationRecording, min_frames: int = 8) -> dict:
    """Offsets (radians and degrees, joint order; gripper 0) with the cube where it was placed."""
    frames = analysis_frames(recording.pose_frames)
    masks = [cube_mask(f) for f in frames]
    keep = [i for i, m in enumerate(masks) if centroid(m) is not None]
    if len(keep) < min_frames:
        raise ConfigError(
            f"the cube is visible in only {len(keep)} of {len(frames)} pose-sweep frames "
            f"(need {min_frames}); place it nearer the start pose's view and record again"
        )
    readings = recording.pose_readings[keep]
    observed = np.array([centroid(masks[i]) for i in keep])
    cube = np.asarray(recording.cube_xy, dtype=float)
    height, width = frames.shape[1:3]

    coarse = TwinCamera(recording.task, (height, width))
    offsets, before_px, after_px = _fit_centroids(coarse, readings, observed, cube)
    coarse.close()

    fine = TwinCamera(recording.task, (height * SUPERSAMPLE, width * SUPERSAMPLE))
    targets = np.array([masks[i] for i in keep], dtype=float)

    def residuals(candidate: np.ndarray) -> np.ndarray:
        full = np.append(candidate, 0.0)
        out = []
        for joints, target in zip(readings, targets):
            mask = cube_mask(fine.render(joints - full, cube)).astype(np.float32)
            coverage = mask.reshape(height, SUPERSAMPLE, width, SUPERSAMPLE).mean(axis=(1, 3))
            out.append((coverage - target).ravel())
        return np.concatenate(out)

    offsets = _gauss_newton(residuals, offsets)
    fine.close()
    warnings = []
    if np.abs(np.rad2deg(offsets)).max() > PLAUSIBLE_OFFSET_DEG:
        warnings.append(
            f"offsets up to {np.abs(np.rad2deg(offsets)).max():.0f} degrees are implausible for "
            "a calibrated arm: was the cube's mark where the recording says, measured from the "
            "rotation axis (`realgap diagnose frame`)? Do not use them."
        )
    return {
        "warnings": warnings,
        "offsets_rad": [*map(float, offsets), 0.0],
        "offsets_deg": [*map(float, np.rad2deg(offsets)), 0.0],
        "frames_used": len(keep),
        "centroid_rms_px_before": before_px,
        "centroid_rms_px_after_coarse_fit": after_px,
    }


def _fit_centroids(twin: TwinCamera, readings, observed, cube):
    def bias(offsets: np.ndarray) -> np.ndarray:
        out = []
        for joints in readings:
            angles = joints - np.append(offsets, 0.0)
            rendered = centroid(cube_mask(twin.render(angles, cube)))
            projected = twin.project_cube(angles, cube)
            out.append(np.zeros(2) if rendered is None else rendered - projected)
        return np.array(out)

    def residuals(offsets: np.ndarray, shift: np.ndarray) -> np.ndarray:
        full = np.append(offsets, 0.0)
        predicted = np.array([twin.project_cube(j - full, cube) for j in readings])
        return (predicted + shift - observed).ravel()

    offsets = np.zeros(5)
    shift = bias(offsets)
    before = residuals(offsets, shift)
    # The rendered centroid is not smooth in the joints; its offset from the projected
    # centre is nearly constant: fit on the projection, re-measure the offset, refit.
    for _ in range(3):
        offsets = least_squares(residuals, offsets, args=(shift,), x_scale=0.01).x
        shift = bias(offsets)
    after = residuals(offsets, shift)
    rms = lambda r: float(np.sqrt(np.mean(r**2)))  # noqa: E731
    return offsets, rms(before), rms(after)


def _gauss_newton(residuals, x: np.ndarray, step: float = 0.003, iterations: int = 12):
    """Levenberg-Marquardt with forward differences of ``step`` radians: coarse enough
    to move a rendered silhouette, which the library's tiny default steps do not."""
    r = residuals(x)
    cost, damping = r @ r, 1e-3
    eye = np.eye(len(x))
    for _ in range(iterations):
        jac = np.stack([(residuals(x + step * eye[k]) - r) / step for k in range(len(x))], 1)
        normal, gradient = jac.T @ jac, jac.T @ r
        while damping < 1e6:
            delta = np.linalg.solve(normal + damping * np.diag(np.diag(normal) + 1e-9), -gradient)
            trial = residuals(x + delta)
            if trial @ trial < cost:
                x, r, cost = x + delta, trial, trial @ trial
                damping = max(damping / 3, 1e-6)
                break
            damping *= 5
        else:
            break
        if np.abs(delta).max() < 1e-5:
            break
    return x
