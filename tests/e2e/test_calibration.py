"""Gap diagnostics recover a fake arm's hidden values through the command line: the
shipped ``workbench_so101`` profile, every calibratable difference at once (a moved and
wider camera, a grey-brown desk, zero errors on every joint, soft damped servos, two
commands of latency, 1.2x exposure), within the issue's tolerances, with the truth
inside the reported uncertainties."""

import json
import re
from dataclasses import replace

import numpy as np
import pytest

from realgap.bridge.profile import load_profile
from realgap.cli import main
from realgap.diagnose.camera import diagnose_camera
from realgap.diagnose.hand_eye import MEASURED_CUBE_SIGMA_M, HandEyeFit, fit_hand_eye
from realgap.diagnose.recording import CalibrationRecording
from realgap.diagnose.servos import friction_sigma
from realgap.errors import ConfigError
from realgap.sim import robot
from realgap.sim.calibration import Calibration
from realgap.sim.twin import TwinParams
from realgap.sim.twin_camera import TwinCamera

PROFILE = "workbench_so101"
TRUTH = load_profile(PROFILE).twin


@pytest.fixture(scope="module")
def diagnosed(tmp_path_factory):
    # One session and one fit serve every test below: a calibration is the slowest
    # thing the default tier runs.
    folder = tmp_path_factory.mktemp("calibration")
    recording = folder / "recording.npz"
    args = ["calibrate", "record", "--world", "fake", "--profile", PROFILE]
    assert main([*args, "--out", str(recording)]) == 0
    # The profile's cube is the nominal one, measured as such (the fit draws it so).
    out = ["--out", str(folder / "run"), "--cube-size", "0.025"]
    assert main(["diagnose", "all", str(recording), *out]) == 0
    return folder


def test_geometry_is_recovered_within_tolerance_and_uncertainty(diagnosed):
    calibration = Calibration.load(diagnosed / "run" / "calibration.json")
    measured, sigma = calibration.values, calibration.uncertainty
    # The tolerance on every joint; lift and elbow needed the wide pose sweep
    # (with the old +-0.35 rad one, lift came out 0.85 degrees off here).
    cases = [
        ("joints.zero_offset_deg", TRUTH.joints.zero_offset_deg, 0.5),
        ("camera.offset_m", TRUTH.camera.offset_m, 0.0015),
        ("camera.rotation_deg", TRUTH.camera.rotation_deg, 1.0),
        ("camera.fov_deg_delta", TRUTH.camera.fov_deg_delta, 1.0),
    ]
    for key, true_value, tolerance in cases:
        error = np.abs(np.asarray(measured[key]) - np.asarray(true_value))
        assert np.all(error < np.asarray(tolerance)), (key, measured[key], true_value)
        assert np.all(error <= 3 * np.asarray(sigma[key]) + 1e-9), (key, error, sigma[key])


def test_servos_tone_and_background_are_recovered(diagnosed):
    values = Calibration.load(diagnosed / "run" / "calibration.json").values
    assert values["servo.kp_scale"] == pytest.approx(TRUTH.servo.kp_scale, rel=0.15)
    assert values["servo.damping_scale"] == pytest.approx(TRUTH.servo.damping_scale, rel=0.15)
    assert values["servo.latency_steps"] == TRUTH.servo.latency_steps
    assert values["camera.exposure_scale"] == pytest.approx(TRUTH.camera.exposure_scale, rel=0.05)
    assert np.allclose(values["camera.background_rgb"], TRUTH.camera.background_rgb, atol=0.03)


def test_the_diagnosis_says_what_it_found_and_the_report_shows_it(diagnosed):
    result = json.loads((diagnosed / "run" / "diagnosis.json").read_text())
    offsets = np.array(result["joints"]["offsets_deg"][:5])
    assert np.all(np.abs(offsets - TRUTH.joints.zero_offset_deg[:5]) < 0.5), offsets
    assert result["camera"]["exposure_gain_needed"] == pytest.approx(1.2, rel=0.10)
    assert result["servos"]["latency_steps"] == 2
    assert result["joints"]["cube_size_m"] == 0.025
    assert result["joints"]["cube_size_sigma_m"] == MEASURED_CUBE_SIGMA_M
    # The camera was re-mounted: the diagnosis reads where to (the jaws were in view).
    mount_mm = np.multiply(TRUTH.camera.offset_m, 1000)
    assert np.allclose(result["camera"]["mount_offset_mm"], mount_mm, atol=1.5)
    assert not result["camera"]["warnings"]
    calibration = json.loads((diagnosed / "run" / "calibration.json").read_text())
    assert calibration["twin"]["servo"]["latency_steps"] == 2
    assert main(["report", str(diagnosed / "run")]) == 0
    page = (diagnosed / "run" / "report.html").read_text()
    assert "Diagnosis" in page and "Joint zero offsets" in page


def test_a_cube_size_in_millimetres_is_refused_in_one_line(diagnosed, capsys):
    recording, out = diagnosed / "recording.npz", diagnosed / "mm.json"
    argv = ["calibrate", "joints", str(recording), "--out", str(out), "--cube-size", "25"]
    assert main(argv) != 0
    printed = capsys.readouterr()
    message = (printed.out + printed.err).strip().splitlines()
    assert any("--cube-size: cube.size_m" in line for line in message), message
    assert not out.exists()


def test_a_cube_size_uncertainty_in_millimetres_is_refused(diagnosed):
    recording = CalibrationRecording.load(diagnosed / "recording.npz")
    with pytest.raises(ConfigError, match=re.escape("half a millimetre is 0.0005")):
        fit_hand_eye(recording, cube_size_m=0.025, cube_size_sigma_m=0.5)


@pytest.mark.slow  # the same fits as `diagnose all` above, again through two commands
def test_servo_and_joint_commands_update_one_calibration_file(diagnosed):
    recording, out = diagnosed / "recording.npz", diagnosed / "calibration.json"
    assert main(["calibrate", "joints", str(recording), "--out", str(out)]) == 0
    assert main(["calibrate", "servos", str(recording), "--out", str(out)]) == 0
    calibration = json.loads(out.read_text())
    assert calibration["twin"]["joints"]["zero_offset_deg"][0] == pytest.approx(2.5, abs=0.5)
    assert calibration["twin"]["servo"]["latency_steps"] == 2
    # `calibrate servos` keeps what `diagnose all` keeps: the torque cap and the sigmas.
    servo, sigma = calibration["twin"]["servo"], calibration["uncertainty"]["servo"]
    assert servo["torque_limit_scale"] > 0 and sigma["kp_scale"] > 0
    assert sigma["frictionloss_scale"] == friction_sigma(servo["frictionloss_scale"])


def test_a_nominal_arm_shows_no_offsets(tmp_path):
    recording = tmp_path / "nominal.npz"
    args = ["calibrate", "record", "--world", "fake", "--profile", "nominal", "--poses", "16"]
    assert main([*args, "--out", str(recording)]) == 0
    fit = fit_hand_eye(CalibrationRecording.load(recording))
    offsets = np.abs(fit.offsets_deg)
    assert np.all(offsets < [0.5, 1.0, 1.0, 0.5, 0.5, 0.5]), fit.offsets_deg
    assert np.all(offsets <= 3 * np.array(fit.offsets_sigma_deg)), fit
    assert np.abs(fit.mount_offset_m).max() < 0.0005 and np.abs(fit.fov_delta_deg) < 0.5


def test_the_twin_camera_draws_the_cube_at_its_measured_size():
    camera = TwinCamera("Reach", (96, 128))
    joints = np.asarray(robot.KEYFRAMES["start"])
    try:
        pixels = {}
        for size in (0.025, 0.020):
            camera.set_cube_size(size)
            pixels[size] = (camera.labels(joints, (0.2, 0.0)) == 2).sum()
            centre = camera.project_cube(joints, (0.2, 0.0))
            pixels[size, "centre"] = centre
    finally:
        camera.close()
    # A fifth smaller edge: about two thirds of the area, and the centre nearer the desk.
    assert 0.5 < pixels[0.020] / pixels[0.025] < 0.8
    assert not np.allclose(pixels[0.020, "centre"], pixels[0.025, "centre"], atol=0.3)


@pytest.mark.slow  # two hand-eye fits, about a minute each
def test_the_hand_eye_fit_told_the_cube_size_recovers_a_small_cube_arm(tmp_path):
    # Random arms' cubes are 2.2-3.0 cm; drawn at the nominal 2.5 cm, a 3.0 cm cube read
    # as 2.4 degrees on shoulder lift. Told its size, the fit is as good as on a nominal arm;
    # not told, its stated sigmas carry an unmeasured cube's size and still cover the truth.
    profile = tmp_path / "small_cube.toml"
    profile.write_text('name = "small_cube"\n[cube]\nsize_m = 0.021\n')
    recording = tmp_path / "small.npz"
    args = ["calibrate", "record", "--world", "fake", "--profile", str(profile)]
    assert main([*args, "--poses", "16", "--out", str(recording)]) == 0
    session = CalibrationRecording.load(recording)
    told_fit, assumed_fit = fit_hand_eye(session, cube_size_m=0.021), fit_hand_eye(session)
    told = np.abs(told_fit.offsets_deg[:5])
    assumed = np.abs(assumed_fit.offsets_deg[:5])
    assert np.all(told < [0.5, 1.0, 1.0, 0.5, 0.5]), told
    assert told[1] + told[3] < assumed[1] + assumed[3], (told, assumed)
    assumed_sigma = np.array(assumed_fit.offsets_sigma_deg[:5])
    assert np.all(assumed <= 2 * assumed_sigma), (assumed, assumed_sigma)
    assert told_fit.offsets_sigma_deg[1] < assumed_sigma[1]


@pytest.mark.slow  # one hand-eye fit at a webcam's resolution, about two minutes
def test_the_hand_eye_fit_measures_a_webcams_lens_and_is_not_bent_by_it(tmp_path):
    # A barrel lens (k1 = -0.06, a cheap webcam's) fitted as a pinhole pulled the random
    # arms' lift, elbow and wrist flex 1-2 degrees off at a stated 0.3-0.4. The fit
    # measures k1 with the mount and the joints stay where they are.
    profile = tmp_path / "webcam_lens.toml"
    profile.write_text(
        'name = "webcam_lens"\n[joints]\nzero_offset_deg = [1.5, -1.0, 1.0, 0.5, 0.0, 0.0]\n'
        "[sensor]\nresolution = [640, 480]\ndistortion_k = [-0.06, 0.0]\n"
    )
    recording = tmp_path / "lens.npz"
    args = ["calibrate", "record", "--world", "fake", "--profile", str(profile)]
    assert main([*args, "--poses", "16", "--out", str(recording)]) == 0
    fit = fit_hand_eye(CalibrationRecording.load(recording), cube_size_m=0.025)
    error = np.abs(np.array(fit.offsets_deg[:5]) - [1.5, -1.0, 1.0, 0.5, 0.0])
    # Fitted as a pinhole: pan 0.63, lift 0.97, elbow 1.10 (3.4 sigma), wrist flex 0.74
    # degrees off. Wrist roll is loose on 16 poses either way (its sigma: 0.75 degrees).
    assert np.all(error[:4] < [0.5, 1.0, 1.0, 0.5]), fit.offsets_deg
    assert np.all(error <= 2 * np.array(fit.offsets_sigma_deg[:5])), (error, fit)
    assert abs(fit.lens_k1 + 0.06) < max(0.02, 2 * fit.lens_k1_sigma), fit.lens_k1


def test_matching_at_the_rest_pose_warns(diagnosed):
    recording = CalibrationRecording.load(diagnosed / "recording.npz")
    rest = np.tile(robot.KEYFRAMES["rest"], (4, 1))
    twin = TwinCamera(recording.task, recording.pose_frames.shape[1:3])
    frames = np.array([twin.render(q, recording.cube_xy) for q in rest])
    twin.close()
    at_rest = replace(recording, pose_readings=rest, pose_frames=frames)
    as_trained = HandEyeFit.from_twin(TwinParams())
    warnings = diagnose_camera(at_rest, as_trained)["warnings"]
    assert warnings and "start pose" in warnings[0]


def test_camera_diagnosis_takes_the_geometry_from_a_calibration(diagnosed, capsys):
    calibration = diagnosed / "run" / "calibration.json"
    argv = ["diagnose", "camera", str(diagnosed / "recording.npz")]
    assert main([*argv, "--calibration", str(calibration)]) == 0
    found = re.search(r"exposure the twin would need: x([\d.]+)", capsys.readouterr().out)
    assert found and float(found.group(1)) == pytest.approx(1.2, rel=0.1)
