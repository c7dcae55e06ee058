"""The camera's lens in the hand-eye fit: radial (barrel or pincushion) distortion.

A USB webcam's lens bends straight lines: a point at normalized radius r is seen at
r (1 + k1 r^2) (OpenCV's first radial term, as the fake camera's ``[sensor]
distortion_k`` draws it). The twin's camera is a pinhole; fitted without this term,
a webcam's k1 = -0.04 to -0.07 pulled the random arms' lift, elbow and wrist-flex
offsets 1-2 degrees off at a stated 0.3-0.4 (up to 8.5 sigma:
docs/results/2026-12-05-calibration.md). The fit renders the twin's view a little
wider than the frame and remaps it through the lens, so k1 is fitted with the mount.
"""

from __future__ import annotations

import cv2
import numpy as np

from realgap.sim.camera_effects import distortion_maps, required_margin, widened_fovy

K1_COVERED = -0.06
"""The strongest barrel whose whole frame the wider render covers; stronger lenses lose
their corners' outermost pixels (counted as empty), which the fit tolerates. Each
step wider costs the render resolution: the margin at -0.06 is 1.13, at -0.1 1.5."""
K1_LIMIT = 0.12
"""The fit's k1 is held within +-this: beyond it OpenCV's inverse of the radial term folds
over in the frame's corners (and no webcam meant for a wrist is that strong)."""
K1_UNITS = 100.0
"""The fit moves k1 in hundredths, so one finite-difference step moves an edge by a
fraction of an analysis pixel, like the other values' degrees and millimetres."""


class Lens:
    """Distorts the twin's renders (``shape``, rendered ``margin`` times wider in the
    tangent than the frame) to the frame a lens with ``k1`` would see."""

    def __init__(self, shape: tuple[int, int], nominal_fovy_deg: float):
        self.shape = shape
        self.margin = required_margin(shape, nominal_fovy_deg, K1_COVERED, 0.0) * 1.02
        self._maps: dict[tuple[float, float], tuple[np.ndarray, np.ndarray]] = {}

    def render_fovy(self, frame_fovy_deg: float) -> float:
        """The render's vertical field of view for a frame of ``frame_fovy_deg``."""
        return widened_fovy(frame_fovy_deg, self.margin)

    def apply(self, image: np.ndarray, frame_fovy_deg: float, k1: float) -> np.ndarray:
        """``image`` (a render at :meth:`render_fovy`, float32) as the lens sees it."""
        k1 = float(np.clip(k1, -K1_LIMIT, K1_LIMIT))
        key = (round(float(frame_fovy_deg), 9), round(k1, 9))
        maps = self._maps.get(key)
        if maps is None:
            if len(self._maps) > 8:  # a fit visits a handful of (fov, k1) pairs at once
                self._maps.clear()
            # Float maps, not fixed-point ones: a finite-difference step moves an edge by
            # a fraction of a pixel, below fixed point's 1/32 at the coarse scale.
            maps = distortion_maps(self.shape, frame_fovy_deg, k1, 0.0, margin=self.margin)
            self._maps[key] = maps
        return cv2.remap(image, *maps, cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
