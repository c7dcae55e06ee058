"""Episode recordings: every step of every deployment, kept even when a run crashes.

Layout: one ``episode_NNN.npz`` per episode in a folder, holding arrays with
one row per control step --

============  ===============  ==============================================
key           shape            what
============  ===============  ==============================================
``time``      (T,)             clock seconds at the observation
``joints``    (T, 6)           joint readings, radians (contract order)
``targets``   (T, 6)           goals last commanded before the observation
``actions``   (T, 6)           the policy's action at that observation
``sent``      (T, 6)           goals actually sent after the safety layer
``images``    (T, R, R, 3)     the policy's image, uint8
``meta``      ()               JSON: task, world, spot, success, status, ...
============  ===============  ==============================================

:func:`load_episode` reads it back; ``status`` is ``complete`` or says why the
episode stopped early.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from realgap.errors import ConfigError

KEYS = ("time", "joints", "targets", "actions", "sent", "images")


@dataclass
class Episode:
    time: np.ndarray
    joints: np.ndarray
    targets: np.ndarray
    actions: np.ndarray
    sent: np.ndarray
    images: np.ndarray
    meta: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.time)


class EpisodeRecorder:
    """Collects one episode; :meth:`save` writes whatever was recorded so far."""

    def __init__(self, meta: dict | None = None):
        self.meta = dict(meta or {})
        self.rows: dict[str, list] = {key: [] for key in KEYS}

    def add(self, time: float, obs: dict, action, sent) -> None:
        state = np.asarray(obs["state"], dtype=np.float32)
        self.rows["time"].append(float(time))
        self.rows["joints"].append(state[:6])
        self.rows["targets"].append(state[6:])
        self.rows["actions"].append(np.asarray(action, dtype=np.float32))
        self.rows["sent"].append(np.asarray(sent, dtype=np.float32))
        self.rows["images"].append(np.asarray(obs["image"], dtype=np.uint8))

    def __len__(self) -> int:
        return len(self.rows["time"])

    def save(self, path: str | Path, **meta) -> Path:
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.meta.update(meta)
        self.meta.setdefault("status", "complete")
        self.meta["steps"] = len(self)
        arrays = {}
        for key, rows in self.rows.items():
            if rows:
                arrays[key] = np.stack(rows)
            else:
                arrays[key] = np.zeros((0, 6) if key != "time" else (0,), dtype=np.float32)
        if not self.rows["images"]:
            arrays["images"] = np.zeros((0, 1, 1, 3), dtype=np.uint8)
        np.savez_compressed(path, meta=np.array(json.dumps(self.meta, default=_jsonable)), **arrays)
        return path


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def load_episode(path: str | Path) -> Episode:
    """Read an episode written by :class:`EpisodeRecorder`."""
    with np.load(Path(path), allow_pickle=False) as data:
        missing = [key for key in (*KEYS, "meta") if key not in data]
        if missing:
            raise ConfigError(f"{path}: not a realgap episode (missing {missing})")
        return Episode(**{key: data[key] for key in KEYS}, meta=json.loads(str(data["meta"])))


def load_episodes(folder: str | Path) -> list[Episode]:
    """Every episode in a folder, in order."""
    paths = sorted(Path(folder).glob("episode_*.npz"))
    if not paths:
        raise FileNotFoundError(f"{folder}: no episode_*.npz recordings")
    return [load_episode(path) for path in paths]
