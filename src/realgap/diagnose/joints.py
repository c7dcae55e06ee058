"""Joint-offset fitting tools the hand-eye calibration builds on.

- :func:`fit_centroids` (robust, coarse): least squares on the cube's image
  position. The twin's position is the projected cube centre plus the offset of its
  rendered colour centroid from that centre (re-measured between fits), so both
  images are measured the same way. It finds the right basin; the three parallel
  joints (lift, elbow, wrist flex) are only weakly separated by centroids.
- :func:`levenberg_marquardt` with coarse finite differences, for silhouettes.
- :func:`analysis_frames`: camera frames at a size the fits can afford;
  :func:`analysis_coverage`: a mask taken on the full frames, averaged down to that size.

The cube's position must be known (a printed mark): a shoulder_pan offset and a
cube turned about the pan axis look identical.
"""

from __future__ import annotations

from collections.abc import Callable

import cv2
import numpy as np
from scipy.optimize import least_squares

from realgap.sim.render import centroid, cube_mask
from realgap.sim.twin_camera import TwinCamera

PLAUSIBLE_OFFSET_DEG = 10.0
"""Zero errors beyond this mean a wrong premise (cube elsewhere), not a miscalibration."""
MAX_ANALYSIS_WIDTH = 128


def analysis_factor(shape: tuple[int, int]) -> int:
    """The whole factor that brings a ``(height, width)`` frame to at most 128 wide."""
    height, width = shape
    factor = max(1, int(np.ceil(width / MAX_ANALYSIS_WIDTH)))
    while height % factor or width % factor:
        factor += 1
    return factor


def analysis_frames(frames: np.ndarray) -> np.ndarray:
    """Frames area-downsampled by a whole factor to at most 128 pixels wide."""
    height, width = frames.shape[1:3]
    factor = analysis_factor((height, width))
    if factor == 1:
        return frames
    count = len(frames)
    blocks = frames.reshape(count, height // factor, factor, width // factor, factor, 3)
    return blocks.mean(axis=(2, 4)).astype(np.uint8)


def analysis_coverage(frames: np.ndarray, mask: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """``mask`` taken on each full frame, then area-averaged to the analysis size: each
    analysis pixel's share of masked frame pixels, in [0, 1].

    This is how the twin's side is measured (binary masks of a finer render, averaged
    down). Masking the averaged frame instead mixes a bright jaw and a dark desk in
    tone-mapped values before the colour test, so a webcam's edges moved and biased
    the fit (random webcam arm 203: elbow +1.19 / wrist flex -1.78 degrees, +0.53 /
    -0.89 with coverage)."""
    height, width = frames.shape[1:3]
    factor = analysis_factor((height, width))
    size = (width // factor, height // factor)
    return np.array(
        [
            cv2.resize(mask(frame).astype(np.float32), size, interpolation=cv2.INTER_AREA)
            for frame in frames
        ],
        dtype=np.float32,
    ).reshape(len(frames), size[1], size[0])


def fit_centroids(twin: TwinCamera, readings, observed, cube):
    """Joint offsets (radians, arm joints) that put the cube's projected centre where
    it was seen; also the centroid RMS before and after, in pixels. ``cube``: one
    position for every pose, or one per pose (a sweep over two marks)."""
    cubes = np.broadcast_to(np.asarray(cube, dtype=float), (len(readings), 2))

    def bias(offsets: np.ndarray) -> np.ndarray:
        out = []
        for joints, at in zip(readings, cubes):
            angles = joints - np.append(offsets, 0.0)
            rendered = centroid(cube_mask(twin.render(angles, at)))
            projected = twin.project_cube(angles, at)
            out.append(np.zeros(2) if rendered is None else rendered - projected)
        return np.array(out)

    def residuals(offsets: np.ndarray, shift: np.ndarray) -> np.ndarray:
        full = np.append(offsets, 0.0)
        predicted = np.array([twin.project_cube(j - full, at) for j, at in zip(readings, cubes)])
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


def levenberg_marquardt(
    residuals,
    x: np.ndarray,
    step: float = 0.003,
    iterations: int = 12,
    tolerance: float = 1e-5,
    central: bool = False,
):
    """Levenberg-Marquardt with finite differences of ``step`` (in ``x``'s units):
    coarse enough to move a rendered silhouette, which the library's tiny default
    steps do not. Stops once no value moves more than ``tolerance`` in a step.
    ``central``: differences taken both ways (twice the renders per step), for a cost
    with a kink at its valley floor, where a one-sided difference can point uphill."""
    r = residuals(x)
    cost, damping = r @ r, 1e-3
    eye = np.eye(len(x))
    for _ in range(iterations):
        if central:
            columns = [residuals(x + step * e) - residuals(x - step * e) for e in eye]
            jac = np.stack(columns, 1) / (2 * step)
        else:
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
        if np.abs(delta).max() < tolerance:
            break
    return x
