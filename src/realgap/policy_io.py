"""What a policy sees and what its action means: one code path for sim, fake and real.

This module sits below every other realgap package (it imports only numpy and
OpenCV), so
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

import cv2
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


def clip_unit(pixels: np.ndarray) -> np.ndarray:
    """``np.clip(pixels, 0, 1)`` in place on a fresh float array: the same values, three
    times faster on a 640x480 frame (numpy 2's clip took 2.2 ms there, these 0.8 ms)."""
    np.maximum(pixels, np.float32(0.0), out=pixels)
    return np.minimum(pixels, np.float32(1.0), out=pixels)


def tone(pixels: np.ndarray, exposure=1.0, gamma=1.0, black_level=0.0) -> np.ndarray:
    """A camera's response on linear values 0..1: exposure gain, then a power curve,
    then a black level (what pure black reads as). Identity at (1, 1, 0)."""
    pixels = clip_unit(pixels * np.float32(exposure))
    if gamma != 1.0:
        pixels = pixels ** np.float32(gamma)
    if black_level:
        pixels = np.float32(black_level) + np.float32(1.0 - black_level) * pixels
    return pixels


def undo_tone(
    value: np.ndarray, exposure: float, gamma: float, black_level: float, **_
) -> np.ndarray:
    """The linear value that :func:`tone` maps to ``value``."""
    linear = np.clip((np.asarray(value) - black_level) / (1 - black_level), 0, 1)
    return linear ** (1 / gamma) / exposure


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
    gain: float = 1.0,
) -> np.ndarray:
    """uint8 (H, W, 3) at any multiple of ``size`` -> uint8 (size, size, 3) policy image."""
    batch = postprocess_batch(
        image[None],
        size,
        *(np.array([v], dtype=float) for v in (exposure, brightness, contrast, saturation)),
        *(np.array([v], dtype=float) for v in (hue, gamma, black_level)),
        gain=np.array([gain], dtype=float),
    )
    return batch[0]


def postprocess_batch(
    images: np.ndarray,
    size: int,
    exposure: np.ndarray,
    brightness: np.ndarray,
    contrast: np.ndarray,
    saturation: np.ndarray,
    hue: np.ndarray,
    gamma: np.ndarray,
    black_level: np.ndarray,
    linear: bool = False,
    gain: np.ndarray | None = None,
) -> np.ndarray:
    """:func:`postprocess` for a batch: uint8 (n, H, W, 3) (or, with ``linear``, float32
    0..1) -> uint8 (n, size, size, 3), each image with its own exposure and tone (the
    camera's, on every pixel), then its own ``gain`` and colour jitter (augmentations, on
    the average; arrays of n). One vectorized pass instead of n small ones: the batched
    twin renders 64 envs a step, and per-image numpy calls cost a quarter of its time."""
    n = len(images)
    pixels = images if linear else images.astype(np.float32) / np.float32(255.0)
    height, width = pixels.shape[1:3]
    if height % size or width % size:
        raise ConfigError(f"cannot area-downsample {height}x{width} to {size}x{size}")
    column = lambda values: np.asarray(values, dtype=np.float64).reshape(n, 1, 1, 1)  # noqa: E731
    exposure = np.broadcast_to(np.asarray(exposure, dtype=float), (n,))
    gamma = np.broadcast_to(np.asarray(gamma, dtype=float), (n,))
    black_level = np.broadcast_to(np.asarray(black_level, dtype=float), (n,))
    # A camera exposes, clips and tones every sensor pixel before anything averages
    # them. Only a gain of at most 1 on a plain tone commutes with the average (applied
    # after it: cheaper, and what the twin always drew); any other image is toned at the
    # render's own pixels first. Toned after the average, a bright desk saturating
    # around a dark cube drew the cube's edges lighter than the fake arm's camera did
    # (a random arm at exposure 1.38: 3 grey levels apart on average, 77 at the edges).
    gain_after = (gamma == 1.0) & (black_level == 0) & (exposure <= 1.0)
    if not gain_after.all():
        first = np.nonzero(~gain_after)[0]
        pixels = pixels.copy() if pixels is images else pixels
        pixels[first] = tone_batch(pixels[first], exposure[first], gamma[first], black_level[first])
    # Area-downsample the batch as one tall image: each box of (height / size) rows lies
    # inside one image, so this is every image's own box average, eleven times faster
    # than numpy's mean over two axes (64 envs at 64x64: 4.7 ms -> 0.4 ms).
    stacked = np.ascontiguousarray(pixels).reshape(n * height, width, 3)
    pixels = cv2.resize(stacked, (size, n * size), interpolation=cv2.INTER_AREA)
    pixels = pixels.reshape(n, size, size, 3)
    pixels = np.where(column(gain_after), pixels * column(exposure), pixels)
    if gain is not None:
        # The randomization's exposure jitter is an augmentation, like brightness: on the
        # average. Drawn on every pixel (clipping a light desk more often), it cost the
        # demo's Reach policies 10 points in the sim and 22 on reference_pitfalls (seeds
        # 0-3, 108 trials each world).
        pixels = pixels * column(gain)
    hue = np.asarray(hue, dtype=float)
    if np.any(hue != 0):
        rotations = np.stack([_hue_rotation(h).T for h in hue]).astype(np.float32)
        rotated = np.einsum("nhwc,ncd->nhwd", pixels, rotations)
        pixels = np.where(column(hue != 0), rotated, pixels)
    saturation = np.asarray(saturation, dtype=float)
    if np.any(saturation != 1.0):
        grey = pixels.mean(axis=-1, keepdims=True)
        pixels = np.where(
            column(saturation != 1.0), grey + column(saturation) * (pixels - grey), pixels
        )
    contrast = np.asarray(contrast, dtype=float)
    if np.any(contrast != 1.0):
        mean = pixels.mean(axis=(1, 2, 3), keepdims=True)
        pixels = np.where(
            column(contrast != 1.0), mean + column(contrast) * (pixels - mean), pixels
        )
    return (clip_unit(pixels + column(brightness)) * 255.0 + 0.5).astype(np.uint8)


def tone_batch(pixels: np.ndarray, exposure, gamma, black_level) -> np.ndarray:
    """:func:`tone` with one exposure, gamma and black level per image of a batch."""
    column = lambda values: np.asarray(values, dtype=np.float32).reshape(-1, 1, 1, 1)  # noqa: E731
    pixels = clip_unit(pixels * column(exposure))
    if np.any(np.asarray(gamma) != 1.0):  # the power is most of the cost at full size
        pixels = pixels ** column(gamma)
    black = column(black_level)
    return black + (np.float32(1.0) - black) * pixels


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
