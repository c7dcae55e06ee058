"""The placement check flags an operator measuring from the base's back edge, and only
then (first frames of a matched evaluation on fake arms)."""

import pytest

from realgap.bridge.profile import RealityProfile, load_profile, shipped_profiles
from realgap.eval.matched import fake_arm_placement_check
from realgap.policy.checkpoint import save_policy
from realgap.policy.contract import PolicyContract
from realgap.policy.networks import VisualPolicy
from realgap.sim.calibration import Calibration

CONTRACT = PolicyContract(
    task="Reach", image_size=16, control_hz=10.0, action_scale=(0.1, 0.1, 0.1, 0.1, 0.1, 0.2)
)
BACK_EDGE = {"placement": {"offset_xy_m": [-0.0388353, 0.0]}}
MOVED_CAMERA = {"camera": {"offset_m": [0.005, -0.004, 0.002], "rotation_deg": [4, -3, 1.5]}}


def check(tmp_path, profile: RealityProfile, calibration: Calibration | None = None) -> dict:
    policy = save_policy(tmp_path / "policy", VisualPolicy(), CONTRACT)
    return fake_arm_placement_check(policy, profile, tmp_path, calibration)


@pytest.mark.parametrize(
    ("name", "data", "flagged"),
    [
        ("back_edge", BACK_EDGE, True),
        ("moved_camera_and_back_edge", {**BACK_EDGE, **MOVED_CAMERA}, True),
        ("moved_camera", MOVED_CAMERA, False),
        ("nominal", {}, False),
    ],
)
def test_placement_check(tmp_path, name, data, flagged):
    result = check(tmp_path, RealityProfile.from_dict(data, name=name))
    assert result["episodes_used"] >= 8
    assert result["flagged"] is flagged, result
    # The interval is the mean +- 1.96 standard errors (adapt measures with the latter).
    for (low, high), error in zip(result["ci95_cm"], result["standard_error_cm"]):
        assert high - low == pytest.approx(2 * 1.96 * error, abs=0.02)
    if flagged:
        assert 3.0 < result["offset_cm"] < 5.5 and "rotation axis" in result["note"]
    else:
        assert result["offset_cm"] < 2.0


@pytest.mark.parametrize("name", sorted(shipped_profiles()))
def test_shipped_profiles_are_flagged_only_where_the_operator_is_off(tmp_path, name):
    """As ``realgap adapt`` judges it: with the arm's camera mount and joint offsets
    known (here, the truth), only the profile with a placement offset is flagged."""
    profile = load_profile(name)
    camera = profile.twin.camera
    known = Calibration()
    known.measure("joints.zero_offset_deg", profile.twin.joints.zero_offset_deg)
    known.measure("camera.offset_m", camera.offset_m)
    known.measure("camera.rotation_deg", camera.rotation_deg)
    known.measure("camera.fov_deg_delta", camera.fov_deg_delta)
    result = check(tmp_path, profile, known)
    off = any(profile.twin.placement.offset_xy_m)
    assert result["flagged"] is off, result
    if off:
        expected = 100 * abs(profile.twin.placement.offset_xy_m[0])
        assert abs(result["offset_cm"] - expected) < 0.6


def test_a_calibration_without_the_camera_mount_still_locates_the_camera(tmp_path):
    # A hand-eye fit that was refused (a desk the colour of the jaws) leaves the mount
    # out of calibration.json; the check must then locate the camera from the jaws, not
    # take the nominal mount and blame the operator for a moved camera (a random arm's
    # calibration once read 4.9 cm that way).
    servos_only = Calibration()
    servos_only.measure("servo.kp_scale", 0.7, 0.05)
    result = check(tmp_path, RealityProfile.from_dict(MOVED_CAMERA, name="moved"), servos_only)
    assert result["flagged"] is False, result
    assert "camera_from_jaws" in result and result["offset_cm"] < 2.0
    assert "zeros uncalibrated" in result["camera"]
