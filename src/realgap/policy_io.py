"""What a policy sees and what its action means: one code path for sim, fake and real.

This module sits below every other realgap package (it imports only numpy), so
the batched twin, the fake arm and the real arm cannot build observations or
decode actions in two different ways:

- :func:`policy_observation`: joint readings and targets (+ policy image) -> the
  observation dict every world returns.
- :func:`camera_to_policy` / :func:`postprocess`: any camera frame or twin render
  -> the uint8 policy image (centre crop, area downsample, exposure and tone
  response, colour jitter).
- :func:`decode_action`: a policy action -> the next joint targets, by the
  contract's ``action_mode``.
"""

from __future__ import annotations

import numpy as np

from realgap.errors import ConfigError

ACTION_MODES = ("delta", "absolute")
"""``delta``: actions in [-1, 1] move the joint targets by ``scale`` per step (RL
policies). ``absolute``: actions are joint targets (imitation policies), reached
at most ``scale`` per step."""


def policy_observation(readings, targets, image) -> dict:
    """The observation every world gives a policy, built in one place.

    ``readings`` and ``targets`` are joint angles as the arm reports them and
    the goals last commanded, radians (..., 6); ``image`` is the policy image
    uint8 (..., R, R, 3) or None.
    """
    state = np.concatenate([np.asarray(readings), np.asarray(targets)], axis=-1)
    obs = {"state": state.astype(np.float32)}
    if image is not None:
        obs["image"] = np.asarray(image, dtype=np.uint8)
    return obs


def decode_action(mode: str, action, target, scale, frame_offset=0.0) -> np.ndarray:
    """Next joint targets from a policy action.

    ``target`` is the current target and ``scale`` the largest move per step per
    joint. Absolute actions are positions in the readings' frame; ``frame_offset``
    is that frame minus the frame of ``target`` (a twin holds true servo targets and
    reads them with its zero offsets). NaN and inf pass through, so the caller's
    safety check sees them.
    """
    action, target = np.asarray(action, dtype=float), np.asarray(target, dtype=float)
    scale = np.asarray(scale, dtype=float)
    if mode == "delta":
        return target + np.clip(action, -1.0, 1.0) * scale
    if mode == "absolute":
        return target + np.clip(action - frame_offset - target, -scale, scale)
    raise ConfigError(f"unknown action mode {mode!r}; known: {list(ACTION_MODES)}")


def area_downsample(image: np.ndarray, size: int) -> np.ndarray:
    """Average ``image`` (H, W, C) float down to (size, size, C); H and W multiples of size."""
    height, width, channels = image.shape
    if height % size or width % size:
        raise ConfigError(f"cannot area-downsample {height}x{width} to {size}x{size}")
    return image.reshape(size, height // size, size, width // size, channels).mean(axis=(1, 3))


def tone(pixels: np.ndarray, exposure=1.0, gamma=1.0, black_level=0.0) -> np.ndarray:
    """A camera's response on linear values 0..1: exposure gain, then a power curve,
    then a black level (what pure black reads as). Identity at (1, 1, 0)."""
    pixels = np.clip(pixels * np.float32(exposure), 0.0, 1.0)
    if gamma != 1.0:
        pixels = pixels ** np.float32(gamma)
    if black_level:
        pixels = np.float32(black_level) + np.float32(1.0 - black_level) * pixels
    return pixels


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
    gamma: float = 1.0,
    black_level: float = 0.0,
) -> np.ndarray:
    """uint8 (H, W, 3) at any multiple of ``size`` -> uint8 (size, size, 3) policy image."""
    pixels = area_downsample(image.astype(np.float32) / 255.0, size)
    if gamma == 1.0 and not black_level:
        pixels = pixels * exposure  # clipped once, at the end (as before tone existed)
    else:
        pixels = tone(pixels, exposure, gamma, black_level)
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
        raise ConfigError(
            f"camera frame {height}x{width} is smaller than the policy's {size}x{size}"
        )
    top, left = (height - side) // 2, (width - side) // 2
    return postprocess(frame[top : top + side, left : left + side], size)
