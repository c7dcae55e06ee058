"""Random arms: plausible SO-101s nobody tuned to, for judging calibration and adapt.

The shipped test arms are few and hand-made, and a calibration judged on them can be
tuned to them without meaning to. :func:`sample_arm` draws a reality profile over every
``TwinParams`` field and every hardware behaviour, uniformly inside :data:`RANGES`
(the reasons and sources beside each), seeded: the same seed gives the same arm.
``realgap profile sample --seed N --out arm.toml`` writes one.

By default a random arm has no placement error (the operator measures from the
rotation axis) and the twin's flat desk and camera; ``placement`` and ``appearance``
add those.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tomli_w

from realgap.bridge.profile import HARDWARE_KEYS, RealityProfile

RANGES: dict[str, tuple] = {
    # The cube: the reference's sim cube weighed 3 g; a printed 2.5 cm PLA cube weighs
    # 8-16 g at 20-60% infill, a solid one about 24 g.
    "cube.mass_kg": (0.004, 0.03),
    "cube.size_m": (0.022, 0.03),
    "cube.friction": (0.3, 1.2),  # on the desk, whose own 0.8 is the floor (scene.DESK_FRICTION)
    "fingers.friction": (0.5, 1.5),
    # Encoder zero errors after LeRobot's hand calibration: a few degrees per joint.
    "joints.zero_offset_deg": (-3.0, 3.0),
    # STS3215: 4096 ticks a turn (0.088 degrees); noise of a tick or so.
    "joints.reading_noise_deg": (0.0, 0.4),
    # Real position servos are softer under load than the twin's stiff model.
    "servo.kp_scale": (0.4, 1.2),
    "servo.damping_scale": (0.7, 2.0),
    "servo.frictionloss_scale": (0.5, 2.0),
    # STS3215 stall torque 2.9-3.4 N*m at 12 V (the twin: 3.35); lower on a sagging
    # supply or a hot servo.
    "servo.torque_limit_scale": (0.5, 1.1),
    "servo.latency_steps": (0, 2),  # whole commands at 15 Hz over USB serial
    # A wrist camera re-mounted by hand: millimetres and degrees off, a lens a few
    # degrees wider or narrower than the twin's 75.
    "camera.offset_m": (-0.003, 0.003),
    "camera.rotation_deg": (-3.0, 3.0),
    "camera.fov_deg_delta": (-4.0, 4.0),
    "camera.exposure_scale": (0.7, 1.5),
    "camera.gamma": (0.8, 1.25),
    "camera.black_level": (0.0, 0.05),
    "scene.light_scale": (0.6, 1.4),
    "placement.offset_xy_m": (-0.04, 0.04),  # only with placement=True
}
DESK_VALUE = (0.0, 0.9)
"""Desk or cloth brightness, black to white."""
DESK_WARMTH = (0.0, 0.4)
"""Greys to wood browns: light wood is about (0.5, 0.38, 0.24), warmth 0.3-0.4, its blue
about 0.6 of its green; warmer is an orange paint, not a desk."""
CUBE_RED = ((0.6, 0.95), (0.05, 0.2), (0.05, 0.2))
"""The cube stays red: the tasks, the cube mask and the policy are built around it."""


def sample_arm(
    seed: int, placement: bool = False, appearance: bool = False, name: str | None = None
) -> RealityProfile:
    """A random plausible arm (see the module docstring)."""
    rng = np.random.default_rng(seed)

    def draw(key: str, shape=None):
        low, high = RANGES[key]
        if isinstance(low, int) and isinstance(high, int):
            return int(rng.integers(low, high + 1))
        value = rng.uniform(low, high, shape)
        return [round(float(v), 5) for v in value] if shape else round(float(value), 5)

    value, warmth = rng.uniform(*DESK_VALUE), rng.uniform(*DESK_WARMTH)
    background = np.clip(value * np.array([1 + warmth, 1.0, 1 - warmth]), 0, 1)
    offsets = [*draw("joints.zero_offset_deg", 5), 0.0]
    sections: dict = {
        "cube": {
            "mass_kg": draw("cube.mass_kg"),
            "size_m": draw("cube.size_m"),
            "friction": draw("cube.friction"),
            "color_rgb": [round(float(rng.uniform(*bounds)), 3) for bounds in CUBE_RED],
        },
        "fingers": {"friction": draw("fingers.friction")},
        "joints": {
            "zero_offset_deg": offsets,
            "reading_noise_deg": draw("joints.reading_noise_deg"),
        },
        "servo": {
            key: draw(f"servo.{key}")
            for key in (
                "kp_scale",
                "damping_scale",
                "frictionloss_scale",
                "torque_limit_scale",
                "latency_steps",
            )
        },
        "camera": {
            "offset_m": draw("camera.offset_m", 3),
            "rotation_deg": draw("camera.rotation_deg", 3),
            "fov_deg_delta": draw("camera.fov_deg_delta"),
            "exposure_scale": draw("camera.exposure_scale"),
            "gamma": draw("camera.gamma"),
            "black_level": draw("camera.black_level"),
            "background_rgb": [round(float(v), 3) for v in background],
        },
        "scene": {"light_scale": draw("scene.light_scale")},
    }
    # Hardware behaviours a twin does not have, each a coin toss.
    sections["servo"]["power_up_goal_zero"] = bool(rng.random() < 0.5)
    sections["camera"]["auto_exposure"] = bool(rng.random() < 0.5)
    if placement:
        sections["placement"] = {"offset_xy_m": draw("placement.offset_xy_m", 2)}
    if appearance:
        sections.update(_appearance(rng))
    sections["name"] = name or f"random_arm_{seed}"
    return RealityProfile.from_dict(sections, name=sections["name"], source=f"random arm {seed}")


def _appearance(rng: np.random.Generator) -> dict:
    kinds = ("flat", "wood", "cloth", "mat", "paper")
    return {
        "desk": {
            "texture": str(rng.choice(kinds)),
            "contrast": round(float(rng.uniform(0.1, 0.5)), 3),
            "scale_m": round(float(rng.uniform(0.005, 0.03)), 4),
            "seed": int(rng.integers(0, 1000)),
        },
        "sensor": {
            "resolution": [640, 480],
            "noise": round(float(rng.uniform(0.0, 0.015)), 4),
            "shot_noise": round(float(rng.uniform(0.0, 0.03)), 4),
            "jpeg_quality": int(rng.integers(50, 96)),
            "distortion_k": [round(float(rng.uniform(-0.08, 0.0)), 4), 0.0],
            "vignetting": round(float(rng.uniform(0.0, 0.3)), 3),
            "exposure_ms": round(float(rng.uniform(0.0, 25.0)), 1),
        },
        "lights": {"shadows": bool(rng.random() < 0.5)},
        "clutter": {"objects": int(rng.integers(0, 6)), "seed": int(rng.integers(0, 1000))},
    }


def profile_toml(profile: RealityProfile) -> str:
    """A profile as TOML that :func:`realgap.bridge.profile.load_profile` reads back."""
    sections: dict = {"name": profile.name}
    twin = profile.twin.to_dict()
    nominal = RealityProfile().twin.to_dict()
    for section, values in twin.items():
        changed = {k: v for k, v in values.items() if v != nominal[section][k] and v != ""}
        if changed:
            sections[section] = changed
    hardware = profile.to_dict()["hardware"]
    defaults = RealityProfile().to_dict()["hardware"]
    for (section, key), attribute in HARDWARE_KEYS.items():
        if hardware[attribute] != defaults[attribute]:
            sections.setdefault(section, {})[key] = hardware[attribute]
    if not profile.appearance.is_plain:
        for section, values in profile.appearance.to_dict().items():
            sections[section] = {k: v for k, v in values.items() if v is not None}
    return tomli_w.dumps(sections)


def write_arm(profile: RealityProfile, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "# A random SO-101 (realgap profile sample): plausible, tuned to nothing.\n"
        + profile_toml(profile)
    )
    return path
