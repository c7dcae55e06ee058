"""Reality profiles: the hidden truth of a fake "real" arm.

A profile is a :class:`~realgap.sim.twin.TwinParams` (everything a twin can
model: cube, fingers, joints, servos, camera, light, control rate) plus the
hardware behaviours a twin does not have: servos whose stored goal reads 0 after
power-up, a camera that powers up auto-exposing, and how fast the servos heat. (An
operator who measures cube positions from the wrong point is the twin's
``[placement] offset_xy_m``: an adapted twin measures and models it.) In TOML every
section and key is optional and defaults to the nominal twin, so an empty file is
the nominal sim behind the bridge. The twin's sections (see
:mod:`realgap.sim.twin`) take these hardware keys beside their own::

    [servo]   power_up_goal_zero
    [camera]  auto_exposure
    [thermal] heating_c_per_nm2_s, cooling_per_s

and four sections of the room and the webcam that only the fake camera's own image
chain draws (:mod:`realgap.bridge.appearance`): ``[desk]``, ``[sensor]``, ``[lights]``
and ``[clutter]``.

Unknown sections or keys, wrong types and out-of-range values raise
:class:`ProfileError` naming ``file: section.key``. The policy never sees a
profile: only the fake arm and camera read it, through the same interfaces a real
arm has.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from importlib import resources
from pathlib import Path

from realgap.bridge.appearance import Appearance, parse_appearance
from realgap.sim import robot
from realgap.sim.twin import (
    TwinParams,
    TwinParamsError,
    check_value,
    parse_sections,
    read_toml,
)


class ProfileError(TwinParamsError):
    """A reality profile has an unknown key or a bad value (the message names it)."""


@dataclass(frozen=True)
class HardwareBehaviour:
    """What a real arm does that no twin parameter describes."""

    power_up_goal_zero: bool = False
    """After power-up the stored goal reads 0 while the joint sits elsewhere:
    enabling torque without first writing the goal would jump the arm."""
    camera_auto_exposure: bool = False
    """The camera powers up with auto-exposure on (it brightens a dark scene) and
    forgets a lock when unplugged."""
    heating_c_per_nm2_s: float = 0.017
    """Temperature rise per (N*m)^2 per second. Not measured on an STS3215: chosen so
    that a servo stalled at 3 N*m climbs ~9 C a minute and settles at its 70 C
    cut-out, while holding the extended arm (~1.3 N*m) settles near 34 C."""
    cooling_per_s: float = 1.0 / 300.0
    """Newtonian cooling rate towards ambient (a ~5-minute time constant)."""


HARDWARE_KEYS = {
    ("servo", "power_up_goal_zero"): "power_up_goal_zero",
    ("camera", "auto_exposure"): "camera_auto_exposure",
    ("thermal", "heating_c_per_nm2_s"): "heating_c_per_nm2_s",
    ("thermal", "cooling_per_s"): "cooling_per_s",
}
"""(TOML section, key) -> :class:`HardwareBehaviour` field."""
_HARDWARE_ONLY = {"thermal"}
TWIN_ONLY = {
    ("camera", "background_texture"): "is a twin's learned desk; a fake arm's desk is its "
    "[desk] section (texture, rgb, contrast, scale_m)",
    ("camera", "lens_k1"): "is a twin's measured lens; a fake arm's lens is its [sensor] "
    "distortion_k, which its own camera draws",
    ("scene", "shadows"): "is a twin's room (a user's rig.toml); a fake arm's shadows are its "
    "[lights] shadows, which its own camera draws",
}
"""Twin keys a profile may not set: the fake arm's own room and desk say them."""
_LIMITS = {"heating_c_per_nm2_s": (0, 1), "cooling_per_s": (0, 1)}


@dataclass(frozen=True)
class RealityProfile:
    """Everything that differs between the twin and the (fake) real arm."""

    name: str = "nominal"
    twin: TwinParams = field(default_factory=TwinParams)
    hardware: HardwareBehaviour = field(default_factory=HardwareBehaviour)
    appearance: Appearance = field(default_factory=Appearance)
    """The desk, lights, clutter and webcam the fake camera draws (never the twin)."""

    @classmethod
    def from_toml(cls, path: str | Path) -> RealityProfile:
        """Load and validate a profile file."""
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"reality profile not found: {path}")
        data = read_toml(path, ProfileError)
        return cls.from_dict(data, name=path.stem, source=str(path))

    @classmethod
    def from_dict(cls, data: dict, name: str = "profile", source: str = "profile"):
        data = {k: dict(v) if isinstance(v, dict) else v for k, v in data.items()}
        name = str(data.pop("name", name))
        if "world" in data:  # the operator's origin moved into the twin's parameters
            raise ProfileError(
                f"{source}: [world] origin_offset_m is now the twin's [placement] "
                "offset_xy_m, in the arm frame: origin_offset_m minus the rotation axis "
                f"{[round(float(v), 4) for v in robot.PAN_AXIS_XY]} (so [0, 0], the base's "
                "back edge, is offset_xy_m = [-0.0388, 0.0])"
            )
        defaults = HardwareBehaviour()
        hardware = {}
        for (section, key), attribute in HARDWARE_KEYS.items():
            values = data.get(section)
            if isinstance(values, dict) and key in values:
                where = f"{source}: {section}.{key}"
                value = values.pop(key)
                hardware[attribute] = check_value(
                    where, getattr(defaults, attribute), value, ProfileError
                )
                low_high = _LIMITS.get(attribute)
                values_list = hardware[attribute]
                items = values_list if isinstance(values_list, tuple) else (values_list,)
                if low_high and not all(low_high[0] <= v <= low_high[1] for v in items):
                    raise ProfileError(f"{where}: {value!r} is outside {list(low_high)}")
        for section in _HARDWARE_ONLY:
            leftover = data.pop(section, {})
            if not isinstance(leftover, dict):
                raise ProfileError(f"{source}: {section}: expected a table of keys")
            if leftover:
                known = sorted(k for s, k in HARDWARE_KEYS if s == section)
                raise ProfileError(
                    f"{source}: {section}.{sorted(leftover)[0]}: unknown key; known keys: {known}"
                )
        for (section, key), instead in TWIN_ONLY.items():
            values = data.get(section)
            if isinstance(values, dict) and key in values:
                raise ProfileError(f"{source}: {section}.{key} {instead}")
        appearance = parse_appearance(data, source, ProfileError)
        twin = parse_sections(TwinParams(), data, source, ProfileError)
        return cls(
            name=name, twin=twin, hardware=HardwareBehaviour(**hardware), appearance=appearance
        )

    def to_dict(self) -> dict:
        """Plain nested dict (a record of which arm a result was measured on)."""
        hardware = {f.name: getattr(self.hardware, f.name) for f in fields(self.hardware)}
        out = {"name": self.name, "twin": self.twin.to_dict(), "hardware": hardware}
        if not self.appearance.is_plain:
            out["appearance"] = self.appearance.to_dict()
        return out


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
