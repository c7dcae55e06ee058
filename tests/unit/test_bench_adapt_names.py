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


def test_a_random_arms_rig_gives_friction_only_when_asked(tmp_path):
    from realgap.adapt.rig import load_rig
    from realgap.bridge.random_arms import sample_arm

    profile = sample_arm(330, appearance=True)
    bench = _bench_adapt()
    for friction in (False, True):
        path = tmp_path / f"rig_{friction}.toml"
        path.write_text(bench.rig_text(profile, friction=friction))
        rig = load_rig(path)
        assert rig["cube.mass_kg"][0] == profile.twin.cube.mass_kg
        assert rig["scene.shadows"][0] == profile.appearance.lights.shadows
        assert ("cube.friction" in rig) is friction and ("fingers.friction" in rig) is friction
    assert rig["cube.friction"] == (profile.twin.cube.friction, 0.15)
