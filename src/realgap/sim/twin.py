"""``TwinParams``: one description of everything that can differ between twin and arm.

A calibration (what was measured on an arm), a domain randomization (a
distribution centred on some twin) and a reality profile (the hidden truth of a
fake arm) all speak this one type, so a value measured on an arm can centre a
randomization, be compared with a profile, or build the arm's twin, without a
translation table in between.

In TOML (``realgap train --twin FILE``, profiles, calibrations) every section and
key is optional and defaults to the nominal twin::

    [cube]    mass_kg, size_m, friction, color_rgb
    [fingers] friction
    [joints]  zero_offset_deg (6 values, joint order), reading_noise_deg
    [servo]   kp_scale, damping_scale, frictionloss_scale, torque_limit_scale,
              latency_steps
    [camera]  offset_m (3), rotation_deg (3), fov_deg_delta, exposure_scale,
              gamma, black_level, background_rgb, background_texture (an image path),
              lens_k1
    [scene]   light_scale, shadows
    [control] rate_hz
    [placement] offset_xy_m (2)

Unknown sections or keys, wrong types and out-of-range values raise
:class:`TwinParamsError` naming ``source: section.key``.
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import numpy as np

from realgap.errors import ConfigError
from realgap.sim.scene import SceneConfig

_SCENE = SceneConfig()


class TwinParamsError(ConfigError):
    """A twin-parameter file or table has an unknown key or a bad value (named)."""


@dataclass(frozen=True)
class CubeParams:
    mass_kg: float = _SCENE.cube_mass_kg
    """Cube mass (the twin's nominal is a 12 g printed cube; weigh yours)."""
    size_m: float = _SCENE.cube_size_m
    """Edge length."""
    friction: float = _SCENE.cube_friction
    """Sliding friction on the desk (and on Stack's lower object): MuJoCo takes the larger
    of two geoms' values, so anything up to the desk's own 0.8 slides as 0.8. The grip is
    the pads' (``fingers.friction``), which take precedence over the cube's."""
    color_rgb: tuple[float, float, float] = tuple(_SCENE.cube_rgba[:3])
    """Cube colour, 0..1 per channel."""


@dataclass(frozen=True)
class FingerParams:
    friction: float = 1.0
    """Jaw pad sliding friction: the grip's, whatever the cube's (the pads' geoms take
    precedence in MuJoCo's contact)."""


@dataclass(frozen=True)
class JointParams:
    zero_offset_deg: tuple[float, ...] = (0.0,) * 6
    """Encoder zero error per joint (reading = true angle + offset), joint order."""
    reading_noise_deg: float = 0.0
    """Standard deviation of position-reading noise."""


@dataclass(frozen=True)
class ServoParams:
    kp_scale: float = 1.0
    """Multiplies the twin's servo stiffness (real servos under load are softer)."""
    damping_scale: float = 1.0
    """Multiplies the joints' damping."""
    frictionloss_scale: float = 1.0
    """Multiplies the joints' friction loss."""
    torque_limit_scale: float = 1.0
    """Multiplies the servo torque caps."""
    latency_steps: int = 0
    """Commands reach the servo this many commands late."""


@dataclass(frozen=True)
class CameraParams:
    offset_m: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Wrist-camera position error in the gripper frame."""
    rotation_deg: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Wrist-camera orientation error (rotation vector, degrees, camera frame)."""
    fov_deg_delta: float = 0.0
    """Vertical field-of-view error."""
    exposure_scale: float = 1.0
    """Multiplies linear pixel values (exposure and gain relative to the twin)."""
    gamma: float = 1.0
    """Tone response: exposed values are raised to this power (1: linear)."""
    black_level: float = 0.0
    """What pure black reads as (0..1 of full scale): a real sensor never gives 0."""
    background_rgb: tuple[float, float, float] = tuple(_SCENE.background_rgb)
    """Colour of the cloth or desk under the work area."""
    background_texture: str = ""
    """An image of the desk (a calibration builds it from what the camera saw, with
    its colours): the twin paints its floor with it instead of the flat colour. Empty:
    none. A fake arm's own desk is its profile's ``[desk]``, which no twin reads."""
    lens_k1: float = 0.0
    """The lens's radial distortion (OpenCV's k1 on the frame's normalized coordinates;
    barrel below 0), which the hand-eye fit measures: the twin's renders go through it.
    0: a pinhole, as the twin always drew. A fake arm's own lens is its profile's
    ``[sensor] distortion_k``, which no twin reads."""


@dataclass(frozen=True)
class SceneParams:
    light_scale: float = 1.0
    """Multiplies the scene light's intensity."""
    shadows: bool = False
    """The room's light casts the arm's shadow on the desk in every episode (a user's
    ``rig.toml`` says so; images alone did not tell). A fake arm's own room is its
    profile's ``[lights]``, which no twin reads."""


@dataclass(frozen=True)
class ControlParams:
    rate_hz: float = 10.0
    """Control rate the twin runs at (training: 10 Hz)."""


@dataclass(frozen=True)
class PlacementParams:
    offset_xy_m: tuple[float, float] = (0.0, 0.0)
    """Where placed objects land relative to where they were meant to go, arm frame
    (x forward, y left): an operator measuring from the base's back edge instead of
    the rotation axis puts every object 3.9 cm short, ``(-0.039, 0)``."""


@dataclass(frozen=True)
class TwinParams:
    """The physical and visual world of one arm; ``TwinParams()`` is the nominal twin."""

    cube: CubeParams = field(default_factory=CubeParams)
    fingers: FingerParams = field(default_factory=FingerParams)
    joints: JointParams = field(default_factory=JointParams)
    servo: ServoParams = field(default_factory=ServoParams)
    camera: CameraParams = field(default_factory=CameraParams)
    scene: SceneParams = field(default_factory=SceneParams)
    control: ControlParams = field(default_factory=ControlParams)
    placement: PlacementParams = field(default_factory=PlacementParams)

    @property
    def joint_offsets_rad(self) -> np.ndarray:
        return np.deg2rad(np.asarray(self.joints.zero_offset_deg, dtype=float))

    def to_dict(self) -> dict:
        """Nested plain dict (TOML/JSON ready)."""
        return {name: _plain(section) for name, section in asdict(self).items()}

    def differences(self, other: TwinParams) -> dict[str, tuple]:
        """``section.key -> (self, other)`` for every value that differs."""
        mine, theirs = flatten(self.to_dict()), flatten(other.to_dict())
        return {k: (v, theirs[k]) for k, v in mine.items() if not _close(v, theirs[k])}

    def updated(self, values: dict, source: str = "twin") -> TwinParams:
        """A copy with the (partial, nested) ``values`` validated and applied."""
        return parse_sections(self, values, source)

    @classmethod
    def from_dict(cls, data: dict, source: str = "twin") -> TwinParams:
        return cls().updated(data, source)

    @classmethod
    def from_toml(cls, path: str | Path) -> TwinParams:
        return cls.from_dict(read_toml(path, TwinParamsError), source=str(path))


SECTIONS = tuple(f.name for f in fields(TwinParams))

# Allowed ranges: wide enough for any plausible arm, narrow enough to catch unit slips.
RANGES = {
    "mass_kg": (1e-4, 2.0),
    "size_m": (0.005, 0.1),
    "friction": (0.01, 5.0),
    "color_rgb": (0.0, 1.0),
    "zero_offset_deg": (-45.0, 45.0),
    "reading_noise_deg": (0.0, 20.0),
    "kp_scale": (0.01, 10.0),
    "damping_scale": (0.01, 100.0),
    "frictionloss_scale": (0.0, 100.0),
    "torque_limit_scale": (0.01, 10.0),
    "latency_steps": (0, 10),
    "exposure_scale": (0.05, 20.0),
    "gamma": (0.2, 5.0),
    "black_level": (0.0, 0.5),
    "offset_m": (-0.05, 0.05),
    "rotation_deg": (-45.0, 45.0),
    "fov_deg_delta": (-40.0, 40.0),
    "lens_k1": (-0.5, 0.5),
    "background_rgb": (0.0, 1.0),
    "light_scale": (0.01, 20.0),
    "rate_hz": (1.0, 100.0),
    "offset_xy_m": (-0.2, 0.2),
}


def read_toml(path: str | Path, error: type[ValueError]) -> dict:
    """Parse a TOML file; a missing file, a folder or bad TOML raise ``error`` naming it."""
    path = Path(path)
    if path.is_dir():
        raise error(f"{path}: is a folder, not a TOML file")
    if not path.is_file():
        raise error(f"{path}: no such file")
    try:
        return tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as problem:
        raise error(f"{path}: not valid TOML ({problem})") from None


def read_json_object(path: str | Path, error: type[ValueError], what: str) -> dict:
    """Parse a JSON file holding one object; a missing file, a folder, bad JSON or
    another kind of value raise ``error`` naming the file and ``what`` it should be."""
    path = Path(path)
    if path.is_dir():
        raise error(f"{path}: is a folder, not a {what}")
    if not path.is_file():
        raise error(f"{path}: no such {what}")
    try:
        data = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as problem:
        raise error(f"{path}: not a {what} ({problem})") from None
    if not isinstance(data, dict):
        raise error(f"{path}: not a {what} (expected a JSON object)")
    return data


def parse_sections(base, data: dict, source: str, error: type[ValueError] = TwinParamsError):
    """``base`` (a dataclass of section dataclasses) updated from a nested dict."""
    if not isinstance(data, dict):
        raise error(f"{source}: expected a table of sections, got {data!r}")
    known = {f.name for f in fields(base)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise error(f"{source}: unknown section(s) {unknown}; known: {sorted(known)}")
    updates = {
        name: parse_section(getattr(base, name), values, f"{source}: {name}", error)
        for name, values in data.items()
    }
    return replace(base, **updates)


def parse_section(default, values, where: str, error: type[ValueError] = TwinParamsError):
    """One section dataclass updated from ``values``, every key checked."""
    if not isinstance(values, dict):
        raise error(f"{where}: expected a table of keys, got {values!r}")
    known = {f.name for f in fields(default)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise error(f"{where}.{unknown[0]}: unknown key; known keys: {sorted(known)}")
    checked = {
        key: check_value(f"{where}.{key}", getattr(default, key), value, error)
        for key, value in values.items()
    }
    return replace(default, **checked)


def check_value(where: str, default, value, error: type[ValueError] = TwinParamsError):
    """``value`` converted to the type of ``default`` and checked against ``RANGES``."""
    key = where.rsplit(".", 1)[-1]
    if isinstance(value, (np.ndarray, np.generic)):  # measured values arrive as numpy
        value = value.tolist()
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise error(f"{where}: expected true or false, got {value!r}")
        return value
    if isinstance(default, str):
        if not isinstance(value, str):
            raise error(f"{where}: expected a text value, got {value!r}")
        return value
    if isinstance(default, tuple):
        if not isinstance(value, (list, tuple)) or len(value) != len(default):
            raise error(f"{where}: expected a list of {len(default)} numbers, got {value!r}")
        return tuple(_number(where, item, float, RANGES.get(key), error) for item in value)
    kind = int if isinstance(default, int) else float
    return _number(where, value, kind, RANGES.get(key), error)


def _number(where: str, value, kind, bounds, error):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise error(f"{where}: expected a number, got {value!r}")
    if not math.isfinite(value):
        raise error(f"{where}: must be finite, got {value!r}")
    if kind is int and not float(value).is_integer():
        raise error(f"{where}: expected a whole number, got {value!r}")
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        raise error(f"{where}: {value!r} is outside [{bounds[0]}, {bounds[1]}]")
    return kind(value)


def flatten(nested: dict) -> dict[str, object]:
    """``{"servo": {"kp_scale": 1}} -> {"servo.kp_scale": 1}``."""
    return {f"{s}.{k}": v for s, section in nested.items() for k, v in section.items()}


def unflatten(flat: dict[str, object]) -> dict[str, dict]:
    nested: dict[str, dict] = {}
    for dotted, value in flat.items():
        section, key = dotted.split(".", 1)
        nested.setdefault(section, {})[key] = value
    return nested


def _plain(section: dict) -> dict:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in section.items()}


def _close(a, b) -> bool:
    if isinstance(a, str) or isinstance(b, str):
        return a == b
    return bool(np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), atol=1e-9))
