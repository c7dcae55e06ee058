"""The hand-eye calibration recovers an arm with every difference at once (the shipped
``workbench_so101`` profile: moved and wider camera, grey-brown desk, zero errors on
every joint, soft damped servos, two commands of latency) within the issue's
tolerances, and the truth falls inside the reported uncertainties."""

import numpy as np
import pytest

from realgap.bridge.profile import load_profile
from realgap.bridge.worlds import open_fake_world
from realgap.diagnose.recording import record_calibration
from realgap.diagnose.run import diagnose_recording
from realgap.sim.calibration import Calibration

PROFILE = "workbench_so101"


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("recovery")
    recording = record_calibration(open_fake_world("Reach", PROFILE)).save(folder / "rec.npz")
    diagnose_recording(recording, folder)
    return Calibration.load(folder / "calibration.json"), load_profile(PROFILE).twin


def test_geometry_is_recovered_within_tolerance_and_uncertainty(calibrated):
    calibration, truth = calibrated
    measured, sigma = calibration.values, calibration.uncertainty
    # The tolerance on every joint; lift and elbow needed the wide pose sweep
    # (with the old +-0.35 rad one, lift came out 0.85 degrees off here).
    joint_tolerance = 0.5
    cases = [
        ("joints.zero_offset_deg", truth.joints.zero_offset_deg, joint_tolerance),
        ("camera.offset_m", truth.camera.offset_m, 0.0015),
        ("camera.rotation_deg", truth.camera.rotation_deg, 1.0),
        ("camera.fov_deg_delta", truth.camera.fov_deg_delta, 1.0),
    ]
    for key, true_value, tolerance in cases:
        error = np.abs(np.asarray(measured[key]) - np.asarray(true_value))
        assert np.all(error < np.asarray(tolerance)), (key, measured[key], true_value)
        assert np.all(error <= 3 * np.asarray(sigma[key]) + 1e-9), (key, error, sigma[key])


def test_servos_tone_and_background_are_recovered(calibrated):
    calibration, truth = calibrated
    values = calibration.values
    assert values["servo.kp_scale"] == pytest.approx(truth.servo.kp_scale, rel=0.15)
    assert values["servo.damping_scale"] == pytest.approx(truth.servo.damping_scale, rel=0.15)
    assert values["servo.latency_steps"] == truth.servo.latency_steps
    assert values["camera.exposure_scale"] == pytest.approx(truth.camera.exposure_scale, rel=0.05)
    assert np.allclose(values["camera.background_rgb"], truth.camera.background_rgb, atol=0.03)


@pytest.mark.slow
def test_the_coarse_fits_beside_each_other_give_the_fit_one_after_the_other(tmp_path, monkeypatch):
    # The two coarse fits run in a thread of their own where the machine allows: the
    # result must not depend on it.
    from realgap.diagnose import hand_eye

    if not hand_eye.concurrent_rendering():
        pytest.skip("one core or an on-screen OpenGL: the fits run one after the other")
    recording = record_calibration(open_fake_world("Reach", PROFILE), poses=16)
    together = hand_eye.fit_hand_eye(recording, bootstrap=20)
    monkeypatch.setattr(hand_eye, "concurrent_rendering", lambda: False)
    apart = hand_eye.fit_hand_eye(recording, bootstrap=20)
    assert np.array_equal(together.offsets_rad, apart.offsets_rad)
    assert np.array_equal(together.mount_offset_m, apart.mount_offset_m)
    assert np.array_equal(together.mount_rotation_deg, apart.mount_rotation_deg)
