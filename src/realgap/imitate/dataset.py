"""Demonstration datasets in the LeRobot dataset layout (v3.0), written and read offline.

realgap writes the layout itself (pyarrow + pandas), so datasets can be made on
any Python; ``LeRobotDataset(repo_id, root=...)`` loads them unchanged (tested
in ``tests/real``), and so does :func:`load_demos` without LeRobot::

    meta/info.json                              features, fps, counts, paths
    meta/stats.json                             per-feature min/max/mean/std/count/quantiles
    meta/tasks.parquet                          task text <-> task_index
    meta/episodes/chunk-000/file-000.parquet    one row per episode: length, index range
    data/chunk-000/file-000.parquet             one row per frame

Frames hold ``observation.image`` (the policy's 16x16 wrist image, PNG bytes),
``observation.state`` (12 joint numbers, as the policy sees them) and
``action`` (6 absolute joint targets, radians: what was commanded next), plus
LeRobot's ``timestamp``, ``frame_index``, ``episode_index``, ``index`` and
``task_index``.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from realgap.errors import ConfigError

CODEBASE_VERSION = "v3.0"
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"
EPISODES_PATH = "meta/episodes/chunk-000/file-000.parquet"
IMAGE, STATE, ACTION = "observation.image", "observation.state", "action"
QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)


@dataclass
class Demos:
    """A dataset in memory: frames of all episodes, concatenated."""

    images: np.ndarray  # (N, R, R, 3) uint8
    states: np.ndarray  # (N, 12) float32
    actions: np.ndarray  # (N, 6) float32, absolute joint targets
    episode: np.ndarray  # (N,) episode index
    fps: float
    task: str
    meta: dict

    @property
    def episodes(self) -> int:
        return int(self.episode.max()) + 1 if len(self.episode) else 0

    def select(self, episodes) -> Demos:
        """Only the given episode indices (renumbered from 0)."""
        episodes = list(episodes)
        keep = np.isin(self.episode, episodes)
        renumber = {old: new for new, old in enumerate(episodes)}
        return Demos(
            self.images[keep],
            self.states[keep],
            self.actions[keep],
            np.array([renumber[e] for e in self.episode[keep]]),
            self.fps,
            self.task,
            self.meta,
        )


class DemoWriter:
    """Collect episodes, then :meth:`finalize` writes the dataset folder."""

    def __init__(self, root: str | Path, fps: float, task: str, robot_type: str = "so101"):
        self.root = Path(root)
        if (self.root / "meta" / "info.json").exists():
            raise FileExistsError(f"{self.root} already holds a dataset")
        self.fps, self.task, self.robot_type = fps, task, robot_type
        self.episodes: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def add_episode(self, images, states, actions) -> None:
        images = np.asarray(images, dtype=np.uint8)
        states = np.asarray(states, dtype=np.float32)
        actions = np.asarray(actions, dtype=np.float32)
        if not len(images) == len(states) == len(actions) > 0:
            raise ConfigError("an episode needs as many images, states and actions (at least 1)")
        if states.shape[1:] != (12,) or actions.shape[1:] != (6,) or images.shape[-1] != 3:
            raise ConfigError(
                f"expected images (T, R, R, 3), states (T, 12), actions (T, 6); got "
                f"{images.shape}, {states.shape}, {actions.shape}"
            )
        self.episodes.append((images, states, actions))

    def finalize(self) -> Path:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if not self.episodes:
            raise ConfigError("no episodes to write")
        images = np.concatenate([e[0] for e in self.episodes])
        states = np.concatenate([e[1] for e in self.episodes])
        actions = np.concatenate([e[2] for e in self.episodes])
        lengths = [len(e[0]) for e in self.episodes]
        episode = np.repeat(np.arange(len(lengths)), lengths)
        frame = np.concatenate([np.arange(n) for n in lengths])
        size = images.shape[1]
        columns = {
            IMAGE: pa.array(
                [{"bytes": _png(image), "path": None} for image in images],
                pa.struct([("bytes", pa.binary()), ("path", pa.string())]),
            ),
            STATE: pa.FixedSizeListArray.from_arrays(pa.array(states.ravel()), 12),
            ACTION: pa.FixedSizeListArray.from_arrays(pa.array(actions.ravel()), 6),
            "timestamp": pa.array((frame / self.fps).astype(np.float32)),
            "frame_index": pa.array(frame.astype(np.int64)),
            "episode_index": pa.array(episode.astype(np.int64)),
            "index": pa.array(np.arange(len(frame), dtype=np.int64)),
            "task_index": pa.array(np.zeros(len(frame), dtype=np.int64)),
        }
        table = pa.table(columns).replace_schema_metadata(
            {"huggingface": json.dumps({"info": {"features": _hf_features()}})}
        )
        data = self.root / DATA_PATH.format(chunk_index=0, file_index=0)
        data.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, data)
        self._write_meta(lengths, size, images, states, actions, frame, episode)
        return self.root

    def _write_meta(self, lengths, size, images, states, actions, frame, episode) -> None:
        import pandas as pd

        meta = self.root / "meta"
        meta.mkdir(parents=True, exist_ok=True)
        total = int(sum(lengths))
        features = {
            IMAGE: {
                "dtype": "image",
                "shape": [size, size, 3],
                "names": ["height", "width", "channels"],
            },
            STATE: {"dtype": "float32", "shape": [12], "names": None},
            ACTION: {"dtype": "float32", "shape": [6], "names": None},
            "timestamp": {"dtype": "float32", "shape": [1], "names": None},
            **{
                k: {"dtype": "int64", "shape": [1], "names": None}
                for k in ("frame_index", "episode_index", "index", "task_index")
            },
        }
        info = {
            "codebase_version": CODEBASE_VERSION,
            "fps": self.fps,
            "features": features,
            "total_episodes": len(lengths),
            "total_frames": total,
            "total_tasks": 1,
            "chunks_size": 1000,
            "data_files_size_in_mb": 100,
            "video_files_size_in_mb": 200,
            "data_path": DATA_PATH,
            "video_path": None,
            "robot_type": self.robot_type,
            "splits": {"train": f"0:{len(lengths)}"},
        }
        (meta / "info.json").write_text(json.dumps(info, indent=4))
        pixels = images.reshape(-1, 3).astype(np.float64) / 255.0
        stats = {
            IMAGE: feature_stats(pixels, image=True, count=total),
            STATE: feature_stats(states),
            ACTION: feature_stats(actions),
            "timestamp": feature_stats((frame / self.fps)[:, None]),
            "frame_index": feature_stats(frame[:, None]),
            "episode_index": feature_stats(episode[:, None]),
            "index": feature_stats(np.arange(total)[:, None]),
            "task_index": feature_stats(np.zeros((total, 1))),
        }
        (meta / "stats.json").write_text(json.dumps(stats, indent=2))
        pd.DataFrame({"task_index": [0]}, index=pd.Index([self.task], name="task")).to_parquet(
            meta / "tasks.parquet"
        )
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        episodes = pd.DataFrame(
            {
                "episode_index": np.arange(len(lengths)),
                "tasks": [[self.task]] * len(lengths),
                "length": lengths,
                "data/chunk_index": 0,
                "data/file_index": 0,
                "dataset_from_index": starts,
                "dataset_to_index": starts + np.asarray(lengths),
                "meta/episodes/chunk_index": 0,
                "meta/episodes/file_index": 0,
            }
        )
        path = self.root / EPISODES_PATH
        path.parent.mkdir(parents=True, exist_ok=True)
        episodes.to_parquet(path, index=False)


def load_demos(root: str | Path) -> Demos:
    """Read a dataset written by :class:`DemoWriter` (or by LeRobot, with image
    features stored as images rather than videos) without LeRobot."""
    import pyarrow.parquet as pq
    from PIL import Image

    root = Path(root)
    info_path = root / "meta" / "info.json"
    if not info_path.exists():
        raise FileNotFoundError(f"{root}: not a LeRobot dataset (no meta/info.json)")
    info = json.loads(info_path.read_text())
    missing = [k for k in (IMAGE, STATE, ACTION) if k not in info["features"]]
    if missing:
        raise ConfigError(f"{root}: dataset lacks the features {missing}")
    if info["features"][IMAGE]["dtype"] != "image":
        raise ConfigError(f"{root}: {IMAGE} is stored as {info['features'][IMAGE]['dtype']}")
    tables = [pq.read_table(p) for p in sorted((root / "data").glob("chunk-*/file-*.parquet"))]
    import pyarrow as pa

    table = pa.concat_tables(tables)
    images = np.stack(
        [
            np.asarray(Image.open(io.BytesIO(cell["bytes"])).convert("RGB"))
            for cell in table[IMAGE].to_pylist()
        ]
    )
    tasks = pq.read_table(root / "meta" / "tasks.parquet").to_pandas()
    return Demos(
        images=images,
        states=np.asarray(table[STATE].to_pylist(), dtype=np.float32),
        actions=np.asarray(table[ACTION].to_pylist(), dtype=np.float32),
        episode=np.asarray(table["episode_index"].to_pylist()),
        fps=float(info["fps"]),
        task=str(tasks.index[0]),
        meta=info,
    )


def _png(image: np.ndarray) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, format="PNG")
    return buffer.getvalue()


def _hf_features() -> dict:
    def value(dtype):
        return {"dtype": dtype, "_type": "Value"}

    return {
        IMAGE: {"_type": "Image"},
        STATE: {"feature": value("float32"), "length": 12, "_type": "List"},
        ACTION: {"feature": value("float32"), "length": 6, "_type": "List"},
        "timestamp": value("float32"),
        **{k: value("int64") for k in ("frame_index", "episode_index", "index", "task_index")},
    }


def feature_stats(values: np.ndarray, image: bool = False, count: int | None = None) -> dict:
    """LeRobot's per-feature statistics; image stats are per channel, shaped (3, 1, 1)."""
    values = np.asarray(values, dtype=np.float64)
    out = {
        "min": values.min(0),
        "max": values.max(0),
        "mean": values.mean(0),
        "std": values.std(0),
    }
    for q in QUANTILES:
        out[f"q{round(q * 100):02d}"] = np.quantile(values, q, axis=0)
    shape = (3, 1, 1) if image else (-1,)
    result = {k: np.asarray(v).reshape(shape).tolist() for k, v in out.items()}
    result["count"] = [int(count if count is not None else len(values))]
    return result
