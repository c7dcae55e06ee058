"""Issue-14 failures, each reproduced: no stiff arm after any interrupt, nothing lost,
a clear error for every bad input."""

import json
import logging
import multiprocessing
import os
import signal
import threading
from dataclasses import asdict

import numpy as np
import pytest
import torch

from realgap.bridge.deploy import run_session
from realgap.bridge.env import DeployConfig
from realgap.bridge.interfaces import ArmDisconnected, CameraSettings
from realgap.bridge.profile import ProfileError, load_profile
from realgap.bridge.safety import SafeArm, SafetyConfig
from realgap.bridge.worlds import Spot, at_start_pose, open_fake_world
from realgap.errors import ConfigError
from realgap.eval.layout import load_layout
from realgap.policy.checkpoint import load_policy, save_policy
from realgap.policy.contract import ContractMismatch, PolicyContract
from realgap.policy.loaders import load_runtime_policy
from realgap.policy.networks import VisualPolicy
from realgap.policy.onnx_policy import StaleExport, export_onnx
from realgap.runs import RunFolder, check_writable_file, check_writable_folder, claim
from realgap.sim.calibration import Calibration, CalibrationError
from realgap.train.checkpoint import check_resumable, field_defaults
from realgap.train.distill import Args as DistillArgs

CONTRACT = PolicyContract(
    task="Reach", image_size=16, control_hz=10.0, action_scale=(0.1, 0.1, 0.1, 0.1, 0.1, 0.2)
)
SPOTS = [Spot("centre", (0.2, 0.0)), Spot("left", (0.15, 0.06)), Spot("right", (0.15, -0.06))]
SHORT = DeployConfig(episode_steps=6, check_camera_lock=False)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("REALGAP_HOME", str(tmp_path / "home"))
    return tmp_path


def use_policy(monkeypatch, policy):
    import realgap.bridge.deploy as deploy

    monkeypatch.setattr(deploy, "load_runtime_policy", lambda folder: (policy, CONTRACT))


# -- safety ---------------------------------------------------------------------------------


def test_a_second_interrupt_during_hold_still_releases_and_closes(home):
    world = open_fake_world("Reach", "nominal")
    fake = world.extra["world"]
    safe = SafeArm(world.arm, SafetyConfig(on_fault="hold", hold_s=0.6), world.clock)
    timer = threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT))
    with pytest.raises(KeyboardInterrupt), safe:
        safe.enable()
        timer.start()
        raise KeyboardInterrupt  # the first Ctrl-C; the second lands in the hold
    timer.join()
    kinds = [event.kind for event in safe.events]
    assert "hold" in kinds and "interrupt_deferred" in kinds
    assert kinds[-1] == "torque_off" and not fake.torque.any()
    assert not world.arm.is_connected


def test_sigterm_during_close_is_deferred_until_torque_is_off(home):
    world = open_fake_world("Reach", "nominal")
    safe = SafeArm(world.arm, clock=world.clock)
    original = world.arm._set_torque

    def slow_off(enabled):
        if not enabled:
            os.kill(os.getpid(), signal.SIGTERM)  # arrives mid torque-off
        original(enabled)

    world.arm._set_torque = slow_off
    previous = signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt))
    try:
        with pytest.raises(KeyboardInterrupt, match="SIGTERM"), safe:
            safe.enable()
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert not world.extra["world"].torque.any() and not world.arm.is_connected


def test_a_failed_torque_off_is_loud_and_written_to_the_run(home, monkeypatch, caplog):
    world = open_fake_world("Reach", "nominal")

    def unplug_at_three(image, state, calls=[]):  # noqa: B006 - a call counter
        calls.append(1)
        if len(calls) == 3:
            world.arm.unplug()
        return np.zeros(6)

    use_policy(monkeypatch, unplug_at_three)
    with caplog.at_level(logging.CRITICAL), pytest.raises(ArmDisconnected):
        run_session(world, "unused", SPOTS, out=home / "run", config=SHORT)
    assert any("power the arm off" in r.message for r in caplog.records)
    assert "power the arm off" in (home / "run" / "safety_alert.txt").read_text()
    session = json.loads((home / "run" / "deploy.json").read_text())
    assert session["partial"] and "torque_off_failed" in {
        e["kind"] for e in session["safety_events"]
    }


def test_unreadable_temperatures_stop_before_the_first_episode(home, monkeypatch):
    world = open_fake_world("Reach", "nominal")
    world.extra["world"].temperature[:] = np.nan
    use_policy(monkeypatch, lambda image, state: np.zeros(6))
    summary = run_session(world, "unused", SPOTS, config=SHORT)
    assert summary["episodes"] == 0 and "unreadable" in summary["stopped"]
    assert summary["partial"]


def test_camera_lock_settings_are_validated(home):
    for bad in ({"exposure": -1.0}, {"exposure": float("nan")}, {"exposure": 1e9}):
        with pytest.raises(ConfigError, match="exposure"):
            CameraSettings(auto_exposure=False, white_balance=4600.0, **bad).check()
    from realgap.bridge.camera_lock import lock_camera

    world = open_fake_world("Reach", "nominal")
    blind = CameraSettings(auto_exposure=False, gain=0.0, white_balance=4600.0)
    with at_start_pose(world), pytest.raises(ConfigError, match="sees nothing"):
        lock_camera(world.camera, blind)


# -- nothing lost ---------------------------------------------------------------------------


def test_an_interrupted_session_keeps_every_finished_episode_and_resumes(home, monkeypatch):
    calls = []

    def interrupt_in_episode_two(image, state):
        calls.append(1)
        if len(calls) == 8:  # episodes are 6 steps: this is the second one
            raise KeyboardInterrupt
        return np.zeros(6)

    use_policy(monkeypatch, interrupt_in_episode_two)
    with pytest.raises(KeyboardInterrupt):
        run_session(open_fake_world("Reach", "nominal"), "x", SPOTS, home / "run", SHORT)
    session = json.loads((home / "run" / "deploy.json").read_text())
    assert session["partial"] and session["episodes"] == 1
    assert session["stopped"].startswith("KeyboardInterrupt")
    summary = run_session(
        open_fake_world("Reach", "nominal"), "x", SPOTS, home / "run", SHORT, resume=True
    )
    assert [r["spot"] for r in summary["results"]] == ["centre", "left", "right"]
    assert summary["results"][0] == session["results"][0] and not summary["partial"]


def test_earlier_results_are_refused_overwritten_or_resumed(tmp_path):
    earlier = tmp_path / "eval_sim.json"
    earlier.write_text("{}")
    with pytest.raises(ConfigError, match=r"--resume.*--overwrite"):
        claim([earlier])
    assert claim([earlier], "resume") and earlier.exists()
    assert not claim([earlier], "overwrite") and not earlier.exists()


def _check_folder_many_times(folder: str) -> None:
    for _ in range(1500):
        check_writable_folder(folder)


def test_two_runs_checking_one_folder_at_once_both_pass(tmp_path):
    # Two evaluations started side by side with --json into one folder: a shared probe
    # name let one delete the other's probe, failing it with "No such file".
    context = multiprocessing.get_context("fork")
    with context.Pool(2) as pool:
        pool.map(_check_folder_many_times, [str(tmp_path)] * 2)
    assert list(tmp_path.iterdir()) == []


def test_outputs_are_checked_before_anything_runs(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="not a folder"):
        check_writable_folder(tmp_path / "file")
    with pytest.raises(ConfigError, match="cannot write"):
        check_writable_folder(tmp_path / "file" / "run")
    with pytest.raises(ConfigError, match="is a folder"):
        check_writable_file(tmp_path)


# -- policy folders -------------------------------------------------------------------------


@pytest.fixture
def policy_dir(tmp_path):
    return save_policy(tmp_path / "policy", VisualPolicy(), CONTRACT)


@pytest.mark.parametrize("content", [b"", b"\x00\x01garbage" * 50, "truncate"])
def test_broken_weights_are_refused_by_name(policy_dir, content):
    weights = policy_dir / "policy.pt"
    data = weights.read_bytes()[:200] if content == "truncate" else content
    weights.write_bytes(data)
    with pytest.raises(ContractMismatch, match=r"policy\.pt"):
        load_runtime_policy(policy_dir)


def test_a_stale_onnx_export_never_replaces_the_weights(policy_dir):
    export_onnx(policy_dir)
    assert load_runtime_policy(policy_dir)[0].__class__.__name__ == "OnnxPolicy"
    nan = VisualPolicy()
    with torch.no_grad():
        for tensor in nan.parameters():
            tensor.fill_(float("nan"))
    save_policy(policy_dir, nan, CONTRACT)  # retrained into the same folder: NaN weights
    with pytest.raises(StaleExport, match="realgap export"):
        load_runtime_policy(policy_dir)
    (policy_dir / "policy.onnx").unlink()
    with pytest.raises(ContractMismatch, match="NaN"):
        load_runtime_policy(policy_dir)


def test_broken_onnx_is_refused_by_name(policy_dir):
    (policy_dir / "policy.onnx").write_bytes(b"not onnx")
    with pytest.raises(ContractMismatch, match=r"policy\.onnx"):
        load_runtime_policy(policy_dir)


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("image_size", 32, "32x32"),
        ("control_hz", 0, "control_hz"),
        ("action_mode", "velocity", "action_mode"),
        ("action_scale", 5, "action_scale"),
    ],
)
def test_a_bad_contract_is_refused_at_load(policy_dir, field, value, named):
    path = policy_dir / "contract.json"
    data = json.loads(path.read_text())
    data[field] = value
    path.write_text(json.dumps(data))
    with pytest.raises(ContractMismatch, match=named):
        load_policy(policy_dir)


def test_a_contract_copied_from_another_policy_is_refused(tmp_path, policy_dir):
    pick = PolicyContract(**{**CONTRACT.to_dict(), "task": "PickCube"})
    other = save_policy(tmp_path / "pick", VisualPolicy(), pick)
    (policy_dir / "contract.json").write_text((other / "contract.json").read_text())
    with pytest.raises(ContractMismatch, match="copied from another policy"):
        load_runtime_policy(policy_dir)


# -- files ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("twin", "named"),
    [
        ({"joints": {"zero_offset_deg": 5}}, "joints.zero_offset_deg"),
        ({"joints": {"zero_offset_deg": [float("nan")] * 6}}, "finite"),
        ({"servo": {"kp_scael": 1.0}}, "servo.kp_scael"),
        ({"camera": {"exposure_scale": float("nan")}}, "camera.exposure_scale"),
    ],
)
def test_bad_calibration_files_name_the_key(tmp_path, twin, named):
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps({"twin": twin}))
    with pytest.raises(CalibrationError, match=named):
        Calibration.load(path)


def test_bad_profiles_name_the_file(tmp_path):
    noise = tmp_path / "noise.toml"
    noise.write_bytes(bytes(range(256)))
    with pytest.raises(ProfileError, match=r"noise\.toml"):
        load_profile(noise)
    with pytest.raises(ProfileError, match="folder"):
        load_profile(tmp_path)


@pytest.mark.parametrize(
    ("spot", "named"),
    [
        ("cube = [nan, 0.0]", "finite"),
        ("cube = 5", r"\[x, y\]"),
        ('cube = ["a", 0]', "expected a number"),
        ("cube = [0.2, 0.0]\nbin = [0.2, 0.1, 0.0]", "bin"),
        ("cube = [0.02, 0.0]", "inside the arm's base"),
        ("cube = [0.6, 0.0]", "out of the arm's reach"),
    ],
)
def test_bad_layouts_name_file_spot_and_key(tmp_path, spot, named):
    path = tmp_path / "desk.toml"
    path.write_text(f'[[spot]]\nname = "a"\n{spot}\n')
    with pytest.raises(ConfigError, match=named) as error:
        load_layout(path)
    assert "desk.toml" in str(error.value) and "spot 1" in str(error.value)


def test_duplicate_spot_names_are_refused(tmp_path):
    path = tmp_path / "desk.toml"
    path.write_text(
        '[[spot]]\nname = "a"\ncube = [0.2, 0]\n[[spot]]\nname = "a"\ncube = [0.2, 0.05]\n'
    )
    with pytest.raises(ConfigError, match="unique"):
        load_layout(path)


def test_a_run_started_before_an_argument_existed_resumes_at_its_default(tmp_path):
    """An upgrade mid-run must not strand the run; another value still is refused."""
    args = asdict(DistillArgs(task="Reach", out=str(tmp_path)))
    run = RunFolder(tmp_path)
    run.write_config("distill", {k: v for k, v in args.items() if k != "plateau_evals"})
    defaults = field_defaults(DistillArgs)
    check_resumable(run, "distill", args, defaults)
    with pytest.raises(ConfigError, match="plateau_evals: the run has 0, now 5"):
        check_resumable(run, "distill", {**args, "plateau_evals": 5}, defaults)
    with pytest.raises(ConfigError, match="plateau_evals: the run has None, now 0"):
        check_resumable(run, "distill", args)
