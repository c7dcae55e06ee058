"""Demonstration datasets: the LeRobot v3.0 layout, written and read back offline."""

import json

import numpy as np
import pytest

from realgap.imitate.dataset import DemoWriter, load_demos


def write(root, lengths=(5, 7), seed=0):
    rng = np.random.default_rng(seed)
    writer = DemoWriter(root, fps=10, task="pick up the cube")
    episodes = []
    for n in lengths:
        episode = (
            rng.integers(0, 256, (n, 16, 16, 3), dtype=np.uint8),
            rng.standard_normal((n, 12)).astype(np.float32),
            rng.standard_normal((n, 6)).astype(np.float32),
        )
        writer.add_episode(*episode)
        episodes.append(episode)
    writer.finalize()
    return episodes


def test_round_trip_is_exact(tmp_path):
    episodes = write(tmp_path / "demos")
    demos = load_demos(tmp_path / "demos")
    assert demos.episodes == 2 and demos.task == "pick up the cube" and demos.fps == 10
    assert np.array_equal(demos.images, np.concatenate([e[0] for e in episodes]))  # PNG: lossless
    assert np.array_equal(demos.states, np.concatenate([e[1] for e in episodes]))
    assert np.array_equal(demos.actions, np.concatenate([e[2] for e in episodes]))
    second = demos.select([1])
    assert second.episodes == 1 and len(second.actions) == 7


def test_layout_is_lerobots(tmp_path):
    write(tmp_path / "demos")
    root = tmp_path / "demos"
    info = json.loads((root / "meta" / "info.json").read_text())
    assert info["codebase_version"] == "v3.0" and info["total_frames"] == 12
    assert info["features"]["observation.image"]["dtype"] == "image"
    for part in (
        "meta/stats.json",
        "meta/tasks.parquet",
        "meta/episodes/chunk-000/file-000.parquet",
        "data/chunk-000/file-000.parquet",
    ):
        assert (root / part).exists(), part
    stats = json.loads((root / "meta" / "stats.json").read_text())
    assert np.array(stats["observation.image"]["mean"]).shape == (3, 1, 1)
    assert stats["action"]["count"] == [12]


def test_bad_input_is_refused(tmp_path):
    writer = DemoWriter(tmp_path / "demos", fps=10, task="t")
    with pytest.raises(ValueError, match="states"):
        writer.add_episode(np.zeros((3, 16, 16, 3)), np.zeros((3, 7)), np.zeros((3, 6)))
    with pytest.raises(ValueError, match="no episodes"):
        writer.finalize()
    write(tmp_path / "full")
    with pytest.raises(FileExistsError):
        DemoWriter(tmp_path / "full", fps=10, task="t")
    with pytest.raises(FileNotFoundError, match="not a LeRobot dataset"):
        load_demos(tmp_path)
