"""One set of twin parameters: TwinParams, calibration files, randomization centres,
and the one place each is applied (physics rows, the wrist camera, latency)."""

import json

import mujoco
import numpy as np
import pytest

from realgap.bridge.fake import FakeArm, FakeWorld
from realgap.bridge.interfaces import VirtualClock
from realgap.bridge.profile import RealityProfile
from realgap.diagnose.recording import HOLD_WRITES
from realgap.diagnose.twin import ServoTwin, delayed
from realgap.policy_io import decode_action, tone
from realgap.sim import robot
from realgap.sim.batched_env import BatchedEnv
from realgap.sim.calibration import Calibration, CalibrationError, load_twin
from realgap.sim.draws import sample_episode
from realgap.sim.physics import CommandDelay
from realgap.sim.randomization import DomainRandomization
from realgap.sim.twin import TwinParams, TwinParamsError


def test_twin_toml_round_trip_and_errors_name_file_and_key(tmp_path):
    path = tmp_path / "arm.toml"
    path.write_text("[servo]\nkp_scale = 0.6\nlatency_steps = 2\n[camera]\ngamma = 1.2\n")
    twin = TwinParams.from_toml(path)
    assert twin.servo.kp_scale == 0.6 and twin.servo.latency_steps == 2
    assert twin.camera.gamma == 1.2 and twin.cube == TwinParams().cube
    assert TwinParams.from_dict(twin.to_dict()) == twin
    assert set(twin.differences(TwinParams())) == {
        "servo.kp_scale",
        "servo.latency_steps",
        "camera.gamma",
    }
    for text, named in (
        ("[servo]\nkp = 1\n", "servo.kp"),
        ("[cube]\nmass_kg = nan\n", "cube.mass_kg"),
        ("[camera]\nblack_level = 0.9\n", "camera.black_level"),
        ("[lens]\nfov = 1\n", "lens"),
    ):
        path.write_text(text)
        with pytest.raises(TwinParamsError, match=rf"{path.name}.*{named}"):
            TwinParams.from_toml(path)
    with pytest.raises(TwinParamsError, match="is a folder"):
        TwinParams.from_toml(tmp_path)
    with pytest.raises(TwinParamsError, match="no such file"):
        TwinParams.from_toml(tmp_path / "missing.toml")


def test_calibration_is_a_partial_twin_with_uncertainties(tmp_path):
    calibration = Calibration()
    calibration.measure("joints.zero_offset_deg", [5, 0, 0, 0, 0, 0], sigma=[0.1] * 6)
    calibration.measure("servo.kp_scale", 0.6, sigma=0.05)
    path = calibration.save(tmp_path / "calibration.json")
    loaded = Calibration.load(path)
    assert loaded.values == calibration.values
    assert loaded.uncertainty["servo.kp_scale"] == 0.05
    twin = loaded.twin()
    assert twin.servo.kp_scale == 0.6 and twin.servo.latency_steps == 0
    assert np.rad2deg(loaded.joint_offsets_rad[0]) == pytest.approx(5.0)
    assert load_twin(path) == twin
    data = json.loads(path.read_text())
    data["twin"]["servo"]["kp_scael"] = 1.0
    path.write_text(json.dumps(data))
    with pytest.raises(CalibrationError, match=r"calibration.json.*servo\.kp_scael"):
        Calibration.load(path)
    path.write_text(json.dumps({"joint_offsets_rad": [0] * 6}))
    with pytest.raises(CalibrationError, match="joint_offsets_rad"):
        Calibration.load(path)
    with pytest.raises(CalibrationError, match="no such"):
        Calibration.load(tmp_path / "missing.json")


def test_randomization_centred_on_a_measured_twin():
    twin = TwinParams().updated(
        {"servo": {"kp_scale": 0.5, "latency_steps": 2}, "cube": {"mass_kg": 0.02}}
    )
    exact = sample_episode(DomainRandomization.none(twin), np.random.default_rng(0), 4)
    assert np.all(exact.kp_scale == 0.5) and np.all(exact.latency_steps == 2)
    assert np.allclose(exact.cube_mass_kg, 0.02)
    wide = sample_episode(DomainRandomization().centred_on(twin), np.random.default_rng(0), 400)
    assert wide.kp_scale.min() >= 0.5 * 0.6 and wide.kp_scale.max() <= 0.5 * 1.2
    assert set(wide.latency_steps.tolist()) == {2, 3}
    assert wide.cube_mass_kg.min() >= 0.01 and wide.cube_mass_kg.max() <= 0.04


def test_fake_arm_and_batched_twin_apply_a_twin_identically():
    twin = TwinParams().updated(
        {
            "servo": {"kp_scale": 0.6, "damping_scale": 1.5, "torque_limit_scale": 0.8},
            "cube": {"mass_kg": 0.02, "size_m": 0.03, "friction": 0.7},
            "fingers": {"friction": 0.9},
        }
    )
    fake = FakeWorld("PickCube", RealityProfile(twin=twin), VirtualClock())
    env = BatchedEnv("PickCube", 1, twin=twin, render=False)
    env.reset(seed=0)
    batched = env.batch.get_model(0)
    fake.set_torque(True)  # the fake arm's gains are zero while torque is off
    for name in (
        "body_mass",
        "body_inertia",
        "geom_size",
        "geom_friction",
        "actuator_gainprm",
        "actuator_forcerange",
        "dof_damping",
        "dof_frictionloss",
    ):
        assert np.allclose(getattr(fake.model, name), getattr(batched, name)), name


def test_command_delay_is_one_line_for_every_world():
    delay = CommandDelay([0, 2], np.zeros((2, 1)))
    outputs = [delay.push(np.full((2, 1), float(k))).ravel().tolist() for k in (1, 2, 3)]
    assert outputs == [[1, 0], [2, 0], [3, 1]]
    delay.reset([1], np.full((1, 1), 9.0), latency=[1])
    assert delay.push(np.full((2, 1), 4.0)).ravel().tolist() == [4, 9]


def test_the_servo_replay_delays_goals_as_the_fake_arm_does():
    """The servo fit looks its delayed goals up at once; the fake arm pushes them."""
    writes = np.arange(12.0).reshape(6, 2)
    for latency in (0, 1, 3):
        delay = CommandDelay(latency, writes[0])
        pushed = [delay.push(write[None])[0] for write in writes]
        assert np.array_equal(delayed(writes, latency), pushed), latency


def test_the_servo_replay_without_contacts_is_the_replay_with_them():
    """The replay skips contacts (a third of its time): the step responses are taken in
    the air, so nothing the contacts would do may move the arm."""
    free, touching = ServoTwin("PickCube"), ServoTwin("PickCube")
    touching.model.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    start = np.asarray(robot.KEYFRAMES["start"], dtype=float)  # where it is recorded
    step = start + np.array([0.0, 0.1, 0.0, 0.0, 0.0, 0.0])
    writes = np.array([start] * HOLD_WRITES + [step] * 10 + [start] * 10)
    sample_write = np.repeat(np.arange(len(writes)), 4)
    args = (start, writes, sample_write, 15.0, 60.0, 0.8, 1.2, 1.0, 1)
    replayed = free.replay(*args, torque_limit_scale=0.7)
    assert np.abs(replayed - touching.replay(*args, torque_limit_scale=0.7)).max() < 1e-9
    assert np.ptp(replayed[:, 1]) > 0.05  # the step moved the joint


def test_tone_response_black_is_never_black():
    black = np.zeros((2, 2, 3), dtype=np.float32)
    assert np.allclose(tone(black, 1.0, 1.0, 0.08), 0.08)
    mid = np.full((1, 1, 3), 0.25, dtype=np.float32)
    assert tone(mid, 1.0, 0.5, 0.0)[0, 0, 0] == pytest.approx(0.5)
    assert np.array_equal(tone(mid), mid)


def test_decode_action_modes():
    target, scale = np.zeros(6), np.full(6, 0.1)
    assert np.allclose(decode_action("delta", np.full(6, 2.0), target, scale), 0.1)
    assert np.allclose(decode_action("absolute", np.full(6, 0.05), target, scale), 0.05)
    assert np.allclose(decode_action("absolute", np.full(6, 1.0), target, scale), 0.1)
    assert np.isnan(decode_action("delta", np.full(6, np.nan), target, scale)).all()
    with pytest.raises(ValueError, match="velocity"):
        decode_action("velocity", np.zeros(6), target, scale)


def test_absolute_actions_in_the_twin_reach_the_commanded_targets():
    twin = TwinParams().updated({"joints": {"zero_offset_deg": [4, 0, 0, 0, 0, 0]}})
    env = BatchedEnv("Reach", 1, twin=twin, action_mode="absolute", render=False)
    obs, _ = env.reset(seed=0)
    goal = obs["state"][0, 6:] + np.array([0.05, 0, 0, 0, 0, 0])
    for _ in range(30):
        obs, *_ = env.step(goal[None])
    # Readings and targets are in the arm's (offset) frame; the goal was given in it.
    assert np.allclose(obs["state"][0, 6:], goal, atol=1e-6)
    assert obs["state"][0, 0] == pytest.approx(goal[0], abs=0.01)


def test_calibration_is_applied_at_the_bridge_for_a_fake_arm():
    """A profile with +5 degrees of pan zero error and a calibration that measured it:
    the corrected reading and the commanded angle are right to 0.1 degrees."""
    profile = RealityProfile.from_dict({"joints": {"zero_offset_deg": [5, 0, 0, 0, 0, 0]}})
    clock = VirtualClock()
    world = FakeWorld("Reach", profile, clock)
    arm = FakeArm(world)
    calibration = Calibration()
    calibration.measure("joints.zero_offset_deg", np.rad2deg([0.0873, 0, 0, 0, 0, 0]))
    arm.apply_calibration(calibration.joint_offsets_rad)
    with arm:
        true = world.data.qpos[world._qadr].copy()
        assert np.rad2deg(abs(arm.read_positions()[0] - true[0])) < 0.1
        goal = arm.read_positions()
        goal[0] += 0.2
        arm.send_goals(goal)
        arm.set_torque(True)
        clock.sleep(2.0)
        world.advance()
        reached = world.data.qpos[world._qadr][0]
        assert np.rad2deg(abs(reached - goal[0])) < 0.1
        assert np.rad2deg(abs(arm.read_positions()[0] - goal[0])) < 0.1
    with pytest.raises(ValueError, match="6 finite"):
        arm.apply_calibration([np.nan] * 6)


def test_a_randomization_around_a_calibration_takes_its_widths_from_the_uncertainties():
    measured = Calibration()
    measured.measure("servo.kp_scale", 0.5, sigma=0.05)
    measured.measure("servo.latency_steps", 2, sigma=0)  # exact: not randomized
    measured.measure("joints.zero_offset_deg", [3, 0, 0, 0, 0, 0], sigma=[0.25] * 6)
    measured.measure("camera.fov_deg_delta", 2.0)  # no uncertainty given: default width
    widths = DomainRandomization().around(measured)
    assert widths.centre == measured.twin()
    assert widths.kp_scale == pytest.approx((0.8, 1.2))  # 2 sigma of 0.05 around 0.5
    assert widths.latency_steps == (0, 0) and widths.joint_offset_deg == pytest.approx(0.5)
    assert widths.camera_fov_deg == DomainRandomization().camera_fov_deg
    draws = sample_episode(widths, np.random.default_rng(0), 500)
    assert np.all(draws.latency_steps == 2)
    assert draws.kp_scale.min() >= 0.4 and draws.kp_scale.max() <= 0.6
    offsets = np.rad2deg(draws.joint_offset[:, 0])
    assert offsets.min() >= 2.5 and offsets.max() <= 3.5
    # Drawn desk colours give way to a measured desk.
    drawn = DomainRandomization(background_value=(0.0, 0.18), background_warmth=(0.0, 0.6))
    assert np.ptp(sample_episode(drawn, np.random.default_rng(0), 50).background_rgb) > 0
    measured.measure("camera.background_rgb", [0.3, 0.25, 0.2])
    desks = sample_episode(drawn.around(measured), np.random.default_rng(0), 50)
    assert np.allclose(desks.background_rgb, [0.3, 0.25, 0.2])


def test_training_in_a_calibration_randomizes_what_it_measured_within_its_uncertainty(tmp_path):
    from types import SimpleNamespace

    from realgap.train.common import training_worlds

    measured = Calibration()
    measured.measure("servo.kp_scale", 0.5, sigma=0.05)
    path = measured.save(tmp_path / "calibration.json")
    args = SimpleNamespace(task="Reach", twin=str(path), randomize=True, randomization=None)
    widths, twin = training_worlds(args)
    assert twin.servo.kp_scale == 0.5 and widths.kp_scale == pytest.approx((0.8, 1.2))
    toml = tmp_path / "arm.toml"
    toml.write_text("[servo]\nkp_scale = 0.5\n")
    widths, twin = training_worlds(
        SimpleNamespace(task="Reach", twin=str(toml), randomize=True, randomization=None)
    )
    assert twin.servo.kp_scale == 0.5 and widths.kp_scale == DomainRandomization().kp_scale
