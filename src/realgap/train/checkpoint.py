"""Long runs survive: periodic atomic checkpoints, a clean stop, and ``--resume``.

A checkpoint is ``checkpoint/state.pt`` in the run folder (weights, optimizers, every
random-number state, the envs' full state, counters, the best policy so far, how many
metrics rows were written) plus append-only data chunks beside it (a DAgger round's
samples, SAC's replay). Every file is written to a temporary name and renamed over the
old one, so a crash, a kill or a full disk mid-write leaves the previous checkpoint
whole; the state file names the chunks it needs, so chunks written after it are never
read.

:class:`StopSignals` turns the first Ctrl-C or SIGTERM into a request the training loop
honours at its next safe point (the end of a DAgger round, a SAC iteration): it writes
a checkpoint and the best policy so far, then raises :class:`TrainingStopped`, which
the CLI reports in one line with the command that resumes the run. A second signal
stops at once.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import torch

from realgap.errors import ConfigError, TrainingStopped
from realgap.runs import RunFolder

CHECKPOINT_DIR = "checkpoint"
STATE = "state.pt"
EVERY_S = 120.0
"""Default seconds between checkpoints (a Reach distill round takes about 6 s, a write
a few tens of milliseconds: well under 1% of the time)."""
IGNORED_FOR_RESUME = {
    "out",
    "progress",
    "resume",
    "checkpoint_every_s",
    "time_budget_s",
    "extra",
}
"""Args fields that may differ between a run and its resumption."""

log = logging.getLogger(__name__)
__all__ = [
    "Checkpointer",
    "StopSignals",
    "TrainingStopped",
    "check_resumable",
    "field_defaults",
    "resume_state",
]


class StopSignals:
    """While active, the first SIGINT/SIGTERM sets :attr:`requested`; a second one
    interrupts at once (KeyboardInterrupt). Restores the previous handlers on exit."""

    def __init__(self):
        self.requested: str | None = None
        self._previous: dict = {}

    def _handle(self, signum, frame) -> None:
        name = signal.Signals(signum).name
        if self.requested is not None:
            raise KeyboardInterrupt("SIGTERM" if name == "SIGTERM" else "")
        self.requested = name
        log.warning("%s: stopping after this round, with a checkpoint (again to stop now)", name)

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            for number in (signal.SIGINT, signal.SIGTERM):
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)


class Checkpointer:
    """Writes and reads one run's checkpoints (see the module docstring)."""

    def __init__(self, run: RunFolder, every_s: float = EVERY_S):
        self.folder = run.file(CHECKPOINT_DIR)
        self.every_s = every_s
        self.last = time.perf_counter()
        self.seconds_writing = 0.0
        self.writes = 0

    @property
    def path(self) -> Path:
        return self.folder / STATE

    def due(self) -> bool:
        return time.perf_counter() - self.last >= self.every_s

    def exists(self) -> bool:
        return self.path.is_file()

    def save_chunk(self, name: str, arrays: dict[str, np.ndarray]) -> str:
        """Write a data chunk (once; chunks never change) and return its file name."""
        target = self.folder / f"{name}.npz"
        if not target.exists():
            self.folder.mkdir(parents=True, exist_ok=True)
            _atomic(target, lambda handle: np.savez(handle, **arrays))
        return target.name

    def save(self, state: dict) -> bool:
        """Write the state file atomically; a failed write (a full disk, a read-only
        folder) is reported and leaves the previous checkpoint as it was."""
        started = time.perf_counter()
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            _atomic(self.path, lambda handle: torch.save(state, handle))
        except OSError as error:
            log.warning(
                "checkpoint not written (%s): the previous one in %s stands", error, self.folder
            )
            return False
        finally:
            self.last = time.perf_counter()
            self.seconds_writing += self.last - started
        self.writes += 1
        return True

    def report(self) -> dict:
        """How many checkpoints were written, the seconds they took and the disk the
        last one holds (the summary records it: the overhead is meant to stay small)."""
        size = sum(p.stat().st_size for p in self.folder.glob("*") if p.is_file())
        return {
            "writes": self.writes,
            "seconds": round(self.seconds_writing, 2),
            "megabytes": round(size / 1e6, 1),
        }

    def load(self) -> dict:
        if not self.exists():
            raise ConfigError(f"{self.folder.parent}: no checkpoint to resume from")
        return torch.load(self.path, map_location="cpu", weights_only=False)

    def chunk(self, name: str) -> dict[str, np.ndarray]:
        with np.load(self.folder / name) as data:
            return {key: data[key] for key in data.files}

    def prune(self, keep: set[str]) -> None:
        """Delete chunks the current state no longer names (data dropped from a full
        buffer, or written after a state that a kill left unwritten)."""
        for path in self.folder.glob("*.npz"):
            if path.name not in keep:
                path.unlink(missing_ok=True)


def _atomic(path: Path, write) -> None:
    partial = path.with_name(path.name + ".partial")
    try:
        with open(partial, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)  # never a half-written file to be mistaken
        raise


def check_resumable(
    run: RunFolder, recipe: str, values: dict, defaults: dict | None = None
) -> None:
    """Refuse to resume a run of another recipe or with other arguments, naming every
    difference (what a checkpoint holds only continues the run it came from).

    An argument the run's config lacks was added to realgap after the run started; the
    run behaved as its default, so it resumes when the argument still has ``defaults``'
    value (an upgrade mid-run must not strand a week of training)."""
    config_file = run.file("config.json")
    if not config_file.is_file():
        raise ConfigError(f"{run.path}: no config.json: not a realgap training run")
    saved = json.loads(config_file.read_text())
    if saved.get("recipe") != recipe:
        raise ConfigError(
            f"{run.path}: a {saved.get('recipe')!r} run cannot be resumed as {recipe!r}"
        )
    now = _as_json(values)
    added_since = {
        key: value for key, value in _as_json(defaults or {}).items() if key not in saved
    }
    saved = {**added_since, **saved}
    differences = [
        f"{key}: the run has {saved.get(key)!r}, now {now.get(key)!r}"
        for key in sorted(set(saved) | set(now))
        if key not in IGNORED_FOR_RESUME | {"recipe"} and saved.get(key) != now.get(key)
    ]
    if differences:
        raise ConfigError(
            f"{run.path}: cannot resume with other arguments: " + "; ".join(differences)
        )


def field_defaults(args_class: type) -> dict:
    """Each field of a dataclass ``Args`` that has a default, with that default."""
    defaults = {}
    for field in dataclasses.fields(args_class):
        if field.default is not dataclasses.MISSING:
            defaults[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            defaults[field.name] = field.default_factory()
    return defaults


def _as_json(values: dict) -> dict:
    return json.loads(json.dumps(values, default=str))


def resume_state(
    run: RunFolder,
    recipe: str,
    values: dict,
    checkpointer: Checkpointer,
    defaults: dict | None = None,
) -> dict:
    """The checkpoint to resume ``run`` from, after checking it is this run's and is not
    finished (a finished run has nothing to resume)."""
    check_resumable(run, recipe, values, defaults)
    if run.file("summary.json").exists():
        raise ConfigError(f"{run.path}: this run finished; nothing to resume")
    return checkpointer.load()


def resume_hint(out: str | Path) -> str:
    return f"resume with: realgap train --resume {out}"
