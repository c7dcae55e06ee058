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
import time
from dataclasses import dataclass
from pathlib import Path

CONFIG = "config.json"
METRICS = "metrics.csv"
SUMMARY = "summary.json"
TEACHER = "teacher.pt"
POLICY = "policy"
DEPLOY = "deploy.json"
CALIBRATION = "calibration.json"
DIAGNOSIS = "diagnosis.json"
DIAGNOSIS_SECTION = "diagnosis.section.html"


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
        """Write ``data`` as ``name`` (creating the folder)."""
        self.path.mkdir(parents=True, exist_ok=True)
        target = self.path / name
        target.write_text(json.dumps(data, indent=2, default=_jsonable))
        return target

    def write_config(self, recipe: str, values: dict) -> Path:
        return self.write_json(CONFIG, {"recipe": recipe, **values})

    def metrics(self, columns: list[str], started: float | None = None) -> MetricsWriter:
        self.path.mkdir(parents=True, exist_ok=True)
        return MetricsWriter(self.path / METRICS, columns, started)

    # -- finding files again (report, resume) ------------------------------------------
    def eval_files(self) -> list[Path]:
        return sorted(self.path.glob("**/eval_*.json"))

    def episode_folders(self) -> list[Path]:
        return sorted(p for p in self.path.glob("**/episodes_*") if p.is_dir())


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
    crashed run keeps its curve) and gets ``seconds`` since ``started``."""

    def __init__(self, path: Path, columns: list[str], started: float | None = None):
        self.started = time.perf_counter() if started is None else started
        self.columns = [*columns, *(["seconds"] if "seconds" not in columns else [])]
        self.handle = path.open("w", newline="")
        self.writer = csv.DictWriter(self.handle, fieldnames=self.columns)
        self.writer.writeheader()

    def log(self, row: dict) -> None:
        row = {**row, "seconds": round(time.perf_counter() - self.started, 1)}
        self.writer.writerow(row)
        self.handle.flush()

    def close(self) -> None:
        self.handle.close()

    def __enter__(self) -> MetricsWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
