"""Reality profiles: the hidden differences between the twin and a fake "real" arm.

A profile is a TOML file; every section and key is optional and defaults to
the nominal twin, so an empty file is the nominal sim behind the bridge::

    [cube]    mass_kg, size_m, friction, color_rgb
    [fingers] friction
    [joints]  zero_offset_deg (6 values, joint order), reading_noise_deg
    [servo]   kp_scale, torque_limit_scale, latency_steps, power_up_goal_zero
    [camera]  exposure_scale, offset_m (3), rotation_deg (3), fov_deg_delta,
              background_rgb, auto_exposure
    [world]   origin_offset_m (2)

Unknown sections or keys, wrong types and out-of-range values raise
:class:`ProfileError` naming ``section.key``. The policy never sees a profile:
only the fake arm and camera read it, through the same interfaces a real arm has.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path

from realgap.sim import robot
from realgap.sim.scene import SceneConfig

_SCENE = SceneConfig()


class ProfileError(ValueError):
    """A reality profile has an unknown key or a bad value (the message names it)."""


@dataclass(frozen=True)
class CubeProfile:
    mass_kg: float = _SCENE.cube_mass_kg
    """Real cube mass (the twin's nominal is a 12 g printed cube)."""
    size_m: float = _SCENE.cube_size_m
    """Edge length."""
    friction: float = _SCENE.cube_friction
    """Sliding friction against the pads and table."""
    color_rgb: tuple[float, float, float] = tuple(_SCENE.cube_rgba[:3])
    """Cube colour, 0..1 per channel."""


@dataclass(frozen=True)
class FingersProfile:
    friction: float = 1.0
    """Jaw pad sliding friction."""


@dataclass(frozen=True)
class JointsProfile:
    zero_offset_deg: tuple[float, ...] = (0.0,) * 6
    """Encoder zero error per joint (reading = true angle + offset), joint order."""
    reading_noise_deg: float = 0.0
    """Standard deviation of position-reading noise."""


@dataclass(frozen=True)
class ServoProfile:
    kp_scale: float = 1.0
    """Multiplies the twin's servo stiffness (real servos under load are softer)."""
    torque_limit_scale: float = 1.0
    """Multiplies the servo torque caps."""
    latency_steps: int = 0
    """Commands reach the servo this many commands late."""
    power_up_goal_zero: bool = False
    """After power-up the stored goal reads 0 while the joint sits elsewhere:
    enabling torque without first writing the goal would jump the arm."""


@dataclass(frozen=True)
class CameraProfile:
    exposure_scale: float = 1.0
    """Multiplies pixel values (sensor exposure/gain relative to the twin)."""
    offset_m: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Camera position error in the gripper frame."""
    rotation_deg: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Camera orientation error (rotation vector, degrees, camera frame)."""
    fov_deg_delta: float = 0.0
    """Vertical field-of-view error."""
    background_rgb: tuple[float, float, float] = tuple(_SCENE.background_rgb)
    """Colour of the cloth under the work area."""
    auto_exposure: bool = False
    """The camera powers up with auto-exposure on (it brightens a dark scene) and
    forgets a lock when unplugged."""


@dataclass(frozen=True)
class WorldProfile:
    origin_offset_m: tuple[float, float] = tuple(float(v) for v in robot.PAN_AXIS_XY)
    """Where the operator measures positions from, in the sim frame. Nominal: the
    rotation axis, as layouts say; ``[0, 0]`` reproduces measuring from the base's
    back edge (3.9 cm behind the axis)."""


@dataclass(frozen=True)
class RealityProfile:
    """Everything that differs between the twin and the (fake) real arm."""

    name: str = "nominal"
    cube: CubeProfile = field(default_factory=CubeProfile)
    fingers: FingersProfile = field(default_factory=FingersProfile)
    joints: JointsProfile = field(default_factory=JointsProfile)
    servo: ServoProfile = field(default_factory=ServoProfile)
    camera: CameraProfile = field(default_factory=CameraProfile)
    world: WorldProfile = field(default_factory=WorldProfile)

    @classmethod
    def from_toml(cls, path: str | Path) -> RealityProfile:
        """Load and validate a profile file."""
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"reality profile not found: {path}")
        try:
            data = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as error:
            raise ProfileError(f"{path}: not valid TOML ({error})") from None
        return cls.from_dict(data, name=path.stem, source=str(path))

    @classmethod
    def from_dict(cls, data: dict, name: str = "profile", source: str = "profile"):
        sections = {f.name: f.default_factory for f in fields(cls) if f.name != "name"}
        unknown = sorted(set(data) - set(sections) - {"name"})
        if unknown:
            raise ProfileError(f"{source}: unknown section(s) {unknown}; known: {sorted(sections)}")
        built = {
            section: _section(factory, data.get(section, {}), f"{source}: {section}")
            for section, factory in sections.items()
        }
        return cls(name=str(data.get("name", name)), **built)


def _section(factory, values, where: str):
    if not isinstance(values, dict):
        raise ProfileError(f"{where}: expected a table of keys, got {values!r}")
    default = factory()
    known = {f.name: f for f in fields(default)}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ProfileError(f"{where}.{unknown[0]}: unknown key; known keys: {sorted(known)}")
    kwargs = {}
    for key, value in values.items():
        kwargs[key] = _check(f"{where}.{key}", getattr(default, key), value)
    return type(default)(**kwargs)


# Allowed ranges: wide enough for any plausible arm, narrow enough to catch unit slips.
_RANGES = {
    "mass_kg": (1e-4, 2.0),
    "size_m": (0.005, 0.1),
    "friction": (0.01, 5.0),
    "color_rgb": (0.0, 1.0),
    "zero_offset_deg": (-45.0, 45.0),
    "reading_noise_deg": (0.0, 20.0),
    "kp_scale": (0.01, 10.0),
    "torque_limit_scale": (0.01, 10.0),
    "latency_steps": (0, 10),
    "exposure_scale": (0.05, 20.0),
    "offset_m": (-0.05, 0.05),
    "rotation_deg": (-45.0, 45.0),
    "fov_deg_delta": (-40.0, 40.0),
    "background_rgb": (0.0, 1.0),
    "origin_offset_m": (-0.5, 0.5),
}


def _check(where: str, default, value):
    key = where.rsplit(".", 1)[-1]
    if isinstance(default, bool):
        if not isinstance(value, bool):
            raise ProfileError(f"{where}: expected true or false, got {value!r}")
        return value
    if isinstance(default, tuple):
        if not isinstance(value, list) or len(value) != len(default):
            raise ProfileError(f"{where}: expected a list of {len(default)} numbers, got {value!r}")
        return tuple(_number(where, item, float, _RANGES.get(key)) for item in value)
    kind = int if isinstance(default, int) else float
    return _number(where, value, kind, _RANGES.get(key))


def _number(where: str, value, kind, bounds):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ProfileError(f"{where}: expected a number, got {value!r}")
    if kind is int and not float(value).is_integer():
        raise ProfileError(f"{where}: expected a whole number, got {value!r}")
    if not math.isfinite(value):
        raise ProfileError(f"{where}: must be finite, got {value!r}")
    if bounds is not None and not bounds[0] <= value <= bounds[1]:
        raise ProfileError(f"{where}: {value!r} is outside [{bounds[0]}, {bounds[1]}]")
    return kind(value)


def shipped_profiles() -> dict[str, Path]:
    """Name -> path of the example profiles shipped with realgap."""
    folder = resources.files("realgap.bridge") / "profiles"
    return {Path(str(p)).stem: Path(str(p)) for p in folder.iterdir() if p.name.endswith(".toml")}


def load_profile(name_or_path: str | Path | None) -> RealityProfile:
    """A shipped profile by name, a TOML file by path, or the nominal profile for None."""
    if name_or_path is None:
        return RealityProfile()
    shipped = shipped_profiles()
    if str(name_or_path) in shipped:
        return RealityProfile.from_toml(shipped[str(name_or_path)])
    path = Path(name_or_path)
    if not path.exists():
        raise FileNotFoundError(
            f"reality profile {name_or_path!r} not found; shipped profiles: {sorted(shipped)}"
        )
    return RealityProfile.from_toml(path)
