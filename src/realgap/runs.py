"""The run folder: the one owner of where a run's files go, and its metrics writer.

Every command that writes results (train, eval, deploy, diagnose, demo, cotrain)
writes into a run folder laid out as::

    config.json           what was asked for (recipe and arguments)
    metrics.csv           training curve, one row per update (MetricsWriter)
    summary.json          the run's headline figures
    teacher.pt            the privileged teacher (distill)
    policy/               the policy: weights, contract.json, policy.onnx
    eval_<world>.json     one matched evaluation per world
    episodes_<world>/     its recorded episodes (episode_000.npz, ...)
    deploy.json           a deployment session (episodes beside it)
    calibration.json      what diagnostics measured (a partial twin)
    diagnosis.json        the diagnostics' full result (+ diagnosis.section.html)

``realgap report`` finds the same files through this module.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from realgap.errors import ConfigError

CONFIG = "config.json"
METRICS = "metrics.csv"
SUMMARY = "summary.json"
TEACHER = "teacher.pt"
POLICY = "policy"
DEPLOY = "deploy.json"
CALIBRATION = "calibration.json"
DIAGNOSIS = "diagnosis.json"
DIAGNOSIS_SECTION = "diagnosis.section.html"
SAFETY_ALERT = "safety_alert.txt"

EARLIER_RESULTS = ("refuse", "resume", "overwrite")
"""What a command does with an earlier run's results in its output folder."""


@dataclass(frozen=True)
class RunFolder:
    """Paths inside one run folder (created on first write)."""

    path: Path

    def __init__(self, path: str | Path):
        object.__setattr__(self, "path", Path(path))

    def file(self, name: str) -> Path:
        return self.path / name

    @property
    def policy(self) -> Path:
        return self.path / POLICY

    def eval_file(self, tag: str) -> Path:
        return self.path / f"eval_{tag}.json"

    def episodes_folder(self, tag: str) -> Path:
        return self.path / f"episodes_{tag}"

    def write_json(self, name: str, data) -> Path:
        """Write ``data`` as ``name`` (creating the folder), atomically: a reader never
        sees half a file, and a crash mid-write keeps the previous version."""
        self.path.mkdir(parents=True, exist_ok=True)
        target = self.path / name
        partial = target.with_name(target.name + ".tmp")
        partial.write_text(json.dumps(data, indent=2, default=_jsonable))
        partial.replace(target)
        return target

    def write_config(self, recipe: str, values: dict) -> Path:
        return self.write_json(CONFIG, {"recipe": recipe, **values})

    def metrics(
        self, columns: list[str], started: float | None = None, keep_rows: int | None = None
    ) -> MetricsWriter:
        self.path.mkdir(parents=True, exist_ok=True)
        return MetricsWriter(self.path / METRICS, columns, started, keep_rows)

    # -- finding files again (report, resume) ------------------------------------------
    def eval_files(self) -> list[Path]:
        return sorted(self.path.glob("**/eval_*.json"))

    def episode_folders(self) -> list[Path]:
        return sorted(p for p in self.path.glob("**/episodes_*") if p.is_dir())


def claim(paths: list[Path], mode: str = "refuse") -> bool:
    """Decide what happens to an earlier run's results at ``paths`` before a new run
    writes there: ``refuse`` raises :class:`ConfigError` naming them, ``overwrite``
    deletes them, ``resume`` keeps them. Returns whether earlier results are kept."""
    if mode not in EARLIER_RESULTS:
        raise ConfigError(f"earlier results: {mode!r} is not one of {list(EARLIER_RESULTS)}")
    found = [path for path in paths if path.exists()]
    if not found:
        return False
    if mode == "refuse":
        names = ", ".join(str(path) for path in found[:3])
        raise ConfigError(
            f"{names} hold(s) an earlier run's results; pass --resume to continue it or "
            "--overwrite to replace it (or choose another --out)"
        )
    if mode == "overwrite":
        for path in found:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
        return False
    return True


def check_writable_folder(path: str | Path) -> Path:
    """Create ``path`` if needed and prove a file can be written there, before any
    work starts (a run that cannot save its results must not move an arm)."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{path}: exists and is not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
        # A probe of its own: two runs checking one folder at once must not delete
        # each other's (a fixed name made the second fail with "No such file").
        with tempfile.NamedTemporaryFile(dir=path, prefix=".realgap-write-check-"):
            pass
    except OSError as error:
        raise ConfigError(f"{path}: cannot write results here ({error.strerror})") from None
    return path


def check_writable_file(path: str | Path) -> Path:
    """``path`` can be created or replaced as a file (its folder is made if needed)."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{path}: is a folder; give a file name")
    check_writable_folder(path.parent if str(path.parent) else Path("."))
    if path.exists() and not os.access(path, os.W_OK):
        raise ConfigError(f"{path}: not writable")
    return path


def _jsonable(value):
    """numpy numbers and arrays as JSON numbers and lists; anything else as text."""
    if hasattr(value, "tolist"):
        return value.tolist()
    return str(value)


def episode_file(folder: str | Path, index: int) -> Path:
    """The recording of episode ``index`` in an episodes folder."""
    return Path(folder) / f"episode_{index:03d}.npz"


def world_tag(folder: Path) -> str:
    """The world an ``episodes_<world>`` folder belongs to."""
    return folder.name.removeprefix("episodes_")


class MetricsWriter:
    """``metrics.csv`` with fixed columns: every row is flushed as it is logged (a
    crashed run keeps its curve) and gets ``seconds`` since ``started``. A resumed run
    keeps the first ``keep_rows`` rows (those its checkpoint had seen) and appends."""

    def __init__(
        self,
        path: Path,
        columns: list[str],
        started: float | None = None,
        keep_rows: int | None = None,
    ):
        self.started = time.perf_counter() if started is None else started
        self.columns = [*columns, *(["seconds"] if "seconds" not in columns else [])]
        kept: list[str] = []
        if keep_rows is not None and path.exists():
            kept = path.read_text().splitlines()[1 : 1 + keep_rows]
        self.rows = len(kept)
        self.handle = path.open("w", newline="")
        self.writer = csv.DictWriter(self.handle, fieldnames=self.columns)
        self.writer.writeheader()
        for line in kept:  # the csv module ends rows with \r\n
            self.handle.write(line + "\r\n")
        self.handle.flush()

    def log(self, row: dict) -> None:
        row = {**row, "seconds": round(time.perf_counter() - self.started, 1)}
        self.writer.writerow(row)
        self.handle.flush()
        self.rows += 1

    def close(self) -> None:
        self.handle.close()

    def __enter__(self) -> MetricsWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
