"""Domain randomization: a distribution over :class:`~realgap.sim.twin.TwinParams`.

A ``DomainRandomization`` is a centre (any ``TwinParams``: the nominal twin by
default, or an arm's measured twin) and widths around it; the draws from it (per
episode and per step, pure and seeded) are :mod:`realgap.sim.draws`. A width of zero
gives exactly the centre's value, so tests can show that a config changes only the
fields it names.

Ranges are ``(low, high)`` pairs sampled uniformly; "scale" fields multiply the
centre's value, "+-" fields are added to it. The default widths follow the
reference visual-RL recipe.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np

from realgap.errors import ConfigError
from realgap.sim.calibration import Calibration
from realgap.sim.twin import TwinParams, TwinParamsError, read_toml
from realgap.speed import (
    DEFAULT_TRAINED_FRACTION,
    DEFAULT_TRAINED_HZ,
    DeploySpeed,
    TrainedSpeeds,
)

Range = tuple[float, float]


@dataclass(frozen=True)
class DomainRandomization:
    """A distribution over twins. ``DomainRandomization.none()`` is the nominal sim."""

    centre: TwinParams = field(default_factory=TwinParams)
    """The twin the ranges are centred on (an arm's measured twin, or the nominal)."""
    cube_mass_scale: Range = (0.5, 2.0)
    """Multiplies the centre's cube mass."""
    cube_size_scale: Range = (0.9, 1.1)
    """Multiplies the cube edge length (collision and visual)."""
    cube_friction_scale: Range = (0.5, 1.2)
    """Multiplies the centre's cube sliding friction."""
    cube_rgb_jitter: float = 0.15
    """Per-channel additive jitter of the cube colour."""
    finger_friction_scale: Range = (0.6, 1.4)
    """Multiplies the centre's jaw pad sliding friction."""
    joint_offset_deg: float = 2.0
    """Per-joint zero offset, uniform in +-value around the centre's, fixed per episode."""
    joint_noise_deg: float = 5.0
    """Spread of per-step joint-reading noise: Gaussian with std = spread / 2 (combined
    with the centre's own reading noise)."""
    kp_scale: Range = (0.6, 1.2)
    """Multiplies every servo's proportional gain."""
    damping_scale: Range = (1.0, 1.0)
    """Multiplies the joints' damping."""
    frictionloss_scale: Range = (1.0, 1.0)
    """Multiplies the joints' friction loss."""
    torque_scale: Range = (0.7, 1.1)
    """Multiplies every servo's torque cap."""
    latency_steps: tuple[int, int] = (0, 1)
    """Extra control steps of command latency on top of the centre's (inclusive range)."""
    control_hz_scale: Range = (0.9, 1.1)
    """Multiplies the control rate (jitter); realised as an integer number of physics
    substeps."""
    control_hz: Range = DEFAULT_TRAINED_HZ
    """Control rates episodes are drawn from, Hz (uniform; the jitter multiplies on
    top); (0, 0): the centre's rate. The default spans the reference's training (10 Hz)
    and deployment (15 Hz), so a policy meets the rate it will run at."""
    action_fraction: Range = DEFAULT_TRAINED_FRACTION
    """Fractions of the task's action scale episodes are drawn from (uniform): a step
    moves each joint by at most this much of training's. The reference deploys at 0.15;
    an episode at fraction f runs ``episode_steps / f`` steps, so it allows training's
    joint travel (:func:`realgap.speed.episode_steps_at`). (1, 1): training's scale."""
    speed_p: float = 0.25
    """Fraction of episodes whose rate and action fraction are drawn from the ranges
    above; the rest run at the centre's rate and the full scale (training's speed)."""
    action_fraction_bias: float = 0.0
    """Shape of the fraction's draw: episodes are drawn with density proportional to
    ``fraction ** bias`` (0: uniform per episode; 1: uniform per *step*, since a slow
    episode runs 1/fraction times as many steps and would otherwise fill the data)."""
    camera_pos_wobble_m: float = 0.002
    """Per-step camera position jitter around the centre's mount (std, metres)."""
    camera_rot_wobble_deg: float = 1.0
    """Per-step camera rotation jitter (std, degrees)."""
    camera_fov_deg: float = 3.0
    """Field-of-view offset, uniform in +-value around the centre's, per episode."""
    light_scale: Range = (0.7, 1.3)
    """Multiplies the scene light's intensity."""
    exposure_scale: Range = (0.8, 1.25)
    """A gain on top of the centre's exposure: an augmentation of the policy image, on
    the average like brightness (the centre's own exposure goes on every pixel)."""
    gamma_scale: Range = (1.0, 1.0)
    """Multiplies the centre's tone-response exponent."""
    black_level: Range = (0.0, 0.0)
    """Added to the centre's black level."""
    background_grey: Range = (0.0, 0.0)
    """Background grey floor: each channel is at least this; (0, 0) keeps the centre's
    colour (the black green-screen by default), e.g. (0, 0.12) for dark greys."""
    background_value: Range = (0.0, 0.9)
    """Desk or cloth brightness 0..1, black to white; (0, 0) keeps the centre's colour.
    With a range, each episode's background is ``value * (1 + warmth, 1, 1 - warmth)``:
    greys and browns. Chosen by ``sweeps/appearance_widths.toml`` together with
    ``desk_texture_p = 0.5``: a light-wood desk went from 0% to 96% and a white webcam
    desk from 2% to 98% (two Reach seeds, 54 trials each), at a cost on the black cloth
    (docs/results/2026-12-05-appearance.md). Alone it was not enough: (0, 0.8) without
    desk patterns took reference_pitfalls from 58% to 21% (one seed)."""
    background_warmth: Range = (0.0, 0.6)
    """How brown the drawn background is (0: grey; 0.5: a brown cloth)."""
    brightness: float = 0.2
    """Colour jitter: additive brightness, uniform in +-value (fraction of full scale)."""
    contrast: float = 0.2
    """Colour jitter: contrast factor in 1 +- value."""
    saturation: float = 0.2
    """Colour jitter: saturation factor in 1 +- value."""
    hue: float = 0.03
    """Colour jitter: hue rotation in +-value turns."""
    base_size_scale: Range = (0.85, 1.15)
    """Stack tasks: multiplies the lower object's size (the reference: 25-35 mm cubes)."""
    base_rgb_jitter: float = 0.15
    """Stack tasks: per-channel additive jitter of the lower object's colour."""
    desk_texture_p: float = 0.5
    """Fraction of episodes whose desk is one of the twin's patterns (wood grain, a
    weave, a cutting mat's grid, paper: :data:`realgap.sim.batch_render.DESK_BANK`)
    tinted by the drawn background colour; the rest are flat."""
    shadow_p: float = 0.0
    """Fraction of episodes whose light casts shadows (the arm's own, on the desk)."""
    blur_px: Range = (0.0, 0.0)
    """Motion blur while the arm moves: the length of the smear, in policy pixels per
    radian a joint moved in the step (a camera's exposure over a fast move)."""
    distortion_k1: Range = (0.0, 0.0)
    """Radial lens distortion k1 (barrel below 0), per episode, added to the centre's
    lens (``camera.lens_k1``: a measured arm's)."""
    vignetting: Range = (0.0, 0.0)
    """Corner darkening 0..1, per episode."""
    white_balance: float = 0.0
    """Per-channel gains uniform in 1 +- value, per episode (a webcam's white balance)."""
    sensor_noise: Range = (0.0, 0.0)
    """Read noise of the render (standard deviation, 0..1 of full scale), per episode;
    the policy image averages it over the pixels it downsamples, as a camera's does."""
    jpeg_p: float = 0.0
    """Fraction of episodes whose renders go through JPEG (a webcam's MJPEG)."""
    jpeg_quality: Range = (30.0, 90.0)
    """JPEG quality of those episodes."""
    placement_offset_m: float = 0.0
    """Where placed objects land, uniform in +-value per axis around the centre's
    placement offset, per episode. 0 by default: the reset square already spreads the
    objects; an adapted arm's twin sets it from the measured offset's uncertainty."""

    def __post_init__(self) -> None:
        if not isinstance(self.centre, TwinParams):
            raise ConfigError(f"randomization.centre: need TwinParams, got {self.centre!r}")
        for f in fields(self):
            if f.name == "centre":
                continue
            value = getattr(self, f.name)
            if isinstance(value, tuple):
                if len(value) != 2 or not all(np.isfinite(value)) or value[0] > value[1]:
                    raise ConfigError(f"randomization.{f.name}: need [low, high], got {value}")
                if f.name.endswith("scale") and value[0] <= 0:
                    raise ConfigError(f"randomization.{f.name}: scales must be positive")
                if f.name == "latency_steps" and value[0] + self.centre.servo.latency_steps < 0:
                    raise ConfigError("randomization.latency_steps: latency cannot go below 0")
                if f.name == "control_hz" and value != (0.0, 0.0) and value[0] <= 0:
                    raise ConfigError(
                        "randomization.control_hz: rates must be positive (or [0, 0])"
                    )
                if f.name == "action_fraction" and not 0 < value[0] <= value[1] <= 1:
                    raise ConfigError(
                        f"randomization.action_fraction: need 0 < low <= high <= 1, got {value}"
                    )
            elif not np.isfinite(value) or value < 0:
                raise ConfigError(f"randomization.{f.name}: must be >= 0, got {value}")
            elif f.name.endswith("_p") and value > 1:
                raise ConfigError(f"randomization.{f.name}: a fraction in [0, 1], got {value}")
        if not 1 <= self.jpeg_quality[0] <= self.jpeg_quality[1] <= 100:
            raise ConfigError(f"randomization.jpeg_quality: need 1..100, got {self.jpeg_quality}")
        for name in ("blur_px", "vignetting", "sensor_noise"):
            if getattr(self, name)[0] < 0:
                raise ConfigError(f"randomization.{name}: must be >= 0")
        if self.vignetting[1] > 1 or self.sensor_noise[1] > 1:
            raise ConfigError("randomization.vignetting and sensor_noise are fractions (<= 1)")
        if not (self.distortion_k1[0] >= -1 and self.distortion_k1[1] <= 1):
            raise ConfigError(f"randomization.distortion_k1: need -1..1, got {self.distortion_k1}")

    @classmethod
    def none(cls, centre: TwinParams | None = None) -> DomainRandomization:
        """No randomization: exactly ``centre`` (the nominal twin by default)."""
        zeros = {f.name: 0.0 for f in fields(cls) if f.type in ("float",)}
        ones = {f.name: (1.0, 1.0) for f in fields(cls) if f.name.endswith("_scale")}
        return cls(
            centre=centre or TwinParams(),
            latency_steps=(0, 0),
            control_hz=(0.0, 0.0),
            action_fraction=(1.0, 1.0),
            black_level=(0.0, 0.0),
            background_grey=(0.0, 0.0),
            background_value=(0.0, 0.0),
            background_warmth=(0.0, 0.0),
            blur_px=(0.0, 0.0),
            distortion_k1=(0.0, 0.0),
            vignetting=(0.0, 0.0),
            sensor_noise=(0.0, 0.0),
            **ones,
            **zeros,
        )

    def centred_on(self, twin: TwinParams) -> DomainRandomization:
        """The same widths around another twin (a measured arm)."""
        return replace(self, centre=twin)

    def at_speed(self, speed: DeploySpeed) -> DomainRandomization:
        """The same distribution at one speed (a deployment's rate and action scale)."""
        hz, fraction = float(speed.control_hz), float(speed.action_fraction)
        return replace(self, control_hz=(hz, hz), action_fraction=(fraction, fraction), speed_p=1.0)

    @property
    def trained_speeds(self) -> TrainedSpeeds:
        """The speeds episodes of this distribution run at (for a policy's contract)."""
        centre = self.centre.control.rate_hz
        rates, fractions = self.control_hz, self.action_fraction
        if rates == (0.0, 0.0) or self.speed_p == 0:  # the centre's rate
            rates = (centre, centre)
        if self.speed_p == 0:
            fractions = (1.0, 1.0)
        elif self.speed_p < 1:  # some episodes at training's speed too
            rates = (min(rates[0], centre), max(rates[1], centre))
            fractions = (fractions[0], 1.0)
        jitter = self.control_hz_scale
        rates = (rates[0] * jitter[0], rates[1] * jitter[1])
        return TrainedSpeeds.of_ranges(rates, fractions)

    def around(self, calibration: Calibration, sigmas: float = 2.0) -> DomainRandomization:
        """Centred on a measured arm's twin, with the widths of what was measured taken
        from its uncertainties (``sigmas`` standard deviations each way) and these
        widths for everything else. A value measured exactly (sigma 0, like a latency)
        is not randomized at all."""
        twin, sigma = calibration.twin(), calibration.uncertainty
        widths: dict = {}

        def relative(key: str, value: float, field_name: str) -> None:
            if key in sigma:
                spread = sigmas * float(np.max(sigma[key])) / max(abs(value), 1e-9)
                widths[field_name] = (max(1.0 - spread, 0.05), 1.0 + spread)

        def additive(key: str, field_name: str, as_range: bool = False) -> None:
            if key in sigma:
                spread = sigmas * float(np.max(sigma[key]))
                widths[field_name] = (-spread, spread) if as_range else spread

        relative("cube.mass_kg", twin.cube.mass_kg, "cube_mass_scale")
        relative("cube.size_m", twin.cube.size_m, "cube_size_scale")
        relative("cube.friction", twin.cube.friction, "cube_friction_scale")
        relative("fingers.friction", twin.fingers.friction, "finger_friction_scale")
        relative("servo.kp_scale", twin.servo.kp_scale, "kp_scale")
        relative("servo.damping_scale", twin.servo.damping_scale, "damping_scale")
        relative("servo.frictionloss_scale", twin.servo.frictionloss_scale, "frictionloss_scale")
        relative("servo.torque_limit_scale", twin.servo.torque_limit_scale, "torque_scale")
        relative("camera.exposure_scale", twin.camera.exposure_scale, "exposure_scale")
        relative("camera.gamma", twin.camera.gamma, "gamma_scale")
        relative("scene.light_scale", twin.scene.light_scale, "light_scale")
        additive("joints.zero_offset_deg", "joint_offset_deg")
        additive("camera.fov_deg_delta", "camera_fov_deg")
        additive("camera.lens_k1", "distortion_k1", as_range=True)
        additive("placement.offset_xy_m", "placement_offset_m")
        # The mount's uncertainty becomes the per-step wobble around the measured mount.
        if "camera.offset_m" in sigma:
            widths["camera_pos_wobble_m"] = float(np.max(sigma["camera.offset_m"]))
        if "camera.rotation_deg" in sigma:
            widths["camera_rot_wobble_deg"] = float(np.max(sigma["camera.rotation_deg"]))
        if "camera.black_level" in sigma:
            spread = sigmas * float(np.max(sigma["camera.black_level"]))
            widths["black_level"] = (-min(spread, twin.camera.black_level), spread)
        if "servo.latency_steps" in sigma:
            extra = int(np.ceil(sigmas * float(np.max(sigma["servo.latency_steps"]))))
            widths["latency_steps"] = (-min(extra, twin.servo.latency_steps), extra)
        if "camera.background_rgb" in calibration.values:
            # The arm's desk was measured: keep its colour instead of drawing others.
            widths.update(background_grey=(0.0, 0.0), background_value=(0.0, 0.0))
            widths["background_warmth"] = (0.0, 0.0)
        if "camera.background_texture" in calibration.values:
            widths["desk_texture_p"] = 0.0  # and its pattern, seen by the camera
        return replace(self, centre=twin, **widths)

    @classmethod
    def from_toml(
        cls, path: str | Path, base: DomainRandomization | None = None
    ) -> DomainRandomization:
        """Load from a TOML file over ``base`` (the defaults); unknown keys and bad values
        name the file and key."""
        data = read_toml(path, TwinParamsError)
        data = data.get("randomization", data)
        return cls.from_dict(data, source=str(path), base=base)

    @classmethod
    def from_dict(
        cls, data: dict, source: str = "config", base: DomainRandomization | None = None
    ) -> DomainRandomization:
        """Widths from a dict over ``base`` (the defaults; a task's own widths, for
        example); an optional ``centre`` table is a nested TwinParams."""
        if not isinstance(data, dict):
            raise TwinParamsError(f"{source}: expected a [randomization] table")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise TwinParamsError(f"{source}: unknown randomization keys {unknown}")
        values = {}
        for key, value in data.items():
            if key == "centre":
                value = TwinParams.from_dict(value, source=f"{source}: centre")
            elif isinstance(value, list):
                if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
                    raise TwinParamsError(f"{source}: {key}: expected [low, high] numbers")
                value = tuple(value)
            elif isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TwinParamsError(f"{source}: {key}: expected a number or [low, high]")
            values[key] = value
        try:
            return replace(base or cls(), **values)
        except (TypeError, ValueError) as error:
            raise TwinParamsError(f"{source}: {error}") from None
