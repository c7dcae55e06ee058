"""A sweep file: one task and recipe, settings to vary, seeds, and worlds to judge in.

::

    name = "background_width"
    task = "Reach"
    recipe = "distill"            # or "sac"
    seeds = [0, 1, 2]
    worlds = ["sim", "typical_so101", "reference_pitfalls"]   # "sim", a shipped
                                  # profile name or a profile TOML, "twin:PATH"
    trials = 27                   # matched-evaluation episodes per world
    speed = [15.0, 0.6]           # optional: Hz and action fraction every world (the
                                  # sim too) runs at; default: each policy's recommended

    [train]                       # fixed fields of the recipe's Args
    dagger_rounds = 10

    [grid]                        # every combination of these values ...
    "randomization.background_value" = [[0.0, 0.0], [0.0, 0.18]]
    "randomization.camera_rot_wobble_deg" = [1.0, 3.0]

    [[setting]]                   # ... or a list of named settings (not both)
    name = "none"
    "randomization.background_value" = [0.0, 0.0]

Keys are ``randomization.<DomainRandomization field>`` or a field of the recipe's
``Args``. Unknown keys, fields and worlds are refused with the key named, before
anything runs.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path

from realgap.bridge.profile import shipped_profiles
from realgap.errors import ConfigError
from realgap.eval.layout import load_layout
from realgap.sim.randomization import DomainRandomization
from realgap.sim.tasks import task_name
from realgap.sim.twin import read_toml
from realgap.train import distill, sac

RECIPES = {"distill": distill.Args, "sac": sac.Args}
SWEEP_OWNED = {"task", "out", "seed", "randomization", "progress"}
"""Args fields the sweep sets itself; a sweep file may not."""
TOP_KEYS = {
    "name",
    "task",
    "recipe",
    "seeds",
    "worlds",
    "trials",
    "speed",
    "train",
    "grid",
    "setting",
}


@dataclass(frozen=True)
class Run:
    """One training run: a setting and a seed, with everything that defines it."""

    setting: str
    """The setting's name (a grid point's is built from its values)."""
    values: dict
    """The setting's keys and values."""
    seed: int
    task: str
    recipe: str
    train: dict
    """Fixed Args fields."""

    @property
    def key(self) -> str:
        """Same arguments, same key: how a resumed sweep finds finished runs."""
        text = json.dumps(self.definition(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    @property
    def folder_name(self) -> str:
        return f"{_slug(self.setting)}_seed{self.seed}_{self.key}"

    def definition(self) -> dict:
        return {
            "task": self.task,
            "recipe": self.recipe,
            "seed": self.seed,
            "train": self.train,
            "values": self.values,
        }

    def randomization(self) -> dict:
        """The ``[randomization]`` widths this run trains with (over the task's own)."""
        return {
            key.split(".", 1)[1]: value
            for key, value in self.values.items()
            if key.startswith("randomization.")
        }

    def args_fields(self) -> dict:
        """Recipe ``Args`` fields: the fixed ones, then the setting's."""
        own = {k: v for k, v in self.values.items() if not k.startswith("randomization.")}
        return {**self.train, **own}


@dataclass(frozen=True)
class SweepSpec:
    name: str
    task: str
    recipe: str
    seeds: tuple[int, ...]
    worlds: tuple[str, ...]
    trials: int
    train: dict = field(default_factory=dict)
    settings: tuple[tuple[str, dict], ...] = ()
    source: str = ""
    speed: tuple[float, float] | None = None
    """(Hz, action fraction) every evaluation runs at; None: the policy's recommended
    speed on the arms and training's in the sim."""

    def label(self, world: str) -> str:
        """A world as tables, plots and reports name it: a profile file by its
        ``name`` (or its file's stem), ``twin:PATH`` by the file's stem; the path stays
        in each run's result file."""
        return world_label(world)

    def runs(self) -> list[Run]:
        return [
            Run(name, values, seed, self.task, self.recipe, self.train)
            for name, values in self.settings
            for seed in self.seeds
        ]


def load_sweep(path: str | Path) -> SweepSpec:
    """Read and check a sweep file; every problem names the file and the key."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"sweep file not found: {path}")
    data = read_toml(path, ConfigError)
    return parse_sweep(data, source=str(path))


def parse_sweep(data: dict, source: str = "sweep") -> SweepSpec:
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise ConfigError(f"{source}: unknown keys {unknown}; known: {sorted(TOP_KEYS)}")
    for key in ("task", "seeds", "worlds"):
        if key not in data:
            raise ConfigError(f"{source}: needs {key} = ...")
    try:
        task = task_name(data["task"])
    except ConfigError as error:
        raise ConfigError(f"{source}: task: {error}") from None
    recipe = data.get("recipe", "distill")
    if recipe not in RECIPES:
        raise ConfigError(f"{source}: recipe must be one of {sorted(RECIPES)}, got {recipe!r}")
    seeds = data["seeds"]
    if not isinstance(seeds, list) or not seeds or not all(_is_int(s) for s in seeds):
        raise ConfigError(f"{source}: seeds must be a list of integers, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise ConfigError(f"{source}: seeds repeat: {seeds}")
    worlds = data["worlds"]
    if not isinstance(worlds, list) or not worlds:
        raise ConfigError(f"{source}: worlds must be a non-empty list")
    for world in worlds:
        check_world(world, source)
    trials = data.get("trials", 27)
    spots = len(load_layout().for_task(task).spots)
    if not _is_int(trials) or trials < spots:
        raise ConfigError(
            f"{source}: trials must be an integer of at least {spots} (one per spot of "
            f"{task}'s layout), got {trials!r}"
        )
    speed = data.get("speed")
    if speed is not None:
        numbers = isinstance(speed, list) and len(speed) == 2
        numbers = numbers and all(_check_ok(v) for v in speed)
        if not numbers or not (speed[0] > 0 and 0 < speed[1] <= 1):
            raise ConfigError(f"{source}: speed must be [Hz, action fraction], got {speed!r}")
    train = data.get("train", {})
    if not isinstance(train, dict):
        raise ConfigError(f"{source}: [train] must be a table")
    args_type = RECIPES[recipe]
    for key, value in train.items():
        _check_key(f"{source}: train.{key}", key, value, args_type, allow_randomization=False)
    settings = _settings(data, source, args_type)
    return SweepSpec(
        name=str(data.get("name", Path(source).stem)),
        task=task,
        recipe=recipe,
        seeds=tuple(int(s) for s in seeds),
        worlds=tuple(worlds),
        trials=int(trials),
        train=dict(train),
        settings=settings,
        source=source,
        speed=None if speed is None else (float(speed[0]), float(speed[1])),
    )


def world_label(world: str) -> str:
    """See :meth:`SweepSpec.label`."""
    if world == "sim" or world in shipped_profiles():
        return world
    if world.startswith("twin:"):
        return "twin:" + Path(world[len("twin:") :]).stem
    try:
        data = read_toml(world, ConfigError)
    except ConfigError:
        return Path(world).stem
    name = data.get("name")
    return name if isinstance(name, str) and name else Path(world).stem


def check_world(world, source: str) -> None:
    """``sim``, a shipped profile, a profile TOML that exists, or ``twin:PATH``."""
    if not isinstance(world, str) or not world:
        raise ConfigError(f"{source}: worlds: expected names, got {world!r}")
    shipped = shipped_profiles()
    if world == "sim" or world in shipped:
        return
    path = Path(world[len("twin:") :] if world.startswith("twin:") else world)
    if path.suffix in (".toml", ".json") and path.exists():
        return
    raise ConfigError(
        f"{source}: worlds: {world!r} is not 'sim', a shipped profile "
        f"({', '.join(sorted(shipped))}), a profile TOML or twin:PATH that exists"
    )


def _settings(data: dict, source: str, args_type) -> tuple[tuple[str, dict], ...]:
    grid, listed = data.get("grid"), data.get("setting")
    if grid is not None and listed is not None:
        raise ConfigError(f"{source}: give [grid] or [[setting]], not both")
    if grid is None and listed is None:
        return (("default", {}),)
    if grid is not None:
        if not isinstance(grid, dict) or not grid:
            raise ConfigError(f"{source}: [grid] must map keys to lists of values")
        for key, values in grid.items():
            if not isinstance(values, list) or not values:
                raise ConfigError(f"{source}: grid.{key}: expected a list of values")
            for value in values:
                _check_key(f"{source}: grid.{key}", key, value, args_type)
        keys = list(grid)
        out = []
        for combo in itertools.product(*(grid[k] for k in keys)):
            values = dict(zip(keys, combo))
            out.append((_name_of(values), values))
        return tuple(out)
    if not isinstance(listed, list) or not all(isinstance(s, dict) for s in listed):
        raise ConfigError(f"{source}: settings are [[setting]] tables")
    out, names = [], set()
    for index, entry in enumerate(listed):
        values = {k: v for k, v in entry.items() if k != "name"}
        for key, value in values.items():
            _check_key(f"{source}: setting {index + 1}: {key}", key, value, args_type)
        name = str(entry.get("name", _name_of(values)))
        if name in names:
            raise ConfigError(f"{source}: setting names repeat: {name!r}")
        names.add(name)
        out.append((name, values))
    return tuple(out)


def _check_key(where: str, key: str, value, args_type, allow_randomization=True) -> None:
    if key.startswith("randomization."):
        name = key.split(".", 1)[1]
        if not allow_randomization:
            raise ConfigError(f"{where}: randomization widths go in [grid] or [[setting]]")
        known = {f.name for f in fields(DomainRandomization)} - {"centre"}
        if name not in known:
            raise ConfigError(f"{where}: unknown randomization field {name!r}")
        try:  # the same check a randomization file gets
            DomainRandomization.from_dict({name: value}, source=where)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        return
    known = {f.name: f for f in fields(args_type) if f.name not in SWEEP_OWNED}
    if key not in known:
        raise ConfigError(
            f"{where}: unknown key {key!r}: not randomization.<field> nor a field of "
            f"the recipe's Args"
        )
    _check_type(where, value, str(known[key].type))


_CHECKS = {
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "int": (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    "float": (
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v),
        "a number",
    ),
    "str": (lambda v: isinstance(v, str), "text"),
}


def _check_type(where: str, value, annotation: str) -> None:
    """An Args value of the type its field declares (``int | None`` takes an int: TOML
    has no None); lists for tuples are checked element by element."""
    base = annotation.replace(" | None", "").strip()
    if base.startswith(("tuple", "list")):
        inner = base[base.index("[") + 1 : -1].split(",")[0].strip() if "[" in base else ""
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        for item in value:
            _check_type(where, item, inner or "float")
        return
    check = _CHECKS.get(base)
    if check is not None and not check[0](value):
        raise ConfigError(f"{where}: expected {check[1]}, got {value!r}")


def _name_of(values: dict) -> str:
    if not values:
        return "default"
    parts = []
    for key, value in values.items():
        short = key.split(".")[-1]
        text = "-".join(_fmt(v) for v in value) if isinstance(value, list) else _fmt(value)
        parts.append(f"{short}={text}")
    return ",".join(parts)


def _fmt(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:60]


def _check_ok(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
