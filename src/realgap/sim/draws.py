"""Per-episode and per-step draws from a :class:`~realgap.sim.randomization.DomainRandomization`.

``sample_episode`` draws what stays fixed for an episode (masses, frictions, offsets,
servo gains, latency, speed, camera mount and intrinsics, tone, lighting, the desk, the
camera's optics and sensor) as a :class:`TwinBatch`; ``sample_step`` draws what changes
every control step (joint-reading noise, camera wobble). Both are pure: the same
config, generator state and count give the same arrays, and a width of zero gives
exactly the centre's value. Fields added after the first release draw from a jumped
copy of the stream, so earlier seeds keep their episodes.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from realgap.sim.randomization import DomainRandomization, Range
from realgap.sim.robot import JOINT_NAMES
from realgap.sim.twin import TwinParams

NOMINAL = TwinParams()
DESK_PATTERNS = 8
"""How many desk patterns the twin's renderer holds (kinds x contrasts)."""


@dataclass
class TwinBatch:
    """One twin per env for ``n`` envs (every array has leading dimension n), plus the
    episode's image augmentation (brightness, contrast, saturation, hue)."""

    cube_mass_scale: np.ndarray
    """Cube mass over the nominal twin's (a scale keeps the nominal arithmetic exact)."""
    cube_size_scale: np.ndarray
    """Cube edge over the nominal twin's."""
    cube_friction: np.ndarray
    cube_rgb: np.ndarray  # (n, 3)
    finger_friction: np.ndarray
    joint_offset: np.ndarray  # (n, 6) radians
    joint_noise_std: np.ndarray  # radians
    kp_scale: np.ndarray
    damping_scale: np.ndarray
    frictionloss_scale: np.ndarray
    torque_scale: np.ndarray
    latency_steps: np.ndarray  # int
    control_hz: np.ndarray
    action_fraction: np.ndarray
    """Fraction of the task's action scale this episode's steps may move."""
    camera_offset: np.ndarray  # (n, 3) metres, gripper frame
    camera_rotation: np.ndarray  # (n, 3) radians, rotation vector
    camera_fov_delta: np.ndarray  # degrees
    exposure_scale: np.ndarray
    """The camera's own exposure (the twin's, drawn per pixel as a camera does)."""
    exposure_jitter: np.ndarray
    """The randomization's gain on top: an augmentation of the policy image, like
    brightness, applied after the average."""
    gamma: np.ndarray
    black_level: np.ndarray
    light_scale: np.ndarray
    background_rgb: np.ndarray  # (n, 3)
    brightness: np.ndarray
    contrast: np.ndarray
    saturation: np.ndarray
    hue: np.ndarray
    base_size_scale: np.ndarray
    """Stack tasks: the lower object's size over the scene's."""
    base_rgb_shift: np.ndarray  # (n, 3) added to the lower object's colour
    placement_offset: np.ndarray  # (n, 2) metres, arm frame, added to placed positions
    desk_pattern: np.ndarray  # (n,) int: index into the desk bank, -1 flat
    shadows: np.ndarray  # (n,) bool
    blur_px: np.ndarray  # policy pixels of smear per radian of joint motion
    distortion_k1: np.ndarray
    vignetting: np.ndarray
    white_balance: np.ndarray  # (n, 3) per-channel gains
    sensor_noise: np.ndarray
    jpeg_quality: np.ndarray  # (n,) int, 0 off

    @property
    def cube_mass_kg(self) -> np.ndarray:
        return NOMINAL.cube.mass_kg * self.cube_mass_scale

    @property
    def cube_size_m(self) -> np.ndarray:
        return NOMINAL.cube.size_m * self.cube_size_scale

    def assign(self, ids: np.ndarray, other: TwinBatch) -> None:
        """Overwrite rows ``ids`` with ``other``'s rows."""
        for f in fields(self):
            getattr(self, f.name)[ids] = getattr(other, f.name)


def twin_batch(twin: TwinParams, n: int) -> TwinBatch:
    """``n`` copies of one twin, without augmentation."""
    return sample_episode(DomainRandomization.none(twin), np.random.default_rng(0), n)


@dataclass
class StepNoise:
    """Per-step draws: joint-reading noise (n, 6) rad, camera wobble (n, 3) m and (n, 3) rad."""

    joint_noise: np.ndarray
    camera_pos: np.ndarray
    camera_rot: np.ndarray


def _uniform(rng: np.random.Generator, bounds: Range, n: int) -> np.ndarray:
    low, high = bounds
    # Draw even for a degenerate range, so that widening one field never
    # shifts the random stream of the others.
    return low + (high - low) * rng.random(n)


def sample_episode(config: DomainRandomization, rng: np.random.Generator, n: int) -> TwinBatch:
    """Draw per-episode twins for ``n`` envs (pure in ``config`` and ``rng`` state)."""
    joints = len(JOINT_NAMES)
    c = config.centre
    sym = lambda width, *shape: width * (2 * rng.random(shape) - 1)  # noqa: E731
    low_lat, high_lat = config.latency_steps
    tile = lambda values: np.tile(np.asarray(values, dtype=float), (n, 1))  # noqa: E731
    # Draw order is the stream's order: new fields are drawn after the old ones.
    mass = (c.cube.mass_kg / NOMINAL.cube.mass_kg) * _uniform(rng, config.cube_mass_scale, n)
    size = (c.cube.size_m / NOMINAL.cube.size_m) * _uniform(rng, config.cube_size_scale, n)
    friction = c.cube.friction * _uniform(rng, config.cube_friction_scale, n)
    # Colours live in float32 in the model: jitter the float32 colour, as the renderer
    # always did, so a nominal twin renders bit for bit as before.
    colour = np.tile(np.asarray(c.cube.color_rgb, dtype=np.float32), (n, 1))
    rgb = np.clip(colour + sym(config.cube_rgb_jitter, n, 3), 0.0, 1.0)
    fingers = c.fingers.friction * _uniform(rng, config.finger_friction_scale, n)
    offset = c.joint_offsets_rad + np.deg2rad(sym(config.joint_offset_deg, n, joints))
    kp = c.servo.kp_scale * _uniform(rng, config.kp_scale, n)
    torque = c.servo.torque_limit_scale * _uniform(rng, config.torque_scale, n)
    extra = np.floor(_uniform(rng, (low_lat, high_lat + 1 - 1e-9), n)).astype(int)
    hz = c.control.rate_hz * _uniform(rng, config.control_hz_scale, n)
    fov = c.camera.fov_deg_delta + sym(config.camera_fov_deg, n)
    light = c.scene.light_scale * _uniform(rng, config.light_scale, n)
    exposure_jitter = _uniform(rng, config.exposure_scale, n)
    grey = _uniform(rng, config.background_grey, n)
    brightness = sym(config.brightness, n)
    contrast = 1 + sym(config.contrast, n)
    saturation = 1 + sym(config.saturation, n)
    hue = sym(config.hue, n)
    # Fields added after the first release draw from a jumped copy of the stream, which
    # leaves ``rng`` where the original fields left it: every earlier seed still gives
    # the same episodes (start poses and cube spots are drawn from ``rng`` next).
    later = np.random.Generator(rng.bit_generator.jumped())
    damping = c.servo.damping_scale * _uniform(later, config.damping_scale, n)
    frictionloss = c.servo.frictionloss_scale * _uniform(later, config.frictionloss_scale, n)
    gamma = c.camera.gamma * _uniform(later, config.gamma_scale, n)
    black = c.camera.black_level + _uniform(later, config.black_level, n)
    background = _background(c, config, later, n)
    base_size = _uniform(later, config.base_size_scale, n)
    base_shift = config.base_rgb_jitter * (2 * later.random((n, 3)) - 1)
    placement = tile(c.placement.offset_xy_m) + config.placement_offset_m * (
        2 * later.random((n, 2)) - 1
    )
    rate = _uniform(later, config.control_hz, n)
    fraction = _biased(later, config.action_fraction, config.action_fraction_bias, n)
    speed_drawn = later.random(n) < config.speed_p
    if config.control_hz != (0.0, 0.0):  # drawn rates replace the centre's
        hz = np.where(speed_drawn, hz / c.control.rate_hz * rate, hz)
    fraction = np.where(speed_drawn, fraction, 1.0)
    textured = later.random(n) < config.desk_texture_p
    pattern = np.where(textured, later.integers(0, DESK_PATTERNS, n), -1)
    # A room that casts shadows casts them in every episode; the draw is made either
    # way so that the draws after it do not move.
    shadows = (later.random(n) < config.shadow_p) | c.scene.shadows
    blur = _uniform(later, config.blur_px, n)
    k1 = c.camera.lens_k1 + _uniform(later, config.distortion_k1, n)
    vignetting = _uniform(later, config.vignetting, n)
    balance = 1 + config.white_balance * (2 * later.random((n, 3)) - 1)
    read_noise = _uniform(later, config.sensor_noise, n)
    compressed = later.random(n) < config.jpeg_p
    quality = np.where(compressed, np.round(_uniform(later, config.jpeg_quality, n)), 0)
    return TwinBatch(
        cube_mass_scale=mass,
        cube_size_scale=size,
        cube_friction=friction,
        cube_rgb=rgb,
        finger_friction=fingers,
        joint_offset=offset,
        joint_noise_std=np.full(
            n,
            np.hypot(
                np.deg2rad(c.joints.reading_noise_deg), np.deg2rad(config.joint_noise_deg / 2)
            ),
        ),
        kp_scale=kp,
        damping_scale=damping,
        frictionloss_scale=frictionloss,
        torque_scale=torque,
        latency_steps=c.servo.latency_steps + extra,
        control_hz=hz,
        action_fraction=fraction,
        camera_offset=tile(c.camera.offset_m),
        camera_rotation=np.deg2rad(tile(c.camera.rotation_deg)),
        camera_fov_delta=fov,
        exposure_scale=np.full(n, float(c.camera.exposure_scale)),
        exposure_jitter=exposure_jitter,
        gamma=gamma,
        black_level=black,
        light_scale=light,
        background_rgb=np.maximum(background, grey[:, None]),
        brightness=brightness,
        contrast=contrast,
        saturation=saturation,
        hue=hue,
        base_size_scale=base_size,
        base_rgb_shift=base_shift,
        placement_offset=placement,
        desk_pattern=pattern.astype(int),
        shadows=shadows,
        blur_px=blur,
        distortion_k1=k1,
        vignetting=vignetting,
        white_balance=balance,
        sensor_noise=read_noise,
        jpeg_quality=quality.astype(int),
    )


def _biased(rng: np.random.Generator, bounds: Range, bias: float, n: int) -> np.ndarray:
    """Draws on [low, high] with density proportional to ``x ** bias`` (inverse CDF)."""
    low, high = bounds
    u = rng.random(n)
    if bias == 0.0 or low == high:
        return low + (high - low) * u
    power = bias + 1.0
    return (low**power + u * (high**power - low**power)) ** (1.0 / power)


def _background(centre: TwinParams, config, rng, n: int) -> np.ndarray:
    """The centre's background colour, or, with a ``background_value`` range, drawn
    greys and browns (a dial: the reference's second model trained on such cloths)."""
    value = _uniform(rng, config.background_value, n)
    warmth = _uniform(rng, config.background_warmth, n)
    if config.background_value == (0.0, 0.0):
        return np.tile(np.asarray(centre.camera.background_rgb, dtype=float), (n, 1))
    tint = np.stack([1 + warmth, np.ones(n), 1 - warmth], axis=1)
    return np.clip(value[:, None] * tint, 0.0, 1.0)


def max_latency(config: DomainRandomization) -> int:
    """The most command latency any episode of ``config`` can draw."""
    return config.centre.servo.latency_steps + config.latency_steps[1]


def sample_step(batch: TwinBatch, config: DomainRandomization, rng) -> StepNoise:
    """Draw per-step noise for the envs of ``batch`` (reading noise from each env's twin)."""
    joints, n = len(JOINT_NAMES), len(batch.joint_noise_std)
    return StepNoise(
        joint_noise=batch.joint_noise_std[:, None] * rng.standard_normal((n, joints)),
        camera_pos=config.camera_pos_wobble_m * rng.standard_normal((n, 3)),
        camera_rot=np.deg2rad(config.camera_rot_wobble_deg) * rng.standard_normal((n, 3)),
    )
