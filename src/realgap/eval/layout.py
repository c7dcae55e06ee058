"""Evaluation layouts: named test spots that every world runs the same way.

A layout is a TOML file::

    name = "my-desk"
    frame = "arm"          # "arm": from the rotation axis (default); "sim": from the
                           # sim origin, the base's back edge 3.9 cm behind the axis
    [[spot]]
    name = "centre"
    cube = [0.20, 0.0]     # metres, x forward, y left
    bin = [0.20, 0.13]     # PlaceCube only; optional
    yaw_deg = 0            # optional cube yaw

Positions given in the sim frame are converted to the arm frame explicitly
(:func:`realgap.sim.robot.sim_to_arm`), so a layout measured from the wrong
point is a stated choice, not a silent 3.9 cm error. Spots whose cube lies
outside the task's training square are flagged ``in_distribution=False``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path

import numpy as np

from realgap.bridge.worlds import Spot
from realgap.errors import ConfigError
from realgap.sim import robot
from realgap.sim.tasks import make_task
from realgap.sim.tasks.base import TaskConfig
from realgap.sim.twin import read_toml


@dataclass(frozen=True)
class Layout:
    name: str
    spots: tuple[Spot, ...]

    def for_task(self, task: str) -> Layout:
        """Spots with in-distribution flags (and default bins) for ``task``."""
        task_obj = make_task(task)
        spots = []
        for spot in self.spots:
            bin_xy = spot.bin_xy
            if task_obj.has_bin and bin_xy is None:
                bin_xy = default_bin(spot.cube_xy, task_obj.config)
            spots.append(
                replace(
                    spot,
                    bin_xy=bin_xy if task_obj.has_bin else None,
                    in_distribution=in_training_square(spot.cube_xy, task_obj.config),
                )
            )
        return Layout(self.name, tuple(spots))

    def trials_per_spot(self, total: int) -> list[int]:
        """Split ``total`` trials over the spots as evenly as possible."""
        if total < len(self.spots):
            raise ConfigError(
                f"--trials {total} is fewer than the layout's {len(self.spots)} spots"
            )
        base, extra = divmod(total, len(self.spots))
        return [base + (i < extra) for i in range(len(self.spots))]


def _number(where: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(f"{where}: expected a number, got {value!r}")
    if not math.isfinite(value):
        raise ConfigError(f"{where}: must be finite, got {value!r}")
    return float(value)


def _position(where: str, value, convert) -> tuple[float, float]:
    """[x, y] in metres, checked, in the arm frame, and where the arm can work."""
    if not isinstance(value, list) or len(value) != 2:
        raise ConfigError(f"{where}: expected [x, y] in metres, got {value!r}")
    xy = tuple(float(v) for v in convert([_number(where, v) for v in value]))
    distance = math.hypot(*xy)
    if distance > 1.0:
        raise ConfigError(f"{where}: {xy} is over 1 m away; positions are in metres")
    if distance < robot.BASE_CLEARANCE_M:
        raise ConfigError(
            f"{where}: {xy} is {distance * 100:.1f} cm from the rotation axis, inside the "
            f"arm's base (nothing closer than {robot.BASE_CLEARANCE_M * 100:.0f} cm)"
        )
    if distance > robot.REACH_M:
        raise ConfigError(
            f"{where}: {xy} is {distance * 100:.1f} cm from the rotation axis, out of the "
            f"arm's reach ({robot.REACH_M * 100:.0f} cm)"
        )
    return xy


def in_training_square(cube_xy, config: TaskConfig) -> bool:
    half = config.cube_square_size / 2 + 1e-9
    offset = np.abs(np.asarray(cube_xy) - np.asarray(config.cube_square_center))
    return bool(np.all(offset <= half))


def default_bin(cube_xy, config) -> tuple[float, float]:
    """The middle of PlaceCube's bin rule: sideways towards the centre line."""
    distance = float(np.mean(config.bin_distance_m))
    side = -1.0 if cube_xy[1] > 0 else 1.0
    return (float(cube_xy[0]), float(cube_xy[1] + side * distance))


def load_layout(path: str | Path | None = None) -> Layout:
    """A layout file; None loads the shipped default layout."""
    if path is None:
        path = Path(str(resources.files("realgap.eval") / "layouts" / "default.toml"))
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"layout not found: {path}")
    data = read_toml(path, ConfigError)
    unknown = sorted(set(data) - {"name", "frame", "spot"})
    if unknown:
        raise ConfigError(f"{path}: unknown layout keys {unknown}")
    frame = data.get("frame", "arm")
    if frame not in ("arm", "sim"):
        raise ConfigError(f"{path}: frame must be 'arm' or 'sim', got {frame!r}")
    convert = robot.sim_to_arm if frame == "sim" else np.asarray
    entries = data.get("spot", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ConfigError(f"{path}: spots are [[spot]] tables")
    spots = []
    for index, entry in enumerate(entries):
        name = entry.get("name", f"spot{index + 1}")
        where = f"{path}: spot {index + 1} ({name})"
        unknown = sorted(set(entry) - {"name", "cube", "bin", "yaw_deg"})
        if unknown:
            raise ConfigError(f"{where}: unknown keys {unknown}")
        if "cube" not in entry:
            raise ConfigError(f"{where}: needs cube = [x, y] (metres)")
        cube = _position(f"{where}: cube", entry["cube"], convert)
        bin_xy = _position(f"{where}: bin", entry["bin"], convert) if "bin" in entry else None
        yaw = _number(f"{where}: yaw_deg", entry.get("yaw_deg", 0.0))
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{where}: name must be text, got {name!r}")
        spots.append(Spot(name=name, cube_xy=cube, bin_xy=bin_xy, yaw=math.radians(yaw)))
    if not spots:
        raise ConfigError(f"{path}: a layout needs at least one [[spot]]")
    names = [spot.name for spot in spots]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ConfigError(f"{path}: spot names must be unique; repeated: {repeated}")
    return Layout(str(data.get("name", path.stem)), tuple(spots))
