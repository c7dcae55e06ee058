"""Random arms: seeded, inside their documented ranges, and written as profiles that load."""

import numpy as np
import pytest

from realgap.bridge.profile import load_profile
from realgap.bridge.random_arms import RANGES, sample_arm, write_arm
from realgap.cli import main


def test_the_generator_is_seeded_and_stays_inside_its_ranges():
    assert sample_arm(7) == sample_arm(7) and sample_arm(7) != sample_arm(8)
    seen = {key: [] for key in RANGES}
    for seed in range(40):
        twin = sample_arm(seed, placement=True).twin
        for key in RANGES:
            section, name = key.split(".")
            value = np.atleast_1d(np.asarray(getattr(getattr(twin, section), name), float))
            if key == "joints.zero_offset_deg":
                assert value[5] == 0.0  # the gripper's zero is LeRobot's
                value = value[:5]
            seen[key].extend(value)
    for key, (low, high) in RANGES.items():
        values = np.asarray(seen[key])
        assert values.min() >= low and values.max() <= high, key
        # Spread over the range, not stuck at one value.
        assert values.max() - values.min() > 0.4 * (high - low), key


def test_an_arm_without_placement_or_appearance_has_neither():
    arm = sample_arm(3)
    assert arm.twin.placement.offset_xy_m == (0.0, 0.0) and arm.appearance.is_plain
    assert not sample_arm(3, appearance=True).appearance.is_plain


def test_a_written_arm_loads_back_to_the_same_profile(tmp_path):
    for seed, extra in ((1, {}), (2, {"placement": True, "appearance": True})):
        arm = sample_arm(seed, **extra)
        loaded = load_profile(write_arm(arm, tmp_path / f"arm_{seed}.toml"))
        assert loaded.twin == arm.twin and loaded.hardware == arm.hardware
        assert loaded.appearance == arm.appearance and loaded.name == arm.name


def test_profile_sample_and_show(tmp_path, capsys):
    out = tmp_path / "arm.toml"
    assert main(["profile", "sample", "--seed", "5", "--out", str(out)]) == 0
    assert load_profile(out).twin == sample_arm(5).twin
    assert main(["profile", "show", str(out)]) == 0
    assert 'name = "random_arm_5"' in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["profile", "sample", "--out", str(out)])  # the seed is required
