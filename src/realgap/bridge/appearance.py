"""A fake arm's room and camera: the desk, the lights, the clutter and the webcam.

The twin draws a flat-coloured plane under one light and hands the policy a clean
render; a real SO-101 stands on wood grain or a cutting mat, beside a lamp and a coffee
mug, filmed by a USB webcam that adds noise, MJPEG blocks, lens distortion, vignetting
and motion blur. These four sections of a reality profile describe that, and only the
fake camera's own image chain reads them (:mod:`realgap.bridge.fake_camera`): nothing
copies them into a twin, so calibration and ``adapt`` meet images their twin cannot
draw, as on a real arm::

    [desk]    texture ("flat", "wood", "cloth", "mat", "paper" or an image file),
              rgb (base colour; default the twin's camera.background_rgb), contrast
              (0..1), scale_m (size of the pattern), seed
    [sensor]  resolution = [w, h], noise (read noise, 0..1 of full scale),
              shot_noise (at full scale), jpeg_quality (1..100, 0 off),
              distortion_k = [k1, k2], vignetting (0..1), exposure_ms (motion blur),
              white_balance_rgb (per-channel gains)
    [lights]  shadows (true/false), extra = [{pos_m = [x, y, z], intensity = i}, ...]
              (arm frame, metres: a desk lamp)
    [clutter] objects (how many distractors around, not inside, the work area), seed

A profile without them behaves exactly as before: the twin's flat desk, a 128x96
camera, no noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace

import numpy as np

from realgap.sim.dressing import Distractor, Lamp, SceneDressing
from realgap.sim.textures import TEXTURES, desk_texture
from realgap.sim.twin import TwinParams, check_value

DEFAULT_RESOLUTION = (128, 96)
"""The fake camera's frame (width, height) when a profile names no sensor."""
WORK_AREA_MARGIN_M = 0.06
"""Distractors stay this far outside the training square (and the bins beside it)."""


@dataclass(frozen=True)
class Desk:
    texture: str = "flat"
    """``flat``, ``wood``, ``cloth``, ``mat``, ``paper``, or a path to an image file."""
    rgb: tuple[float, float, float] | None = None
    """Base colour 0..1; None: the twin's ``camera.background_rgb``."""
    contrast: float = 0.3
    """How far the pattern swings around the base colour (0: flat)."""
    scale_m: float = 0.02
    """Size of the pattern: grain spacing, weave period, grid pitch, blotches."""
    seed: int = 0
    """Procedural textures are drawn from this seed, deterministically."""


@dataclass(frozen=True)
class Sensor:
    resolution: tuple[int, int] = DEFAULT_RESOLUTION
    """Frame (width, height); a USB webcam's 640x480 is the realistic case. The bridge
    centre-crops and downsamples it for the policy as it would a real camera's."""
    noise: float = 0.0
    """Read noise: standard deviation, 0..1 of full scale, in linear light."""
    shot_noise: float = 0.0
    """Shot noise: standard deviation at full scale (it grows with the square root of
    the signal)."""
    jpeg_quality: int = 0
    """The frame goes through MJPEG at this quality (1..100); 0: off."""
    distortion_k: tuple[float, float] = (0.0, 0.0)
    """Radial distortion (k1, k2): barrel below 0."""
    vignetting: float = 0.0
    """Corner darkening, 0..1."""
    exposure_ms: float = 0.0
    """Exposure time: the frame integrates the scene over it while the arm moves."""
    white_balance_rgb: tuple[float, float, float] = (1.0, 1.0, 1.0)
    """Per-channel gains of the camera's white balance."""


@dataclass(frozen=True)
class Lights:
    shadows: bool = False
    """The room's lights cast shadows (the arm's own, on the desk)."""
    extra: tuple[Lamp, ...] = ()
    """Further lights, e.g. a desk lamp: position (arm frame, m) and intensity."""


@dataclass(frozen=True)
class Clutter:
    objects: int = 0
    """Distractor objects placed around, not inside, the work area."""
    seed: int = 0


@dataclass(frozen=True)
class Appearance:
    """The fake camera's world beyond the twin: desk, sensor, lights, clutter."""

    desk: Desk = field(default_factory=Desk)
    sensor: Sensor = field(default_factory=Sensor)
    lights: Lights = field(default_factory=Lights)
    clutter: Clutter = field(default_factory=Clutter)

    @property
    def is_plain(self) -> bool:
        """Nothing beyond the twin: the fake camera behaves exactly as before."""
        return self == Appearance()

    @property
    def shape(self) -> tuple[int, int]:
        """The camera's frame as (height, width)."""
        width, height = self.sensor.resolution
        return height, width

    def to_dict(self) -> dict:
        out = {}
        for section in fields(self):
            values = getattr(self, section.name)
            out[section.name] = {f.name: _plain(getattr(values, f.name)) for f in fields(values)}
        return out

    def dressing(self, twin: TwinParams, task_has_target: bool = True) -> SceneDressing:
        """What the fake world's model adds to the twin's scene: the desk's texture,
        the lamps and shadows, the distractors."""
        desk = self.desk
        texture = None
        if desk.texture != "flat" or desk.rgb is not None:
            rgb = desk.rgb if desk.rgb is not None else twin.camera.background_rgb
            texture = desk_texture(desk.texture, rgb, desk.contrast, desk.scale_m, desk.seed)
        distractors = place_distractors(self.clutter.objects, self.clutter.seed)
        return SceneDressing(
            desk=texture,
            shadows=self.lights.shadows,
            lamps=self.lights.extra,
            distractors=distractors,
        )


def place_distractors(count: int, seed: int) -> tuple[Distractor, ...]:
    """``count`` everyday objects (boxes and cylinders a few centimetres across, in
    colours other than the cube's red and the jaws' yellow) on the desk within 45 cm of
    the base, outside the training square and its margin, behind or beside the arm."""
    rng = np.random.default_rng(seed)
    square_centre = np.array([0.20, 0.0])
    half = 0.10 + WORK_AREA_MARGIN_M
    out: list[Distractor] = []
    for _ in range(1000 * max(count, 1)):
        if len(out) == count:
            break
        radius, angle = rng.uniform(0.16, 0.45), rng.uniform(-np.pi, np.pi)
        xy = radius * np.array([np.cos(angle), np.sin(angle)])
        if np.all(np.abs(xy - square_centre) < half + 0.1 * (xy[0] > 0.3)):
            continue  # inside the work area (and the bins and stacks beside the cube)
        if any(np.linalg.norm(xy - np.asarray(d.xy_m)) < 0.08 for d in out):
            continue
        hue = rng.uniform(0.35, 0.95)  # green through blue to purple: neither red nor yellow
        rgb = _hsv_to_rgb(hue, rng.uniform(0.2, 0.8), rng.uniform(0.3, 0.95))
        shape = "box" if rng.random() < 0.5 else "cylinder"
        size = (rng.uniform(0.015, 0.04), rng.uniform(0.015, 0.04), rng.uniform(0.02, 0.06))
        out.append(Distractor(shape, size, tuple(xy), rgb, float(rng.uniform(0, np.pi))))
    return tuple(out)


def _hsv_to_rgb(hue: float, saturation: float, value: float) -> tuple[float, float, float]:
    k = (np.array([5.0, 3.0, 1.0]) + hue * 6) % 6
    rgb = value - value * saturation * np.clip(np.minimum(k, 4 - k), 0, 1)
    return tuple(float(v) for v in rgb)


# -- parsing -------------------------------------------------------------------------
SECTIONS = ("desk", "sensor", "lights", "clutter")
_LIMITS = {
    "contrast": (0.0, 1.0),
    "scale_m": (0.001, 1.0),
    "noise": (0.0, 1.0),
    "shot_noise": (0.0, 1.0),
    "jpeg_quality": (0, 100),
    "distortion_k": (-1.0, 1.0),
    "vignetting": (0.0, 1.0),
    "exposure_ms": (0.0, 200.0),
    "white_balance_rgb": (0.1, 10.0),
    "rgb": (0.0, 1.0),
    "objects": (0, 40),
    "seed": (0, 2**31 - 1),
    "pos_m": (-2.0, 2.0),
    "intensity": (0.0, 5.0),
    "resolution": (16, 4096),
}


def parse_appearance(data: dict, source: str, error: type[ValueError]) -> Appearance:
    """The four sections popped from a profile's ``data`` (missing ones at their
    defaults); unknown keys and bad values raise ``error`` naming ``source: section.key``."""
    parsed = {}
    for name in SECTIONS:
        values = data.pop(name, None)
        if values is None:
            continue
        if not isinstance(values, dict):
            raise error(f"{source}: {name}: expected a table of keys, got {values!r}")
        parsed[name] = _parse_section(name, values, f"{source}: {name}", error)
    return Appearance(**parsed)


def _parse_section(name: str, values: dict, where: str, error):
    default = getattr(Appearance(), name)
    known = [f.name for f in fields(default)]
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise error(f"{where}.{unknown[0]}: unknown key; known keys: {known}")
    updates = {}
    for key, value in values.items():
        at = f"{where}.{key}"
        if name == "desk" and key == "texture":
            if not isinstance(value, str) or not value:
                raise error(f"{at}: expected one of {list(TEXTURES)} or an image path")
            updates[key] = value
        elif name == "desk" and key == "rgb":
            updates[key] = _bounded(at, check_value(at, (0.0, 0.0, 0.0), value, error), error)
        elif name == "lights" and key == "extra":
            updates[key] = _lamps(at, value, error)
        elif name == "sensor" and key == "resolution":
            updates[key] = _resolution(at, value, error)
        else:
            updates[key] = _bounded(at, check_value(at, getattr(default, key), value, error), error)
    section = replace(default, **updates)
    if name == "desk" and section.texture not in TEXTURES:
        try:
            desk_texture(section.texture, (0, 0, 0), size=8)
        except ValueError as problem:
            raise error(f"{where}.texture: {problem}") from None
    return section


def _resolution(where: str, value, error) -> tuple[int, int]:
    if (
        not isinstance(value, list)
        or len(value) != 2
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in value)
    ):
        raise error(f"{where}: expected [width, height] in whole pixels, got {value!r}")
    return _bounded(where, (int(value[0]), int(value[1])), error)


def _lamps(where: str, value, error) -> tuple[Lamp, ...]:
    if not isinstance(value, list):
        raise error(f"{where}: expected a list of {{pos_m = [x, y, z], intensity = i}}")
    lamps = []
    for index, item in enumerate(value):
        at = f"{where}[{index}]"
        if not isinstance(item, dict) or set(item) != {"pos_m", "intensity"}:
            raise error(f"{at}: expected exactly pos_m = [x, y, z] and intensity")
        pos = _bounded(
            f"{at}.pos_m", check_value(f"{at}.pos_m", (0.0,) * 3, item["pos_m"], error), error
        )
        if pos[2] <= 0:
            raise error(f"{at}.pos_m: a lamp must be above the desk (z > 0), got {pos[2]}")
        intensity = _bounded(
            f"{at}.intensity", check_value(f"{at}.intensity", 0.0, item["intensity"], error), error
        )
        lamps.append(Lamp(tuple(pos), float(intensity)))
    return tuple(lamps)


def _bounded(where: str, value, error):
    key = where.rsplit(".", 1)[-1]
    low, high = _LIMITS.get(key, (-math.inf, math.inf))
    for item in value if isinstance(value, tuple) else (value,):
        if not low <= item <= high:
            raise error(f"{where}: {item!r} is outside [{low}, {high}]")
    return value


def _plain(value):
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Lamp):
        return {"pos_m": list(value.pos_m), "intensity": value.intensity}
    return value
