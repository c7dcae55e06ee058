"""bench_adapt names each arm's output folder by the profile's name, not its path."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _bench_adapt():
    spec = importlib.util.spec_from_file_location(
        "bench_adapt", ROOT / "benchmarks" / "bench_adapt.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_profile_given_by_path_gets_a_flat_folder_name():
    path = ROOT / "benchmarks" / "profiles" / "grey_cloth_webcam.toml"
    arms = _bench_adapt().named_arms(["typical_so101", str(path)])
    assert sorted(arms) == ["grey_cloth_webcam", "typical_so101"]
    assert all("/" not in name for name in arms)


def test_two_profiles_with_one_name_are_refused(tmp_path):
    copy = tmp_path / "typical_so101.toml"
    copy.write_text("")
    with pytest.raises(SystemExit, match="typical_so101"):
        _bench_adapt().named_arms(["typical_so101", str(copy)])
