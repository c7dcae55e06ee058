"""The task registry: every task realgap trains and evaluates, by name."""

from __future__ import annotations

from realgap.errors import ConfigError
from realgap.sim.tasks.base import SimState, Task, TaskConfig
from realgap.sim.tasks.pick_cube import PickCan, PickCube, PickCubeConfig
from realgap.sim.tasks.place_cube import PlaceCan, PlaceCube, PlaceCubeConfig
from realgap.sim.tasks.reach import Reach, ReachCan, ReachConfig
from realgap.sim.tasks.stack import StackCan, StackConfig, StackCube

TASKS: dict[str, type[Task]] = {
    cls.name: cls
    for cls in (Reach, ReachCan, PickCube, PickCan, PlaceCube, PlaceCan, StackCube, StackCan)
}
"""Name -> task class. Gymnasium ids are ``realgap/<Name>-v0``."""

ALIASES: dict[str, str] = {alias: cls.name for cls in TASKS.values() for alias in cls.aliases}
"""Other names -> registered name: the reference's ``ReachCube``, ``LiftCube``, ``LiftCan``."""


def task_name(name: str) -> str:
    """The registered spelling of a task name or alias, matched case-insensitively."""
    by_lower = {known.lower(): known for known in TASKS}
    by_lower.update({alias.lower(): known for alias, known in ALIASES.items()})
    try:
        return by_lower[str(name).strip().lower()]
    except KeyError:
        aliases = ", ".join(f"{a} = {k}" for a, k in sorted(ALIASES.items()))
        raise ConfigError(
            f"unknown task {name!r}; known tasks: {sorted(TASKS)} (aliases: {aliases})"
        ) from None


def make_task(name: str, config: TaskConfig | None = None) -> Task:
    """Instantiate a registered task; unknown names list the known ones."""
    cls = TASKS[task_name(name)]
    if config is not None and not isinstance(config, cls.config_type):
        raise ConfigError(f"{name} needs a {cls.config_type.__name__}, got {type(config).__name__}")
    return cls(config)


def task_for_instruction(text: str) -> str | None:
    """The task whose instruction is ``text`` (how a dataset names its task), or None."""
    return next((name for name, cls in TASKS.items() if cls.instruction == text), None)


__all__ = [
    "ALIASES",
    "TASKS",
    "PickCan",
    "PickCube",
    "PickCubeConfig",
    "PlaceCan",
    "PlaceCube",
    "PlaceCubeConfig",
    "Reach",
    "ReachCan",
    "ReachConfig",
    "SimState",
    "StackCan",
    "StackConfig",
    "StackCube",
    "Task",
    "TaskConfig",
    "make_task",
    "task_for_instruction",
    "task_name",
]
