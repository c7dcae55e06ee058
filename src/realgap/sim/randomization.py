"""Domain randomization: a typed, seeded config applied by pure functions.

``sample_episode`` draws everything that stays fixed for an episode (masses,
frictions, offsets, servo gains, latency, camera intrinsics, lighting);
``sample_step`` draws what changes every control step (joint-reading noise,
camera wobble). Both are pure: the same config, generator state and count give
the same arrays, and a range of width zero gives exactly the nominal value, so
tests can show that a config changes only the fields it names.

Ranges are ``(low, high)`` pairs sampled uniformly; "scale" fields multiply the
nominal value. The defaults follow the reference visual-RL recipe.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, fields, replace
from pathlib import Path

import numpy as np

from realgap.sim.robot import JOINT_NAMES

Range = tuple[float, float]


@dataclass(frozen=True)
class DomainRandomization:
    """Randomization widths. ``DomainRandomization.none()`` is the nominal sim."""

    cube_mass_scale: Range = (0.5, 2.0)
    """Multiplies the scene's cube mass."""
    cube_size_scale: Range = (0.9, 1.1)
    """Multiplies the cube edge length (collision and visual)."""
    cube_friction: Range = (0.5, 1.2)
    """Cube sliding friction (absolute)."""
    cube_rgb_jitter: float = 0.15
    """Per-channel additive jitter of the cube colour."""
    finger_friction: Range = (0.6, 1.4)
    """Jaw pad sliding friction (absolute)."""
    joint_offset_deg: float = 2.0
    """Per-joint zero offset, uniform in +-value, fixed per episode (miscalibration)."""
    joint_noise_deg: float = 5.0
    """Spread of per-step joint-reading noise: Gaussian with std = spread / 2."""
    kp_scale: Range = (0.6, 1.2)
    """Multiplies every servo's proportional gain."""
    torque_scale: Range = (0.7, 1.1)
    """Multiplies every servo's torque cap."""
    latency_steps: tuple[int, int] = (0, 1)
    """Control steps between a command and the servo receiving it (inclusive range)."""
    control_hz: Range = (9.0, 11.0)
    """Control frequency; realised as an integer number of physics substeps."""
    camera_pos_wobble_m: float = 0.002
    """Per-step camera position jitter (std, metres)."""
    camera_rot_wobble_deg: float = 1.0
    """Per-step camera rotation jitter (std, degrees)."""
    camera_fov_deg: float = 3.0
    """Field-of-view offset, uniform in +-value, per episode."""
    light_scale: Range = (0.7, 1.3)
    """Multiplies the scene light's intensity."""
    exposure_scale: Range = (0.8, 1.25)
    """Multiplies rendered pixel values (camera exposure/gain)."""
    background_grey: Range = (0.0, 0.0)
    """Floor grey level; (0, 0) keeps the black green-screen, e.g. (0, 0.12) for dark greys."""
    brightness: float = 0.2
    """Colour jitter: additive brightness, uniform in +-value (fraction of full scale)."""
    contrast: float = 0.2
    """Colour jitter: contrast factor in 1 +- value."""
    saturation: float = 0.2
    """Colour jitter: saturation factor in 1 +- value."""
    hue: float = 0.03
    """Colour jitter: hue rotation in +-value turns."""

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                if len(value) != 2 or value[0] > value[1]:
                    raise ValueError(f"randomization.{f.name}: need [low, high], got {value}")
                if f.name.endswith("scale") and value[0] <= 0:
                    raise ValueError(f"randomization.{f.name}: scales must be positive")
            elif value < 0:
                raise ValueError(f"randomization.{f.name}: must be >= 0, got {value}")
        if self.control_hz[0] <= 0:
            raise ValueError("randomization.control_hz: must be positive")

    @classmethod
    def none(cls, control_hz: float = 10.0) -> DomainRandomization:
        """No randomization: every range collapsed to its nominal value."""
        zeros = {f.name: 0.0 for f in fields(cls) if f.type in ("float",)}
        return cls(
            cube_mass_scale=(1.0, 1.0),
            cube_size_scale=(1.0, 1.0),
            cube_friction=(1.0, 1.0),
            finger_friction=(1.0, 1.0),
            kp_scale=(1.0, 1.0),
            torque_scale=(1.0, 1.0),
            latency_steps=(0, 0),
            control_hz=(control_hz, control_hz),
            light_scale=(1.0, 1.0),
            exposure_scale=(1.0, 1.0),
            background_grey=(0.0, 0.0),
            **zeros,
        )

    @classmethod
    def from_toml(cls, path: str | Path) -> DomainRandomization:
        """Load from a TOML file; unknown keys and bad values name the key."""
        data = tomllib.loads(Path(path).read_text())
        data = data.get("randomization", data)
        return cls.from_dict(data, source=str(path))

    @classmethod
    def from_dict(cls, data: dict, source: str = "config") -> DomainRandomization:
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise ValueError(f"{source}: unknown randomization keys {unknown}")
        values = {}
        for key, value in data.items():
            if isinstance(value, list):
                value = tuple(value)
            values[key] = value
        return replace(cls(), **values)


@dataclass
class EpisodeParams:
    """Per-episode draws for ``n`` envs; every array has leading dimension n."""

    cube_mass_scale: np.ndarray
    cube_size_scale: np.ndarray
    cube_friction: np.ndarray
    cube_rgb_delta: np.ndarray  # (n, 3)
    finger_friction: np.ndarray
    joint_offset: np.ndarray  # (n, 6) radians
    kp_scale: np.ndarray
    torque_scale: np.ndarray
    latency_steps: np.ndarray  # int
    control_hz: np.ndarray
    camera_fov_delta: np.ndarray  # degrees
    light_scale: np.ndarray
    exposure_scale: np.ndarray
    background_grey: np.ndarray
    brightness: np.ndarray
    contrast: np.ndarray
    saturation: np.ndarray
    hue: np.ndarray


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


def sample_episode(config: DomainRandomization, rng: np.random.Generator, n: int) -> EpisodeParams:
    """Draw per-episode parameters for ``n`` envs (pure in ``config`` and ``rng`` state)."""
    joints = len(JOINT_NAMES)
    sym = lambda width, *shape: width * (2 * rng.random(shape) - 1)  # noqa: E731
    low_lat, high_lat = config.latency_steps
    return EpisodeParams(
        cube_mass_scale=_uniform(rng, config.cube_mass_scale, n),
        cube_size_scale=_uniform(rng, config.cube_size_scale, n),
        cube_friction=_uniform(rng, config.cube_friction, n),
        cube_rgb_delta=sym(config.cube_rgb_jitter, n, 3),
        finger_friction=_uniform(rng, config.finger_friction, n),
        joint_offset=np.deg2rad(sym(config.joint_offset_deg, n, joints)),
        kp_scale=_uniform(rng, config.kp_scale, n),
        torque_scale=_uniform(rng, config.torque_scale, n),
        latency_steps=np.floor(_uniform(rng, (low_lat, high_lat + 1 - 1e-9), n)).astype(int),
        control_hz=_uniform(rng, config.control_hz, n),
        camera_fov_delta=sym(config.camera_fov_deg, n),
        light_scale=_uniform(rng, config.light_scale, n),
        exposure_scale=_uniform(rng, config.exposure_scale, n),
        background_grey=_uniform(rng, config.background_grey, n),
        brightness=sym(config.brightness, n),
        contrast=1 + sym(config.contrast, n),
        saturation=1 + sym(config.saturation, n),
        hue=sym(config.hue, n),
    )


def sample_step(config: DomainRandomization, rng: np.random.Generator, n: int) -> StepNoise:
    """Draw per-step noise for ``n`` envs."""
    joints = len(JOINT_NAMES)
    return StepNoise(
        joint_noise=np.deg2rad(config.joint_noise_deg / 2) * rng.standard_normal((n, joints)),
        camera_pos=config.camera_pos_wobble_m * rng.standard_normal((n, 3)),
        camera_rot=np.deg2rad(config.camera_rot_wobble_deg) * rng.standard_normal((n, 3)),
    )
