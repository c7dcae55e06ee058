"""Evaluation layouts: named test spots that every world runs the same way.

A layout is a TOML file::

    name = "my-desk"
    frame = "arm"          # "arm": from the rotation axis (default); "sim": from the
                           # sim origin, the base's back edge 3.9 cm behind the axis
    [[spot]]
    name = "centre"
    cube = [0.20, 0.0]     # metres, x forward, y left (the cube, or the can)
    target = [0.20, 0.13]  # optional: Place's bin, Stack's lower object (``bin`` also works)
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
from realgap.sim.tasks.base import TaskConfig, under_start_jaws
from realgap.sim.twin import read_toml


@dataclass(frozen=True)
class Layout:
    name: str
    spots: tuple[Spot, ...]
    shipped: bool = False
    """The shipped default: each task then gets its own shipped layout (``cans`` for
    tasks with a can), see :attr:`realgap.sim.tasks.Task.default_layout`."""

    def for_task(self, task: str) -> Layout:
        """Spots with in-distribution flags (and default targets) for ``task``; a spot
        that would stand a can under the start pose's jaws is refused, named."""
        task_obj = make_task(task)
        if self.shipped and task_obj.default_layout != self.name:
            return load_shipped(task_obj.default_layout).for_task(task)
        spots = []
        for spot in self.spots:
            _check_clear_of_jaws(spot, task_obj)
            target_xy = spot.target_xy
            if task_obj.has_target and target_xy is None:
                target_xy = default_target(spot.cube_xy, task_obj.config)
            spots.append(
                replace(
                    spot,
                    target_xy=target_xy if task_obj.has_target else None,
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


def default_target(cube_xy, config) -> tuple[float, float]:
    """The middle of the training rule for the bin (Place) or the lower object (Stack):
    sideways towards the centre line."""
    distance_m = getattr(config, "bin_distance_m", None) or config.base_distance_m
    distance = float(np.mean(distance_m))
    side = -1.0 if cube_xy[1] > 0 else 1.0
    return (float(cube_xy[0]), float(cube_xy[1] + side * distance))


def _check_clear_of_jaws(spot: Spot, task_obj) -> None:
    """A can under the start pose's jaws is hit before the episode starts."""
    checks = [("object", spot.cube_xy, task_obj.keep_out_m)]
    if spot.target_xy is not None:
        checks.append(("target", spot.target_xy, getattr(task_obj, "target_keep_out_m", 0.0)))
    for what, xy, radius in checks:
        if under_start_jaws(np.atleast_2d(xy), radius)[0]:
            jaws = robot.START_PINCH_ARM
            raise ConfigError(
                f"layout spot {spot.name}: the {task_obj.name} {what} at {tuple(xy)} stands "
                f"under the start pose's jaws (x={jaws[0]:.3f}, y={jaws[1]:.3f}); keep it "
                f"{radius * 100:.0f} cm away (the shipped layout 'cans' does)"
            )


def load_shipped(name: str) -> Layout:
    """A layout shipped with realgap, by name (``default``, ``cans``)."""
    path = Path(str(resources.files("realgap.eval") / "layouts" / f"{name}.toml"))
    return replace(load_layout(path), shipped=True)


def load_layout(path: str | Path | None = None) -> Layout:
    """A layout file; None loads the shipped default layout (which gives each task its
    own shipped layout)."""
    if path is None:
        return load_shipped("default")
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
        unknown = sorted(set(entry) - {"name", "cube", "target", "bin", "yaw_deg"})
        if unknown:
            raise ConfigError(f"{where}: unknown keys {unknown}")
        if "cube" not in entry:
            raise ConfigError(f"{where}: needs cube = [x, y] (metres)")
        cube = _position(f"{where}: cube", entry["cube"], convert)
        if "target" in entry and "bin" in entry:
            raise ConfigError(f"{where}: give target or bin (the same thing), not both")
        key = "target" if "target" in entry else "bin"
        target_xy = _position(f"{where}: {key}", entry[key], convert) if key in entry else None
        yaw = _number(f"{where}: yaw_deg", entry.get("yaw_deg", 0.0))
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{where}: name must be text, got {name!r}")
        spots.append(Spot(name=name, cube_xy=cube, target_xy=target_xy, yaw=math.radians(yaw)))
    if not spots:
        raise ConfigError(f"{path}: a layout needs at least one [[spot]]")
    names = [spot.name for spot in spots]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ConfigError(f"{path}: spot names must be unique; repeated: {repeated}")
    return Layout(str(data.get("name", path.stem)), tuple(spots))
