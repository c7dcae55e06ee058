"""The task registry: every task realgap trains and evaluates, by name."""

from __future__ import annotations

from realgap.errors import ConfigError
from realgap.sim.tasks.base import SimState, Task, TaskConfig
from realgap.sim.tasks.pick_cube import PickCube, PickCubeConfig
from realgap.sim.tasks.place_cube import PlaceCube, PlaceCubeConfig
from realgap.sim.tasks.reach import Reach, ReachConfig

TASKS: dict[str, type[Task]] = {
    "Reach": Reach,
    "PickCube": PickCube,
    "PlaceCube": PlaceCube,
}
"""Name -> task class. Gymnasium ids are ``realgap/<Name>-v0``."""


def task_name(name: str) -> str:
    """The registered spelling of a task name, matched case-insensitively."""
    by_lower = {known.lower(): known for known in TASKS}
    try:
        return by_lower[str(name).strip().lower()]
    except KeyError:
        raise ConfigError(f"unknown task {name!r}; known tasks: {sorted(TASKS)}") from None


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
    "TASKS",
    "PickCube",
    "PickCubeConfig",
    "PlaceCube",
    "PlaceCubeConfig",
    "Reach",
    "ReachConfig",
    "SimState",
    "Task",
    "TaskConfig",
    "make_task",
    "task_for_instruction",
    "task_name",
]
