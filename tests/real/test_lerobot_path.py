"""The real-arm path: LeRobot's unmodified SO-101 driver against the STS3215 emulator.

Runs where LeRobot is installed (Python >= 3.12, ``pip install -e '.[real,dev]'``;
``tools/test-lerobot.sh`` builds that venv). The emulator speaks the Feetech
protocol on a pseudo-terminal, so every byte goes through LeRobot's
FeetechMotorsBus and the Feetech SDK exactly as with a USB adapter.
"""

import json

import numpy as np
import pytest

pytest.importorskip("lerobot", reason="needs the `real` extra (LeRobot, Python >= 3.12)")

from realgap.bridge.deploy import run_session
from realgap.bridge.env import DeployConfig
from realgap.bridge.fake import FakeWorld
from realgap.bridge.fake_camera import FakeCamera
from realgap.bridge.interfaces import ArmDisconnected, Clock
from realgap.bridge.lerobot_arm import LeRobotArm
from realgap.bridge.profile import load_profile
from realgap.bridge.safety import SafeArm
from realgap.bridge.sts3215 import FakeWorldServos, STS3215Chain
from realgap.bridge.worlds import Spot, World
from realgap.lerobot_api import LeRobotUnavailable, import_follower
from realgap.policy.checkpoint import save_policy
from realgap.policy.contract import PolicyContract
from realgap.policy.networks import VisualPolicy
from realgap.sim import robot

ROBOT_ID = "emulated_so101"
# Ranges as `lerobot-calibrate` records them on a new-calibration arm: centred on
# the half-turn homing, about +-110 degrees; the gripper from closed to open.
CALIBRATION = {
    name: {
        "id": index + 1,
        "drive_mode": 0,
        "homing_offset": 0,
        "range_min": 2048 - 1250 if name != "gripper" else 1900,
        "range_max": 2048 + 1250 if name != "gripper" else 3200,
    }
    for index, name in enumerate(robot.JOINT_NAMES)
}


@pytest.fixture
def calibration_dir(tmp_path):
    folder = tmp_path / "calibration"
    folder.mkdir()
    (folder / f"{ROBOT_ID}.json").write_text(json.dumps(CALIBRATION))
    return folder


def rest_ticks():
    """Present ticks of the rest pose under CALIBRATION (what a folded arm reads)."""
    rest = robot.KEYFRAMES["rest"]
    body = 2048 + rest * 4095 / (2 * np.pi)
    low, high = robot.JOINT_RANGES[5]
    gripper = 1900 + (rest[5] - low) / (high - low) * 1300
    return np.where(np.arange(6) == 5, gripper, body)


def test_unmodified_lerobot_connect_jumps_on_power_up_goal_zero(calibration_dir):
    """The quirk, reproduced at the register level: LeRobot's own connect() enables
    torque with the stored goal of 0 and the arm slews away."""
    follower, config = import_follower()
    with STS3215Chain(start_ticks=rest_ticks(), power_up_goal_zero=True) as chain:
        before = chain.present_ticks().copy()
        arm = follower(config(port=chain.port, id=ROBOT_ID, calibration_dir=calibration_dir))
        arm.connect(calibrate=False)
        try:
            import time

            time.sleep(0.3)
            assert np.abs(chain.present_ticks() - before).max() > 300
        finally:
            arm.disconnect()


def test_realgap_connect_does_not_jump(calibration_dir):
    with STS3215Chain(start_ticks=rest_ticks(), power_up_goal_zero=True) as chain:
        before = chain.present_ticks().copy()
        safe = SafeArm(LeRobotArm(chain.port, ROBOT_ID, calibration_dir))
        with safe:
            positions = safe.read_positions()
            assert np.allclose(positions, robot.KEYFRAMES["rest"], atol=0.01)  # units converted
            safe.enable()
            import time

            time.sleep(0.3)
            assert np.abs(chain.present_ticks() - before).max() <= 2
            assert chain.torque().all()
        assert not chain.torque().any()  # released on exit


def test_pulled_cable_raises_and_is_logged(calibration_dir):
    with STS3215Chain(start_ticks=rest_ticks()) as chain:
        safe = SafeArm(LeRobotArm(chain.port, ROBOT_ID, calibration_dir))
        with pytest.raises(ArmDisconnected), safe:
            safe.enable()
            chain.unplug()
            safe.read_positions()
        kinds = [event.kind for event in safe.events]
        assert "fault" in kinds and "torque_off_failed" in kinds
        assert chain.torque().all()  # nothing could reach the servos: the log says so


def test_unsupported_version_is_refused(monkeypatch):
    import lerobot

    monkeypatch.setattr(lerobot, "__version__", "0.4.4")
    with pytest.raises(LeRobotUnavailable, match=r"0\.4\.4 is not supported"):
        import_follower()


def test_policy_runs_through_lerobot_on_the_twin(tmp_path, calibration_dir, monkeypatch):
    """A whole session: LeRobot's driver commands the emulated servos, which move the
    fake twin; the camera sees that twin. Wall-clock time, a few steps."""
    monkeypatch.setenv("REALGAP_HOME", str(tmp_path / "home"))
    contract = PolicyContract(
        task="Reach", image_size=16, control_hz=10.0, action_scale=(0.1,) * 5 + (0.2,)
    )
    policy = save_policy(tmp_path / "policy", VisualPolicy(), contract)
    fake = FakeWorld("Reach", load_profile("nominal"), Clock())
    prompts = []
    with STS3215Chain(physics=FakeWorldServos(fake)) as chain:
        world = World(
            kind="real",
            task="Reach",
            arm=LeRobotArm(chain.port, ROBOT_ID, calibration_dir),
            camera=FakeCamera(fake),
            clock=Clock(),
            place_scene=lambda spot: fake.place_objects(spot.cube_xy),
            ask=lambda prompt: prompts.append(prompt) or "n",
            name="real:emulated",
        )
        config = DeployConfig(episode_steps=8, check_camera_lock=False)
        summary = run_session(world, policy, [Spot("centre", (0.2, 0.0))], tmp_path / "run", config)
        assert summary["episodes"] == 1 and summary["timing"]["steps"] == 8
        assert summary["checks"]["joint_units"] == ["deg"] * 5 + ["range_0_100"]
        # The operator judged the episode, with the twin's estimate beside the prompt.
        assert len(prompts) == 1 and "twin estimate: no" in prompts[0]
        assert summary["results"][0]["success"] is False
        # The twin moved where LeRobot sent it: within a servo's tracking error.
        assert np.abs(fake.readings() - robot.KEYFRAMES["start"]).max() < 0.15
        assert not fake.torque.any()


def test_lerobot_loads_realgap_datasets_offline(tmp_path, monkeypatch):
    """realgap writes the LeRobot v3.0 layout itself; LeRobot reads it with no hub access."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from lerobot.datasets import LeRobotDataset

    from realgap.imitate.dataset import DemoWriter

    rng = np.random.default_rng(0)
    writer = DemoWriter(tmp_path / "demos", fps=10, task="pick up the cube")
    actions = []
    for n in (4, 6):
        actions.append(rng.standard_normal((n, 6)).astype(np.float32))
        writer.add_episode(
            rng.integers(0, 256, (n, 16, 16, 3), dtype=np.uint8),
            rng.standard_normal((n, 12)).astype(np.float32),
            actions[-1],
        )
    writer.finalize()
    dataset = LeRobotDataset("local/demos", root=tmp_path / "demos")
    assert len(dataset) == 10 and dataset.num_episodes == 2
    frame = dataset[5]
    assert tuple(frame["observation.image"].shape) == (3, 16, 16)
    assert np.allclose(frame["action"].numpy(), actions[1][1])
    assert int(frame["episode_index"]) == 1 and frame["task"] == "pick up the cube"
