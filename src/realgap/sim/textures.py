"""Desk textures: what a real desk looks like under a wrist camera.

A real SO-101 stands on wood grain, a cloth's weave, a cutting mat's grid or printer
paper, not on the twin's flat black plane. :func:`desk_texture` draws each of those
procedurally and deterministically from a seed (or loads a photo), as an RGB image of
``extent_m`` metres of desk; the fake camera paints it on its floor, and the twin's
randomization paints grey versions of the same patterns tinted by the drawn colour.

Patterns are built from smoothed noise (SciPy's wrapped Gaussian filter), so they
have the few-millimetre to few-centimetre structure a 16x16 policy image can see:
``scale_m`` is the size of the pattern (grain spacing, weave period, grid pitch, fibre
blotches) and ``contrast`` how far it swings around the base colour (0: flat).
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
from scipy.ndimage import gaussian_filter

from realgap.errors import ConfigError

TEXTURES = ("flat", "wood", "cloth", "mat", "paper")
"""The procedural desk patterns; a path to an image file is the sixth kind."""
DEFAULT_EXTENT_M = 0.5
"""How much desk one texture image covers (it repeats beyond)."""


def _smooth_noise(rng: np.random.Generator, size: int, blur_px: float) -> np.ndarray:
    """Zero-mean, unit-spread noise smoothed over ``blur_px`` pixels, (size, size)."""
    noise = rng.standard_normal((size, size)).astype(np.float32)
    if blur_px > 0.5:
        # Wrapped at the edges, so the texture tiles without seams.
        noise = gaussian_filter(noise, blur_px, mode="wrap")
    spread = float(noise.std())
    return noise / spread if spread > 0 else noise


def pattern(kind: str, scale_m: float, size: int, extent_m: float, seed: int) -> np.ndarray:
    """A zero-mean pattern in about [-1, 1], (size, size) float32: the texture's shape
    without its colour."""
    if kind not in TEXTURES:
        raise ConfigError(f"desk texture {kind!r} is not one of {list(TEXTURES)} or a file")
    if not scale_m > 0:
        raise ConfigError(f"desk scale_m must be positive, got {scale_m}")
    rng = np.random.default_rng(seed)
    px = size / extent_m  # pixels per metre
    period = max(scale_m * px, 2.0)
    y, x = np.mgrid[0:size, 0:size].astype(np.float32)
    if kind == "flat":
        return np.zeros((size, size), np.float32)
    if kind == "wood":
        # Grain: stripes along x whose phase wanders with low-frequency noise, plus pores.
        wander = _smooth_noise(rng, size, period * 2.0) * 0.8
        grain = np.sin(2 * np.pi * (y / period + wander))
        pores = _smooth_noise(rng, size, 0.8) * 0.25
        return np.clip(0.75 * grain + pores, -1, 1)
    if kind == "cloth":
        # A weave: crossing threads at the period, irregular thickness, a little fuzz.
        warp = np.sin(2 * np.pi * x / period) * (1 + 0.3 * _smooth_noise(rng, size, period))
        weft = np.sin(2 * np.pi * y / period)
        fuzz = _smooth_noise(rng, size, 0.7) * 0.3
        return np.clip(0.6 * warp * weft + fuzz, -1, 1)
    if kind == "mat":
        # A cutting mat: thin light lines every pitch, bolder every fifth, on a speckle.
        def lines(coordinate, pitch, width):
            distance = np.abs((coordinate + pitch / 2) % pitch - pitch / 2)
            return (distance < width).astype(np.float32)

        width = max(period * 0.06, 0.6)
        grid = np.maximum(lines(x, period, width), lines(y, period, width))
        bold = np.maximum(lines(x, 5 * period, width * 1.8), lines(y, 5 * period, width * 1.8))
        speckle = _smooth_noise(rng, size, 0.6) * 0.15
        return np.clip(np.maximum(grid, bold) * 1.6 - 0.4 + speckle, -1, 1)
    # paper: low-frequency blotches and fibres, mostly flat
    blotches = _smooth_noise(rng, size, period) * 0.5
    fibres = _smooth_noise(rng, size, 0.5) * 0.2
    return np.clip(blotches + fibres, -1, 1)


def desk_texture(
    texture: str,
    rgb,
    contrast: float = 0.3,
    scale_m: float = 0.02,
    seed: int = 0,
    size: int = 512,
    extent_m: float = DEFAULT_EXTENT_M,
) -> np.ndarray:
    """An RGB uint8 (size, size, 3) image of ``extent_m`` metres of desk: a procedural
    pattern (:data:`TEXTURES`) around the base colour ``rgb`` (0..1), or the image file
    ``texture`` names, resized (its colours as they are; ``rgb`` and ``contrast`` are
    the pattern's, not the photo's)."""
    if not 0.0 <= contrast <= 1.0:
        raise ConfigError(f"desk contrast must be in [0, 1], got {contrast}")
    if texture not in TEXTURES:
        return _image_texture(Path(texture), size)
    base = np.clip(np.asarray(rgb, dtype=np.float32), 0.0, 1.0)
    shape = pattern(texture, scale_m, size, extent_m, seed)
    # Darker and lighter by the same factor: a black cloth's weave stays near black.
    image = base[None, None, :] * (1.0 + contrast * shape[:, :, None])
    return (np.clip(image, 0.0, 1.0) * 255 + 0.5).astype(np.uint8)


def load_desk_image(path: str | Path) -> np.ndarray:
    """An RGB uint8 desk image as it is (a calibration's texture)."""
    path = Path(path)
    image = cv2.imread(str(path), cv2.IMREAD_COLOR) if path.is_file() else None
    if image is None:
        raise ConfigError(f"desk image {path}: missing or not an image OpenCV can read")
    return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)


def _image_texture(path: Path, size: int) -> np.ndarray:
    if not path.is_file():
        raise ConfigError(
            f"desk texture {str(path)!r} is neither one of {list(TEXTURES)} nor an image file"
        )
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise ConfigError(f"desk texture {path}: not an image OpenCV can read")
    image = cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
    return cv2.resize(image, (size, size), interpolation=cv2.INTER_AREA)
