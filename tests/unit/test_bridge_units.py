"""Profiles and unit conversions: bad input names the key; conversions follow declared units."""

import numpy as np
import pytest

from realgap.bridge.fake import FakeArm, FakeWorld
from realgap.bridge.interfaces import VirtualClock
from realgap.bridge.profile import ProfileError, RealityProfile, load_profile, shipped_profiles
from realgap.bridge.units import Codecs, UnitError
from realgap.sim import robot


def test_shipped_profiles_load_and_differ_from_nominal():
    names = set(shipped_profiles())
    assert {"nominal", "typical_so101", "reference_pitfalls", "diagnostics_check"} <= names
    assert load_profile("nominal") == RealityProfile(name="nominal")
    typical = load_profile("typical_so101")
    assert typical.hardware.power_up_goal_zero and typical.hardware.camera_auto_exposure
    assert typical.twin.cube.mass_kg != RealityProfile().twin.cube.mass_kg


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("[cube]\nmass = 0.01\n", "cube.mass"),
        ("[servo]\nkp_scale = -1\n", "servo.kp_scale"),
        ("[joints]\nzero_offset_deg = [1, 2]\n", "joints.zero_offset_deg"),
        ("[camera]\nauto_exposure = 1\n", "camera.auto_exposure"),
        ("[servo]\nlatency_steps = 1.5\n", "servo.latency_steps"),
        ("[gripper]\nfriction = 1\n", "gripper"),
    ],
)
def test_bad_profile_names_the_key(tmp_path, text, names):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ProfileError, match=names.replace(".", r"\.")):
        RealityProfile.from_toml(path)


def test_unknown_profile_lists_shipped_ones():
    with pytest.raises(FileNotFoundError, match="typical_so101"):
        load_profile("no_such_profile")


def test_codecs_round_trip_every_unit():
    rad = np.array([0.3, -1.0, 0.5, 1.2, -2.0, 0.9])
    for unit in ("rad", "deg", "range_m100_100", "range_0_100"):
        codecs = Codecs((unit,) * 6)
        assert np.allclose(codecs.to_contract(codecs.from_contract(rad)), rad)
    lerobot = Codecs(("deg",) * 5 + ("range_0_100",))
    raw = lerobot.from_contract(rad)
    assert np.allclose(raw[:5], np.rad2deg(rad[:5]))
    low, high = robot.JOINT_RANGES[5]
    assert raw[5] == pytest.approx((rad[5] - low) / (high - low) * 100)


def test_unknown_unit_is_refused():
    with pytest.raises(UnitError, match="unknown unit 'percent'"):
        Codecs(("deg",) * 5 + ("percent",))


def test_unconverted_readings_are_refused():
    # 55 (a LeRobot gripper percentage) read as radians cannot be an SO-101 angle.
    with pytest.raises(UnitError, match="gripper"):
        Codecs(("rad",) * 6).check_in_range([0, 0, 0, 0, 0, 55.0])


class RenamedFollower(FakeArm):
    """The same driver after an upstream rename: conversions must still run."""

    robot_type = "so_follower_v2"


def test_gripper_conversion_follows_declared_units_not_names():
    # The reference bug: `if robot_type == "so101_follower": convert gripper` silently
    # stopped converting after a rename. Here the conversion comes from `units`.
    world = FakeWorld("Reach", clock=VirtualClock())
    for arm in (FakeArm(world), RenamedFollower(world)):
        arm.connect()
        raw = arm._read_positions()
        assert 0 <= raw[5] <= 100  # the backend speaks percent...
        rad = arm.read_positions()
        assert rad[5] == pytest.approx(world.readings()[5], abs=1e-6)  # ...the contract radians
        assert abs(rad[5] - raw[5]) > 0.5
