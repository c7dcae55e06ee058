"""What a real camera does to a frame that a renderer does not: lens distortion and
vignetting, motion blur, sensor noise, white balance and MJPEG compression.

Pure functions on uint8 or float32 frames, built on OpenCV. The fake camera runs them
on its own full-resolution frames (its profile's ``[sensor]``); the twin's
randomization runs cheap versions on its renders (``DomainRandomization`` widths), so a
policy has met what a webcam does before it meets a webcam.

Conventions: frames are (H, W, 3); values in 0..1 when float; the distortion model is
Brown's radial one on normalized image coordinates (focal length from the vertical
field of view): a point at undistorted radius r appears at ``r (1 + k1 r^2 + k2 r^4)``.
"""

from __future__ import annotations

import cv2
import numpy as np


def intrinsics(shape: tuple[int, int], fovy_deg: float) -> np.ndarray:
    """The 3x3 pinhole matrix of a (height, width) frame with vertical field of view."""
    height, width = shape
    focal = (height / 2) / np.tan(np.deg2rad(fovy_deg) / 2)
    return np.array([[focal, 0, (width - 1) / 2], [0, focal, (height - 1) / 2], [0, 0, 1]])


def distort_points(points: np.ndarray, shape, fovy_deg: float, k1: float, k2: float):
    """Where undistorted pixel positions (N, 2) as (x, y) appear in the distorted frame."""
    matrix = intrinsics(shape, fovy_deg)
    focal, centre = matrix[0, 0], matrix[:2, 2]
    normal = (np.asarray(points, dtype=float) - centre) / focal
    r2 = np.sum(normal**2, axis=1, keepdims=True)
    return centre + focal * normal * (1 + k1 * r2 + k2 * r2**2)


def distortion_maps(
    shape, fovy_deg: float, k1: float, k2: float, margin: float = 1.0, source_scale: float = 1.0
):
    """``cv2.remap`` maps that draw a distorted (height, width) frame from an undistorted
    render whose field of view is ``margin`` times wider (in the tangent: its focal
    length is the frame's over ``margin``), for barrel (k1 < 0) lenses that see beyond
    the pinhole's frame. The render is ``source_scale`` times the frame's size (the
    remap then also resamples it). Returns (map_x, map_y)."""
    height, width = shape
    matrix = intrinsics(shape, fovy_deg)
    grid = np.stack(np.meshgrid(np.arange(width), np.arange(height)), axis=-1)
    grid = grid.reshape(-1, 1, 2).astype(np.float64)
    coefficients = np.array([k1, k2, 0.0, 0.0])
    # For each distorted pixel, the undistorted position it shows (OpenCV iterates).
    undistorted = cv2.undistortPoints(grid, matrix, coefficients, P=matrix).reshape(-1, 2)
    centre = matrix[:2, 2]
    maps = (centre + (undistorted - centre) / margin).reshape(height, width, 2)
    # Pixel centres: pixel i of the frame covers [i, i + 1), so it is (i + 0.5) s - 0.5
    # in a render s times its size.
    maps = ((maps + 0.5) * source_scale - 0.5).astype(np.float32)
    return maps[..., 0], maps[..., 1]


def required_margin(shape, fovy_deg: float, k1: float, k2: float) -> float:
    """How much larger than the frame an undistorted render must be for every distorted
    pixel to find its source (1 for pincushion or no distortion)."""
    map_x, map_y = distortion_maps(shape, fovy_deg, k1, k2)
    height, width = shape
    over_x = np.max(np.abs(map_x - (width - 1) / 2)) / ((width - 1) / 2)
    over_y = np.max(np.abs(map_y - (height - 1) / 2)) / ((height - 1) / 2)
    return float(max(1.0, over_x, over_y))


def widened_fovy(fovy_deg: float, margin: float) -> float:
    """The vertical field of view of a render ``margin`` times wider (in the tangent)
    than a frame of ``fovy_deg``: the source a barrel lens's remap needs."""
    return float(np.rad2deg(2 * np.arctan(np.tan(np.deg2rad(fovy_deg) / 2) * margin)))


def vignetting_gain(shape, strength: float) -> np.ndarray:
    """Per-pixel gain (H, W) float32: 1 at the centre, ``1 - strength`` at the corners,
    falling with the square of the distance (a cos^4 law's first term)."""
    height, width = shape
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    r2 = ((x - (width - 1) / 2) ** 2 + (y - (height - 1) / 2) ** 2) / (
        ((width - 1) / 2) ** 2 + ((height - 1) / 2) ** 2
    )
    return (1.0 - np.float32(strength) * r2).astype(np.float32)


class NoiseBank:
    """Standard-normal noise for frames of one shape, drawn once and read at a random
    offset per frame: a camera's noise statistics at the cost of a slice (drawing 0.9
    million normals per 640x480 frame took 3-10 ms)."""

    def __init__(self, shape, seed: int | tuple[int, ...] = 0, pad: int = 64):
        rng = np.random.default_rng(seed)
        height, width = shape[:2]
        channels = shape[2] if len(shape) > 2 else 1
        self.shape, self.pad, self.rng = (height, width), pad, rng
        self.noise = rng.standard_normal((height + pad, width + pad, channels), np.float32)

    def draw(self) -> np.ndarray:
        top, left = self.rng.integers(0, self.pad, 2)
        return self.noise[top : top + self.shape[0], left : left + self.shape[1]]


def add_sensor_noise(linear: np.ndarray, read: float, shot: float, noise: np.ndarray):
    """Linear 0..1 float32 frame plus read noise (standard deviation ``read``) and shot
    noise (standard deviation ``shot * sqrt(value)``: photon counting), from a
    standard-normal ``noise`` of the frame's shape. In place; returns the frame."""
    if not read and not shot:
        return linear
    if shot:
        # OpenCV's fused arithmetic: half the time of the numpy expression at 640x480.
        variance = cv2.addWeighted(linear, shot**2, linear, 0.0, read**2)
        # A negative value has no photons (numpy: cv2.max's scalar is one channel's).
        spread = cv2.sqrt(np.maximum(variance, np.float32(read**2), out=variance))
        cv2.add(linear, cv2.multiply(noise, spread), dst=linear)
    else:
        cv2.scaleAdd(noise, read, linear, dst=linear)
    return linear


def jpeg_roundtrip(frame: np.ndarray, quality: int) -> np.ndarray:
    """A uint8 RGB frame through JPEG at ``quality`` (1..100) and back, as a webcam's
    MJPEG stream delivers it (4:2:0 chroma subsampling, 8x8 blocks); 0: unchanged."""
    if not quality:
        return frame
    bgr = cv2.cvtColor(frame, cv2.COLOR_RGB2BGR)
    ok, encoded = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise RuntimeError("JPEG encoding failed")
    return cv2.cvtColor(cv2.imdecode(encoded, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


def motion_blur(frames: list[np.ndarray]) -> np.ndarray:
    """The average of renders across an exposure (uint8 in, float32 0..1 out): what a
    sensor integrates while the arm moves."""
    total = frames[0].astype(np.float32)
    for frame in frames[1:]:
        total += frame
    return total * np.float32(1.0 / (255.0 * len(frames)))
